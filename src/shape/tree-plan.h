/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-peer tree's planner, pure: from what WireGuard has (peers and
 * their AllowedIPs) and what is wanted (a rate per peer, the interface's
 * cap), the tree of classes and filters the kernel should hold (tree_plan),
 * and the smallest list of changes from what it holds now (tree_diff). No
 * kernel here (only its types): src/shape/tree-sync.c carries the changes out.
 *
 * The tree on IFACE's egress:
 *   HTB root 1: (a size table adds the tunnel's overhead to every packet)
 *     1:1  the cap: the interface's egress rate, or unlimited
 *       1:2     the default class: peers without a rate of their own, cake
 *               with dual-dsthost (fair per client), up to the cap
 *       1:MINOR a peer's class, ceil its download rate; its leaf MINOR:
 *               cake, or fq_codel (leaf = fq_codel, or lazy while idle)
 *   flower filters on 1: send a destination in a peer's AllowedIPs to its
 *   class (IPv4 at prio 1, IPv6 at prio 2); anything else goes to 1:2.
 * The upload tree on the interface's IFB (fed from its ingress) is the same
 * with each peer's upload rate, filters matching the source address, and
 * every cake in ingress mode; the cap there is the interface's ingress rate.
 * A peer keeps its minor id while it is shaped (the state file remembers
 * it), the same in both trees, so a rate change is a change of its class in
 * place. A peer shaped one way only has no class in the other tree.
 */
#ifndef WGSHAPE_SHAPE_TREE_PLAN_H
#define WGSHAPE_SHAPE_TREE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "shape/peers.h"

struct tree_input {
	const struct wg_peer *peers; /* what WireGuard has now */
	size_t n_peers;
	struct peer_want *wants; /* tree_plan fills in minors it gives out */
	size_t n_wants;
	uint64_t cap; /* the interface's egress rate, bytes/s; 0: none */
	struct cake_opts opts; /* the interface's cake options (every leaf starts from them) */
	uint8_t leaf; /* enum peer_leaf for peers that say none; UNSET: lazy */
	bool upload; /* the upload tree: wants' upload, by source address, cake ingress */
};

/* The qdisc under a class. */
enum tree_qdisc {
	TREE_QDISC_CAKE = 0,
	TREE_QDISC_FQ_CODEL,
};

/* leaf = fq_codel: the kernel's default number of flows (sent, to read back the same) */
#define TREE_FQ_CODEL_FLOWS 1024u
/* a lazy leaf while its peer is idle: a few KiB, not cake's megabyte */
#define TREE_IDLE_FLOWS 64u

struct tree_class {
	uint16_t minor;
	uint64_t rate, ceil; /* bytes/s */
	bool leaf; /* has a leaf qdisc (all but the cap class) */
	uint8_t qdisc; /* enum tree_qdisc: the leaf's kind */
	uint32_t flows; /* fq_codel: its flows */
	struct cake_opts cake; /* a cake leaf's options */
	int want; /* index into wants, -1 for the cap and default classes */
};

struct tree_filter {
	struct tc_prefix match; /* the destination, or in the upload tree the source */
	uint16_t minor;
};

struct tree_plan {
	bool upload; /* the upload tree (tree_input's) */
	GArray *classes; /* struct tree_class; the cap class first, then the default */
	GArray *filters; /* struct tree_filter */
	GPtrArray *warnings; /* char *: overlapping or catch-all AllowedIPs, ... */
};

void tree_plan_init(struct tree_plan *p);
void tree_plan_clear(struct tree_plan *p);
/*
 * The tree for in; wants without a minor get the lowest free one. Wanted
 * peers WireGuard does not have now get no class (they get one when they
 * appear). -ENOSPC when the minor ids run out.
 */
int tree_plan(struct tree_input *in, struct tree_plan *out);

/* The leaf w has: its own, else the interface's (in_leaf), else lazy. */
enum peer_leaf tree_leaf_of(const struct peer_want *w, uint8_t in_leaf);

/* What the kernel has under our HTB root. */
struct tree_kernel {
	const struct tc_class_info *classes;
	size_t n_classes;
	const struct qdisc_info *qdiscs; /* every qdisc of the interface (leaves by parent) */
	size_t n_qdiscs;
	const struct flower_info *filters;
	size_t n_filters;
};

enum tree_op_kind {
	TREE_FILTER_DEL, /* filters that no longer belong, first */
	TREE_CLASS_ADD,
	TREE_CLASS_CHANGE, /* rate or ceil, in place */
	TREE_LEAF_ADD, /* the leaf onto a class with none (or another kind): qdisc, flows */
	TREE_LEAF_CHANGE, /* cake's options, in place */
	TREE_FILTER_ADD,
	TREE_CLASS_DEL, /* classes no peer wants any more, last */
};

struct tree_op {
	enum tree_op_kind kind;
	uint16_t minor; /* the class (or a filter's target) */
	uint64_t rate, ceil;
	uint8_t qdisc; /* enum tree_qdisc, leaf ops */
	uint32_t flows;
	struct cake_opts cake;
	struct flower_info filter; /* filter ops: prio, handle (delete), dst, classid */
};

/* The changes, in the order to make them, appended to ops (struct tree_op). */
void tree_diff(const struct tree_plan *p, const struct tree_kernel *k, GArray *ops);

#endif
