/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake's names as tc spells them, and merging of partial settings.
 */
#include <errno.h>
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

static const char *const ack_names[CAKE_ACKF_MAX] = {
	[CAKE_ACKF_NONE] = "no-ack-filter",
	[CAKE_ACKF_FILTER] = "ack-filter",
	[CAKE_ACKF_AGGRESSIVE] = "ack-filter-aggressive",
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

/* NULL for a mode this build does not know (a newer kernel may report one). */
const char *cake_diffserv_name(uint32_t mode)
{
	return name_of(diffserv_names, ARRAY_SIZE(diffserv_names), mode);
}

/* The mode, or -EINVAL. */
int cake_diffserv_from_name(const char *name)
{
	return value_of(diffserv_names, ARRAY_SIZE(diffserv_names), name);
}

const char *cake_ack_name(uint32_t mode)
{
	return name_of(ack_names, ARRAY_SIZE(ack_names), mode);
}

int cake_ack_from_name(const char *name)
{
	return value_of(ack_names, ARRAY_SIZE(ack_names), name);
}

/* names joined by sep, in the table's order of the words a user types */
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

const char *cake_diffserv_choices(const char *sep, char *buf, size_t len)
{
	/* tc's order: the simplest first */
	static const unsigned int order[] = { CAKE_DS_BESTEFFORT, CAKE_DS_DIFFSERV3,
					      CAKE_DS_DIFFSERV4, CAKE_DS_DIFFSERV8,
					      CAKE_DS_PRECEDENCE };

	return choices(diffserv_names, ARRAY_SIZE(order), order, sep, buf, len);
}

const char *cake_ack_choices(const char *sep, char *buf, size_t len)
{
	static const unsigned int order[] = { CAKE_ACKF_FILTER, CAKE_ACKF_AGGRESSIVE,
					      CAKE_ACKF_NONE };

	return choices(ack_names, ARRAY_SIZE(order), order, sep, buf, len);
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
		.has = CAKE_HAS_DIFFSERV | CAKE_HAS_NAT | CAKE_HAS_WASH | CAKE_HAS_ACK_FILTER |
		       CAKE_HAS_RTT | CAKE_HAS_MPU | CAKE_HAS_MEMLIMIT,
		.diffserv = CAKE_DS_DIFFSERV3,
		.ack_filter = CAKE_ACKF_NONE,
		.rtt = 100000,
		.mpu = 0,
		.memlimit = 0, /* 0: cake sizes it from the rate */
	};
	struct cake_opts given = *o;

	*o = kernel;
	o->has = kernel.has;
	cake_opts_merge(o, &given);
}
