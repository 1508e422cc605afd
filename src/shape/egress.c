// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Egress (upload, or a server's download to its peers): one cake at the
 * interface's root, or the per-peer HTB tree (planned by tree-plan.c, put in
 * the kernel by tree-sync.c), as egress_decide says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"
#include "shape/decide.h"
#include "shape/tree-sync.h"
#include "engine.h"

/* One cake at the root; ours: our cake is there to change in place. */
static int egress_cake_set(struct netlink *nl, const char *ifname, const struct link_info *link,
			   struct shape_state *st, bool ours, const struct cake_opts *o,
			   struct undo *u)
{
	int r;

	r = cake_root_set(nl, ifname, ifname, link->ifindex, ours, o, st, u);
	if (r == 0) {
		st->egress = true;
		st->tree = false;
		st->cap = 0;
	}
	return r;
}

/* Our HTB tree as the root, its size table counting overhead bytes a packet. */
static int tree_root_set(struct netlink *nl, const char *ifname, const struct link_info *link,
			 struct shape_state *st, int overhead, bool *fresh, struct undo *u)
{
	struct qdisc_info root = { 0 };
	int r;

	r = netlink_qdisc_root(nl, link->ifindex, &root);
	if (r < 0 && r != -ENOENT)
		return shape_fail(nl, ifname, OP_CAKE, r, "read root qdisc");
	*fresh = !(st->egress && st->tree && r == 0 && !strcmp(root.kind, "htb") &&
		   root.handle == TREE_HANDLE(0));
	if (!*fresh) {
		qdisc_info_clear(&root);
		if (overhead == st->overhead)
			return 0;
		r = netlink_htb_root_set(nl, link->ifindex, TREE_HANDLE(0), TREE_DEFAULT_MINOR,
					 overhead, QDISC_CHANGE);
		return r < 0 ? shape_fail(nl, ifname, OP_CAKE, r, "change HTB size table") : 0;
	}
	if (st->egress && st->tree)
		log_info("%s: wgshape's per-peer HTB root is gone: putting it back", ifname);
	if (!st->egress && remember_root(st, r == 0 ? &root : NULL) < 0) {
		qdisc_info_clear(&root);
		return shape_fail(NULL, ifname, OP_STATE, -ENOMEM, "save root qdisc");
	}
	/* A root of handle 1: would be changed, not replaced: delete it first. */
	if (r == 0 && root.handle == TREE_HANDLE(0))
		r = netlink_qdisc_del_root(nl, link->ifindex);
	else
		r = 0;
	qdisc_info_clear(&root);
	if (r == 0)
		r = netlink_htb_root_set(nl, link->ifindex, TREE_HANDLE(0), TREE_DEFAULT_MINOR,
					 overhead, QDISC_REPLACE);
	if (r < 0)
		return shape_fail(nl, ifname, OP_CAKE, r, "add HTB root for per-peer shaping");
	u->what = UNDO_RESTORE_ROOT;
	u->ifindex = link->ifindex;
	return 0;
}

/*
 * Judge the peers whose activity is not known yet (new ones): active when
 * its client holds a lease or WireGuard had a handshake with it lately;
 * from then on the daemon follows their traffic (shape_peers_activity).
 */
void shape_peers_judge(GArray *wants, const struct wg_dump *wg)
{
	g_autoptr(GHashTable) peers = g_hash_table_new(wg_key_hash, wg_key_equal);
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	for (size_t i = 0; i < wg->n; i++)
		g_hash_table_insert(peers, wg->peers[i].key, &wg->peers[i]);
	for (guint i = 0; wants && i < wants->len; i++) {
		struct peer_want *w = &g_array_index(wants, struct peer_want, i);
		const struct wg_peer *p = g_hash_table_lookup(peers, w->key);

		if (peer_leased(w))
			w->activity = PEER_ACTIVE;
		else if (w->activity == PEER_UNJUDGED && p)
			w->activity = p->last_handshake &&
						      now - p->last_handshake < PEER_HANDSHAKE_FRESH_S
					      ? PEER_ACTIVE
					      : PEER_IDLE;
	}
}

int shape_tree_sync(struct netlink *nl, const struct link_info *link,
		    const struct link_info *on, struct shape_state *st, struct tree_input *in,
		    bool fresh, struct wg_dump *wg)
{
	unsigned int changes;
	int r;

	r = wg_dump_get(nl, link->name, wg);
	if (r < 0)
		return r;
	shape_peers_judge(st->peers, wg);
	in->wants = st->peers ? (struct peer_want *)(void *)st->peers->data : NULL;
	in->n_wants = st->peers ? st->peers->len : 0;
	in->peers = wg->peers;
	in->n_peers = wg->n;
	return tree_sync(nl, on, in, fresh, &changes);
}

/*
 * The tree's classes, leaves and filters as st's peers say, with these cap,
 * options and leaf, against what the kernel has; st takes them when done.
 */
static int tree_resync(struct netlink *nl, const struct link_info *link, struct shape_state *st,
		       uint64_t cap, const struct cake_opts *opts, uint8_t leaf, bool fresh,
		       struct wg_dump *wg)
{
	struct tree_input in = { .cap = cap, .opts = *opts, .leaf = leaf };
	int r;

	r = shape_tree_sync(nl, link, link, st, &in, fresh, wg);
	if (r < 0)
		return r;
	st->cap = cap;
	st->tree_opts = in.opts;
	st->tree_leaf = leaf;
	return 0;
}

int egress_tree_resync(struct netlink *nl, const struct link_info *link, struct shape_state *st,
		       struct wg_dump *wg)
{
	if (!st->tree)
		return 0;
	return tree_resync(nl, link, st, st->cap, &st->tree_opts, st->tree_leaf, false, wg);
}

/*
 * Per-peer egress: the tree at the root, then every peer's class, cake and
 * filters as st->peers and the cap say. A tree made here and not finished
 * is taken away again (by the caller's undo).
 */
static int egress_tree_set(struct netlink *nl, const char *ifname, const struct link_info *link,
			   struct shape_state *st, uint64_t cap, const struct cake_opts *o,
			   uint8_t leaf, struct wg_dump *wg, struct undo *u)
{
	struct cake_opts opts = st->tree_opts;
	uint8_t tree_leaf = st->tree_leaf;
	bool fresh = false;
	int r;

	if (strcmp(link->kind, "wireguard") != 0) {
		log_err("%s: per-peer shaping needs a WireGuard interface (this one is %s)", ifname,
			link->kind[0] ? link->kind : "not");
		return -EINVAL;
	}
	r = tree_root_set(nl, ifname, link, st, o->overhead, &fresh, u);
	if (r < 0)
		return r;
	/* every cake of the tree: the options given so far, these on top */
	if (fresh && !st->tree) {
		memset(&opts, 0, sizeof(opts));
		tree_leaf = PEER_LEAF_UNSET;
	}
	cake_opts_merge(&opts, o);
	r = tree_resync(nl, link, st, cap, &opts, leaf ? leaf : tree_leaf, fresh, wg);
	if (r < 0)
		return r;
	if (fresh)
		log_debug("%s: per-peer shaping: %u peers wanted, cap %s", ifname,
			  st->peers ? st->peers->len : 0, cap ? "set" : "none");
	st->egress = true;
	st->tree = true;
	return 0;
}

/* The cap over all peers, from where the decision says. */
static uint64_t tree_cap(struct netlink *nl, const struct link_info *link,
			 const struct shape_state *st, const struct shape_request *req,
			 enum egress_rate from)
{
	struct qdisc_info root = { 0 };
	uint64_t cap = 0;

	switch (from) {
	case EGRESS_RATE_UNSET:
		return 0;
	case EGRESS_RATE_ASKED:
		return req->egress_rate;
	case EGRESS_RATE_KEPT:
		return st->cap;
	case EGRESS_RATE_OF_CAKE:
		break;
	}
	/* one cake of ours at the root now: its rate becomes the cap */
	if (netlink_qdisc_root(nl, link->ifindex, &root) == 0 && !strcmp(root.kind, "cake"))
		cap = root.cake.rate;
	qdisc_info_clear(&root);
	return cap;
}

int egress_off(struct netlink *nl, const char *ifname, const struct link_info *link,
	       struct shape_state *st)
{
	struct qdisc_info root = { 0 };
	int r;

	if (!st->egress)
		return 0;
	r = netlink_qdisc_root(nl, link->ifindex, &root);
	if (r < 0 && r != -ENOENT)
		return shape_fail(nl, ifname, OP_CAKE, r, "read root qdisc");
	if (r == 0 && strcmp(root.kind, st->tree ? "htb" : "cake") != 0) {
		/* Someone replaced our cake since: theirs stays. */
		log_info("%s: root qdisc is %s now, not wgshape's %s: leaving it", ifname,
			 root.kind, st->tree ? "per-peer HTB" : "cake");
	} else {
		r = netlink_qdisc_restore(nl, link->ifindex, st->orig_kind, st->orig_handle,
					  st->orig_options, st->orig_options_len);
		if (r < 0) {
			qdisc_info_clear(&root);
			return shape_fail(nl, ifname, OP_CAKE, r, "restore root qdisc");
		}
	}
	qdisc_info_clear(&root);
	st->egress = false;
	st->tree = false;
	st->cap = 0;
	return 0;
}

static enum egress_form egress_now(const struct shape_state *st)
{
	if (st->tree)
		return EGRESS_TREE;
	return st->egress ? EGRESS_CAKE : EGRESS_NONE;
}

int egress_apply(struct netlink *nl, const char *ifname, const struct link_info *link,
		 struct shape_state *st, const struct shape_request *req, enum dir_action eg,
		 const struct cake_opts *o, struct wg_dump *wg, struct undo *u)
{
	struct egress_decision d = egress_decide(egress_now(st), st->cap != 0, eg, req->egress,
						 shape_peers_wanted(st));
	struct cake_opts oe = *o;

	if (d.step == EGRESS_KEEP)
		return 0;
	switch (d.form) {
	case EGRESS_TREE:
		return egress_tree_set(nl, ifname, link, st, tree_cap(nl, link, st, req, d.rate), o,
				       req->leaf, wg, u);
	case EGRESS_CAKE:
		if (d.step == EGRESS_REPLACE) {
			/* from the tree back to one cake: the tree's options go with it */
			oe = st->tree_opts;
			cake_opts_merge(&oe, o);
		}
		if (d.rate != EGRESS_RATE_UNSET) {
			oe.rate = d.rate == EGRESS_RATE_ASKED ? req->egress_rate : st->cap;
			oe.has |= CAKE_HAS_RATE;
		}
		return egress_cake_set(nl, ifname, link, st, d.step == EGRESS_CHANGE, &oe, u);
	case EGRESS_NONE:
		break;
	}
	return egress_off(nl, ifname, link, st);
}
