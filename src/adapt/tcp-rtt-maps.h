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
	TCP_RTT_DATA, /* the timed packet toward the peer carried data (a download) */
	TCP_RTT_ACK, /* it carried none (an acknowledgement of the peer's upload) */
	TCP_RTT_KINDS
};

/* map "peers": one per address the daemon watches; written by both */
struct tcp_rtt_peer {
	__u32 armed; /* the daemon's: time this address's TCP now (its class is loaded) */
	__u32 min_us[TCP_RTT_KINDS]; /* least round trip since the daemon took it; ~0: none */
	__u32 pad;
	__u64 samples; /* round trips timed, ever */
};

/* map "sent": a TSval seen going to a peer, until its echo comes back */
struct tcp_rtt_flow {
	struct tcp_rtt_addr peer, far;
	__u16 peer_port, far_port; /* network order */
	__u32 tsval; /* network order */
};

struct tcp_rtt_sent {
	__u64 at_ns;
	__u32 kind; /* TCP_RTT_DATA or TCP_RTT_ACK */
	__u32 pad;
};

#define TCP_RTT_PEERS_MAX 4096
#define TCP_RTT_SENT_MAX 16384

#endif
