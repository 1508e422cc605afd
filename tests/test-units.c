/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit parsing and printing against tc's behaviour. Where a row's expectation
 * differs from what tc does, the row says so; src/units.c says why.
 *
 * Each table is one test, and every failing row is reported, not just the
 * first.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include <glib.h>

#include "shape/units.h"

#define check(cond, ...)						\
	do {								\
		if (!(cond))						\
			g_test_fail_printf(__VA_ARGS__);		\
	} while (0)

struct u64_case {
	const char *in;
	uint64_t want;
};

struct reject_case {
	const char *in;
	int err;
};

struct format_case {
	uint64_t in;
	const char *want;
};

/* rate */

static const struct u64_case rate_accept[] = {
	{ "85mbit",	10625000 },
	{ "85Mbit",	10625000 },
	{ "85MBIT",	10625000 },
	{ "82mbit",	10250000 },
	{ "500kbit",	62500 },
	{ "1gbit",	125000000 },
	{ "1tbit",	125000000000ULL },
	{ "8bit",	1 },
	{ "12bit",	1 },		/* 1.5 bytes: truncated, as tc */
	{ "15bit",	1 },
	{ "16bit",	2 },
	{ "1000bit",	125 },
	{ "1kibit",	128 },
	{ "2Mibit",	262144 },
	{ "1gibit",	134217728 },
	{ "1tibit",	137438953472ULL },
	/* tc's "bps" is bytes per second, not bits */
	{ "1bps",	1 },
	{ "1Bps",	1 },
	{ "1kbps",	1000 },
	{ "10mbps",	10000000 },
	{ "10MBps",	10000000 },
	{ "1gbps",	1000000000 },
	{ "1tbps",	1000000000000ULL },
	{ "1kibps",	1024 },
	{ "1KiBps",	1024 },
	{ "1mibps",	1048576 },
	{ "1gibps",	1073741824 },
	{ "1tibps",	1099511627776ULL },
	/* decimals */
	{ "1.5mbit",	187500 },
	{ "0.5mbit",	62500 },
	{ ".5mbit",	62500 },
	{ "5.mbit",	625000 },
	{ "007mbit",	875000 },
	{ "0.008kbit",	1 },
	{ "12.9bit",	1 },
	{ "100.999bit",	12 },
	{ "1.5kibps",	1536 },
	{ "8.008kbit",	1001 },		/* tc: 1000, its double falls short */
	{ "1.0000000000000000000000000000001mbit", 125000 },
	{ "0.000000000008tbit",	1 },
	/* the top: bytes * 8 (bits/s, as JSON gives them) fits a signed 64-bit number */
	{ "1152921504606846975bps",	RATE_MAX_BYTES },
	{ "1152921504606846975.999bps",	RATE_MAX_BYTES },
	{ "1152921504606846.975kbps",	RATE_MAX_BYTES },
	{ "9223372036854775800bit",	RATE_MAX_BYTES },
	{ "9223372036854775807bit",	RATE_MAX_BYTES },
	{ "9223372036854775.807kbit",	RATE_MAX_BYTES },
	{ "9223372036.854775807gbit",	RATE_MAX_BYTES },
};

static const struct reject_case rate_reject[] = {
	{ "",			-EINVAL },
	/* a bare number: tc takes it as bit/s, we refuse (see units.c) */
	{ "85",			-EINVAL },
	{ "0",			-EINVAL },
	{ "1.5",		-EINVAL },
	{ "mbit",		-EINVAL },
	{ ".",			-EINVAL },
	{ ".mbit",		-EINVAL },
	{ "85 mbit",		-EINVAL },
	{ " 85mbit",		-EINVAL },
	{ "85mbit ",		-EINVAL },
	{ "85mbit\n",		-EINVAL },
	{ "\t85mbit",		-EINVAL },
	{ "85mbitx",		-EINVAL },
	{ "85mbits",		-EINVAL },
	{ "85kbit/s",		-EINVAL },
	{ "85mb",		-EINVAL },	/* a size unit, not a rate */
	{ "85m",		-EINVAL },
	{ "85k",		-EINVAL },
	{ "85b",		-EINVAL },
	{ "85ibit",		-EINVAL },
	{ "85pbit",		-EINVAL },
	{ "-85mbit",		-EINVAL },
	{ "+85mbit",		-EINVAL },
	{ "--85mbit",		-EINVAL },
	{ "0x10mbit",		-EINVAL },
	{ "0X10mbit",		-EINVAL },
	{ "inf",		-EINVAL },
	{ "infbit",		-EINVAL },
	{ "infinitybit",	-EINVAL },
	{ "nanbit",		-EINVAL },
	{ "NaNmbit",		-EINVAL },
	{ "1e6bit",		-EINVAL },	/* tc takes exponents; we do not */
	{ "1E3kbit",		-EINVAL },
	{ "1.2.3mbit",		-EINVAL },
	{ "1,5mbit",		-EINVAL },
	{ "85mbit85",		-EINVAL },
	{ "99999999999999999999999mbitx", -EINVAL },
	/* well-formed, but no rate a shaper can use */
	{ "0mbit",		-ERANGE },
	{ "0bit",		-ERANGE },
	{ "0bps",		-ERANGE },
	{ "0.0mbit",		-ERANGE },
	{ "000tibps",		-ERANGE },
	{ "7bit",		-ERANGE },	/* under one byte per second */
	{ "7.999bit",		-ERANGE },
	{ "0.001kbit",		-ERANGE },
	{ "0.9bps",		-ERANGE },
	{ "0.99999999999999999999bps", -ERANGE },
	/* past what bits/s in JSON (and bytes * 8) can carry */
	{ "1152921504606846976bps",	-ERANGE },
	{ "9223372036854775808bit",	-ERANGE },
	{ "9223372036.854775808gbit",	-ERANGE },
	{ "99999999999gbit",		-ERANGE },
	{ "18446744073709551615bit",	-ERANGE },
	{ "18446744073709551615bps",	-ERANGE },
	/* past uint64 bytes per second */
	{ "18446744073709551616bps",	-ERANGE },
	{ "18446744073709551616.0bps",	-ERANGE },
	{ "147573952589676412928bit",	-ERANGE },
	{ "147573952589676412.928kbit",	-ERANGE },
	{ "18446744073709551.616kbps",	-ERANGE },
	{ "200000000tbit",		-ERANGE },
	{ "99999999999999999999999mbit", -ERANGE },
	{ "99999999999999999999999999999999999999bit", -ERANGE },
};

static const struct format_case rate_format[] = {
	{ 0,			"0bit" },
	{ 1,			"8bit" },
	{ 124,			"992bit" },
	{ 125,			"1Kbit" },
	{ 126,			"1008bit" },
	{ 128,			"1024bit" },
	{ 62500,		"500Kbit" },
	{ 124999,		"999992bit" },
	{ 125000,		"1Mbit" },
	{ 187500,		"1500Kbit" },
	{ 131072,		"1048Kbit" },	/* 1mibit: tc drops the rest */
	{ 1234567,		"9876Kbit" },
	{ 10250000,		"82Mbit" },
	{ 10625000,		"85Mbit" },
	{ 123456000,		"987648Kbit" },
	{ 125000000,		"1Gbit" },
	{ 125000000000ULL,	"1Tbit" },
	{ 125000000000000ULL,	"1000Tbit" },
	/* tc wraps here (it multiplies bytes by 8 first) */
	{ UINT64_MAX,		"147573952Tbit" },
	{ 1ULL << 61,		"18446744Tbit" },
};

/* Values tc prints exactly, so that parsing gives them back. */
static const uint64_t rate_roundtrip[] = {
	1, 2, 125, 128, 62500, 124999, 10250000, 10625000, 123456000,
	125000000, 1250000000, 125000000000ULL, 125000000000000ULL,
	1152921000000000000ULL, /* near RATE_MAX_BYTES */
};

/* time */

struct u32_case {
	const char *in;
	uint32_t want;
};

static const struct u32_case time_accept[] = {
	{ "5ms",		5000 },
	{ "100us",		100 },
	{ "1s",			1000000 },
	{ "100",		100 },		/* bare: microseconds, as tc */
	{ "1",			1 },
	{ "1sec",		1000000 },
	{ "2secs",		2000000 },
	{ "3msec",		3000 },
	{ "4msecs",		4000 },
	{ "5usec",		5 },
	{ "6usecs",		6 },
	{ "5MS",		5000 },
	{ "1S",			1000000 },
	{ "1Sec",		1000000 },
	{ "7US",		7 },
	{ "1.5ms",		1500 },
	{ "0.5s",		500000 },
	{ ".5s",		500000 },
	{ "5.ms",		5000 },
	{ "1.5",		1 },
	{ "1.9us",		1 },
	{ "007ms",		7000 },
	{ "0.000249s",		249 },		/* tc: 248 */
	{ "4294967295",		UINT32_MAX },
	{ "4294967295us",	UINT32_MAX },
	{ "4294967.295ms",	UINT32_MAX },
	{ "4294.967295s",	UINT32_MAX },
	{ "4294.9672959999s",	UINT32_MAX },
};

static const struct reject_case time_reject[] = {
	{ "",			-EINVAL },
	{ "ms",			-EINVAL },
	{ ".",			-EINVAL },
	{ ".s",			-EINVAL },
	{ "5 ms",		-EINVAL },
	{ " 5ms",		-EINVAL },
	{ "5ms ",		-EINVAL },
	{ "5ms\n",		-EINVAL },
	{ "5msx",		-EINVAL },
	{ "5m",			-EINVAL },
	{ "5min",		-EINVAL },
	{ "5h",			-EINVAL },
	{ "5ns",		-EINVAL },	/* tc's get_time has no ns */
	{ "5mss",		-EINVAL },
	{ "5secss",		-EINVAL },
	{ "-5ms",		-EINVAL },
	{ "+5ms",		-EINVAL },
	{ "0x10",		-EINVAL },
	{ "0x10ms",		-EINVAL },
	{ "1e3",		-EINVAL },
	{ "1e+03ms",		-EINVAL },
	{ "inf",		-EINVAL },
	{ "nan",		-EINVAL },
	{ "1.2.3ms",		-EINVAL },
	{ "1,5ms",		-EINVAL },
	{ "99999999999999999999999sx",	-EINVAL },
	{ "0",			-ERANGE },
	{ "0ms",		-ERANGE },
	{ "0.0s",		-ERANGE },
	{ "0.5us",		-ERANGE },
	{ "0.9",		-ERANGE },
	{ "0.0000001s",		-ERANGE },
	{ "4294967296",		-ERANGE },
	{ "4294967296us",	-ERANGE },
	{ "4294967.296ms",	-ERANGE },
	{ "4294.967296s",	-ERANGE },
	{ "4295s",		-ERANGE },
	{ "99999999999999999999999s",	-ERANGE },
};

static const struct format_case time_format[] = {
	{ 0,		"0us" },
	{ 1,		"1us" },
	{ 100,		"100us" },
	{ 999,		"999us" },
	{ 1000,		"1ms" },
	{ 1230,		"1.23ms" },
	{ 1234,		"1.23ms" },
	{ 1500,		"1.5ms" },
	{ 5000,		"5ms" },
	{ 100000,	"100ms" },
	{ 999499,	"999ms" },
	{ 999500,	"1s" },		/* tc: "1e+03ms" */
	{ 999999,	"1s" },		/* tc: "1e+03ms" */
	{ 1000000,	"1s" },
	{ 1500000,	"1.5s" },
	{ 1234567,	"1.23s" },
	{ 100000000,	"100s" },
	{ 999499999,	"999s" },
	{ 999500000,	"1000s" },	/* tc: "1e+03s" */
	{ 1000000000,	"1000s" },	/* tc: "1e+03s" */
	{ 3600000000U,	"3600s" },	/* tc: "3.6e+03s" */
	{ UINT32_MAX,	"4290s" },	/* tc: "4.29e+03s" */
};

static const uint32_t time_roundtrip[] = {
	1, 100, 999, 1000, 1230, 1500, 5000, 20000, 100000, 1000000, 1500000,
	15000000, 2000000000, 4290000000U,
};

/* size */

static const struct u32_case size_accept[] = {
	{ "1500",		1500 },		/* bare: bytes, as tc */
	{ "1500b",		1500 },
	{ "1500B",		1500 },
	{ "64k",		65536 },
	{ "64kb",		65536 },
	{ "64KB",		65536 },
	{ "64Kb",		65536 },
	{ "4m",			4194304 },
	{ "4mb",		4194304 },
	{ "4Mb",		4194304 },
	{ "1g",			1073741824 },
	{ "1gb",		1073741824 },
	{ "3G",			3221225472U },
	{ "1kbit",		128 },		/* tc: 1024 / 8, not 1000 / 8 */
	{ "32kbit",		4096 },
	{ "1mbit",		131072 },
	{ "1gbit",		134217728 },
	{ "1.5k",		1536 },
	{ "0.5m",		524288 },
	{ ".5k",		512 },
	{ "1.9b",		1 },
	{ "1.9",		1 },
	{ "007k",		7168 },
	{ "4294967295",		UINT32_MAX },
	{ "4294967295b",	UINT32_MAX },
	{ "3.999999999068677425384521484375g",	UINT32_MAX },
	{ "31.999999992549419403076171875gbit",	UINT32_MAX },
};

static const struct reject_case size_reject[] = {
	{ "",			-EINVAL },
	{ "k",			-EINVAL },
	{ "b",			-EINVAL },
	{ ".",			-EINVAL },
	{ "4 m",		-EINVAL },
	{ " 4m",		-EINVAL },
	{ "4m ",		-EINVAL },
	{ "4mm",		-EINVAL },
	{ "4mbps",		-EINVAL },
	{ "4kib",		-EINVAL },
	{ "4kibit",		-EINVAL },
	{ "4t",			-EINVAL },
	{ "4tb",		-EINVAL },
	{ "4bit",		-EINVAL },	/* tc's sizes have no plain "bit" */
	{ "4mbitx",		-EINVAL },
	{ "-4m",		-EINVAL },
	{ "+4m",		-EINVAL },
	{ "0x10",		-EINVAL },
	{ "1e3",		-EINVAL },
	{ "inf",		-EINVAL },
	{ "nan",		-EINVAL },
	{ "1.2.3k",		-EINVAL },
	{ "0",			-ERANGE },
	{ "0b",			-ERANGE },
	{ "0k",			-ERANGE },
	{ "0.5b",		-ERANGE },
	{ "0.0001k",		-ERANGE },
	{ "4g",			-ERANGE },
	{ "4gb",		-ERANGE },
	{ "4294967296",		-ERANGE },
	{ "4194304k",		-ERANGE },
	{ "32gbit",		-ERANGE },
	{ "99999999999999999999999999",	-ERANGE },
};

static const struct format_case size_format[] = {
	{ 0,			"0b" },
	{ 1,			"1b" },
	{ 1023,			"1023b" },
	{ 1024,			"1Kb" },
	{ 1039,			"1Kb" },	/* within 16 bytes, as tc */
	{ 1040,			"1040b" },
	{ 1500,			"1500b" },
	{ 1536,			"1536b" },
	{ 65536,		"64Kb" },
	{ 1572864,		"1536Kb" },
	{ 4194304,		"4Mb" },
	{ 4194304 + 1023,	"4Mb" },	/* within 1024 bytes, as tc */
	{ 4194304 - 1023,	"4Mb" },
	{ 4194304 + 1024,	"4097Kb" },
	{ 1073741824,		"1Gb" },
	{ 3221225472U,		"3Gb" },
	{ UINT32_MAX,		"4Gb" },
	{ 1032721416,		"1008517Kb" },	/* tc: "1.00852e+06Kb" */
	{ 1ULL << 40,		"1024Gb" },
	{ UINT64_MAX,		"17179869184Gb" },	/* tc: "1.71799e+10Gb" */
};

static const uint32_t size_roundtrip[] = {
	1, 1500, 1024, 65536, 4096 * 1024 + 1024, 4194304, 1073741824,
	3221225472U,
};

/* The three parsers, so that accept/reject/roundtrip are written once. */
struct parser {
	const char *name;
	int (*parse)(const char *s, uint64_t *out);
	void (*format)(char *buf, size_t len, uint64_t v);
};

static int parse_rate64(const char *s, uint64_t *out)
{
	return parse_rate(s, out);
}

static int parse_time64(const char *s, uint64_t *out)
{
	uint32_t v = 0xdeadbeef;
	int r = parse_time(s, &v);

	if (r == 0)
		*out = v;
	else
		g_assert_cmpuint(v, ==, 0xdeadbeef);
	return r;
}

static int parse_size64(const char *s, uint64_t *out)
{
	uint32_t v = 0xdeadbeef;
	int r = parse_size(s, &v);

	if (r == 0)
		*out = v;
	else
		g_assert_cmpuint(v, ==, 0xdeadbeef);
	return r;
}

static void format_time64(char *buf, size_t len, uint64_t v)
{
	g_assert_cmpuint(v, <=, UINT32_MAX);
	format_time(buf, len, v);
}

static const struct parser rate_parser = { "rate", parse_rate64, format_rate };
static const struct parser time_parser = { "time", parse_time64, format_time64 };
static const struct parser size_parser = { "size", parse_size64, format_size };

static void run_accept(const struct parser *p, const struct u64_case *c,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = 0;
		int r = p->parse(c[i].in, &v);

		check(r == 0 && v == c[i].want,
		      "%s \"%s\": got %d, %" PRIu64 "; want 0, %" PRIu64,
		      p->name, c[i].in, r, v, c[i].want);
	}
}

static void run_reject(const struct parser *p, const struct reject_case *c,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = 0x5a5a5a5a5a5a5a5aULL;
		int r = p->parse(c[i].in, &v);

		check(r == c[i].err, "%s \"%s\": got %d (%s), want %d (%s)",
		      p->name, c[i].in, r, g_strerror(-r), c[i].err,
		      g_strerror(-c[i].err));
		check(v == 0x5a5a5a5a5a5a5a5aULL,
		      "%s \"%s\": output written on error", p->name, c[i].in);
	}
}

static void run_format(const struct parser *p, const struct format_case *c,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char buf[UNITS_BUFSZ];

		p->format(buf, sizeof(buf), c[i].in);
		check(strcmp(buf, c[i].want) == 0,
		      "%s %" PRIu64 ": got \"%s\", want \"%s\"",
		      p->name, c[i].in, buf, c[i].want);
	}
}

static void run_roundtrip(const struct parser *p, const uint64_t *vals,
			  size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char buf[UNITS_BUFSZ];
		uint64_t back = 0;
		int r;

		p->format(buf, sizeof(buf), vals[i]);
		r = p->parse(buf, &back);
		check(r == 0 && back == vals[i],
		      "%s %" PRIu64 " -> \"%s\" -> %d, %" PRIu64,
		      p->name, vals[i], buf, r, back);
	}
}

/*
 * Printing rounds (tc's output is short, not exact), so for any value a
 * parse of the printed form must succeed and land near it. tol is the
 * allowed relative error in 1/1000ths plus abs bytes or microseconds.
 */
static void run_roundtrip_near(const struct parser *p, uint64_t max,
			       uint64_t permille, uint64_t abs)
{
	GRand *rand = g_rand_new_with_seed(42);
	int i;

	for (i = 0; i < 100000; i++) {
		char buf[UNITS_BUFSZ];
		uint64_t v, back = 0, diff;
		int bits, r;

		/* every magnitude equally, not mostly huge values */
		bits = g_rand_int_range(rand, 0, 64);
		v = ((uint64_t)g_rand_int(rand) << 32 | g_rand_int(rand));
		v >>= bits;
		if (v > max)
			v = max;
		if (v == 0)
			v = 1;

		p->format(buf, sizeof(buf), v);
		r = p->parse(buf, &back);
		diff = back > v ? back - v : v - back;
		check(r == 0 && diff <= v / 1000 * permille + abs,
		      "%s %" PRIu64 " -> \"%s\" -> %d, %" PRIu64,
		      p->name, v, buf, r, back);
	}
	g_rand_free(rand);
}

static void u32_to_u64(const struct u32_case *in, struct u64_case *out,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[i].in = in[i].in;
		out[i].want = in[i].want;
	}
}

static void test_rate_accept(void)
{
	run_accept(&rate_parser, rate_accept, G_N_ELEMENTS(rate_accept));
}

static void test_rate_reject(void)
{
	run_reject(&rate_parser, rate_reject, G_N_ELEMENTS(rate_reject));
}

static void test_rate_format(void)
{
	run_format(&rate_parser, rate_format, G_N_ELEMENTS(rate_format));
}

static void test_rate_roundtrip(void)
{
	run_roundtrip(&rate_parser, rate_roundtrip,
		      G_N_ELEMENTS(rate_roundtrip));
	/* each of up to four steps of 1000 drops under 0.1% */
	run_roundtrip_near(&rate_parser, RATE_MAX_BYTES, 4, 1);
}

static void test_time_accept(void)
{
	struct u64_case c[G_N_ELEMENTS(time_accept)];

	u32_to_u64(time_accept, c, G_N_ELEMENTS(c));
	run_accept(&time_parser, c, G_N_ELEMENTS(c));
}

static void test_time_reject(void)
{
	run_reject(&time_parser, time_reject, G_N_ELEMENTS(time_reject));
}

static void test_time_format(void)
{
	run_format(&time_parser, time_format, G_N_ELEMENTS(time_format));
}

static void test_time_roundtrip(void)
{
	uint64_t v[G_N_ELEMENTS(time_roundtrip)];
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(v); i++)
		v[i] = time_roundtrip[i];
	run_roundtrip(&time_parser, v, G_N_ELEMENTS(v));
	/* three significant digits: off by at most half of the third */
	run_roundtrip_near(&time_parser, UINT32_MAX, 5, 1);
}

static void test_size_accept(void)
{
	struct u64_case c[G_N_ELEMENTS(size_accept)];

	u32_to_u64(size_accept, c, G_N_ELEMENTS(c));
	run_accept(&size_parser, c, G_N_ELEMENTS(c));
}

static void test_size_reject(void)
{
	run_reject(&size_parser, size_reject, G_N_ELEMENTS(size_reject));
}

static void test_size_format(void)
{
	run_format(&size_parser, size_format, G_N_ELEMENTS(size_format));
}

static void test_size_roundtrip(void)
{
	uint64_t v[G_N_ELEMENTS(size_roundtrip)];
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(v); i++)
		v[i] = size_roundtrip[i];
	run_roundtrip(&size_parser, v, G_N_ELEMENTS(v));
	/*
	 * tc prints sizes within 1023 bytes of a whole Mb as that Mb; near
	 * UINT32_MAX that is "4Gb", one past what parse_size() takes, so
	 * stay below.
	 */
	run_roundtrip_near(&size_parser, UINT32_MAX - 1024, 0, 1023);
}

/* int */

struct int_case {
	const char *in;
	long min, max;
	long want;
	int err;
};

static const struct int_case int_cases[] = {
	{ "0",		-10, 10,	0,	0 },
	{ "-0",		-10, 10,	0,	0 },
	{ "+0",		-10, 10,	0,	0 },
	{ "5",		-10, 10,	5,	0 },
	{ "+5",		-10, 10,	5,	0 },
	{ "-5",		-10, 10,	-5,	0 },
	{ "-10",	-10, 10,	-10,	0 },
	{ "10",		-10, 10,	10,	0 },
	{ "007",	-10, 10,	7,	0 },	/* decimal, not octal */
	{ "-64",	-64, 256,	-64,	0 },
	{ "1500",	0, 65535,	1500,	0 },
	{ "",		-10, 10,	0,	-EINVAL },
	{ "-",		-10, 10,	0,	-EINVAL },
	{ "+",		-10, 10,	0,	-EINVAL },
	{ "--5",	-10, 10,	0,	-EINVAL },
	{ "+-5",	-10, 10,	0,	-EINVAL },
	{ "- 5",	-10, 10,	0,	-EINVAL },
	{ " 5",		-10, 10,	0,	-EINVAL },
	{ "5 ",		-10, 10,	0,	-EINVAL },
	{ "5\n",	-10, 10,	0,	-EINVAL },
	{ "5x",		-10, 10,	0,	-EINVAL },
	{ "5ms",	-10, 10,	0,	-EINVAL },
	{ "0x5",	-10, 10,	0,	-EINVAL },
	{ "5.0",	-10, 10,	0,	-EINVAL },
	{ "1e1",	-10, 10,	0,	-EINVAL },
	{ "five",	-10, 10,	0,	-EINVAL },
	{ "99999999999999999999999x", -10, 10, 0, -EINVAL },
	{ "5",		10, -10,	0,	-EINVAL },	/* empty range */
	{ "11",		-10, 10,	0,	-ERANGE },
	{ "-11",	-10, 10,	0,	-ERANGE },
	{ "-1",		0, 10,		0,	-ERANGE },
	{ "99999999999999999999999", -10, 10, 0, -ERANGE },
	{ "-99999999999999999999999", -10, 10, 0, -ERANGE },
};

static void run_int(const struct int_case *c)
{
	long v = 0x5a5a;
	int r = parse_int_range(c->in, c->min, c->max, &v);

	if (c->err)
		check(r == c->err && v == 0x5a5a,
		      "\"%s\" in [%ld, %ld]: got %d, %ld; want %d, untouched",
		      c->in, c->min, c->max, r, v, c->err);
	else
		check(r == 0 && v == c->want,
		      "\"%s\" in [%ld, %ld]: got %d, %ld; want 0, %ld",
		      c->in, c->min, c->max, r, v, c->want);
}

static void test_int_table(void)
{
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(int_cases); i++)
		run_int(&int_cases[i]);
}

/* The edges of long, whatever its width. */
static void test_int_limits(void)
{
	char *lmin = g_strdup_printf("%ld", LONG_MIN);
	char *lmax = g_strdup_printf("%ld", LONG_MAX);
	char *over = g_strdup_printf("%lu", (unsigned long)LONG_MAX + 1);
	char *under = g_strdup_printf("-%lu", (unsigned long)LONG_MAX + 2);
	const struct int_case c[] = {
		{ lmin,	LONG_MIN, LONG_MAX,	LONG_MIN,	0 },
		{ lmax,	LONG_MIN, LONG_MAX,	LONG_MAX,	0 },
		{ over,	LONG_MIN, LONG_MAX,	0,		-ERANGE },
		{ under, LONG_MIN, LONG_MAX,	0,		-ERANGE },
		{ lmin,	LONG_MIN + 1, LONG_MAX,	0,		-ERANGE },
		{ lmax,	LONG_MIN, LONG_MAX - 1,	0,		-ERANGE },
	};
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(c); i++)
		run_int(&c[i]);
	g_free(lmin);
	g_free(lmax);
	g_free(over);
	g_free(under);
}

/*
 * Formatting into short buffers: always a NUL-terminated prefix of the full
 * text, never a byte past len.
 */
static void test_format_small(void)
{
	const struct {
		const struct parser *p;
		uint64_t v;
	} c[] = {
		{ &rate_parser, 10625000 },
		{ &rate_parser, UINT64_MAX },
		{ &time_parser, 1234 },
		{ &time_parser, UINT32_MAX },
		{ &size_parser, 4194304 },
		{ &size_parser, UINT64_MAX },
	};
	size_t i, len;

	for (i = 0; i < G_N_ELEMENTS(c); i++) {
		char full[UNITS_BUFSZ];

		c[i].p->format(full, sizeof(full), c[i].v);
		g_assert_cmpuint(strlen(full), <, sizeof(full));

		for (len = 0; len <= strlen(full) + 1; len++) {
			char buf[UNITS_BUFSZ + 8];
			size_t j;

			memset(buf, 'X', sizeof(buf));
			c[i].p->format(len ? buf : NULL, len, c[i].v);
			if (len == 0) {
				/* nothing may be written, not even a NUL */
				continue;
			}
			check(strlen(buf) == MIN(len - 1, strlen(full)) &&
			      strncmp(buf, full, strlen(buf)) == 0,
			      "%s %" PRIu64 " len %zu: \"%s\", full \"%s\"",
			      c[i].p->name, c[i].v, len, buf, full);
			for (j = len; j < sizeof(buf); j++)
				check(buf[j] == 'X', "%s %" PRIu64 " len %zu: "
				      "byte %zu written", c[i].p->name,
				      c[i].v, len, j);
		}
	}
}

/* A NULL string is no number, not a crash. */
static void test_null(void)
{
	uint64_t r64;
	uint32_t r32;
	long l;

	g_assert_cmpint(parse_rate(NULL, &r64), ==, -EINVAL);
	g_assert_cmpint(parse_time(NULL, &r32), ==, -EINVAL);
	g_assert_cmpint(parse_size(NULL, &r32), ==, -EINVAL);
	g_assert_cmpint(parse_int_range(NULL, 0, 1, &l), ==, -EINVAL);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);

	g_test_add_func("/units/rate/accept", test_rate_accept);
	g_test_add_func("/units/rate/reject", test_rate_reject);
	g_test_add_func("/units/rate/format", test_rate_format);
	g_test_add_func("/units/rate/roundtrip", test_rate_roundtrip);
	g_test_add_func("/units/time/accept", test_time_accept);
	g_test_add_func("/units/time/reject", test_time_reject);
	g_test_add_func("/units/time/format", test_time_format);
	g_test_add_func("/units/time/roundtrip", test_time_roundtrip);
	g_test_add_func("/units/size/accept", test_size_accept);
	g_test_add_func("/units/size/reject", test_size_reject);
	g_test_add_func("/units/size/format", test_size_format);
	g_test_add_func("/units/size/roundtrip", test_size_roundtrip);
	g_test_add_func("/units/int/table", test_int_table);
	g_test_add_func("/units/int/limits", test_int_limits);
	g_test_add_func("/units/format/small-buffer", test_format_small);
	g_test_add_func("/units/parse/null", test_null);

	return g_test_run();
}
