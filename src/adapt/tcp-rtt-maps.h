/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the tc program tcp-rtt.bpf.c and its loader tcp-rtt.c share: the
 * layout of its two maps. Included by both, so kernel types only.
 */
#ifndef WGSHAPE_ADAPT_TCP_RTT_MAPS_H
#define WGSHAPE_ADAPT_TCP_RTT_MAPS_H

#include <linux/types.h>

/* A peer's address inside the tunnel: IPv6, or IPv4 mapped (::ffff:a.b.c.d). */
struct tcp_rtt_addr {
	__u8 a[16];
};

enum {
	TCP_RTT_DATA, /* the timed packet toward the peer carried data (a download): by its ACK */
	TCP_RTT_ACK, /* it carried none (an acknowledgement of the peer's upload): by TSecr */
	TCP_RTT_KINDS
};

/* map "peers": one per address the daemon watches; written by both */
struct tcp_rtt_peer {
	__u32 armed; /* the daemon's: time this address's TCP now (its class is loaded) */
	__u32 min_us[TCP_RTT_KINDS]; /* least round trip since the daemon took it; ~0: none */
	/*
	 * The upload's queue since the daemon took it: the count and sum of the
	 * one-way delays of the peer's packets over their connection's least
	 * (in us, from TSval in ms), counted from connections whose clock was
	 * found to tick in ms
	 */
	__u32 up_n;
	__u64 up_sum_us;
};

/*
 * map "sent": a mark seen going to a peer, until the peer answers it: the
 * end of a segment of data (its sequence number after the last byte, which
 * the peer's ACK names), or the TSval of a packet without data (which the
 * peer's next segment echoes as its TSecr).
 */
enum { TCP_RTT_BY_SEQ, TCP_RTT_BY_TS };
struct tcp_rtt_flow {
	struct tcp_rtt_addr peer, far;
	__u16 peer_port, far_port; /* network order */
	__u32 mark; /* host order: the end sequence number, or the TSval */
	__u32 by; /* TCP_RTT_BY_SEQ or TCP_RTT_BY_TS */
};

struct tcp_rtt_sent {
	__u64 at_ns;
};

/*
 * map "clocks": a connection from a peer (a tcp_rtt_flow with mark and by
 * 0), its TCP timestamp clock against ours: the least of (our ms at arrival
 * - its TSval), which is the clocks' offset and the path's one-way delay
 * with no queue (it creeps up 1 ms each TCP_RTT_RISE_MS without a lower
 * one: the clocks' drift), and whether its clock ticks in ms (checked over
 * TCP_RTT_CHECK_MS from the first sighting). Its offset is its own: Linux
 * draws one per address pair, other systems per connection.
 */
enum { TCP_RTT_CLOCK_CHECKING, TCP_RTT_CLOCK_MS, TCP_RTT_CLOCK_OTHER };
struct tcp_rtt_clock {
	__u32 least, least_at; /* ms, our clock's */
	__u32 first_at, first_ts; /* the first sighting: our ms, its TSval */
	__u32 state;
};
#define TCP_RTT_CHECK_MS 4000
#define TCP_RTT_RISE_MS 10000

#define TCP_RTT_PEERS_MAX 4096
#define TCP_RTT_SENT_MAX 16384
#define TCP_RTT_CLOCKS_MAX 16384

#endif
