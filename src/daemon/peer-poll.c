// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's one poll: WireGuard says nothing when peers or their
 * AllowedIPs change (wg set, syncconf). Every few seconds, one dump of each
 * interface's peers, and only when they changed since the last look is the
 * interface reconciled (which reads its whole tree back: at 1,000 peers
 * that is what costs). Only while an interface is shaped per peer or a
 * [peer] section exists, and not where enforce = no (a reshape would put
 * back what was changed by hand).
 *
 * The same dump says which peers moved traffic (their byte counters): a
 * lazy leaf becomes cake when its peer starts, and a small fq_codel again
 * after leaf-idle seconds without traffic (src/shape/tree-plan.c). It also
 * keeps the rate channel's index of the peers young.
 *
 * The dumps run in a thread (kernel.h's wg_dumper): at 1,000 peers one
 * takes 15-20 ms in the lab VM, which rate requests would wait out.
 */
#include <net/if.h>
#include <string.h>
#include <glib.h>

#include "channel/server.h"
#include "daemon/internal.h"
#include "shape/peers.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "shape/tree-plan.h"

#define PEER_POLL_SECONDS 2

/* One peer's bytes as last seen, and when they last moved (monotonic seconds). */
struct leaf_seen {
	uint8_t key[WG_KEY_LEN];
	uint64_t bytes;
	gint64 moved;
};

/*
 * Is a peer with a lazy leaf active now? Its client holds a lease, or its
 * bytes moved within idle seconds. The first look at a peer has nothing to
 * compare with: it stays as it was judged until its bytes move.
 */
static bool leaf_active(GHashTable *seen, const struct peer_want *w, uint64_t bytes, gint64 now,
			unsigned int idle)
{
	struct leaf_seen *s = g_hash_table_lookup(seen, w->key);

	if (!s) {
		s = g_new0(struct leaf_seen, 1);
		memcpy(s->key, w->key, WG_KEY_LEN);
		s->bytes = bytes;
		s->moved = w->activity == PEER_ACTIVE ? now : G_MININT64 / 2;
		g_hash_table_insert(seen, s->key, s);
	} else if (s->bytes != bytes) {
		s->bytes = bytes;
		s->moved = now;
	}
	return peer_leased(w) || now - s->moved < (gint64)idle;
}

/* Lazy leaves after their peers' traffic in this dump (shape_peers_activity). */
static void leaves_follow(struct daemon *d, const char *ifname, const struct shape_state *st,
			  const struct wg_peer *peers, size_t n)
{
	g_autoptr(GHashTable) by_key = g_hash_table_new(wg_key_hash, wg_key_equal);
	g_autoptr(GArray) flips = g_array_new(false, true, sizeof(struct peer_seen));
	gint64 now = g_get_monotonic_time() / G_USEC_PER_SEC;
	GHashTable *seen = g_hash_table_lookup(d->leaf_seen, ifname);

	if (!seen) {
		seen = g_hash_table_new_full(wg_key_hash, wg_key_equal, NULL, g_free);
		g_hash_table_insert(d->leaf_seen, g_strdup(ifname), seen);
	}
	for (size_t i = 0; i < n; i++)
		g_hash_table_insert(by_key, (gpointer)peers[i].key, (gpointer)&peers[i]);
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);
		const struct wg_peer *p = g_hash_table_lookup(by_key, w->key);
		struct peer_seen f = { .active = false };

		if (!p || tree_leaf_of(w, st->tree_leaf) != PEER_LEAF_LAZY)
			continue;
		f.active = leaf_active(seen, w, p->rx_bytes + p->tx_bytes, now, d->cfg->leaf_idle);
		if (f.active == (w->activity == PEER_ACTIVE))
			continue;
		memcpy(f.key, w->key, WG_KEY_LEN);
		g_array_append_val(flips, f);
	}
	if (flips->len)
		shape_peers_activity(d->nl, d->opts->statedir, ifname,
				     (const struct peer_seen *)(void *)flips->data, flips->len,
				     peers, n);
}

/* Does a [peer] section call for a look at ifname (it names it, or names no interface)? */
static bool peers_may_want(const struct daemon *d, const char *ifname)
{
	for (guint i = 0; i < d->cfg->peers->len; i++)
		if (!((const struct conf_peer *)d->cfg->peers->pdata[i])->ifaces)
			return true;
	return d->cfg->peers->len && config_mentions(d->cfg, ifname);
}

/* A digest of the peers and AllowedIPs (FNV-1a). */
static guint64 peers_sum(const struct wg_peer *peers, size_t n)
{
	guint64 h = 14695981039346656037ull;

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = peers[i].key;
		size_t len = sizeof(peers[i].key);

		for (size_t a = 0; a <= peers[i].n_allowed; a++) {
			for (size_t b = 0; b < len; b++)
				h = (h ^ p[b]) * 1099511628211ull;
			if (a < peers[i].n_allowed) {
				p = (const uint8_t *)&peers[i].allowed[a];
				len = sizeof(peers[i].allowed[a]);
			}
		}
	}
	return h;
}

/* Is ifname one for the poll to look at now (tree: it is shaped per peer)? */
static bool poll_wanted(struct daemon *d, const char *ifname, bool tree)
{
	return !holds_check(d, ifname) && !g_hash_table_contains(d->pending, ifname) &&
	       (tree || config_follows_peers(d->cfg, ifname));
}

/* Ask for ifname's peers (poll_dumped carries on). */
static void poll_one(struct daemon *d, const char *ifname, bool tree)
{
	if (poll_wanted(d, ifname, tree))
		wg_dumper_ask(d->peer_dumper, ifname, (int)if_nametoindex(ifname));
}

/*
 * ifname's peers, dumped: the rate channel's index; its lazy leaves after
 * its peers' traffic, whatever enforce says; and a look at it again only if
 * its peers changed since the last poll (or it is new).
 */
static void poll_dumped(void *arg, const char *ifname, int ifindex, int64_t at, int r,
			struct wg_peer *peers, size_t n)
{
	struct daemon *d = arg;
	struct shape_state copy = { 0 };
	const struct shape_state *st;
	bool tree, follows;
	guint64 sum = 0, *old;

	if (r == 0 && ifindex > 0)
		rate_server_peers(d->rates, ifindex, peers, n, at);
	/* what may have changed while it was dumped; as kept, else a copy */
	st = state_peek(d->opts->statedir, ifname);
	if (!st && state_load(d->opts->statedir, ifname, &copy) == 0)
		st = &copy;
	tree = st && (st->tree || st->in_tree);
	follows = config_follows_peers(d->cfg, ifname);
	if (!poll_wanted(d, ifname, tree))
		goto out;
	if (r == 0) {
		sum = peers_sum(peers, n);
		/* the last use of st: leaves_follow may change the state it points into */
		if (tree)
			leaves_follow(d, ifname, st, peers, n);
	}
	if (!follows)
		goto out;
	old = g_hash_table_lookup(d->peer_sums, ifname);
	if (old && *old == sum)
		goto out;
	g_hash_table_replace(d->peer_sums, g_strdup(ifname), g_memdup2(&sum, sizeof(sum)));
	daemon_schedule(d, ifname, 0);
out:
	shape_state_clear(&copy);
	wg_peers_free(peers, n);
}

static gboolean on_peer_poll(gpointer data)
{
	struct daemon *d = data;
	g_auto(GStrv) names = NULL;
	GHashTableIter it;
	gpointer name;
	bool any = d->cfg->peers->len > 0;

	state_list(d->opts->statedir, &names);
	for (char **n = names; n && *n; n++) {
		const struct shape_state *kept = state_peek(d->opts->statedir, *n);
		struct shape_state st = { 0 };
		bool tree = kept ? (kept->tree || kept->in_tree) :
				  state_load(d->opts->statedir, *n, &st) == 0 && (st.tree || st.in_tree);

		if (tree) {
			any = true;
			poll_one(d, *n, true);
		}
		shape_state_clear(&st);
	}
	if (!any) {
		/* nothing shaped per peer, no [peer] section: sleep until that changes */
		d->peer_poll = 0;
		return G_SOURCE_REMOVE;
	}
	/* and where a configured peer may have appeared since */
	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, NULL, &name))
		if (peers_may_want(d, name))
			poll_one(d, name, false);
	return G_SOURCE_CONTINUE;
}

void peer_poll_init(struct daemon *d)
{
	d->peer_sums = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	d->leaf_seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					     (GDestroyNotify)g_hash_table_unref);
	d->peer_dumper = wg_dumper_new(poll_dumped, d);
}

/* Poll while per-peer shaping may be wanted (on_peer_poll stops itself when not). */
void peer_poll_arm(struct daemon *d)
{
	if (!d->peer_poll)
		d->peer_poll = g_timeout_add_seconds(PEER_POLL_SECONDS, on_peer_poll, d);
}

/* At the start and on reload: poll if a [peer] section or per-peer shaping is there. */
void peer_poll_maybe(struct daemon *d)
{
	g_auto(GStrv) names = NULL;
	bool tree = false;

	if (d->cfg->peers->len) {
		peer_poll_arm(d);
		return;
	}
	state_list(d->opts->statedir, &names);
	for (char **n = names; n && *n && !tree; n++) {
		struct shape_state st = { 0 };

		tree = state_load(d->opts->statedir, *n, &st) == 0 && (st.tree || st.in_tree);
		shape_state_clear(&st);
	}
	if (tree)
		peer_poll_arm(d);
}

void peer_poll_exit(struct daemon *d)
{
	if (d->peer_poll)
		g_source_remove(d->peer_poll);
	d->peer_poll = 0;
	g_clear_pointer(&d->peer_dumper, wg_dumper_free);
	g_clear_pointer(&d->peer_sums, g_hash_table_unref);
	g_clear_pointer(&d->leaf_seen, g_hash_table_unref);
}
