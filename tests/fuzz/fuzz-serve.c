/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for what serve reads from its clients and its command
 * line (serve/serve.h): a load request's seconds=S (the query value
 * libmicrohttpd decoded) and a `listen ADDR [any-source]` clause. Beyond not
 * crashing: an accepted S is positive and at most the cap, a refused one
 * leaves *out alone; an accepted listen clause took one or two words, never
 * a wildcard address without `any-source`, and prints within its buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const double caps[] = { 60, 0.001, 1e300 };

static void check_seconds(const char *s, size_t which)
{
	double cap = caps[which % (sizeof(caps) / sizeof(caps[0]))], out = -1;
	int r = serve_parse_seconds(s, cap, &out);

	if (r < 0) {
		require(r == -EINVAL);
		require(out == -1);
		return;
	}
	require(r == 0);
	require(out > 0 && out <= cap);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The bytes up to the first NUL as the address word, the rest as the next one. */
static void check_listen(const char *addr, const char *next)
{
	struct serve_addr a = { .family = -1 };
	char err[256] = "", shown[SERVE_ADDR_STR_SIZE];
	int r = serve_listen_parse(addr, next, &a, err, sizeof(err));

	if (r < 0) {
		require(r == -EINVAL);
		require(a.family == -1);
		require(err[0] && !strchr(err, '\n')); /* one line, the word escaped */
		return;
	}
	require(r == 1 || r == 2);
	require(a.family == AF_INET || a.family == AF_INET6);
	require(a.any_source == (r == 2));
	require(r == 1 || !strcmp(next, "any-source"));
	if (all_zero(a.addr, a.family == AF_INET ? 4 : 16))
		require(a.any_source);
	serve_addr_str(&a, shown, sizeof(shown));
	require(strlen(shown) < sizeof(shown));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* NUL-terminated, as libmicrohttpd and argv give them */
	char *s = malloc(size + 2);
	size_t first;

	require(s);
	memcpy(s, data, size);
	s[size] = s[size + 1] = '\0';
	first = strlen(s);
	check_seconds(s, size);
	check_listen(s, first < size ? s + first + 1 : NULL);
	free(s);
	return 0;
}
