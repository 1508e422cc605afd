// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Ingress (download) shaping: an IFB named for the interface, the ingress
 * qdisc with a matchall filter whose mirred action redirects to the IFB,
 * and cake (ingress mode) at the IFB's root. Only what wgshape made is
 * ever taken away.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"
#include "util/text.h"
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
static int redirect_del(struct netlink *nl, const char *ifname, int ifindex, bool theirs)
{
	int r;

	r = theirs ? netlink_ingress_filter_del(nl, ifindex) : netlink_ingress_del(nl, ifindex);
	if (r < 0)
		return shape_fail(nl, ifname, OP_INGRESS, r,
			    theirs ? "delete ingress redirect" : "delete ingress qdisc");
	if (theirs)
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
			const char *ifb, bool *present, int *redirect, bool *theirs,
			struct link_info *ifbl)
{
	int r = netlink_ingress_get(nl, link->ifindex, present, redirect, theirs);

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
 * A clsact is never wgshape's: it stays with all on it.
 */
int ingress_remove(struct netlink *nl, const char *ifname, const struct link_info *link,
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
	r = ingress_read(nl, ifname, link, ifb, &present, &redirect, &theirs, &ifbl);
	if (r < 0)
		return r;
	have_ifb = r == 1 && !strcmp(ifbl.kind, "ifb");
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
			return shape_fail(nl, ifname, OP_IFB, r, "delete IFB");
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

/* Make what is missing: the IFB (unless ifb_ifindex), cake on it, the redirect. */
static int ingress_make(struct netlink *nl, const char *ifname, const struct link_info *link,
			const char *ifb, int ifb_ifindex, bool keep_qdisc, const struct cake_opts *o,
			struct undo *u)
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
	r = cake_root_set(nl, ifname, ifb, ifb_ifindex, have_ifb, o, NULL, &(struct undo){ 0 });
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

static int ingress_set(struct netlink *nl, const char *ifname, const struct link_info *link,
		       struct shape_state *st, const char *stale_ifb, const struct cake_opts *o,
		       struct undo *u)
{
	char ifb[IFNAME_SIZE];
	struct link_info ifbl;
	bool present, have_ifb, ours, theirs;
	int redirect, r;

	shape_ifb_name(ifname, ifb);
	r = ingress_read(nl, ifname, link, ifb, &present, &redirect, &theirs, &ifbl);
	if (r < 0)
		return r;
	have_ifb = r == 1;
	ours = st->ingress || !strcmp(stale_ifb, ifb);

	if (have_ifb && (!ours || strcmp(ifbl.kind, "ifb") != 0)) {
		log_err("%s: add IFB %s: the name is taken by an interface wgshape did not make "
			"(remove it first: ip link del %s)", ifname, ifb, ifb);
		return -EEXIST;
	}
	if (st->ingress && present && have_ifb && redirect == ifbl.ifindex)
		/* All ours and in place: a change on the IFB's cake. */
		return cake_root_set(nl, ifname, ifb, ifbl.ifindex, true, o, NULL, u);
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
	r = ingress_make(nl, ifname, link, ifb, have_ifb ? ifbl.ifindex : 0, present && theirs, o,
			 u);
	if (r < 0)
		return r;
	st->ingress = true;
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
	st->ifb[0] = '\0';
	return 0;
}

int ingress_apply(struct netlink *nl, const char *ifname, const struct link_info *link,
		  struct shape_state *st, const char *stale_ifb, const struct shape_request *req,
		  enum dir_action in, const struct cake_opts *o, struct undo *u)
{
	struct cake_opts oi = *o;

	if (in == DIR_OFF)
		return ingress_off(nl, ifname, link, st);
	if (in != DIR_SET)
		return 0;
	oi.has |= CAKE_HAS_INGRESS;
	oi.ingress = true;
	if (req->ingress == DIR_SET) {
		oi.rate = req->ingress_rate;
		oi.has |= CAKE_HAS_RATE;
	}
	return ingress_set(nl, ifname, link, st, stale_ifb, &oi, u);
}
