/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The passive round trip for the server's adaptation of a peer
 * (src/daemon/peer-adapt.c): a tc program pair (tcp-rtt.bpf.c) that times
 * the peer's own TCP on the tunnel interface (data by its ACK, an ACK by the
 * timestamp echoed), and the map
 * of addresses it watches. This loads the programs and reads the map; the
 * daemon attaches them (netlink_tc_bpf_attach). Built only where libbpf,
 * clang and bpftool were found (meson option bpf); elsewhere open says
 * -EOPNOTSUPP and the ICMP echo (ping.h) is the only signal.
 */
#ifndef WGSHAPE_ADAPT_TCP_RTT_H
#define WGSHAPE_ADAPT_TCP_RTT_H

#include <stdbool.h>
#include <stdint.h>

struct adapt_tcp_rtt;

/* Load the programs and their maps. 0, or -errno (-EOPNOTSUPP: built without). */
int adapt_tcp_rtt_open(struct adapt_tcp_rtt **out);
void adapt_tcp_rtt_free(struct adapt_tcp_rtt *t);
/* The program for packets going to the peers (egress) or coming from them. */
int adapt_tcp_rtt_prog_fd(const struct adapt_tcp_rtt *t, bool egress);

/*
 * Watch addr (4 or 16 bytes by family, network order): armed, its TCP is
 * timed; not, it is kept but costs nothing. 0, or -errno.
 */
int adapt_tcp_rtt_watch(struct adapt_tcp_rtt *t, int family, const uint8_t *addr, bool armed);
void adapt_tcp_rtt_unwatch(struct adapt_tcp_rtt *t, int family, const uint8_t *addr);

/* The round trips of addr since the last take: the least of each kind (UINT32_MAX: none). */
struct adapt_tcp_rtt_take {
	uint32_t data_us; /* closed by the peer's answer to data sent to it (a download) */
	uint32_t ack_us; /* ... to an acknowledgement sent to it (its upload) */
};
/* 1 with *out when some were timed since the last take, 0 when none, -errno. */
int adapt_tcp_rtt_take(struct adapt_tcp_rtt *t, int family, const uint8_t *addr,
		       struct adapt_tcp_rtt_take *out);

/*
 * The round trip of a tick's takes, in us (-1: none): the least, where one
 * closed by an answer to data loses what that data waited in the peer's own
 * class (the program sees it before the qdisc), queued bytes there and one
 * packet (full_packet bytes: the segment's own time through it)
 * at rate bytes/s; never more than half of it.
 */
int64_t adapt_tcp_rtt_pick(uint32_t data_us, uint32_t ack_us, uint64_t queued,
			   uint32_t full_packet, uint64_t rate);

#endif
