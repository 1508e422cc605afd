// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What holds only once every file is read (a section may be given in two
 * files): each section's words parse as one `set` line, a peer has its key
 * and a rate, ranges hold. A section that cannot hold is dropped, with a
 * warning naming it and where it began.
 */
#include <string.h>

#include "config/internal.h"
#include "shape/peers.h"
#include "shape/words.h"
#include "util/text.h"

/*
 * Remove the elements marked in drop, the others keeping their order: one
 * pass, where removing them one by one would be quadratic.
 */
static void remove_marked(GPtrArray *arr, const bool *drop)
{
	g_autoptr(GPtrArray) gone = g_ptr_array_new();
	guint kept = 0;

	for (guint i = 0; i < arr->len; i++) {
		if (drop[i])
			g_ptr_array_add(gone, arr->pdata[i]);
		else
			arr->pdata[kept++] = arr->pdata[i];
	}
	if (gone->len) {
		memcpy(arr->pdata + kept, gone->pdata, gone->len * sizeof(gpointer));
		g_ptr_array_remove_range(arr, kept, gone->len); /* frees them */
	}
}

/* client-download-min above -max: neither bound can hold, both go (a warning). */
static void rate_bounds_check(struct config *cfg, const char *where, const char *what,
			      const char *name, struct conf_rate *r)
{
	if (!r->min || !r->max || r->min <= r->max)
		return;
	conf_warn(cfg, where, 0, "[%s %s]: client-download-min is above client-download-max; "
		  "both skipped", what, TEXT_QUOTE(name));
	r->min = r->max = 0;
}

/*
 * One direction's range around its base rate: the defaults filled in (a
 * tenth of the base, the base); false with a warning when it cannot hold.
 */
/* The defaults of a range around base filled in; does base lie within it? */
static bool range_fill(uint64_t base, uint64_t *min, uint64_t *max)
{
	if (!*min)
		*min = MIN(base / 10, *max ? *max : base);
	if (!*max)
		*max = MAX(base, *min);
	return *min <= base && base <= *max;
}

static bool adapt_range(struct config *cfg, const struct conf_section *c, const char *dir,
			uint64_t base, uint64_t *min, uint64_t *max)
{
	if (!base) {
		if (*min || *max)
			conf_warn(cfg, c->where, 0, "[%s %s]: %s-min/-max without %s = RATE (the base "
			     "rate); adapt skipped", c->network ? "network" : "interface",
			     TEXT_QUOTE(c->name), dir, dir);
		return !*min && !*max;
	}
	if (range_fill(base, min, max))
		return true;
	conf_warn(cfg, c->where, 0, "[%s %s]: %s is not within %s-min .. %s-max; adapt skipped",
	     c->network ? "network" : "interface", TEXT_QUOTE(c->name), dir, dir, dir);
	return false;
}

/* After the words are parsed: adapt = yes needs a base rate and ranges that hold. */
static bool adapt_check(struct config *cfg, struct conf_section *c)
{
	struct conf_adapt *a = &c->adapt;
	uint64_t eg = c->req.egress == DIR_SET ? c->req.egress_rate : 0;
	uint64_t in = c->req.ingress == DIR_SET ? c->req.ingress_rate : 0;
	uint64_t dl = c->net.download;

	if (!adapt_range(cfg, c, "egress", eg, &a->egress_min, &a->egress_max) ||
	    !adapt_range(cfg, c, "ingress", in, &a->ingress_min, &a->ingress_max) ||
	    !adapt_range(cfg, c, "download", dl, &a->download_min, &a->download_max))
		return false;
	if (eg || in || dl)
		return true;
	conf_warn(cfg, c->where, 0, "[%s %s]: adapt = yes but no rate to adapt (egress, ingress or "
	     "download); adapt skipped", c->network ? "network" : "interface", TEXT_QUOTE(c->name));
	return false;
}

/* A [peer]'s adapt = yes: needs download = RATE, and a range that holds it. */
static void peer_adapt_check(struct config *cfg, struct conf_peer *p)
{
	if (!p->adapt)
		return;
	if (!p->download) {
		conf_warn(cfg, p->where, 0, "[peer %s]: adapt = yes but no download = RATE to "
			  "adapt; adapt skipped", TEXT_QUOTE(p->name));
		p->adapt = false;
		return;
	}
	if (range_fill(p->download, &p->adapt_min, &p->adapt_max))
		return;
	conf_warn(cfg, p->where, 0, "[peer %s]: download is not within adapt-min .. adapt-max; "
		  "adapt skipped", TEXT_QUOTE(p->name));
	p->adapt = false;
}

/* After all files: a peer needs its key and a rate; its options parse as one line. */
static void finish_peers(struct config *cfg)
{
	g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree bool *drop = g_new0(bool, cfg->peers->len + 1);

	for (guint i = 0; i < cfg->peers->len; i++) {
		struct conf_peer *p = cfg->peers->pdata[i];
		const char *missing = !p->has_key ? "no public-key = KEY" :
				      !p->download && !p->upload && p->rate.client_download < 0 ?
				      "no download = RATE, upload = RATE (nor client-download)" : NULL;

		rate_bounds_check(cfg, p->where, "peer", p->name, &p->rate);
		peer_adapt_check(cfg, p);
		if (!missing && !g_hash_table_add(keys, g_base64_encode(p->key, sizeof(p->key))))
			missing = "the same public-key as another [peer]";
		if (!missing)
			continue;
		conf_warn(cfg, p->where, 0, "[peer %s]: %s; section skipped", TEXT_QUOTE(p->name),
		     missing);
		drop[i] = true;
	}
	remove_marked(cfg->peers, drop);
	/* a key is one [peer]'s now: a rate request finds its peer without a walk */
	cfg->peer_keys = g_hash_table_new(wg_key_hash, wg_key_equal);
	for (guint i = 0; i < cfg->peers->len; i++)
		g_hash_table_insert(cfg->peer_keys, ((struct conf_peer *)cfg->peers->pdata[i])->key,
				    cfg->peers->pdata[i]);
}

/*
 * An [interface] section with download = is a client's; with client-download =
 * yes (a server's key) too, it is both, and download = goes.
 */
static void client_section(struct config *cfg, struct conf_section *c)
{
	if (c->rate.client_download <= 0)
		return;
	conf_warn(cfg, c->where, 0, "[interface %s]: download = (a client's) and "
		  "client-download = yes (a server's) in one section; download skipped",
		  TEXT_QUOTE(c->name));
	c->net.download = 0;
}

/*
 * download-min/-max in an [interface] without download = : the old spelling
 * of a server's client-download-min/-max (they are adapt's range only beside
 * download =, as egress-min is beside egress), read as those, with a warning.
 */
static void old_server_bounds(struct config *cfg, struct conf_section *c)
{
	struct conf_adapt *a = &c->adapt;

	if (c->network || c->net.download || (!a->download_min && !a->download_max))
		return;
	if (c->rate.min || c->rate.max) {
		conf_warn(cfg, c->where, 0, "[interface %s]: download-min/-max beside "
			  "client-download-min/-max (their new spelling); download-min/-max "
			  "skipped", TEXT_QUOTE(c->name));
	} else {
		conf_warn(cfg, c->where, 0, "[interface %s]: a server's bounds for its clients "
			  "are now spelled client-download-min/-max; download-min/-max read as "
			  "those (without download = they are no range to adapt in)",
			  TEXT_QUOTE(c->name));
		c->rate.min = a->download_min;
		c->rate.max = a->download_max;
	}
	a->download_min = a->download_max = 0;
}

/* After all files: each section's words, parsed as one `set` line. */
static void finish_array(struct config *cfg, GPtrArray *arr)
{
	g_autofree bool *drop = g_new0(bool, arr->len + 1);

	for (guint i = 0; i < arr->len; i++) {
		struct conf_section *c = arr->pdata[i];
		char err[256];

		if (!c->network && c->net.download)
			client_section(cfg, c);
		old_server_bounds(cfg, c);
		rate_bounds_check(cfg, c->where, c->network ? "network" : "interface", c->name,
				  &c->rate);
		if (shape_words_parse((int)c->words->len, (char **)c->words->pdata, &c->req, err,
				   sizeof(err)) < 0) {
			conf_warn(cfg, c->where, 0, "[%s %s]: %s; section skipped",
			     c->network ? "network" : "interface", TEXT_QUOTE(c->name), err);
			drop[i] = true;
		} else if (c->network && !c->net.tunnels) {
			conf_warn(cfg, c->where, 0, "[network %s]: no interface = TUNNEL; "
			     "section skipped", TEXT_QUOTE(c->name));
			drop[i] = true;
		} else if (c->adapt.on && !adapt_check(cfg, c)) {
			c->adapt.on = false; /* shaped as its rates say, not adapted */
		}
	}
	remove_marked(arr, drop);
}

/* After all files: every section checked, and dropped when it cannot hold. */
void config_finish(struct config *cfg)
{
	g_clear_pointer(&cfg->index, g_hash_table_unref);
	finish_array(cfg, cfg->ifaces);
	finish_array(cfg, cfg->networks);
	finish_peers(cfg);
}
