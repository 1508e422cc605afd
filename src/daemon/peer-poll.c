// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's one poll: WireGuard says nothing when peers or their
 * AllowedIPs change (wg set, syncconf). Every few seconds, one dump of each
 * interface's peers, and only when they changed since the last look is the
 * interface reconciled (which reads its whole tree back: at 1,000 peers
 * that is what costs). Only while an interface is shaped per peer or a
 * [peer] section exists, and not where enforce = no (a reshape would put
 * back what was changed by hand).
 */
#include <glib.h>

#include "daemon/internal.h"
#include "shape/peers.h"
#include "shape/state.h"

#define PEER_POLL_SECONDS 5

/* Does a [peer] section call for a look at ifname (it names it, or names no interface)? */
static bool peers_may_want(const struct daemon *d, const char *ifname)
{
	for (guint i = 0; i < d->cfg->peers->len; i++)
		if (!((const struct conf_peer *)d->cfg->peers->pdata[i])->ifaces)
			return true;
	return d->cfg->peers->len && config_mentions(d->cfg, ifname);
}

/* A digest of ifname's peers and AllowedIPs (FNV-1a); 0 when it has none to read. */
static guint64 peers_sum(struct daemon *d, const char *ifname)
{
	struct wg_peer *peers = NULL;
	guint64 h = 14695981039346656037ull;
	size_t n = 0;

	if (netlink_wg_peers(d->nl, ifname, &peers, &n) < 0)
		return 0;
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
	wg_peers_free(peers, n);
	return h;
}

/* Look at ifname again only if its peers changed since the last poll (or it is new). */
static void poll_one(struct daemon *d, const char *ifname)
{
	guint64 sum, *old;

	if (holds_check(d, ifname) || g_hash_table_contains(d->pending, ifname) ||
	    !config_follows_peers(d->cfg, ifname))
		return;
	sum = peers_sum(d, ifname);
	old = g_hash_table_lookup(d->peer_sums, ifname);
	if (old && *old == sum)
		return;
	g_hash_table_replace(d->peer_sums, g_strdup(ifname), g_memdup2(&sum, sizeof(sum)));
	daemon_schedule(d, ifname, 0);
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
		struct shape_state st = { 0 };

		if (state_load(d->opts->statedir, *n, &st) == 0 && st.tree) {
			any = true;
			poll_one(d, *n);
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
			poll_one(d, name);
	return G_SOURCE_CONTINUE;
}

void peer_poll_init(struct daemon *d)
{
	d->peer_sums = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
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

		tree = state_load(d->opts->statedir, *n, &st) == 0 && st.tree;
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
	g_clear_pointer(&d->peer_sums, g_hash_table_unref);
}
