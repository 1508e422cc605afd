// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-peer tree's planner, without a kernel: which classes and filters
 * (tree_plan), and which changes turn what the kernel has into that
 * (tree_diff). src/shape/tree-sync.c reads the kernel and carries them out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "shape/cake.h"
#include "shape/tree-plan.h"
#include "util/hash.h"

/* cake's flow isolation values (linux/pkt_sched.h, CAKE_FLOW_DUAL_SRC and _DST) */
#define FLOW_MODE_DUAL_SRC 5u
#define FLOW_MODE_DUAL_DST 6u

void tree_plan_init(struct tree_plan *p)
{
	p->classes = g_array_new(false, true, sizeof(struct tree_class));
	p->filters = g_array_new(false, true, sizeof(struct tree_filter));
	p->warnings = g_ptr_array_new_with_free_func(g_free);
}

void tree_plan_clear(struct tree_plan *p)
{
	if (p->classes)
		g_array_free(p->classes, true);
	if (p->filters)
		g_array_free(p->filters, true);
	if (p->warnings)
		g_ptr_array_free(p->warnings, true);
	memset(p, 0, sizeof(*p));
}

static size_t prefix_bytes(const struct tc_prefix *p)
{
	return p->family == AF_INET ? 4 : 16;
}

/* Give each want without a minor (or with one another want took) the lowest free one. */
static int assign_minors(struct peer_want *wants, size_t n)
{
	g_autofree uint8_t *used = g_malloc0(TREE_PEER_MINOR_LAST + 1);
	unsigned int next = TREE_PEER_MINOR_FIRST;

	for (size_t i = 0; i < n; i++) {
		uint16_t m = wants[i].minor;

		if (m < TREE_PEER_MINOR_FIRST || m > TREE_PEER_MINOR_LAST || used[m])
			wants[i].minor = 0;
		else
			used[m] = 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (wants[i].minor)
			continue;
		while (next <= TREE_PEER_MINOR_LAST && used[next])
			next++;
		if (next > TREE_PEER_MINOR_LAST)
			return -ENOSPC;
		used[next] = 1;
		wants[i].minor = (uint16_t)next;
	}
	return 0;
}

/*
 * A table from key to the first of n entries with that key (the first, as a
 * walk from the start would find it), each stride bytes after the last; the
 * value is the entry's index + 1.
 */
static GHashTable *index_keys(const void *base, size_t n, size_t stride)
{
	GHashTable *t = g_hash_table_new(wg_key_hash, wg_key_equal);

	for (size_t i = n; i-- > 0;)
		g_hash_table_insert(t, (uint8_t *)base + i * stride, GSIZE_TO_POINTER(i + 1));
	return t;
}

/* The index (+ 1) a table from index_keys holds for key; 0 for none. */
static size_t index_find(GHashTable *t, const uint8_t *key)
{
	return GPOINTER_TO_SIZE(g_hash_table_lookup(t, key));
}

/* One AllowedIP of one peer, for the overlap scan. */
struct span {
	const struct tc_prefix *p;
	size_t peer; /* index into in->peers */
	bool wanted; /* the peer has a class: this prefix would be a filter */
	bool conflict;
};

static int span_cmp(const void *a, const void *b)
{
	const struct tc_prefix *x = ((const struct span *)a)->p, *y = ((const struct span *)b)->p;
	int c;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	c = memcmp(x->addr, y->addr, prefix_bytes(x));
	if (c)
		return c;
	return x->prefixlen < y->prefixlen ? -1 : x->prefixlen > y->prefixlen;
}

/*
 * Mark every filter-to-be that contains another peer's AllowedIP, and that
 * one: flower has no longest-prefix rule, so the pair cannot be told apart.
 * (A wider prefix with no filter is harmless: the narrower one's filter takes
 * its own, the rest goes to the default class, as WireGuard would send it.)
 * Sorted by address, whatever contains a prefix comes before it, on a stack
 * of at most 129 nested prefixes.
 */
static void mark_overlaps(struct span *s, size_t n)
{
	size_t stack[129], depth = 0;

	qsort(s, n, sizeof(*s), span_cmp);
	for (size_t i = 0; i < n; i++) {
		while (depth && !tc_prefix_contains(s[stack[depth - 1]].p, s[i].p))
			depth--;
		for (size_t d = 0; d < depth; d++) {
			if (s[stack[d]].peer == s[i].peer || !s[stack[d]].wanted)
				continue;
			s[stack[d]].conflict = true;
			s[i].conflict = true;
		}
		if (depth < G_N_ELEMENTS(stack))
			stack[depth++] = i;
	}
}

static const char *want_label(const struct peer_want *w, char *buf, size_t len)
{
	char key[45];

	wg_key_to_base64(w->key, key);
	if (w->name[0])
		snprintf(buf, len, "peer %s (%.8s...)", w->name, key);
	else
		snprintf(buf, len, "peer %.8s...", key);
	return buf;
}

/* The rate w wants in this tree's direction; 0: no class here. */
static uint64_t want_rate(const struct tree_input *in, const struct peer_want *w)
{
	uint64_t r = in->upload ? w->upload : w->rate;

	return r == PEER_RATE_KEEP ? 0 : r;
}

/*
 * For each of in's peers, the first want with its key if it has a rate in
 * this direction, or NULL (g_free the array).
 */
static struct peer_want **wants_of_peers(const struct tree_input *in)
{
	g_autoptr(GHashTable) wants = index_keys(in->wants, in->n_wants, sizeof(*in->wants));
	struct peer_want **of = g_new0(struct peer_want *, in->n_peers ? in->n_peers : 1);

	for (size_t i = 0; i < in->n_peers; i++) {
		size_t w = index_find(wants, in->peers[i].key);

		of[i] = w && want_rate(in, &in->wants[w - 1]) ? &in->wants[w - 1] : NULL;
	}
	return of;
}

static void warn_everything(struct tree_plan *out, const struct peer_want *w,
			    const struct tc_prefix *p)
{
	char label[96], pfx[64];

	g_ptr_array_add(out->warnings, g_strdup_printf(
		"%s: AllowedIPs %s is every address: not used to classify; its traffic goes to "
		"the default class", want_label(w, label, sizeof(label)),
		tc_prefix_str(p, pfx, sizeof(pfx))));
}

/* Filters for the wanted peers' AllowedIPs, and warnings for those left out. */
static void plan_filters(const struct tree_input *in, struct tree_plan *out)
{
	g_autoptr(GArray) spans = g_array_new(false, true, sizeof(struct span));
	g_autofree struct peer_want **want_of = wants_of_peers(in);
	char label[96], pfx[64];

	for (size_t i = 0; i < in->n_peers; i++)
		for (size_t a = 0; a < in->peers[i].n_allowed; a++) {
			struct span s = { .p = &in->peers[i].allowed[a], .peer = i,
					  .wanted = want_of[i] != NULL };

			if (s.p->prefixlen == 0)
				continue; /* every address: never a filter (said below) */

			g_array_append_val(spans, s);
		}
	for (size_t i = 0; i < in->n_peers; i++)
		for (size_t a = 0; a < in->peers[i].n_allowed; a++)
			if (in->peers[i].allowed[a].prefixlen == 0 && want_of[i])
				warn_everything(out, want_of[i], &in->peers[i].allowed[a]);
	mark_overlaps((struct span *)(void *)spans->data, spans->len);
	for (guint i = 0; i < spans->len; i++) {
		const struct span *s = &g_array_index(spans, struct span, i);
		const struct peer_want *w = want_of[s->peer];
		struct tree_filter f = { .match = *s->p };

		if (!w)
			continue;
		if (s->conflict) {
			g_ptr_array_add(out->warnings, g_strdup_printf(
				"%s: AllowedIPs %s overlaps another peer's: not used to classify; "
				"its traffic goes to the default class",
				want_label(w, label, sizeof(label)),
				tc_prefix_str(s->p, pfx, sizeof(pfx))));
			continue;
		}
		f.minor = w->minor;
		g_array_append_val(out->filters, f);
	}
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * The leaf's cake: the interface's options, then the peer's own; unlimited
 * (HTB shapes); in ingress mode in the upload tree (it counts what it drops
 * as sent: the packets came over the line already).
 */
static struct cake_opts leaf_opts(const struct tree_input *in, const struct cake_opts *own)
{
	struct cake_opts o = in->opts;

	if (own)
		cake_opts_merge(&o, own);
	o.rate = 0;
	o.has |= CAKE_HAS_RATE;
	o.has &= ~CAKE_HAS_INGRESS;
	o.ingress = in->upload;
	if (in->upload)
		o.has |= CAKE_HAS_INGRESS;
	return o;
}

enum peer_leaf tree_leaf_of(const struct peer_want *w, uint8_t in_leaf)
{
	if (peer_leaf_name(w->leaf))
		return w->leaf;
	return peer_leaf_name(in_leaf) ? in_leaf : PEER_LEAF_LAZY;
}

/* The qdisc under a peer's class: cake, or fq_codel as its leaf and activity say. */
static void plan_leaf(const struct tree_input *in, const struct peer_want *w,
		      struct tree_class *c)
{
	switch (tree_leaf_of(w, in->leaf)) {
	case PEER_LEAF_FQ_CODEL:
		c->qdisc = TREE_QDISC_FQ_CODEL;
		c->flows = TREE_FQ_CODEL_FLOWS;
		return;
	case PEER_LEAF_LAZY:
		if (w->activity != PEER_ACTIVE) {
			c->qdisc = TREE_QDISC_FQ_CODEL;
			c->flows = TREE_IDLE_FLOWS;
			return;
		}
		break;
	case PEER_LEAF_CAKE:
	case PEER_LEAF_UNSET:
		break;
	}
	c->qdisc = TREE_QDISC_CAKE;
}

/*
 * Classes: each peer's rate (never above the cap) is its class's ceil: HTB
 * shapes, its cake leaf is unlimited and manages the queue. (A cake that
 * shapes under HTB measured about as well in vm-peers, but HTB takes it for
 * a class that will not send, "non-work-conserving", and the cap and a rate
 * change are HTB's anyway; tests/vm/README.md.) With a cap, the guaranteed
 * rates are the peers' rates scaled down until they fit in it, with a share
 * for the default class, so that the cap holds when all are busy.
 */
static void plan_classes(const struct tree_input *in, struct tree_plan *out)
{
	uint64_t cap = in->cap ? in->cap : TREE_RATE_UNLIMITED, sum;
	struct tree_class def = { .minor = TREE_DEFAULT_MINOR, .leaf = true, .want = -1 };
	struct tree_class top = { .minor = TREE_CAP_MINOR, .rate = cap, .ceil = cap, .want = -1 };
	g_autoptr(GHashTable) peers = index_keys(in->peers, in->n_peers, sizeof(*in->peers));
	size_t first;
	double scale = 1.0;

	g_array_append_val(out->classes, top);
	def.ceil = cap;
	def.cake = leaf_opts(in, NULL);
	if (!(def.cake.has & CAKE_HAS_FLOW_MODE)) {
		/* fair per client: by destination going to them, by source from them */
		def.cake.flow_mode = in->upload ? FLOW_MODE_DUAL_SRC : FLOW_MODE_DUAL_DST;
		def.cake.has |= CAKE_HAS_FLOW_MODE;
	}
	first = out->classes->len + 1;
	g_array_append_val(out->classes, def);
	sum = 0;
	for (size_t i = 0; i < in->n_wants; i++) {
		struct tree_class c = { .minor = in->wants[i].minor, .leaf = true, .want = (int)i };

		if (!index_find(peers, in->wants[i].key) || !want_rate(in, &in->wants[i]))
			continue; /* not on the interface now, or not shaped this way */
		c.rate = min_u64(want_rate(in, &in->wants[i]), cap);
		c.ceil = c.rate;
		c.cake = leaf_opts(in, &in->wants[i].opts);
		plan_leaf(in, &in->wants[i], &c);
		sum += c.rate;
		g_array_append_val(out->classes, c);
	}
	/* the default class's share when the cap is shared out: one peer's worth */
	def.rate = in->cap ? cap / (out->classes->len - 1) : cap;
	if (in->cap && sum + def.rate > cap)
		scale = (double)cap / (double)(sum + def.rate);
	g_array_index(out->classes, struct tree_class, first - 1).rate =
		def.rate * scale < TREE_RATE_MIN ? TREE_RATE_MIN : (uint64_t)(def.rate * scale);
	for (guint i = first; i < out->classes->len && scale < 1.0; i++) {
		struct tree_class *c = &g_array_index(out->classes, struct tree_class, i);
		uint64_t r = (uint64_t)((double)c->rate * scale);

		c->rate = r < TREE_RATE_MIN ? TREE_RATE_MIN : r;
	}
}

int tree_plan(struct tree_input *in, struct tree_plan *out)
{
	int r;

	r = assign_minors(in->wants, in->n_wants);
	if (r < 0)
		return r;
	out->upload = in->upload;
	plan_classes(in, out);
	plan_filters(in, out);
	return 0;
}

/*
 * What tree_diff looks up by id: the kernel's classes (by class id) and
 * leaves (by parent) of our major, the first of each as a walk would find
 * it, and the planned classes' ids; minors index the arrays directly.
 */
struct diff_index {
	const struct tc_class_info *class[TREE_PEER_MINOR_LAST + 1];
	const struct qdisc_info *leaf[TREE_PEER_MINOR_LAST + 1];
	bool planned[TREE_PEER_MINOR_LAST + 1];
};

static bool ours(uint32_t handle)
{
	return (handle >> 16) == TREE_MAJOR && (handle & 0xffff) <= TREE_PEER_MINOR_LAST;
}

static struct diff_index *diff_index_new(const struct tree_plan *p, const struct tree_kernel *k)
{
	struct diff_index *x = g_new0(struct diff_index, 1);

	for (size_t i = k->n_classes; i-- > 0;)
		if (ours(k->classes[i].classid))
			x->class[k->classes[i].classid & 0xffff] = &k->classes[i];
	for (size_t i = k->n_qdiscs; i-- > 0;)
		if (ours(k->qdiscs[i].parent))
			x->leaf[k->qdiscs[i].parent & 0xffff] = &k->qdiscs[i];
	for (guint i = 0; i < p->classes->len; i++)
		x->planned[g_array_index(p->classes, struct tree_class, i).minor] = true;
	return x;
}

static const struct tc_class_info *kernel_class(const struct diff_index *x, uint16_t minor)
{
	return minor <= TREE_PEER_MINOR_LAST ? x->class[minor] : NULL;
}

static const struct qdisc_info *kernel_leaf(const struct diff_index *x, uint16_t minor)
{
	return minor <= TREE_PEER_MINOR_LAST ? x->leaf[minor] : NULL;
}

static uint32_t class_parent(uint16_t minor)
{
	return minor == TREE_CAP_MINOR ? TREE_HANDLE(0) : TREE_HANDLE(TREE_CAP_MINOR);
}

static void push(GArray *ops, enum tree_op_kind kind, const struct tree_class *c)
{
	struct tree_op op = { .kind = kind, .minor = c->minor, .rate = c->rate, .ceil = c->ceil,
			      .qdisc = c->qdisc, .flows = c->flows, .cake = c->cake };

	g_array_append_val(ops, op);
}

/* Is the kernel's leaf of the planned kind (and fq_codel's size)? */
static bool leaf_is(const struct qdisc_info *leaf, const struct tree_class *c)
{
	if (c->qdisc == TREE_QDISC_FQ_CODEL)
		return !strcmp(leaf->kind, "fq_codel") && leaf->fq_flows == c->flows;
	return !strcmp(leaf->kind, "cake");
}

/* One planned class against the kernel's: add, change, or a fresh leaf. */
static void diff_class(const struct tree_class *c, const struct diff_index *x, GArray *ops,
		       GArray *dels)
{
	const struct tc_class_info *kc = kernel_class(x, c->minor);
	const struct qdisc_info *leaf;

	/* the kernel gives a class at the root the parent TC_H_ROOT */
	if (kc && kc->parent != class_parent(c->minor) &&
	    !(c->minor == TREE_CAP_MINOR && kc->parent == 0xffffffffu)) {
		/* In the wrong place (made by hand?): HTB cannot move a class. */
		push(dels, TREE_CLASS_DEL, c);
		kc = NULL;
	}
	if (!kc) {
		push(ops, TREE_CLASS_ADD, c);
		if (c->leaf)
			push(ops, TREE_LEAF_ADD, c);
		return;
	}
	if (kc->rate != c->rate || kc->ceil != c->ceil)
		push(ops, TREE_CLASS_CHANGE, c);
	if (!c->leaf)
		return;
	leaf = kernel_leaf(x, c->minor);
	if (!leaf || !leaf_is(leaf, c))
		push(ops, TREE_LEAF_ADD, c);
	else if (c->qdisc == TREE_QDISC_CAKE && !cake_opts_hold(&leaf->cake, &c->cake))
		push(ops, TREE_LEAF_CHANGE, c);
}

static bool planned_class(const struct diff_index *x, uint32_t classid)
{
	return ours(classid) && x->planned[classid & 0xffff];
}

/*
 * A filter as a hash table key: its address (only the family's bytes), which
 * end of the packet it matches, and its class.
 */
struct filter_key {
	uint32_t family, prefixlen, classid, src;
	uint8_t addr[16];
};

static struct filter_key *filter_key(const struct tc_prefix *match, bool src, uint32_t classid)
{
	struct filter_key *k = g_new0(struct filter_key, 1);

	k->family = (uint32_t)match->family;
	k->prefixlen = match->prefixlen;
	k->classid = classid;
	k->src = src;
	memcpy(k->addr, match->addr, prefix_bytes(match));
	return k;
}

static guint filter_key_hash(gconstpointer p)
{
	return bytes_hash(p, sizeof(struct filter_key));
}

static gboolean filter_key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, sizeof(struct filter_key)) == 0;
}

/* Filters: keep what is planned and there, delete the rest, add what is missing. */
static void diff_filters(const struct tree_plan *p, const struct tree_kernel *k, GArray *dels,
			 GArray *adds)
{
	g_autoptr(GHashTable) have = g_hash_table_new_full(filter_key_hash, filter_key_equal,
							   g_free, NULL);
	g_autoptr(GHashTable) planned = g_hash_table_new_full(filter_key_hash, filter_key_equal,
							      g_free, NULL);

	for (guint i = 0; i < p->filters->len; i++) {
		const struct tree_filter *f = &g_array_index(p->filters, struct tree_filter, i);

		g_hash_table_add(planned, filter_key(&f->match, p->upload, TREE_HANDLE(f->minor)));
	}
	for (size_t i = 0; i < k->n_filters; i++) {
		struct filter_key *key = filter_key(&k->filters[i].match, k->filters[i].src,
						    k->filters[i].classid);
		struct tree_op op = { .kind = TREE_FILTER_DEL, .filter = k->filters[i] };

		if (g_hash_table_contains(planned, key) && !g_hash_table_contains(have, key)) {
			g_hash_table_add(have, key);
			continue;
		}
		g_free(key);
		g_array_append_val(dels, op);
	}
	for (guint i = 0; i < p->filters->len; i++) {
		const struct tree_filter *f = &g_array_index(p->filters, struct tree_filter, i);
		g_autofree struct filter_key *key = filter_key(&f->match, p->upload,
							       TREE_HANDLE(f->minor));
		struct tree_op op = { .kind = TREE_FILTER_ADD, .minor = f->minor };

		if (g_hash_table_contains(have, key))
			continue;
		op.filter.parent = TREE_HANDLE(0);
		op.filter.prio = f->match.family == AF_INET ? TREE_PRIO_V4 : TREE_PRIO_V6;
		op.filter.match = f->match;
		op.filter.src = p->upload;
		op.filter.classid = TREE_HANDLE(f->minor);
		g_array_append_val(adds, op);
	}
}

void tree_diff(const struct tree_plan *p, const struct tree_kernel *k, GArray *ops)
{
	g_autoptr(GArray) fdels = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) fadds = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) cdels = g_array_new(false, true, sizeof(struct tree_op));
	g_autoptr(GArray) mid = g_array_new(false, true, sizeof(struct tree_op));
	g_autofree struct diff_index *x = diff_index_new(p, k);

	diff_filters(p, k, fdels, fadds);
	for (guint i = 0; i < p->classes->len; i++)
		diff_class(&g_array_index(p->classes, struct tree_class, i), x, mid, cdels);
	for (size_t i = 0; i < k->n_classes; i++) {
		uint32_t id = k->classes[i].classid;
		struct tree_op op = { .kind = TREE_CLASS_DEL, .minor = (uint16_t)(id & 0xffff) };

		if ((id >> 16) == TREE_MAJOR && !planned_class(x, id))
			g_array_append_val(cdels, op);
	}
	/* Filters away before their classes go; classes in place before filters point there. */
	g_array_append_vals(ops, fdels->data, fdels->len);
	/* A misplaced class goes before it is made again; the cap class before the rest. */
	for (guint i = 0; i < cdels->len; i++)
		if (planned_class(x, TREE_HANDLE(g_array_index(cdels, struct tree_op, i).minor)))
			g_array_append_val(ops, g_array_index(cdels, struct tree_op, i));
	g_array_append_vals(ops, mid->data, mid->len);
	g_array_append_vals(ops, fadds->data, fadds->len);
	for (guint i = 0; i < cdels->len; i++)
		if (!planned_class(x, TREE_HANDLE(g_array_index(cdels, struct tree_op, i).minor)))
			g_array_append_val(ops, g_array_index(cdels, struct tree_op, i));
}
