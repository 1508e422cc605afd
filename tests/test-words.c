// SPDX-License-Identifier: GPL-2.0-or-later
/* The words of `set` (and of the configuration's keys), parsed without a kernel. */
#include <errno.h>
#include <string.h>
#include <glib.h>

#include "shape/words.h"

static void parse_ok(const char *line, struct shape_request *req)
{
	g_auto(GStrv) argv = g_strsplit(line, " ", -1);
	char err[256] = "";
	int r;

	r = shape_words_parse((int)g_strv_length(argv), argv, req, err, sizeof(err));
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
		g_assert_cmpint(shape_words_parse((int)g_strv_length(argv), argv, &r, err, sizeof(err)),
				==, -EINVAL);
		g_assert_nonnull(strstr(err, t[i].says));
		g_assert_null(strchr(err, '\n'));
		/* nothing written on failure */
		g_assert_cmpint(r.egress, ==, 77);
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/shape/words/accept", test_accept);
	g_test_add_func("/shape/words/reject", test_reject);
	return g_test_run();
}
