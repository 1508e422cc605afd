/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A kernel's view of the per-peer tree without a kernel, for the planner's
 * test (test-peers.c) and benchmark (bench/bench-tree-plan.c): the classes,
 * leaves and filters a plan would leave, as netlink's dumps report them.
 */
#ifndef WGSHAPE_TESTS_FAKE_KERNEL_H
#define WGSHAPE_TESTS_FAKE_KERNEL_H

#include <sys/socket.h>
#include <glib.h>

#include "shape/tree-plan.h"

/* The kernel as the plan would leave it: every class with its leaf, every filter. */
struct fake_kernel {
	GArray *classes, *qdiscs, *filters;
};

static inline void kernel_from_plan(const struct tree_plan *p, struct fake_kernel *k)
{
	k->classes = g_array_new(false, true, sizeof(struct tc_class_info));
	k->qdiscs = g_array_new(false, true, sizeof(struct qdisc_info));
	k->filters = g_array_new(false, true, sizeof(struct flower_info));
	for (guint i = 0; i < p->classes->len; i++) {
		const struct tree_class *c = &g_array_index(p->classes, struct tree_class, i);
		struct tc_class_info ci = { .classid = TREE_HANDLE(c->minor), .rate = c->rate,
					    .ceil = c->ceil };
		struct qdisc_info q = { .kind = "cake", .parent = TREE_HANDLE(c->minor),
					.cake = c->cake };

		if (c->qdisc == TREE_QDISC_FQ_CODEL) {
			g_strlcpy(q.kind, "fq_codel", sizeof(q.kind));
			memset(&q.cake, 0, sizeof(q.cake));
			q.fq_flows = c->flows;
		}

		/* as the kernel reports them: a class at the root has TC_H_ROOT */
		ci.parent = c->minor == TREE_CAP_MINOR ? 0xffffffffu : TREE_HANDLE(TREE_CAP_MINOR);
		g_array_append_val(k->classes, ci);
		if (c->leaf)
			g_array_append_val(k->qdiscs, q);
	}
	for (guint i = 0; i < p->filters->len; i++) {
		const struct tree_filter *f = &g_array_index(p->filters, struct tree_filter, i);
		struct flower_info fi = { .parent = TREE_HANDLE(0), .handle = i + 1, .match = f->match,
					  .classid = TREE_HANDLE(f->minor) };

		fi.src = p->upload;
		fi.prio = f->match.family == AF_INET ? TREE_PRIO_V4 : TREE_PRIO_V6;
		g_array_append_val(k->filters, fi);
	}
}

static inline void kernel_free(struct fake_kernel *k)
{
	g_array_free(k->classes, true);
	g_array_free(k->qdiscs, true);
	g_array_free(k->filters, true);
}

#endif
