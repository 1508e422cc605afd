// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the shaping engine decides without a kernel: the IFB's name, and
 * what `set` does to egress (egress_decide).
 */
#include <errno.h>
#include <string.h>
#include <glib/gstdio.h>
#include <glib.h>

#include "shape/decide.h"
#include "shape/memory.h"
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

/*
 * When one peer's rate is one class change message: only its rate asked,
 * on a tree without a cap, the peer with a class and the same cake options.
 */
/*
 * A peer's upload alone (`set IFACE peer KEY upload RATE`): one change of its
 * class on the IFB when the upload tree has no cap and the peer has an
 * upload class; a download with another upload named is not one change.
 */
static void test_peer_upload_only(void)
{
	struct peer_want have[2] = {
		{ .key = { 1 }, .rate = 750000, .upload = 100000, .minor = 0x10 },
		{ .key = { 2 }, .rate = 250000, .minor = 0x11 }, /* no upload class */
	};
	struct {
		const char *what;
		uint8_t key;
		uint64_t rate, upload; /* PEER_RATE_KEEP: not named */
		int change; /* 1: the upload tree has a cap, 2: no upload tree, 3: ingress named */
		uint16_t want;
	} t[] = {
		{ "an upload", 1, PEER_RATE_KEEP, 200000, 0, 0x10 },
		{ "upload off", 1, PEER_RATE_KEEP, 0, 0, 0 },
		{ "an upload for a peer with none", 2, PEER_RATE_KEEP, 200000, 0, 0 },
		{ "an upload, the tree capped", 1, PEER_RATE_KEEP, 200000, 1, 0 },
		{ "an upload, no upload tree", 1, PEER_RATE_KEEP, 200000, 2, 0 },
		{ "an upload and ingress named", 1, PEER_RATE_KEEP, 200000, 3, 0 },
		{ "a download, the upload as it is", 1, 500000, 100000, 0, 0x10 },
		{ "a download, the upload not named", 1, 500000, PEER_RATE_KEEP, 0, 0x10 },
		{ "a download and another upload", 1, 500000, 200000, 0, 0 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		struct shape_state st = { .egress = true, .tree = true, .ingress = true,
					  .in_tree = true };
		struct peer_want w = { .key = { t[i].key }, .rate = t[i].rate,
				       .upload = t[i].upload };
		struct shape_request req = { .peers_action = PEERS_ONE, .peers = &w, .n_peers = 1 };
		const struct peer_want *p;

		st.peers = g_array_new(false, true, sizeof(struct peer_want));
		g_array_append_vals(st.peers, have, G_N_ELEMENTS(have));
		switch (t[i].change) {
		case 1: st.in_cap = 1250000; break;
		case 2: st.in_tree = false; break;
		case 3: req.ingress = DIR_SET; break;
		}
		if (g_test_verbose())
			g_test_message("%s", t[i].what);
		p = peer_rate_only(&st, &req);
		g_assert_cmpuint(p ? p->minor : 0, ==, t[i].want);
		g_assert_true(peer_rate_upload(&req) == (t[i].rate == PEER_RATE_KEEP));
		g_array_free(st.peers, true);
	}
}

static void test_peer_rate_only(void)
{
	struct peer_want have[2] = {
		{ .key = { 1 }, .rate = 750000, .minor = 0x10 },
		{ .key = { 2 }, .rate = 250000, .minor = 0x11, .opts.has = CAKE_HAS_RTT,
		  .options = "rtt 50ms" },
	};
	struct peer_want unplaced = { .key = { 3 }, .rate = 1000 };
	struct {
		const char *what;
		uint8_t key;
		uint64_t rate;
		bool rtt; /* the request's own cake option, as peer 2 has it */
		int change; /* 1: egress named, 2: options, 3: overhead auto, 4: a cap, 5: no tree,
			       6: two peers, 7: PEERS_ALL */
		uint16_t want;
	} t[] = {
		{ "a rate", 1, 500000, false, 0, 0x10 },
		{ "the same rate", 1, 750000, false, 0, 0x10 },
		{ "with its own cake option, as before", 2, 500000, true, 0, 0x11 },
		{ "off", 1, 0, false, 0, 0 },
		{ "a cake option added", 1, 500000, true, 0, 0 },
		{ "its cake option dropped", 2, 500000, false, 0, 0 },
		{ "a peer not in the state", 9, 500000, false, 0, 0 },
		{ "a peer with no class yet", 3, 500000, false, 0, 0 },
		{ "egress named too", 1, 500000, false, 1, 0 },
		{ "options for the interface", 1, 500000, false, 2, 0 },
		{ "overhead auto", 1, 500000, false, 3, 0 },
		{ "a tree with a cap", 1, 500000, false, 4, 0 },
		{ "one cake, no tree", 1, 500000, false, 5, 0 },
		{ "two peers", 1, 500000, false, 6, 0 },
		{ "every peer (apply)", 1, 500000, false, 7, 0 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		struct shape_state st = { .egress = true, .tree = true };
		struct peer_want w[2] = { { .key = { t[i].key }, .rate = t[i].rate } };
		struct shape_request req = { .peers_action = PEERS_ONE, .peers = w, .n_peers = 1 };
		const struct peer_want *p;

		st.peers = g_array_new(false, true, sizeof(struct peer_want));
		g_array_append_vals(st.peers, have, G_N_ELEMENTS(have));
		g_array_append_val(st.peers, unplaced);
		if (t[i].rtt) {
			w[0].opts.has = CAKE_HAS_RTT;
			g_strlcpy(w[0].options, "rtt 50ms", sizeof(w[0].options));
		}
		switch (t[i].change) {
		case 1: req.egress = DIR_SET; break;
		case 2: req.opts.has = CAKE_HAS_DIFFSERV; break;
		case 3: req.overhead_auto = true; break;
		case 4: st.cap = 1250000; break;
		case 5: st.tree = false; break;
		case 6: w[1] = have[1]; req.n_peers = 2; break;
		case 7: req.peers_action = PEERS_ALL; break;
		}
		if (g_test_verbose())
			g_test_message("%s", t[i].what);
		p = peer_rate_only(&st, &req);
		g_assert_cmpuint(p ? p->minor : 0, ==, t[i].want);
		g_array_free(st.peers, true);
	}
}

/*
 * The memory check before cake leaves (issue 27): refused when the leaves
 * would take more than what is available above the reserve (64 MiB, or a
 * sixteenth of the machine), a warning over half of that.
 */
static void test_leaves_fit(void)
{
	static const struct {
		uint64_t n, avail_mib, total_mib;
		enum leaves_fit want;
		uint64_t reserve_mib;
	} rows[] = {
		{ 0, 0, 1024, LEAVES_FIT, 64 }, /* nothing to make: nothing to check */
		{ 10, 800, 1024, LEAVES_FIT, 64 },
		{ 368, 800, 1024, LEAVES_FIT, 64 }, /* 368 MiB of 736: just half */
		{ 369, 800, 1024, LEAVES_TIGHT, 64 },
		{ 736, 800, 1024, LEAVES_TIGHT, 64 }, /* all of the room */
		{ 737, 800, 1024, LEAVES_REFUSED, 64 },
		{ 1001, 800, 1024, LEAVES_REFUSED, 64 }, /* 1,000 peers in a 1 GiB VM */
		{ 1001, 3000, 4096, LEAVES_FIT, 256 }, /* bench-peers' 4 GiB VM */
		{ 1, 60, 512, LEAVES_REFUSED, 64 }, /* under the reserve already */
		{ 10000, 12000, 32768, LEAVES_REFUSED, 2048 }, /* 10,000 peers, 32 GiB */
		{ 10000, 15000, 65536, LEAVES_TIGHT, 4096 },
		{ 10000, 30000, 65536, LEAVES_FIT, 4096 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
		struct leaves_need x;
		enum leaves_fit got = leaves_fit(rows[i].n, rows[i].avail_mib << 10,
						 rows[i].total_mib << 10, &x);

		g_test_message("row %zu: %" G_GUINT64_FORMAT " leaves, %" G_GUINT64_FORMAT
			       " MiB available", i, rows[i].n, rows[i].avail_mib);
		g_assert_cmpint(got, ==, rows[i].want);
		g_assert_cmpuint(x.reserve_kib, ==, rows[i].reserve_mib << 10);
		g_assert_cmpuint(x.need_kib, ==, rows[i].n * CAKE_LEAF_KIB);
	}
}

static void test_meminfo(void)
{
	g_autofree char *dir = g_dir_make_tmp("wgshape-meminfo-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "meminfo", NULL);
	uint64_t avail = 0, total = 0;

	g_assert_nonnull(dir);
	g_assert_true(g_file_set_contents(path, "MemTotal:        1004332 kB\n"
						"MemFree:          601224 kB\n"
						"MemAvailable:     712200 kB\n"
						"Buffers:            2048 kB\n", -1, NULL));
	g_assert_cmpint(meminfo_read(path, &avail, &total), ==, 0);
	g_assert_cmpuint(avail, ==, 712200);
	g_assert_cmpuint(total, ==, 1004332);
	/* a kernel before 3.14 has no MemAvailable: no check, not a guess */
	g_assert_true(g_file_set_contents(path, "MemTotal: 1004332 kB\nMemFree: 1 kB\n", -1, NULL));
	g_assert_cmpint(meminfo_read(path, &avail, &total), ==, -ENODATA);
	g_assert_cmpint(g_unlink(path), ==, 0);
	g_assert_cmpint(meminfo_read(path, &avail, &total), <, 0);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/shape/ifb-name", test_ifb_name);
	g_test_add_func("/shape/egress-decide", test_egress_decide);
	g_test_add_func("/shape/egress-decide-all", test_egress_decide_all);
	g_test_add_func("/shape/peer-rate-only", test_peer_rate_only);
	g_test_add_func("/shape/peer-upload-only", test_peer_upload_only);
	g_test_add_func("/shape/leaves-fit", test_leaves_fit);
	g_test_add_func("/shape/meminfo", test_meminfo);
	return g_test_run();
}
