// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Ingress shaping (a client's download, a server's upload from its peers):
 * an IFB named for the interface, the ingress qdisc with a matchall filter
 * whose mirred action redirects to the IFB, and at the IFB's root either
 * cake (ingress mode) or, when peers have upload rates of their own, the
 * per-peer tree (src/shape/tree-plan.h) matching their source addresses.
 * Only what wgshape made is ever taken away.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"
#include "util/text.h"
#include "shape/tree-plan.h"
#include "engine.h"

void shape_ifb_name(const char *ifname, char out[IFNAME_SIZE])
{
	g_autofree char *sum = NULL;

	if (strlen("ifb4") + strlen(ifname) < IFNAME_SIZE) {
		snprintf(out, IFNAME_SIZE, "ifb4%s", ifname);
		return;
	}
	/*
	 * Cut to 15, two long names that begin alike would share an IFB. '~'
	 * marks a hashed name; 28 bits of the whole name's SHA-256 tell them
	 * apart (and should two ever meet, set finds the IFB taken and says so).
	 */
	sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, ifname, -1);
	snprintf(out, IFNAME_SIZE, "ifb4%.3s~%.7s", ifname, sum);
}

/*
 * Is ifb a name wgshape gives ifname's IFB: today's, or the one cut to 15
 * of wgshape before hashed names? Only such an IFB is ever deleted.
 */
bool ifb_name_ours(const char *ifname, const char *ifb)
{
	char now[IFNAME_SIZE], cut[IFNAME_SIZE];

	shape_ifb_name(ifname, now);
	snprintf(cut, sizeof(cut), "ifb4%s", ifname);
	return !strcmp(ifb, now) || !strcmp(ifb, cut);
}

/* wgshape's filter redirects to its IFB, or to a device that is gone. */
static bool redirect_ours(struct netlink *nl, int redirect, int ifb_ifindex)
{
	struct link_info to;

	return redirect && ((ifb_ifindex && redirect == ifb_ifindex) ||
			    netlink_link_get_index(nl, redirect, &to) == -ENODEV);
}

/*
 * Take wgshape's redirect away: with the ingress qdisc when nothing else is
 * on it; alone when the user put filters of theirs beside it, which stay
 * (wgshape made the qdisc, but it is theirs too now).
 */
static int redirect_del(struct netlink *nl, const char *ifname, int ifindex,
			const struct ingress_slot *slot)
{
	/* the daemon's tc programs keep the clsact too, without a word */
	bool keep = slot->theirs || slot->bpf;
	int r;

	r = keep ? netlink_ingress_filter_del(nl, ifindex) : netlink_ingress_del(nl, ifindex);
	if (r < 0)
		return shape_fail(nl, ifname, OP_INGRESS, r,
			    keep ? "delete ingress redirect" : "delete ingress qdisc");
	if (slot->theirs)
		log_info("%s: the ingress qdisc has filters wgshape did not add: leaving them "
			 "and the qdisc", ifname);
	return 0;
}

/*
 * ifname's ingress qdisc (present, where it redirects, whether it is
 * another's) and the link ifb: 1 when that link exists (in ifbl), 0 when
 * not, or -errno (logged).
 */
static int ingress_read(struct netlink *nl, const char *ifname, const struct link_info *link,
			const char *ifb, struct ingress_slot *slot, struct link_info *ifbl)
{
	int r = netlink_ingress_get(nl, link->ifindex, slot);

	if (r < 0)
		return shape_fail(nl, ifname, OP_INGRESS, r, "read ingress qdisc");
	r = netlink_link_get(nl, ifb, ifbl);
	if (r < 0 && r != -ENODEV)
		return shape_fail(nl, ifname, OP_IFB, r, "read IFB");
	return r == 0;
}

/*
 * Take away our redirect (and the ingress qdisc unless the user's filters
 * are on it) and IFB; leave anyone else's alone, whatever the state file
 * says (it names the IFB): the redirect only when wgshape's filter sends to
 * that IFB or to one that is gone; the IFB only when it is an IFB, has a
 * name wgshape gives this interface, and nothing else redirects elsewhere.
 * A clsact with nothing of wgshape's on it is the user's: it stays with all on it.
 */
int ingress_remove(struct netlink *nl, const char *ifname, const struct link_info *link,
		   const char *ifb)
{
	struct link_info ifbl;
	struct ingress_slot slot;
	bool have_ifb, removed = false;
	int r;

	if (!ifb_name_ours(ifname, ifb)) {
		log_info("%s: IFB %s is not a name wgshape gives %s: leaving it and the ingress "
			 "qdisc", ifname, TEXT_QUOTE(ifb), ifname);
		return 0;
	}
	r = ingress_read(nl, ifname, link, ifb, &slot, &ifbl);
	if (r < 0)
		return r;
	have_ifb = r == 1 && !strcmp(ifbl.kind, "ifb");
	if (slot.present && redirect_ours(nl, slot.redirect_ifindex, have_ifb ? ifbl.ifindex : 0)) {
		r = redirect_del(nl, ifname, link->ifindex, &slot);
		if (r < 0)
			return r;
		removed = true;
	} else if (slot.present) {
		log_info("%s: the ingress qdisc is not wgshape's redirect to %s: leaving it",
			 ifname, ifb);
	}
	if (have_ifb && (!slot.present || removed)) {
		r = netlink_link_del(nl, ifbl.ifindex);
		if (r < 0 && r != -ENODEV)
			return shape_fail(nl, ifname, OP_IFB, r, "delete IFB");
	}
	return 0;
}

/*
 * What is left of wgshape's broken redirect goes: the ingress qdisc with it,
 * unless filters of the user's are on it; then only wgshape's filter, if it
 * is there, and the qdisc stays for the new one.
 */
static int ingress_unbreak(struct netlink *nl, const char *ifname, int ifindex,
			   const struct ingress_slot *slot, int ifb_ifindex)
{
	if (slot->theirs && !redirect_ours(nl, slot->redirect_ifindex, ifb_ifindex))
		return 0;
	return redirect_del(nl, ifname, ifindex, slot);
}

/*
 * The upload tree's root on the IFB: our HTB (1:, default class 1:2), its
 * size table counting o's overhead. Kept when it is there (its size table
 * changed when the overhead did); whatever else is at the root (our cake of
 * before) is replaced.
 */
static int ifb_tree_root(struct netlink *nl, const char *ifname, int ifb_ifindex,
			 const struct shape_state *st, const struct cake_opts *o)
{
	struct qdisc_info root = { 0 };
	bool htb;
	uint32_t handle;
	int r;

	r = netlink_qdisc_root(nl, ifb_ifindex, &root);
	if (r < 0 && r != -ENOENT)
		return shape_fail(nl, ifname, OP_CAKE, r, "read the IFB's root qdisc");
	htb = r == 0 && !strcmp(root.kind, "htb") && root.handle == TREE_HANDLE(0);
	handle = r == 0 ? root.handle : 0;
	qdisc_info_clear(&root);
	if (htb && st->in_tree) {
		if (o->overhead == st->overhead)
			return 0;
		r = netlink_htb_root_set(nl, ifb_ifindex, TREE_HANDLE(0), TREE_DEFAULT_MINOR,
					 o->overhead, QDISC_CHANGE);
		return r < 0 ? shape_fail(nl, ifname, OP_CAKE, r, "change the IFB's HTB size table")
			     : 0;
	}
	/* A root of handle 1: would be changed, not replaced: delete it first. */
	r = handle == TREE_HANDLE(0) ? netlink_qdisc_del_root(nl, ifb_ifindex) : 0;
	if (r == 0)
		r = netlink_htb_root_set(nl, ifb_ifindex, TREE_HANDLE(0), TREE_DEFAULT_MINOR,
					 o->overhead, QDISC_REPLACE);
	return r < 0 ? shape_fail(nl, ifname, OP_CAKE, r, "add HTB root on the IFB for per-peer upload")
		     : 0;
}

/* The IFB's root as asked: the upload tree's HTB, or cake (ours: ours is there to change). */
static int ifb_root_set(struct netlink *nl, const char *ifname, const char *ifb, int ifb_ifindex,
			bool ours, bool tree, const struct shape_state *st,
			const struct cake_opts *o, struct undo *u)
{
	if (tree)
		return ifb_tree_root(nl, ifname, ifb_ifindex, st, o);
	/* from the tree back to one cake: the HTB is replaced, nothing to change back */
	if (st->in_tree)
		return cake_root_set(nl, ifname, ifb, ifb_ifindex, false, o, NULL,
				     &(struct undo){ 0 });
	return cake_root_set(nl, ifname, ifb, ifb_ifindex, ours, o, NULL, u);
}

/* Make what is missing: the IFB (unless ifb_ifindex), its root, the redirect. */
static int ingress_make(struct netlink *nl, const char *ifname, const struct link_info *link,
			const char *ifb, int ifb_ifindex, bool keep_qdisc, bool tree,
			const struct shape_state *st, const struct cake_opts *o, struct undo *u)
{
	bool have_ifb = ifb_ifindex != 0;
	char what[64];
	int r;

	u->ifb_ifindex = 0;
	u->keep_qdisc = keep_qdisc;
	if (!have_ifb) {
		snprintf(what, sizeof(what), "add IFB %s", ifb);
		r = netlink_ifb_add(nl, ifb, &ifb_ifindex);
		if (r < 0)
			return shape_fail(nl, ifname, OP_IFB, r, what);
		u->ifb_ifindex = ifb_ifindex;
	}
	r = ifb_root_set(nl, ifname, ifb, ifb_ifindex, have_ifb, tree, st, o,
			 &(struct undo){ 0 });
	if (r == 0) {
		r = netlink_ingress_redirect_add(nl, link->ifindex, ifb_ifindex, keep_qdisc);
		if (r < 0)
			shape_fail(nl, ifname, OP_INGRESS, r, "add ingress redirect");
	}
	if (r < 0) {
		if (u->ifb_ifindex)
			netlink_link_del(nl, u->ifb_ifindex);
		return r;
	}
	u->what = UNDO_REMOVE_INGRESS;
	return 0;
}

/* The IFB, its root (tree: the upload tree's HTB, else cake as o says) and the redirect. */
static int ingress_set(struct netlink *nl, const char *ifname, const struct link_info *link,
		       struct shape_state *st, const char *stale_ifb, bool tree,
		       const struct cake_opts *o, struct undo *u)
{
	char ifb[IFNAME_SIZE];
	struct link_info ifbl;
	struct ingress_slot slot;
	bool have_ifb, ours, present;
	int redirect, r;

	shape_ifb_name(ifname, ifb);
	r = ingress_read(nl, ifname, link, ifb, &slot, &ifbl);
	if (r < 0)
		return r;
	have_ifb = r == 1;
	ours = st->ingress || !strcmp(stale_ifb, ifb);
	present = slot.present;
	redirect = slot.redirect_ifindex;

	if (have_ifb && (!ours || strcmp(ifbl.kind, "ifb") != 0)) {
		log_err("%s: add IFB %s: the name is taken by an interface wgshape did not make "
			"(remove it first: ip link del %s)", ifname, ifb, ifb);
		return -EEXIST;
	}
	if (st->ingress && present && have_ifb && redirect == ifbl.ifindex) {
		/* All ours and in place: a change at the IFB's root. */
		r = ifb_root_set(nl, ifname, ifb, ifbl.ifindex, true, tree, st, o, u);
		if (r == 0)
			st->in_tree = tree;
		return r;
	}
	if (present && !st->ingress) {
		log_err("%s: add ingress qdisc: %s already has one that wgshape did not make "
			"(remove it first: tc qdisc del dev %s %s)", ifname, ifname, ifname,
			slot.clsact ? "clsact" : "ingress");
		return -EEXIST;
	}
	if (present || (st->ingress && !have_ifb))
		log_info("%s: wgshape's download shaping lost its %s: rebuilding it", ifname,
			 present ? "IFB or redirect" : "IFB");
	if (present) {
		/* Ours, but broken (the IFB or the redirect went away): rebuild it. */
		r = ingress_unbreak(nl, ifname, link->ifindex, &slot, have_ifb ? ifbl.ifindex : 0);
		if (r < 0)
			return r;
	}
	/* the qdisc stays: the user's filters are on it, or the daemon's programs */
	r = ingress_make(nl, ifname, link, ifb, have_ifb ? ifbl.ifindex : 0,
			 (present && slot.theirs) || slot.bpf, tree, st, o, u);
	if (r < 0)
		return r;
	st->ingress = true;
	st->in_tree = tree;
	snprintf(st->ifb, sizeof(st->ifb), "%s", ifb);
	return 0;
}

int ingress_off(struct netlink *nl, const char *ifname, const struct link_info *link,
		struct shape_state *st)
{
	int r;

	if (!st->ingress)
		return 0;
	r = ingress_remove(nl, ifname, link, st->ifb);
	if (r < 0)
		return r;
	st->ingress = false;
	st->in_tree = false;
	st->in_cap = 0;
	st->ifb[0] = '\0';
	return 0;
}

bool shape_upload_wanted(const struct shape_state *st)
{
	for (guint i = 0; st->peers && i < st->peers->len; i++)
		if (g_array_index(st->peers, struct peer_want, i).upload)
			return true;
	return false;
}

int ingress_tree_resync(struct netlink *nl, const struct link_info *link, struct shape_state *st,
			struct wg_dump *wg)
{
	struct tree_input in = { .cap = st->in_cap, .opts = st->tree_opts, .leaf = st->tree_leaf,
				 .upload = true };
	struct link_info ifbl;
	int r;

	if (!st->in_tree)
		return 0;
	r = netlink_link_get(nl, st->ifb, &ifbl);
	if (r < 0)
		return shape_fail(nl, link->name, OP_IFB, r, "read IFB");
	return shape_tree_sync(nl, link, &ifbl, st, &in, false, wg);
}

/*
 * The cap of the upload tree: as asked; none when ingress is turned off;
 * else the tree's, or the rate of our one cake there now.
 */
static uint64_t upload_cap(struct netlink *nl, const struct shape_state *st,
			   const struct shape_request *req, enum dir_action in)
{
	struct link_info ifbl;
	struct qdisc_info root = { 0 };
	uint64_t cap = 0;

	if (req->ingress == DIR_SET)
		return req->ingress_rate;
	if (in == DIR_OFF || !st->ingress)
		return 0;
	if (st->in_tree)
		return st->in_cap;
	if (netlink_link_get(nl, st->ifb, &ifbl) == 0 &&
	    netlink_qdisc_root(nl, ifbl.ifindex, &root) == 0 && !strcmp(root.kind, "cake"))
		cap = root.cake.rate;
	qdisc_info_clear(&root);
	return cap;
}

/*
 * Peers with upload rates of their own: the IFB's root is the upload tree,
 * its classes and filters as st's peers say. The tree's cake options are
 * the egress tree's (st->tree_opts), o on top.
 */
static int ingress_tree_set(struct netlink *nl, const char *ifname, const struct link_info *link,
			    struct shape_state *st, const char *stale_ifb,
			    const struct shape_request *req, enum dir_action in,
			    const struct cake_opts *o, struct wg_dump *wg, struct undo *u)
{
	uint64_t cap = upload_cap(nl, st, req, in);
	struct cake_opts opts = st->tree_opts;
	int r;

	if (strcmp(link->kind, "wireguard") != 0) {
		log_err("%s: per-peer upload needs a WireGuard interface (this one is %s)", ifname,
			link->kind[0] ? link->kind : "not");
		return -EINVAL;
	}
	r = ingress_set(nl, ifname, link, st, stale_ifb, true, o, u);
	if (r < 0)
		return r;
	cake_opts_merge(&opts, o);
	opts.has &= ~(CAKE_HAS_RATE | CAKE_HAS_INGRESS);
	st->tree_opts = opts;
	if (req->leaf)
		st->tree_leaf = req->leaf;
	st->in_cap = cap;
	return ingress_tree_resync(nl, link, st, wg);
}

int ingress_apply(struct netlink *nl, const char *ifname, const struct link_info *link,
		  struct shape_state *st, const char *stale_ifb, const struct shape_request *req,
		  enum dir_action in, const struct cake_opts *o, struct wg_dump *wg, struct undo *u)
{
	struct cake_opts oi = *o;
	bool tree = shape_upload_wanted(st);

	if (tree)
		return ingress_tree_set(nl, ifname, link, st, stale_ifb, req, in, o, wg, u);
	if (in == DIR_OFF)
		return ingress_off(nl, ifname, link, st);
	if (in != DIR_SET && st->in_tree && !st->in_cap)
		/* the last peer's upload is gone, and no rate for them all: nothing left */
		return ingress_off(nl, ifname, link, st);
	if (in != DIR_SET && !st->in_tree)
		return 0;
	oi.has |= CAKE_HAS_INGRESS;
	oi.ingress = true;
	if (req->ingress == DIR_SET || st->in_tree) {
		/* the rate asked, or the tree's cap for them all, now one cake's */
		oi.rate = req->ingress == DIR_SET ? req->ingress_rate : st->in_cap;
		oi.has |= CAKE_HAS_RATE;
	}
	return ingress_set(nl, ifname, link, st, stale_ifb, false, &oi, u);
}
