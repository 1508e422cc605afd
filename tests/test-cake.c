/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake names, option encoding and statistics decoding.
 *
 * What cake_attr_put writes is read back with libnl's own parser, not with
 * ours, so that a mistake in one cannot hide a mistake in the other. Kernel
 * dumps are built the way net/sched/sch_api.c (tc_fill_qdisc) and
 * net/sched/sch_cake.c (cake_dump, cake_dump_stats) build them; a dump
 * captured from a real kernel, tests/data/cake-stats.nlmsg, is checked
 * against the kernel's own accounting rules when it is present.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "shape/cake.h"
#include "netlink/cake-attr.h"

typedef struct nl_msg NlMsg;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NlMsg, nlmsg_free)

#define MBIT(n) ((uint64_t)(n) * 1000000 / 8)

/* ---- names ------------------------------------------------------------- */

static const struct {
	uint32_t mode;
	const char *name;
} diffserv_names[] = {
	{ CAKE_DS_DIFFSERV3, "diffserv3" },   { CAKE_DS_DIFFSERV4, "diffserv4" },
	{ CAKE_DS_DIFFSERV8, "diffserv8" },   { CAKE_DS_BESTEFFORT, "besteffort" },
	{ CAKE_DS_PRECEDENCE, "precedence" },
};

static const struct {
	uint32_t mode;
	const char *name;
} ack_names[] = {
	{ CAKE_ACKF_NONE, "no-ack-filter" },
	{ CAKE_ACKF_FILTER, "ack-filter" },
	{ CAKE_ACKF_AGGRESSIVE, "ack-filter-aggressive" },
};

/* Words tc would not take either: case matters, no abbreviations. */
static const char *const bad_names[] = {
	"", "DiffServ3", "diffserv", "diffserv5", "best-effort", "ack", "ack-filter-", "none",
};

static void test_diffserv_names(void)
{
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(diffserv_names); i++) {
		g_assert_cmpstr(cake_diffserv_name(diffserv_names[i].mode), ==,
				diffserv_names[i].name);
		g_assert_cmpint(cake_diffserv_from_name(diffserv_names[i].name), ==,
				diffserv_names[i].mode);
	}
	g_assert_cmpuint(G_N_ELEMENTS(diffserv_names), ==, CAKE_DS_MAX);
	g_assert_null(cake_diffserv_name(CAKE_DS_MAX));
	g_assert_null(cake_diffserv_name(UINT32_MAX));
	for (i = 0; i < G_N_ELEMENTS(bad_names); i++)
		g_assert_cmpint(cake_diffserv_from_name(bad_names[i]), ==, -EINVAL);
	g_assert_cmpint(cake_diffserv_from_name("ack-filter"), ==, -EINVAL);
	g_assert_cmpint(cake_diffserv_from_name(NULL), ==, -EINVAL);
}

static void test_ack_names(void)
{
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(ack_names); i++) {
		g_assert_cmpstr(cake_ack_name(ack_names[i].mode), ==, ack_names[i].name);
		g_assert_cmpint(cake_ack_from_name(ack_names[i].name), ==, ack_names[i].mode);
	}
	g_assert_cmpuint(G_N_ELEMENTS(ack_names), ==, CAKE_ACKF_MAX);
	g_assert_null(cake_ack_name(CAKE_ACKF_MAX));
	for (i = 0; i < G_N_ELEMENTS(bad_names); i++)
		g_assert_cmpint(cake_ack_from_name(bad_names[i]), ==, -EINVAL);
	g_assert_cmpint(cake_ack_from_name("diffserv3"), ==, -EINVAL);
	g_assert_cmpint(cake_ack_from_name(NULL), ==, -EINVAL);
}

/* Every family's words as tc/q_cake.c spells them, by the kernel's value. */
static const struct {
	enum cake_family family;
	uint32_t has;
	const char *words[CAKE_FM_MAX + 1];
} families[] = {
	{ CAKE_WORDS_DIFFSERV, CAKE_HAS_DIFFSERV,
	  { "diffserv3", "diffserv4", "diffserv8", "besteffort", "precedence" } },
	{ CAKE_WORDS_FLOW, CAKE_HAS_FLOW_MODE,
	  { "flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost",
	    "triple-isolate" } },
	{ CAKE_WORDS_NAT, CAKE_HAS_NAT, { "nonat", "nat" } },
	{ CAKE_WORDS_WASH, CAKE_HAS_WASH, { "nowash", "wash" } },
	{ CAKE_WORDS_SPLIT_GSO, CAKE_HAS_SPLIT_GSO, { "no-split-gso", "split-gso" } },
	{ CAKE_WORDS_ACK, CAKE_HAS_ACK_FILTER,
	  { "no-ack-filter", "ack-filter", "ack-filter-aggressive" } },
	{ CAKE_WORDS_ATM, CAKE_HAS_ATM, { "noatm", "atm", "ptm" } },
};

/* What a word set, read back whatever the member's width. */
static uint32_t member_of(const struct cake_opts *o, enum cake_family f)
{
	uint32_t v = UINT32_MAX;

	g_assert_true(cake_word_get(o, f, &v));
	return v;
}

static void test_families(void)
{
	g_assert_cmpuint(G_N_ELEMENTS(families), ==, CAKE_WORDS_MAX);
	for (size_t i = 0; i < G_N_ELEMENTS(families); i++) {
		enum cake_family f = families[i].family;
		g_auto(GStrv) listed = NULL;
		char choices[256];
		uint32_t v;

		cake_word_choices(f, "|", choices, sizeof(choices));
		listed = g_strsplit(choices, "|", -1);
		for (v = 0; families[i].words[v]; v++) {
			struct cake_opts o = { 0 };

			g_assert_cmpstr(cake_word(f, v), ==, families[i].words[v]);
			g_assert_cmpint(cake_word_value(f, families[i].words[v]), ==, v);
			/* a word alone sets its option, and only that */
			g_assert_true(cake_word_set(&o, families[i].words[v]));
			g_assert_cmphex(o.has, ==, families[i].has);
			g_assert_cmpuint(member_of(&o, f), ==, v);
			g_assert_true(g_strv_contains((const char *const *)listed,
						      families[i].words[v]));
		}
		/* as many choices as words: none twice, none missing */
		g_assert_cmpuint(g_strv_length(listed), ==, v);
		g_assert_null(cake_word(f, v));
		g_assert_null(cake_word(f, UINT32_MAX));
		g_assert_cmpint(cake_word_value(f, NULL), ==, -EINVAL);
		for (size_t b = 0; b < G_N_ELEMENTS(bad_names); b++)
			g_assert_cmpint(cake_word_value(f, bad_names[b]), ==, -EINVAL);
	}
	g_assert_null(cake_word(CAKE_WORDS_MAX, 0));
	g_assert_cmpint(cake_word_value(CAKE_WORDS_MAX, "nat"), ==, -EINVAL);
}

/* No word belongs to two families: set could not tell which was meant. */
static void test_families_apart(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(families); i++)
		for (size_t v = 0; families[i].words[v]; v++)
			for (size_t j = 0; j < G_N_ELEMENTS(families); j++)
				if (j != i)
					g_assert_cmpint(cake_word_value(families[j].family,
									families[i].words[v]),
							==, -EINVAL);
}

static void test_word_set_rejects(void)
{
	struct cake_opts o = { 0 };

	for (size_t b = 0; b < G_N_ELEMENTS(bad_names); b++)
		g_assert_false(cake_word_set(&o, bad_names[b]));
	g_assert_false(cake_word_set(&o, "internet"));
	g_assert_false(cake_word_set(&o, "raw"));
	g_assert_false(cake_word_get(&o, CAKE_WORDS_FLOW, &(uint32_t){ 0 }));
	g_assert_cmphex(o.has, ==, 0);
}

/* tc's presets, rtt in microseconds (iproute2 tc/q_cake.c, presets[]). */
static void test_rtt_presets(void)
{
	static const struct {
		const char *name;
		uint32_t rtt;
	} t[] = {
		{ "datacentre", 100 },	   { "lan", 1000 },	    { "metro", 10000 },
		{ "regional", 30000 },	   { "internet", 100000 }, { "oceanic", 300000 },
		{ "satellite", 1000000 }, { "interplanetary", 1000000000 },
	};
	char choices[256];
	uint32_t rtt = 7;

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_assert_cmpint(cake_rtt_preset(t[i].name, &rtt), ==, 0);
		g_assert_cmpuint(rtt, ==, t[i].rtt);
	}
	cake_rtt_preset_choices("|", choices, sizeof(choices));
	g_assert_cmpstr(choices, ==,
			"datacentre|lan|metro|regional|internet|oceanic|satellite|interplanetary");
	rtt = 7;
	g_assert_cmpint(cake_rtt_preset("datacenter", &rtt), ==, -EINVAL);
	g_assert_cmpint(cake_rtt_preset("Internet", &rtt), ==, -EINVAL);
	g_assert_cmpint(cake_rtt_preset("100ms", &rtt), ==, -EINVAL);
	g_assert_cmpint(cake_rtt_preset(NULL, &rtt), ==, -EINVAL);
	g_assert_cmpuint(rtt, ==, 7);
}

/* The column headings of `tc -s qdisc show` (iproute2 tc/q_cake.c). */
static const struct {
	uint32_t mode;
	const char *tins[CAKE_MAX_TINS + 1];
} tin_names[] = {
	{ CAKE_DS_DIFFSERV3, { "Bulk", "Best Effort", "Voice" } },
	{ CAKE_DS_DIFFSERV4, { "Bulk", "Best Effort", "Video", "Voice" } },
	{ CAKE_DS_DIFFSERV8,
	  { "Tin 0", "Tin 1", "Tin 2", "Tin 3", "Tin 4", "Tin 5", "Tin 6", "Tin 7" } },
	{ CAKE_DS_BESTEFFORT, { "Tin 0" } },
	{ CAKE_DS_PRECEDENCE,
	  { "Tin 0", "Tin 1", "Tin 2", "Tin 3", "Tin 4", "Tin 5", "Tin 6", "Tin 7" } },
};

static unsigned int tin_count_of(uint32_t mode)
{
	unsigned int n = 0;

	while (cake_tin_name(mode, n))
		n++;
	return n;
}

static void test_tin_names(void)
{
	size_t i;
	unsigned int t;

	for (i = 0; i < G_N_ELEMENTS(tin_names); i++) {
		for (t = 0; tin_names[i].tins[t]; t++)
			g_assert_cmpstr(cake_tin_name(tin_names[i].mode, t), ==,
					tin_names[i].tins[t]);
		g_assert_null(cake_tin_name(tin_names[i].mode, t));
		g_assert_null(cake_tin_name(tin_names[i].mode, CAKE_MAX_TINS));
		g_assert_null(cake_tin_name(tin_names[i].mode, 1000));
	}
	g_assert_cmpuint(tin_count_of(CAKE_DS_DIFFSERV3), ==, 3);
	g_assert_cmpuint(tin_count_of(CAKE_DS_DIFFSERV4), ==, 4);
	g_assert_cmpuint(tin_count_of(CAKE_DS_DIFFSERV8), ==, 8);
	g_assert_cmpuint(tin_count_of(CAKE_DS_BESTEFFORT), ==, 1);
	g_assert_cmpuint(tin_count_of(CAKE_DS_PRECEDENCE), ==, 8);
	g_assert_null(cake_tin_name(CAKE_DS_MAX, 0));
	g_assert_null(cake_tin_name(UINT32_MAX, 0));
}

/* ---- merge ------------------------------------------------------------- */

static void assert_opts_equal(const struct cake_opts *a, const struct cake_opts *b)
{
	g_assert_cmphex(a->has, ==, b->has);
	g_assert_cmpuint(a->rate, ==, b->rate);
	g_assert_cmpint(a->overhead, ==, b->overhead);
	g_assert_cmpuint(a->mpu, ==, b->mpu);
	g_assert_cmpuint(a->rtt, ==, b->rtt);
	g_assert_cmpuint(a->target, ==, b->target);
	g_assert_cmpuint(a->diffserv, ==, b->diffserv);
	g_assert_cmpuint(a->ack_filter, ==, b->ack_filter);
	g_assert_cmpuint(a->memlimit, ==, b->memlimit);
	g_assert_cmpuint(a->flow_mode, ==, b->flow_mode);
	g_assert_cmpuint(a->atm, ==, b->atm);
	g_assert_cmpuint(a->fwmark, ==, b->fwmark);
	g_assert_cmpint(a->nat, ==, b->nat);
	g_assert_cmpint(a->wash, ==, b->wash);
	g_assert_cmpint(a->ingress, ==, b->ingress);
	g_assert_cmpint(a->raw, ==, b->raw);
	g_assert_cmpint(a->split_gso, ==, b->split_gso);
	g_assert_cmpint(a->autorate, ==, b->autorate);
}

static const struct {
	const char *name;
	struct cake_opts dst, src, want;
} merge_cases[] = {
	{ "empty-into-empty", { 0 }, { 0 }, { 0 } },
	{ "rate-only",
	  { .has = CAKE_HAS_OVERHEAD, .overhead = 80, .rate = 999 },
	  { .has = CAKE_HAS_RATE, .rate = MBIT(50), .overhead = 7 },
	  { .has = CAKE_HAS_OVERHEAD | CAKE_HAS_RATE, .overhead = 80, .rate = MBIT(50) } },
	{ "later-wins",
	  { .has = CAKE_HAS_RATE | CAKE_HAS_DIFFSERV, .rate = MBIT(10),
	    .diffserv = CAKE_DS_DIFFSERV8 },
	  { .has = CAKE_HAS_RATE, .rate = MBIT(20) },
	  { .has = CAKE_HAS_RATE | CAKE_HAS_DIFFSERV, .rate = MBIT(20),
	    .diffserv = CAKE_DS_DIFFSERV8 } },
	{ "set-false-is-set",
	  { .has = CAKE_HAS_NAT | CAKE_HAS_WASH, .nat = true, .wash = true },
	  { .has = CAKE_HAS_NAT, .nat = false },
	  { .has = CAKE_HAS_NAT | CAKE_HAS_WASH, .nat = false, .wash = true } },
	{ "every-bit",
	  { 0 },
	  { .has = 0x1ffff, .rate = 1, .overhead = -2, .mpu = 3, .rtt = 4, .target = 5,
	    .diffserv = 1, .ack_filter = 2, .memlimit = 8, .flow_mode = 9, .atm = 1,
	    .fwmark = 0xff, .nat = true, .wash = true, .ingress = true, .raw = true,
	    .split_gso = true, .autorate = true },
	  { .has = 0x1ffff, .rate = 1, .overhead = -2, .mpu = 3, .rtt = 4, .target = 5,
	    .diffserv = 1, .ack_filter = 2, .memlimit = 8, .flow_mode = 9, .atm = 1,
	    .fwmark = 0xff, .nat = true, .wash = true, .ingress = true, .raw = true,
	    .split_gso = true, .autorate = true } },
	{ "unset-members-ignored",
	  { .has = CAKE_HAS_MPU, .mpu = 64 },
	  { .has = CAKE_HAS_INGRESS, .ingress = true, .mpu = 1, .rate = 5, .raw = true },
	  { .has = CAKE_HAS_MPU | CAKE_HAS_INGRESS, .mpu = 64, .ingress = true } },
};

static void test_merge(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	struct cake_opts dst = merge_cases[i].dst;

	cake_opts_merge(&dst, &merge_cases[i].src);
	assert_opts_equal(&dst, &merge_cases[i].want);
}

/* ---- encoding ---------------------------------------------------------- */

static struct nl_msg *qdisc_msg_new(int type, int flags)
{
	struct tcmsg tcm = {
		.tcm_family = AF_UNSPEC,
		.tcm_ifindex = 7,
		.tcm_handle = 0x80010000,
		.tcm_parent = TC_H_ROOT,
	};
	struct nl_msg *msg = nlmsg_alloc_simple(type, flags);

	g_assert_nonnull(msg);
	g_assert_cmpint(nlmsg_append(msg, &tcm, sizeof(tcm), NLMSG_ALIGNTO), ==, 0);
	g_assert_cmpint(nla_put_string(msg, TCA_KIND, "cake"), ==, 0);
	return msg;
}

static struct nlattr *qdisc_attr(struct nlmsghdr *nlh, int type)
{
	struct nlattr *tb[TCA_MAX + 1];

	g_assert_cmpint(nlmsg_parse(nlh, sizeof(struct tcmsg), tb, TCA_MAX, NULL), ==, 0);
	return tb[type];
}

struct want_attr {
	int type; /* 0 ends the list */
	int len;
	uint64_t value;
};

#define U32(t, v) { (t), 4, (uint32_t)(v) }
#define S32(t, v) { (t), 4, (uint32_t)(int32_t)(v) }
#define U64(t, v) { (t), 8, (uint64_t)(v) }

#define SENT_BITS                                                                                \
	(CAKE_HAS_RATE | CAKE_HAS_OVERHEAD | CAKE_HAS_MPU | CAKE_HAS_RTT | CAKE_HAS_DIFFSERV |   \
	 CAKE_HAS_NAT | CAKE_HAS_WASH | CAKE_HAS_ACK_FILTER | CAKE_HAS_MEMLIMIT |                \
	 CAKE_HAS_INGRESS | CAKE_HAS_RAW | CAKE_HAS_FLOW_MODE | CAKE_HAS_ATM |                   \
	 CAKE_HAS_SPLIT_GSO | CAKE_HAS_FWMARK)
#define DECODE_ONLY_BITS (CAKE_HAS_TARGET | CAKE_HAS_AUTORATE)

static const struct {
	const char *name;
	struct cake_opts in;
	struct want_attr want[TCA_CAKE_MAX + 1];
} put_cases[] = {
	{ "nothing-set", { 0 }, { { 0 } } },
	{ "rate", { .has = CAKE_HAS_RATE, .rate = MBIT(100) },
	  { U64(TCA_CAKE_BASE_RATE64, 12500000) } },
	{ "rate-above-4g-bytes", { .has = CAKE_HAS_RATE, .rate = 0x123456789abULL },
	  { U64(TCA_CAKE_BASE_RATE64, 0x123456789abULL) } },
	{ "unlimited-is-sent", { .has = CAKE_HAS_RATE, .rate = 0 },
	  { U64(TCA_CAKE_BASE_RATE64, 0) } },
	{ "negative-overhead", { .has = CAKE_HAS_OVERHEAD, .overhead = -64 },
	  { S32(TCA_CAKE_OVERHEAD, -64) } },
	{ "overhead-and-mpu",
	  { .has = CAKE_HAS_OVERHEAD | CAKE_HAS_MPU, .overhead = 256, .mpu = 84 },
	  { S32(TCA_CAKE_OVERHEAD, 256), U32(TCA_CAKE_MPU, 84) } },
	{ "rtt-brings-target", { .has = CAKE_HAS_RTT, .rtt = 100000 },
	  { U32(TCA_CAKE_RTT, 100000), U32(TCA_CAKE_TARGET, 5000) } },
	{ "tiny-rtt-target-at-least-1", { .has = CAKE_HAS_RTT, .rtt = 10 },
	  { U32(TCA_CAKE_RTT, 10), U32(TCA_CAKE_TARGET, 1) } },
	{ "false-flags-are-sent",
	  { .has = CAKE_HAS_NAT | CAKE_HAS_WASH | CAKE_HAS_INGRESS | CAKE_HAS_ACK_FILTER,
	    .ack_filter = CAKE_ACKF_NONE },
	  { U32(TCA_CAKE_NAT, 0), U32(TCA_CAKE_WASH, 0), U32(TCA_CAKE_INGRESS, 0),
	    U32(TCA_CAKE_ACK_FILTER, 0) } },
	{ "everything",
	  { .has = SENT_BITS, .rate = MBIT(40), .overhead = 80, .mpu = 64, .rtt = 50000,
	    .diffserv = CAKE_DS_DIFFSERV4, .nat = true, .wash = true,
	    .ack_filter = CAKE_ACKF_AGGRESSIVE, .memlimit = 32 << 20, .ingress = true,
	    .flow_mode = CAKE_FM_DUAL_SRCHOST, .atm = CAKE_ATMC_PTM, .split_gso = true,
	    .fwmark = 0xff00 },
	  { U64(TCA_CAKE_BASE_RATE64, 5000000), S32(TCA_CAKE_OVERHEAD, 80),
	    U32(TCA_CAKE_MPU, 64), U32(TCA_CAKE_RTT, 50000), U32(TCA_CAKE_TARGET, 2500),
	    U32(TCA_CAKE_DIFFSERV_MODE, CAKE_DIFFSERV_DIFFSERV4), U32(TCA_CAKE_NAT, 1),
	    U32(TCA_CAKE_WASH, 1), U32(TCA_CAKE_ACK_FILTER, CAKE_ACK_AGGRESSIVE),
	    U32(TCA_CAKE_MEMORY, 32 << 20), U32(TCA_CAKE_INGRESS, 1),
	    U32(TCA_CAKE_FLOW_MODE, CAKE_FLOW_DUAL_SRC), U32(TCA_CAKE_ATM, CAKE_ATM_PTM),
	    U32(TCA_CAKE_SPLIT_GSO, 1), U32(TCA_CAKE_FWMARK, 0xff00) } },
	{ "decode-only-never-sent",
	  { .has = DECODE_ONLY_BITS, .target = 1234, .autorate = true }, { { 0 } } },
	{ "flow-modes",
	  { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_DUAL_DSTHOST },
	  { U32(TCA_CAKE_FLOW_MODE, CAKE_FLOW_DUAL_DST) } },
	{ "flowblind-is-sent",
	  { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_FLOWBLIND },
	  { U32(TCA_CAKE_FLOW_MODE, CAKE_FLOW_NONE) } },
	{ "split-gso-off-is-sent", { .has = CAKE_HAS_SPLIT_GSO, .split_gso = false },
	  { U32(TCA_CAKE_SPLIT_GSO, 0) } },
	{ "split-gso-on", { .has = CAKE_HAS_SPLIT_GSO, .split_gso = true },
	  { U32(TCA_CAKE_SPLIT_GSO, 1) } },
	{ "fwmark", { .has = CAKE_HAS_FWMARK, .fwmark = 0xffffffff },
	  { U32(TCA_CAKE_FWMARK, 0xffffffff) } },
	{ "fwmark-off-is-sent", { .has = CAKE_HAS_FWMARK, .fwmark = 0 },
	  { U32(TCA_CAKE_FWMARK, 0) } },
	{ "atm-ptm", { .has = CAKE_HAS_ATM, .atm = CAKE_ATMC_PTM },
	  { U32(TCA_CAKE_ATM, CAKE_ATM_PTM) } },
	/* tc's raw: overhead 0, noatm and the flag, a u32 0 */
	{ "raw",
	  { .has = CAKE_HAS_RAW | CAKE_HAS_OVERHEAD | CAKE_HAS_ATM, .raw = true,
	    .atm = CAKE_ATMC_NONE },
	  { S32(TCA_CAKE_OVERHEAD, 0), U32(TCA_CAKE_ATM, CAKE_ATM_NONE),
	    U32(TCA_CAKE_RAW, 0) } },
	/* raw has no "off" on the wire: an overhead ends it */
	{ "raw-false-sends-nothing", { .has = CAKE_HAS_RAW, .raw = false }, { { 0 } } },
	{ "conservative",
	  { .has = CAKE_HAS_OVERHEAD | CAKE_HAS_ATM, .overhead = 108, .atm = CAKE_ATMC_ATM },
	  { S32(TCA_CAKE_OVERHEAD, 108), U32(TCA_CAKE_ATM, CAKE_ATM_ATM) } },
	{ "every-new-option",
	  { .has = CAKE_HAS_FLOW_MODE | CAKE_HAS_ATM | CAKE_HAS_SPLIT_GSO | CAKE_HAS_FWMARK |
		   CAKE_HAS_NAT,
	    .flow_mode = CAKE_FM_TRIPLE_ISOLATE, .atm = CAKE_ATMC_ATM, .split_gso = true,
	    .fwmark = 0xf0, .nat = true },
	  { U32(TCA_CAKE_FLOW_MODE, CAKE_FLOW_TRIPLE), U32(TCA_CAKE_ATM, CAKE_ATM_ATM),
	    U32(TCA_CAKE_SPLIT_GSO, 1), U32(TCA_CAKE_FWMARK, 0xf0), U32(TCA_CAKE_NAT, 1) } },
	{ "unset-values-ignored",
	  { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_BESTEFFORT, .rate = 1, .mpu = 2,
	    .rtt = 3, .nat = true },
	  { U32(TCA_CAKE_DIFFSERV_MODE, CAKE_DIFFSERV_BESTEFFORT) } },
	{ "unset-values-not-validated",
	  { .has = CAKE_HAS_RATE, .rate = 1, .diffserv = 99, .ack_filter = 7, .overhead = 1000 },
	  { U64(TCA_CAKE_BASE_RATE64, 1) } },
};

static uint64_t attr_value(const struct nlattr *a)
{
	return nla_len(a) == 8 ? nla_get_u64(a) : nla_get_u32(a);
}

static void test_put(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	const struct cake_opts *in = &put_cases[i].in;
	const struct want_attr *want = put_cases[i].want;
	g_autoptr(NlMsg) msg = qdisc_msg_new(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
	struct nlattr *tb[TCA_CAKE_MAX + 1];
	struct cake_opts back, masked, sent = { 0 };
	struct nlattr *options, *a;
	bool expected[TCA_CAKE_MAX + 1] = { false };
	int n, rem, count = 0;

	g_assert_cmpint(cake_attr_put(msg, in), ==, 0);

	/* Only libnl's parser from here: ours gets its turn below. */
	options = qdisc_attr(nlmsg_hdr(msg), TCA_OPTIONS);
	g_assert_nonnull(options);
	g_assert_cmpint(nla_type(options), ==, TCA_OPTIONS);
	g_assert_cmpint(nla_parse_nested(tb, TCA_CAKE_MAX, options, NULL), ==, 0);

	for (n = 0; want[n].type; n++) {
		a = tb[want[n].type];
		g_assert_nonnull(a);
		g_assert_cmpint(nla_len(a), ==, want[n].len);
		g_assert_cmphex(attr_value(a), ==, want[n].value);
		expected[want[n].type] = true;
	}
	/* Every attribute once, nothing unexpected: unset options stay with the kernel. */
	nla_for_each_nested(a, options, rem) {
		g_assert_cmpint(nla_type(a), >, 0);
		g_assert_cmpint(nla_type(a), <=, TCA_CAKE_MAX);
		g_assert_true(expected[nla_type(a)]);
		count++;
	}
	g_assert_cmpint(rem, ==, 0);
	g_assert_cmpint(count, ==, n);
	for (n = 1; n <= TCA_CAKE_MAX; n++)
		if (!expected[n])
			g_assert_null(tb[n]);

	/* Decoded, it is exactly the sent subset of the input, plus the derived target. */
	masked = *in;
	masked.has &= SENT_BITS;
	if (!in->raw)
		masked.has &= ~CAKE_HAS_RAW; /* not on the wire, so not read back */
	cake_opts_merge(&sent, &masked);
	if (in->has & CAKE_HAS_RTT) {
		sent.has |= CAKE_HAS_TARGET;
		sent.target = MAX(in->rtt / 20, 1u);
	}
	g_assert_cmpint(cake_attr_parse_opts(options, &back), ==, 0);
	assert_opts_equal(&back, &sent);
}

static const struct {
	const char *name;
	struct cake_opts in;
} reject_cases[] = {
	{ "diffserv-unknown", { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_MAX } },
	{ "ack-filter-unknown", { .has = CAKE_HAS_ACK_FILTER, .ack_filter = CAKE_ACKF_MAX } },
	{ "flow-mode-unknown", { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_MAX } },
	{ "atm-unknown", { .has = CAKE_HAS_ATM, .atm = CAKE_ATMC_MAX } },
	{ "overhead-below-tc-range", { .has = CAKE_HAS_OVERHEAD, .overhead = -65 } },
	{ "overhead-above-tc-range", { .has = CAKE_HAS_OVERHEAD, .overhead = 257 } },
	{ "one-bad-among-good",
	  { .has = CAKE_HAS_RATE | CAKE_HAS_DIFFSERV, .rate = 1, .diffserv = 42 } },
};

static void test_put_rejects(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	g_autoptr(NlMsg) msg = qdisc_msg_new(RTM_NEWQDISC, 0);
	uint32_t len = nlmsg_hdr(msg)->nlmsg_len;

	g_assert_cmpint(cake_attr_put(msg, &reject_cases[i].in), ==, -EINVAL);
	g_assert_cmpuint(nlmsg_hdr(msg)->nlmsg_len, ==, len);
	g_assert_null(qdisc_attr(nlmsg_hdr(msg), TCA_OPTIONS));
}

/* However little room is left, a failed put leaves the message as it was. */
static void test_put_no_room(void)
{
	const struct cake_opts o = {
		.has = SENT_BITS, .rate = MBIT(40), .overhead = 80, .mpu = 64, .rtt = 50000,
		.diffserv = CAKE_DS_DIFFSERV4, .ack_filter = CAKE_ACKF_FILTER, .memlimit = 1,
		.raw = true, .fwmark = 1,
	};
	struct tcmsg tcm = { .tcm_family = AF_UNSPEC };
	bool fitted = false;
	size_t room;

	for (room = 0; room <= 240; room += 4) {
		g_autoptr(NlMsg) msg =
			nlmsg_alloc_size(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(tcm)) + room);
		uint32_t len;
		int rc;

		g_assert_nonnull(msg);
		g_assert_cmpint(nlmsg_append(msg, &tcm, sizeof(tcm), NLMSG_ALIGNTO), ==, 0);
		len = nlmsg_hdr(msg)->nlmsg_len;
		rc = cake_attr_put(msg, &o);
		if (rc == -EMSGSIZE) {
			g_assert_false(fitted);
			g_assert_cmpuint(nlmsg_hdr(msg)->nlmsg_len, ==, len);
			continue;
		}
		g_assert_cmpint(rc, ==, 0);
		g_assert_nonnull(qdisc_attr(nlmsg_hdr(msg), TCA_OPTIONS));
		fitted = true;
	}
	g_assert_true(fitted);
}

/* ---- kernel dumps, built as the kernel builds them ---------------------- */

#define PUT(expr) g_assert_cmpint((expr), ==, 0)

enum dump_shape {
	DUMP_PLAIN = 0,
	/* nla_put_u64_64bit() pads on kernels without efficient unaligned access */
	DUMP_PAD = 1 << 0,
	/* attributes this build does not know, as a newer kernel adds them */
	DUMP_NEWER = 1 << 1,
	DUMP_NO_APP = 1 << 2,
	DUMP_TIN_GAP = 1 << 3, /* no nest for tin 3 */
	/* one attribute too short for its value */
	DUMP_SHORT_RATE = 1 << 8,
	DUMP_SHORT_RTT = 1 << 9,
	DUMP_SHORT_OVERHEAD = 1 << 10,
	DUMP_SHORT_BASIC = 1 << 11,
	DUMP_SHORT_QUEUE = 1 << 12,
	DUMP_SHORT_CAPACITY = 1 << 13,
	DUMP_SHORT_MEMORY = 1 << 14,
	DUMP_SHORT_TIN_BYTES = 1 << 15,
	DUMP_SHORT_TIN_TARGET = 1 << 16,
};

/* nla_nest_start_noflag(): the kernel does not mark these nests NLA_F_NESTED. */
static struct nlattr *nest_start_noflag(struct nl_msg *msg, int type)
{
	struct nlattr *nest = nla_nest_start(msg, type);

	g_assert_nonnull(nest);
	nest->nla_type &= ~NLA_F_NESTED;
	return nest;
}

static void put_u64_64bit(struct nl_msg *msg, int type, uint64_t v, int padtype,
			  unsigned int shape)
{
	if (shape & DUMP_PAD)
		PUT(nla_put(msg, padtype, 0, NULL));
	PUT(nla_put_u64(msg, type, v));
}

/* A u32, or only two bytes of it when cut. */
static void put_u32(struct nl_msg *msg, int type, uint32_t v, bool cut)
{
	PUT(nla_put(msg, type, cut ? 2 : sizeof(v), &v));
}

/* cake_dump(), attribute for attribute. */
static void put_cake_options(struct nl_msg *msg, const struct cake_opts *k, unsigned int shape)
{
	struct nlattr *opts = nest_start_noflag(msg, TCA_OPTIONS);

	if (shape & DUMP_SHORT_RATE)
		put_u32(msg, TCA_CAKE_BASE_RATE64, (uint32_t)k->rate, false);
	else
		put_u64_64bit(msg, TCA_CAKE_BASE_RATE64, k->rate, TCA_CAKE_PAD, shape);
	put_u32(msg, TCA_CAKE_FLOW_MODE, k->flow_mode, false);
	put_u32(msg, TCA_CAKE_RTT, k->rtt, shape & DUMP_SHORT_RTT);
	put_u32(msg, TCA_CAKE_TARGET, k->target, false);
	put_u32(msg, TCA_CAKE_MEMORY, k->memlimit, false);
	put_u32(msg, TCA_CAKE_AUTORATE, k->autorate, false);
	put_u32(msg, TCA_CAKE_INGRESS, k->ingress, false);
	put_u32(msg, TCA_CAKE_ACK_FILTER, k->ack_filter, false);
	put_u32(msg, TCA_CAKE_NAT, k->nat, false);
	put_u32(msg, TCA_CAKE_DIFFSERV_MODE, k->diffserv, false);
	put_u32(msg, TCA_CAKE_WASH, k->wash, false);
	put_u32(msg, TCA_CAKE_OVERHEAD, (uint32_t)k->overhead, shape & DUMP_SHORT_OVERHEAD);
	if (k->raw)
		put_u32(msg, TCA_CAKE_RAW, 0, false);
	put_u32(msg, TCA_CAKE_ATM, k->atm, false);
	put_u32(msg, TCA_CAKE_MPU, k->mpu, false);
	put_u32(msg, TCA_CAKE_SPLIT_GSO, k->split_gso, false);
	put_u32(msg, TCA_CAKE_FWMARK, k->fwmark, false);
	if (shape & DUMP_NEWER) {
		static const char blob[12] = "newer kernel";

		put_u32(msg, TCA_CAKE_MAX + 1, 1, false);
		PUT(nla_put(msg, TCA_CAKE_MAX + 2, sizeof(blob), blob));
		PUT(nla_put(msg, TCA_CAKE_MAX + 3, 0, NULL));
	}
	PUT(nla_nest_end(msg, opts));
}

/* cake_dump_stats(), attribute for attribute; packet counters are u32 there. */
static void put_cake_xstats(struct nl_msg *msg, const struct cake_stats *s, unsigned int shape)
{
	struct nlattr *stats = nest_start_noflag(msg, TCA_STATS_APP);
	struct nlattr *tstats, *ts;
	unsigned int i;

	if (shape & DUMP_SHORT_CAPACITY)
		put_u32(msg, TCA_CAKE_STATS_CAPACITY_ESTIMATE64, (uint32_t)s->capacity_estimate,
			false);
	else
		put_u64_64bit(msg, TCA_CAKE_STATS_CAPACITY_ESTIMATE64, s->capacity_estimate,
			      TCA_CAKE_STATS_PAD, shape);
	put_u32(msg, TCA_CAKE_STATS_MEMORY_LIMIT, s->memory_limit, false);
	put_u32(msg, TCA_CAKE_STATS_MEMORY_USED, s->memory_used, shape & DUMP_SHORT_MEMORY);
	put_u32(msg, TCA_CAKE_STATS_AVG_NETOFF, s->avg_netoff, false);
	put_u32(msg, TCA_CAKE_STATS_MAX_NETLEN, s->max_netlen, false);
	put_u32(msg, TCA_CAKE_STATS_MAX_ADJLEN, s->max_adjlen, false);
	put_u32(msg, TCA_CAKE_STATS_MIN_NETLEN, s->min_netlen, false);
	put_u32(msg, TCA_CAKE_STATS_MIN_ADJLEN, s->min_adjlen, false);
	if (shape & DUMP_NEWER)
		put_u32(msg, TCA_CAKE_STATS_MAX + 1, 1, false); /* say, a queue count */

	tstats = nest_start_noflag(msg, TCA_CAKE_STATS_TIN_STATS);
	for (i = 0; i < s->tin_count; i++) {
		const struct cake_tin_stats *b = &s->tins[i];

		if ((shape & DUMP_TIN_GAP) && i + 1 == 3)
			continue;
		ts = nest_start_noflag(msg, i + 1);
		put_u64_64bit(msg, TCA_CAKE_TIN_STATS_THRESHOLD_RATE64, b->threshold_rate,
			      TCA_CAKE_TIN_STATS_PAD, shape);
		if (shape & DUMP_SHORT_TIN_BYTES)
			put_u32(msg, TCA_CAKE_TIN_STATS_SENT_BYTES64, (uint32_t)b->sent_bytes,
				false);
		else
			put_u64_64bit(msg, TCA_CAKE_TIN_STATS_SENT_BYTES64, b->sent_bytes,
				      TCA_CAKE_TIN_STATS_PAD, shape);
		put_u32(msg, TCA_CAKE_TIN_STATS_BACKLOG_BYTES, b->backlog_bytes, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_TARGET_US, b->target_us,
			shape & DUMP_SHORT_TIN_TARGET);
		put_u32(msg, TCA_CAKE_TIN_STATS_INTERVAL_US, b->interval_us, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_SENT_PACKETS, (uint32_t)b->sent_packets, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_DROPPED_PACKETS, (uint32_t)b->dropped_packets,
			false);
		put_u32(msg, TCA_CAKE_TIN_STATS_ECN_MARKED_PACKETS,
			(uint32_t)b->ecn_marked_packets, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_ACKS_DROPPED_PACKETS,
			(uint32_t)b->acks_dropped_packets, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_PEAK_DELAY_US, b->peak_delay_us, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_AVG_DELAY_US, b->avg_delay_us, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_BASE_DELAY_US, b->base_delay_us, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_WAY_INDIRECT_HITS, b->way_indirect_hits, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_WAY_MISSES, b->way_misses, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_WAY_COLLISIONS, b->way_collisions, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_SPARSE_FLOWS, b->sparse_flows, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_BULK_FLOWS, b->bulk_flows, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_UNRESPONSIVE_FLOWS, b->unresponsive_flows, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_MAX_SKBLEN, b->max_skblen, false);
		put_u32(msg, TCA_CAKE_TIN_STATS_FLOW_QUANTUM, b->flow_quantum, false);
		if (shape & DUMP_NEWER)
			put_u32(msg, TCA_CAKE_TIN_STATS_MAX + 1, 1, false);
		PUT(nla_nest_end(msg, ts));
	}
	PUT(nla_nest_end(msg, tstats));
	PUT(nla_nest_end(msg, stats));
}

/*
 * tc_fill_qdisc(): options, then TCA_STATS2 with the qdisc's own block first
 * (dump_stats runs before gnet_stats_copy_basic/queue), then the old TCA_STATS.
 */
static struct nl_msg *kernel_dump_new(const struct cake_opts *k, const struct cake_stats *s,
				      unsigned int shape)
{
	struct nl_msg *msg = qdisc_msg_new(RTM_NEWQDISC, NLM_F_MULTI);
	struct gnet_stats_basic basic;
	struct gnet_stats_queue queue;
	struct tc_stats compat;
	struct nlattr *stats2;

	/* Zeroed whole, padding too: the bytes go to a file and must be defined. */
	memset(&basic, 0, sizeof(basic));
	memset(&queue, 0, sizeof(queue));
	memset(&compat, 0, sizeof(compat));
	basic.bytes = s->bytes;
	basic.packets = (uint32_t)s->packets;
	queue.qlen = s->backlog_packets;
	queue.backlog = s->backlog_bytes;
	queue.drops = s->drops;
	queue.requeues = s->requeues;
	queue.overlimits = s->overlimits;
	compat.bytes = s->bytes;
	compat.packets = (uint32_t)s->packets;
	compat.drops = s->drops;
	compat.overlimits = s->overlimits;
	compat.qlen = s->backlog_packets;
	compat.backlog = s->backlog_bytes;

	put_cake_options(msg, k, shape);
	PUT(nla_put_u8(msg, TCA_HW_OFFLOAD, 0));
	stats2 = nest_start_noflag(msg, TCA_STATS2);
	if (!(shape & DUMP_NO_APP))
		put_cake_xstats(msg, s, shape);
	if (shape & DUMP_PAD)
		PUT(nla_put(msg, TCA_STATS_PAD, 0, NULL));
	PUT(nla_put(msg, TCA_STATS_BASIC, (shape & DUMP_SHORT_BASIC) ? 8 : sizeof(basic),
		    &basic));
	if (s->packets != basic.packets)
		put_u64_64bit(msg, TCA_STATS_PKT64, s->packets, TCA_STATS_PAD, shape);
	if (shape & DUMP_NEWER)
		put_u32(msg, TCA_STATS_MAX + 1, 1, false);
	PUT(nla_put(msg, TCA_STATS_QUEUE, (shape & DUMP_SHORT_QUEUE) ? 16 : sizeof(queue),
		    &queue));
	PUT(nla_nest_end(msg, stats2));
	PUT(nla_put(msg, TCA_STATS, sizeof(compat), &compat));
	return msg;
}

#define ALL_OPTS_BITS (SENT_BITS | DECODE_ONLY_BITS)

static const struct {
	const char *name;
	struct cake_opts k; /* the kernel's settings; has is not used */
	unsigned int shape;
	int rc;
} dump_opts_cases[] = {
	{ "fresh-defaults",
	  { .flow_mode = CAKE_FLOW_TRIPLE, .rtt = 100000, .target = 5000, .raw = true,
	    .split_gso = true } },
	{ "fresh-defaults-padded",
	  { .flow_mode = CAKE_FLOW_TRIPLE, .rtt = 100000, .target = 5000, .raw = true,
	    .split_gso = true },
	  DUMP_PAD },
	{ "wireguard-egress",
	  { .rate = MBIT(40), .overhead = 80, .rtt = 50000, .target = 2500,
	    .diffserv = CAKE_DS_DIFFSERV4, .nat = true, .wash = true,
	    .ack_filter = CAKE_ACKF_AGGRESSIVE, .memlimit = 32 << 20,
	    .flow_mode = CAKE_FLOW_DUAL_SRC, .fwmark = 0xff } },
	{ "ifb-ingress-autorate",
	  { .rate = MBIT(100), .overhead = 38, .mpu = 84, .ingress = true, .autorate = true,
	    .rtt = 30000, .target = 1500, .diffserv = CAKE_DS_BESTEFFORT,
	    .flow_mode = CAKE_FLOW_DUAL_DST, .split_gso = true } },
	{ "negative-overhead-ptm",
	  { .rate = 0x123456789abULL, .overhead = -4, .atm = CAKE_ATM_PTM, .rtt = 1,
	    .target = 1, .diffserv = CAKE_DS_PRECEDENCE, .ack_filter = CAKE_ACKF_FILTER,
	    .flow_mode = CAKE_FLOW_FLOWS } },
	{ "raw-with-overhead",
	  { .rate = MBIT(8), .overhead = 20, .raw = true, .rtt = 100000, .target = 5000,
	    .diffserv = CAKE_DS_DIFFSERV8, .flow_mode = CAKE_FLOW_HOSTS } },
	{ "newer-kernel-attributes",
	  { .rate = MBIT(40), .overhead = 60, .rtt = 100000, .target = 5000,
	    .flow_mode = CAKE_FLOW_TRIPLE },
	  DUMP_NEWER | DUMP_PAD },
	{ "short-rate", { .rate = MBIT(40) }, DUMP_SHORT_RATE, -EINVAL },
	{ "short-rtt", { .rtt = 100000 }, DUMP_SHORT_RTT, -EINVAL },
	{ "short-overhead", { .overhead = -4 }, DUMP_SHORT_OVERHEAD, -EINVAL },
};

static void test_dump_opts(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	const struct cake_opts *k = &dump_opts_cases[i].k;
	const struct cake_stats none = { 0 };
	g_autoptr(NlMsg) msg = kernel_dump_new(k, &none, dump_opts_cases[i].shape);
	struct cake_opts out, before, want = *k;

	memset(&out, 0xa5, sizeof(out));
	before = out;
	g_assert_cmpint(cake_attr_parse_opts(qdisc_attr(nlmsg_hdr(msg), TCA_OPTIONS), &out), ==,
			dump_opts_cases[i].rc);
	if (dump_opts_cases[i].rc) {
		g_assert_cmpmem(&out, sizeof(out), &before, sizeof(before));
		return;
	}
	want.has = ALL_OPTS_BITS & ~(k->raw ? 0 : CAKE_HAS_RAW);
	assert_opts_equal(&out, &want);
}

static void test_parse_opts_null(void)
{
	struct cake_opts out = { 0 };

	g_assert_cmpint(cake_attr_parse_opts(NULL, &out), ==, -EINVAL);
}

/* ---- statistics ---------------------------------------------------------- */

/*
 * A diffserv3 cake at 10 Mbit/s (overhead 38, rtt 100 ms) after some pings in
 * the Bulk and Voice tins and a UDP flood in Best Effort, two packets still
 * queued. The derived values (thresholds, targets, quanta, memory limit)
 * are what sch_cake.c computes for a 1500-byte Ethernet MTU.
 */
static const struct cake_opts lab_opts = {
	.rate = MBIT(10),
	.overhead = 38,
	.rtt = 100000,
	.target = 5000,
	.diffserv = CAKE_DS_DIFFSERV3,
	.flow_mode = CAKE_FLOW_TRIPLE,
	.split_gso = true,
};

static const struct cake_stats lab_stats = {
	.bytes = 4240376,
	.packets = 2898,
	.drops = 1200,
	.overlimits = 2950,
	.requeues = 0,
	.backlog_bytes = 3024,
	.backlog_packets = 2,
	.has_app = true,
	.capacity_estimate = 1250000,
	.memory_limit = 4 << 20,
	.memory_used = 153600,
	.avg_netoff = 14,
	.min_netlen = 84,
	.max_netlen = 1498,
	.min_adjlen = 122,
	.max_adjlen = 1536,
	.tin_count = 3,
	.tins = {
		{ /* Bulk */
			.threshold_rate = 78125, .sent_bytes = 4900, .sent_packets = 50,
			.target_us = 29068, .interval_us = 124068, .peak_delay_us = 27,
			.avg_delay_us = 9, .base_delay_us = 3, .way_misses = 1,
			.max_skblen = 98, .flow_quantum = 300,
		},
		{ /* Best Effort */
			.threshold_rate = 1250000, .sent_bytes = 6048000, .sent_packets = 4000,
			.dropped_packets = 1200, .backlog_bytes = 3024, .target_us = 5000,
			.interval_us = 100000, .peak_delay_us = 98000, .avg_delay_us = 61000,
			.base_delay_us = 1800, .way_misses = 1, .bulk_flows = 1,
			.unresponsive_flows = 1, .max_skblen = 1512, .flow_quantum = 305,
		},
		{ /* Voice */
			.threshold_rate = 312500, .sent_bytes = 4900, .sent_packets = 50,
			.target_us = 7267, .interval_us = 102267, .peak_delay_us = 8,
			.avg_delay_us = 4, .base_delay_us = 2, .way_misses = 1,
			.ecn_marked_packets = 0, .max_skblen = 98, .flow_quantum = 300,
		},
	},
};

static void assert_tin_equal(const struct cake_tin_stats *a, const struct cake_tin_stats *b)
{
	g_assert_cmpuint(a->threshold_rate, ==, b->threshold_rate);
	g_assert_cmpuint(a->sent_bytes, ==, b->sent_bytes);
	g_assert_cmpuint(a->sent_packets, ==, b->sent_packets);
	g_assert_cmpuint(a->dropped_bytes, ==, b->dropped_bytes);
	g_assert_cmpuint(a->dropped_packets, ==, b->dropped_packets);
	g_assert_cmpuint(a->ecn_marked_packets, ==, b->ecn_marked_packets);
	g_assert_cmpuint(a->acks_dropped_packets, ==, b->acks_dropped_packets);
	g_assert_cmpuint(a->backlog_bytes, ==, b->backlog_bytes);
	g_assert_cmpuint(a->backlog_packets, ==, b->backlog_packets);
	g_assert_cmpuint(a->target_us, ==, b->target_us);
	g_assert_cmpuint(a->interval_us, ==, b->interval_us);
	g_assert_cmpuint(a->peak_delay_us, ==, b->peak_delay_us);
	g_assert_cmpuint(a->avg_delay_us, ==, b->avg_delay_us);
	g_assert_cmpuint(a->base_delay_us, ==, b->base_delay_us);
	g_assert_cmpuint(a->sparse_flows, ==, b->sparse_flows);
	g_assert_cmpuint(a->bulk_flows, ==, b->bulk_flows);
	g_assert_cmpuint(a->unresponsive_flows, ==, b->unresponsive_flows);
	g_assert_cmpuint(a->way_indirect_hits, ==, b->way_indirect_hits);
	g_assert_cmpuint(a->way_misses, ==, b->way_misses);
	g_assert_cmpuint(a->way_collisions, ==, b->way_collisions);
	g_assert_cmpuint(a->max_skblen, ==, b->max_skblen);
	g_assert_cmpuint(a->flow_quantum, ==, b->flow_quantum);
}

static void assert_stats_equal(const struct cake_stats *a, const struct cake_stats *b)
{
	unsigned int i;

	g_assert_cmpuint(a->bytes, ==, b->bytes);
	g_assert_cmpuint(a->packets, ==, b->packets);
	g_assert_cmpuint(a->drops, ==, b->drops);
	g_assert_cmpuint(a->overlimits, ==, b->overlimits);
	g_assert_cmpuint(a->requeues, ==, b->requeues);
	g_assert_cmpuint(a->backlog_bytes, ==, b->backlog_bytes);
	g_assert_cmpuint(a->backlog_packets, ==, b->backlog_packets);
	g_assert_cmpint(a->has_app, ==, b->has_app);
	g_assert_cmpuint(a->capacity_estimate, ==, b->capacity_estimate);
	g_assert_cmpuint(a->memory_limit, ==, b->memory_limit);
	g_assert_cmpuint(a->memory_used, ==, b->memory_used);
	g_assert_cmpuint(a->avg_netoff, ==, b->avg_netoff);
	g_assert_cmpuint(a->min_netlen, ==, b->min_netlen);
	g_assert_cmpuint(a->max_netlen, ==, b->max_netlen);
	g_assert_cmpuint(a->min_adjlen, ==, b->min_adjlen);
	g_assert_cmpuint(a->max_adjlen, ==, b->max_adjlen);
	g_assert_cmpuint(a->tin_count, ==, b->tin_count);
	for (i = 0; i < a->tin_count; i++)
		assert_tin_equal(&a->tins[i], &b->tins[i]);
}

/* Tin rates in dump order, from cake_config_*(); diffserv3/4 dump in bulk_order. */
static uint64_t tin_threshold(uint32_t mode, uint64_t rate, unsigned int tin)
{
	static const uint8_t shift[CAKE_DS_MAX][CAKE_MAX_TINS] = {
		[CAKE_DS_DIFFSERV3] = { 4, 0, 2 },
		[CAKE_DS_DIFFSERV4] = { 4, 0, 1, 2 },
		[CAKE_DS_BESTEFFORT] = { 0 },
	};

	if (mode == CAKE_DS_DIFFSERV8 || mode == CAKE_DS_PRECEDENCE) {
		while (tin--)
			rate = (rate * 7) >> 3;
		return rate;
	}
	return rate >> shift[mode][tin];
}

/*
 * What must hold between the options and statistics of one dump, by the
 * accounting in sch_cake.c. Used on our synthetic dump and, more to the
 * point, on the one captured from a real kernel.
 */
static void check_kernel_rules(const struct cake_opts *o, const struct cake_stats *s)
{
	uint64_t sent_packets = 0, sent_bytes = 0, dropped = 0, backlog = 0;
	unsigned int i;

	/* cake_dump reports every option; raw only when no overhead was given. */
	g_assert_cmphex(o->has | CAKE_HAS_RAW, ==, ALL_OPTS_BITS);
	g_assert_true(s->has_app);
	g_assert_cmpuint(o->diffserv, <, CAKE_DS_MAX);
	g_assert_cmpuint(s->tin_count, ==, tin_count_of(o->diffserv));
	if (o->diffserv == CAKE_DS_DIFFSERV3)
		g_assert_cmpuint(s->tin_count, ==, 3);

	/* Set from the rate when cake was created; only autorate moves it. */
	if (!o->autorate)
		g_assert_cmpuint(s->capacity_estimate, ==, o->rate);

	for (i = 0; i < s->tin_count; i++) {
		const struct cake_tin_stats *t = &s->tins[i];
		uint64_t want_interval;

		g_test_message("tin %u (%s): %" G_GUINT64_FORMAT " packets, %" G_GUINT64_FORMAT
			       " dropped", i, cake_tin_name(o->diffserv, i), t->sent_packets,
			       t->dropped_packets);
		g_assert_cmpuint(t->threshold_rate, ==, tin_threshold(o->diffserv, o->rate, i));
		g_assert_cmpuint(t->flow_quantum, ==,
				 t->threshold_rate ? CLAMP(t->threshold_rate >> 12, 300, 1514)
						   : 1514);
		/* cake_set_rate(): target is at least the configured one ... */
		g_assert_cmpuint(t->target_us, >=, o->target);
		/* ... and the interval grows with it, rounding to us aside. */
		want_interval = MAX((uint64_t)o->rtt + t->target_us - o->target,
				    2 * (uint64_t)t->target_us);
		g_assert_cmpuint(t->interval_us, >=, want_interval);
		g_assert_cmpuint(t->interval_us, <=, want_interval + 1);

		sent_packets += t->sent_packets;
		sent_bytes += t->sent_bytes;
		dropped += t->dropped_packets + t->acks_dropped_packets;
		backlog += t->backlog_bytes;
	}

	/* Every drop, AQM or overflow or ACK filter, is counted in a tin too. */
	g_assert_cmpuint(dropped, ==, s->drops);
	/*
	 * Tins count packets as they enter, the qdisc as they leave. A packet
	 * the driver handed back (requeue) is counted as left and still queued,
	 * and without split-gso one GSO packet leaves as many: then no sum holds.
	 */
	if (o->split_gso && (s->requeues == 0 || s->backlog_packets == 0)) {
		g_assert_cmpuint(backlog, ==, s->backlog_bytes);
		g_assert_cmpuint(sent_packets, ==, s->packets + s->drops + s->backlog_packets);
		g_assert_cmpuint(sent_bytes, >=, s->bytes + s->backlog_bytes);
		if (s->drops == 0)
			g_assert_cmpuint(sent_bytes, ==, s->bytes + s->backlog_bytes);
	}

	/*
	 * cake_reconfigure(): an explicit memlimit wins, else rate x rtt, at
	 * least 4 MiB, at most 10240 MTUs (the MTU is not in the dump).
	 */
	if (o->memlimit) {
		g_assert_cmpuint(s->memory_limit, ==, o->memlimit);
	} else if (o->rate) {
		uint32_t want = MAX((uint32_t)(o->rate * o->rtt / 250000), 4u << 20);

		g_assert_true(s->memory_limit == want ||
			      (s->memory_limit < want && s->memory_limit % 10240 == 0));
	} else {
		g_assert_cmpuint(s->memory_limit % 10240, ==, 0);
	}

	/* cake_calc_overhead(): sizes seen before and after adding the overhead. */
	if (sent_packets && o->atm == CAKE_ATM_NONE) {
		g_assert_cmpuint(s->min_netlen, <=, s->max_netlen);
		g_assert_cmpint(s->max_adjlen, ==,
				MAX((int64_t)s->max_netlen + o->overhead, (int64_t)o->mpu));
		g_assert_cmpint(s->min_adjlen, ==,
				MAX((int64_t)s->min_netlen + o->overhead, (int64_t)o->mpu));
	}
}

static void parse_qdisc_dump(struct nlmsghdr *nlh, struct cake_opts *o, struct cake_stats *s)
{
	struct nlattr *kind;

	g_assert_cmpuint(nlh->nlmsg_type, ==, RTM_NEWQDISC);
	g_assert_cmpuint(nlh->nlmsg_len, >=, NLMSG_LENGTH(sizeof(struct tcmsg)));
	kind = qdisc_attr(nlh, TCA_KIND);
	g_assert_nonnull(kind);
	g_assert_cmpstr(nla_get_string(kind), ==, "cake");
	g_assert_cmpint(cake_attr_parse_opts(qdisc_attr(nlh, TCA_OPTIONS), o), ==, 0);
	g_assert_cmpint(cake_attr_parse_stats(qdisc_attr(nlh, TCA_STATS2), s), ==, 0);
}

static const struct {
	const char *name;
	unsigned int shape;
	int rc;
} dump_stats_cases[] = {
	{ "kernel-layout", DUMP_PLAIN },
	{ "kernel-layout-padded", DUMP_PAD },
	{ "newer-kernel-attributes", DUMP_NEWER | DUMP_PAD },
	{ "no-app-block", DUMP_NO_APP },
	{ "tin-gap-stops-count", DUMP_TIN_GAP },
	{ "short-basic", DUMP_SHORT_BASIC, -EINVAL },
	{ "short-queue", DUMP_SHORT_QUEUE, -EINVAL },
	{ "short-capacity", DUMP_SHORT_CAPACITY, -EINVAL },
	{ "short-memory-used", DUMP_SHORT_MEMORY, -EINVAL },
	{ "short-tin-bytes", DUMP_SHORT_TIN_BYTES, -EINVAL },
	{ "short-tin-target", DUMP_SHORT_TIN_TARGET, -EINVAL },
};

static void test_dump_stats(gconstpointer data)
{
	size_t i = GPOINTER_TO_SIZE(data);
	unsigned int shape = dump_stats_cases[i].shape;
	g_autoptr(NlMsg) msg = kernel_dump_new(&lab_opts, &lab_stats, shape);
	struct nlattr *stats2 = qdisc_attr(nlmsg_hdr(msg), TCA_STATS2);
	struct cake_stats out, before, want = lab_stats;
	struct cake_opts o;

	memset(&out, 0xa5, sizeof(out));
	before = out;
	g_assert_cmpint(cake_attr_parse_stats(stats2, &out), ==, dump_stats_cases[i].rc);
	if (dump_stats_cases[i].rc) {
		g_assert_cmpmem(&out, sizeof(out), &before, sizeof(before));
		return;
	}

	if (shape & DUMP_NO_APP) {
		memset(&want, 0, sizeof(want));
		want.bytes = lab_stats.bytes;
		want.packets = lab_stats.packets;
		want.drops = lab_stats.drops;
		want.overlimits = lab_stats.overlimits;
		want.requeues = lab_stats.requeues;
		want.backlog_bytes = lab_stats.backlog_bytes;
		want.backlog_packets = lab_stats.backlog_packets;
	}
	if (shape & DUMP_TIN_GAP)
		want.tin_count = 2;
	assert_stats_equal(&out, &want);

	if (shape == DUMP_PLAIN || shape == DUMP_PAD) {
		parse_qdisc_dump(nlmsg_hdr(msg), &o, &out);
		check_kernel_rules(&o, &out);
	}
}

/* Past 2^32 the kernel adds TCA_STATS_PKT64 beside the truncated basic count. */
static void test_stats_pkt64(void)
{
	struct cake_stats s = lab_stats, out;
	g_autoptr(NlMsg) msg = NULL;

	s.packets = 0x100000005ULL;
	msg = kernel_dump_new(&lab_opts, &s, DUMP_PLAIN);
	g_assert_cmpint(cake_attr_parse_stats(qdisc_attr(nlmsg_hdr(msg), TCA_STATS2), &out), ==,
			0);
	g_assert_cmpuint(out.packets, ==, 0x100000005ULL);
	g_assert_cmpint(cake_attr_parse_stats(NULL, &out), ==, -EINVAL);
}

/* A capture file holds one whole message, nlmsghdr first, as qdisc-capture writes it. */
static struct nlmsghdr *load_nlmsg(const char *path)
{
	g_autoptr(GError) error = NULL;
	struct nlmsghdr *nlh;
	char *buf;
	gsize len;

	g_assert_true(g_file_get_contents(path, &buf, &len, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(len, >=, NLMSG_HDRLEN);
	nlh = (struct nlmsghdr *)buf;
	g_assert_cmpuint(nlh->nlmsg_len, ==, len);
	g_assert_true(nlmsg_ok(nlh, (int)len));
	return nlh;
}

/* The file path the real capture takes, with our synthetic dump in it. */
static void test_stats_file(void)
{
	g_autoptr(NlMsg) msg = kernel_dump_new(&lab_opts, &lab_stats, DUMP_PLAIN);
	g_autoptr(GError) error = NULL;
	g_autofree char *dir = g_dir_make_tmp("test-cake-XXXXXX", &error);
	g_autofree char *path = NULL;
	g_autofree struct nlmsghdr *nlh = NULL;
	struct cake_opts o;
	struct cake_stats s;

	g_assert_no_error(error);
	path = g_build_filename(dir, "cake-stats.nlmsg", NULL);
	g_assert_true(g_file_set_contents(path, (const char *)nlmsg_hdr(msg),
					  nlmsg_hdr(msg)->nlmsg_len, &error));
	g_assert_no_error(error);

	nlh = load_nlmsg(path);
	parse_qdisc_dump(nlh, &o, &s);
	assert_stats_equal(&s, &lab_stats);
	check_kernel_rules(&o, &s);

	g_assert_cmpint(g_unlink(path), ==, 0);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* A dump captured in the VM lab from a Debian kernel (tests/data/README.md says how to make it). */
static void test_stats_capture(void)
{
	g_autofree char *path =
		g_test_build_filename(G_TEST_DIST, "data", "cake-stats.nlmsg", NULL);
	g_autofree struct nlmsghdr *nlh = NULL;
	struct cake_opts o;
	struct cake_stats s;
	uint64_t sent = 0;
	unsigned int i;

	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_test_skip("no tests/data/cake-stats.nlmsg captured from a real kernel yet");
		return;
	}
	nlh = load_nlmsg(path);
	parse_qdisc_dump(nlh, &o, &s);
	check_kernel_rules(&o, &s);

	/* A capture with no traffic would make the sums above say nothing. */
	for (i = 0; i < s.tin_count; i++)
		sent += s.tins[i].sent_packets;
	g_assert_cmpuint(sent, >, 0);
	g_assert_cmpuint(s.packets, >, 0);
}

#define ADD_CASES(prefix, cases, fn)                                                             \
	do {                                                                                     \
		size_t i_;                                                                       \
		for (i_ = 0; i_ < G_N_ELEMENTS(cases); i_++) {                                   \
			g_autofree char *path_ = g_strdup_printf(prefix "/%s", cases[i_].name);  \
			g_test_add_data_func(path_, GSIZE_TO_POINTER(i_), fn);                   \
		}                                                                                \
	} while (0)

static void test_fill_defaults(void)
{
	struct cake_opts o = { .has = CAKE_HAS_RATE | CAKE_HAS_DIFFSERV | CAKE_HAS_OVERHEAD,
			       .rate = 1000,
			       .diffserv = CAKE_DS_DIFFSERV8,
			       .overhead = 60 };

	cake_opts_fill_defaults(&o);
	/* what was given stays */
	g_assert_cmpuint(o.rate, ==, 1000);
	g_assert_cmpuint(o.diffserv, ==, CAKE_DS_DIFFSERV8);
	g_assert_cmpint(o.overhead, ==, 60);
	/* the rest is the kernel's defaults, and now said */
	g_assert_true(o.has & CAKE_HAS_NAT);
	g_assert_false(o.nat);
	g_assert_true(o.has & CAKE_HAS_WASH);
	g_assert_false(o.wash);
	g_assert_cmpuint(o.ack_filter, ==, CAKE_ACKF_NONE);
	g_assert_cmpuint(o.rtt, ==, 100000);
	g_assert_true(o.has & CAKE_HAS_MEMLIMIT);
	g_assert_cmpuint(o.memlimit, ==, 0);
	g_assert_true(o.has & CAKE_HAS_FLOW_MODE);
	g_assert_cmpuint(o.flow_mode, ==, CAKE_FM_TRIPLE_ISOLATE);
	g_assert_true(o.has & CAKE_HAS_SPLIT_GSO);
	g_assert_true(o.split_gso);
	g_assert_true(o.has & CAKE_HAS_ATM);
	g_assert_cmpuint(o.atm, ==, CAKE_ATMC_NONE);
	g_assert_true(o.has & CAKE_HAS_FWMARK);
	g_assert_cmpuint(o.fwmark, ==, 0);
	/* and nothing set never sends, nor raw, which the overhead always sent ends */
	g_assert_false(o.has & (CAKE_HAS_INGRESS | CAKE_HAS_RAW | CAKE_HAS_TARGET |
				CAKE_HAS_AUTORATE));
}

/* The defaults are what a fresh cake reports (the "fresh-defaults" dump above). */
static void test_fill_defaults_are_fresh_cake(void)
{
	struct cake_opts o = { 0 };

	cake_opts_fill_defaults(&o);
	g_assert_cmpuint(o.diffserv, ==, CAKE_DIFFSERV_DIFFSERV3);
	g_assert_cmpuint(o.flow_mode, ==, CAKE_FLOW_TRIPLE);
	g_assert_cmpuint(o.atm, ==, CAKE_ATM_NONE);
	g_assert_true(o.split_gso);
	g_assert_cmpuint(o.rtt, ==, 100000);
	/* and a given value of a new option stays */
	o = (struct cake_opts){ .has = CAKE_HAS_FLOW_MODE | CAKE_HAS_SPLIT_GSO | CAKE_HAS_FWMARK,
				.flow_mode = CAKE_FM_DUAL_SRCHOST, .split_gso = false,
				.fwmark = 0xff };
	cake_opts_fill_defaults(&o);
	g_assert_cmpuint(o.flow_mode, ==, CAKE_FM_DUAL_SRCHOST);
	g_assert_false(o.split_gso);
	g_assert_cmpuint(o.fwmark, ==, 0xff);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);

	g_test_add_func("/cake/names/diffserv", test_diffserv_names);
	g_test_add_func("/cake/names/ack-filter", test_ack_names);
	g_test_add_func("/cake/names/tins", test_tin_names);
	g_test_add_func("/cake/names/families", test_families);
	g_test_add_func("/cake/names/families-apart", test_families_apart);
	g_test_add_func("/cake/names/word-set-rejects", test_word_set_rejects);
	g_test_add_func("/cake/names/rtt-presets", test_rtt_presets);
	ADD_CASES("/cake/merge", merge_cases, test_merge);
	ADD_CASES("/cake/put", put_cases, test_put);
	ADD_CASES("/cake/put/rejects", reject_cases, test_put_rejects);
	g_test_add_func("/cake/put/no-room", test_put_no_room);
	ADD_CASES("/cake/parse-opts", dump_opts_cases, test_dump_opts);
	g_test_add_func("/cake/parse-opts/null", test_parse_opts_null);
	ADD_CASES("/cake/parse-stats", dump_stats_cases, test_dump_stats);
	g_test_add_func("/cake/parse-stats/pkt64", test_stats_pkt64);
	g_test_add_func("/cake/parse-stats/file", test_stats_file);
	g_test_add_func("/cake/parse-stats/captured", test_stats_capture);

	g_test_add_func("/cake/opts/fill-defaults", test_fill_defaults);
	g_test_add_func("/cake/opts/fill-defaults-fresh", test_fill_defaults_are_fresh_cake);
	return g_test_run();
}
