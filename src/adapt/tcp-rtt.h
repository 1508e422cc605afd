/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The passive round trip for the server's adaptation of a peer
 * (src/daemon/peer-adapt.c): a tc program pair (tcp-rtt.bpf.c) that times
 * the peer's own TCP on the tunnel interface (data by its ACK, an ACK by the
 * timestamp echoed) and the wait in the peer's upload alone (from its
 * timestamps' one-way delay), and the map
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

/*
 * addr's TCP since the last take (UINT32_MAX: none): the least round trip of
 * each kind, and the upload's queue alone (from its timestamps)
 */
struct adapt_tcp_rtt_take {
	uint32_t data_us; /* closed by the peer's answer to data sent to it (a download) */
	uint32_t ack_us; /* ... to an acknowledgement sent to it (its upload) */
	/*
	 * the mean wait of its packets in its own upload: their one-way delay
	 * over their connection's least (tcp-rtt.bpf.c)
	 */
	uint32_t up_us;
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

/*
 * What one direction's controller is fed for a round trip rtt_us (all us):
 * the round trip itself, which holds both directions' queues, when the
 * upload's own queue is unknown (up_us < 0) or no least round trip is
 * known yet (least_us <= 0); else, for the upload, the least round trip and
 * the upload's queue, and for the download, the round trip less the
 * upload's queue (never under the least). Both on the round trip's scale,
 * so a controller's baseline holds across ticks with and without it.
 */
int64_t adapt_tcp_rtt_split(int64_t rtt_us, int64_t least_us, int64_t up_us, bool upload);

#endif
