// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-peer shaping without a kernel: the plan (peers + wanted rates -> classes
 * and filters) and its diff against what the kernel has.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "fake-kernel.h"
#include "safe-tmp.h"
#include "shape/cake.h"
#include "shape/engine.h"
#include "shape/tree-plan.h"
#include "shape/state.h"

static struct tc_prefix pfx(const char *s)
{
	g_auto(GStrv) parts = g_strsplit(s, "/", 2);
	struct tc_prefix p = { 0 };

	p.family = strchr(parts[0], ':') ? AF_INET6 : AF_INET;
	g_assert_cmpint(inet_pton(p.family, parts[0], p.addr), ==, 1);
	p.prefixlen = (unsigned int)atoi(parts[1]);
	return p;
}

/* A peer whose key is 32 bytes of k, with AllowedIPs from a NULL-ended list. */
static struct wg_peer peer(uint8_t k, const char *const *allowed)
{
	struct wg_peer p = { .endpoint_family = AF_INET };
	size_t n = 0;

	memset(p.key, k, sizeof(p.key));
	while (allowed[n])
		n++;
	p.allowed = g_new0(struct tc_prefix, n);
	for (size_t i = 0; i < n; i++)
		p.allowed[i] = pfx(allowed[i]);
	p.n_allowed = n;
	return p;
}

static struct peer_want want(uint8_t k, uint64_t rate)
{
	struct peer_want w = { .rate = rate };

	memset(w.key, k, sizeof(w.key));
	return w;
}

static void peers_free(struct wg_peer *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g_free(p[i].allowed);
}

static const struct tree_class *class_of(const struct tree_plan *p, uint16_t minor)
{
	for (guint i = 0; i < p->classes->len; i++)
		if (g_array_index(p->classes, struct tree_class, i).minor == minor)
			return &g_array_index(p->classes, struct tree_class, i);
	return NULL;
}

static void test_plan_basic(void)
{
	struct wg_peer peers[] = {
		peer(1, (const char *const[]){ "10.0.0.2/32", "fd00::2/128", NULL }),
		peer(2, (const char *const[]){ "10.0.0.3/32", NULL }),
	};
	struct peer_want wants[] = { want(1, 1000000), want(9, 500000) }; /* 9: not on wg0 */
	struct tree_input in = { peers, 2, wants, 2, 0, { 0 } };
	struct tree_plan p;
	const struct tree_class *c;

	tree_plan_init(&p);
	g_assert_cmpint(tree_plan(&in, &p), ==, 0);
	/* the cap (unlimited), the default, and the one wanted peer WireGuard has */
	g_assert_cmpuint(p.classes->len, ==, 3);
	c = class_of(&p, TREE_CAP_MINOR);
	g_assert_nonnull(c);
	g_assert_false(c->leaf);
	g_assert_cmpuint(c->ceil, ==, TREE_RATE_UNLIMITED);
	c = class_of(&p, TREE_DEFAULT_MINOR);
	g_assert_true(c->leaf && (c->cake.has & CAKE_HAS_FLOW_MODE));
	g_assert_cmpuint(c->cake.flow_mode, ==, 6); /* dual-dsthost */
	g_assert_cmpuint(wants[0].minor, ==, TREE_PEER_MINOR_FIRST);
	g_assert_cmpuint(wants[1].minor, ==, TREE_PEER_MINOR_FIRST + 1); /* kept for when it comes */
	c = class_of(&p, TREE_PEER_MINOR_FIRST);
	g_assert_cmpuint(c->rate, ==, 1000000);
	g_assert_cmpuint(c->ceil, ==, 1000000);
	g_assert_true((c->cake.has & CAKE_HAS_RATE) && c->cake.rate == 0); /* HTB shapes */
	g_assert_null(class_of(&p, TREE_PEER_MINOR_FIRST + 1));
	/* both of peer 1's AllowedIPs, none of peer 2's (it has no rate: default class) */
	g_assert_cmpuint(p.filters->len, ==, 2);
	for (guint i = 0; i < p.filters->len; i++)
		g_assert_cmpuint(g_array_index(p.filters, struct tree_filter, i).minor, ==,
				 TREE_PEER_MINOR_FIRST);
	g_assert_cmpuint(p.warnings->len, ==, 0);
	tree_plan_clear(&p);
	peers_free(peers, G_N_ELEMENTS(peers));
}

static void test_plan_minors(void)
{
	struct wg_peer peers[] = { peer(1, (const char *const[]){ "10.0.0.2/32", NULL }),
				   peer(2, (const char *const[]){ "10.0.0.3/32", NULL }),
				   peer(3, (const char *const[]){ "10.0.0.4/32", NULL }) };
	/* 2 kept its class; 3 claims the same one (a corrupt state): it gets another */
	struct peer_want wants[] = { want(1, 1000), want(2, 1000), want(3, 1000) };
	struct tree_input in = { peers, 3, wants, 3, 0, { 0 } };
	struct tree_plan p;

	wants[1].minor = 0x20;
	wants[2].minor = 0x20;
	tree_plan_init(&p);
	g_assert_cmpint(tree_plan(&in, &p), ==, 0);
	g_assert_cmpuint(wants[1].minor, ==, 0x20);
	g_assert_cmpuint(wants[0].minor, ==, TREE_PEER_MINOR_FIRST);
	g_assert_cmpuint(wants[2].minor, ==, TREE_PEER_MINOR_FIRST + 1);
	tree_plan_clear(&p);
	peers_free(peers, G_N_ELEMENTS(peers));
}

static void test_plan_cap(void)
{
	struct wg_peer peers[] = { peer(1, (const char *const[]){ "10.0.0.2/32", NULL }),
				   peer(2, (const char *const[]){ "10.0.0.3/32", NULL }) };
	struct peer_want wants[] = { want(1, 3000000), want(2, 1000000) };
	struct tree_input in = { peers, 2, wants, 2, 2000000, { 0 } };
	struct tree_plan p;
	uint64_t sum = 0;

	tree_plan_init(&p);
	g_assert_cmpint(tree_plan(&in, &p), ==, 0);
	g_assert_cmpuint(class_of(&p, TREE_CAP_MINOR)->rate, ==, 2000000);
	/* no peer above the cap; the guarantees (default's too) fit in it */
	g_assert_cmpuint(class_of(&p, TREE_PEER_MINOR_FIRST)->ceil, ==, 2000000);
	g_assert_cmpuint(class_of(&p, TREE_PEER_MINOR_FIRST + 1)->ceil, ==, 1000000);
	g_assert_cmpuint(class_of(&p, TREE_DEFAULT_MINOR)->ceil, ==, 2000000);
	for (guint i = 1; i < p.classes->len; i++)
		sum += g_array_index(p.classes, struct tree_class, i).rate;
	g_assert_cmpuint(sum, <=, 2000000);
	g_assert_cmpuint(sum, >=, 1990000);
	/* shared out in proportion to the ceils */
	g_assert_cmpuint(class_of(&p, TREE_PEER_MINOR_FIRST)->rate, <=,
			 2 * class_of(&p, TREE_PEER_MINOR_FIRST + 1)->rate + 2);
	g_assert_cmpuint(class_of(&p, TREE_PEER_MINOR_FIRST)->rate + 2, >=,
			 2 * class_of(&p, TREE_PEER_MINOR_FIRST + 1)->rate);
	tree_plan_clear(&p);
	peers_free(peers, G_N_ELEMENTS(peers));
}

static void test_plan_overlap(void)
{
	struct wg_peer peers[] = {
		peer(1, (const char *const[]){ "10.0.0.0/24", "10.9.0.1/32", NULL }),
		peer(2, (const char *const[]){ "10.0.0.5/32", NULL }), /* inside peer 1's /24 */
		peer(3, (const char *const[]){ "0.0.0.0/0", "fd00::/64", NULL }),
		peer(4, (const char *const[]){ "fd00::7/128", "fd01::/64", NULL }),
		/* wider than peer 4's fd01::/64 but not shaped: no conflict */
		peer(5, (const char *const[]){ "fd01::/32", "::/0", NULL }),
	};
	struct peer_want wants[] = { want(1, 1000), want(3, 1000), want(4, 1000) };
	struct tree_input in = { peers, 5, wants, 3, 0, { 0 } };
	struct tree_plan p;
	char buf[64];

	tree_plan_init(&p);
	g_assert_cmpint(tree_plan(&in, &p), ==, 0);
	/* left: peer 1's 10.9.0.1/32, peer 4's fd01::/64 */
	g_assert_cmpuint(p.filters->len, ==, 2);
	g_assert_cmpstr(tc_prefix_str(&g_array_index(p.filters, struct tree_filter, 0).match, buf,
				      sizeof(buf)), ==, "10.9.0.1/32");
	g_assert_cmpstr(tc_prefix_str(&g_array_index(p.filters, struct tree_filter, 1).match, buf,
				      sizeof(buf)), ==, "fd01::/64");
	/* 10.0.0.0/24, 0.0.0.0/0, fd00::/64 and fd00::7/128, each named (peer 2 is not shaped) */
	g_assert_cmpuint(p.warnings->len, ==, 4);
	for (guint i = 0; i < p.warnings->len; i++)
		g_assert_nonnull(strstr(p.warnings->pdata[i], "default class"));
	tree_plan_clear(&p);
	peers_free(peers, G_N_ELEMENTS(peers));
}

static void test_prefix(void)
{
	struct tc_prefix a = pfx("10.0.0.0/8"), b = pfx("10.200.1.0/24"), c = pfx("11.0.0.0/8");
	struct tc_prefix d = pfx("fd00::/7"), e = pfx("fc00::1/128"), f = pfx("10.0.0.0/9");
	uint8_t key[WG_KEY_LEN], back[WG_KEY_LEN];
	char b64[45];

	g_assert_true(tc_prefix_contains(&a, &b));
	g_assert_false(tc_prefix_contains(&b, &a));
	g_assert_false(tc_prefix_contains(&a, &c));
	g_assert_true(tc_prefix_contains(&d, &e)); /* fc00::/7 holds fc and fd */
	g_assert_false(tc_prefix_contains(&a, &d));
	g_assert_true(tc_prefix_contains(&a, &f));
	g_assert_false(tc_prefix_contains(&f, &b)); /* 10.200 is in the upper half */
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 3);
	wg_key_to_base64(key, b64);
	g_assert_cmpuint(strlen(b64), ==, 44);
	g_assert_cmpint(wg_key_from_base64(b64, back), ==, 0);
	g_assert_cmpmem(key, sizeof(key), back, sizeof(back));
	b64[5] = '*';
	g_assert_cmpint(wg_key_from_base64(b64, back), ==, -EINVAL);
	g_assert_cmpint(wg_key_from_base64("abc", back), ==, -EINVAL);
	g_assert_cmpint(wg_key_from_base64(NULL, back), ==, -EINVAL);
}

/*
 * Issue 28: the 44th character but one carries 4 bits of the key and 2 that
 * must be zero; `wg` refuses a key whose unused bits are set, and so do we
 * (one key, one spelling: a [peer] must match WireGuard's own). Those
 * refused decode to a key another, canonical, spelling gives.
 */
static void test_key_canonical(void)
{
	static const struct {
		const char *b64;
		int want;
	} cases[] = {
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", 0 },
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=", -EINVAL }, /* low bits 01 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAC=", -EINVAL }, /* 10 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAD=", -EINVAL }, /* 11 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE=", 0 }, /* 4 bits of key: 0x01 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/=", -EINVAL }, /* 63: 11 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA8=", 0 }, /* 60: 00 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA9=", -EINVAL },
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAz=", -EINVAL }, /* 51 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAw=", 0 }, /* 48 */
	};
	uint8_t key[WG_KEY_LEN];
	char back[45];

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		int r = wg_key_from_base64(cases[i].b64, key);

		if (r != cases[i].want) {
			g_test_fail_printf("%s: %d, not %d", cases[i].b64, r, cases[i].want);
			continue;
		}
		/* what is taken is spelled back as it came */
		if (!r) {
			wg_key_to_base64(key, back);
			g_assert_cmpstr(back, ==, cases[i].b64);
		}
	}
}

static struct tree_kernel view(const struct fake_kernel *k)
{
	return (struct tree_kernel){ (void *)k->classes->data, k->classes->len, (void *)k->qdiscs->data,
				     k->qdiscs->len, (void *)k->filters->data, k->filters->len };
}

static GArray *diff(struct tree_input *in, const struct tree_kernel *k, struct tree_plan *p)
{
	GArray *ops = g_array_new(false, true, sizeof(struct tree_op));

	tree_plan_init(p);
	g_assert_cmpint(tree_plan(in, p), ==, 0);
	tree_diff(p, k, ops);
	return ops;
}

static unsigned int count(GArray *ops, enum tree_op_kind kind)
{
	unsigned int n = 0;

	for (guint i = 0; i < ops->len; i++)
		n += g_array_index(ops, struct tree_op, i).kind == kind;
	return n;
}

static void test_diff(void)
{
	struct wg_peer peers[] = {
		peer(1, (const char *const[]){ "10.0.0.2/32", "fd00::2/128", NULL }),
		peer(2, (const char *const[]){ "10.0.0.3/32", NULL }),
	};
	struct peer_want wants[] = { want(1, 1000000), want(2, 2000000) };
	struct tree_input in = { peers, 2, wants, 2, 0, { 0 } };
	struct tree_kernel empty = { 0 }, kv;
	struct fake_kernel k;
	struct tree_plan p, p2;
	g_autoptr(GArray) ops = NULL;
	enum tree_op_kind last = TREE_FILTER_DEL;

	/* from nothing: classes (the cap first) and leaves before the filters */
	ops = diff(&in, &empty, &p);
	g_assert_cmpuint(count(ops, TREE_CLASS_ADD), ==, 4);
	g_assert_cmpuint(count(ops, TREE_LEAF_ADD), ==, 3);
	g_assert_cmpuint(count(ops, TREE_FILTER_ADD), ==, 3);
	g_assert_cmpuint(ops->len, ==, 10);
	g_assert_cmpuint(g_array_index(ops, struct tree_op, 0).minor, ==, TREE_CAP_MINOR);
	for (guint i = 0; i < ops->len; i++) {
		enum tree_op_kind kind = g_array_index(ops, struct tree_op, i).kind;

		/* once the filters start, only filters */
		g_assert_true(kind == TREE_FILTER_ADD || last != TREE_FILTER_ADD);
		last = kind;
	}
	kernel_from_plan(&p, &k);
	tree_plan_clear(&p);
	g_clear_pointer(&ops, g_array_unref);

	/* as planned: nothing to do */
	kv = view(&k);
	ops = diff(&in, &kv, &p);
	g_assert_cmpuint(ops->len, ==, 0);
	tree_plan_clear(&p);
	g_clear_pointer(&ops, g_array_unref);

	/* one rate: one class changed in place, nothing else */
	wants[1].rate = 1500000;
	ops = diff(&in, &kv, &p);
	g_assert_cmpuint(ops->len, ==, 1);
	g_assert_cmpint(g_array_index(ops, struct tree_op, 0).kind, ==, TREE_CLASS_CHANGE);
	g_assert_cmpuint(g_array_index(ops, struct tree_op, 0).minor, ==, wants[1].minor);
	g_assert_cmpuint(g_array_index(ops, struct tree_op, 0).ceil, ==, 1500000);
	tree_plan_clear(&p);
	g_clear_pointer(&ops, g_array_unref);

	/* peer 1 no longer wanted: its two filters go first, its class last */
	in.wants = &wants[1];
	in.n_wants = 1;
	wants[1].rate = 2000000;
	ops = diff(&in, &kv, &p2);
	g_assert_cmpuint(ops->len, ==, 3);
	g_assert_cmpint(g_array_index(ops, struct tree_op, 0).kind, ==, TREE_FILTER_DEL);
	g_assert_cmpint(g_array_index(ops, struct tree_op, 1).kind, ==, TREE_FILTER_DEL);
	g_assert_cmpint(g_array_index(ops, struct tree_op, 2).kind, ==, TREE_CLASS_DEL);
	g_assert_cmpuint(g_array_index(ops, struct tree_op, 2).minor, ==, wants[0].minor);
	tree_plan_clear(&p2);
	g_clear_pointer(&ops, g_array_unref);

	/* a peer's AllowedIPs changed: the old filter goes, the new one comes */
	in.wants = wants;
	in.n_wants = 2;
	peers[1].allowed[0] = pfx("10.0.0.30/32");
	ops = diff(&in, &kv, &p);
	g_assert_cmpuint(ops->len, ==, 2);
	g_assert_cmpint(g_array_index(ops, struct tree_op, 0).kind, ==, TREE_FILTER_DEL);
	g_assert_cmpint(g_array_index(ops, struct tree_op, 1).kind, ==, TREE_FILTER_ADD);
	tree_plan_clear(&p);
	kernel_free(&k);
	peers_free(peers, G_N_ELEMENTS(peers));
}

/*
 * The planner at scale looks peers, classes and filters up by hash; this
 * pins it to the straightforward reading: the kernel's lists walked in full
 * for every lookup (ref_diff), and a plan checked peer by peer against how
 * the input was made. The input is shuffled (wants in another order than
 * WireGuard's peers, the kernel's lists in any order) and has every case:
 * unshaped peers, wants for absent peers, a key wanted twice, overlapping
 * AllowedIPs, and a kernel with changed rates, missing or foreign leaves,
 * a misplaced class, stale classes and filters.
 */
#define SCALE_PEERS 2000u

static bool same_prefix(const struct tc_prefix *a, const struct tc_prefix *b)
{
	return a->family == b->family && a->prefixlen == b->prefixlen &&
	       !memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16);
}

static void ref_push(GArray *ops, enum tree_op_kind kind, const struct tree_class *c)
{
	struct tree_op op = { .kind = kind, .minor = c->minor, .rate = c->rate, .ceil = c->ceil,
			      .cake = c->cake };

	g_array_append_val(ops, op);
}

static bool ref_planned(const struct tree_plan *p, uint32_t classid)
{
	for (guint i = 0; i < p->classes->len; i++)
		if (TREE_HANDLE(g_array_index(p->classes, struct tree_class, i).minor) == classid)
			return true;
	return false;
}

static bool ref_filter_planned(const struct tree_plan *p, const struct flower_info *f)
{
	for (guint i = 0; i < p->filters->len; i++) {
		const struct tree_filter *t = &g_array_index(p->filters, struct tree_filter, i);

		if (same_prefix(&t->match, &f->match) && TREE_HANDLE(t->minor) == f->classid)
			return true;
	}
	return false;
}

/* tree_diff as its header says it, every lookup a walk. */
static void ref_diff(const struct tree_plan *p, const struct tree_kernel *k, GArray *ops)
{
	g_autoptr(GArray) fdels = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) fadds = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) cdels = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) mid = g_array_new(false, true, sizeof(struct tree_op));
	g_autofree bool *kept = g_new0(bool, k->n_filters + 1);

	for (size_t i = 0; i < k->n_filters; i++) {
		struct tree_op op = { .kind = TREE_FILTER_DEL, .filter = k->filters[i] };
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = kept[j] && same_prefix(&k->filters[j].match, &k->filters[i].match) &&
			      k->filters[j].classid == k->filters[i].classid;
		kept[i] = !dup && ref_filter_planned(p, &k->filters[i]);
		if (!kept[i])
			g_array_append_val(fdels, op);
	}
	for (guint i = 0; i < p->filters->len; i++) {
		const struct tree_filter *f = &g_array_index(p->filters, struct tree_filter, i);
		struct tree_op op = { .kind = TREE_FILTER_ADD, .minor = f->minor };
		bool there = false;

		for (size_t j = 0; j < k->n_filters && !there; j++)
			there = kept[j] && same_prefix(&k->filters[j].match, &f->match) &&
				k->filters[j].classid == TREE_HANDLE(f->minor);
		if (there)
			continue;
		op.filter = (struct flower_info){ .parent = TREE_HANDLE(0), .match = f->match,
						  .classid = TREE_HANDLE(f->minor) };
		op.filter.prio = f->match.family == AF_INET ? TREE_PRIO_V4 : TREE_PRIO_V6;
		g_array_append_val(fadds, op);
	}
	for (guint i = 0; i < p->classes->len; i++) {
		const struct tree_class *c = &g_array_index(p->classes, struct tree_class, i);
		const struct tc_class_info *kc = NULL;
		const struct qdisc_info *leaf = NULL;
		uint32_t parent = c->minor == TREE_CAP_MINOR ? 0xffffffffu : TREE_HANDLE(1);

		for (size_t j = 0; j < k->n_classes && !kc; j++)
			if (k->classes[j].classid == TREE_HANDLE(c->minor))
				kc = &k->classes[j];
		for (size_t j = 0; j < k->n_qdiscs && !leaf; j++)
			if (k->qdiscs[j].parent == TREE_HANDLE(c->minor))
				leaf = &k->qdiscs[j];
		if (kc && kc->parent != parent &&
		    !(c->minor == TREE_CAP_MINOR && kc->parent == TREE_HANDLE(0))) {
			ref_push(cdels, TREE_CLASS_DEL, c);
			kc = NULL;
		}
		if (!kc) {
			ref_push(mid, TREE_CLASS_ADD, c);
			if (c->leaf)
				ref_push(mid, TREE_LEAF_ADD, c);
			continue;
		}
		if (kc->rate != c->rate || kc->ceil != c->ceil)
			ref_push(mid, TREE_CLASS_CHANGE, c);
		if (c->leaf && (!leaf || strcmp(leaf->kind, "cake") != 0))
			ref_push(mid, TREE_LEAF_ADD, c);
		else if (c->leaf && !cake_opts_hold(&leaf->cake, &c->cake))
			ref_push(mid, TREE_LEAF_CHANGE, c);
	}
	for (size_t i = 0; i < k->n_classes; i++) {
		uint32_t id = k->classes[i].classid;
		struct tree_op op = { .kind = TREE_CLASS_DEL, .minor = (uint16_t)(id & 0xffff) };

		if ((id >> 16) == TREE_MAJOR && !ref_planned(p, id))
			g_array_append_val(cdels, op);
	}
	g_array_append_vals(ops, fdels->data, fdels->len);
	for (guint i = 0; i < cdels->len; i++)
		if (ref_planned(p, TREE_HANDLE(g_array_index(cdels, struct tree_op, i).minor)))
			g_array_append_val(ops, g_array_index(cdels, struct tree_op, i));
	g_array_append_vals(ops, mid->data, mid->len);
	g_array_append_vals(ops, fadds->data, fadds->len);
	for (guint i = 0; i < cdels->len; i++)
		if (!ref_planned(p, TREE_HANDLE(g_array_index(cdels, struct tree_op, i).minor)))
			g_array_append_val(ops, g_array_index(cdels, struct tree_op, i));
}

static void shuffle(GRand *rnd, void *base, size_t n, size_t size)
{
	g_autofree uint8_t *tmp = g_malloc(size);
	uint8_t *b = base;

	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)g_rand_int_range(rnd, 0, (gint32)i);

		memcpy(tmp, b + (i - 1) * size, size);
		memcpy(b + (i - 1) * size, b + j * size, size);
		memcpy(b + j * size, tmp, size);
	}
}

/* The peer (index) whose 10.a.b.c/32 or fd00::a:b:c/128 this is; peer 7's /24 holds 10.0.0.x. */
static size_t peer_of_prefix(const struct tc_prefix *p)
{
	const uint8_t *a = p->family == AF_INET ? &p->addr[1] : &p->addr[13];

	return ((size_t)a[0] << 16 | (size_t)a[1] << 8 | a[2]) - 0x100;
}

static void test_plan_scale(void)
{
	g_autoptr(GRand) rnd = g_rand_new_with_seed(4);
	struct wg_peer *peers = g_new0(struct wg_peer, SCALE_PEERS);
	/* every peer but each fifth, 50 absent ones, and peer 3's key twice */
	g_autoptr(GArray) wants = g_array_new(false, true, sizeof(struct peer_want));
	g_autofree struct peer_want **want_of = g_new0(struct peer_want *, SCALE_PEERS);
	struct tree_kernel kv;
	struct fake_kernel k;
	struct tree_plan p;
	/* every leaf cake, as ref_diff plans them (test_leaves has the other kinds) */
	struct tree_input in = { peers, SCALE_PEERS, NULL, 0, 50000000, { 0 }, PEER_LEAF_CAKE };
	g_autoptr(GArray) ops = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) want_ops = g_array_new(false, true, sizeof(struct tree_op));
	guint n_classes = 2, shaped = 0;

	for (size_t i = 0; i < SCALE_PEERS; i++) {
		uint32_t host = (uint32_t)i + 0x100;

		for (size_t b = 0; b < WG_KEY_LEN; b++)
			peers[i].key[b] = (uint8_t)g_rand_int_range(rnd, 0, 256);
		peers[i].allowed = g_new0(struct tc_prefix, 2);
		peers[i].n_allowed = 2;
		peers[i].allowed[0] = (struct tc_prefix){ .family = AF_INET, .prefixlen = 32,
			.addr = { 10, (uint8_t)(host >> 16), (uint8_t)(host >> 8), (uint8_t)host } };
		peers[i].allowed[1] = (struct tc_prefix){ .family = AF_INET6, .prefixlen = 128,
			.addr = { 0xfd, [13] = (uint8_t)(host >> 16), [14] = (uint8_t)(host >> 8),
				  [15] = (uint8_t)host } };
	}
	/* peer 7 also holds 10.0.1.0/24, over peers 0 to 255's addresses: overlaps */
	peers[7].allowed[1] = pfx("10.0.1.0/24");
	for (size_t i = 0; i < SCALE_PEERS; i++) {
		struct peer_want w = { .rate = 10000 + 37 * i, .minor = i % 3 ? 0 : 0x10 + i };

		memcpy(w.key, peers[i].key, WG_KEY_LEN);
		if (i % 5)
			g_array_append_val(wants, w);
	}
	for (size_t i = 0; i < 50; i++) {
		struct peer_want w = { .rate = 5000 };

		memset(w.key, 0, WG_KEY_LEN);
		w.key[0] = (uint8_t)i;
		g_array_append_val(wants, w);
	}
	shuffle(rnd, wants->data, wants->len, sizeof(struct peer_want));
	{
		struct peer_want w = { .rate = 1, .minor = 0x30 }; /* peer 3 again: not used */

		memcpy(w.key, peers[3].key, WG_KEY_LEN);
		g_array_append_val(wants, w);
	}
	in.wants = (struct peer_want *)(void *)wants->data;
	in.n_wants = wants->len;

	tree_plan_init(&p);
	g_assert_cmpint(tree_plan(&in, &p), ==, 0);
	/* the first want with a peer's key is its want, as a walk would find it */
	for (guint i = 0; i < wants->len; i++)
		for (size_t j = 0; j < SCALE_PEERS; j++)
			if (!want_of[j] && !memcmp(in.wants[i].key, peers[j].key, WG_KEY_LEN))
				want_of[j] = &in.wants[i];
	/* classes: the cap, the default, then every want whose peer is there, in their order */
	for (guint i = 0; i < wants->len; i++) {
		const struct tree_class *c;
		bool there = false;

		for (size_t j = 0; j < SCALE_PEERS && !there; j++)
			there = !memcmp(in.wants[i].key, peers[j].key, WG_KEY_LEN);
		if (!there)
			continue;
		c = &g_array_index(p.classes, struct tree_class, n_classes++);
		g_assert_cmpuint(c->minor, ==, in.wants[i].minor);
		g_assert_cmpint(c->want, ==, (int)i);
		g_assert_cmpuint(c->ceil, ==, in.wants[i].rate);
	}
	g_assert_cmpuint(p.classes->len, ==, n_classes);
	/* filters: a shaped peer's own addresses, to its first want's class, in address order */
	for (guint i = 0; i < p.filters->len; i++) {
		const struct tree_filter *f = &g_array_index(p.filters, struct tree_filter, i);
		size_t peer = peer_of_prefix(&f->match);

		g_assert_cmpuint(peer, <, SCALE_PEERS);
		/* 0 to 255's IPv4 addresses are under peer 7's /24 (but for its own) */
		if (f->match.family == AF_INET)
			g_assert_true(peer >= 256 || peer == 7);
		g_assert_nonnull(want_of[peer]);
		g_assert_cmpuint(f->minor, ==, want_of[peer]->minor);
		if (i)
			g_assert_cmpint(memcmp(&f[-1].match, &f->match, sizeof(f->match)), !=, 0);
	}
	/* two filters a shaped peer, one below 256 (peer 7: its IPv4 address, not its /24) */
	for (size_t j = 0; j < SCALE_PEERS; j++)
		shaped += want_of[j] ? (j < 256 ? 1 : 2) : 0;
	g_assert_cmpuint(p.filters->len, ==, shaped);
	g_assert_cmpuint(p.warnings->len, >, 200); /* the overlaps, each named */

	/* a kernel that has drifted, its lists shuffled */
	kernel_from_plan(&p, &k);
	for (guint i = 3; i < k.classes->len; i += 97)
		g_array_index(k.classes, struct tc_class_info, i).rate += 1;
	for (guint i = 5; i < k.qdiscs->len; i += 89)
		g_strlcpy(g_array_index(k.qdiscs, struct qdisc_info, i).kind, "fq_codel", 32);
	g_array_remove_index(k.qdiscs, 11);
	g_array_index(k.classes, struct tc_class_info, 20).parent = TREE_HANDLE(2); /* misplaced */
	{
		struct tc_class_info stale = { .classid = TREE_HANDLE(0xfff0), .parent = TREE_HANDLE(1) };
		struct tc_class_info other = { .classid = 0x20010, .parent = 0x20000 };
		struct flower_info f = { .parent = TREE_HANDLE(0), .prio = 1, .handle = 9999,
					 .match = pfx("10.200.0.1/32"), .classid = TREE_HANDLE(0x11) };

		g_array_append_val(k.classes, stale);
		g_array_append_val(k.classes, other);
		g_array_append_val(k.filters, f);
		/* a planned filter twice: one stays, one goes */
		g_array_append_val(k.filters, g_array_index(k.filters, struct flower_info, 40));
	}
	g_array_remove_index(k.filters, 100);
	shuffle(rnd, k.classes->data, k.classes->len, sizeof(struct tc_class_info));
	shuffle(rnd, k.qdiscs->data, k.qdiscs->len, sizeof(struct qdisc_info));
	shuffle(rnd, k.filters->data, k.filters->len, sizeof(struct flower_info));
	kv = view(&k);
	tree_diff(&p, &kv, ops);
	ref_diff(&p, &kv, want_ops);
	g_assert_cmpuint(ops->len, ==, want_ops->len);
	g_assert_cmpuint(ops->len, >, 40);
	for (guint i = 0; i < ops->len; i++) {
		const struct tree_op *a = &g_array_index(ops, struct tree_op, i);
		const struct tree_op *b = &g_array_index(want_ops, struct tree_op, i);

		g_assert_cmpint(a->kind, ==, b->kind);
		g_assert_cmpuint(a->minor, ==, b->minor);
		g_assert_cmpuint(a->rate, ==, b->rate);
		g_assert_cmpuint(a->ceil, ==, b->ceil);
		g_assert_cmpmem(&a->cake, sizeof(a->cake), &b->cake, sizeof(b->cake));
		g_assert_cmpmem(&a->filter, sizeof(a->filter), &b->filter, sizeof(b->filter));
	}
	/* and once the kernel holds the plan, nothing to do */
	kernel_free(&k);
	kernel_from_plan(&p, &k);
	kv = view(&k);
	g_array_set_size(ops, 0);
	tree_diff(&p, &kv, ops);
	g_assert_cmpuint(ops->len, ==, 0);
	kernel_free(&k);
	tree_plan_clear(&p);
	peers_free(peers, SCALE_PEERS);
	g_free(peers);
}

/* shape_peers_update as it reads, every lookup a walk. */
static struct peer_want *ref_peer_in(GArray *peers, const uint8_t *key)
{
	for (guint i = 0; peers && i < peers->len; i++)
		if (!memcmp(g_array_index(peers, struct peer_want, i).key, key, WG_KEY_LEN))
			return &g_array_index(peers, struct peer_want, i);
	return NULL;
}

static GArray *ref_peers_update(GArray *before, const struct shape_request *req)
{
	GArray *now = g_array_new(false, true, sizeof(struct peer_want));

	for (guint i = 0; i < before->len; i++) {
		const struct peer_want *w = &g_array_index(before, struct peer_want, i);

		if (req->peers_action == PEERS_ONE || !strcmp(w->source, "set"))
			g_array_append_val(now, *w);
	}
	for (size_t i = 0; i < req->n_peers; i++) {
		const struct peer_want *old = ref_peer_in(before, req->peers[i].key);
		struct peer_want *have = ref_peer_in(now, req->peers[i].key), w = req->peers[i];

		if (!w.rate) {
			if (have)
				g_array_remove_index(now, (guint)(have - (struct peer_want *)(void *)
								       now->data));
			continue;
		}
		w.minor = have ? have->minor : 0;
		if (have)
			*have = w;
		else
			g_array_append_val(now, w);
		if (old)
			ref_peer_in(now, w.key)->minor = old->minor;
	}
	return now;
}

/*
 * A request naming every peer (apply) against the state: by hash, as the
 * walk gives it, in the same order; keys drawn from a few so that a state
 * that names a key twice, a peer taken out and put back, and peers set by
 * hand all come up.
 */
static void test_peers_update(void)
{
	g_autoptr(GRand) rnd = g_rand_new_with_seed(27);

	for (int round = 0; round < 200; round++) {
		struct shape_state st = { 0 };
		g_autoptr(GArray) before = g_array_new(false, true, sizeof(struct peer_want));
		g_autoptr(GArray) req_peers = g_array_new(false, true, sizeof(struct peer_want));
		g_autoptr(GArray) expect = NULL;
		struct shape_request req = { .peers_action = round % 3 ? PEERS_ALL : PEERS_ONE };
		int keys = g_rand_int_range(rnd, 1, 40);

		for (int i = g_rand_int_range(rnd, 0, 60); i > 0; i--) {
			struct peer_want w = want((uint8_t)g_rand_int_range(rnd, 0, keys),
						  (uint64_t)g_rand_int_range(rnd, 1, 1000));

			w.minor = (uint16_t)g_rand_int_range(rnd, 0x10, 0x1000);
			g_strlcpy(w.source, g_rand_boolean(rnd) ? "set" : "config x:1",
				  sizeof(w.source));
			g_array_append_val(before, w);
		}
		for (int i = g_rand_int_range(rnd, 0, 60); i > 0; i--) {
			struct peer_want w = want((uint8_t)g_rand_int_range(rnd, 0, keys),
						  (uint64_t)g_rand_int_range(rnd, 0, 4) * 1000);

			g_array_append_val(req_peers, w);
		}
		req.peers = (const struct peer_want *)(void *)req_peers->data;
		req.n_peers = req_peers->len;
		expect = ref_peers_update(before, &req);
		st.peers = g_array_copy(before);
		shape_peers_update(&st, &req);
		g_assert_cmpuint(st.peers->len, ==, expect->len);
		g_assert_cmpmem(st.peers->data, st.peers->len * sizeof(struct peer_want), expect->data,
				expect->len * sizeof(struct peer_want));
		shape_state_clear(&st);
	}
}

static void test_state(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-peers");
	struct shape_state st = { .ifindex = 3, .egress = true, .tree = true, .cap = 125000 };
	struct shape_state back = { 0 };
	struct peer_want w = want(5, 250000);
	const struct peer_want *b;

	g_strlcpy(st.orig_kind, "noqueue", sizeof(st.orig_kind));
	w.minor = 0x11;
	g_strlcpy(w.name, "laptop", sizeof(w.name));
	g_strlcpy(w.source, "config /etc/wgshape/wgshape.conf:7", sizeof(w.source));
	g_strlcpy(w.options, "diffserv4 ack-filter leaf cake", sizeof(w.options));
	w.activity = PEER_IDLE;
	st.tree_leaf = PEER_LEAF_FQ_CODEL;
	st.peers = g_array_new(false, true, sizeof(struct peer_want));
	g_array_append_val(st.peers, w);
	g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_true(back.tree);
	g_assert_cmpuint(back.cap, ==, 125000);
	g_assert_nonnull(back.peers);
	g_assert_cmpuint(back.peers->len, ==, 1);
	b = &g_array_index(back.peers, struct peer_want, 0);
	g_assert_cmpmem(b->key, WG_KEY_LEN, w.key, WG_KEY_LEN);
	g_assert_cmpuint(b->minor, ==, 0x11);
	g_assert_cmpuint(b->rate, ==, 250000);
	g_assert_cmpstr(b->name, ==, "laptop");
	g_assert_cmpstr(b->source, ==, w.source);
	g_assert_true(b->opts.has & CAKE_HAS_DIFFSERV);
	g_assert_cmpuint(b->opts.ack_filter, ==, 1);
	/* the leaf it asked for, as it was judged, and the interface's */
	g_assert_cmpuint(b->leaf, ==, PEER_LEAF_CAKE);
	g_assert_cmpuint(b->activity, ==, PEER_IDLE);
	g_assert_cmpuint(back.tree_leaf, ==, PEER_LEAF_FQ_CODEL);
	state_remove(dir, "wg0");
	g_rmdir(dir);
	shape_state_clear(&st);
	shape_state_clear(&back);
}

/*
 * The upload tree (on the IFB): each peer's upload rate, filters by source,
 * cake in ingress mode, the default class fair per source host; a peer
 * shaped one way only has no class in the other tree, and a peer keeps one
 * minor in both. Against a kernel holding the upload tree, the same plan is
 * no change, and the download tree's filters (by destination) are not its.
 */
static void test_plan_upload(void)
{
	struct wg_peer peers[] = {
		peer(1, (const char *const[]){ "10.0.0.2/32", "fd00::2/128", NULL }),
		peer(2, (const char *const[]){ "10.0.0.3/32", NULL }),
		peer(3, (const char *const[]){ "10.0.0.4/32", NULL }),
	};
	/* 1: both ways; 2: upload alone; 3: download alone */
	struct peer_want wants[] = { want(1, 1000000), want(2, 0), want(3, 300000) };
	struct tree_input up = { peers, 3, wants, 3, 0, { 0 }, 0, true };
	struct tree_input down = { peers, 3, wants, 3, 0, { 0 }, 0, false };
	struct tree_plan pu, pd;
	const struct tree_class *c;
	struct fake_kernel k;
	struct tree_kernel kv;
	g_autoptr(GArray) ops = g_array_new(false, true, sizeof(struct tree_op));

	wants[0].upload = 200000;
	wants[1].upload = 100000;
	tree_plan_init(&pu);
	tree_plan_init(&pd);
	g_assert_cmpint(tree_plan(&up, &pu), ==, 0);
	g_assert_cmpint(tree_plan(&down, &pd), ==, 0);
	g_assert_true(pu.upload);
	g_assert_false(pd.upload);
	/* cap, default, 1 and 2 upstream; cap, default, 1 and 3 downstream */
	g_assert_cmpuint(pu.classes->len, ==, 4);
	g_assert_cmpuint(pd.classes->len, ==, 4);
	g_assert_cmpuint(class_of(&pu, wants[0].minor)->ceil, ==, 200000);
	g_assert_cmpuint(class_of(&pu, wants[1].minor)->ceil, ==, 100000);
	g_assert_null(class_of(&pu, wants[2].minor));
	g_assert_cmpuint(class_of(&pd, wants[0].minor)->ceil, ==, 1000000);
	g_assert_null(class_of(&pd, wants[1].minor));
	g_assert_cmpuint(class_of(&pd, wants[2].minor)->ceil, ==, 300000);
	/* ingress mode upstream only */
	c = class_of(&pu, wants[0].minor);
	g_assert_true((c->cake.has & CAKE_HAS_INGRESS) && c->cake.ingress);
	c = class_of(&pd, wants[0].minor);
	g_assert_false(c->cake.has & CAKE_HAS_INGRESS);
	g_assert_false(c->cake.ingress);
	c = class_of(&pu, TREE_DEFAULT_MINOR);
	g_assert_cmpuint(c->cake.flow_mode, ==, 5); /* dual-srchost */
	g_assert_true(c->cake.ingress);
	/* 1's two AllowedIPs and 2's upstream; 1's two and 3's downstream */
	g_assert_cmpuint(pu.filters->len, ==, 3);
	g_assert_cmpuint(pd.filters->len, ==, 3);
	kernel_from_plan(&pu, &k);
	kv = view(&k);
	tree_diff(&pu, &kv, ops);
	g_assert_cmpuint(ops->len, ==, 0);
	for (guint i = 0; i < k.filters->len; i++)
		g_assert_true(g_array_index(k.filters, struct flower_info, i).src);
	/* the same filters by destination are other filters: all three go, three come */
	for (guint i = 0; i < k.filters->len; i++)
		g_array_index(k.filters, struct flower_info, i).src = false;
	kv = view(&k);
	tree_diff(&pu, &kv, ops);
	g_assert_cmpuint(ops->len, ==, 6);
	for (guint i = 0; i < ops->len; i++) {
		const struct tree_op *op = &g_array_index(ops, struct tree_op, i);

		g_assert_true(op->kind == (i < 3 ? TREE_FILTER_DEL : TREE_FILTER_ADD));
		g_assert_true(op->filter.src == (op->kind == TREE_FILTER_ADD));
	}
	kernel_free(&k);
	tree_plan_clear(&pu);
	tree_plan_clear(&pd);
	peers_free(peers, G_N_ELEMENTS(peers));
}

/*
 * One peer set by hand, one direction at a time: the direction not named
 * (PEER_RATE_KEEP) stays; off in one direction keeps the peer for the other;
 * off in both takes it out.
 */
static void test_peers_update_directions(void)
{
	struct shape_state st = { 0 };
	struct peer_want w = want(4, 500000), r = want(4, PEER_RATE_KEEP);
	struct shape_request req = { .peers_action = PEERS_ONE, .peers = &r, .n_peers = 1 };
	const struct peer_want *got;

	w.minor = 0x33;
	st.peers = g_array_new(false, true, sizeof(struct peer_want));
	g_array_append_val(st.peers, w);
	r.upload = 120000;
	shape_peers_update(&st, &req);
	g_assert_cmpuint(st.peers->len, ==, 1);
	got = &g_array_index(st.peers, struct peer_want, 0);
	g_assert_cmpuint(got->rate, ==, 500000);
	g_assert_cmpuint(got->upload, ==, 120000);
	g_assert_cmpuint(got->minor, ==, 0x33);
	r.rate = 0;
	r.upload = PEER_RATE_KEEP;
	shape_peers_update(&st, &req);
	g_assert_cmpuint(st.peers->len, ==, 1);
	got = &g_array_index(st.peers, struct peer_want, 0);
	g_assert_cmpuint(got->rate, ==, 0);
	g_assert_cmpuint(got->upload, ==, 120000);
	g_assert_cmpuint(got->minor, ==, 0x33);
	r.rate = PEER_RATE_KEEP;
	r.upload = 0;
	shape_peers_update(&st, &req);
	g_assert_cmpuint(st.peers->len, ==, 0);
	shape_state_clear(&st);
}

/* A peer shaped on upload alone, and the ingress tree, through the state file. */
static void test_state_upload(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-peers");
	struct shape_state st = { .ifindex = 3, .ingress = true, .in_tree = true, .in_cap = 90000 };
	struct shape_state back = { 0 };
	struct peer_want w = want(6, 0);

	g_strlcpy(st.ifb, "ifb4wg0", sizeof(st.ifb));
	w.upload = 64000;
	w.minor = 0x12;
	g_strlcpy(w.source, "set", sizeof(w.source));
	st.tree_leaf = PEER_LEAF_CAKE;
	st.tree_opts.has = CAKE_HAS_DIFFSERV;
	st.peers = g_array_new(false, true, sizeof(struct peer_want));
	g_array_append_val(st.peers, w);
	g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_false(back.tree);
	g_assert_true(back.in_tree);
	g_assert_cmpuint(back.in_cap, ==, 90000);
	g_assert_cmpuint(back.tree_leaf, ==, PEER_LEAF_CAKE);
	g_assert_true(back.tree_opts.has & CAKE_HAS_DIFFSERV);
	g_assert_cmpuint(back.peers->len, ==, 1);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).upload, ==, 64000);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).minor, ==, 0x12);
	state_remove(dir, "wg0");
	g_rmdir(dir);
	shape_state_clear(&st);
	shape_state_clear(&back);
}

/* The op for minor in ops, of kind; NULL when there is none. */
static const struct tree_op *op_for(GArray *ops, enum tree_op_kind kind, uint16_t minor)
{
	for (guint i = 0; i < ops->len; i++) {
		const struct tree_op *op = &g_array_index(ops, struct tree_op, i);

		if (op->kind == kind && op->minor == minor)
			return op;
	}
	return NULL;
}

/* Plan in again (into p, cleared by the caller) and its ops against k (ops emptied first). */
static void replan(struct tree_input *in, const struct tree_kernel *k, struct tree_plan *p,
		   GArray *ops)
{
	g_array_set_size(ops, 0);
	tree_plan_init(p);
	g_assert_cmpint(tree_plan(in, p), ==, 0);
	tree_diff(p, k, ops);
}

/*
 * Leaves: lazy is cake while the peer is active and a small fq_codel while
 * idle; cake and fq_codel are what they say; a peer's own leaf over the
 * interface's. A change of activity is one leaf replaced, nothing else.
 */
static void test_leaves(void)
{
	struct wg_peer peers[] = {
		peer(1, (const char *const[]){ "10.0.0.2/32", NULL }),
		peer(2, (const char *const[]){ "10.0.0.3/32", NULL }),
		peer(3, (const char *const[]){ "10.0.0.4/32", NULL }),
		peer(4, (const char *const[]){ "10.0.0.5/32", NULL }),
	};
	struct peer_want wants[] = { want(1, 1000000), want(2, 1000000), want(3, 1000000),
				     want(4, 1000000) };
	struct tree_input in = { peers, 4, wants, 4, 0, { 0 } };
	struct tree_kernel kv;
	struct fake_kernel k;
	struct tree_plan p;
	g_autoptr(GArray) ops = NULL;
	const struct tree_op *op;

	wants[0].activity = PEER_ACTIVE; /* lazy, active: cake */
	wants[1].activity = PEER_IDLE; /* lazy, idle: small fq_codel */
	wants[2].leaf = PEER_LEAF_CAKE; /* cake, though idle */
	wants[2].activity = PEER_IDLE;
	wants[3].leaf = PEER_LEAF_FQ_CODEL; /* fq_codel, though active */
	wants[3].activity = PEER_ACTIVE;
	ops = g_array_new(false, true, sizeof(struct tree_op));
	tree_plan_init(&p);
	g_assert_cmpint(tree_plan(&in, &p), ==, 0);
	tree_diff(&p, &(struct tree_kernel){ 0 }, ops);
	op = op_for(ops, TREE_LEAF_ADD, wants[0].minor);
	g_assert_nonnull(op);
	g_assert_cmpuint(op->qdisc, ==, TREE_QDISC_CAKE);
	op = op_for(ops, TREE_LEAF_ADD, wants[1].minor);
	g_assert_nonnull(op);
	g_assert_cmpuint(op->qdisc, ==, TREE_QDISC_FQ_CODEL);
	g_assert_cmpuint(op->flows, ==, TREE_IDLE_FLOWS);
	g_assert_cmpuint(op_for(ops, TREE_LEAF_ADD, wants[2].minor)->qdisc, ==, TREE_QDISC_CAKE);
	op = op_for(ops, TREE_LEAF_ADD, wants[3].minor);
	g_assert_cmpuint(op->qdisc, ==, TREE_QDISC_FQ_CODEL);
	g_assert_cmpuint(op->flows, ==, TREE_FQ_CODEL_FLOWS);
	/* the default class keeps cake, whatever the peers' leaves */
	g_assert_cmpuint(op_for(ops, TREE_LEAF_ADD, TREE_DEFAULT_MINOR)->qdisc, ==,
			 TREE_QDISC_CAKE);
	kernel_from_plan(&p, &k);
	kv = view(&k);
	tree_plan_clear(&p);

	/* the idle peer moves traffic: its leaf alone becomes cake */
	wants[1].activity = PEER_ACTIVE;
	replan(&in, &kv, &p, ops);
	g_assert_cmpuint(ops->len, ==, 1);
	op = &g_array_index(ops, struct tree_op, 0);
	g_assert_cmpint(op->kind, ==, TREE_LEAF_ADD);
	g_assert_cmpuint(op->minor, ==, wants[1].minor);
	g_assert_cmpuint(op->qdisc, ==, TREE_QDISC_CAKE);
	tree_plan_clear(&p);

	/* the active one goes idle: its cake alone is taken back */
	wants[1].activity = PEER_IDLE;
	wants[0].activity = PEER_IDLE;
	replan(&in, &kv, &p, ops);
	g_assert_cmpuint(ops->len, ==, 1);
	op = &g_array_index(ops, struct tree_op, 0);
	g_assert_cmpuint(op->minor, ==, wants[0].minor);
	g_assert_cmpuint(op->qdisc, ==, TREE_QDISC_FQ_CODEL);
	g_assert_cmpuint(op->flows, ==, TREE_IDLE_FLOWS);
	tree_plan_clear(&p);

	/* leaf = cake on the interface: the lazy peers get cake, a peer's own fq_codel stays */
	in.leaf = PEER_LEAF_CAKE;
	replan(&in, &kv, &p, ops);
	/* (the kernel still has peer 1's cake: peer 2's alone is made) */
	g_assert_cmpuint(ops->len, ==, 1);
	g_assert_cmpuint(op_for(ops, TREE_LEAF_ADD, wants[1].minor)->qdisc, ==, TREE_QDISC_CAKE);
	tree_plan_clear(&p);
	g_assert_cmpint(tree_leaf_of(&wants[3], PEER_LEAF_CAKE), ==, PEER_LEAF_FQ_CODEL);
	g_assert_cmpint(tree_leaf_of(&wants[0], PEER_LEAF_UNSET), ==, PEER_LEAF_LAZY);
	g_assert_cmpint(tree_leaf_of(&wants[0], 9), ==, PEER_LEAF_LAZY);

	/* an fq_codel of another size than planned is replaced */
	in.leaf = PEER_LEAF_UNSET;
	for (guint i = 0; i < k.qdiscs->len; i++)
		g_array_index(k.qdiscs, struct qdisc_info, i).fq_flows *= 2;
	kv = view(&k);
	replan(&in, &kv, &p, ops);
	/* peer 2 (idle, was 64) and peer 4 (fq_codel, was 1024); peer 1 was cake */
	g_assert_nonnull(op_for(ops, TREE_LEAF_ADD, wants[1].minor));
	g_assert_nonnull(op_for(ops, TREE_LEAF_ADD, wants[3].minor));
	tree_plan_clear(&p);
	kernel_free(&k);
	peers_free(peers, G_N_ELEMENTS(peers));
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/peers/plan", test_plan_basic);
	g_test_add_func("/peers/minors", test_plan_minors);
	g_test_add_func("/peers/cap", test_plan_cap);
	g_test_add_func("/peers/overlap", test_plan_overlap);
	g_test_add_func("/peers/prefix-and-key", test_prefix);
	g_test_add_func("/peers/key-canonical", test_key_canonical);
	g_test_add_func("/peers/diff", test_diff);
	g_test_add_func("/peers/leaves", test_leaves);
	g_test_add_func("/peers/plan-scale", test_plan_scale);
	g_test_add_func("/peers/update", test_peers_update);
	g_test_add_func("/peers/state", test_state);
	g_test_add_func("/peers/plan-upload", test_plan_upload);
	g_test_add_func("/peers/update-directions", test_peers_update_directions);
	g_test_add_func("/peers/state-upload", test_state_upload);
	return g_test_run();
}
