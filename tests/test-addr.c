// SPDX-License-Identifier: GPL-2.0-or-later
/* util/addr: an address literal's family from its text, and the address. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <glib.h>

#include "util/addr.h"

static void test_addr_parse(void)
{
	static const struct {
		const char *in;
		int r, family;
		const char *canon; /* inet_ntop of what was parsed */
	} t[] = {
		{ "192.0.2.1", 0, AF_INET, "192.0.2.1" },
		{ "0.0.0.0", 0, AF_INET, "0.0.0.0" },
		{ "10.8.0.1", 0, AF_INET, "10.8.0.1" },
		{ "2001:db8::1", 0, AF_INET6, "2001:db8::1" },
		{ "2001:DB8:0:0::1", 0, AF_INET6, "2001:db8::1" },
		{ "::", 0, AF_INET6, "::" },
		{ "::ffff:192.0.2.1", 0, AF_INET6, "::ffff:192.0.2.1" },
		{ "fe80::1", 0, AF_INET6, "fe80::1" },
		/* not literals, or not these: no address written */
		{ "", -EINVAL },
		{ "192.0.2", -EINVAL },
		{ "192.0.2.256", -EINVAL },
		{ "192.0.2.1:4780", -EINVAL },
		{ "[2001:db8::1]", -EINVAL },
		{ "fe80::1%wg0", -EINVAL },
		{ "2001:db8::1 ", -EINVAL },
		{ " 192.0.2.1", -EINVAL },
		{ "vpn.example.org", -EINVAL },
		{ "2001:db8:::1", -EINVAL },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		uint8_t a[16];
		char canon[INET6_ADDRSTRLEN];
		int family = -1;

		memset(a, 0xaa, sizeof(a));
		g_test_message("%s", t[i].in);
		g_assert_cmpint(addr_parse(t[i].in, &family, a), ==, t[i].r);
		if (t[i].r < 0) {
			g_assert_cmpint(family, ==, -1);
			for (size_t k = 0; k < sizeof(a); k++)
				g_assert_cmpint(a[k], ==, 0xaa);
			continue;
		}
		g_assert_cmpint(family, ==, t[i].family);
		g_assert_nonnull(inet_ntop(family, a, canon, sizeof(canon)));
		g_assert_cmpstr(canon, ==, t[i].canon);
		/* an IPv4 address takes 4 bytes: the rest is left as it was */
		if (family == AF_INET)
			g_assert_cmpint(a[4], ==, 0xaa);
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/addr/parse", test_addr_parse);
	return g_test_run();
}
