// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the shaping engine decides without a kernel: the IFB's name.
 */
#include <string.h>
#include <glib.h>

#include "shape/shape.h"
#include "util/ifname.h"

/* Names that fit keep "ifb4" + IFACE; longer ones never share an IFB. */
static void test_ifb_name(void)
{
	static const struct {
		const char *ifname, *ifb;
	} t[] = {
		{ "wg0", "ifb4wg0" },
		{ "a", "ifb4a" },
		{ "wg-office-01", "ifb4wg-~" }, /* 12 characters: hashed */
		{ "12345678901", "ifb412345678901" }, /* 11: fits as it is */
	};
	static const char *const alike[] = {
		"wg-office-01", "wg-office-02", "wg-office-011", "wg-office-0123",
		"123456789012", "1234567890123", "12345678901234", "123456789012345",
	};
	char ifb[IFNAME_SIZE], other[IFNAME_SIZE];

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		shape_ifb_name(t[i].ifname, ifb);
		g_assert_true(g_str_has_prefix(ifb, t[i].ifb));
		g_assert_true(ifname_is_valid(ifb));
	}
	for (size_t i = 0; i < G_N_ELEMENTS(alike); i++) {
		shape_ifb_name(alike[i], ifb);
		g_assert_cmpuint(strlen(ifb), ==, IFNAME_SIZE - 1);
		g_assert_true(ifname_is_valid(ifb));
		/* the same name, the same IFB: clear finds what set made */
		shape_ifb_name(alike[i], other);
		g_assert_cmpstr(ifb, ==, other);
		for (size_t j = 0; j < i; j++) {
			shape_ifb_name(alike[j], other);
			g_assert_cmpstr(ifb, !=, other);
		}
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/shape/ifb-name", test_ifb_name);
	return g_test_run();
}
