// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The questions the rest of wgshape asks of a configuration: which section
 * shapes an interface, which peers and profiles apply, a peer's rate policy.
 */
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "shape/peers.h"
#include "shape/words.h"
#include "util/text.h"

/*
 * '*' and '?' over bytes. Not g_pattern_match_simple: that reads UTF-8 and
 * aborts on a pattern or a name that is not (an interface name may be any
 * bytes but '/', ':' and blanks).
 */
static bool glob_match(const char *p, const char *s)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*p == '*') {
			star = p++;
			resume = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else if (star) {
			/* let the last '*' take one byte more and try again */
			p = star + 1;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

const struct conf_section *config_match(const struct config *cfg, const char *ifname)
{
	const struct conf_section *glob = NULL;

	for (guint i = 0; i < cfg->ifaces->len; i++) {
		const struct conf_section *c = cfg->ifaces->pdata[i];

		if (!c->glob && !strcmp(c->name, ifname))
			return c;
		if (c->glob && !glob && glob_match(c->name, ifname))
			glob = c;
	}
	return glob;
}

/* Does p's interface = name ifname? (A [peer] without one: see its callers.) */
static bool peer_names(const struct conf_peer *p, const char *ifname)
{
	for (char **g = p->ifaces; g && *g; g++)
		if (glob_match(*g, ifname))
			return true;
	return false;
}

void config_peers_for(const struct config *cfg, const char *ifname, const uint8_t *present,
		      size_t n_present, GArray *out)
{
	/* the present keys by hash: a walk per [peer] is 10^8 steps at 10,000 peers */
	g_autoptr(GHashTable) here = g_hash_table_new(wg_key_hash, wg_key_equal);

	for (size_t i = 0; i < n_present; i++)
		g_hash_table_add(here, (gpointer)(present + i * WG_KEY_LEN));
	for (guint i = 0; i < cfg->peers->len; i++) {
		const struct conf_peer *p = cfg->peers->pdata[i];
		struct peer_want w = { .rate = p->download, .upload = p->upload };
		g_autofree char *options = NULL, *source = NULL;
		struct shape_request req;
		char err[256];

		if (!p->download && !p->upload)
			continue;
		if (p->ifaces ? !peer_names(p, ifname)
			      : !g_hash_table_contains(here, p->key))
			continue;
		source = g_strconcat("config ", p->where, NULL);
		memcpy(w.key, p->key, WG_KEY_LEN);
		text_copy(w.name, sizeof(w.name), p->name);
		text_copy(w.source, sizeof(w.source), source);
		g_ptr_array_add(p->words, NULL);
		options = g_strjoinv(" ", (char **)p->words->pdata);
		g_ptr_array_remove_index(p->words, p->words->len - 1);
		g_strlcpy(w.options, options, sizeof(w.options));
		/* each word parsed alone when read: together they parse too */
		if (shape_words_parse((int)p->words->len, (char **)p->words->pdata, &req, err,
				      sizeof(err)) == 0) {
			w.opts = req.opts;
			w.leaf = req.leaf;
		}
		g_array_append_val(out, w);
	}
}

/* key's [peer] section for ifname: its key, and no interface = or one that names ifname. */
static const struct conf_peer *peer_of(const struct config *cfg, const char *ifname,
				       const uint8_t *key)
{
	const struct conf_peer *p;

	if (cfg->peer_keys) {
		/* finished: each key is one [peer]'s */
		p = g_hash_table_lookup(cfg->peer_keys, key);
		return p && (!p->ifaces || peer_names(p, ifname)) ? p : NULL;
	}
	for (guint i = 0; i < cfg->peers->len; i++) {
		p = cfg->peers->pdata[i];
		if (!memcmp(p->key, key, WG_KEY_LEN) && (!p->ifaces || peer_names(p, ifname)))
			return p;
	}
	return NULL;
}

const struct conf_peer *config_peer(const struct config *cfg, const char *ifname,
				    const uint8_t *key)
{
	return peer_of(cfg, ifname, key);
}

const char *config_peer_name(const struct config *cfg, const char *ifname, const uint8_t *key)
{
	const struct conf_peer *p = peer_of(cfg, ifname, key);

	return p ? p->name : NULL;
}

void config_rate_policy(const struct config *cfg, const char *ifname, const uint8_t *key,
			struct rate_policy *out)
{
	const struct conf_section *c = config_match(cfg, ifname);
	const struct conf_peer *p = peer_of(cfg, ifname, key);
	struct conf_rate r = c ? c->rate : (struct conf_rate){ .client_download = -1 };

	*out = (struct rate_policy){ 0 };
	if (p) {
		if (p->rate.client_download >= 0)
			r.client_download = p->rate.client_download;
		r.min = p->rate.min ?: r.min;
		r.max = p->rate.max ?: r.max;
		out->fallback = p->download;
	}
	out->allowed = r.client_download == 1;
	out->min = r.min;
	out->max = r.max;
}

bool config_client_download(const struct config *cfg, const char *ifname)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	const struct conf_section *c;

	config_networks_for(cfg, ifname, profs);
	for (guint i = 0; i < profs->len; i++)
		if (((const struct conf_section *)profs->pdata[i])->net.download)
			return true;
	c = profs->len ? NULL : config_match(cfg, ifname);
	return c && c->net.download;
}

const char *config_client_server(const struct config *cfg, const char *ifname,
				 const char **where)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	const struct conf_section *c = config_match(cfg, ifname);

	if (!c || !c->net.server) {
		c = NULL;
		config_networks_for(cfg, ifname, profs);
		for (guint i = 0; i < profs->len && !c; i++)
			if (((const struct conf_section *)profs->pdata[i])->net.server)
				c = profs->pdata[i];
	}
	if (!c)
		return NULL;
	if (where)
		*where = c->where;
	return c->net.server;
}

void config_networks_for(const struct config *cfg, const char *ifname, GPtrArray *out)
{
	for (guint i = 0; i < cfg->networks->len; i++) {
		struct conf_section *c = cfg->networks->pdata[i];

		for (char **g = c->net.tunnels; g && *g; g++) {
			if (glob_match(*g, ifname)) {
				g_ptr_array_add(out, c);
				break;
			}
		}
	}
}

const struct conf_section *config_network_choose(const GPtrArray *profs,
						 const struct net_view *nets, const char *ifname,
						 char *why, size_t whylen)
{
	g_autofree struct net_match *m = g_new0(struct net_match, profs->len ? profs->len : 1);
	int idx;

	for (guint i = 0; i < profs->len; i++)
		m[i] = ((const struct conf_section *)profs->pdata[i])->net.match;
	idx = profile_choose(m, profs->len, nets->nets, nets->n, ifname, why, whylen);
	return idx < 0 ? NULL : profs->pdata[idx];
}

bool config_mentions(const struct config *cfg, const char *ifname)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();

	if (config_match(cfg, ifname))
		return true;
	for (guint i = 0; i < cfg->peers->len; i++) {
		const struct conf_peer *p = cfg->peers->pdata[i];

		for (char **g = p->ifaces; g && *g; g++)
			if (glob_match(*g, ifname))
				return true;
	}
	config_networks_for(cfg, ifname, profs);
	return profs->len > 0;
}

bool config_follows_peers(const struct config *cfg, const char *ifname)
{
	const struct conf_section *c = config_match(cfg, ifname);

	return c && c->enforce >= 0 ? c->enforce : cfg->enforce;
}
