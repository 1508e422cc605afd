// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The per-peer tree's kernel sync: read back what is under wgshape's HTB
 * root, ask the planner (src/shape/tree-plan.c) for the changes, and carry
 * them out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "shape/memory.h"
#include "shape/tree-plan.h"
#include "shape/tree-sync.h"

void tree_kernel_clear(struct tree_kernel_read *k)
{
	for (size_t i = 0; i < k->n_qdiscs; i++)
		qdisc_info_clear(&k->qdiscs[i]);
	free(k->classes);
	free(k->qdiscs);
	free(k->filters);
	if (!k->peers_given)
		wg_peers_free(k->peers, k->n_peers);
	memset(k, 0, sizeof(*k));
}

int tree_kernel_read(struct netlink *nl, const struct link_info *link, struct tree_kernel_read *k)
{
	int r;

	r = 0;
	if (!k->peers_given)
		r = netlink_wg_peers(nl, link->name, &k->peers, &k->n_peers);
	if (r < 0) {
		k->failed = "read WireGuard peers";
		return r;
	}
	r = netlink_class_list(nl, link->ifindex, &k->classes, &k->n_classes);
	if (r == 0)
		r = netlink_qdisc_list(nl, link->ifindex, &k->qdiscs, &k->n_qdiscs);
	if (r == 0)
		r = netlink_flower_list(nl, link->ifindex, TREE_HANDLE(0), &k->filters,
					&k->n_filters);
	if (r < 0) {
		k->failed = "read classes, qdiscs and filters";
		tree_kernel_clear(k);
	}
	return r;
}

static int op_run(struct netlink *nl, int ifindex, const struct tree_op *op)
{
	uint32_t id = TREE_HANDLE(op->minor);
	uint32_t parent = op->minor == TREE_CAP_MINOR ? TREE_HANDLE(0) : TREE_HANDLE(TREE_CAP_MINOR);

	switch (op->kind) {
	case TREE_FILTER_DEL:
		return netlink_filter_del(nl, ifindex, op->filter.parent, op->filter.prio,
					  op->filter.match.family, op->filter.handle);
	case TREE_CLASS_ADD:
		return netlink_htb_class_set(nl, ifindex, id, parent, op->rate, op->ceil, QDISC_ADD);
	case TREE_CLASS_CHANGE:
		return netlink_htb_class_set(nl, ifindex, id, parent, op->rate, op->ceil,
					     QDISC_CHANGE);
	case TREE_LEAF_ADD:
		if (op->qdisc == TREE_QDISC_FQ_CODEL)
			return netlink_fq_codel_set_at(nl, ifindex, id, op->flows);
		return netlink_cake_set_at(nl, ifindex, id, TREE_LEAF_HANDLE(op->minor), &op->cake,
					   QDISC_REPLACE);
	case TREE_LEAF_CHANGE:
		return netlink_cake_set_at(nl, ifindex, id, TREE_LEAF_HANDLE(op->minor), &op->cake,
					   QDISC_CHANGE);
	case TREE_FILTER_ADD:
		return netlink_flower_add(nl, ifindex, op->filter.parent, op->filter.prio, 0,
					  &op->filter.match, op->filter.src, op->filter.classid);
	case TREE_CLASS_DEL:
		return netlink_class_del(nl, ifindex, id);
	}
	return -EINVAL;
}

static const char *op_name(enum tree_op_kind kind)
{
	static const char *const names[] = {
		[TREE_FILTER_DEL] = "delete filter",	[TREE_CLASS_ADD] = "add class",
		[TREE_CLASS_CHANGE] = "change class",	[TREE_LEAF_ADD] = "add leaf to class",
		[TREE_LEAF_CHANGE] = "change cake of class", [TREE_FILTER_ADD] = "add filter",
		[TREE_CLASS_DEL] = "delete class",
	};

	return names[kind];
}

/* Carry out ops; the first failure stops (what is done stays: the next reconcile goes on). */
static int ops_run(struct netlink *nl, const struct link_info *link, GArray *ops)
{
	for (guint i = 0; i < ops->len; i++) {
		const struct tree_op *op = &g_array_index(ops, struct tree_op, i);
		char pfx[64] = "";
		int r;

		r = op_run(nl, link->ifindex, op);
		if (r == -ENOENT && (op->kind == TREE_FILTER_DEL || op->kind == TREE_CLASS_DEL))
			r = 0; /* gone already */
		if (r < 0) {
			if (op->kind == TREE_FILTER_ADD || op->kind == TREE_FILTER_DEL)
				tc_prefix_str(&op->filter.match, pfx, sizeof(pfx));
			log_err("%s: %s 1:%x%s%s: %s", link->name, op_name(op->kind), op->minor,
				*pfx ? " for " : "", pfx,
				*netlink_ext_msg(nl) ? netlink_ext_msg(nl) : strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * Will the cake leaves ops adds fit in the machine's memory (shape/memory.h)?
 * 0, with a warning when tight; -ENOMEM (said) when not: nothing is made.
 */
static int leaves_check(const struct link_info *link, GArray *ops)
{
	uint64_t n = 0, avail, total;
	struct leaves_need x;

	for (guint i = 0; i < ops->len; i++) {
		const struct tree_op *op = &g_array_index(ops, struct tree_op, i);

		n += op->kind == TREE_LEAF_ADD && op->qdisc == TREE_QDISC_CAKE;
	}
	if (!n)
		return 0;
	if (meminfo_read("/proc/meminfo", &avail, &total) < 0) {
		log_debug("%s: no MemAvailable in /proc/meminfo: cake leaves not checked "
			  "against memory", link->name);
		return 0;
	}
	switch (leaves_fit(n, avail, total, &x)) {
	case LEAVES_REFUSED:
		log_err("%s: %" PRIu64 " new cake leaves would take about %" PRIu64 " MiB of kernel "
			"memory; %" PRIu64 " MiB is available, %" PRIu64 " MiB of it kept free: not "
			"made (leaf = lazy or fq_codel, fewer peers with a rate of their own, or more memory)", link->name, n,
			x.need_kib >> 10, avail >> 10, x.reserve_kib >> 10);
		return -ENOMEM;
	case LEAVES_TIGHT:
		log_warn("%s: %" PRIu64 " new cake leaves take about %" PRIu64 " MiB of kernel memory, "
			 "over half of the %" PRIu64 " MiB available", link->name, n,
			 x.need_kib >> 10, avail >> 10);
		return 0;
	case LEAVES_FIT:
		break;
	}
	return 0;
}

int tree_sync(struct netlink *nl, const struct link_info *link, struct tree_input *in,
	      bool say_warnings, unsigned int *changes)
{
	struct tree_kernel_read k = { .peers = (struct wg_peer *)in->peers, .n_peers = in->n_peers,
				      .peers_given = in->peers != NULL };
	struct tree_kernel view;
	struct tree_plan plan;
	g_autoptr(GArray) ops = g_array_new(false, true, sizeof(struct tree_op));
	bool given = in->peers != NULL;
	int r;

	*changes = 0;
	r = tree_kernel_read(nl, link, &k);
	if (r < 0) {
		log_err("%s: %s: %s", link->name, k.failed,
			*netlink_ext_msg(nl) ? netlink_ext_msg(nl) : strerror(-r));
		return r;
	}
	in->peers = k.peers;
	in->n_peers = k.n_peers;
	k.peers_given = true; /* in has them now; whoever gave them (or below) frees them */
	tree_plan_init(&plan);
	r = tree_plan(in, &plan);
	if (r < 0) {
		log_err("%s: more peers than class ids (%u)", link->name,
			TREE_PEER_MINOR_LAST - TREE_PEER_MINOR_FIRST + 1);
		goto out;
	}
	view = (struct tree_kernel){ k.classes, k.n_classes, k.qdiscs, k.n_qdiscs, k.filters,
				     k.n_filters };
	tree_diff(&plan, &view, ops);
	*changes = ops->len;
	if (say_warnings || ops->len)
		for (guint i = 0; i < plan.warnings->len; i++)
			log_warn("%s: %s", link->name, (char *)plan.warnings->pdata[i]);
	log_debug("%s: per-peer shaping: %u changes", link->name, ops->len);
	r = leaves_check(link, ops);
	if (r == 0)
		r = ops_run(nl, link, ops);
out:
	if (!given)
		wg_peers_free(k.peers, k.n_peers);
	in->peers = given ? in->peers : NULL;
	in->n_peers = given ? in->n_peers : 0;
	tree_plan_clear(&plan);
	tree_kernel_clear(&k);
	return r;
}
