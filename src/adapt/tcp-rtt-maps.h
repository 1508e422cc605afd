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

#define TCP_RTT_PEERS_MAX 4096
#define TCP_RTT_SENT_MAX 16384

#endif
