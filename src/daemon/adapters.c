// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's adapters (daemon/adapter.h): one per tunnel whose section
 * says adapt = yes, made after each reconciling pass and gone with its
 * tunnel. Their inputs are their own (timers, sockets); what they change
 * reaches the loop as a reshape of their tunnel.
 */
#include <string.h>
#include <glib.h>

#include "channel/client.h"
#include "daemon/adapter.h"
#include "daemon/internal.h"
#include "shape/state.h"
#include "util/log.h"

/* The reconciler asks: the rates ifname's adapter set now, if it was made for c. */
static void adapted(void *ud, const char *ifname, const struct conf_section *c,
		    struct adapted_rates *out)
{
	struct daemon *d = ud;
	const struct adapter *a = g_hash_table_lookup(d->adapters, ifname);

	*out = (struct adapted_rates){ 0 };
	/* an adapter made for another section (a reload, another profile) has no say */
	if (a && adapter_matches(a, c, NULL, d->cfg->rate_port))
		adapter_rates(a, out);
}

/* An adapter's new egress or ingress rate: shape ifname again, now. */
static void reshape(void *ud, const char *ifname)
{
	struct daemon *d = ud;
	struct nm_nets *nets = NULL;
	struct reconciler rc = daemon_reconciler_now(d, &nets);

	reconcile_iface(&rc, ifname);
	nm_nets_free(nets);
}

/* Say once why ifname does not adapt (NULL: it does, or need not). */
static void adapt_say(struct daemon *d, const char *ifname, const char *why)
{
	const char *old = g_hash_table_lookup(d->adapt_why, ifname);

	if (!why) {
		g_hash_table_remove(d->adapt_why, ifname);
		return;
	}
	if (old && !strcmp(old, why))
		return;
	log_warn("%s: adapt = yes, but %s: shaped at its configured rates", ifname, why);
	g_hash_table_replace(d->adapt_why, g_strdup(ifname), g_strdup(why));
}

/* Should name have an adapter, and as which far end? false (said) when not. */
static bool wanted(struct daemon *d, const char *name, const struct conf_section *c,
		   char *server)
{
	char why[256];

	if (!c || !c->adapt.on || (d->only && strcmp(d->only, name) != 0) ||
	    state_holder(d->opts->statedir, name) > 0) {
		adapt_say(d, name, NULL);
		return false;
	}
	if (!d->cfg->rate_port ||
	    rate_client_server(d->nl, name, c->net.server, server, why, sizeof(why)) < 0) {
		adapt_say(d, name, d->cfg->rate_port ? why :
			  "rate-port = 0 (the far end answers probes there)");
		return false;
	}
	return true;
}

/* One tunnel: its adapter as its section says now (gone: added to gone). */
static void sync_one(struct daemon *d, const struct reconciler *rc, const char *name,
		     GPtrArray *gone)
{
	struct adapt_env env = { .nl = d->nl, .statedir = d->opts->statedir,
				 .port = d->cfg->rate_port, .reshape = reshape, .ud = d };
	const struct conf_section *c = reconcile_section(rc, name);
	struct adapter *a = g_hash_table_lookup(d->adapters, name);
	char server[INET6_ADDRSTRLEN], why[256];

	if (!wanted(d, name, c, server)) {
		if (a)
			g_ptr_array_add(gone, g_strdup(name));
		return;
	}
	if (a && adapter_matches(a, c, server, env.port))
		return;
	/*
	 * Not tried again until the next pass (a link or configuration
	 * event): a tunnel that is down cannot connect its sockets, and a
	 * pass of its own would only fail again, at once.
	 */
	if (a) {
		g_hash_table_remove(d->adapters, name);
		daemon_schedule(d, name, 0); /* the new section's rates, not the old adapter's */
	}
	a = adapter_new(&env, name, c, server, why, sizeof(why));
	if (!a) {
		adapt_say(d, name, why);
		return;
	}
	adapt_say(d, name, NULL);
	g_hash_table_replace(d->adapters, g_strdup(name), a);
	log_info("%s: adapting its rates, probing %s port %u", name, server, env.port);
}

void adapters_init(struct daemon *d)
{
	d->adapters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					    (GDestroyNotify)adapter_free);
	d->adapt_why = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

/* The reconciler's question to the adapters (daemon_reconciler() sets it). */
void adapters_reconciler(struct daemon *d, struct reconciler *rc)
{
	rc->adapted = adapted;
	rc->ud = d;
}

/*
 * After a reconciling pass: an adapter for every tunnel whose section says
 * adapt = yes (made again when the section changed), none for the others,
 * which get their configured rates back.
 */
void adapters_sync(struct daemon *d, const struct reconciler *rc)
{
	g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, &key, &val))
		sync_one(d, rc, val, gone);
	/* and those whose tunnel is gone */
	g_hash_table_iter_init(&it, d->adapters);
	while (g_hash_table_iter_next(&it, &key, NULL))
		if (!kernel_events_known(d, key))
			g_ptr_array_add(gone, g_strdup(key));
	for (guint i = 0; i < gone->len; i++) {
		log_info("%s: no longer adapted: back to its configured rates",
			 (const char *)gone->pdata[i]);
		g_hash_table_remove(d->adapters, gone->pdata[i]);
		daemon_schedule(d, gone->pdata[i], 0);
	}
}

/* ifname's link is gone: so is its adapter. */
void adapters_forget(struct daemon *d, const char *ifname)
{
	if (g_hash_table_remove(d->adapters, ifname))
		log_info("%s: gone: no longer adapted", ifname);
}

/* At the end: the configured rates back; the adapters' go with them. */
void adapters_stop_all(struct daemon *d)
{
	struct reconciler rc;

	if (!g_hash_table_size(d->adapters))
		return;
	g_hash_table_remove_all(d->adapters);
	rc = daemon_reconciler(d);
	reconcile_all(&rc);
}

void adapters_exit(struct daemon *d)
{
	g_clear_pointer(&d->adapters, g_hash_table_unref);
	g_clear_pointer(&d->adapt_why, g_hash_table_unref);
}
