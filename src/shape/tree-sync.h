/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-peer shaping in the kernel (src/shape/tree.c): read back the tree
 * under wgshape's HTB root and bring it in line with the plan
 * (src/shape/peers.h). Used by shape_set and show.
 */
#ifndef WGSHAPE_SHAPE_TREE_H
#define WGSHAPE_SHAPE_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "netlink/kernel.h"
#include "shape/peers.h"

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

/* The tree as show gives it (struct shape_peer_view, src/shape/shape.h) appended to out. */
struct shape_state;
int tree_view(struct netlink *nl, const struct link_info *link, const struct shape_state *st,
	      GArray *out);

#endif
