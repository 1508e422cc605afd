// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The shaping engine. Order of work in `set`: ingress first (the part most
 * likely to fail on a kernel without ifb, mirred or matchall), then egress,
 * then the state file; any failure undoes the steps before it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/log.h"
#include "shape/overhead.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "shape/tree.h"
#include "util/ifname.h"
#include "util/text.h"

#define OVERHEAD_BY_HAND "set by hand"

enum op {
	OP_LINK,
	OP_CAKE,
	OP_INGRESS,
	OP_IFB,
	OP_STATE,
	OP_WG,
};

static const struct {
	enum op op;
	int err; /* 0: any */
	const char *ext; /* substring of the kernel's message, NULL: any */
	const char *hint;
} hints[] = {
	{ OP_LINK, -EPERM, NULL, "not permitted: needs root or CAP_NET_ADMIN" },
	{ OP_CAKE, -EPERM, NULL, "not permitted: needs root or CAP_NET_ADMIN" },
	{ OP_INGRESS, -EPERM, NULL, "not permitted: needs root or CAP_NET_ADMIN" },
	{ OP_IFB, -EPERM, NULL, "not permitted: needs root or CAP_NET_ADMIN" },
	{ OP_WG, -EPERM, NULL, "not permitted: needs root or CAP_NET_ADMIN" },
	{ OP_CAKE, -ENOENT, "qdisc kind is unknown",
	  "no cake in this kernel: load sch_cake, Linux 4.19 or later" },
	{ OP_INGRESS, -ENOENT, "qdisc kind is unknown",
	  "no ingress qdisc in this kernel: load sch_ingress" },
	{ OP_INGRESS, 0, "classifier", "no matchall filter in this kernel: load cls_matchall" },
	{ OP_INGRESS, 0, "ction", "no mirred action in this kernel: load act_mirred" },
	{ OP_INGRESS, -ENOENT, NULL, "needs cls_matchall and act_mirred: load them" },
	{ OP_IFB, -EOPNOTSUPP, NULL, "no ifb in this kernel: load the ifb module" },
	{ OP_WG, -EOPNOTSUPP, NULL, "no WireGuard in this kernel" },
};

static int fail(struct netlink *nl, const char *ifname, enum op op, int r, const char *what)
{
	const char *ext = nl ? netlink_ext_msg(nl) : "";
	const char *hint = NULL;

	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]) && !hint; i++) {
		if (hints[i].op != op || (hints[i].err && hints[i].err != r))
			continue;
		if (hints[i].ext && !strstr(ext, hints[i].ext))
			continue;
		hint = hints[i].hint;
	}
	log_err("%s: %s: %s%s%s%s", ifname, what, *ext ? ext : strerror(-r), hint ? " (" : "",
		hint ? hint : "", hint ? ")" : "");
	return r;
}

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
static bool ifb_name_ours(const char *ifname, const char *ifb)
{
	char now[IFNAME_SIZE], cut[IFNAME_SIZE];

	shape_ifb_name(ifname, now);
	snprintf(cut, sizeof(cut), "ifb4%s", ifname);
	return !strcmp(ifb, now) || !strcmp(ifb, cut);
}

/* WireGuard's peers, read once for a whole set: the overhead and the tree both need them. */
struct wg_dump {
	bool read;
	struct wg_peer *peers;
	size_t n;
};

static int wg_dump_get(struct netlink *nl, const char *ifname, struct wg_dump *d)
{
	int r;

	if (d->read)
		return 0;
	r = netlink_wg_peers(nl, ifname, &d->peers, &d->n);
	if (r < 0)
		return fail(nl, ifname, OP_WG, r, "read WireGuard peers");
	d->read = true;
	return 0;
}

/* What a step did, so that a later failure can take it back. */
struct undo {
	enum { UNDO_NONE, UNDO_CHANGE_BACK, UNDO_RESTORE_ROOT, UNDO_REMOVE_INGRESS } what;
	int ifindex; /* where cake sits */
	uint32_t handle;
	struct cake_opts prev; /* UNDO_CHANGE_BACK: the values we overwrote */
	int ifb_ifindex; /* UNDO_REMOVE_INGRESS: the IFB to delete, 0 if we kept one */
	bool keep_qdisc; /* UNDO_REMOVE_INGRESS: the user's filters are on it: our filter alone */
};

/* Keep only the options we are about to change, with their current values. */
static struct cake_opts opts_prev(const struct cake_opts *now, const struct cake_opts *next)
{
	struct cake_opts prev = *now;

	prev.has &= next->has;
	return prev;
}

/* Does the kernel's cake (have) already carry every option of want? */
static bool opts_hold(const struct cake_opts *have, const struct cake_opts *want)
{
	static const struct {
		uint32_t bit;
		size_t off, len;
	} fields[] = {
#define F(bit, m) { bit, offsetof(struct cake_opts, m), sizeof(((struct cake_opts *)0)->m) }
		F(CAKE_HAS_RATE, rate),		F(CAKE_HAS_OVERHEAD, overhead),
		F(CAKE_HAS_MPU, mpu),		F(CAKE_HAS_RTT, rtt),
		F(CAKE_HAS_DIFFSERV, diffserv), F(CAKE_HAS_NAT, nat),
		F(CAKE_HAS_WASH, wash),		F(CAKE_HAS_ACK_FILTER, ack_filter),
		F(CAKE_HAS_MEMLIMIT, memlimit), F(CAKE_HAS_INGRESS, ingress),
		F(CAKE_HAS_RAW, raw),		F(CAKE_HAS_FLOW_MODE, flow_mode),
		F(CAKE_HAS_ATM, atm),		F(CAKE_HAS_SPLIT_GSO, split_gso),
		F(CAKE_HAS_FWMARK, fwmark),
#undef F
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (!(want->has & fields[i].bit))
			continue;
		if (!(have->has & fields[i].bit) ||
		    memcmp((const char *)have + fields[i].off, (const char *)want + fields[i].off,
			   fields[i].len) != 0)
			return false;
	}
	/* An overhead given without raw means cake is not in raw mode. */
	return !((want->has & CAKE_HAS_OVERHEAD) && !(want->has & CAKE_HAS_RAW) && have->raw);
}

bool cake_opts_hold(const struct cake_opts *have, const struct cake_opts *want)
{
	return opts_hold(have, want);
}

static void undo_run(struct netlink *nl, const struct undo *u, const struct shape_state *st,
		     int link_ifindex)
{
	switch (u->what) {
	case UNDO_NONE:
		break;
	case UNDO_CHANGE_BACK:
		netlink_cake_set(nl, u->ifindex, u->handle, &u->prev, QDISC_CHANGE);
		break;
	case UNDO_RESTORE_ROOT:
		netlink_qdisc_restore(nl, u->ifindex, st->orig_kind, st->orig_handle,
				      st->orig_options, st->orig_options_len);
		break;
	case UNDO_REMOVE_INGRESS:
		if (u->keep_qdisc)
			netlink_ingress_filter_del(nl, link_ifindex);
		else
			netlink_ingress_del(nl, link_ifindex);
		if (u->ifb_ifindex)
			netlink_link_del(nl, u->ifb_ifindex);
		break;
	}
}

/* First touch of the root: remember what to put back on clear (root NULL: the default). */
static int remember_root(struct shape_state *st, const struct qdisc_info *root)
{
	snprintf(st->orig_kind, sizeof(st->orig_kind), "%s", root ? root->kind : "default");
	st->orig_handle = root ? root->handle : 0;
	free(st->orig_options);
	st->orig_options = NULL;
	st->orig_options_len = 0;
	if (root && root->options_len) {
		st->orig_options = malloc(root->options_len);
		if (!st->orig_options)
			return -ENOMEM;
		memcpy(st->orig_options, root->options, root->options_len);
		st->orig_options_len = root->options_len;
	}
	return 0;
}

/*
 * Put cake with opts as the root of ifindex. If our cake is there already,
 * change it in place (handle, queues and counters survive); otherwise replace
 * whatever is there, saving it first into *orig if orig is given.
 */
static int cake_root_set(struct netlink *nl, const char *ifname, const char *dev, int ifindex,
			 bool ours, const struct cake_opts *o, struct shape_state *orig,
			 struct undo *u)
{
	struct qdisc_info root = { 0 };
	char what[64];
	int r;

	r = netlink_qdisc_root(nl, ifindex, &root);
	if (r < 0 && r != -ENOENT)
		return fail(nl, ifname, OP_CAKE, r, "read root qdisc");

	if (ours && r == 0 && !strcmp(root.kind, "cake") && opts_hold(&root.cake, o)) {
		/* Already so: touch nothing, so that applying twice changes nothing. */
		log_debug("%s: cake on %s already as asked", ifname, dev);
		qdisc_info_clear(&root);
		return 0;
	}
	if (ours && r == 0 && !strcmp(root.kind, "cake")) {
		log_debug("%s: change cake on %s in place (handle %x:)", ifname, dev, root.handle >> 16);
		snprintf(what, sizeof(what), "change cake on %s", dev);
		u->prev = opts_prev(&root.cake, o);
		u->handle = root.handle;
		r = netlink_cake_set(nl, ifindex, root.handle, o, QDISC_CHANGE);
		qdisc_info_clear(&root);
		if (r < 0)
			return fail(nl, ifname, OP_CAKE, r, what);
		u->what = UNDO_CHANGE_BACK;
		u->ifindex = ifindex;
		return 0;
	}

	if (ours)
		/* Ours was there and is not: someone removed or replaced it. */
		log_info("%s: root qdisc of %s is %s, not wgshape's cake: putting cake back",
			 ifname, dev, r == 0 ? root.kind : "the default");
	if (orig && !orig->egress && remember_root(orig, r == 0 ? &root : NULL) < 0) {
		qdisc_info_clear(&root);
		return fail(NULL, ifname, OP_STATE, -ENOMEM, "save root qdisc");
	}
	snprintf(what, sizeof(what), "add cake on %s", dev);
	if (r == 0 && root.handle && !strcmp(root.kind, "cake")) {
		/*
		 * A replace of cake by cake is a change in the kernel, which would
		 * keep a hand-set cake's other options: start from a fresh one.
		 */
		r = netlink_qdisc_del_root(nl, ifindex);
		if (r == 0) {
			r = netlink_cake_set(nl, ifindex, 0, o, QDISC_ADD);
			if (r < 0) {
				fail(nl, ifname, OP_CAKE, r, what);
				netlink_qdisc_restore(nl, ifindex, root.kind, root.handle, root.options,
						      root.options_len);
				qdisc_info_clear(&root);
				return r;
			}
		}
	} else {
		r = netlink_cake_set(nl, ifindex, 0, o, QDISC_REPLACE);
	}
	qdisc_info_clear(&root);
	if (r < 0)
		return fail(nl, ifname, OP_CAKE, r, what);
	u->what = UNDO_RESTORE_ROOT;
	u->ifindex = ifindex;
	return 0;
}

static int egress_set(struct netlink *nl, const char *ifname, const struct link_info *link,
		      struct shape_state *st, const struct cake_opts *o, struct undo *u)
{
	int r;

	/* From the per-peer tree back to one cake: the tree is not a cake to change. */
	r = cake_root_set(nl, ifname, ifname, link->ifindex, st->egress && !st->tree, o, st, u);
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
		return fail(nl, ifname, OP_CAKE, r, "read root qdisc");
	*fresh = !(st->egress && st->tree && r == 0 && !strcmp(root.kind, "htb") &&
		   root.handle == TREE_HANDLE(0));
	if (!*fresh) {
		qdisc_info_clear(&root);
		if (overhead == st->overhead)
			return 0;
		r = netlink_htb_root_set(nl, link->ifindex, TREE_HANDLE(0), TREE_DEFAULT_MINOR,
					 overhead, QDISC_CHANGE);
		return r < 0 ? fail(nl, ifname, OP_CAKE, r, "change HTB size table") : 0;
	}
	if (st->egress && st->tree)
		log_info("%s: wgshape's per-peer HTB root is gone: putting it back", ifname);
	if (!st->egress && remember_root(st, r == 0 ? &root : NULL) < 0) {
		qdisc_info_clear(&root);
		return fail(NULL, ifname, OP_STATE, -ENOMEM, "save root qdisc");
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
		return fail(nl, ifname, OP_CAKE, r, "add HTB root for per-peer shaping");
	u->what = UNDO_RESTORE_ROOT;
	u->ifindex = link->ifindex;
	return 0;
}

/*
 * Per-peer egress: the tree at the root, then every peer's class, cake and
 * filters as st->peers and the cap say. A tree made here and not finished
 * is taken away again (by the caller's undo).
 */
static int egress_tree_set(struct netlink *nl, const char *ifname, const struct link_info *link,
			   struct shape_state *st, uint64_t cap, const struct cake_opts *o,
			   struct wg_dump *wg, struct undo *u)
{
	struct tree_input in = { .cap = cap, .opts = st->tree_opts };
	unsigned int changes;
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
	if (fresh && !st->tree)
		memset(&in.opts, 0, sizeof(in.opts));
	cake_opts_merge(&in.opts, o);
	in.wants = (struct peer_want *)(void *)st->peers->data;
	in.n_wants = st->peers->len;
	r = wg_dump_get(nl, ifname, wg);
	if (r < 0)
		return r;
	in.peers = wg->peers;
	in.n_peers = wg->n;
	r = tree_sync(nl, link, &in, fresh, &changes);
	if (r < 0)
		return r;
	if (fresh)
		log_debug("%s: per-peer shaping: %zu peers wanted, cap %s", ifname, in.n_wants,
			 cap ? "set" : "none");
	st->egress = true;
	st->tree = true;
	st->cap = cap;
	st->tree_opts = in.opts;
	return 0;
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
static int redirect_del(struct netlink *nl, const char *ifname, int ifindex, bool theirs)
{
	int r;

	r = theirs ? netlink_ingress_filter_del(nl, ifindex) : netlink_ingress_del(nl, ifindex);
	if (r < 0)
		return fail(nl, ifname, OP_INGRESS, r,
			    theirs ? "delete ingress redirect" : "delete ingress qdisc");
	if (theirs)
		log_info("%s: the ingress qdisc has filters wgshape did not add: leaving them "
			 "and the qdisc", ifname);
	return 0;
}

/*
 * Take away our redirect (and the ingress qdisc unless the user's filters
 * are on it) and IFB; leave anyone else's alone, whatever the state file
 * says (it names the IFB): the redirect only when wgshape's filter sends to
 * that IFB or to one that is gone; the IFB only when it is an IFB, has a
 * name wgshape gives this interface, and nothing else redirects elsewhere.
 * A clsact is never wgshape's: it stays with all on it.
 */
static int ingress_remove(struct netlink *nl, const char *ifname, const struct link_info *link,
			  const char *ifb)
{
	struct link_info ifbl;
	bool present, have_ifb, theirs, removed = false;
	int redirect, r;

	if (!ifb_name_ours(ifname, ifb)) {
		log_info("%s: IFB %s is not a name wgshape gives %s: leaving it and the ingress "
			 "qdisc", ifname, TEXT_QUOTE(ifb), ifname);
		return 0;
	}
	r = netlink_ingress_get(nl, link->ifindex, &present, &redirect, &theirs);
	if (r < 0)
		return fail(nl, ifname, OP_INGRESS, r, "read ingress qdisc");
	r = netlink_link_get(nl, ifb, &ifbl);
	if (r < 0 && r != -ENODEV)
		return fail(nl, ifname, OP_IFB, r, "read IFB");
	have_ifb = r == 0 && !strcmp(ifbl.kind, "ifb");
	if (present && redirect_ours(nl, redirect, have_ifb ? ifbl.ifindex : 0)) {
		r = redirect_del(nl, ifname, link->ifindex, theirs);
		if (r < 0)
			return r;
		removed = true;
	} else if (present) {
		log_info("%s: the ingress qdisc is not wgshape's redirect to %s: leaving it",
			 ifname, ifb);
	}
	if (have_ifb && (!present || removed)) {
		r = netlink_link_del(nl, ifbl.ifindex);
		if (r < 0 && r != -ENODEV)
			return fail(nl, ifname, OP_IFB, r, "delete IFB");
	}
	return 0;
}

/*
 * What is left of wgshape's broken redirect goes: the ingress qdisc with it,
 * unless filters of the user's are on it; then only wgshape's filter, if it
 * is there, and the qdisc stays for the new one.
 */
static int ingress_unbreak(struct netlink *nl, const char *ifname, int ifindex, int redirect,
			   int ifb_ifindex, bool theirs)
{
	if (theirs && !redirect_ours(nl, redirect, ifb_ifindex))
		return 0;
	return redirect_del(nl, ifname, ifindex, theirs);
}

static int ingress_set(struct netlink *nl, const char *ifname, const struct link_info *link,
		       struct shape_state *st, const char *stale_ifb, const struct cake_opts *o,
		       struct undo *u)
{
	char ifb[IFNAME_SIZE], what[64];
	struct link_info ifbl;
	bool present, have_ifb, ours, theirs;
	int redirect, r;

	shape_ifb_name(ifname, ifb);
	r = netlink_ingress_get(nl, link->ifindex, &present, &redirect, &theirs);
	if (r < 0)
		return fail(nl, ifname, OP_INGRESS, r, "read ingress qdisc");
	r = netlink_link_get(nl, ifb, &ifbl);
	if (r < 0 && r != -ENODEV)
		return fail(nl, ifname, OP_IFB, r, "read IFB");
	have_ifb = r == 0;
	ours = st->ingress || !strcmp(stale_ifb, ifb);

	if (have_ifb && (!ours || strcmp(ifbl.kind, "ifb") != 0)) {
		log_err("%s: add IFB %s: the name is taken by an interface wgshape did not make "
			"(remove it first: ip link del %s)", ifname, ifb, ifb);
		return -EEXIST;
	}
	if (st->ingress && present && have_ifb && redirect == ifbl.ifindex) {
		/* All ours and in place: a change on the IFB's cake. */
		r = cake_root_set(nl, ifname, ifb, ifbl.ifindex, true, o, NULL, u);
		return r;
	}
	if (present && !st->ingress) {
		log_err("%s: add ingress qdisc: %s already has one that wgshape did not make "
			"(remove it first: tc qdisc del dev %s ingress)", ifname, ifname, ifname);
		return -EEXIST;
	}
	if (present || (st->ingress && !have_ifb))
		log_info("%s: wgshape's download shaping lost its %s: rebuilding it", ifname,
			 present ? "IFB or redirect" : "IFB");
	if (present) {
		/* Ours, but broken (the IFB or the redirect went away): rebuild it. */
		r = ingress_unbreak(nl, ifname, link->ifindex, redirect,
				    have_ifb ? ifbl.ifindex : 0, theirs);
		if (r < 0)
			return r;
	}

	u->ifb_ifindex = 0;
	u->keep_qdisc = present && theirs;
	if (!have_ifb) {
		snprintf(what, sizeof(what), "add IFB %s", ifb);
		r = netlink_ifb_add(nl, ifb, &ifbl.ifindex);
		if (r < 0)
			return fail(nl, ifname, OP_IFB, r, what);
		u->ifb_ifindex = ifbl.ifindex;
	}
	r = cake_root_set(nl, ifname, ifb, ifbl.ifindex, have_ifb, o, NULL, &(struct undo){ 0 });
	if (r == 0) {
		r = netlink_ingress_redirect_add(nl, link->ifindex, ifbl.ifindex, u->keep_qdisc);
		if (r < 0)
			fail(nl, ifname, OP_INGRESS, r, "add ingress redirect");
	}
	if (r < 0) {
		if (u->ifb_ifindex)
			netlink_link_del(nl, u->ifb_ifindex);
		return r;
	}
	u->what = UNDO_REMOVE_INGRESS;
	st->ingress = true;
	snprintf(st->ifb, sizeof(st->ifb), "%s", ifb);
	return 0;
}

static int egress_off(struct netlink *nl, const char *ifname, const struct link_info *link,
		      struct shape_state *st)
{
	struct qdisc_info root = { 0 };
	int r;

	if (!st->egress)
		return 0;
	r = netlink_qdisc_root(nl, link->ifindex, &root);
	if (r < 0 && r != -ENOENT)
		return fail(nl, ifname, OP_CAKE, r, "read root qdisc");
	if (r == 0 && strcmp(root.kind, st->tree ? "htb" : "cake") != 0) {
		/* Someone replaced our cake since: theirs stays. */
		log_info("%s: root qdisc is %s now, not wgshape's %s: leaving it", ifname,
			 root.kind, st->tree ? "per-peer HTB" : "cake");
	} else {
		r = netlink_qdisc_restore(nl, link->ifindex, st->orig_kind, st->orig_handle,
					  st->orig_options, st->orig_options_len);
		if (r < 0) {
			qdisc_info_clear(&root);
			return fail(nl, ifname, OP_CAKE, r, "restore root qdisc");
		}
	}
	qdisc_info_clear(&root);
	st->egress = false;
	st->tree = false;
	st->cap = 0;
	return 0;
}

static int ingress_off(struct netlink *nl, const char *ifname, const struct link_info *link,
		       struct shape_state *st)
{
	int r;

	if (!st->ingress)
		return 0;
	r = ingress_remove(nl, ifname, link, st->ifb);
	if (r < 0)
		return r;
	st->ingress = false;
	st->ifb[0] = '\0';
	return 0;
}

/*
 * Load our state for link. A state saved for another ifindex belongs to an
 * interface that was deleted (and its qdiscs with it); only its IFB may
 * remain, which *stale_ifb names so it can be reused or removed.
 */
static int state_for(const char *statedir, const char *ifname, const struct link_info *link,
		     struct shape_state *st, char stale_ifb[IFNAME_SIZE])
{
	int r;

	stale_ifb[0] = '\0';
	r = state_load(statedir, ifname, st);
	if (r == -ENOENT) {
		memset(st, 0, sizeof(*st));
		st->ifindex = link->ifindex;
		return 0;
	}
	if (r < 0) {
		log_err("%s: read state %s/%s.state: %s (remove the file to start afresh)", ifname,
			statedir, ifname, strerror(-r));
		return r;
	}
	if (st->ifindex != link->ifindex) {
		if (st->ingress)
			snprintf(stale_ifb, IFNAME_SIZE, "%s", st->ifb);
		shape_state_clear(st);
		st->ifindex = link->ifindex;
	}
	return 0;
}

static int link_for(struct netlink *nl, const char *ifname, struct link_info *link)
{
	int r;

	if (!ifname_is_valid(ifname)) {
		log_err("'%s': not a valid interface name (1 to 15 characters, no '/', ':' or "
			"spaces)", ifname);
		return -EINVAL;
	}
	r = netlink_link_get(nl, ifname, link);
	if (r == -ENODEV) {
		log_err("%s: no such interface", ifname);
		return r;
	}
	if (r < 0)
		return fail(nl, ifname, OP_LINK, r, "read interface");
	return 0;
}

static int overhead_auto(struct netlink *nl, const char *ifname, const struct link_info *link,
			 int link_overhead, struct wg_dump *wg, struct overhead_choice *c)
{
	struct overhead_input in = { .link_overhead = link_overhead };
	int r;

	in.is_wireguard = !strcmp(link->kind, "wireguard");
	if (in.is_wireguard) {
		r = wg_dump_get(nl, ifname, wg);
		if (r < 0)
			return r;
		for (size_t i = 0; i < wg->n; i++) {
			in.peers_v4 += wg->peers[i].endpoint_family == AF_INET;
			in.peers_v6 += wg->peers[i].endpoint_family == AF_INET6;
			in.peers_none += !wg->peers[i].endpoint_family;
		}
	}
	r = overhead_choose(&in, c);
	if (r < 0) {
		log_err("%s: overhead auto: %s gives %d, outside cake's %d..%d", ifname, c->reason,
			c->overhead, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX);
		return r;
	}
	return 0;
}

/* Options alone (no direction named) apply to what is shaped now. */
static int directions(const char *ifname, const struct shape_state *st, bool req_peers,
		      enum dir_action *eg, enum dir_action *in)
{
	if (*eg != DIR_KEEP || *in != DIR_KEEP)
		return 0;
	if (req_peers)
		return 0; /* a peer's rate: the tree decides */
	*in = st->ingress ? DIR_SET : DIR_KEEP;
	if (st->tree)
		return 0; /* the tree takes the options too, or looks at the peers again */
	*eg = st->egress ? DIR_SET : DIR_KEEP;
	if (*eg == DIR_KEEP && *in == DIR_KEEP) {
		log_err("%s: nothing to change: not shaped yet, give egress RATE or ingress RATE",
			ifname);
		return -EINVAL;
	}
	return 0;
}

/*
 * The overhead to send when a direction is set (into o), and why (into st);
 * *warn when the automatic choice is a guess worth a warning.
 */
static int overhead_for(struct netlink *nl, const char *ifname, const struct link_info *link,
			const struct shape_request *req, struct shape_state *st,
			struct wg_dump *wg, struct cake_opts *o, bool *warn)
{
	struct overhead_choice c;
	int r;

	if (o->has & CAKE_HAS_OVERHEAD) {
		snprintf(st->overhead_reason, sizeof(st->overhead_reason), OVERHEAD_BY_HAND);
		return 0;
	}
	if (!req->overhead_auto && (st->egress || st->ingress) &&
	    !strcmp(st->overhead_reason, OVERHEAD_BY_HAND)) {
		/*
		 * A hand-set overhead stays until overhead auto or another is
		 * given; sent again, since a cake made afresh would not have it.
		 */
		log_debug("%s: keeping the overhead set by hand (%d)", ifname, st->overhead);
		o->overhead = st->overhead;
		o->has |= CAKE_HAS_OVERHEAD;
		return 0;
	}
	r = overhead_auto(nl, ifname, link, req->link_overhead, wg, &c);
	if (r < 0)
		return r;
	o->overhead = c.overhead;
	o->has |= CAKE_HAS_OVERHEAD;
	*warn = c.warn;
	snprintf(st->overhead_reason, sizeof(st->overhead_reason), "auto: %s", c.reason);
	return 0;
}

static bool peers_wanted(const struct shape_state *st)
{
	return st->peers && st->peers->len;
}

static struct peer_want *peer_in(GArray *peers, const uint8_t *key)
{
	for (guint i = 0; peers && i < peers->len; i++)
		if (!memcmp(g_array_index(peers, struct peer_want, i).key, key, WG_KEY_LEN))
			return &g_array_index(peers, struct peer_want, i);
	return NULL;
}

/* Add or update one peer in now (keeping its class), or with rate 0 take it out. */
static void peer_put(GArray *now, const struct peer_want *w)
{
	struct peer_want *have = peer_in(now, w->key), copy = *w;

	if (!w->rate) {
		if (have)
			g_array_remove_index(now, (guint)(have - (struct peer_want *)(void *)now->data));
		return;
	}
	copy.minor = have ? have->minor : 0;
	if (have)
		*have = copy;
	else
		g_array_append_val(now, copy);
}

/*
 * The peers wanted after req, into st->peers. PEERS_ALL replaces every peer
 * that did not come from `set` by hand; those stay unless req names them.
 */
static void peers_update(struct shape_state *st, const struct shape_request *req)
{
	GArray *now = g_array_new(false, true, sizeof(struct peer_want));

	if (req->peers_action == PEERS_KEEP) {
		g_array_free(now, true);
		return;
	}
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);

		if (req->peers_action == PEERS_ONE || !strcmp(w->source, "set"))
			g_array_append_val(now, *w);
	}
	for (size_t i = 0; i < req->n_peers; i++) {
		const struct peer_want *old = st->peers ? peer_in(st->peers, req->peers[i].key) : NULL;
		struct peer_want w = req->peers[i];

		peer_put(now, &w);
		if (old && w.rate)
			peer_in(now, w.key)->minor = old->minor;
	}
	if (st->peers)
		g_array_free(st->peers, true);
	st->peers = now;
}

/* The cap over all peers: egress's rate as asked, or as it is now. */
static uint64_t tree_cap(struct netlink *nl, const struct link_info *link,
			 const struct shape_state *st, const struct shape_request *req,
			 enum dir_action eg)
{
	struct qdisc_info root = { 0 };
	uint64_t cap = 0;

	if (req->egress == DIR_SET)
		return req->egress_rate;
	if (eg == DIR_OFF)
		return 0;
	if (st->tree)
		return st->cap;
	/* one cake of ours at the root now: its rate becomes the cap */
	if (st->egress && netlink_qdisc_root(nl, link->ifindex, &root) == 0 &&
	    !strcmp(root.kind, "cake"))
		cap = root.cake.rate;
	qdisc_info_clear(&root);
	return cap;
}

int shape_set(struct netlink *nl, const char *statedir, const char *ifname,
	      const struct shape_request *req)
{
	struct shape_state st = { 0 };
	struct undo u_in = { 0 }, u_eg = { 0 };
	struct wg_dump wg = { 0 };
	struct link_info link;
	struct cake_opts o = req->opts;
	enum dir_action eg = req->egress, in = req->ingress;
	char stale_ifb[IFNAME_SIZE];
	bool warn = false;
	int r;

	r = link_for(nl, ifname, &link);
	if (r < 0)
		return r;
	r = state_for(statedir, ifname, &link, &st, stale_ifb);
	if (r < 0)
		return r;

	r = directions(ifname, &st, req->peers_action != PEERS_KEEP, &eg, &in);
	if (r < 0)
		goto out;
	peers_update(&st, req);
	if (eg == DIR_SET || in == DIR_SET || peers_wanted(&st) || st.tree) {
		r = overhead_for(nl, ifname, &link, req, &st, &wg, &o, &warn);
		if (r < 0)
			goto out;
	} else if (o.has & CAKE_HAS_OVERHEAD) {
		snprintf(st.overhead_reason, sizeof(st.overhead_reason), OVERHEAD_BY_HAND);
	}

	if (in == DIR_SET) {
		struct cake_opts oi = o;

		oi.has |= CAKE_HAS_INGRESS;
		oi.ingress = true;
		if (req->ingress == DIR_SET) {
			oi.rate = req->ingress_rate;
			oi.has |= CAKE_HAS_RATE;
		}
		r = ingress_set(nl, ifname, &link, &st, stale_ifb, &oi, &u_in);
	} else if (in == DIR_OFF) {
		r = ingress_off(nl, ifname, &link, &st);
	}
	if (r < 0)
		goto out;

	if (peers_wanted(&st)) {
		r = egress_tree_set(nl, ifname, &link, &st, tree_cap(nl, &link, &st, req, eg), &o, &wg,
				    &u_eg);
	} else if (eg == DIR_SET || (eg == DIR_KEEP && st.tree && st.cap)) {
		/* from the tree back to one cake: the tree's options go with it */
		struct cake_opts oe = st.tree ? st.tree_opts : o;

		if (st.tree)
			cake_opts_merge(&oe, &o);

		if (req->egress == DIR_SET || eg == DIR_KEEP) {
			oe.rate = req->egress == DIR_SET ? req->egress_rate : st.cap;
			oe.has |= CAKE_HAS_RATE;
		}
		r = egress_set(nl, ifname, &link, &st, &oe, &u_eg);
	} else if (eg == DIR_OFF || (eg == DIR_KEEP && st.tree)) {
		r = egress_off(nl, ifname, &link, &st);
	}
	if (r < 0) {
		undo_run(nl, &u_eg, &st, link.ifindex);
		undo_run(nl, &u_in, &st, link.ifindex);
		goto out;
	}

	snprintf(st.source, sizeof(st.source), "%s", req->source ? req->source : "set");
	st.overhead = o.overhead;
	r = st.egress || st.ingress ? state_save(statedir, ifname, &st)
				    : state_remove(statedir, ifname);
	if (r < 0) {
		log_err("%s: write state in %s: %s (without it clear could not undo; undone)",
			ifname, statedir, strerror(-r));
		undo_run(nl, &u_eg, &st, link.ifindex);
		undo_run(nl, &u_in, &st, link.ifindex);
	} else if (warn && (u_in.what != UNDO_NONE || u_eg.what != UNDO_NONE)) {
		/* Only now, and only when something changed: a failure must stay one line. */
		log_warn("%s: overhead %d: %s", ifname, o.overhead, st.overhead_reason);
	}
out:
	wg_peers_free(wg.peers, wg.n);
	shape_state_clear(&st);
	return r;
}

/*
 * The interface is gone (wg-quick down, a deleted link): its qdiscs went with
 * it, but our IFB and state file did not.
 */
static int forget_gone(struct netlink *nl, const char *statedir, const char *ifname)
{
	struct shape_state st = { 0 };
	struct link_info ifbl;
	int r;

	if (!ifname_is_valid(ifname))
		return link_for(nl, ifname, &(struct link_info){ 0 });
	r = state_load(statedir, ifname, &st);
	if (r == -ENOENT)
		return link_for(nl, ifname, &(struct link_info){ 0 });
	/* A state file that cannot be read is still what show lists: forgotten too. */
	if (r == 0 && st.ingress && ifb_name_ours(ifname, st.ifb) &&
	    netlink_link_get(nl, st.ifb, &ifbl) == 0 && !strcmp(ifbl.kind, "ifb")) {
		r = netlink_link_del(nl, ifbl.ifindex);
		if (r < 0 && r != -ENODEV) {
			shape_state_clear(&st);
			return fail(nl, ifname, OP_IFB, r, "delete IFB");
		}
	}
	shape_state_clear(&st);
	r = state_remove(statedir, ifname);
	if (r < 0) {
		log_err("%s: remove state in %s: %s", ifname, statedir, strerror(-r));
		return r;
	}
	log_info("%s: interface is gone; removed what wgshape kept for it", ifname);
	return 0;
}

int shape_clear(struct netlink *nl, const char *statedir, const char *ifname)
{
	struct shape_state st = { 0 };
	struct link_info link;
	char stale_ifb[IFNAME_SIZE];
	int r;

	if (!ifname_is_valid(ifname) || netlink_link_get(nl, ifname, &link) == -ENODEV)
		return forget_gone(nl, statedir, ifname);
	r = link_for(nl, ifname, &link);
	if (r < 0)
		return r;
	r = state_for(statedir, ifname, &link, &st, stale_ifb);
	if (r < 0)
		return r;
	r = ingress_off(nl, ifname, &link, &st);
	if (r == 0 && stale_ifb[0])
		r = ingress_remove(nl, ifname, &link, stale_ifb);
	if (r == 0)
		r = egress_off(nl, ifname, &link, &st);
	if (r == 0)
		r = state_remove(statedir, ifname);
	else if (st.egress || st.ingress)
		state_save(statedir, ifname, &st); /* what is left is still ours */
	shape_state_clear(&st);
	return r;
}

void shape_view_clear(struct shape_view *v)
{
	qdisc_info_clear(&v->egress.qdisc);
	qdisc_info_clear(&v->ingress.qdisc);
	for (guint i = 0; v->peers && i < v->peers->len; i++) {
		qdisc_info_clear(&g_array_index(v->peers, struct shape_peer_view, i).leaf);
		g_strfreev(g_array_index(v->peers, struct shape_peer_view, i).allowed);
	}
	if (v->peers)
		g_array_free(v->peers, true);
	v->peers = NULL;
}

int shape_view(struct netlink *nl, const char *statedir, const char *ifname,
	       struct shape_view *out)
{
	struct shape_view v = { 0 };
	struct shape_state st = { 0 };
	struct link_info ifbl;
	char stale_ifb[IFNAME_SIZE];
	bool present, theirs;
	int redirect, r;

	if (!ifname_is_valid(ifname))
		return link_for(nl, ifname, &v.link);
	r = netlink_link_get(nl, ifname, &v.link);
	if (r == -ENODEV)
		return r; /* the caller knows whether that is an error */
	if (r < 0)
		return fail(nl, ifname, OP_LINK, r, "read interface");
	r = state_for(statedir, ifname, &v.link, &st, stale_ifb);
	if (r < 0)
		return r;
	v.has_state = st.egress || st.ingress;
	snprintf(v.overhead_reason, sizeof(v.overhead_reason), "%s", st.overhead_reason);
	snprintf(v.source, sizeof(v.source), "%s", st.source);
	if (st.egress)
		snprintf(v.orig_kind, sizeof(v.orig_kind), "%s", st.orig_kind);

	snprintf(v.egress.dev, sizeof(v.egress.dev), "%s", ifname);
	r = netlink_qdisc_root(nl, v.link.ifindex, &v.egress.qdisc);
	if (r < 0 && r != -ENOENT) {
		fail(nl, ifname, OP_CAKE, r, "read root qdisc");
		goto out;
	}
	v.egress.shaped = r == 0 && !strcmp(v.egress.qdisc.kind, "cake");
	v.egress.managed = v.egress.shaped && st.egress;
	if (st.tree && r == 0 && !strcmp(v.egress.qdisc.kind, "htb")) {
		v.tree = true;
		v.cap = st.cap;
		v.egress.shaped = v.egress.managed = true;
		v.peers = g_array_new(false, true, sizeof(struct shape_peer_view));
		r = tree_view(nl, &v.link, &st, v.peers);
		if (r < 0) {
			fail(nl, ifname, OP_CAKE, r, "read per-peer classes");
			goto out;
		}
	}

	shape_ifb_name(ifname, v.ingress.dev);
	r = netlink_ingress_get(nl, v.link.ifindex, &present, &redirect, &theirs);
	if (r < 0) {
		fail(nl, ifname, OP_INGRESS, r, "read ingress qdisc");
		goto out;
	}
	if (present && redirect && netlink_link_get_index(nl, redirect, &ifbl) == 0) {
		snprintf(v.ingress.dev, sizeof(v.ingress.dev), "%s", ifbl.name);
		r = netlink_qdisc_root(nl, redirect, &v.ingress.qdisc);
		if (r < 0 && r != -ENOENT) {
			fail(nl, ifname, OP_CAKE, r, "read IFB root qdisc");
			goto out;
		}
		v.ingress.shaped = r == 0 && !strcmp(v.ingress.qdisc.kind, "cake");
		v.ingress.managed = v.ingress.shaped && st.ingress && !strcmp(st.ifb, ifbl.name);
	}
	r = 0;
	*out = v;
out:
	if (r < 0)
		shape_view_clear(&v);
	shape_state_clear(&st);
	return r;
}
