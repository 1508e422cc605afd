/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rate channel's server side, in `wgshape daemon`: UDP sockets on the
 * rate port (IPv4 and IPv6, every address) that answer only a request that
 * came in on a WireGuard interface, to one of that interface's own
 * addresses, from a source address inside exactly one of its peers'
 * AllowedIPs (WireGuard has checked that the packet came from that peer's
 * key: cryptokey routing). Anything else is dropped without an answer.
 * What to grant is the caller's decision (rate_decide_fn); this file
 * carries datagrams, identifies the peer and rate-limits it. The same
 * sockets answer timed probes (proto/tune.h) that came in on a WireGuard
 * interface, stamped with the daemon's receive and send times, at most
 * PROBE_PER_SECOND a second per peer (channel/gate.h): the far end's
 * clock for a client's continuous adaptation.
 */
#ifndef WGSHAPE_CHANNEL_SERVER_H
#define WGSHAPE_CHANNEL_SERVER_H

#include <stdint.h>

#include "netlink/kernel.h"
#include "proto/rate.h"

struct rate_server;

/*
 * A request from the peer key of ifname, asking for asked bytes/s (0: the
 * server's own rate). Fill in answer's status, rate, fallback and lease.
 */
typedef void (*rate_decide_fn)(void *ud, const char *ifname, const uint8_t *key,
			       uint64_t asked, struct rate_msg *answer);

/*
 * Listen on port (UDP, IPv4 and IPv6; a host without IPv6 gets IPv4 only).
 * -errno when neither socket could be bound (-EADDRINUSE: another daemon).
 */
int rate_server_open(struct netlink *nl, unsigned int port, rate_decide_fn decide, void *ud,
		     struct rate_server **out);
/* The sockets' fds (-1 for one not open), to watch for G_IO_IN. */
void rate_server_fds(const struct rate_server *s, int fds[2]);
/* Handle every datagram waiting on fd. */
void rate_server_read(struct rate_server *s, int fd);
void rate_server_close(struct rate_server *s);
/*
 * ifindex's peers as dumped at at (monotonic µs) by someone else (the
 * daemon's poll): the gate's index, unless it holds a younger dump. s may
 * be NULL (no rate channel).
 */
void rate_server_peers(struct rate_server *s, int ifindex, const struct wg_peer *peers, size_t n,
		       int64_t at);

#endif
