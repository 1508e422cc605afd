// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the shaping engine decides without a kernel: the IFB's name, and
 * what `set` does to egress (egress_decide).
 */
#include <string.h>
#include <glib.h>

#include "shape/decide.h"
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

enum { NO, YES };
#define NONE EGRESS_NONE
#define CAKE EGRESS_CAKE
#define TREE EGRESS_TREE
#define KEEP EGRESS_KEEP
#define CREATE EGRESS_CREATE
#define CHANGE EGRESS_CHANGE
#define REPLACE EGRESS_REPLACE
#define REMOVE EGRESS_REMOVE
#define UNSET EGRESS_RATE_UNSET
#define ASKED EGRESS_RATE_ASKED
#define KEPT EGRESS_RATE_KEPT
#define OF_CAKE EGRESS_RATE_OF_CAKE

/*
 * Every transition set makes on egress. eg is the direction once options
 * alone were resolved (SET for options on a cake of ours, KEEP when the tree
 * is there or egress is not named); asked is the request's own word.
 */
static void test_egress_decide(void)
{
	static const struct {
		const char *what;
		enum egress_form now;
		bool has_cap;
		enum dir_action eg, asked;
		bool peers;
		enum egress_form form;
		enum egress_step step;
		enum egress_rate rate;
	} t[] = {
		/* one cake */
		{ "egress RATE, first", NONE, NO, DIR_SET, DIR_SET, NO, CAKE, CREATE, ASKED },
		{ "egress RATE again", CAKE, NO, DIR_SET, DIR_SET, NO, CAKE, CHANGE, ASKED },
		{ "options alone on our cake", CAKE, NO, DIR_SET, DIR_KEEP, NO, CAKE, CHANGE, UNSET },
		{ "ingress alone, cake stays", CAKE, NO, DIR_KEEP, DIR_KEEP, NO, CAKE, KEEP, UNSET },
		{ "ingress alone, nothing", NONE, NO, DIR_KEEP, DIR_KEEP, NO, NONE, KEEP, UNSET },
		{ "egress off", CAKE, NO, DIR_OFF, DIR_OFF, NO, NONE, REMOVE, UNSET },
		{ "egress off, nothing there", NONE, NO, DIR_OFF, DIR_OFF, NO, NONE, KEEP, UNSET },
		/* into the tree */
		{ "a peer, nothing there: no cap", NONE, NO, DIR_KEEP, DIR_KEEP, YES, TREE, CREATE,
		  UNSET },
		{ "a peer and egress RATE", NONE, NO, DIR_SET, DIR_SET, YES, TREE, CREATE, ASKED },
		{ "a peer over our cake: its rate caps", CAKE, NO, DIR_KEEP, DIR_KEEP, YES, TREE,
		  REPLACE, OF_CAKE },
		{ "a peer over our cake, egress RATE", CAKE, NO, DIR_SET, DIR_SET, YES, TREE, REPLACE,
		  ASKED },
		{ "a peer, egress off over our cake", CAKE, NO, DIR_OFF, DIR_OFF, YES, TREE, REPLACE,
		  UNSET },
		/* the tree */
		{ "another peer: the cap stays", TREE, YES, DIR_KEEP, DIR_KEEP, YES, TREE, CHANGE,
		  KEPT },
		{ "another peer, no cap", TREE, NO, DIR_KEEP, DIR_KEEP, YES, TREE, CHANGE, KEPT },
		{ "a new cap", TREE, YES, DIR_SET, DIR_SET, YES, TREE, CHANGE, ASKED },
		{ "egress off with peers: no cap", TREE, YES, DIR_OFF, DIR_OFF, YES, TREE, CHANGE,
		  UNSET },
		/* out of the tree */
		{ "last peer gone: the cap as one cake", TREE, YES, DIR_KEEP, DIR_KEEP, NO, CAKE,
		  REPLACE, KEPT },
		{ "last peer gone, no cap", TREE, NO, DIR_KEEP, DIR_KEEP, NO, NONE, REMOVE, UNSET },
		{ "last peer gone, egress RATE", TREE, YES, DIR_SET, DIR_SET, NO, CAKE, REPLACE,
		  ASKED },
		{ "last peer gone, egress off", TREE, YES, DIR_OFF, DIR_OFF, NO, NONE, REMOVE, UNSET },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		struct egress_decision d =
			egress_decide(t[i].now, t[i].has_cap, t[i].eg, t[i].asked, t[i].peers);

		g_test_message("%s", t[i].what);
		g_assert_cmpint(d.form, ==, t[i].form);
		g_assert_cmpint(d.step, ==, t[i].step);
		g_assert_cmpint(d.rate, ==, t[i].rate);
	}
}

/* Over every input: the step fits the two forms, and a rate comes only from what is there. */
static void test_egress_decide_all(void)
{
	/* 3 forms x cap or not x 3 eg x 3 asked x peers or not */
	for (unsigned int i = 0; i < 3 * 2 * 3 * 3 * 2; i++) {
		enum egress_form now = (enum egress_form)(i % 3);
		bool cap = i / 3 % 2, peers = i / 54 % 2;
		enum dir_action eg = (enum dir_action)(i / 6 % 3), asked = (enum dir_action)(i / 18 % 3);
		struct egress_decision d = egress_decide(now, cap, eg, asked, peers);

		g_assert_true(d.form == TREE || !peers);
		g_assert_true(d.step != KEEP || d.form == now);
		g_assert_true(d.step != CREATE || now == NONE);
		g_assert_true(d.step != CHANGE || d.form == now);
		g_assert_true(d.step != REPLACE || (now != NONE && d.form != now && d.form != NONE));
		g_assert_true(d.step != REMOVE || (now != NONE && d.form == NONE));
		g_assert_true(d.rate != ASKED || asked == DIR_SET);
		g_assert_true(d.rate != KEPT || now == TREE);
		g_assert_true(d.rate != OF_CAKE || (now == CAKE && d.form == TREE));
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/shape/ifb-name", test_ifb_name);
	g_test_add_func("/shape/egress-decide", test_egress_decide);
	g_test_add_func("/shape/egress-decide-all", test_egress_decide_all);
	return g_test_run();
}
