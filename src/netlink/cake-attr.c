/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake's TCA_OPTIONS and TCA_STATS2 by hand, since libnl has no cake module.
 * Layouts follow the kernel's net/sched/sch_cake.c (cake_dump, cake_dump_stats)
 * and what tc/q_cake.c sends.
 *
 * Each nest is described once, by a table of (attribute, wire type, member);
 * encoding, decoding and the libnl policy all come from that table so they
 * cannot drift apart. Decoding ignores attributes it does not know (newer
 * kernels add some) but refuses known ones that are too short.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "cake-attr.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(sizeof(bool) == 1, "field_store() writes bools as one byte");
_Static_assert(CAKE_MAX_TINS == TC_CAKE_MAX_TINS, "tin arrays sized from the kernel's limit");
_Static_assert((int)CAKE_DS_MAX == (int)CAKE_DIFFSERV_MAX, "diffserv values are the kernel's");
_Static_assert((int)CAKE_ACKF_MAX == (int)CAKE_ACK_MAX, "ack-filter values are the kernel's");
_Static_assert((int)CAKE_FM_MAX == (int)CAKE_FLOW_MAX, "flow modes are the kernel's");
_Static_assert((int)CAKE_FM_TRIPLE_ISOLATE == (int)CAKE_FLOW_TRIPLE, "flow modes are the kernel's");
_Static_assert((int)CAKE_FM_DUAL_DSTHOST == (int)CAKE_FLOW_DUAL_DST, "flow modes are the kernel's");
_Static_assert((int)CAKE_ATMC_MAX == (int)CAKE_ATM_MAX, "atm values are the kernel's");
_Static_assert((int)CAKE_ATMC_PTM == (int)CAKE_ATM_PTM, "atm values are the kernel's");

enum wire {
	W_U32,
	W_S32,
	W_U64,
	W_PRESENT, /* the attribute's presence is the value (TCA_CAKE_RAW): sent only when true */
};

struct field {
	uint16_t attr;
	uint8_t wire; /* enum wire */
	bool send; /* cake_attr_put sends it when its has bit is set */
	uint32_t has; /* struct cake_opts only */
	uint16_t offset, size; /* of the member in the decoded struct */
};

#define FIELD(st, a, w, member)                                                                  \
	{ .attr = (a), .wire = (w), .offset = offsetof(st, member),                              \
	  .size = sizeof(((st *)0)->member) }

#define OPT(a, w, bit, member, s)                                                                \
	{ .attr = (a), .wire = (w), .send = (s), .has = (bit),                                   \
	  .offset = offsetof(struct cake_opts, member),                                          \
	  .size = sizeof(((struct cake_opts *)0)->member) }

/*
 * Rows not sent are what cake_dump reports but we never set ourselves;
 * TCA_CAKE_TARGET among them, because cake_attr_put derives it from the rtt.
 * The kernel reads the attributes in its own order whatever ours: an
 * overhead turns raw mode on and TCA_CAKE_RAW, read after it, off again.
 */
static const struct field opts_fields[] = {
	OPT(TCA_CAKE_BASE_RATE64, W_U64, CAKE_HAS_RATE, rate, true),
	OPT(TCA_CAKE_OVERHEAD, W_S32, CAKE_HAS_OVERHEAD, overhead, true),
	OPT(TCA_CAKE_MPU, W_U32, CAKE_HAS_MPU, mpu, true),
	OPT(TCA_CAKE_RTT, W_U32, CAKE_HAS_RTT, rtt, true),
	OPT(TCA_CAKE_DIFFSERV_MODE, W_U32, CAKE_HAS_DIFFSERV, diffserv, true),
	OPT(TCA_CAKE_NAT, W_U32, CAKE_HAS_NAT, nat, true),
	OPT(TCA_CAKE_WASH, W_U32, CAKE_HAS_WASH, wash, true),
	OPT(TCA_CAKE_ACK_FILTER, W_U32, CAKE_HAS_ACK_FILTER, ack_filter, true),
	OPT(TCA_CAKE_MEMORY, W_U32, CAKE_HAS_MEMLIMIT, memlimit, true),
	OPT(TCA_CAKE_INGRESS, W_U32, CAKE_HAS_INGRESS, ingress, true),
	OPT(TCA_CAKE_TARGET, W_U32, CAKE_HAS_TARGET, target, false),
	OPT(TCA_CAKE_RAW, W_PRESENT, CAKE_HAS_RAW, raw, true),
	OPT(TCA_CAKE_FLOW_MODE, W_U32, CAKE_HAS_FLOW_MODE, flow_mode, true),
	OPT(TCA_CAKE_ATM, W_U32, CAKE_HAS_ATM, atm, true),
	OPT(TCA_CAKE_SPLIT_GSO, W_U32, CAKE_HAS_SPLIT_GSO, split_gso, true),
	OPT(TCA_CAKE_AUTORATE, W_U32, CAKE_HAS_AUTORATE, autorate, false),
	OPT(TCA_CAKE_FWMARK, W_U32, CAKE_HAS_FWMARK, fwmark, true),
};

/* TCA_CAKE_STATS_TIN_STATS is a nest of nests, walked on its own. */
static const struct field stats_fields[] = {
	FIELD(struct cake_stats, TCA_CAKE_STATS_CAPACITY_ESTIMATE64, W_U64, capacity_estimate),
	FIELD(struct cake_stats, TCA_CAKE_STATS_MEMORY_LIMIT, W_U32, memory_limit),
	FIELD(struct cake_stats, TCA_CAKE_STATS_MEMORY_USED, W_U32, memory_used),
	FIELD(struct cake_stats, TCA_CAKE_STATS_AVG_NETOFF, W_U32, avg_netoff),
	FIELD(struct cake_stats, TCA_CAKE_STATS_MIN_NETLEN, W_U32, min_netlen),
	FIELD(struct cake_stats, TCA_CAKE_STATS_MAX_NETLEN, W_U32, max_netlen),
	FIELD(struct cake_stats, TCA_CAKE_STATS_MIN_ADJLEN, W_U32, min_adjlen),
	FIELD(struct cake_stats, TCA_CAKE_STATS_MAX_ADJLEN, W_U32, max_adjlen),
};

#define TIN(a, w, member) FIELD(struct cake_tin_stats, TCA_CAKE_TIN_STATS_##a, w, member)

/* Packet counters are u32 on the wire and u64 here, so a wider kernel fits. */
static const struct field tin_fields[] = {
	TIN(SENT_PACKETS, W_U32, sent_packets),
	TIN(SENT_BYTES64, W_U64, sent_bytes),
	TIN(DROPPED_PACKETS, W_U32, dropped_packets),
	TIN(DROPPED_BYTES64, W_U64, dropped_bytes),
	TIN(ACKS_DROPPED_PACKETS, W_U32, acks_dropped_packets),
	TIN(ECN_MARKED_PACKETS, W_U32, ecn_marked_packets),
	TIN(BACKLOG_PACKETS, W_U32, backlog_packets),
	TIN(BACKLOG_BYTES, W_U32, backlog_bytes),
	TIN(THRESHOLD_RATE64, W_U64, threshold_rate),
	TIN(TARGET_US, W_U32, target_us),
	TIN(INTERVAL_US, W_U32, interval_us),
	TIN(WAY_INDIRECT_HITS, W_U32, way_indirect_hits),
	TIN(WAY_MISSES, W_U32, way_misses),
	TIN(WAY_COLLISIONS, W_U32, way_collisions),
	TIN(PEAK_DELAY_US, W_U32, peak_delay_us),
	TIN(AVG_DELAY_US, W_U32, avg_delay_us),
	TIN(BASE_DELAY_US, W_U32, base_delay_us),
	TIN(SPARSE_FLOWS, W_U32, sparse_flows),
	TIN(BULK_FLOWS, W_U32, bulk_flows),
	TIN(UNRESPONSIVE_FLOWS, W_U32, unresponsive_flows),
	TIN(MAX_SKBLEN, W_U32, max_skblen),
	TIN(FLOW_QUANTUM, W_U32, flow_quantum),
};

/*
 * libnl 3.7 checks no minimum length for NLA_S32, so every row states its
 * minimum itself. A presence-only attribute carries whatever the sender
 * chose (tc and the kernel put a u32 0), so it is not checked.
 */
static const struct nla_policy wire_policy[] = {
	[W_U32] = { .type = NLA_U32, .minlen = sizeof(uint32_t) },
	[W_S32] = { .type = NLA_U32, .minlen = sizeof(int32_t) },
	[W_U64] = { .type = NLA_U64, .minlen = sizeof(uint64_t) },
	[W_PRESENT] = { .type = NLA_UNSPEC },
};

static void policy_from(struct nla_policy *policy, size_t n, const struct field *fields,
			size_t nfields)
{
	size_t i;

	memset(policy, 0, n * sizeof(*policy));
	for (i = 0; i < nfields; i++)
		policy[fields[i].attr] = wire_policy[fields[i].wire];
}

static uint64_t field_load(const void *base, const struct field *f)
{
	const char *p = (const char *)base + f->offset;
	uint64_t u64;
	uint32_t u32;
	bool b;

	switch (f->size) {
	case sizeof(uint64_t):
		memcpy(&u64, p, sizeof(u64));
		return u64;
	case sizeof(uint32_t):
		memcpy(&u32, p, sizeof(u32));
		return u32;
	default:
		memcpy(&b, p, sizeof(b));
		return b;
	}
}

static void field_store(void *base, const struct field *f, uint64_t v)
{
	char *p = (char *)base + f->offset;
	uint32_t u32 = (uint32_t)v;
	bool b = v != 0;

	switch (f->size) {
	case sizeof(uint64_t):
		memcpy(p, &v, sizeof(v));
		break;
	case sizeof(uint32_t):
		memcpy(p, &u32, sizeof(u32));
		break;
	default:
		memcpy(p, &b, sizeof(b));
		break;
	}
}

static uint64_t wire_get(const struct nlattr *a, enum wire w)
{
	switch (w) {
	case W_U64:
		return nla_get_u64(a);
	case W_PRESENT:
		return 1;
	default:
		return nla_get_u32(a);
	}
}

static int wire_put(struct nl_msg *msg, int attr, enum wire w, uint64_t v)
{
	switch (w) {
	case W_U64:
		return nla_put_u64(msg, attr, v);
	case W_S32:
		return nla_put_s32(msg, attr, (int32_t)(uint32_t)v);
	case W_PRESENT:
		/* a u32 0, as tc sends it */
		return v ? nla_put_u32(msg, attr, 0) : 0;
	default:
		return nla_put_u32(msg, attr, (uint32_t)v);
	}
}

/* Copy every attribute of tb that a row names into base; returns the has bits seen. */
static uint32_t decode_fields(void *base, struct nlattr **tb, const struct field *fields,
			      size_t nfields)
{
	uint32_t has = 0;
	size_t i;

	for (i = 0; i < nfields; i++) {
		if (!tb[fields[i].attr])
			continue;
		field_store(base, &fields[i], wire_get(tb[fields[i].attr], fields[i].wire));
		has |= fields[i].has;
	}
	return has;
}

/*
 * The kernel would take these silently and misbehave (an unknown diffserv
 * mode runs as diffserv3 but is reported back as given), so refuse here.
 * The ranges are tc's.
 */
static bool opts_valid(const struct cake_opts *o)
{
	if ((o->has & CAKE_HAS_DIFFSERV) && o->diffserv >= CAKE_DS_MAX)
		return false;
	if ((o->has & CAKE_HAS_ACK_FILTER) && o->ack_filter >= CAKE_ACKF_MAX)
		return false;
	if ((o->has & CAKE_HAS_FLOW_MODE) && o->flow_mode >= CAKE_FM_MAX)
		return false;
	if ((o->has & CAKE_HAS_ATM) && o->atm >= CAKE_ATMC_MAX)
		return false;
	if ((o->has & CAKE_HAS_OVERHEAD) && (o->overhead < -64 || o->overhead > 256))
		return false;
	return true;
}

int cake_attr_put(struct nl_msg *msg, const struct cake_opts *o)
{
	struct nlattr *nest;
	size_t i;

	if (!opts_valid(o))
		return -EINVAL;

	nest = nla_nest_start(msg, TCA_OPTIONS);
	if (!nest)
		return -EMSGSIZE;

	for (i = 0; i < ARRAY_SIZE(opts_fields); i++) {
		const struct field *f = &opts_fields[i];

		if (!f->send || !(o->has & f->has))
			continue;
		if (wire_put(msg, f->attr, f->wire, field_load(o, f)) < 0)
			goto too_big;
	}

	/*
	 * Like tc: an rtt alone would leave cake's target at its old value
	 * (5 ms by default), far off for any rtt but the default 100 ms.
	 */
	if (o->has & CAKE_HAS_RTT) {
		uint32_t target = o->rtt / 20;

		if (nla_put_u32(msg, TCA_CAKE_TARGET, target ? target : 1) < 0)
			goto too_big;
	}

	/* An empty nest still says "cake, kernel defaults", as tc sends it. */
	if (nla_nest_end_keep_empty(msg, nest) < 0)
		goto too_big;
	return 0;

too_big:
	/* Leave the message as it was, so a caller can retry in a larger one. */
	nla_nest_cancel(msg, nest);
	return -EMSGSIZE;
}

int cake_attr_parse_opts(struct nlattr *options, struct cake_opts *out)
{
	struct nla_policy policy[TCA_CAKE_MAX + 1];
	struct nlattr *tb[TCA_CAKE_MAX + 1];
	struct cake_opts o = { 0 };

	if (!options)
		return -EINVAL;

	policy_from(policy, ARRAY_SIZE(policy), opts_fields, ARRAY_SIZE(opts_fields));
	if (nla_parse_nested(tb, TCA_CAKE_MAX, options, policy) < 0)
		return -EINVAL;

	o.has = decode_fields(&o, tb, opts_fields, ARRAY_SIZE(opts_fields));
	*out = o;
	return 0;
}

/* Tins are nests 1..n in the kernel's dump order; stop at the first gap, as tc does. */
static int parse_tins(struct nlattr *tin_stats, struct cake_stats *s)
{
	struct nla_policy policy[TCA_CAKE_TIN_STATS_MAX + 1];
	struct nlattr *tb[TCA_CAKE_TIN_STATS_MAX + 1];
	struct nlattr *tins[TC_CAKE_MAX_TINS + 1];
	unsigned int i;

	if (nla_parse_nested(tins, TC_CAKE_MAX_TINS, tin_stats, NULL) < 0)
		return -EINVAL;

	policy_from(policy, ARRAY_SIZE(policy), tin_fields, ARRAY_SIZE(tin_fields));
	for (i = 0; i < TC_CAKE_MAX_TINS && tins[i + 1]; i++) {
		if (nla_parse_nested(tb, TCA_CAKE_TIN_STATS_MAX, tins[i + 1], policy) < 0)
			return -EINVAL;
		decode_fields(&s->tins[i], tb, tin_fields, ARRAY_SIZE(tin_fields));
	}
	s->tin_count = i;
	return 0;
}

static int parse_app(struct nlattr *app, struct cake_stats *s)
{
	struct nla_policy policy[TCA_CAKE_STATS_MAX + 1];
	struct nlattr *tb[TCA_CAKE_STATS_MAX + 1];

	policy_from(policy, ARRAY_SIZE(policy), stats_fields, ARRAY_SIZE(stats_fields));
	if (nla_parse_nested(tb, TCA_CAKE_STATS_MAX, app, policy) < 0)
		return -EINVAL;

	decode_fields(s, tb, stats_fields, ARRAY_SIZE(stats_fields));
	s->has_app = true;
	return tb[TCA_CAKE_STATS_TIN_STATS] ? parse_tins(tb[TCA_CAKE_STATS_TIN_STATS], s) : 0;
}

/*
 * struct gnet_stats_basic is 16 bytes on 64-bit kernels and 12 on i386 (a
 * u64 is only 4-aligned there); both carry bytes then packets.
 */
#define BASIC_LEN (sizeof(uint64_t) + sizeof(uint32_t))

static const struct nla_policy stats2_policy[TCA_STATS_MAX + 1] = {
	[TCA_STATS_BASIC] = { .minlen = BASIC_LEN },
	[TCA_STATS_QUEUE] = { .minlen = sizeof(struct gnet_stats_queue) },
	[TCA_STATS_PKT64] = { .type = NLA_U64, .minlen = sizeof(uint64_t) },
};

int cake_attr_parse_stats(struct nlattr *stats2, struct cake_stats *out)
{
	struct nlattr *tb[TCA_STATS_MAX + 1];
	struct cake_stats s = { 0 };
	int err;

	if (!stats2)
		return -EINVAL;
	if (nla_parse_nested(tb, TCA_STATS_MAX, stats2, stats2_policy) < 0)
		return -EINVAL;

	if (tb[TCA_STATS_BASIC]) {
		const char *p = nla_data(tb[TCA_STATS_BASIC]);
		uint32_t packets;

		memcpy(&s.bytes, p, sizeof(s.bytes));
		memcpy(&packets, p + sizeof(s.bytes), sizeof(packets));
		s.packets = packets;
	}
	/* The kernel adds the full count only once it no longer fits in 32 bits. */
	if (tb[TCA_STATS_PKT64])
		s.packets = nla_get_u64(tb[TCA_STATS_PKT64]);

	if (tb[TCA_STATS_QUEUE]) {
		struct gnet_stats_queue q;

		memcpy(&q, nla_data(tb[TCA_STATS_QUEUE]), sizeof(q));
		s.backlog_packets = q.qlen;
		s.backlog_bytes = q.backlog;
		s.drops = q.drops;
		s.requeues = q.requeues;
		s.overlimits = q.overlimits;
	}

	if (tb[TCA_STATS_APP]) {
		err = parse_app(tb[TCA_STATS_APP], &s);
		if (err)
			return err;
	}

	*out = s;
	return 0;
}
