/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wgshape serve, the far end of `wgshape tune` (the protocol, with its paths,
 * port and datagram limit, is proto/tune.h): on each listening address an
 * HTTP/1.1 server (libmicrohttpd, its own threads) and a UDP echo (a GLib
 * loop in a thread of its own), both on the same port number.
 *
 * The caps keep it from being a flood source: concurrent load streams, the
 * duration of one request, idle connections, echoes per source address (a
 * token bucket each). Others keep one source from shutting out the rest:
 * connections per source address, and a deadline for each request's head
 * (a client that sends its head a line at a time is never idle, so the idle
 * timeout alone would let it hold a connection for as long as it likes).
 */
#ifndef WGSHAPE_SERVE_H
#define WGSHAPE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "netlink/kernel.h"
#include "proto/tune.h"

#define SERVE_MAX_STREAMS 16
#define SERVE_MAX_SECONDS 60
#define SERVE_CONN_TIMEOUT 10 /* seconds without traffic on a connection */
/* Seconds from a connection's start, or its previous answer's end, to a whole
 * request head (request line and headers; a body may take as long as the cap). */
#define SERVE_HEAD_TIMEOUT 5
/* Connections per address: room for the 503s past the stream cap, and a bound on threads. */
#define SERVE_CONN_LIMIT(max_streams) ((max_streams) * 2 + 16)
/* Per source address: a tune with every stream and a few more; two sources
 * at the cap still fit, so a source holding its share shuts no peer out. */
#define SERVE_CONN_PER_SOURCE(max_streams) ((max_streams) + 4)
#define SERVE_UDP_RATE 50 /* datagrams/s per source address */
#define SERVE_UDP_BURST 50

/* One address to listen on; addr in network byte order (4 or 16 bytes). */
struct serve_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned int scope_id; /* ifindex; IPv6 link-local only */
	char ifname[IFNAME_SIZE]; /* the interface it is on, "" if none (or any) */
	bool tunnel; /* an address of a WireGuard interface */
	bool any_source; /* `listen ADDR any-source`: hosts outside the tunnels are meant */
};

/* 0 = the default for every number. */
struct serve_opts {
	const struct serve_addr *addrs;
	size_t n_addrs;
	uint16_t port; /* 0: an ephemeral port (tests); serve_port() says which */
	unsigned int max_streams;
	double max_seconds;
	unsigned int conn_timeout; /* seconds */
	unsigned int head_timeout; /* seconds */
	double udp_rate, udp_burst;
	bool verbose; /* a line per request */
};

struct server;

/*
 * Bind every address (TCP and UDP, one socket each) and start serving. Logs
 * one line per address, or the one that failed and why. 0 or -errno; nothing
 * is left running on failure. With port 0 every socket shares one free port;
 * when another program holds that number in the other protocol or family, a
 * fresh one is tried (up to 16 times) before -EADDRINUSE.
 */
int serve_start(const struct serve_opts *opts, struct server **out);
uint16_t serve_port(const struct server *srv);
/* Load streams (downloads and uploads) running now. */
unsigned int serve_streams(const struct server *srv);
/* Stop everything and free srv (NULL is fine). Waits for running requests to end. */
void serve_stop(struct server *srv);

/*
 * Parse a `listen` word: an IPv4 or IPv6 address, the latter with an optional
 * %IFNAME or %INDEX scope (the name left in out->ifname for
 * serve_pick_addresses to resolve). -EINVAL if it is none.
 */
int serve_addr_parse(const char *s, struct serve_addr *out);

/*
 * A `listen` clause: the address word addr (serve_addr_parse()) and, when
 * next (the word after it, NULL at the end) is `any-source`, that word too,
 * which sets out->any_source. 0.0.0.0 and :: (every address of the family,
 * the tunnels' and all others) are refused without it. How many words it
 * took (1 or 2), or -EINVAL with one line in err.
 */
int serve_listen_parse(const char *addr, const char *next, struct serve_addr *out, char *err,
		       size_t errlen);

/*
 * Which addresses to listen on. With no explicit ones: every address of every
 * WireGuard link (kind "wireguard"), -ENOENT if there is none. Otherwise the
 * explicit ones, each marked tunnel when it is a WireGuard link's address;
 * an IPv6 link-local one gets its scope from its %IFNAME or, without one, from
 * the link that has it (-EINVAL if none does), -ENODEV for an unknown %IFNAME.
 * Pure; *out is g_new'd (g_free it). err gets one line on failure.
 */
int serve_pick_addresses(const struct link_info *links, size_t n_links,
			 const struct addr_info *addrs, size_t n_addrs,
			 const struct serve_addr *explicit, size_t n_explicit,
			 struct serve_addr **out, size_t *n_out, char *err, size_t errlen);

/*
 * A load request's seconds=S (proto/tune.h), as libmicrohttpd decoded it: a
 * positive decimal number (g_ascii_strtod's syntax, the whole string), the
 * cap when larger (infinity too). -EINVAL for anything else; *out is written
 * only on success.
 */
int serve_parse_seconds(const char *s, double cap, double *out);

/* "10.0.0.1", "fd00::1", "fe80::1%wg0" (scope by name when ifname is set). */
#define SERVE_ADDR_STR_SIZE (INET6_ADDRSTRLEN + 1 + IFNAME_SIZE)
void serve_addr_str(const struct serve_addr *a, char *buf, size_t len);

/* A token bucket: rate tokens/s up to burst, full when new. Pure: the caller gives the time. */
struct token_bucket {
	double tokens;
	int64_t last_us;
};

void token_bucket_init(struct token_bucket *b, double burst, int64_t now_us);
/* Take one token if there is one. */
bool token_bucket_take(struct token_bucket *b, double rate, double burst, int64_t now_us);

#endif
