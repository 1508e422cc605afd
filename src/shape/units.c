/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rates, times and sizes as tc (iproute2) spells them: the same unit names,
 * the same scales, the same output. Where we part from tc it is on purpose:
 *
 *  - A rate needs a unit. tc reads a bare "85" as 85 bit/s, which no one
 *    shaping a link ever means; here it is -EINVAL.
 *  - Numbers are plain decimals: "85", "1.5", ".5", "5.". tc hands them to
 *    strtod(), which also takes leading blanks, a sign, exponents ("1e6bit"),
 *    hex ("0x10mbit"), "inf" and "nan", and reads "1,5" or "1.5" by locale.
 *  - Scaling is exact integer arithmetic, truncated toward zero as tc's
 *    double-to-integer conversion is, but with no rounding before the
 *    truncation: a string that is a whole number of bytes gives exactly that
 *    number, and the largest value that fits is told from the next one.
 *  - Zero, and anything that truncates to zero ("7bit", "0.5us"), is refused:
 *    a shaper never wants a zero rate, time or size.
 *  - Output never uses exponent form: tc's "%.3g" prints "1e+03ms" and
 *    "4.29e+03s", which our own parser refuses. We print "1s" and "4290s".
 *
 * Errors: -EINVAL for a string that is not a rate, time, size or number;
 * -ERANGE for one that is, but whose value is zero or does not fit.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "shape/units.h"

/* value = number * mul / div; div is 1 but for "bit", which is 1/8 byte. */
struct unit {
	const char *name;
	uint64_t mul;
	uint64_t div;
};

/* tc's rate table (lib/utils_math.c), in bytes per second. */
static const struct unit rate_units[] = {
	{ "bit",	1,				8 },
	{ "kbit",	1000ULL / 8,			1 },
	{ "mbit",	1000000ULL / 8,			1 },
	{ "gbit",	1000000000ULL / 8,		1 },
	{ "tbit",	1000000000000ULL / 8,		1 },
	{ "kibit",	(1ULL << 10) / 8,		1 },
	{ "mibit",	(1ULL << 20) / 8,		1 },
	{ "gibit",	(1ULL << 30) / 8,		1 },
	{ "tibit",	(1ULL << 40) / 8,		1 },
	{ "bps",	1,				1 },
	{ "kbps",	1000ULL,			1 },
	{ "mbps",	1000000ULL,			1 },
	{ "gbps",	1000000000ULL,			1 },
	{ "tbps",	1000000000000ULL,		1 },
	{ "kibps",	1ULL << 10,			1 },
	{ "mibps",	1ULL << 20,			1 },
	{ "gibps",	1ULL << 30,			1 },
	{ "tibps",	1ULL << 40,			1 },
	{ NULL }
};

/* tc's get_time(), in microseconds; "" is a bare number. */
static const struct unit time_units[] = {
	{ "",		1,		1 },
	{ "s",		1000000,	1 },
	{ "sec",	1000000,	1 },
	{ "secs",	1000000,	1 },
	{ "ms",		1000,		1 },
	{ "msec",	1000,		1 },
	{ "msecs",	1000,		1 },
	{ "us",		1,		1 },
	{ "usec",	1,		1 },
	{ "usecs",	1,		1 },
	{ NULL }
};

/*
 * tc's get_size(), in bytes; "" is a bare number. Sizes are binary, and the
 * "bit" forms are that divided by 8 (tc computes 1024/8 in integers, so
 * "1kbit" is 128 bytes, not 125).
 */
static const struct unit size_units[] = {
	{ "",		1,			1 },
	{ "b",		1,			1 },
	{ "k",		1ULL << 10,		1 },
	{ "kb",		1ULL << 10,		1 },
	{ "m",		1ULL << 20,		1 },
	{ "mb",		1ULL << 20,		1 },
	{ "g",		1ULL << 30,		1 },
	{ "gb",		1ULL << 30,		1 },
	{ "kbit",	(1ULL << 10) / 8,	1 },
	{ "mbit",	(1ULL << 20) / 8,	1 },
	{ "gbit",	(1ULL << 30) / 8,	1 },
	{ NULL }
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Not strcasecmp(): its idea of case follows the locale. */
static bool ascii_caseeq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a;
		char y = *b >= 'A' && *b <= 'Z' ? *b - 'A' + 'a' : *b;

		if (x != y)
			return false;
	}
	return *a == *b;
}

struct decimal {
	const char *whole;
	size_t nwhole;
	const char *frac;
	size_t nfrac;
};

/*
 * Split "<decimal><unit>" and find the unit, before any arithmetic, so that
 * a malformed string is -EINVAL however large its number is.
 */
static int split_decimal(const char *s, const struct unit *units,
			 struct decimal *d, const struct unit **unit)
{
	const char *p = s;
	const struct unit *u;

	if (!s)
		return -EINVAL;

	d->whole = p;
	while (is_digit(*p))
		p++;
	d->nwhole = p - d->whole;
	d->frac = p;
	d->nfrac = 0;
	if (*p == '.') {
		d->frac = ++p;
		while (is_digit(*p))
			p++;
		d->nfrac = p - d->frac;
	}
	if (d->nwhole + d->nfrac == 0)
		return -EINVAL;

	for (u = units; u->name; u++) {
		if (ascii_caseeq(p, u->name)) {
			*unit = u;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * floor(d * u->mul / u->div), refusing anything above max or equal to 0.
 *
 * Integers, not doubles as in tc: there "8.008kbit" comes out one byte
 * short (1000, not 1001) and UINT64_MAX cannot be told from UINT64_MAX + 1.
 * Every unit has mul <= 2^40 and div <= 8, so no intermediate value here
 * exceeds 10 * 2^40.
 */
static int scale_decimal(const struct decimal *d, const struct unit *u,
			 uint64_t max, uint64_t *out)
{
	uint64_t whole = 0, rem = 0, frac = 0, t;
	size_t i;

	/* Invariant: whole * div + rem == (digits so far) * mul, rem < div. */
	for (i = 0; i < d->nwhole; i++) {
		t = 10 * rem + (uint64_t)(d->whole[i] - '0') * u->mul;
		if (t / u->div > max || whole > (max - t / u->div) / 10)
			return -ERANGE;
		whole = 10 * whole + t / u->div;
		rem = t % u->div;
	}

	/*
	 * floor(0.f1f2...fn * mul), from the last digit back:
	 * floor((fi * mul + x) / 10) only needs floor(x) of the digits after.
	 */
	for (i = d->nfrac; i > 0; i--)
		frac = ((uint64_t)(d->frac[i - 1] - '0') * u->mul + frac) / 10;

	t = (rem + frac) / u->div;
	if (whole > max - t)
		return -ERANGE;
	if (whole + t == 0)
		return -ERANGE;
	*out = whole + t;
	return 0;
}

static int parse_units(const char *s, const struct unit *units, uint64_t max,
		       uint64_t *out)
{
	const struct unit *u;
	struct decimal d;
	int r;

	r = split_decimal(s, units, &d, &u);
	if (r < 0)
		return r;
	return scale_decimal(&d, u, max, out);
}

int parse_rate(const char *s, uint64_t *bytes_per_sec)
{
	/* No "" entry in rate_units: see the top of this file. */
	return parse_units(s, rate_units, RATE_MAX_BYTES, bytes_per_sec);
}

/* parse_units into a u32, written only on success. */
static int parse_units32(const char *s, const struct unit *units, uint32_t *out)
{
	uint64_t v;
	int r;

	r = parse_units(s, units, UINT32_MAX, &v);
	if (r < 0)
		return r;
	*out = (uint32_t)v;
	return 0;
}

int parse_time(const char *s, uint32_t *usec)
{
	return parse_units32(s, time_units, usec);
}

int parse_size(const char *s, uint32_t *bytes)
{
	return parse_units32(s, size_units, bytes);
}

int parse_int_range(const char *s, long min, long max, long *out)
{
	unsigned long mag = 0, limit = LONG_MAX;
	bool neg = false, overflow = false;
	const char *p = s;
	long v;

	if (!s || min > max)
		return -EINVAL;

	if (*p == '-' || *p == '+') {
		neg = *p == '-';
		p++;
	}
	if (!is_digit(*p))
		return -EINVAL;
	if (neg)
		limit = (unsigned long)LONG_MAX + 1;

	/* Keep scanning past an overflow: trailing garbage is still -EINVAL. */
	for (; is_digit(*p); p++) {
		unsigned long digit = *p - '0';

		if (overflow || mag > (limit - digit) / 10)
			overflow = true;
		else
			mag = 10 * mag + digit;
	}
	if (*p)
		return -EINVAL;
	if (overflow)
		return -ERANGE;

	/* -(long)mag overflows for LONG_MIN. */
	if (!neg)
		v = mag;
	else if (mag == 0)
		v = 0;
	else
		v = -(long)(mag - 1) - 1;

	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

void format_rate(char *buf, size_t len, uint64_t bytes_per_sec)
{
	static const char *const prefix[] = { "", "K", "M", "G", "T" };
	uint64_t b = bytes_per_sec, v;
	unsigned int i;

	if (!len)
		return;

	/*
	 * tc's print_rate(): step up by 1000 while the value is an exact
	 * multiple, or while it is large enough (>= 10^6) that dropping the
	 * remainder loses under 0.1%. tc starts from bytes * 8, which wraps
	 * above 2^61 bytes/s; (8b) % 1000 == 8 (b % 125) and (8b) / 1000 ==
	 * b / 125, so the first step is taken on bytes instead.
	 */
	if (b < 125 || (b % 125 && b < 125000)) {
		v = b * 8;
		i = 0;
	} else {
		v = b / 125;
		for (i = 1; i < 4; i++) {
			if (v < 1000 || (v % 1000 && v < 1000000))
				break;
			v /= 1000;
		}
	}
	snprintf(buf, len, "%" PRIu64 "%sbit", v, prefix[i]);
}

/*
 * tc prints times with "%.3g". Two things not to inherit: printf's decimal
 * separator follows LC_NUMERIC (tc's is always '.'), and once the value
 * rounds to 1000 "%.3g" turns to exponent form, for which this returns
 * false so that the caller moves on to the next unit.
 */
static bool format_3g(char *num, size_t len, double v)
{
	bool dot = false;
	char raw[64];
	size_t i, o = 0;

	snprintf(raw, sizeof(raw), "%.3g", v);
	if (strchr(raw, 'e'))
		return false;

	/* A separator may be several bytes; they all become one '.'. */
	for (i = 0; raw[i] && o + 1 < len; i++) {
		if (is_digit(raw[i])) {
			num[o++] = raw[i];
		} else if (!dot) {
			num[o++] = '.';
			dot = true;
		}
	}
	num[o] = '\0';
	return true;
}

void format_time(char *buf, size_t len, uint32_t usec)
{
	char num[UNITS_BUFSZ];

	if (!len)
		return;

	if (usec < 1000)
		snprintf(buf, len, "%" PRIu32 "us", usec);
	else if (usec < 1000000 && format_3g(num, sizeof(num), usec / 1e3))
		snprintf(buf, len, "%sms", num);
	else if (format_3g(num, sizeof(num), usec / 1e6))
		snprintf(buf, len, "%ss", num);
	else	/* >= 999.5s: whole seconds, still three significant digits */
		snprintf(buf, len, "%" PRIu64 "s",
			 ((uint64_t)usec + 5000000) / 10000000 * 10);
}

/*
 * For tc's sprint_size(): is sz within slack bytes of a whole number of
 * 2^shift units? tc rounds with rint(), so a tie goes to the even count.
 * Integers rather than tc's doubles, which lose bytes above 2^53.
 */
static bool near_multiple(uint64_t sz, unsigned int shift, uint64_t slack,
			  uint64_t *count)
{
	uint64_t unit = 1ULL << shift;
	uint64_t q = sz >> shift, r = sz & (unit - 1);

	if (sz < unit)
		return false;
	if (r > unit / 2 || (r == unit / 2 && (q & 1))) {
		q++;
		r = unit - r;
	}
	if (r >= slack)
		return false;
	*count = q;
	return true;
}

void format_size(char *buf, size_t len, uint64_t bytes)
{
	uint64_t n;

	if (!len)
		return;

	/* tc prints the count with "%g", which is the same up to 999999 units. */
	if (near_multiple(bytes, 30, 1024, &n))
		snprintf(buf, len, "%" PRIu64 "Gb", n);
	else if (near_multiple(bytes, 20, 1024, &n))
		snprintf(buf, len, "%" PRIu64 "Mb", n);
	else if (near_multiple(bytes, 10, 16, &n))
		snprintf(buf, len, "%" PRIu64 "Kb", n);
	else
		snprintf(buf, len, "%" PRIu64 "b", bytes);
}
