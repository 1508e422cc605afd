// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The round trip of a peer's own TCP, seen on the server's tunnel interface
 * (tc, clsact; built with clang -target bpf, loaded by tcp-rtt.c). Going to
 * the peer, a packet's TCP timestamp (TSval) is noted with the time; coming
 * back, the first packet from the peer that echoes it (TSecr) closes the
 * round trip: the peer's line both ways, its own queues included, as pping
 * and ePPing measure. Only addresses the daemon put in "peers" and armed
 * (their class is loaded) are looked at; every other packet costs one hash
 * lookup. Both programs only watch: they return TC_ACT_UNSPEC, and the
 * packet goes on to the next filter (wgshape's redirect on ingress).
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

struct pkt {
	struct tcp_rtt_addr src, dst;
	__u16 sport, dport;
	__u32 tsval, tsecr;
	int data; /* carries payload */
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

/* p from skb: 0 for a TCP segment with a timestamp option, -1 for anything else */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *tcp;
	__u32 l3_len, hdrs;
	__u8 *o, *opt_end;

	/* a tunnel interface: no link-layer header, the IP header first */
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP ||
		    (ip->frag_off & bpf_htons(0x1fff)) || ip->ihl < 5)
			return -1;
		map4(&p->src, ip->saddr);
		map4(&p->dst, ip->daddr);
		tcp = (void *)ip + ip->ihl * 4;
		l3_len = bpf_ntohs(ip->tot_len);
		hdrs = ip->ihl * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return -1;
		__builtin_memcpy(p->src.a, &ip6->saddr, 16);
		__builtin_memcpy(p->dst.a, &ip6->daddr, 16);
		tcp = (void *)(ip6 + 1);
		l3_len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		hdrs = sizeof(*ip6);
	} else {
		return -1;
	}
	if ((void *)(tcp + 1) > end || tcp->doff <= 5)
		return -1;
	p->sport = tcp->source;
	p->dport = tcp->dest;
	hdrs += tcp->doff * 4;
	/* a GSO packet's IP length is not its size: its skb is, and it carries data */
	p->data = skb->len > hdrs && (l3_len > hdrs || skb->gso_segs > 1);
	o = (__u8 *)(tcp + 1);
	opt_end = (__u8 *)tcp + tcp->doff * 4;
	for (int i = 0; i < OPTS_LOOKED; i++) {
		__u8 kind, len;

		if ((void *)(o + 2) > end || o >= opt_end)
			return -1;
		kind = o[0];
		if (kind == TCPOPT_EOL)
			return -1;
		if (kind == TCPOPT_NOP) {
			o++;
			continue;
		}
		len = o[1];
		if (len < 2)
			return -1;
		if (kind == TCPOPT_TIMESTAMP && len == TCPOLEN_TIMESTAMP) {
			if ((void *)(o + TCPOLEN_TIMESTAMP) > end)
				return -1;
			__builtin_memcpy(&p->tsval, o + 2, 4);
			__builtin_memcpy(&p->tsecr, o + 6, 4);
			return 0;
		}
		o += len;
	}
	return -1;
}

static __always_inline int armed(const struct tcp_rtt_addr *a)
{
	struct tcp_rtt_peer *v = bpf_map_lookup_elem(&peers, a);

	return v && v->armed;
}

/* Going to a peer: its TSval, the first time it is seen, with the time. */
SEC("tc")
int wgshape_rtt_out(struct __sk_buff *skb)
{
	struct tcp_rtt_flow f;
	struct tcp_rtt_sent s = { 0 };
	struct pkt p;

	if (parse(skb, &p) < 0 || !armed(&p.dst))
		return TC_ACT_UNSPEC;
	f.peer = p.dst;
	f.far = p.src;
	f.peer_port = p.dport;
	f.far_port = p.sport;
	f.tsval = p.tsval;
	s.at_ns = bpf_ktime_get_ns();
	s.kind = p.data ? TCP_RTT_DATA : TCP_RTT_ACK;
	bpf_map_update_elem(&sent, &f, &s, BPF_NOEXIST);
	return TC_ACT_UNSPEC;
}

/* Coming from a peer: an echo (TSecr) of a TSval noted closes a round trip. */
SEC("tc")
int wgshape_rtt_in(struct __sk_buff *skb)
{
	struct tcp_rtt_flow f;
	struct tcp_rtt_sent *s;
	struct tcp_rtt_peer *v;
	struct pkt p;
	__u64 us;
	__u32 kind;

	if (parse(skb, &p) < 0 || !p.tsecr)
		return TC_ACT_UNSPEC;
	v = bpf_map_lookup_elem(&peers, &p.src);
	if (!v || !v->armed)
		return TC_ACT_UNSPEC;
	f.peer = p.src;
	f.far = p.dst;
	f.peer_port = p.sport;
	f.far_port = p.dport;
	f.tsval = p.tsecr;
	s = bpf_map_lookup_elem(&sent, &f);
	if (!s)
		return TC_ACT_UNSPEC;
	us = (bpf_ktime_get_ns() - s->at_ns) / 1000;
	kind = s->kind == TCP_RTT_DATA ? TCP_RTT_DATA : TCP_RTT_ACK;
	bpf_map_delete_elem(&sent, &f);
	if (us > 0xfffffffe)
		us = 0xfffffffe;
	if (us < v->min_us[kind])
		v->min_us[kind] = (__u32)us;
	__sync_fetch_and_add(&v->samples, 1);
	return TC_ACT_UNSPEC;
}
