/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ICMP echo for the server's adaptation of a peer that runs nothing but
 * WireGuard (src/daemon/peer-adapt.c): one socket per address family serves
 * every peer probed, answers told apart by their sequence number. A ping
 * socket (SOCK_DGRAM, IPPROTO_ICMP/ICMPV6: no privilege, where
 * net.ipv4.ping_group_range lets; systemd's default does) and a raw one
 * (CAP_NET_RAW) where it does not. The round trip is the caller's to time.
 */
#ifndef WGSHAPE_ADAPT_PING_H
#define WGSHAPE_ADAPT_PING_H

#include <stdbool.h>
#include <stdint.h>

struct adapt_ping;

/* A pinger for family (AF_INET or AF_INET6). 0, or -errno (-EPERM: neither kind allowed). */
int adapt_ping_open(int family, struct adapt_ping **out);
void adapt_ping_free(struct adapt_ping *p);
int adapt_ping_fd(const struct adapt_ping *p);
/* Is it a raw socket (the fallback)? For the log. */
bool adapt_ping_raw(const struct adapt_ping *p);
/* An echo request with seq to addr (4 or 16 bytes, network order). 0, or -errno. */
int adapt_ping_send(struct adapt_ping *p, const uint8_t *addr, uint16_t seq);
/*
 * Read one datagram: 1 with an echo reply of ours (its seq and the address
 * it came from, 4 or 16 bytes), 2 with something else (skipped), 0 when
 * nothing waits, -errno.
 */
int adapt_ping_read(struct adapt_ping *p, uint16_t *seq, uint8_t from[16]);

#endif
