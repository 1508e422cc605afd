// SPDX-License-Identifier: GPL-2.0-or-later
/* Profile matching: which [network] applies, without NetworkManager. */
#include <string.h>
#include <glib.h>

#include "profile/profile.h"

static char *home5[] = { "Home Wi-Fi 5G", NULL };
static char *home24[] = { "Home Wi-Fi 2.4G", NULL };
static char *both[] = { "Home Wi-Fi 2.4G", "Home Wi-Fi 5G", NULL };
static char *ssid_cafe[] = { "CafeNet", NULL };
static char *wifi[] = { "802-11-wireless", NULL };
static char *uuid1[] = { "11111111-2222-3333-4444-555555555555", NULL };

static const struct active_net n_home5 = { "Home Wi-Fi 5G", "aaaa", "802-11-wireless", "Home5",
					   "wlan0", true };
static const struct active_net n_home24 = { "Home Wi-Fi 2.4G", "bbbb", "802-11-wireless",
					    "Home24", "wlan0", true };
static const struct active_net n_cafe = { "Cafe", "cccc", "802-11-wireless", "CafeNet", "wlan0",
					  true };
static const struct active_net n_eth = { "Wired", "11111111-2222-3333-4444-555555555555",
					 "802-3-ethernet", NULL, "eth0", false };
static const struct active_net n_tunnel_primary = { "client", "tttt", "wireguard", NULL,
						    "client", true };
static const struct active_net n_home24_secondary = { "Home Wi-Fi 2.4G", "bbbb",
						      "802-11-wireless", "Home24", "wlan1", false };
static const struct active_net n_home5_secondary = { "Home Wi-Fi 5G", "aaaa", "802-11-wireless",
						     "Home5", "wlan0", false };

static void test_matches(void)
{
	struct net_match by_id = { .ids = home5 };
	struct net_match id_and_type = { .ids = home5, .types = wifi };
	struct net_match by_ssid = { .ssids = ssid_cafe };
	struct net_match by_uuid = { .uuids = uuid1 };
	struct net_match list = { .ids = both };
	struct net_match nothing_given = { 0 };
	struct net_match any = { .any = true };

	g_assert_true(profile_net_matches(&by_id, &n_home5));
	g_assert_false(profile_net_matches(&by_id, &n_home24));
	g_assert_true(profile_net_matches(&id_and_type, &n_home5));
	g_assert_false(profile_net_matches(&id_and_type, &n_eth));
	g_assert_true(profile_net_matches(&by_ssid, &n_cafe));
	/* a key given must match: no SSID on a wired connection */
	g_assert_false(profile_net_matches(&by_ssid, &n_eth));
	g_assert_true(profile_net_matches(&by_uuid, &n_eth));
	g_assert_true(profile_net_matches(&list, &n_home5));
	g_assert_true(profile_net_matches(&list, &n_home24));
	g_assert_false(profile_net_matches(&list, &n_cafe));
	g_assert_true(profile_net_matches(&nothing_given, &n_cafe));
	g_assert_true(profile_net_matches(&any, &n_eth));
}

static void test_choose(void)
{
	/* the seed: 5G and 2.4G profiles, in that order */
	struct net_match seed[] = { { .ids = home5 }, { .ids = home24 } };
	struct net_match with_fallback[] = { { .ids = home5 }, { .any = true }, { .ids = home24 } };
	char why[256];

	struct active_net on5[] = { n_home5 };
	g_assert_cmpint(profile_choose(seed, 2, on5, 1, "client", why, sizeof(why)), ==, 0);
	g_assert_nonnull(strstr(why, "Home Wi-Fi 5G"));

	struct active_net on24[] = { n_home24 };
	g_assert_cmpint(profile_choose(seed, 2, on24, 1, "client", why, sizeof(why)), ==, 1);

	struct active_net cafe[] = { n_cafe };
	g_assert_cmpint(profile_choose(seed, 2, cafe, 1, "client", why, sizeof(why)), ==, -1);
	g_assert_cmpint(profile_choose(with_fallback, 3, cafe, 1, "client", why, sizeof(why)), ==,
			1);
	g_assert_nonnull(strstr(why, "fallback"));
	/* the fallback does not beat a real match later in the file */
	g_assert_cmpint(profile_choose(with_fallback, 3, on24, 1, "client", why, sizeof(why)), ==,
			2);

	/* nothing active at all */
	g_assert_cmpint(profile_choose(seed, 2, NULL, 0, "client", why, sizeof(why)), ==, -1);

	/* the primary wins over file order: 2.4G primary, 5G also up */
	struct active_net two[] = { n_home5_secondary, n_home24 };
	g_assert_cmpint(profile_choose(seed, 2, two, 2, "client", why, sizeof(why)), ==, 1);
	g_assert_nonnull(strstr(why, "primary"));

	/* the tunnel's own connection is primary: not a network; file order then */
	struct active_net tun[] = { n_tunnel_primary, n_home24_secondary, n_home5_secondary };
	struct net_match by_tunnel_name[] = { { .ids = (char *[]){ "client", NULL } },
					      { .ids = home5 } };
	g_assert_cmpint(profile_choose(seed, 2, tun, 3, "client", why, sizeof(why)), ==, 0);
	g_assert_cmpint(profile_choose(by_tunnel_name, 2, tun, 3, "client", why, sizeof(why)),
			==, 1);

	/* primary matches nothing, a secondary does */
	struct active_net mixed[] = { n_cafe, n_home5_secondary };
	g_assert_cmpint(profile_choose(seed, 2, mixed, 2, "client", why, sizeof(why)), ==, 0);
	g_assert_nonnull(strstr(why, "active connection"));
}

static void test_hostile_names(void)
{
	/* Names are data: matched byte for byte, never interpreted. */
	static char *evil[] = { "Home $(touch /tmp/pwned) \"5G\"\n", NULL };
	struct net_match m = { .ids = evil };
	struct active_net same = { "Home $(touch /tmp/pwned) \"5G\"\n", "u", "802-3-ethernet",
				   NULL, "eth0", true };
	struct active_net unexpanded = { "Home  \"5G\"\n", "u", "802-3-ethernet", NULL, "eth0",
					 true };
	char why[64];

	g_assert_true(profile_net_matches(&m, &same));
	g_assert_false(profile_net_matches(&m, &unexpanded));
	/* a long name is cut in why, never overflows */
	g_assert_cmpint(profile_choose(&m, 1, &same, 1, "client", why, sizeof(why)), ==, 0);
	g_assert_cmpuint(strlen(why), <, sizeof(why));
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/profile/matches", test_matches);
	g_test_add_func("/profile/choose", test_choose);
	g_test_add_func("/profile/hostile-names", test_hostile_names);
	return g_test_run();
}
