/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rate channel's client side: ask the server, through the tunnel, to
 * shape this client's download at a rate (proto/rate.h), and remember what
 * was asked and answered in IFNAME.client in the state directory, for
 * `show` and for renewing the lease.
 */
#ifndef WGSHAPE_CHANNEL_CLIENT_H
#define WGSHAPE_CHANNEL_CLIENT_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>

#include "netlink/kernel.h"
#include "proto/rate.h"

#define RATE_RECORD_SUFFIX ".client"
/* the source of a request made by `wgshape set client` (renewed as it is) */
#define RATE_SOURCE_SET "set"
/* tries, and how long each waits for the answer */
#define RATE_TRIES 3
#define RATE_WAIT_MS 400

struct rate_record {
	uint64_t asked; /* bytes/s; 0: the server's own rate */
	char server[INET6_ADDRSTRLEN];
	unsigned int port;
	char source[160]; /* who asked: "set", "network 'Home' (file:line)" */
	int64_t at; /* when it was last asked: CLOCK_REALTIME seconds */
	int64_t at_boot; /* the same in CLOCK_BOOTTIME, for renewals */
	enum rate_status status; /* the answer's; RATE_NONE: no answer */
	uint64_t rate, fallback; /* the answer's, bytes/s */
	uint32_t lease; /* the answer's, seconds */
};

/* -ENOENT when ifname has none; the state files' refusals otherwise. */
int rate_record_load(const char *dir, const char *ifname, struct rate_record *out);
int rate_record_save(const char *dir, const char *ifname, const struct rate_record *r);
int rate_record_remove(const char *dir, const char *ifname);

/*
 * Is r a lease the server granted that is due for renewal at now_boot
 * (RATE_RENEW_S after it was asked, or sooner when the lease is short), or
 * a request that got no answer (asked again after RATE_RENEW_S / 4)?
 */
bool rate_record_due(const struct rate_record *r, int64_t now_boot);

/* Where the server's address came from, so that a message can say so. */
enum rate_server_how {
	RATE_SERVER_GIVEN, /* named: server ADDR, server = in the configuration */
	RATE_SERVER_HOST, /* the only peer's AllowedIPs entry of one address (/32, /128) */
	RATE_SERVER_ANSWERED, /* answered the last request (IFACE.client), a peer's address */
	RATE_SERVER_GUESS, /* the first address of the tunnel's subnet, in the peer's AllowedIPs */
};

struct rate_server {
	char addr[INET6_ADDRSTRLEN];
	enum rate_server_how how;
	/*
	 * GUESS: how ("the first address of the subnet of wg0's address
	 * 10.0.0.3/24, inside the peer's AllowedIPs 10.0.0.0/24")
	 */
	char from[192];
};

/*
 * The server's tunnel address for ifname, without I/O: server when given (an
 * address); else the only one of peers' AllowedIPs entry of one address
 * (/32, /128); else answered (an address that answered before, or NULL)
 * when a peer's AllowedIPs hold it; else, a guess, the first address of the
 * subnet of one of addrs (ifname's own) if the only peer's AllowedIPs hold
 * it. -EINVAL with why when none can be found.
 */
int rate_server_choose(const char *ifname, const struct wg_peer *peers, size_t n,
		       const struct addr_info *addrs, size_t n_addrs, const char *server,
		       const char *answered, struct rate_server *out, char *why, size_t whylen);

/*
 * Where s's address came from, for a message when it did not answer:
 * "10.0.0.1 was a guess: the first address of ...".
 */
void rate_server_describe(const struct rate_server *s, char *buf, size_t size);

/* rate_server_choose() with ifname's peers and addresses from the kernel. */
int rate_client_find_server(struct netlink *nl, const char *ifname, const char *server,
			    const char *answered, struct rate_server *out, char *why,
			    size_t whylen);

/* rate_client_find_server() without answered, for its address only. */
int rate_client_server(struct netlink *nl, const char *ifname, const char *server,
		       char out[INET6_ADDRSTRLEN], char *why, size_t whylen);

/*
 * The rate channel without waiting, for a caller with an event loop: a UDP
 * socket connected to server (an address) on port, bound to ifname (the fd,
 * or -errno; -EINVAL for an address that is not one); a request for rate
 * (0 or -errno); one datagram read (1 with the answer to token, or with any
 * answer when token is 0; 0 when none waits or it was not that answer;
 * -errno).
 */
int rate_client_socket(const char *ifname, const char *server, unsigned int port);
int rate_client_send(int fd, uint64_t rate, uint32_t token);
int rate_client_recv(int fd, uint32_t token, struct rate_msg *answer);

/*
 * Ask server (an address) on port, from ifname (the socket is bound to it),
 * for rate bytes/s (0: the server's own): RATE_TRIES tries of RATE_WAIT_MS.
 * 0 with *answer; -ETIMEDOUT when nothing answered; -errno.
 */
int rate_client_ask(const char *ifname, const char *server, unsigned int port, uint64_t rate,
		    struct rate_msg *answer);

/*
 * Ask, and record the request and its answer (rec, also saved in dir).
 * 0 when answered (any status), -ETIMEDOUT, or -errno.
 */
int rate_client_request(const char *dir, const char *ifname, const char *server,
			unsigned int port, uint64_t rate, const char *source,
			struct rate_record *rec);

/* One line of what the answer in r means: "applied: 20 Mbit/s for 180 s", ... */
void rate_record_describe(const struct rate_record *r, char *buf, size_t size);

#endif
