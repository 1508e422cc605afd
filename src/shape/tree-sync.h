/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-peer tree's kernel sync: read back the tree under wgshape's HTB
 * root and bring it in line with the plan (src/shape/tree-plan.h). Used by
 * egress (src/shape/egress.c) and show (src/shape/view.c).
 */
#ifndef WGSHAPE_SHAPE_TREE_SYNC_H
#define WGSHAPE_SHAPE_TREE_SYNC_H

#include <stdbool.h>
#include <stddef.h>

#include "netlink/kernel.h"
#include "shape/tree-plan.h"

/* What the kernel holds for one interface's tree, and its WireGuard peers. */
struct tree_kernel_read {
	struct wg_peer *peers;
	size_t n_peers;
	struct tc_class_info *classes;
	size_t n_classes;
	struct qdisc_info *qdiscs;
	size_t n_qdiscs;
	struct flower_info *filters;
	size_t n_filters;
	const char *failed; /* what could not be read, on failure */
	bool peers_given; /* peers were read before (not read, not freed here) */
};

/* k starts zeroed, or with the peers given (peers_given). */
int tree_kernel_read(struct netlink *nl, const struct link_info *link, struct tree_kernel_read *k);
void tree_kernel_clear(struct tree_kernel_read *k);

/*
 * One read of the tree (and of the peers, unless in->peers has them), then
 * the changes that make it as in says. *changes: how many were
 * made. The plan's warnings are logged when say_warnings or anything
 * changed. 0, or -errno (logged); what was done before a failure stays.
 */
int tree_sync(struct netlink *nl, const struct link_info *link, struct tree_input *in,
	      bool say_warnings, unsigned int *changes);

#endif
