// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * set's words (egress 85mbit diffserv4 ...) into a shape_request: one parser
 * for the command line and the configuration, so both accept the same words.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape/cake.h"
#include "shape/overhead.h"
#include "shape/units.h"
#include "shape/words.h"
#include "util/err.h"

/* A word refused: util/err.h's message, -EINVAL. */
#define bad(err, errlen, ...) err_say(err, errlen, -EINVAL, __VA_ARGS__)

/* One parse: the request so far, and where its error goes. */
struct parse {
	struct shape_request r;
	const char *link_word; /* the word that gave the link's overhead, if one did */
	char *err;
	size_t errlen;
};

/*
 * tc's (tc/q_cake.c). ethernet also says noatm, which tc leaves alone, so
 * that it ends an atm an earlier set left in the kernel.
 */
static const struct shape_framing framings[] = {
	{ "conservative", 48, 0, CAKE_ATMC_ATM }, /* a whole ATM cell's worth */
	{ "ethernet", 38, 84, CAKE_ATMC_NONE }, /* preamble, gap, header and FCS; 84 on the wire */
};

#define N_FRAMINGS (sizeof(framings) / sizeof(framings[0]))

const struct shape_framing *shape_framing(size_t i)
{
	return i < N_FRAMINGS ? &framings[i] : NULL;
}

static const struct shape_framing *framing_of(const char *word)
{
	for (size_t i = 0; i < N_FRAMINGS; i++)
		if (!strcmp(word, framings[i].word))
			return &framings[i];
	return NULL;
}

static const char *framing_choices(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < N_FRAMINGS && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 framings[i].word);
	return buf;
}

static void set_framing(struct parse *p, const struct shape_framing *f)
{
	struct cake_opts *o = &p->r.opts;

	p->r.link_overhead = f->link_overhead;
	p->r.overhead_auto = true;
	p->link_word = f->word;
	if (f->mpu) {
		o->mpu = f->mpu;
		o->has |= CAKE_HAS_MPU;
	}
	o->atm = f->atm;
	o->has |= CAKE_HAS_ATM;
}

/* raw: no overhead at all, not even the device's header (tc sends overhead 0 with it). */
static void set_raw(struct parse *p)
{
	struct cake_opts *o = &p->r.opts;

	o->overhead = 0;
	o->raw = true;
	o->atm = CAKE_ATMC_NONE;
	o->has |= CAKE_HAS_OVERHEAD | CAKE_HAS_RAW | CAKE_HAS_ATM;
	p->r.overhead_auto = false;
}

static int word_direction(struct parse *p, const char *word, const char *val)
{
	bool egress = !strcmp(word, "egress");
	enum dir_action *act = egress ? &p->r.egress : &p->r.ingress;
	uint64_t *rate = egress ? &p->r.egress_rate : &p->r.ingress_rate;

	if (!strcmp(val, "off")) {
		*act = DIR_OFF;
		return 0;
	}
	if (parse_rate(val, rate) < 0)
		return bad(p->err, p->errlen, "%s: '%s' is not a rate (a number and a unit, "
			   "e.g. 85mbit)", word, val);
	*act = DIR_SET;
	return 0;
}

static int word_overhead(struct parse *p, const char *word, const char *val)
{
	struct cake_opts *o = &p->r.opts;
	long n;

	if (!strcmp(val, "auto")) {
		o->has &= ~(CAKE_HAS_OVERHEAD | CAKE_HAS_RAW);
		o->raw = false;
		p->r.overhead_auto = true;
	} else if (!strcmp(val, "raw")) {
		set_raw(p);
	} else if (parse_int_range(val, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX, &n) == 0) {
		o->overhead = (int32_t)n;
		o->raw = false;
		o->has = (o->has | CAKE_HAS_OVERHEAD) & ~CAKE_HAS_RAW;
		p->r.overhead_auto = false;
	} else {
		return bad(p->err, p->errlen, "%s: '%s' is not auto, raw or a whole number of "
			   "bytes from -64 to 256", word, val);
	}
	return 0;
}

static int word_link_overhead(struct parse *p, const char *word, const char *val)
{
	const struct shape_framing *f = framing_of(val);
	char names[64];
	long n;

	if (f) {
		set_framing(p, f);
		return 0;
	}
	if (parse_int_range(val, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX, &n) < 0)
		return bad(p->err, p->errlen, "%s: '%s' is not a whole number of bytes from -64 "
			   "to 256 nor one of %s", word, val, framing_choices(names, sizeof(names)));
	p->r.link_overhead = (int)n;
	p->r.overhead_auto = true;
	p->link_word = word;
	return 0;
}

static int word_mpu(struct parse *p, const char *word, const char *val)
{
	long n;

	if (parse_int_range(val, 0, 256, &n) < 0)
		return bad(p->err, p->errlen, "%s: '%s' is not a whole number of bytes from 0 "
			   "to 256", word, val);
	p->r.opts.mpu = (uint32_t)n;
	p->r.opts.has |= CAKE_HAS_MPU;
	return 0;
}

static int word_rtt(struct parse *p, const char *word, const char *val)
{
	char presets[128];

	if (parse_time(val, &p->r.opts.rtt) < 0 && cake_rtt_preset(val, &p->r.opts.rtt) < 0)
		return bad(p->err, p->errlen, "%s: '%s' is not a time (e.g. 100ms) nor one of %s",
			   word, val, cake_rtt_preset_choices(", ", presets, sizeof(presets)));
	p->r.opts.has |= CAKE_HAS_RTT;
	return 0;
}

static int word_memlimit(struct parse *p, const char *word, const char *val)
{
	if (parse_size(val, &p->r.opts.memlimit) < 0)
		return bad(p->err, p->errlen, "%s: '%s' is not a size (e.g. 4m)", word, val);
	p->r.opts.has |= CAKE_HAS_MEMLIMIT;
	return 0;
}

/* As tc reads it (strtoul, base 0): 0x.. hex, 0.. octal, else decimal; no sign. */
static int parse_mask(const char *s, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int word_fwmark(struct parse *p, const char *word, const char *val)
{
	if (parse_mask(val, &p->r.opts.fwmark) < 0)
		return bad(p->err, p->errlen, "%s: '%s' is not a mask (0 to 0xffffffff, e.g. 0xff)",
			   word, val);
	p->r.opts.has |= CAKE_HAS_FWMARK;
	return 0;
}

static int word_leaf(struct parse *p, const char *word, const char *val)
{
	p->r.leaf = (uint8_t)peer_leaf_of(val);
	if (!p->r.leaf)
		return bad(p->err, p->errlen, "%s: '%s' is not lazy, cake nor fq_codel", word, val);
	return 0;
}

/* The words that take a value; what the value may be is in each one's error. */
static const struct {
	const char *word;
	const char *missing; /* what the value is, for "missing ..." */
	int (*parse)(struct parse *p, const char *word, const char *val);
} valued[] = {
	{ "egress", "RATE or off", word_direction },
	{ "ingress", "RATE or off", word_direction },
	{ "overhead", "BYTES, auto or raw", word_overhead },
	{ "link-overhead", "BYTES", word_link_overhead },
	{ "mpu", "BYTES", word_mpu },
	{ "rtt", "TIME", word_rtt },
	{ "memlimit", "SIZE", word_memlimit },
	{ "fwmark", "MASK", word_fwmark },
	{ "leaf", "lazy, cake or fq_codel", word_leaf },
};

/* Words that stand alone: cake's families, tc's rtt presets and overhead keywords. */
static bool parse_alone(struct parse *p, const char *word)
{
	const struct shape_framing *f;

	if (cake_word_set(&p->r.opts, word))
		return true;
	if (cake_rtt_preset(word, &p->r.opts.rtt) == 0) {
		p->r.opts.has |= CAKE_HAS_RTT;
		return true;
	}
	if (!strcmp(word, "raw")) {
		set_raw(p);
		return true;
	}
	f = framing_of(word);
	if (f)
		set_framing(p, f);
	return f != NULL;
}

static int parse_word(struct parse *p, int argc, char **argv, int *i)
{
	const char *w = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (parse_alone(p, w))
		return 0;
	for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
		if (strcmp(w, valued[k].word) != 0)
			continue;
		if (!v)
			return bad(p->err, p->errlen, "%s: missing %s", w, valued[k].missing);
		(*i)++;
		return valued[k].parse(p, w, v);
	}
	return bad(p->err, p->errlen, "'%s' is not an option of set (see wgshape set --help)", w);
}

int shape_words_parse(int argc, char **argv, struct shape_request *req, char *err, size_t errlen)
{
	struct parse p = { .err = err, .errlen = errlen };
	const struct cake_opts *o = &p.r.opts;
	const struct shape_request *r = &p.r;

	for (int i = 0; i < argc; i++) {
		int ret = parse_word(&p, argc, argv, &i);

		if (ret < 0)
			return ret;
	}
	if (p.link_word && (o->has & CAKE_HAS_OVERHEAD) && o->raw)
		return bad(err, errlen, "%s only adds to overhead auto, and raw counts no overhead "
			   "at all", p.link_word);
	if (p.link_word && (o->has & CAKE_HAS_OVERHEAD))
		return bad(err, errlen, "%s only adds to overhead auto; with overhead %d give the "
			   "whole overhead there", p.link_word, o->overhead);
	if ((o->has || p.link_word) && r->egress != DIR_SET && r->ingress != DIR_SET &&
	    (r->egress == DIR_OFF || r->ingress == DIR_OFF))
		return bad(err, errlen, "options apply to a direction being set, and off sets none "
			   "(give egress RATE or ingress RATE, or leave both out)");
	*req = p.r;
	return 0;
}
