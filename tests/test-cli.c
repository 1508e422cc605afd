// SPDX-License-Identifier: GPL-2.0-or-later
/* The command line's own words (tune's arguments), parsed without a kernel. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <glib.h>

#include "cli/cli.h"

/* The parsed args point into the words: they live until the next call. */
static int tune_parse(const char *line, struct tune_args *a, char *err, size_t errlen)
{
	static GStrv argv;

	g_strfreev(argv);
	argv = *line ? g_strsplit(line, " ", -1) : g_new0(char *, 1);
	return tune_args_parse((int)g_strv_length(argv), argv, a, err, errlen);
}

static void test_tune_args(void)
{
	struct tune_args a;
	char err[256];

	g_assert_cmpint(tune_parse("server 10.0.0.1", &a, err, sizeof(err)), ==, 0);
	g_assert_true(a.egress);
	g_assert_false(a.ingress);
	g_assert_cmpint(a.family, ==, AF_INET);
	g_assert_cmpuint(a.streams, ==, 4);
	g_assert_cmpstr(a.server, ==, "10.0.0.1");

	g_assert_cmpint(tune_parse("ingress server fd00::1 ipv6 streams 8 target 10ms save "
				   "plot /tmp/x.svg",
				   &a, err, sizeof(err)),
			==, 0);
	g_assert_false(a.egress);
	g_assert_true(a.ingress);
	g_assert_cmpint(a.family, ==, AF_INET6);
	g_assert_cmpuint(a.streams, ==, 8);
	g_assert_cmpuint(a.target_us, ==, 10000);
	g_assert_true(a.save);
	g_assert_cmpstr(a.plot, ==, "/tmp/x.svg");
	g_assert_null(a.network);
	g_assert_cmpint(tune_parse("server h save network home-2g", &a, err, sizeof(err)), ==, 0);
	g_assert_true(a.save);
	g_assert_cmpstr(a.network, ==, "home-2g");

	g_assert_cmpint(tune_parse("both ping 10.0.0.1 download http://h/f upload http://h/u", &a,
				   err, sizeof(err)),
			==, 0);
	g_assert_true(a.egress && a.ingress);
	g_assert_false(a.server_download);

	/* client download: the download shaped at the server, alone or with egress */
	g_assert_cmpint(tune_parse("client download server 10.0.0.1", &a, err, sizeof(err)), ==, 0);
	g_assert_true(a.server_download);
	g_assert_false(a.egress || a.ingress);
	g_assert_null(a.download_url);
	g_assert_cmpint(tune_parse("egress client download ping h download http://h/f upload "
				   "http://h/u",
				   &a, err, sizeof(err)),
			==, 0);
	g_assert_true(a.server_download && a.egress);
	g_assert_false(a.ingress);
	g_assert_cmpstr(a.download_url, ==, "http://h/f");

	static const struct {
		const char *line, *says;
	} bad[] = {
		{ "", "give server HOST" },
		{ "server", "server: missing" },
		{ "server h streams 0", "streams: '0'" },
		{ "server h streams 17", "streams: '17'" },
		{ "server h target 2s", "target: '2s'" },
		{ "server h ping h", "not both" },
		{ "ping h", "egress needs upload URL" },
		{ "ingress ping h upload http://x/", "ingress needs download URL" },
		{ "server h fast", "'fast' is not an option" },
		/* a malformed far end is a usage error, before any interface is looked at */
		{ "server 1.2.3.4:0", "server: '1.2.3.4:0' is not" },
		{ "server [::1", "server: '[::1' is not" },
		{ "ping a;b download http://x/ ingress", "ping: " },
		{ "ingress ping h download ftp://x/", "download: 'ftp://x/' is not" },
		{ "ingress ping h download http://", "download: " },
		{ "ping h upload file:///etc/passwd", "upload: " },
		{ "client server h", "client: expected client download" },
		{ "client", "client: expected client download" },
		{ "client download ping h upload http://x/", "client download needs download URL" },
		{ "server h network home", "network NAME says where save keeps the result" },
		{ "server h save network", "network: missing" },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_test_message("%s", bad[i].line);
		g_assert_cmpint(tune_parse(bad[i].line, &a, err, sizeof(err)), ==, -EINVAL);
		g_assert_nonnull(strstr(err, bad[i].says));
	}
	/* hosts with a space or a newline, as a shell passes them */
	static const char *const hosts[] = { "a b", "a\nb", "h\x1b[2J", "" };
	for (size_t i = 0; i < G_N_ELEMENTS(hosts); i++) {
		char *argv[] = { "server", (char *)hosts[i], NULL };

		g_assert_cmpint(tune_args_parse(2, argv, &a, err, sizeof(err)), ==, -EINVAL);
		g_assert_nonnull(strstr(err, "server: "));
		g_assert_null(strchr(err, '\n'));
		g_assert_null(strchr(err, '\x1b'));
	}
}

static void test_tune_server(void)
{
	static const struct {
		const char *in, *host;
		int port; /* -1: refused */
	} t[] = {
		{ "10.0.0.1", "10.0.0.1", 4780 },	{ "10.0.0.1:80", "10.0.0.1", 80 },
		{ "vpn.example:8080", "vpn.example", 8080 }, { "fd00::1", "fd00::1", 4780 },
		{ "[fd00::1]", "fd00::1", 4780 },	{ "[fd00::1]:9", "fd00::1", 9 },
		{ "h:0", NULL, -1 },			{ "h:65536", NULL, -1 },
		{ "h:x", NULL, -1 },			{ ":80", NULL, -1 },
		{ "[]:80", NULL, -1 },			{ "[fd00::1", NULL, -1 },
		{ "[fd00::1]x", NULL, -1 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *host = NULL;
		uint16_t port = 0;
		int r = tune_split_server(t[i].in, &host, &port);

		g_test_message("%s", t[i].in);
		if (t[i].port < 0) {
			g_assert_cmpint(r, ==, -EINVAL);
			continue;
		}
		g_assert_cmpint(r, ==, 0);
		g_assert_cmpstr(host, ==, t[i].host);
		g_assert_cmpint(port, ==, t[i].port);
	}
}

/*
 * set's forms: an interface may be named client, and the README's commands
 * work for it (set client egress 85mbit; set client download 20mbit, the
 * interface left out; set client client download 20mbit, named).
 */
static void test_set_args(void)
{
	static const struct {
		const char *line;
		int form; /* -1: refused */
		const char *ifname; /* NULL: left out */
		int at;
		const char *says;
	} t[] = {
		{ "wg0 egress 85mbit", SET_SHAPE, "wg0", 1, NULL },
		{ "client egress 85mbit", SET_SHAPE, "client", 1, NULL },
		{ "client ingress 80mbit", SET_SHAPE, "client", 1, NULL },
		{ "client overhead auto", SET_SHAPE, "client", 1, NULL },
		{ "client peer KEY download 5mbit", SET_PEER, "client", 1, NULL },
		{ "wg0 peer KEY download 5mbit", SET_PEER, "wg0", 1, NULL },
		{ "wg0 client download 20mbit", SET_CLIENT, "wg0", 1, NULL },
		{ "client client download 20mbit", SET_CLIENT, "client", 1, NULL },
		{ "client client download default server 10.0.0.2", SET_CLIENT, "client", 1, NULL },
		{ "client download 20mbit", SET_CLIENT, NULL, 0, NULL },
		{ "client download default server 10.0.0.2", SET_CLIENT, NULL, 0, NULL },
		/* what to say: the words left; set_client says what client needs */
		{ "client client", SET_CLIENT, "client", 1, NULL },
		{ "client", -1, NULL, 0, "'client' alone: ask the server with IFACE client download" },
		{ "wg0", -1, NULL, 0, "needs IFACE and what to set" },
		{ "", -1, NULL, 0, "needs IFACE and what to set" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_auto(GStrv) argv = *t[i].line ? g_strsplit(t[i].line, " ", -1) :
						  g_new0(char *, 1);
		struct set_args a = { .form = SET_SHAPE, .ifname = "unset", .at = -1 };
		char err[256] = "";
		int r = set_args_parse((int)g_strv_length(argv), argv, &a, err, sizeof(err));

		g_test_message("set %s", t[i].line);
		if (t[i].form < 0) {
			g_assert_cmpint(r, ==, -EINVAL);
			g_assert_nonnull(strstr(err, t[i].says));
			continue;
		}
		g_assert_cmpint(r, ==, 0);
		g_assert_cmpint(a.form, ==, t[i].form);
		g_assert_cmpstr(a.ifname, ==, t[i].ifname);
		g_assert_cmpint(a.at, ==, t[i].at);
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/cli/tune/args", test_tune_args);
	g_test_add_func("/cli/tune/server", test_tune_server);
	g_test_add_func("/cli/set/args", test_set_args);
	return g_test_run();
}
