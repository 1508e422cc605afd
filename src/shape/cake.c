/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake's names as tc spells them, and merging of partial settings.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "shape/cake.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const diffserv_names[CAKE_DS_MAX] = {
	[CAKE_DS_DIFFSERV3] = "diffserv3",
	[CAKE_DS_DIFFSERV4] = "diffserv4",
	[CAKE_DS_DIFFSERV8] = "diffserv8",
	[CAKE_DS_BESTEFFORT] = "besteffort",
	[CAKE_DS_PRECEDENCE] = "precedence",
};

static const char *const flow_names[CAKE_FM_MAX] = {
	[CAKE_FM_FLOWBLIND] = "flowblind",
	[CAKE_FM_SRCHOST] = "srchost",
	[CAKE_FM_DSTHOST] = "dsthost",
	[CAKE_FM_HOSTS] = "hosts",
	[CAKE_FM_FLOWS] = "flows",
	[CAKE_FM_DUAL_SRCHOST] = "dual-srchost",
	[CAKE_FM_DUAL_DSTHOST] = "dual-dsthost",
	[CAKE_FM_TRIPLE_ISOLATE] = "triple-isolate",
};

static const char *const nat_names[] = { "nonat", "nat" };
static const char *const wash_names[] = { "nowash", "wash" };
static const char *const split_gso_names[] = { "no-split-gso", "split-gso" };

static const char *const ack_names[CAKE_ACKF_MAX] = {
	[CAKE_ACKF_NONE] = "no-ack-filter",
	[CAKE_ACKF_FILTER] = "ack-filter",
	[CAKE_ACKF_AGGRESSIVE] = "ack-filter-aggressive",
};

static const char *const atm_names[CAKE_ATMC_MAX] = {
	[CAKE_ATMC_NONE] = "noatm",
	[CAKE_ATMC_ATM] = "atm",
	[CAKE_ATMC_PTM] = "ptm",
};

/* The order tc's usage lists them in (NULL: the table's). */
static const unsigned int diffserv_order[] = { CAKE_DS_BESTEFFORT, CAKE_DS_DIFFSERV3,
					       CAKE_DS_DIFFSERV4, CAKE_DS_DIFFSERV8,
					       CAKE_DS_PRECEDENCE };
static const unsigned int on_off_order[] = { 1, 0 };
static const unsigned int ack_order[] = { CAKE_ACKF_FILTER, CAKE_ACKF_AGGRESSIVE,
					  CAKE_ACKF_NONE };
static const unsigned int atm_order[] = { CAKE_ATMC_PTM, CAKE_ATMC_ATM, CAKE_ATMC_NONE };

#define WORDS(table, order, bit, member)                                                       \
	{ table, ARRAY_SIZE(table), order, bit, offsetof(struct cake_opts, member),            \
	  sizeof(((struct cake_opts *)0)->member) }

static const struct family {
	const char *const *names; /* indexed by value */
	size_t n; /* names and order alike */
	const unsigned int *order;
	uint32_t has;
	size_t offset, size; /* the member of struct cake_opts the words set */
} families[CAKE_WORDS_MAX] = {
	[CAKE_WORDS_DIFFSERV] = WORDS(diffserv_names, diffserv_order, CAKE_HAS_DIFFSERV, diffserv),
	[CAKE_WORDS_FLOW] = WORDS(flow_names, NULL, CAKE_HAS_FLOW_MODE, flow_mode),
	[CAKE_WORDS_NAT] = WORDS(nat_names, on_off_order, CAKE_HAS_NAT, nat),
	[CAKE_WORDS_WASH] = WORDS(wash_names, on_off_order, CAKE_HAS_WASH, wash),
	[CAKE_WORDS_SPLIT_GSO] = WORDS(split_gso_names, on_off_order, CAKE_HAS_SPLIT_GSO, split_gso),
	[CAKE_WORDS_ACK] = WORDS(ack_names, ack_order, CAKE_HAS_ACK_FILTER, ack_filter),
	[CAKE_WORDS_ATM] = WORDS(atm_names, atm_order, CAKE_HAS_ATM, atm),
};

_Static_assert(ARRAY_SIZE(diffserv_order) == CAKE_DS_MAX, "every diffserv word listed");
_Static_assert(ARRAY_SIZE(on_off_order) == ARRAY_SIZE(nat_names), "both words listed");
_Static_assert(ARRAY_SIZE(ack_order) == CAKE_ACKF_MAX, "every ack-filter word listed");
_Static_assert(ARRAY_SIZE(atm_order) == CAKE_ATMC_MAX, "every atm word listed");

/* tc's presets (tc/q_cake.c); tc sends target = rtt / 20 with each, as we do. */
static const struct {
	const char *name;
	uint32_t rtt; /* microseconds */
} rtt_presets[] = {
	{ "datacentre", 100 },
	{ "lan", 1000 },
	{ "metro", 10000 },
	{ "regional", 30000 },
	{ "internet", 100000 },
	{ "oceanic", 300000 },
	{ "satellite", 1000000 },
	{ "interplanetary", 1000000000 },
};

/*
 * The kernel dumps tins in its priority order (bulk_order for diffserv3/4),
 * and tc labels them by count alone: 3 and 4 tins get names, anything else
 * "Tin N". Mirror that so our -s output lines up with tc's.
 */
static const char *const tin_names[CAKE_DS_MAX][CAKE_MAX_TINS] = {
	[CAKE_DS_DIFFSERV3] = { "Bulk", "Best Effort", "Voice" },
	[CAKE_DS_DIFFSERV4] = { "Bulk", "Best Effort", "Video", "Voice" },
	[CAKE_DS_DIFFSERV8] = { "Tin 0", "Tin 1", "Tin 2", "Tin 3",
				"Tin 4", "Tin 5", "Tin 6", "Tin 7" },
	[CAKE_DS_BESTEFFORT] = { "Tin 0" },
	[CAKE_DS_PRECEDENCE] = { "Tin 0", "Tin 1", "Tin 2", "Tin 3",
				 "Tin 4", "Tin 5", "Tin 6", "Tin 7" },
};

static const char *name_of(const char *const *table, size_t n, uint32_t value)
{
	return value < n ? table[value] : NULL;
}

static int value_of(const char *const *table, size_t n, const char *name)
{
	size_t i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (table[i] && !strcmp(table[i], name))
			return (int)i;
	return -EINVAL;
}

/* names joined by sep, in the order given */
static const char *choices(const char *const *table, size_t n, const unsigned int *order,
			   const char *sep, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? sep : "",
					 table[order ? order[i] : i]);
	return buf;
}

const char *cake_word(enum cake_family f, uint32_t value)
{
	if ((unsigned int)f >= CAKE_WORDS_MAX)
		return NULL;
	return name_of(families[f].names, families[f].n, value);
}

int cake_word_value(enum cake_family f, const char *word)
{
	if ((unsigned int)f >= CAKE_WORDS_MAX)
		return -EINVAL;
	return value_of(families[f].names, families[f].n, word);
}

const char *cake_word_choices(enum cake_family f, const char *sep, char *buf, size_t len)
{
	if ((unsigned int)f >= CAKE_WORDS_MAX) {
		buf[0] = '\0';
		return buf;
	}
	return choices(families[f].names, families[f].n, families[f].order, sep, buf, len);
}

bool cake_word_set(struct cake_opts *o, const char *word)
{
	for (size_t f = 0; f < ARRAY_SIZE(families); f++) {
		const struct family *fam = &families[f];
		int v = value_of(fam->names, fam->n, word);
		uint32_t u32 = (uint32_t)v;
		bool b = v != 0;

		if (v < 0)
			continue;
		if (fam->size == sizeof(u32))
			memcpy((char *)o + fam->offset, &u32, sizeof(u32));
		else
			memcpy((char *)o + fam->offset, &b, sizeof(b));
		o->has |= fam->has;
		return true;
	}
	return false;
}

bool cake_word_get(const struct cake_opts *o, enum cake_family f, uint32_t *value)
{
	const struct family *fam;
	uint32_t u32;
	bool b;

	if ((unsigned int)f >= CAKE_WORDS_MAX || !(o->has & families[f].has))
		return false;
	fam = &families[f];
	if (fam->size == sizeof(u32)) {
		memcpy(&u32, (const char *)o + fam->offset, sizeof(u32));
		*value = u32;
	} else {
		memcpy(&b, (const char *)o + fam->offset, sizeof(b));
		*value = b;
	}
	return true;
}

int cake_rtt_preset(const char *name, uint32_t *rtt)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(rtt_presets); i++) {
		if (!strcmp(rtt_presets[i].name, name)) {
			*rtt = rtt_presets[i].rtt;
			return 0;
		}
	}
	return -EINVAL;
}

const char *cake_rtt_preset_choices(const char *sep, char *buf, size_t len)
{
	const char *names[ARRAY_SIZE(rtt_presets)];

	for (size_t i = 0; i < ARRAY_SIZE(rtt_presets); i++)
		names[i] = rtt_presets[i].name;
	return choices(names, ARRAY_SIZE(names), NULL, sep, buf, len);
}

/* NULL for a mode this build does not know (a newer kernel may report one). */
const char *cake_diffserv_name(uint32_t mode)
{
	return cake_word(CAKE_WORDS_DIFFSERV, mode);
}

/* The mode, or -EINVAL. */
int cake_diffserv_from_name(const char *name)
{
	return cake_word_value(CAKE_WORDS_DIFFSERV, name);
}

const char *cake_ack_name(uint32_t mode)
{
	return cake_word(CAKE_WORDS_ACK, mode);
}

int cake_ack_from_name(const char *name)
{
	return cake_word_value(CAKE_WORDS_ACK, name);
}

const char *cake_diffserv_choices(const char *sep, char *buf, size_t len)
{
	return cake_word_choices(CAKE_WORDS_DIFFSERV, sep, buf, len);
}

const char *cake_ack_choices(const char *sep, char *buf, size_t len)
{
	return cake_word_choices(CAKE_WORDS_ACK, sep, buf, len);
}

const char *cake_tin_name(uint32_t diffserv, unsigned int tin)
{
	if (diffserv >= ARRAY_SIZE(tin_names))
		return NULL;
	return name_of(tin_names[diffserv], ARRAY_SIZE(tin_names[diffserv]), tin);
}

#define OPT(bit, member)                                                                     \
	{ bit, offsetof(struct cake_opts, member), sizeof(((struct cake_opts *)0)->member) }

/* Which members each "has" bit owns; a merge copies exactly those. */
static const struct {
	uint32_t has;
	size_t offset, size;
} opt_members[] = {
	OPT(CAKE_HAS_RATE, rate),
	OPT(CAKE_HAS_OVERHEAD, overhead),
	OPT(CAKE_HAS_MPU, mpu),
	OPT(CAKE_HAS_RTT, rtt),
	OPT(CAKE_HAS_DIFFSERV, diffserv),
	OPT(CAKE_HAS_NAT, nat),
	OPT(CAKE_HAS_WASH, wash),
	OPT(CAKE_HAS_ACK_FILTER, ack_filter),
	OPT(CAKE_HAS_MEMLIMIT, memlimit),
	OPT(CAKE_HAS_INGRESS, ingress),
	OPT(CAKE_HAS_RAW, raw),
	OPT(CAKE_HAS_FLOW_MODE, flow_mode),
	OPT(CAKE_HAS_ATM, atm),
	OPT(CAKE_HAS_SPLIT_GSO, split_gso),
	OPT(CAKE_HAS_TARGET, target),
	OPT(CAKE_HAS_AUTORATE, autorate),
	OPT(CAKE_HAS_FWMARK, fwmark),
};

void cake_opts_merge(struct cake_opts *dst, const struct cake_opts *src)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(opt_members); i++) {
		if (!(src->has & opt_members[i].has))
			continue;
		memcpy((char *)dst + opt_members[i].offset,
		       (const char *)src + opt_members[i].offset, opt_members[i].size);
		dst->has |= opt_members[i].has;
	}
}

void cake_opts_fill_defaults(struct cake_opts *o)
{
	/* What cake_init() in the kernel starts from (net/sched/sch_cake.c). */
	static const struct cake_opts kernel = {
		.has = CAKE_HAS_DIFFSERV | CAKE_HAS_FLOW_MODE | CAKE_HAS_NAT | CAKE_HAS_WASH |
		       CAKE_HAS_SPLIT_GSO | CAKE_HAS_ACK_FILTER | CAKE_HAS_RTT | CAKE_HAS_MPU |
		       CAKE_HAS_ATM | CAKE_HAS_FWMARK | CAKE_HAS_MEMLIMIT,
		.diffserv = CAKE_DS_DIFFSERV3,
		.flow_mode = CAKE_FM_TRIPLE_ISOLATE,
		.split_gso = true,
		.ack_filter = CAKE_ACKF_NONE,
		.rtt = 100000,
		.mpu = 0,
		.atm = CAKE_ATMC_NONE,
		.fwmark = 0,
		.memlimit = 0, /* 0: cake sizes it from the rate */
	};
	struct cake_opts given = *o;

	*o = kernel;
	o->has = kernel.has;
	cake_opts_merge(o, &given);
}

bool cake_opts_hold(const struct cake_opts *have, const struct cake_opts *want)
{
	static const struct {
		uint32_t bit;
		size_t off, len;
	} fields[] = {
#define F(bit, m) { bit, offsetof(struct cake_opts, m), sizeof(((struct cake_opts *)0)->m) }
		F(CAKE_HAS_RATE, rate),		F(CAKE_HAS_OVERHEAD, overhead),
		F(CAKE_HAS_MPU, mpu),		F(CAKE_HAS_RTT, rtt),
		F(CAKE_HAS_DIFFSERV, diffserv), F(CAKE_HAS_NAT, nat),
		F(CAKE_HAS_WASH, wash),		F(CAKE_HAS_ACK_FILTER, ack_filter),
		F(CAKE_HAS_MEMLIMIT, memlimit), F(CAKE_HAS_INGRESS, ingress),
		F(CAKE_HAS_RAW, raw),		F(CAKE_HAS_FLOW_MODE, flow_mode),
		F(CAKE_HAS_ATM, atm),		F(CAKE_HAS_SPLIT_GSO, split_gso),
		F(CAKE_HAS_FWMARK, fwmark),
#undef F
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (!(want->has & fields[i].bit))
			continue;
		if (!(have->has & fields[i].bit) ||
		    memcmp((const char *)have + fields[i].off, (const char *)want + fields[i].off,
			   fields[i].len) != 0)
			return false;
	}
	/* An overhead given without raw means cake is not in raw mode. */
	return !((want->has & CAKE_HAS_OVERHEAD) && !(want->has & CAKE_HAS_RAW) && have->raw);
}
