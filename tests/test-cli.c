// SPDX-License-Identifier: GPL-2.0-or-later
/* The words of `set`, parsed without a kernel. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <glib.h>

#include "cli.h"

static void parse_ok(const char *line, struct shape_request *req)
{
	g_auto(GStrv) argv = g_strsplit(line, " ", -1);
	char err[256] = "";
	int r;

	r = set_args_parse((int)g_strv_length(argv), argv, req, err, sizeof(err));
	if (r < 0)
		g_error("'%s' refused: %s", line, err);
}

static void test_accept(void)
{
	struct shape_request r;

	parse_ok("egress 82mbit", &r);
	g_assert_cmpint(r.egress, ==, DIR_SET);
	g_assert_cmpuint(r.egress_rate, ==, 82000000 / 8);
	g_assert_cmpint(r.ingress, ==, DIR_KEEP);
	/* overhead auto is the default: not in opts, so the engine computes it */
	g_assert_false(r.opts.has & CAKE_HAS_OVERHEAD);
	g_assert_cmpuint(r.opts.has, ==, 0);

	parse_ok("ingress 40mbit egress off link-overhead 14", &r);
	g_assert_cmpint(r.ingress, ==, DIR_SET);
	g_assert_cmpuint(r.ingress_rate, ==, 5000000);
	g_assert_cmpint(r.egress, ==, DIR_OFF);
	g_assert_cmpint(r.link_overhead, ==, 14);

	parse_ok("egress 1gbit overhead -64 mpu 84 rtt 50ms diffserv4 nat wash "
		 "ack-filter-aggressive memlimit 4m", &r);
	g_assert_cmpuint(r.opts.has, ==,
			 CAKE_HAS_OVERHEAD | CAKE_HAS_MPU | CAKE_HAS_RTT | CAKE_HAS_DIFFSERV |
				 CAKE_HAS_NAT | CAKE_HAS_WASH | CAKE_HAS_ACK_FILTER |
				 CAKE_HAS_MEMLIMIT);
	g_assert_cmpint(r.opts.overhead, ==, -64);
	g_assert_cmpuint(r.opts.mpu, ==, 84);
	g_assert_cmpuint(r.opts.rtt, ==, 50000);
	g_assert_cmpuint(r.opts.diffserv, ==, CAKE_DS_DIFFSERV4);
	g_assert_true(r.opts.nat);
	g_assert_true(r.opts.wash);
	g_assert_cmpuint(r.opts.ack_filter, ==, CAKE_ACKF_AGGRESSIVE);
	g_assert_cmpuint(r.opts.memlimit, ==, 4 * 1024 * 1024);

	/* later words win; "overhead auto" takes a given overhead back */
	parse_ok("egress 10mbit overhead 40 nonat nowash no-ack-filter besteffort overhead auto",
		 &r);
	g_assert_false(r.opts.has & CAKE_HAS_OVERHEAD);
	g_assert_true(r.opts.has & CAKE_HAS_NAT);
	g_assert_false(r.opts.nat);
	g_assert_cmpuint(r.opts.diffserv, ==, CAKE_DS_BESTEFFORT);

	g_assert_true(r.overhead_auto);
	parse_ok("egress 10mbit link-overhead 14", &r);
	g_assert_true(r.overhead_auto);
	parse_ok("egress 10mbit overhead auto overhead 40", &r);
	g_assert_false(r.overhead_auto);
	parse_ok("egress 10mbit", &r);
	g_assert_false(r.overhead_auto);
	/* off alone, and off with a direction set and options */
	parse_ok("egress off", &r);
	parse_ok("egress off ingress 5mbit besteffort", &r);
	g_assert_cmpint(r.ingress, ==, DIR_SET);

	/* options alone are fine: they apply to what is shaped */
	parse_ok("rtt 20ms", &r);
	g_assert_cmpint(r.egress, ==, DIR_KEEP);
	g_assert_cmpint(r.ingress, ==, DIR_KEEP);
}

static void test_reject(void)
{
	static const struct {
		const char *line;
		const char *says;
	} t[] = {
		{ "egress", "egress: missing" },
		{ "egress 0", "'0' is not a rate" },
		{ "egress -5mbit", "'-5mbit' is not a rate" },
		{ "egress 85", "'85' is not a rate" },
		{ "egress 85mbitx", "'85mbitx'" },
		{ "ingress fast", "'fast'" },
		{ "egress 1mbit overhead 300", "overhead: '300'" },
		{ "egress 1mbit overhead -65", "overhead: '-65'" },
		{ "egress 1mbit overhead 6x", "overhead: '6x'" },
		{ "egress 1mbit overhead", "missing BYTES or auto" },
		{ "egress 1mbit link-overhead 1000", "link-overhead: '1000'" },
		{ "egress 1mbit overhead 60 link-overhead 14", "only adds to overhead auto" },
		{ "egress 1mbit mpu 257", "mpu: '257'" },
		{ "egress 1mbit rtt soon", "rtt: 'soon'" },
		{ "egress 1mbit memlimit lots", "memlimit: 'lots'" },
		{ "egress 1mbit diffserv5", "'diffserv5' is not an option" },
		{ "bandwidth 1mbit", "'bandwidth' is not an option" },
		{ "egress off diffserv4", "off sets none" },
		{ "ingress off link-overhead 14", "off sets none" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_auto(GStrv) argv = g_strsplit(t[i].line, " ", -1);
		struct shape_request r = { .egress = 77 };
		char err[256] = "";

		g_test_message("%s", t[i].line);
		g_assert_cmpint(set_args_parse((int)g_strv_length(argv), argv, &r, err, sizeof(err)),
				==, -EINVAL);
		g_assert_nonnull(strstr(err, t[i].says));
		g_assert_null(strchr(err, '\n'));
		/* nothing written on failure */
		g_assert_cmpint(r.egress, ==, 77);
	}
}

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

	g_assert_cmpint(tune_parse("both ping 10.0.0.1 download http://h/f upload http://h/u", &a,
				   err, sizeof(err)),
			==, 0);
	g_assert_true(a.egress && a.ingress);

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
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_test_message("%s", bad[i].line);
		g_assert_cmpint(tune_parse(bad[i].line, &a, err, sizeof(err)), ==, -EINVAL);
		g_assert_nonnull(strstr(err, bad[i].says));
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

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/cli/set/accept", test_accept);
	g_test_add_func("/cli/set/reject", test_reject);
	g_test_add_func("/cli/tune/args", test_tune_args);
	g_test_add_func("/cli/tune/server", test_tune_server);
	return g_test_run();
}
