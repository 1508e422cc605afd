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

	parse_ok("egress 10mbit leaf fq_codel", &r);
	g_assert_cmpuint(r.leaf, ==, PEER_LEAF_FQ_CODEL);
	g_assert_cmpuint(r.opts.has, ==, 0);
	parse_ok("leaf lazy", &r);
	g_assert_cmpuint(r.leaf, ==, PEER_LEAF_LAZY);

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

/* Every word of every family, alone after a rate: what the table says it sets. */
static void test_families(void)
{
	for (enum cake_family f = 0; f < CAKE_WORDS_MAX; f++) {
		for (uint32_t v = 0; cake_word(f, v); v++) {
			g_autofree char *line = g_strdup_printf("egress 1mbit %s", cake_word(f, v));
			struct shape_request r;
			uint32_t got;

			parse_ok(line, &r);
			g_assert_true(cake_word_get(&r.opts, f, &got));
			g_assert_cmpuint(got, ==, v);
		}
	}
}

static void test_new_words(void)
{
	struct shape_request r;

	parse_ok("egress 1mbit dual-dsthost no-split-gso fwmark 0xff00 satellite ptm", &r);
	g_assert_cmphex(r.opts.has, ==,
			CAKE_HAS_FLOW_MODE | CAKE_HAS_SPLIT_GSO | CAKE_HAS_FWMARK | CAKE_HAS_RTT |
				CAKE_HAS_ATM);
	g_assert_cmpuint(r.opts.flow_mode, ==, CAKE_FM_DUAL_DSTHOST);
	g_assert_false(r.opts.split_gso);
	g_assert_cmphex(r.opts.fwmark, ==, 0xff00);
	g_assert_cmpuint(r.opts.rtt, ==, 1000000);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_PTM);

	/* rtt takes a preset as its value too (the configuration's rtt = internet) */
	parse_ok("egress 1mbit rtt interplanetary", &r);
	g_assert_cmpuint(r.opts.rtt, ==, 1000000000);
	parse_ok("egress 1mbit datacentre rtt 20ms", &r);
	g_assert_cmpuint(r.opts.rtt, ==, 20000);
	parse_ok("egress 1mbit rtt 20ms lan", &r);
	g_assert_cmpuint(r.opts.rtt, ==, 1000);

	/* fwmark as tc reads it */
	parse_ok("egress 1mbit fwmark 255", &r);
	g_assert_cmphex(r.opts.fwmark, ==, 255);
	parse_ok("egress 1mbit fwmark 0xFFFFFFFF", &r);
	g_assert_cmphex(r.opts.fwmark, ==, 0xffffffff);
	parse_ok("egress 1mbit fwmark 0", &r);
	g_assert_true(r.opts.has & CAKE_HAS_FWMARK);
	g_assert_cmphex(r.opts.fwmark, ==, 0);
}

/* raw, conservative, ethernet against overhead auto, a hand-set overhead and each other. */
static void test_overhead_words(void)
{
	struct shape_request r;

	/* raw: no compensation at all, a hand-set overhead of 0 */
	parse_ok("egress 1mbit raw", &r);
	g_assert_cmphex(r.opts.has, ==, CAKE_HAS_OVERHEAD | CAKE_HAS_RAW | CAKE_HAS_ATM);
	g_assert_true(r.opts.raw);
	g_assert_cmpint(r.opts.overhead, ==, 0);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_NONE);
	g_assert_false(r.overhead_auto);
	parse_ok("egress 1mbit overhead raw", &r);
	g_assert_true(r.opts.raw);
	g_assert_cmphex(r.opts.has, ==, CAKE_HAS_OVERHEAD | CAKE_HAS_RAW | CAKE_HAS_ATM);
	/* the later of raw and another overhead counts */
	parse_ok("egress 1mbit raw overhead auto", &r);
	g_assert_false(r.opts.has & (CAKE_HAS_OVERHEAD | CAKE_HAS_RAW));
	g_assert_false(r.opts.raw);
	g_assert_true(r.overhead_auto);
	parse_ok("egress 1mbit raw overhead 40", &r);
	g_assert_cmphex(r.opts.has & (CAKE_HAS_OVERHEAD | CAKE_HAS_RAW), ==, CAKE_HAS_OVERHEAD);
	g_assert_false(r.opts.raw);
	g_assert_cmpint(r.opts.overhead, ==, 40);
	parse_ok("egress 1mbit overhead 40 raw", &r);
	g_assert_true(r.opts.raw);
	g_assert_cmpint(r.opts.overhead, ==, 0);

	/* the link's framing adds to overhead auto, with its mpu and cells */
	parse_ok("egress 1mbit ethernet", &r);
	g_assert_true(r.overhead_auto);
	g_assert_cmpint(r.link_overhead, ==, 38);
	g_assert_cmphex(r.opts.has, ==, CAKE_HAS_MPU | CAKE_HAS_ATM);
	g_assert_cmpuint(r.opts.mpu, ==, 84);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_NONE);
	parse_ok("egress 1mbit conservative", &r);
	g_assert_true(r.overhead_auto);
	g_assert_cmpint(r.link_overhead, ==, 48);
	g_assert_cmphex(r.opts.has, ==, CAKE_HAS_ATM);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_ATM);
	parse_ok("egress 1mbit link-overhead ethernet", &r);
	g_assert_cmpint(r.link_overhead, ==, 38);
	g_assert_cmpuint(r.opts.mpu, ==, 84);
	parse_ok("egress 1mbit link-overhead conservative", &r);
	g_assert_cmpint(r.link_overhead, ==, 48);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_ATM);
	/* the last word of a kind counts, each part apart */
	parse_ok("egress 1mbit ethernet link-overhead 42", &r);
	g_assert_cmpint(r.link_overhead, ==, 42);
	g_assert_cmpuint(r.opts.mpu, ==, 84);
	parse_ok("egress 1mbit link-overhead 42 ethernet", &r);
	g_assert_cmpint(r.link_overhead, ==, 38);
	parse_ok("egress 1mbit ethernet mpu 64", &r);
	g_assert_cmpuint(r.opts.mpu, ==, 64);
	parse_ok("egress 1mbit conservative ethernet", &r);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_NONE);
	parse_ok("egress 1mbit conservative ptm", &r);
	g_assert_cmpuint(r.opts.atm, ==, CAKE_ATMC_PTM);
	g_assert_cmpint(r.link_overhead, ==, 48);
	/* a hand-set overhead given earlier gives way, as to link-overhead */
	parse_ok("egress 1mbit overhead 60 overhead auto ethernet", &r);
	g_assert_false(r.opts.has & CAKE_HAS_OVERHEAD);
	g_assert_true(r.overhead_auto);
}

/* A word that stands alone names one thing: no family shares one with another, a preset or a framing. */
static void test_words_apart(void)
{
	static const char *const alone[] = {
		"datacentre", "lan", "metro", "regional", "internet", "oceanic", "satellite",
		"interplanetary", "raw", "conservative", "ethernet",
		/* and the words that take a value */
		"egress", "ingress", "overhead", "link-overhead", "mpu", "rtt", "memlimit", "fwmark",
	};

	for (size_t i = 0; i < G_N_ELEMENTS(alone); i++)
		for (enum cake_family f = 0; f < CAKE_WORDS_MAX; f++)
			g_assert_cmpint(cake_word_value(f, alone[i]), ==, -EINVAL);
	for (size_t i = 0; shape_framing(i); i++)
		g_assert_cmpint(cake_rtt_preset(shape_framing(i)->word, &(uint32_t){ 0 }), ==,
				-EINVAL);
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
		{ "egress 1mbit link-overhead 1000", "link-overhead: '1000'" },
		{ "egress 1mbit overhead 60 link-overhead 14", "only adds to overhead auto" },
		{ "egress 1mbit mpu 257", "mpu: '257'" },
		{ "egress 1mbit rtt soon", "rtt: 'soon'" },
		{ "egress 1mbit memlimit lots", "memlimit: 'lots'" },
		{ "egress 1mbit diffserv5", "'diffserv5' is not an option" },
		{ "bandwidth 1mbit", "'bandwidth' is not an option" },
		{ "egress off diffserv4", "off sets none" },
		{ "ingress off link-overhead 14", "off sets none" },
		{ "egress off ethernet", "off sets none" },
		{ "egress off raw", "off sets none" },
		{ "egress off fwmark 1", "off sets none" },
		/* the new words: what was wrong, and the choices from the tables */
		{ "egress 1mbit overhead", "overhead: missing BYTES, auto or raw" },
		{ "egress 1mbit overhead none", "overhead: 'none' is not auto, raw or a whole number" },
		{ "egress 1mbit link-overhead vlan", "nor one of conservative, ethernet" },
		{ "egress 1mbit link-overhead", "link-overhead: missing BYTES" },
		{ "egress 1mbit rtt soon", "nor one of datacentre, lan, metro, regional, internet, "
					   "oceanic, satellite, interplanetary" },
		{ "egress 1mbit rtt", "rtt: missing TIME" },
		{ "egress 1mbit fwmark", "fwmark: missing MASK" },
		{ "egress 1mbit fwmark ff", "fwmark: 'ff' is not a mask" },
		{ "egress 1mbit fwmark 0x", "fwmark: '0x'" },
		{ "egress 1mbit fwmark -1", "fwmark: '-1'" },
		{ "egress 1mbit fwmark +1", "fwmark: '+1'" },
		{ "egress 1mbit fwmark 0x100000000", "fwmark: '0x100000000'" },
		{ "egress 1mbit fwmark 4294967296", "fwmark: '4294967296'" },
		{ "egress 1mbit fwmark 09", "fwmark: '09'" },
		{ "egress 1mbit fwmark 1mb", "fwmark: '1mb'" },
		{ "egress 1mbit triple", "'triple' is not an option" },
		{ "egress 1mbit dual-dsthosts", "'dual-dsthosts' is not an option" },
		{ "egress 1mbit Internet", "'Internet' is not an option" },
		{ "egress 1mbit splitgso", "'splitgso' is not an option" },
		{ "egress 1mbit noraw", "'noraw' is not an option" },
		{ "egress 1mbit ether-vlan", "'ether-vlan' is not an option" },
		{ "egress 1mbit leaf", "leaf: missing lazy, cake or fq_codel" },
		{ "egress 1mbit leaf pfifo", "leaf: 'pfifo' is not lazy, cake nor fq_codel" },
		/* a link's framing only adds to overhead auto */
		{ "egress 1mbit overhead 60 ethernet", "ethernet only adds to overhead auto; with "
						       "overhead 60" },
		{ "egress 1mbit conservative overhead 60", "conservative only adds to overhead auto" },
		{ "egress 1mbit raw ethernet", "ethernet only adds to overhead auto, and raw counts "
					       "no overhead" },
		{ "egress 1mbit link-overhead 14 raw", "link-overhead only adds to overhead auto, "
						       "and raw" },
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
	g_test_add_func("/shape/words/families", test_families);
	g_test_add_func("/shape/words/apart", test_words_apart);
	g_test_add_func("/shape/words/new", test_new_words);
	g_test_add_func("/shape/words/overhead-words", test_overhead_words);
	return g_test_run();
}
