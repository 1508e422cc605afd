/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What `set` does to egress, decided without a kernel: from the form egress
 * has now (nothing of wgshape's, one cake at the root, or the per-peer HTB
 * tree) and what is asked, the form it takes, the step that gets it there
 * and where its rate comes from. src/shape/egress.c carries it out.
 */
#ifndef WGSHAPE_SHAPE_DECIDE_H
#define WGSHAPE_SHAPE_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "shape/shape.h"
#include "shape/state.h"

enum egress_form {
	EGRESS_NONE, /* nothing of wgshape's: what was there before */
	EGRESS_CAKE, /* one cake at the root */
	EGRESS_TREE, /* the per-peer HTB tree at the root (src/shape/tree-plan.h) */
};

enum egress_step {
	EGRESS_KEEP, /* touch nothing */
	EGRESS_CREATE, /* ours where there was none: remember the root, put ours in place */
	EGRESS_CHANGE, /* the same form again: change it in place */
	EGRESS_REPLACE, /* the other form of ours: put the new one in its place */
	EGRESS_REMOVE, /* put back what was there before wgshape */
};

/* One cake's rate, or the tree's cap. */
enum egress_rate {
	EGRESS_RATE_UNSET, /* cake: the rate it has stays; tree: no cap */
	EGRESS_RATE_ASKED, /* the request's egress rate */
	EGRESS_RATE_KEPT, /* the tree's cap as the state file has it */
	EGRESS_RATE_OF_CAKE, /* tree: the rate of wgshape's cake at the root now (a kernel read) */
};

struct egress_decision {
	enum egress_form form; /* after the step */
	enum egress_step step;
	enum egress_rate rate;
};

/*
 * now: the form the state file says; has_cap: the tree has a cap; eg: the
 * direction once options alone were resolved to what is shaped; asked: the
 * request's own egress word; peers: peers are wanted after the request.
 * Peers make the tree; a rate (or options on a cake) makes one cake, as does
 * a tree left without peers but with its cap; off, or a tree without peers
 * or cap, takes ours away.
 */
struct egress_decision egress_decide(enum egress_form now, bool has_cap, enum dir_action eg,
				     enum dir_action asked, bool peers);

/*
 * The peer in st (with its class) whose rate alone req changes on st's
 * tree (or its upload alone, in the upload tree on the IFB), so that the
 * change is one class change message (src/shape/shape.c):
 * its cake leaf is unlimited, and without a cap no other class is scaled by
 * its rate. NULL when req asks more (a direction, options, the overhead,
 * off, another cake for the peer), the tree has a cap, or the peer has no
 * class yet.
 */
const struct peer_want *peer_rate_only(const struct shape_state *st,
				       const struct shape_request *req);
/* The same for old, st's entry for req's peer (NULL: none), found by the caller. */
bool peer_rate_fits(const struct shape_state *st, const struct shape_request *req,
		    const struct peer_want *old);
/*
 * Does req name its one peer's upload alone (`set IFACE peer KEY upload
 * RATE`)? Then its one change is the peer's class on the IFB.
 */
bool peer_rate_upload(const struct shape_request *req);

#endif
