// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <string.h>
#include <glib.h>

#include "shape/overhead.h"

static const struct {
	const char *name;
	struct overhead_input in;
	int ret, overhead;
	bool warn;
	const char *reason_has;
} cases[] = {
	{ "v4", { true, 1, 0, 0, 0 }, 0, 60, false, "IPv4" },
	{ "v6", { true, 0, 1, 0, 0 }, 0, 80, false, "IPv6" },
	{ "mixed takes the larger", { true, 5, 1, 0, 0 }, 0, 80, false, "the larger" },
	{ "v4 + ethernet", { true, 3, 0, 2, 14 }, 0, 74, false, "+ 14 link-overhead" },
	{ "no endpoint yet", { true, 0, 0, 4, 0 }, 0, 80, true, "no peer endpoint" },
	{ "no peers at all", { true, 0, 0, 0, 0 }, 0, 80, true, "assuming IPv6" },
	{ "tun0 is not wireguard", { false, 0, 0, 0, 0 }, 0, 0, true, "not a WireGuard" },
	{ "tun0 + link", { false, 0, 0, 0, 18 }, 0, 18, true, "not a WireGuard" },
	{ "negative link ok", { true, 1, 0, 0, -60 }, 0, 0, false, "IPv4" },
	{ "upper bound", { true, 1, 0, 0, 196 }, 0, 256, false, "IPv4" },
	{ "over 256", { true, 0, 1, 0, 177 }, -ERANGE, 0, false, NULL },
	{ "under -64", { false, 0, 0, 0, -65 }, -ERANGE, 0, false, NULL },
};

static void test_table(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct overhead_choice c = { .overhead = 12345 };
		int r = overhead_choose(&cases[i].in, &c);

		g_test_message("case %s", cases[i].name);
		g_assert_cmpint(r, ==, cases[i].ret);
		if (r < 0) {
			/* output untouched on failure */
			g_assert_cmpint(c.overhead, ==, 12345);
			continue;
		}
		g_assert_cmpint(c.overhead, ==, cases[i].overhead);
		g_assert_cmpint(c.warn, ==, cases[i].warn);
		g_assert_nonnull(strstr(c.reason, cases[i].reason_has));
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/overhead/table", test_table);
	return g_test_run();
}
