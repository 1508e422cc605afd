// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * set's words (egress 85mbit diffserv4 ...) into a shape_request: one parser
 * for the command line and the configuration, so both accept the same words.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shape/cake.h"
#include "shape/overhead.h"
#include "shape/units.h"
#include "shape/words.h"

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_direction(const char *word, const char *val, enum dir_action *act,
			   uint64_t *rate, char *err, size_t errlen)
{
	if (!val)
		return bad(err, errlen, "%s: missing RATE or off", word);
	if (!strcmp(val, "off")) {
		*act = DIR_OFF;
		return 0;
	}
	if (parse_rate(val, rate) < 0)
		return bad(err, errlen, "%s: '%s' is not a rate (a number and a unit, e.g. 85mbit)",
			   word, val);
	*act = DIR_SET;
	return 0;
}

/* Words that stand alone and set one option: cake's name tables, and nat/wash. */
static bool parse_flag(const char *word, struct cake_opts *o)
{
	int v;

	if ((v = cake_diffserv_from_name(word)) >= 0) {
		o->diffserv = (uint32_t)v;
		o->has |= CAKE_HAS_DIFFSERV;
	} else if ((v = cake_ack_from_name(word)) >= 0) {
		o->ack_filter = (uint32_t)v;
		o->has |= CAKE_HAS_ACK_FILTER;
	} else if (!strcmp(word, "nat") || !strcmp(word, "nonat")) {
		o->nat = !strcmp(word, "nat");
		o->has |= CAKE_HAS_NAT;
	} else if (!strcmp(word, "wash") || !strcmp(word, "nowash")) {
		o->wash = !strcmp(word, "wash");
		o->has |= CAKE_HAS_WASH;
	} else {
		return false;
	}
	return true;
}

int shape_words_parse(int argc, char **argv, struct shape_request *req, char *err, size_t errlen)
{
	struct shape_request r = { 0 };
	struct cake_opts *o = &r.opts;
	bool link_overhead_given = false;
	long n;

	for (int i = 0; i < argc; i++) {
		const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int ret;

		if (parse_flag(w, o))
			continue;
		if (!strcmp(w, "egress")) {
			ret = parse_direction(w, v, &r.egress, &r.egress_rate, err, errlen);
		} else if (!strcmp(w, "ingress")) {
			ret = parse_direction(w, v, &r.ingress, &r.ingress_rate, err, errlen);
		} else if (!strcmp(w, "overhead")) {
			if (!v)
				return bad(err, errlen, "overhead: missing BYTES or auto");
			ret = 0;
			if (!strcmp(v, "auto")) {
				o->has &= ~CAKE_HAS_OVERHEAD;
				r.overhead_auto = true;
			} else if (parse_int_range(v, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX, &n) == 0) {
				r.overhead_auto = false;
				o->overhead = (int32_t)n;
				o->has |= CAKE_HAS_OVERHEAD;
			} else {
				ret = bad(err, errlen, "overhead: '%s' is not auto or a whole number of "
					  "bytes from -64 to 256", v);
			}
		} else if (!strcmp(w, "link-overhead")) {
			if (!v || parse_int_range(v, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX, &n) < 0)
				return bad(err, errlen, "link-overhead: '%s' is not a whole number of "
					   "bytes from -64 to 256", v ? v : "");
			r.link_overhead = (int)n;
			r.overhead_auto = true;
			link_overhead_given = true;
			ret = 0;
		} else if (!strcmp(w, "mpu")) {
			if (!v || parse_int_range(v, 0, 256, &n) < 0)
				return bad(err, errlen, "mpu: '%s' is not a whole number of bytes "
					   "from 0 to 256", v ? v : "");
			o->mpu = (uint32_t)n;
			o->has |= CAKE_HAS_MPU;
			ret = 0;
		} else if (!strcmp(w, "rtt")) {
			if (!v || parse_time(v, &o->rtt) < 0)
				return bad(err, errlen, "rtt: '%s' is not a time (e.g. 100ms)",
					   v ? v : "");
			o->has |= CAKE_HAS_RTT;
			ret = 0;
		} else if (!strcmp(w, "memlimit")) {
			if (!v || parse_size(v, &o->memlimit) < 0)
				return bad(err, errlen, "memlimit: '%s' is not a size (e.g. 4m)",
					   v ? v : "");
			o->has |= CAKE_HAS_MEMLIMIT;
			ret = 0;
		} else {
			return bad(err, errlen, "'%s' is not an option of set (see wgshape set --help)",
				   w);
		}
		if (ret < 0)
			return ret;
		i++; /* the value */
	}
	if (link_overhead_given && (o->has & CAKE_HAS_OVERHEAD))
		return bad(err, errlen, "link-overhead only adds to overhead auto; with overhead "
			   "%d give the whole overhead there", o->overhead);
	if ((o->has || link_overhead_given) && r.egress != DIR_SET && r.ingress != DIR_SET &&
	    (r.egress == DIR_OFF || r.ingress == DIR_OFF))
		return bad(err, errlen, "options apply to a direction being set, and off sets none "
			   "(give egress RATE or ingress RATE, or leave both out)");
	*req = r;
	return 0;
}

