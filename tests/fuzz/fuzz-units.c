/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for the unit parsers. Beyond not crashing, whatever a
 * parser accepts must print (into any buffer size) and parse back to a value
 * near it: that is the promise `wgshape show` output makes to `wgshape set`.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape/units.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


typedef void (*format_fn)(char *buf, size_t len, uint64_t v);

/*
 * Into a heap buffer of exactly len bytes, so that ASan sees a write past
 * it; the result must be a NUL-terminated prefix of the full text.
 */
static void check_format_len(format_fn format, uint64_t v, size_t len,
			     const char *full)
{
	char *buf;

	if (len == 0) {
		format(NULL, 0, v);
		return;
	}
	buf = malloc(len);
	require(buf);
	format(buf, len, v);
	require(strlen(buf) < len);
	require(strncmp(buf, full, strlen(buf)) == 0);
	free(buf);
}

static void format_time64(char *buf, size_t len, uint64_t v)
{
	format_time(buf, len, (uint32_t)v);
}

static void check_rate(const char *s, size_t len)
{
	char buf[UNITS_BUFSZ];
	uint64_t v, back;

	if (parse_rate(s, &v) < 0)
		return;
	require(v >= 1);
	format_rate(buf, sizeof(buf), v);
	require(strlen(buf) < sizeof(buf) - 1);
	check_format_len(format_rate, v, len, buf);

	/* Printing drops under 0.1% at each of up to four steps of 1000. */
	require(parse_rate(buf, &back) == 0);
	require(back <= v && v - back <= v / 1000 * 4 + 1);
}

static void check_time(const char *s, size_t len)
{
	char buf[UNITS_BUFSZ];
	uint32_t v, back;
	uint32_t diff;

	if (parse_time(s, &v) < 0)
		return;
	require(v >= 1);
	format_time(buf, sizeof(buf), v);
	require(strlen(buf) < sizeof(buf) - 1);
	check_format_len(format_time64, v, len, buf);

	/* Three significant digits: off by at most half of the third. */
	require(parse_time(buf, &back) == 0);
	diff = back > v ? back - v : v - back;
	require(diff <= v / 1000 * 5 + 1);
}

static void check_size(const char *s, size_t len)
{
	char buf[UNITS_BUFSZ];
	uint32_t v, back;
	uint32_t diff;
	int r;

	if (parse_size(s, &v) < 0)
		return;
	require(v >= 1);
	format_size(buf, sizeof(buf), v);
	require(strlen(buf) < sizeof(buf) - 1);
	check_format_len(format_size, v, len, buf);

	/*
	 * tc prints a size within 1023 bytes of a whole Mb or Gb as that, and
	 * so would we: just under 4Gb becomes "4Gb", one byte more than a
	 * size can be. Known, and as tc does.
	 */
	r = parse_size(buf, &back);
	if (r == -ERANGE && v > UINT32_MAX - 1023)
		return;
	require(r == 0);
	diff = back > v ? back - v : v - back;
	require(diff <= 1023);
}

static void check_int(const char *s)
{
	long v;

	if (parse_int_range(s, -1000, 1000, &v) == 0)
		require(v >= -1000 && v <= 1000);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	size_t len = size % (UNITS_BUFSZ + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	check_rate(s, len);
	check_time(s, len);
	check_size(s, len);
	check_int(s);

	free(s);
	return 0;
}
