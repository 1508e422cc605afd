// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

#include "channel/client.h"
#include "channel/lease.h"
#include "util/log.h"
#include "apply/reconcile.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "shape/units.h"
#include "util/text.h"

bool reconcile_skips(const struct link_info *link)
{
	return !strcmp(link->kind, "ifb") && !strncmp(link->name, "ifb4", 4);
}

/*
 * Shape ifname as section c (or none) and the [peer] sections for it say;
 * they are all that is wanted.
 */
static int apply_section(const struct reconciler *rc, const char *ifname,
			 const struct conf_section *c, const char *source, GArray *peers)
{
	struct shape_request req = c ? c->req : (struct shape_request){ 0 };
	struct shape_state st = { 0 };
	struct adapted_rates ad = { 0 };
	bool had_peers, flow_given;

	had_peers = state_load(rc->statedir, ifname, &st) == 0 && st.peers && st.peers->len;
	shape_state_clear(&st);
	if (req.egress == DIR_KEEP && req.ingress == DIR_KEEP && !peers->len && !had_peers)
		return 0; /* a section with neither direction: nothing to do */
	if (rc->adapted && c && c->adapt.on)
		rc->adapted(rc->ud, ifname, c, &ad);
	if (ad.egress && req.egress == DIR_SET)
		req.egress_rate = ad.egress;
	if (ad.ingress && req.ingress == DIR_SET)
		req.ingress_rate = ad.ingress;
	req.peers_action = PEERS_ALL;
	req.peers = (const struct peer_want *)(void *)peers->data;
	req.n_peers = peers->len;
	/* What the section leaves out is off, or the kernel's default. */
	if (req.egress == DIR_KEEP)
		req.egress = DIR_OFF;
	if (req.ingress == DIR_KEEP)
		req.ingress = DIR_OFF;
	if (!req.leaf)
		req.leaf = PEER_LEAF_LAZY;
	flow_given = req.opts.has & CAKE_HAS_FLOW_MODE;
	cake_opts_fill_defaults(&req.opts);
	/* per peer, the default class's isolation is dual-dsthost unless the section says */
	if (peers->len && !flow_given)
		req.opts.has &= ~CAKE_HAS_FLOW_MODE;
	req.source = source;
	return shape_set(rc->nl, rc->statedir, ifname, &req);
}

/* Clear ifname if its shaping came from prefix (the configuration, a profile). */
static int clear_if_from(const struct reconciler *rc, const char *ifname, const char *prefix,
			 const char *why)
{
	struct shape_state st = { 0 };
	bool ours;

	if (state_load(rc->statedir, ifname, &st) < 0)
		return 0;
	ours = !strncmp(st.source, prefix, strlen(prefix));
	shape_state_clear(&st);
	if (!ours)
		return 0; /* set by hand, or by the other kind of section: not ours to undo */
	log_info("%s: %s: removing its shaping", ifname, why);
	return shape_clear(rc->nl, rc->statedir, ifname);
}

/*
 * A tunnel whose profiles (or its [interface] section) say download = RATE: ask its server (the rate
 * channel, src/channel/client.h) for the chosen profile's rate, or for the
 * server's own on a network without one. Asked again only when the wish
 * changed or its lease is due: the hook runs on every event.
 */
static void client_follow(const struct reconciler *rc, const char *ifname, GPtrArray *profs,
			  const struct conf_section *c)
{
	const char *server = c ? c->net.server : NULL;
	char addr[INET6_ADDRSTRLEN], why[192], source[256], said[256], rate[32];
	struct rate_record old, rec;
	uint64_t want = c ? c->net.download : 0;
	struct adapted_rates ad = { 0 };
	bool managed = false;
	int r;

	if (rc->adapted && c && c->adapt.on) {
		rc->adapted(rc->ud, ifname, c, &ad);
		/* the adapter asks for it (and renews it) itself, without waiting */
		if (ad.download)
			return;
	}

	for (guint i = 0; i < profs->len; i++) {
		const struct conf_section *p = profs->pdata[i];

		managed |= p->net.download != 0;
		if (!server)
			server = p->net.server;
	}
	if (!managed || !rc->cfg->rate_port)
		return;
	/* Asked already, and not due: nothing to send (nor to look up in the kernel). */
	if (rate_record_load(rc->statedir, ifname, &old) == 0 && old.asked == want &&
	    (!server || !strcmp(old.server, server)) && old.port == rc->cfg->rate_port &&
	    old.status != RATE_NONE && !rate_record_due(&old, lease_now()))
		return;
	if (rate_client_server(rc->nl, ifname, server, addr, why, sizeof(why)) < 0) {
		log_warn("%s: download rate for the server: %s", ifname, why);
		return;
	}
	if (c && c->network)
		snprintf(source, sizeof(source), SOURCE_NETWORK " '%s' (%s)", c->name, c->where);
	else if (c)
		snprintf(source, sizeof(source), SOURCE_CONFIG " %s", c->where);
	else
		snprintf(source, sizeof(source), "no profile for this network");
	r = rate_client_request(rc->statedir, ifname, addr, rc->cfg->rate_port, want, source,
				&rec);
	format_rate(rate, sizeof(rate), want);
	if (r < 0 && r != -ETIMEDOUT) {
		log_warn("%s: asking %s for the download rate: %s", ifname, addr, strerror(-r));
		return;
	}
	rate_record_describe(&rec, said, sizeof(said));
	if (r < 0 || rec.status == RATE_REFUSED || rec.status == RATE_FAILED ||
	    rec.status == RATE_UNSUPPORTED)
		log_warn("%s: asked %s for download %s: %s", ifname, addr,
			 want ? rate : "at the server's rate", said);
	else
		log_info("%s: asked %s for download %s: %s", ifname, addr,
			 want ? rate : "at the server's rate", said);
}

/* A tunnel named by [network] profiles: the active networks decide. */
static int reconcile_network(const struct reconciler *rc, const char *ifname, GPtrArray *profs)
{
	static const struct net_view none;
	const struct net_view *nets = rc->nets ? rc->nets : &none;
	const struct conf_section *c;
	char why[192], source[256];

	if (nets->unknown) {
		/* Keep what is there until NetworkManager says where we are. */
		log_debug("%s: networks unknown or changing: profiles wait", ifname);
		return 0;
	}
	c = config_network_choose(profs, nets, ifname, why, sizeof(why));
	client_follow(rc, ifname, profs, c);
	if (!c)
		return clear_if_from(rc, ifname, SOURCE_NETWORK, why);
	snprintf(source, sizeof(source), SOURCE_NETWORK " '%s' (%s), %s", c->name, c->where, why);
	return apply_section(rc, ifname, c, source, &(GArray){ 0 });
}

/* Per-peer shaping set by hand: follow WireGuard's peers and their AllowedIPs. */
static int follow_peers(const struct reconciler *rc, const char *ifname)
{
	struct shape_state st = { 0 };
	bool tree;

	tree = state_load(rc->statedir, ifname, &st) == 0 && (st.tree || st.in_tree);
	shape_state_clear(&st);
	if (!tree)
		return 0;
	return shape_set(rc->nl, rc->statedir, ifname, &(struct shape_request){ 0 });
}

/* The [peer] sections for ifname (one WireGuard dump when a peer names no interface). */
static void peers_for(const struct reconciler *rc, const char *ifname, GArray *out)
{
	struct wg_peer *peers = NULL;
	g_autofree uint8_t *keys = NULL;
	size_t n = 0;
	bool any_anywhere = false;

	for (guint i = 0; i < rc->cfg->peers->len; i++)
		any_anywhere |= !((struct conf_peer *)rc->cfg->peers->pdata[i])->ifaces;
	if (any_anywhere && netlink_wg_peers(rc->nl, ifname, &peers, &n) < 0)
		n = 0; /* not WireGuard, or gone */
	keys = g_malloc0(n * WG_KEY_LEN + 1);
	for (size_t i = 0; i < n; i++)
		memcpy(keys + i * WG_KEY_LEN, peers[i].key, WG_KEY_LEN);
	wg_peers_free(peers, n);
	config_peers_for(rc->cfg, ifname, keys, n, out);
}

/*
 * The clients' leases on ifname (src/channel/lease.h) over the configured
 * rates: a live lease that today's policy still allows sets its peer's rate,
 * within today's bounds.
 */
static void leases_merge(const struct reconciler *rc, const char *ifname, GArray *peers)
{
	g_autoptr(GArray) leases = g_array_new(false, true, sizeof(struct rate_lease));
	/* each key's first peer (index + 1); keys copied, since peers may move as it grows */
	g_autoptr(GHashTable) index = NULL;
	g_autofree uint8_t *keys = NULL;
	int64_t now = lease_now();

	if (lease_load(rc->statedir, ifname, leases) < 0)
		return;
	index = g_hash_table_new(wg_key_hash, wg_key_equal);
	keys = g_malloc0(((size_t)peers->len + leases->len + 1) * WG_KEY_LEN);
	for (guint i = peers->len; i-- > 0;) {
		memcpy(keys + (size_t)i * WG_KEY_LEN, g_array_index(peers, struct peer_want, i).key,
		       WG_KEY_LEN);
		g_hash_table_insert(index, keys + (size_t)i * WG_KEY_LEN, GUINT_TO_POINTER(i + 1));
	}
	for (guint i = 0; i < leases->len; i++) {
		const struct rate_lease *l = &g_array_index(leases, struct rate_lease, i);
		struct rate_policy pol;
		struct peer_want *w = NULL;
		enum rate_status st;
		const char *name;
		uint64_t rate;
		guint j;

		if (!rate_lease_live(l, now))
			continue;
		config_rate_policy(rc->cfg, ifname, l->key, &pol);
		st = rate_policy_apply(&pol, l->rate, &rate);
		if ((st != RATE_APPLIED && st != RATE_CLAMPED) || !rate)
			continue;
		j = GPOINTER_TO_UINT(g_hash_table_lookup(index, l->key));
		if (j)
			w = &g_array_index(peers, struct peer_want, j - 1);
		if (!w) {
			g_array_set_size(peers, peers->len + 1);
			w = &g_array_index(peers, struct peer_want, peers->len - 1);
			memcpy(w->key, l->key, WG_KEY_LEN);
			memcpy(keys + (size_t)(peers->len - 1) * WG_KEY_LEN, l->key, WG_KEY_LEN);
			g_hash_table_insert(index, keys + (size_t)(peers->len - 1) * WG_KEY_LEN,
					    GUINT_TO_POINTER(peers->len));
			name = config_peer_name(rc->cfg, ifname, l->key);
			text_copy(w->name, sizeof(w->name), name);
		}
		w->rate = rate;
		g_strlcpy(w->source, SOURCE_LEASE, sizeof(w->source));
	}
}

/* The server's own adaptation over the configured rates (a client's lease stays first). */
static void adapted_merge(const struct reconciler *rc, const char *ifname, GArray *peers)
{
	for (guint i = 0; rc->peer_adapted && i < peers->len; i++) {
		struct peer_want *w = &g_array_index(peers, struct peer_want, i);
		uint64_t rate, up;

		if (!strcmp(w->source, SOURCE_LEASE))
			continue;
		rate = rc->peer_adapted(rc->peer_ud, ifname, w->key, false);
		up = w->upload ? rc->peer_adapted(rc->peer_ud, ifname, w->key, true) : 0;
		if (!rate && !up)
			continue;
		w->rate = rate ? rate : w->rate;
		w->upload = up ? up : w->upload;
		g_strlcpy(w->source, PEER_SOURCE_ADAPT, sizeof(w->source));
	}
}

/* Where the shaping of ifname comes from: its section, else its first configured peer. */
static void config_source(const struct conf_section *c, const GArray *peers, char *buf,
			  size_t size)
{
	g_autofree char *mine = NULL;

	for (guint i = 0; !c && i < peers->len; i++) {
		const char *src = g_array_index(peers, struct peer_want, i).source;

		if (g_str_has_prefix(src, SOURCE_CONFIG " ")) {
			text_copy(buf, size, src);
			return;
		}
	}
	mine = g_strconcat(SOURCE_CONFIG " ", c ? c->where : "(client leases)", NULL);
	text_copy(buf, size, mine);
}

int reconcile_iface(const struct reconciler *rc, const char *ifname)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	g_autoptr(GArray) peers = g_array_new(false, true, sizeof(struct peer_want));
	const struct conf_section *c;
	char source[256];
	pid_t holder;

	if (rc->only && strcmp(rc->only, ifname) != 0)
		return 0;
	holder = state_holder(rc->statedir, ifname);
	if (holder > 0 && holder != getpid()) {
		log_info("%s: wgshape tune (pid %d) is measuring it: its shaping is left as it is",
			 ifname, (int)holder);
		return 0;
	}
	/* Profiles that name a tunnel decide for it alone. */
	config_networks_for(rc->cfg, ifname, profs);
	if (profs->len)
		return reconcile_network(rc, ifname, profs);
	c = config_match(rc->cfg, ifname);
	if (c && c->net.download) {
		/* a client's section: it asks its server for its download */
		g_ptr_array_add(profs, (gpointer)c);
		client_follow(rc, ifname, profs, c);
	}
	peers_for(rc, ifname, peers);
	leases_merge(rc, ifname, peers);
	adapted_merge(rc, ifname, peers);
	if (c || peers->len) {
		config_source(c, peers, source, sizeof(source));
		return apply_section(rc, ifname, c, source, peers);
	}
	return clear_if_from(rc, ifname, SOURCE_CONFIG, "no section matches it any more") ?:
	       follow_peers(rc, ifname);
}

const struct conf_section *reconcile_section(const struct reconciler *rc, const char *ifname)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	char why[192];

	config_networks_for(rc->cfg, ifname, profs);
	if (!profs->len)
		return config_match(rc->cfg, ifname);
	if (!rc->nets || rc->nets->unknown)
		return NULL;
	return config_network_choose(profs, rc->nets, ifname, why, sizeof(why));
}

int reconcile_all(const struct reconciler *rc)
{
	struct link_info *links = NULL;
	size_t n = 0;
	int failed = 0, r;

	r = netlink_link_list(rc->nl, &links, &n);
	if (r < 0) {
		log_err("list interfaces: %s", strerror(-r));
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		if (reconcile_skips(&links[i]))
			continue;
		if (reconcile_iface(rc, links[i].name) < 0)
			failed++;
	}
	free(links);
	return failed;
}
