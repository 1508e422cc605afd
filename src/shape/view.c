// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What `show` gives: everything read back from the kernel (egress's root,
 * the per-peer tree, the IFB's cake or per-peer upload tree), with the state file saying which of
 * it is wgshape's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "shape/tree-plan.h"
#include "shape/tree-sync.h"
#include "util/ifname.h"
#include "engine.h"

/* The kernel's class minor and its leaf, into v (leaf's options are moved). */
static void view_class(struct tree_kernel_read *k, struct shape_peer_view *v)
{
	for (size_t i = 0; i < k->n_classes; i++)
		if (k->classes[i].classid == TREE_HANDLE(v->minor)) {
			v->cls = k->classes[i];
			v->has_class = true;
		}
	for (size_t i = 0; i < k->n_qdiscs; i++)
		if (k->qdiscs[i].parent == TREE_HANDLE(v->minor)) {
			v->leaf = k->qdiscs[i];
			memset(&k->qdiscs[i], 0, sizeof(k->qdiscs[i]));
			v->has_leaf = true;
		}
}

static void view_allowed(const struct wg_peer *p, struct shape_peer_view *v)
{
	char pfx[64];

	v->allowed = g_new0(char *, p->n_allowed + 1);
	for (size_t i = 0; i < p->n_allowed; i++)
		v->allowed[i] = g_strdup(tc_prefix_str(&p->allowed[i], pfx, sizeof(pfx)));
}

/*
 * A tree as show gives it, appended to out: the default class, then each
 * peer wanted in that direction. The download tree is on link; the upload
 * tree (upload) on the IFB named ifb, with link's WireGuard peers.
 */
static int view_tree(struct netlink *nl, const struct link_info *link, const char *ifb,
		     bool upload, const struct shape_state *st, GArray *out)
{
	struct tree_kernel_read k = { 0 };
	struct shape_peer_view def = { .name = "default", .minor = TREE_DEFAULT_MINOR,
				       .present = true };
	struct link_info ifbl;
	int r = 0;

	if (upload) {
		r = netlink_link_get(nl, ifb, &ifbl);
		if (r == 0)
			r = netlink_wg_peers(nl, link->name, &k.peers, &k.n_peers);
		if (r < 0)
			return r;
		k.peers_given = true;
	}
	r = tree_kernel_read(nl, upload ? &ifbl : link, &k);
	if (r < 0) {
		if (upload)
			wg_peers_free(k.peers, k.n_peers);
		return r;
	}
	view_class(&k, &def);
	g_array_append_val(out, def);
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);
		struct shape_peer_view v = { .rate = upload ? w->upload : w->rate,
					     .minor = w->minor };
		enum peer_leaf leaf = tree_leaf_of(w, st->tree_leaf);

		if (!v.rate)
			continue; /* not shaped this way */

		v.leaf_setting = (uint8_t)leaf;
		v.leaf_active = w->activity == PEER_ACTIVE;

		snprintf(v.name, sizeof(v.name), "%s", w->name);
		snprintf(v.source, sizeof(v.source), "%s", w->source);
		wg_key_to_base64(w->key, v.key);
		for (size_t p = 0; p < k.n_peers; p++)
			if (!memcmp(k.peers[p].key, w->key, WG_KEY_LEN)) {
				v.present = true;
				view_allowed(&k.peers[p], &v);
			}
		if (v.present)
			view_class(&k, &v);
		g_array_append_val(out, v);
	}
	if (upload)
		wg_peers_free(k.peers, k.n_peers);
	tree_kernel_clear(&k);
	return 0;
}

static void peer_views_free(GArray *peers)
{
	for (guint i = 0; peers && i < peers->len; i++) {
		qdisc_info_clear(&g_array_index(peers, struct shape_peer_view, i).leaf);
		g_strfreev(g_array_index(peers, struct shape_peer_view, i).allowed);
	}
	if (peers)
		g_array_free(peers, true);
}

void shape_view_clear(struct shape_view *v)
{
	qdisc_info_clear(&v->egress.qdisc);
	qdisc_info_clear(&v->ingress.qdisc);
	peer_views_free(v->peers);
	peer_views_free(v->upload_peers);
	v->peers = NULL;
	v->upload_peers = NULL;
}

static int view_egress(struct netlink *nl, const char *ifname, const struct shape_state *st,
		       struct shape_view *v)
{
	int r;

	snprintf(v->egress.dev, sizeof(v->egress.dev), "%s", ifname);
	r = netlink_qdisc_root(nl, v->link.ifindex, &v->egress.qdisc);
	if (r < 0 && r != -ENOENT)
		return shape_fail(nl, ifname, OP_CAKE, r, "read root qdisc");
	v->egress.shaped = r == 0 && !strcmp(v->egress.qdisc.kind, "cake");
	v->egress.managed = v->egress.shaped && st->egress;
	if (!(st->tree && r == 0 && !strcmp(v->egress.qdisc.kind, "htb")))
		return 0;
	v->tree = true;
	v->cap = st->cap;
	v->egress.shaped = v->egress.managed = true;
	v->peers = g_array_new(false, true, sizeof(struct shape_peer_view));
	r = view_tree(nl, &v->link, NULL, false, st, v->peers);
	return r < 0 ? shape_fail(nl, ifname, OP_CAKE, r, "read per-peer classes") : 0;
}

static int view_ingress(struct netlink *nl, const char *ifname, const struct shape_state *st,
			struct shape_view *v)
{
	struct ingress_slot slot;
	struct link_info ifbl;
	int redirect, r;

	shape_ifb_name(ifname, v->ingress.dev);
	r = netlink_ingress_get(nl, v->link.ifindex, &slot);
	if (r < 0)
		return shape_fail(nl, ifname, OP_INGRESS, r, "read ingress qdisc");
	redirect = slot.redirect_ifindex;
	if (!slot.present || !redirect || netlink_link_get_index(nl, redirect, &ifbl) != 0)
		return 0;
	snprintf(v->ingress.dev, sizeof(v->ingress.dev), "%s", ifbl.name);
	r = netlink_qdisc_root(nl, redirect, &v->ingress.qdisc);
	if (r < 0 && r != -ENOENT)
		return shape_fail(nl, ifname, OP_CAKE, r, "read IFB root qdisc");
	v->ingress.shaped = r == 0 && !strcmp(v->ingress.qdisc.kind, "cake");
	v->ingress.managed = v->ingress.shaped && st->ingress && !strcmp(st->ifb, ifbl.name);
	if (!(st->in_tree && r == 0 && !strcmp(v->ingress.qdisc.kind, "htb") &&
	      !strcmp(st->ifb, ifbl.name)))
		return 0;
	v->in_tree = true;
	v->in_cap = st->in_cap;
	v->ingress.shaped = v->ingress.managed = true;
	v->upload_peers = g_array_new(false, true, sizeof(struct shape_peer_view));
	r = view_tree(nl, &v->link, ifbl.name, true, st, v->upload_peers);
	return r < 0 ? shape_fail(nl, ifname, OP_CAKE, r, "read per-peer upload classes") : 0;
}

int shape_view(struct netlink *nl, const char *statedir, const char *ifname,
	       struct shape_view *out)
{
	struct shape_view v = { 0 };
	struct shape_state st = { 0 };
	char stale_ifb[IFNAME_SIZE];
	int r;

	if (!ifname_is_valid(ifname))
		return shape_link_for(nl, ifname, &v.link);
	r = netlink_link_get(nl, ifname, &v.link);
	if (r == -ENODEV)
		return r; /* the caller knows whether that is an error */
	if (r < 0)
		return shape_fail(nl, ifname, OP_LINK, r, "read interface");
	r = shape_state_for(statedir, ifname, &v.link, &st, stale_ifb);
	if (r < 0)
		return r;
	v.has_state = st.egress || st.ingress;
	snprintf(v.overhead_reason, sizeof(v.overhead_reason), "%s", st.overhead_reason);
	snprintf(v.source, sizeof(v.source), "%s", st.source);
	if (st.egress)
		snprintf(v.orig_kind, sizeof(v.orig_kind), "%s", st.orig_kind);

	r = view_egress(nl, ifname, &st, &v);
	if (r == 0)
		r = view_ingress(nl, ifname, &st, &v);
	if (r == 0)
		*out = v;
	else
		shape_view_clear(&v);
	shape_state_clear(&st);
	return r;
}
