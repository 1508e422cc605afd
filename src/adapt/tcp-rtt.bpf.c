// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The round trip of a peer's own TCP, seen on the server's tunnel interface
 * (tc, clsact; built with clang -target bpf, loaded by tcp-rtt.c): the
 * peer's line both ways, its own queues included. Going to the peer, a
 * segment of data is noted by its end (the sequence number after its last
 * byte) with the time, and the peer's ACK that names that end closes the
 * round trip, as TCP's own estimator does (a GRO batch or a delayed ACK
 * answers the segment that triggered it, not the first it covers; a
 * segment sent twice is not timed). A packet without data (an ACK of the
 * peer's upload) is noted by its TCP timestamp (TSval), and the first
 * segment from the peer that echoes it (TSecr) closes it, as pping does.
 * Only addresses the daemon put in "peers" and armed (their class is
 * loaded) are looked at; every other packet costs one hash lookup.
 *
 * The upload's own queue, apart from the round trip (which holds both
 * directions'): a packet from the peer carries its TSval, the peer's clock
 * when it sent it, so (our clock at arrival - TSval) is the one-way delay
 * plus the clocks' offset. Over its connection's least (the offset and the
 * path alone), it is what the packet waited in the peer's upload. Counted
 * only from connections whose timestamps tick in ms (Linux, and most
 * others; not 250 Hz or us clocks), checked over their first seconds. Both
 * programs only watch: they return TC_ACT_UNSPEC, and the packet goes on to
 * the next filter (wgshape's redirect on ingress).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "tcp-rtt-maps.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCP_RTT_PEERS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for the peers watched, not the most */
	__type(key, struct tcp_rtt_addr);
	__type(value, struct tcp_rtt_peer);
} peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TCP_RTT_SENT_MAX);
	__type(key, struct tcp_rtt_flow);
	__type(value, struct tcp_rtt_sent);
} sent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TCP_RTT_CLOCKS_MAX);
	__type(key, struct tcp_rtt_flow);
	__type(value, struct tcp_rtt_clock);
} clocks SEC(".maps");

struct pkt {
	struct tcp_rtt_addr src, dst;
	__u16 sport, dport;
	__u32 seq_end, ack; /* host order; ack 0: no ACK flag */
	__u32 tsval, tsecr; /* network order; 0: no timestamp option */
	__u32 data; /* bytes of payload */
};

#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_TIMESTAMP 8
#define TCPOLEN_TIMESTAMP 10
#define OPTS_LOOKED 10 /* options looked through for the timestamp */

static __always_inline void map4(struct tcp_rtt_addr *a, __u32 v4)
{
	__builtin_memset(a, 0, sizeof(*a));
	a->a[10] = 0xff;
	a->a[11] = 0xff;
	__builtin_memcpy(&a->a[12], &v4, 4);
}

/* The timestamp option among tcp's options, into p (left 0 when none). */
static __always_inline void timestamps(struct tcphdr *tcp, void *end, struct pkt *p)
{
	__u8 *o = (__u8 *)(tcp + 1), *opt_end = (__u8 *)tcp + tcp->doff * 4;

	for (int i = 0; i < OPTS_LOOKED; i++) {
		__u8 kind, len;

		if ((void *)(o + 2) > end || o >= opt_end)
			return;
		kind = o[0];
		if (kind == TCPOPT_EOL)
			return;
		if (kind == TCPOPT_NOP) {
			o++;
			continue;
		}
		len = o[1];
		if (len < 2)
			return;
		if (kind == TCPOPT_TIMESTAMP && len == TCPOLEN_TIMESTAMP) {
			if ((void *)(o + TCPOLEN_TIMESTAMP) > end)
				return;
			__builtin_memcpy(&p->tsval, o + 2, 4);
			__builtin_memcpy(&p->tsecr, o + 6, 4);
			return;
		}
		o += len;
	}
}

/* p from skb: 0 for a TCP segment, -1 for anything else */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *tcp;
	__u32 hdrs;

	__builtin_memset(p, 0, sizeof(*p));
	/* a tunnel interface: no link-layer header, the IP header first */
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x1fff)) || ip->ihl < 5)
			return -1;
		map4(&p->src, ip->saddr);
		map4(&p->dst, ip->daddr);
		tcp = (void *)ip + ip->ihl * 4;
		hdrs = ip->ihl * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return -1;
		__builtin_memcpy(p->src.a, &ip6->saddr, 16);
		__builtin_memcpy(p->dst.a, &ip6->daddr, 16);
		tcp = (void *)(ip6 + 1);
		hdrs = sizeof(*ip6);
	} else {
		return -1;
	}
	if ((void *)(tcp + 1) > end || tcp->doff < 5)
		return -1;
	p->sport = tcp->source;
	p->dport = tcp->dest;
	hdrs += tcp->doff * 4;
	/* the whole packet, a GSO one's every segment: no link-layer header here */
	p->data = skb->len > hdrs ? skb->len - hdrs : 0;
	p->seq_end = bpf_ntohl(tcp->seq) + p->data;
	if (tcp->ack)
		p->ack = bpf_ntohl(tcp->ack_seq);
	if (tcp->doff > 5)
		timestamps(tcp, end, p);
	return 0;
}

static __always_inline int armed(const struct tcp_rtt_addr *a)
{
	struct tcp_rtt_peer *v = bpf_map_lookup_elem(&peers, a);

	return v && v->armed;
}

/* Going to a peer: a segment's end, or a TSval without data, with the time. */
SEC("tc")
int wgshape_rtt_out(struct __sk_buff *skb)
{
	struct tcp_rtt_sent s;
	struct tcp_rtt_flow f;
	struct pkt p;

	if (parse(skb, &p) < 0 || (!p.data && !p.tsval) || !armed(&p.dst))
		return TC_ACT_UNSPEC;
	f.peer = p.dst;
	f.far = p.src;
	f.peer_port = p.dport;
	f.far_port = p.sport;
	f.mark = p.data ? p.seq_end : bpf_ntohl(p.tsval);
	f.by = p.data ? TCP_RTT_BY_SEQ : TCP_RTT_BY_TS;
	s.at_ns = bpf_ktime_get_ns();
	/* the same end again is a retransmission: not timed (Karn), nor the first */
	if (bpf_map_update_elem(&sent, &f, &s, BPF_NOEXIST) < 0 && f.by == TCP_RTT_BY_SEQ)
		bpf_map_delete_elem(&sent, &f);
	return TC_ACT_UNSPEC;
}

/* A round trip of kind closed now: the least of the peer's since the daemon took it. */
static __always_inline void close_rtt(struct tcp_rtt_peer *v, struct tcp_rtt_flow *f, int kind)
{
	struct tcp_rtt_sent *s = bpf_map_lookup_elem(&sent, f);
	__u64 us;

	if (!s)
		return;
	us = (bpf_ktime_get_ns() - s->at_ns) / 1000;
	bpf_map_delete_elem(&sent, f);
	if (us > 0xfffffffe)
		us = 0xfffffffe;
	if (us < v->min_us[kind])
		v->min_us[kind] = (__u32)us;
}

/*
 * A packet from the peer with its TSval (host order): its wait in the
 * peer's upload, over its connection's least (the clock's offset and the
 * path), added to the window's sum when the connection's clock is in ms.
 */
static __always_inline void one_way_up(struct tcp_rtt_peer *v, struct tcp_rtt_flow *f,
				       __u32 tsval)
{
	__u32 now = (__u32)(bpf_ktime_get_ns() / 1000000), d = now - tsval, span;
	struct tcp_rtt_clock *c, n;
	__s32 over;

	f->mark = 0;
	f->by = 0;
	c = bpf_map_lookup_elem(&clocks, f);
	if (!c) {
		n = (struct tcp_rtt_clock){ .least = d, .least_at = now, .first_at = now,
					    .first_ts = tsval,
					    .state = TCP_RTT_CLOCK_CHECKING };
		bpf_map_update_elem(&clocks, f, &n, BPF_NOEXIST);
		return;
	}
	span = now - c->first_at;
	if (c->state == TCP_RTT_CLOCK_CHECKING && span >= TCP_RTT_CHECK_MS) {
		__u32 ticks = tsval - c->first_ts;

		/* in ms, its ticks over the span are within a factor of 2 of ours
		 * (a queue that grew or drained meanwhile moves them less) */
		c->state = ticks < 2 * span && 2 * ticks > span ? TCP_RTT_CLOCK_MS
								: TCP_RTT_CLOCK_OTHER;
	}
	over = (__s32)(d - c->least);
	if (over < 0) {
		c->least = d;
		c->least_at = now;
		over = 0;
	} else if (now - c->least_at >= TCP_RTT_RISE_MS) {
		c->least++;
		c->least_at = now;
	}
	if (c->state != TCP_RTT_CLOCK_MS)
		return;
	__sync_fetch_and_add(&v->up_sum_us, (__u64)over * 1000);
	__sync_fetch_and_add(&v->up_n, 1);
}

/* Coming from a peer: its ACK of a segment's end, or its echo (TSecr) of a TSval. */
SEC("tc")
int wgshape_rtt_in(struct __sk_buff *skb)
{
	struct tcp_rtt_peer *v;
	struct tcp_rtt_flow f;
	struct pkt p;

	if (parse(skb, &p) < 0 || (!p.ack && !p.tsecr && !p.tsval))
		return TC_ACT_UNSPEC;
	v = bpf_map_lookup_elem(&peers, &p.src);
	if (!v || !v->armed)
		return TC_ACT_UNSPEC;
	f.peer = p.src;
	f.far = p.dst;
	f.peer_port = p.sport;
	f.far_port = p.dport;
	if (p.ack) {
		f.mark = p.ack;
		f.by = TCP_RTT_BY_SEQ;
		close_rtt(v, &f, TCP_RTT_DATA);
	}
	if (p.tsecr) {
		f.mark = bpf_ntohl(p.tsecr);
		f.by = TCP_RTT_BY_TS;
		close_rtt(v, &f, TCP_RTT_ACK);
	}
	if (p.tsval)
		one_way_up(v, &f, bpf_ntohl(p.tsval));
	return TC_ACT_UNSPEC;
}
