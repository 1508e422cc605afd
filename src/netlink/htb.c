// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * HTB for per-peer shaping: the root qdisc (with a size table for the
 * tunnel's overhead), its classes, and a dump of any interface's classes.
 * Layouts follow the kernel's net/sched/sch_htb.c and what tc/q_htb.c sends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <glib.h>

#include "internal.h"

#define HTB_R2Q 10 /* tc's default: a leaf's quantum is its rate / 10 */
#define HTB_QUANTUM_MIN 1500 /* one full-size packet per round */
#define HTB_QUANTUM_MAX 200000 /* above this the kernel logs "quantum is big" */
#define HTB_MTU 1600 /* tc's default packet size for the burst */
/*
 * The kernel keeps buffer and cbuffer in psched ticks of 64 ns
 * (PSCHED_SHIFT 6, fixed since 2.6.25; /proc/net/psched says the same).
 */
#define PSCHED_NS_PER_TICK 64

static const int mode_flags[] = {
	[QDISC_ADD] = NLM_F_CREATE | NLM_F_EXCL,
	[QDISC_CHANGE] = 0,
	[QDISC_REPLACE] = NLM_F_CREATE | NLM_F_REPLACE,
};

/*
 * A size table with no cells (tsize 0): the kernel then only adds overhead
 * to each packet's length, and needs no table data.
 */
static int stab_put(struct nl_msg *msg, int overhead)
{
	struct tc_sizespec s = {
		.overhead = overhead,
		.linklayer = TC_LINKLAYER_ETHERNET,
	};
	struct nlattr *stab;

	if (!(stab = nla_nest_start(msg, TCA_STAB)) ||
	    nla_put(msg, TCA_STAB_BASE, sizeof(s), &s) < 0)
		return -ENOMEM;
	nla_nest_end(msg, stab);
	return 0;
}

static int htb_init_put(struct nl_msg *msg, uint16_t defcls)
{
	struct tc_htb_glob g = {
		.version = TC_HTB_PROTOVER,
		.rate2quantum = HTB_R2Q,
		.defcls = defcls,
	};
	struct nlattr *opts;

	if (!(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    nla_put(msg, TCA_HTB_INIT, sizeof(g), &g) < 0)
		return -ENOMEM;
	nla_nest_end(msg, opts);
	return 0;
}

int netlink_htb_root_set(struct netlink *nl, int ifindex, uint32_t handle, uint16_t defcls,
			 int overhead, enum qdisc_mode mode)
{
	struct nl_msg *msg;

	if (TC_H_MIN(handle) || !TC_H_MAJ(handle) || (unsigned int)mode > QDISC_REPLACE)
		return -EINVAL;
	msg = netlink_tc_msg(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK | mode_flags[mode], ifindex,
			     handle, TC_H_ROOT, 0);
	if (!msg)
		return -ENOMEM;
	/*
	 * HTB has no change operation: a change with TCA_OPTIONS fails, and
	 * without them it changes the size table only (which a change without
	 * TCA_STAB would remove).
	 */
	if (nla_put_string(msg, TCA_KIND, "htb") < 0 ||
	    (mode != QDISC_CHANGE && htb_init_put(msg, defcls) < 0) ||
	    stab_put(msg, overhead) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

/* How long size bytes take at rate bytes/s, in psched ticks (tc_calc_xmittime). */
static uint32_t xmit_ticks(uint64_t rate, uint64_t size)
{
	double ticks = (double)size * 1e9 / (double)rate / PSCHED_NS_PER_TICK;

	return ticks >= UINT32_MAX ? UINT32_MAX : (uint32_t)ticks;
}

/* One MTU plus a millisecond at the rate, so fast classes are not held to a packet. */
static uint32_t burst_ticks(uint64_t rate)
{
	return xmit_ticks(rate, HTB_MTU + rate / 1000);
}

static uint32_t quantum_of(uint64_t rate)
{
	uint64_t q = rate / HTB_R2Q;

	if (q < HTB_QUANTUM_MIN)
		return HTB_QUANTUM_MIN;
	return q > HTB_QUANTUM_MAX ? HTB_QUANTUM_MAX : (uint32_t)q;
}

static int htb_parms_put(struct nl_msg *msg, uint64_t rate, uint64_t ceil)
{
	/*
	 * With a link layer set the kernel needs no rate tables; rates above
	 * 32 bits go in RATE64/CEIL64, with the 32-bit field saturated (it
	 * must not be 0).
	 */
	struct tc_htb_opt o = {
		.rate = { .linklayer = TC_LINKLAYER_ETHERNET,
			  .rate = rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate },
		.ceil = { .linklayer = TC_LINKLAYER_ETHERNET,
			  .rate = ceil > UINT32_MAX ? UINT32_MAX : (uint32_t)ceil },
		.buffer = burst_ticks(rate),
		.cbuffer = burst_ticks(ceil),
		.quantum = quantum_of(rate),
	};
	struct nlattr *opts;

	if (!(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    nla_put(msg, TCA_HTB_PARMS, sizeof(o), &o) < 0 ||
	    (rate > UINT32_MAX && nla_put_u64(msg, TCA_HTB_RATE64, rate) < 0) ||
	    (ceil > UINT32_MAX && nla_put_u64(msg, TCA_HTB_CEIL64, ceil) < 0))
		return -ENOMEM;
	nla_nest_end(msg, opts);
	return 0;
}

int netlink_htb_class_set(struct netlink *nl, int ifindex, uint32_t classid, uint32_t parent,
			  uint64_t rate, uint64_t ceil, enum qdisc_mode mode)
{
	struct nl_msg *msg;

	if (!rate || !ceil || !TC_H_MIN(classid) || (unsigned int)mode > QDISC_REPLACE)
		return -EINVAL;
	/* A class has no replace: without EXCL, NEWTCLASS creates or changes. */
	msg = netlink_tc_msg(RTM_NEWTCLASS,
			     NLM_F_REQUEST | NLM_F_ACK | (mode_flags[mode] & ~NLM_F_REPLACE),
			     ifindex, classid, parent, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, "htb") < 0 || htb_parms_put(msg, rate, ceil) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

int netlink_class_del(struct netlink *nl, int ifindex, uint32_t classid)
{
	struct nl_msg *msg;

	msg = netlink_tc_msg(RTM_DELTCLASS, NLM_F_REQUEST | NLM_F_ACK, ifindex, classid, 0, 0);
	if (!msg)
		return -ENOMEM;
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

static void parse_htb_opts(struct nlattr *opts, struct tc_class_info *out)
{
	struct nlattr *tb[TCA_HTB_MAX + 1];
	const struct tc_htb_opt *o;

	if (nla_parse_nested(tb, TCA_HTB_MAX, opts, NULL) < 0 || !tb[TCA_HTB_PARMS] ||
	    nla_len(tb[TCA_HTB_PARMS]) < (int)sizeof(*o))
		return;
	o = nla_data(tb[TCA_HTB_PARMS]);
	out->rate = o->rate.rate;
	out->ceil = o->ceil.rate;
	/* The kernel sends the 64-bit ones only for rates of 2^32 bytes/s and more. */
	if (tb[TCA_HTB_RATE64] && nla_len(tb[TCA_HTB_RATE64]) >= 8)
		out->rate = nla_get_u64(tb[TCA_HTB_RATE64]);
	if (tb[TCA_HTB_CEIL64] && nla_len(tb[TCA_HTB_CEIL64]) >= 8)
		out->ceil = nla_get_u64(tb[TCA_HTB_CEIL64]);
}

static void parse_class_stats(struct nlattr *stats, struct tc_class_info *out)
{
	struct nlattr *tb[TCA_STATS_MAX + 1];
	struct gnet_stats_basic b;
	struct gnet_stats_queue q;

	if (nla_parse_nested(tb, TCA_STATS_MAX, stats, NULL) < 0)
		return;
	/* The kernel pads gnet_stats_basic to 16 bytes; 12 are the data. */
	if (tb[TCA_STATS_BASIC] && nla_len(tb[TCA_STATS_BASIC]) >= 12) {
		memset(&b, 0, sizeof(b));
		memcpy(&b, nla_data(tb[TCA_STATS_BASIC]), 12);
		out->bytes = b.bytes;
		out->packets = b.packets;
	}
	/* Only when the packet count outgrew the 32 bits of the basic one. */
	if (tb[TCA_STATS_PKT64] && nla_len(tb[TCA_STATS_PKT64]) >= 8)
		out->packets = nla_get_u64(tb[TCA_STATS_PKT64]);
	if (tb[TCA_STATS_QUEUE] && nla_len(tb[TCA_STATS_QUEUE]) >= (int)sizeof(q)) {
		memcpy(&q, nla_data(tb[TCA_STATS_QUEUE]), sizeof(q));
		out->drops = q.drops;
		out->overlimits = q.overlimits;
		out->backlog_bytes = q.backlog;
		out->backlog_packets = q.qlen;
	}
}

static int collect_class(struct nl_msg *msg, GArray *arr, const void *match)
{
	const int *ifindex = match;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct tcmsg *tcm = nlmsg_data(hdr);
	struct nlattr *tb[TCA_MAX + 1];
	struct tc_class_info c = { 0 };

	if (hdr->nlmsg_type != RTM_NEWTCLASS)
		return 0;
	/* The class dump honours tcm_ifindex (6.1); check anyway, it costs nothing. */
	if (tcm->tcm_ifindex != *ifindex)
		return 0;
	if (nlmsg_parse(hdr, sizeof(*tcm), tb, TCA_MAX, NULL) < 0 || !tb[TCA_KIND])
		return -EBADMSG;
	nla_strlcpy(c.kind, tb[TCA_KIND], sizeof(c.kind));
	c.classid = tcm->tcm_handle;
	c.parent = tcm->tcm_parent;
	/* A leaf class reports its qdisc's handle here (0 for HTB's default pfifo). */
	c.leaf = tcm->tcm_info;
	if (tb[TCA_OPTIONS] && strcmp(c.kind, "htb") == 0)
		parse_htb_opts(tb[TCA_OPTIONS], &c);
	if (tb[TCA_STATS2])
		parse_class_stats(tb[TCA_STATS2], &c);
	g_array_append_val(arr, c);
	return 0;
}

int netlink_class_list(struct netlink *nl, int ifindex, struct tc_class_info **out, size_t *n)
{
	return netlink_dump(nl, nl->rt,
			    netlink_tc_msg(RTM_GETTCLASS, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, 0, 0),
			    sizeof(**out), collect_class, &ifindex, NULL, (void **)out, n);
}
