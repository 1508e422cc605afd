// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * egress_decide and peer_rate_only: pure, so that every transition `set`
 * makes on egress, and when a peer's rate is one message, are tested by
 * table (tests/test-shape.c).
 */
#include <string.h>

#include "shape/decide.h"
#include "shape/tree-plan.h"

static enum egress_step step_to(enum egress_form now, enum egress_form form)
{
	if (form == EGRESS_NONE)
		return now == EGRESS_NONE ? EGRESS_KEEP : EGRESS_REMOVE;
	if (now == EGRESS_NONE)
		return EGRESS_CREATE;
	return now == form ? EGRESS_CHANGE : EGRESS_REPLACE;
}

struct egress_decision egress_decide(enum egress_form now, bool has_cap, enum dir_action eg,
				     enum dir_action asked, bool peers)
{
	struct egress_decision d = { .form = EGRESS_NONE, .rate = EGRESS_RATE_UNSET };

	if (peers) {
		d.form = EGRESS_TREE;
		/* the cap: as asked; none when egress is turned off; else what there is */
		if (asked == DIR_SET)
			d.rate = EGRESS_RATE_ASKED;
		else if (eg != DIR_OFF && now == EGRESS_TREE)
			d.rate = EGRESS_RATE_KEPT;
		else if (eg != DIR_OFF && now == EGRESS_CAKE)
			d.rate = EGRESS_RATE_OF_CAKE;
	} else if (eg == DIR_SET || (eg == DIR_KEEP && now == EGRESS_TREE && has_cap)) {
		/* a tree whose last peer went keeps its cap as one cake */
		d.form = EGRESS_CAKE;
		if (asked == DIR_SET)
			d.rate = EGRESS_RATE_ASKED;
		else if (eg == DIR_KEEP)
			d.rate = EGRESS_RATE_KEPT;
	} else if (eg == DIR_KEEP && now != EGRESS_TREE) {
		/* not named, and no tree to follow the peers: as it is */
		d.form = now;
		d.step = EGRESS_KEEP;
		return d;
	}
	d.step = step_to(now, d.form);
	return d;
}

bool peer_rate_fits(const struct shape_state *st, const struct shape_request *req,
		    const struct peer_want *old)
{
	const struct peer_want *w = req->peers;
	bool up;

	if (req->peers_action != PEERS_ONE || req->n_peers != 1 || !old ||
	    req->egress != DIR_KEEP || req->ingress != DIR_KEEP || req->opts.has ||
	    req->overhead_auto || req->leaf)
		return false;
	up = peer_rate_upload(req);
	/*
	 * the upload alone: its class on the IFB, in a tree without a cap; the
	 * download (and an upload named as it is): its class on the interface
	 */
	if (up && (!w->upload || w->upload == PEER_RATE_KEEP || !st->ingress || !st->in_tree ||
		   st->in_cap || !old->upload))
		return false;
	if (!up && (!w->rate || (w->upload != PEER_RATE_KEEP && w->upload != old->upload) ||
		    !st->egress || !st->tree || st->cap || !old->rate))
		return false;
	/* other cake options: the leaf changes too */
	if (old->opts.has != w->opts.has || strcmp(old->options, w->options) != 0)
		return false;
	/* a lease makes a lazy leaf's peer active: its cake is made */
	if (peer_leased(w) && old->activity != PEER_ACTIVE &&
	    tree_leaf_of(old, st->tree_leaf) == PEER_LEAF_LAZY)
		return false;
	return old->minor != 0;
}

bool peer_rate_upload(const struct shape_request *req)
{
	return req->n_peers == 1 && req->peers[0].rate == PEER_RATE_KEEP;
}

const struct peer_want *peer_rate_only(const struct shape_state *st,
				       const struct shape_request *req)
{
	for (guint i = 0; st->peers && req->n_peers == 1 && i < st->peers->len; i++) {
		const struct peer_want *old = &g_array_index(st->peers, struct peer_want, i);

		if (!memcmp(old->key, req->peers->key, WG_KEY_LEN))
			return peer_rate_fits(st, req, old) ? old : NULL;
	}
	return NULL;
}
