// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon: one GLib main loop that wires its inputs, each in a file of
 * its own (internal.h): the kernel's link and tc notifications
 * (kernel-events.c), NetworkManager (networks.c), the rate channel's
 * requests, its leases' ends and this host's renewals (rate-channel.c), a
 * tune's end (holds.c), WireGuard's peers, the one poll (peer-poll.c), the
 * metrics-file's timer (metrics-file.c), signals (signals.c), and the
 * adapters' own timers and sockets (adapters.c). Changes are coalesced per
 * interface and reconciled when the loop is idle; a client's request is
 * carried out at once.
 */
#include <errno.h>
#include <string.h>
#include <glib.h>

#include "channel/lease.h"
#include "daemon/daemon.h"
#include "daemon/internal.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "util/log.h"
#include "util/notify.h"

struct reconciler daemon_reconciler(struct daemon *d)
{
	struct reconciler rc = {
		.nl = d->nl,
		.statedir = d->opts->statedir,
		.cfg = d->cfg,
		.only = d->only,
	};

	adapters_reconciler(d, &rc);
	peer_adapt_reconciler(d, &rc);
	return rc;
}

struct reconciler daemon_reconciler_now(struct daemon *d, struct nm_nets **nets)
{
	struct reconciler rc = daemon_reconciler(d);

	networks_now(d, nets);
	if (d->nm)
		rc.nets = &(*nets)->view;
	return rc;
}

bool daemon_enforced(struct daemon *d, const char *ifname)
{
	const struct conf_section *c = config_match(d->cfg, ifname);

	if (!c)
		return config_mentions(d->cfg, ifname) && d->cfg->enforce;
	return c->enforce < 0 ? d->cfg->enforce : c->enforce;
}

static gboolean on_idle(gpointer data)
{
	struct daemon *d = data;
	struct nm_nets *nets = NULL;
	struct reconciler rc = daemon_reconciler_now(d, &nets);
	GHashTableIter it;
	gpointer key, val;

	d->idle = 0;
	if (d->resync) {
		d->resync = false;
		g_hash_table_remove_all(d->pending);
		log_debug("reconciling every interface");
		holds_watch_all(d);
		reconcile_all(&rc);
		adapters_sync(d, &rc);
		peer_adapt_sync(d);
		nm_nets_free(nets);
		return G_SOURCE_REMOVE;
	}
	g_hash_table_iter_init(&it, d->pending);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		gint64 since = *(gint64 *)val;

		if (holds_check(d, key)) {
			g_hash_table_iter_remove(&it);
			continue;
		}
		if (reconcile_iface(&rc, key) == 0 && since && config_mentions(d->cfg, key))
			log_info("%s: shaped %.1f ms after it appeared", (const char *)key,
				 (double)(g_get_monotonic_time() - since) / 1000.0);
		g_hash_table_iter_remove(&it);
	}
	adapters_sync(d, &rc);
	peer_adapt_sync(d);
	nm_nets_free(nets);
	return G_SOURCE_REMOVE;
}

void daemon_schedule(struct daemon *d, const char *ifname, gint64 since)
{
	gint64 *t = g_new(gint64, 1);

	*t = since;
	if (ifname) {
		gint64 *old = g_hash_table_lookup(d->pending, ifname);

		if (old && *old && !since)
			*t = *old; /* keep the appearance time of the first event */
		g_hash_table_replace(d->pending, g_strdup(ifname), t);
	} else {
		g_free(t);
	}
	if (!d->idle)
		d->idle = g_idle_add(on_idle, d);
}

/* Every interface, once the loop is idle. */
void daemon_resync(struct daemon *d)
{
	d->resync = true;
	daemon_schedule(d, NULL, 0);
}

bool daemon_reload(struct daemon *d)
{
	struct config *cfg = config_reload_logged(d->opts->config_path, d->cfg);
	bool port_changed;

	if (!cfg)
		return false;
	port_changed = cfg->rate_port != d->cfg->rate_port;
	config_free(d->cfg);
	d->cfg = cfg;
	rate_channel_reload(d, port_changed);
	networks_follow(d);
	peer_poll_maybe(d);
	metrics_file_start(d);
	return true;
}

/*
 * States and leases a rate request changed reach their files this long
 * after the first change (state_borrow_changed, lease_put): one write each for
 * all the requests in between. A daemon killed in that time loses those
 * requests from the files: started again, it shapes from the leases it
 * finds, and the clients' next requests (an adapting one asks several times
 * a second, any other within a minute) bring the rest back.
 */
#define FLUSH_MS 1000

/* Interfaces whose files another process changed meanwhile: looked at again. */
static void look_again(GPtrArray *lost, void *arg)
{
	struct daemon *d = arg;

	for (guint i = 0; lost && i < lost->len; i++) {
		log_debug("%s: its state changed behind the daemon's back: looking again",
			  (const char *)lost->pdata[i]);
		daemon_schedule(d, lost->pdata[i], 0);
	}
}

static gboolean on_flush(gpointer data)
{
	struct daemon *d = data;
	g_autoptr(GPtrArray) lost = g_ptr_array_new_with_free_func(g_free);

	d->flush_timer = 0;
	/* the state's text (143 KB at 1,000 peers) is made in a thread: requests go on */
	state_flush_async(look_again, d);
	lease_flush(lease_now(), lost);
	look_again(lost, d);
	return G_SOURCE_REMOVE;
}

static void flush_kick(void *arg)
{
	struct daemon *d = arg;

	if (!d->flush_timer)
		d->flush_timer = g_timeout_add(FLUSH_MS, on_flush, d);
}

static void flush_now(struct daemon *d)
{
	if (d->flush_timer) {
		g_source_remove(d->flush_timer);
		d->flush_timer = 0;
	}
	while (state_flush_busy())
		g_main_context_iteration(NULL, TRUE);
	state_flush(NULL);
	lease_flush(lease_now(), NULL);
}

static void clear_configured(struct daemon *d)
{
	char **names = NULL;

	state_list(d->opts->statedir, &names);
	for (char **n = names; *n; n++) {
		struct shape_state st = { 0 };
		bool ours;

		if (d->only && strcmp(d->only, *n) != 0)
			continue;
		if (state_load(d->opts->statedir, *n, &st) < 0)
			continue;
		ours = !strncmp(st.source, SOURCE_CONFIG, strlen(SOURCE_CONFIG)) ||
		       !strncmp(st.source, SOURCE_NETWORK, strlen(SOURCE_NETWORK));
		shape_state_clear(&st);
		if (ours)
			shape_clear(d->nl, d->opts->statedir, *n);
	}
	g_strfreev(names);
}


/* Subscribed to the kernel's notifications before the first pass: nothing in between is missed. */
static int start(struct daemon *d)
{
	struct reconciler rc;
	int r;

	r = netlink_open(&d->nl);
	if (r == 0)
		r = kernel_events_open(d);
	if (r < 0) {
		log_err("netlink: %s", strerror(-r));
		return r;
	}
	d->pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	holds_init(d);
	peer_poll_init(d);
	adapters_init(d);
	peer_adapt_init(d);
	d->loop = g_main_loop_new(NULL, FALSE);

	rc = daemon_reconciler(d);
	holds_watch_all(d);
	/* With profiles, the first pass waits for NetworkManager's answer (networks.c). */
	if (!networks_follow(d)) {
		reconcile_all(&rc);
		adapters_sync(d, &rc);
		peer_adapt_sync(d);
	}
	kernel_events_watch(d);
	peer_poll_maybe(d);
	rate_channel_start(d);
	metrics_file_start(d);
	signals_watch(d);
	return 0;
}

static void stop(struct daemon *d)
{
	adapters_stop_all(d);
	peer_adapt_stop_all(d);
	rate_channel_stop(d);
	flush_now(d);
	if (d->cfg->clear_on_exit)
		clear_configured(d);
	metrics_file_stop(d, NULL);
}

/* What start() made, in reverse; also after it failed half way. */
static void free_all(struct daemon *d)
{
	if (d->loop)
		g_main_loop_unref(d->loop);
	adapters_exit(d);
	peer_adapt_exit(d);
	peer_poll_exit(d);
	holds_exit(d);
	if (d->pending)
		g_hash_table_unref(d->pending);
	networks_close(d);
	kernel_events_close(d);
	netlink_close(d->nl);
	config_free(d->cfg);
}

int daemon_run(const struct daemon_opts *opts)
{
	struct daemon d = { .opts = opts, .only = opts->only };
	int r;

	d.cfg = config_load_logged(opts->config_path);
	if (!d.cfg)
		return -EINVAL;
	state_cache_enable();
	state_write_behind(flush_kick, &d);
	lease_write_behind(flush_kick, &d);
	r = start(&d);
	if (r == 0) {
		notify_systemd("READY=1");
		log_info("running%s%s", d.only ? " for " : "", d.only ? d.only : "");
		g_main_loop_run(d.loop);
		notify_systemd("STOPPING=1");
		stop(&d);
		log_info("stopped");
	}
	flush_now(&d); /* also when start failed half way */
	state_write_behind(NULL, NULL);
	lease_write_behind(NULL, NULL);
	free_all(&d);
	return r;
}
