// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The shaping engine's orchestration. Order of work in `set`: ingress first
 * (the part most likely to fail on a kernel without ifb, mirred or
 * matchall; src/shape/ingress.c), then egress (src/shape/egress.c), then
 * the state file; any failure undoes the steps before it. `show` reads back
 * in src/shape/view.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/log.h"
#include "shape/decide.h"
#include "shape/overhead.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "util/ifname.h"
#include "util/text.h"
#include "engine.h"

#define OVERHEAD_BY_HAND "set by hand"

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

int shape_fail(struct netlink *nl, const char *ifname, enum op op, int r, const char *what)
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

int wg_dump_get(struct netlink *nl, const char *ifname, struct wg_dump *d)
{
	int r;

	if (d->read)
		return 0;
	r = netlink_wg_peers(nl, ifname, &d->peers, &d->n);
	if (r < 0)
		return shape_fail(nl, ifname, OP_WG, r, "read WireGuard peers");
	d->read = true;
	return 0;
}

int shape_state_for(const char *statedir, const char *ifname, const struct link_info *link,
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

int shape_link_for(struct netlink *nl, const char *ifname, struct link_info *link)
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
		return shape_fail(nl, ifname, OP_LINK, r, "read interface");
	return 0;
}

/* shape_link_for, then shape_state_for: what set and clear start from. */
static int link_and_state(struct netlink *nl, const char *statedir, const char *ifname,
			  struct link_info *link, struct shape_state *st, char stale_ifb[IFNAME_SIZE])
{
	int r = shape_link_for(nl, ifname, link);

	return r < 0 ? r : shape_state_for(statedir, ifname, link, st, stale_ifb);
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
 * The overhead to send when sets (a direction or the tree is set) into o,
 * and why into st (an overhead given by hand is recorded as such in any
 * case); *warn when the automatic choice is a guess worth a warning.
 */
static int overhead_for(struct netlink *nl, const char *ifname, const struct link_info *link,
			const struct shape_request *req, bool sets, struct shape_state *st,
			struct wg_dump *wg, struct cake_opts *o, bool *warn)
{
	struct overhead_choice c;
	int r;

	if (o->has & CAKE_HAS_OVERHEAD) {
		snprintf(st->overhead_reason, sizeof(st->overhead_reason), OVERHEAD_BY_HAND);
		return 0;
	}
	if (!sets)
		return 0;
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

/*
 * The peers being built, with each key's first live entry by hash (index + 1),
 * so that a request naming every peer takes no walk per peer. A peer taken
 * out is marked gone and dropped at the end, keeping the order of the rest.
 */
struct peer_list {
	GArray *peers; /* struct peer_want */
	GArray *gone; /* bool, one per entry */
	GHashTable *first; /* key -> index + 1 */
	bool dups; /* some key is in more than one entry */
};

static void list_add(struct peer_list *l, const struct peer_want *w)
{
	bool no = false;

	g_array_append_val(l->peers, *w);
	g_array_append_val(l->gone, no);
	if (g_hash_table_contains(l->first, w->key))
		l->dups = true;
	else
		g_hash_table_insert(l->first,
				    g_array_index(l->peers, struct peer_want, l->peers->len - 1).key,
				    GUINT_TO_POINTER(l->peers->len));
}

static struct peer_want *list_find(struct peer_list *l, const uint8_t *key)
{
	guint i = GPOINTER_TO_UINT(g_hash_table_lookup(l->first, key));

	return i ? &g_array_index(l->peers, struct peer_want, i - 1) : NULL;
}

static void list_take(struct peer_list *l, guint i)
{
	const uint8_t *key = g_array_index(l->peers, struct peer_want, i).key;

	g_array_index(l->gone, bool, i) = true;
	g_hash_table_remove(l->first, key);
	/* a corrupt state may name a key twice: then the next one is the first */
	for (guint j = i + 1; l->dups && j < l->peers->len; j++)
		if (!g_array_index(l->gone, bool, j) &&
		    !memcmp(g_array_index(l->peers, struct peer_want, j).key, key, WG_KEY_LEN)) {
			g_hash_table_insert(l->first, g_array_index(l->peers, struct peer_want, j).key,
					    GUINT_TO_POINTER(j + 1));
			break;
		}
}

/*
 * Add or update one peer in now (keeping its class), or with neither a
 * download nor an upload rate take it out. A direction w leaves at
 * PEER_RATE_KEEP keeps what the peer has. Does the peer stay?
 */
static bool peer_put(struct peer_list *now, const struct peer_want *w)
{
	struct peer_want *have = list_find(now, w->key), copy = *w;

	if (copy.rate == PEER_RATE_KEEP)
		copy.rate = have ? have->rate : 0;
	if (copy.upload == PEER_RATE_KEEP)
		copy.upload = have ? have->upload : 0;
	if (!copy.rate && !copy.upload) {
		if (have)
			list_take(now, (guint)(have - (struct peer_want *)(void *)now->peers->data));
		return false;
	}
	copy.minor = have ? have->minor : 0;
	if (have)
		*have = copy;
	else
		list_add(now, &copy);
	return true;
}

/*
 * The peers wanted after req, into st->peers. PEERS_ALL replaces every peer
 * that did not come from `set` by hand; those stay unless req names them.
 */
void shape_peers_update(struct shape_state *st, const struct shape_request *req)
{
	struct peer_list now;
	g_autoptr(GHashTable) before = g_hash_table_new(wg_key_hash, wg_key_equal);
	GArray *kept;

	if (req->peers_action == PEERS_KEEP)
		return;
	/* the entries move while now grows: sized up front, so keys stay put */
	now.peers = g_array_sized_new(false, true, sizeof(struct peer_want),
				      (st->peers ? st->peers->len : 0) + (guint)req->n_peers);
	now.gone = g_array_new(false, true, sizeof(bool));
	now.first = g_hash_table_new(wg_key_hash, wg_key_equal);
	now.dups = false;
	for (guint i = st->peers ? st->peers->len : 0; i-- > 0;)
		g_hash_table_insert(before, g_array_index(st->peers, struct peer_want, i).key,
				    GUINT_TO_POINTER(i + 1));
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);

		if (req->peers_action == PEERS_ONE || !strcmp(w->source, "set"))
			list_add(&now, w);
	}
	for (size_t i = 0; i < req->n_peers; i++) {
		guint o = GPOINTER_TO_UINT(g_hash_table_lookup(before, req->peers[i].key));
		const struct peer_want *old = o ? &g_array_index(st->peers, struct peer_want, o - 1)
						: NULL;
		struct peer_want w = req->peers[i];

		if (peer_put(&now, &w) && old) {
			list_find(&now, w.key)->minor = old->minor;
			list_find(&now, w.key)->activity = old->activity;
		}
	}
	kept = g_array_sized_new(false, true, sizeof(struct peer_want), now.peers->len);
	for (guint i = 0; i < now.peers->len; i++)
		if (!g_array_index(now.gone, bool, i))
			g_array_append_val(kept, g_array_index(now.peers, struct peer_want, i));
	g_hash_table_destroy(now.first);
	g_array_free(now.gone, true);
	g_array_free(now.peers, true);
	if (st->peers)
		g_array_free(st->peers, true);
	st->peers = kept;
}

/*
 * The state after a set that worked: saved, or removed when nothing is
 * shaped; one: st is one peer's entry of it (state_load_one), written in
 * place in the file.
 */
static int state_commit(const char *statedir, const char *ifname, const struct shape_request *req,
			struct shape_state *st, int overhead, const struct state_one *one)
{
	int r;

	text_copy(st->source, sizeof(st->source), req->source ? req->source : "set");
	st->overhead = overhead;
	if (one)
		r = state_save_one(statedir, ifname, st, one);
	else if (!st->egress && !st->ingress)
		r = state_remove(statedir, ifname);
	else
		r = state_save(statedir, ifname, st);
	if (r < 0)
		log_err("%s: write state in %s: %s (without it clear could not undo; undone)",
			ifname, statedir, strerror(-r));
	return r;
}

/*
 * One peer's rate alone (peer_rate_only says when): one HTB class change
 * message and the state, with nothing read from the kernel (no WireGuard
 * dump, no tree dump, no overhead check: the overhead stays what the state
 * says). 1 when the request is of another kind, or the kernel refuses the
 * change (the class is gone, the root is not ours): the full path then
 * plans the tree against what the kernel has and says what is wrong.
 */
static int peer_rate_in_place(struct netlink *nl, const char *statedir, const char *ifname,
			      const struct link_info *link, struct shape_state *st,
			      const struct shape_request *req, const struct state_one *one)
{
	const struct peer_want *old = peer_rate_only(st, req);
	bool up = peer_rate_upload(req);
	struct link_info ifb;
	uint64_t rate, was;
	uint16_t minor;
	int ifindex = link->ifindex, r;

	if (!old)
		return 1;
	/* the upload: its class on the IFB */
	if (up && netlink_link_get(nl, st->ifb, &ifb) < 0)
		return 1;
	if (up)
		ifindex = ifb.ifindex;
	/* old is st's: shape_peers_update below replaces it */
	minor = old->minor;
	was = MIN(up ? old->upload : old->rate, TREE_RATE_UNLIMITED);
	rate = MIN(up ? req->peers[0].upload : req->peers[0].rate, TREE_RATE_UNLIMITED);
	r = netlink_htb_class_set(nl, ifindex, TREE_HANDLE(minor), TREE_HANDLE(TREE_CAP_MINOR),
				  rate, rate, QDISC_CHANGE);
	if (r < 0) {
		log_debug("%s: class 1:%x%s: change in place: %s; planning the tree", ifname, minor,
			  up ? " (upload)" : "",
			  *netlink_ext_msg(nl) ? netlink_ext_msg(nl) : strerror(-r));
		return 1;
	}
	shape_peers_update(st, req);
	r = state_commit(statedir, ifname, req, st, st->overhead, one);
	if (r < 0)
		netlink_htb_class_set(nl, ifindex, TREE_HANDLE(minor), TREE_HANDLE(TREE_CAP_MINOR),
				      was, was, QDISC_CHANGE);
	else if (r == 0)
		log_debug("%s: class 1:%x%s changed in place", ifname, minor,
			  up ? " (upload)" : "");
	return r;
}

/*
 * shape_peer_rate's short way: the state as the daemon keeps it (no copy,
 * the peer by an index), one class change, the peer's entry changed in
 * place and written behind. 1 when it does not apply (not kept, the file
 * changed behind the daemon's back, not one class change, the kernel
 * refused): the long way then.
 */
static int peer_rate_kept(struct netlink *nl, const char *statedir, const char *ifname,
			  const uint8_t key[WG_KEY_LEN], uint64_t rate, const char *source, bool up)
{
	struct peer_want *old, w;
	struct shape_state *st = state_borrow(statedir, ifname, key, &old);
	struct shape_request req = { .peers_action = PEERS_ONE, .n_peers = 1, .peers = &w };
	struct link_info ifb;
	/* the state's ifindex: a link made again since has another, and the change fails */
	int ifindex = st ? st->ifindex : 0, r;

	if (!st || !old || !rate)
		return 1;
	w = *old;
	if (up) {
		w.rate = PEER_RATE_KEEP;
		w.upload = rate;
	} else {
		w.rate = rate;
	}
	text_copy(w.source, sizeof(w.source), source);
	if (!peer_rate_fits(st, &req, old))
		return 1;
	/* the upload: its class on the IFB */
	if (up && netlink_link_get(nl, st->ifb, &ifb) < 0)
		return 1;
	if (up)
		ifindex = ifb.ifindex;
	r = netlink_htb_class_set(nl, ifindex, TREE_HANDLE(old->minor),
				  TREE_HANDLE(TREE_CAP_MINOR), MIN(rate, TREE_RATE_UNLIMITED),
				  MIN(rate, TREE_RATE_UNLIMITED), QDISC_CHANGE);
	if (r < 0) {
		log_debug("%s: class 1:%x%s: change in place: %s; the long way", ifname, old->minor,
			  up ? " (upload)" : "",
			  *netlink_ext_msg(nl) ? netlink_ext_msg(nl) : strerror(-r));
		return 1;
	}
	*(up ? &old->upload : &old->rate) = rate;
	text_copy(old->source, sizeof(old->source), source);
	state_borrow_changed(statedir, ifname);
	log_debug("%s: class 1:%x%s changed in place", ifname, old->minor, up ? " (upload)" : "");
	return 0;
}

int shape_peer_rate(struct netlink *nl, const char *statedir, const char *ifname,
		    const uint8_t key[WG_KEY_LEN], uint64_t rate, const char *source)
{
	struct shape_state st = { 0 };
	struct shape_request req = { .peers_action = PEERS_ONE, .n_peers = 1 };
	struct peer_want w = { 0 };
	struct link_info link;
	char stale_ifb[IFNAME_SIZE], own[sizeof(st.source)];
	int r, lock;

	r = peer_rate_kept(nl, statedir, ifname, key, rate, source, false);
	if (r != 1)
		return r;
	lock = state_lock(statedir, ifname);
	r = link_and_state(nl, statedir, ifname, &link, &st, stale_ifb);
	if (r < 0)
		goto out;
	r = 1;
	if (stale_ifb[0])
		goto out;
	for (guint i = 0; st.peers && i < st.peers->len; i++)
		if (!memcmp(g_array_index(st.peers, struct peer_want, i).key, key, WG_KEY_LEN))
			w = g_array_index(st.peers, struct peer_want, i);
	if (!w.minor || !rate)
		goto out;
	w.rate = rate;
	text_copy(w.source, sizeof(w.source), source);
	text_copy(own, sizeof(own), st.source); /* state_commit writes st.source from it */
	req.peers = &w;
	req.source = own;
	r = peer_rate_in_place(nl, statedir, ifname, &link, &st, &req, NULL);
out:
	state_unlock(lock);
	shape_state_clear(&st);
	return r;
}

int shape_peer_upload_rate(struct netlink *nl, const char *statedir, const char *ifname,
			   const uint8_t key[WG_KEY_LEN], uint64_t rate, const char *source)
{
	return peer_rate_kept(nl, statedir, ifname, key, rate, source, true);
}

int shape_peers_activity(struct netlink *nl, const char *statedir, const char *ifname,
			 const struct peer_seen *seen, size_t n, const struct wg_peer *peers,
			 size_t n_peers)
{
	g_autoptr(GHashTable) by_key = g_hash_table_new(wg_key_hash, wg_key_equal);
	struct shape_state st = { 0 };
	/* the caller's dump, not read again (nor freed here) */
	struct wg_dump wg = { .read = true, .peers = (struct wg_peer *)peers, .n = n_peers };
	struct link_info link;
	char stale_ifb[IFNAME_SIZE];
	unsigned int changed = 0, active = 0;
	int r, lock = state_lock(statedir, ifname);

	r = link_and_state(nl, statedir, ifname, &link, &st, stale_ifb);
	if (r < 0) {
		state_unlock(lock);
		return r;
	}
	for (size_t i = 0; i < n; i++)
		g_hash_table_insert(by_key, (gpointer)seen[i].key, (gpointer)&seen[i]);
	for (guint i = 0; (st.tree || st.in_tree) && st.peers && i < st.peers->len; i++) {
		struct peer_want *w = &g_array_index(st.peers, struct peer_want, i);
		const struct peer_seen *s = g_hash_table_lookup(by_key, w->key);
		uint8_t now;

		if (!s)
			continue;
		now = s->active ? PEER_ACTIVE : PEER_IDLE;
		changed += w->activity != now;
		active += w->activity != now && s->active;
		w->activity = now;
	}
	r = 0;
	if (changed)
		r = egress_tree_resync(nl, &link, &st, &wg);
	if (changed && r == 0)
		r = ingress_tree_resync(nl, &link, &st, &wg);
	if (r == 0 && changed)
		r = state_save(statedir, ifname, &st);
	if (r == 0 && changed)
		log_info("%s: lazy leaves: %u peers became active (cake), %u idle (fq_codel)",
			 ifname, active, changed - active);
	state_unlock(lock);
	shape_state_clear(&st);
	return r < 0 ? r : (int)changed;
}

/*
 * peer_rate_in_place for a process that reads its state once (`set IFACE
 * peer KEY download RATE`): only that peer's entry of the state is read and
 * written (state_load_one), not all the peers'. 1 when it does not apply:
 * the whole way then (which also says what is wrong).
 */
static int peer_rate_one(struct netlink *nl, const char *statedir, const char *ifname,
			 const struct shape_request *req)
{
	struct shape_state st = { 0 };
	struct state_one one = { 0 };
	struct link_info link;
	int r;

	if (req->peers_action != PEERS_ONE || req->n_peers != 1 || !req->peers[0].rate ||
	    !req->peers[0].upload || !ifname_is_valid(ifname) ||
	    netlink_link_get(nl, ifname, &link) < 0)
		return 1;
	if (state_load_one(statedir, ifname, req->peers[0].key, &st, &one) < 0)
		return 1;
	/* a recreated interface (its IFB left behind): the whole way cleans up */
	r = st.ifindex == link.ifindex ?
		    peer_rate_in_place(nl, statedir, ifname, &link, &st, req, &one) : 1;
	shape_state_clear(&st);
	state_one_clear(&one);
	return r;
}

static int set_locked(struct netlink *nl, const char *statedir, const char *ifname,
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

	r = peer_rate_one(nl, statedir, ifname, req);
	if (r <= 0)
		return r;
	r = link_and_state(nl, statedir, ifname, &link, &st, stale_ifb);
	if (r < 0)
		return r;
	r = stale_ifb[0] ? 1 : peer_rate_in_place(nl, statedir, ifname, &link, &st, req, NULL);
	if (r <= 0)
		goto out;

	r = directions(ifname, &st, req->peers_action != PEERS_KEEP, &eg, &in);
	if (r < 0)
		goto out;
	shape_peers_update(&st, req);
	r = overhead_for(nl, ifname, &link, req,
			 eg == DIR_SET || in == DIR_SET || shape_peers_wanted(&st) || st.tree ||
				 shape_upload_wanted(&st) || st.in_tree,
			 &st,
			 &wg, &o, &warn);
	if (r == 0)
		r = ingress_apply(nl, ifname, &link, &st, stale_ifb, req, in, &o, &wg, &u_in);
	if (r < 0)
		goto out;

	r = egress_apply(nl, ifname, &link, &st, req, eg, &o, &wg, &u_eg);
	if (r == 0)
		r = state_commit(statedir, ifname, req, &st, o.overhead, NULL);
	if (r < 0) {
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
		return shape_link_for(nl, ifname, &(struct link_info){ 0 });
	r = state_load(statedir, ifname, &st);
	if (r == -ENOENT)
		return shape_link_for(nl, ifname, &(struct link_info){ 0 });
	/* A state file that cannot be read is still what show lists: forgotten too. */
	if (r == 0 && st.ingress && ifb_name_ours(ifname, st.ifb) &&
	    netlink_link_get(nl, st.ifb, &ifbl) == 0 && !strcmp(ifbl.kind, "ifb")) {
		r = netlink_link_del(nl, ifbl.ifindex);
		if (r < 0 && r != -ENODEV) {
			shape_state_clear(&st);
			return shape_fail(nl, ifname, OP_IFB, r, "delete IFB");
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

static int clear_locked(struct netlink *nl, const char *statedir, const char *ifname)
{
	struct shape_state st = { 0 };
	struct link_info link;
	char stale_ifb[IFNAME_SIZE];
	int r;

	if (!ifname_is_valid(ifname) || netlink_link_get(nl, ifname, &link) == -ENODEV)
		return forget_gone(nl, statedir, ifname);
	r = link_and_state(nl, statedir, ifname, &link, &st, stale_ifb);
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

int shape_set(struct netlink *nl, const char *statedir, const char *ifname,
	      const struct shape_request *req)
{
	int lock = state_lock(statedir, ifname);
	int r = set_locked(nl, statedir, ifname, req);

	state_unlock(lock);
	return r;
}

int shape_clear(struct netlink *nl, const char *statedir, const char *ifname)
{
	int lock = state_lock(statedir, ifname);
	int r = clear_locked(nl, statedir, ifname);

	state_unlock(lock);
	return r;
}
