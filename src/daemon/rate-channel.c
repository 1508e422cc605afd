// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's input from the rate channel (channel/server.h): a client's
 * request, carried out at once, and the end of its lease (a timer). As a
 * client itself, this host renews what it asked of its server (a timer).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib-unix.h>

#include "channel/client.h"
#include "channel/lease.h"
#include "channel/server.h"
#include "daemon/internal.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "util/log.h"

static gboolean on_lease_end(gpointer data);

/*
 * One look at every interface's leases: those that ended are said, dropped
 * and their peers shaped at their configured rates again (also those that
 * ended while no daemon ran); those of an interface no longer shaped are
 * removed; the timer is set for the next end (none: no timer).
 */
static void leases_sweep(struct daemon *d)
{
	g_auto(GStrv) names = NULL;
	g_autoptr(GPtrArray) orphans = g_ptr_array_new_with_free_func(g_free);
	int64_t now = lease_now(), next = 0;

	if (lease_drop_orphans(d->opts->statedir, orphans) == 0)
		for (guint i = 0; i < orphans->len; i++)
			log_info("%s: leases of an interface wgshape no longer shapes (no state "
				 "file): removed", (const char *)orphans->pdata[i]);
	state_list(d->opts->statedir, &names);
	for (char **n = names; n && *n; n++) {
		g_autoptr(GArray) leases = g_array_new(false, true, sizeof(struct rate_lease));
		bool ended = false;
		int64_t end;

		if (lease_load(d->opts->statedir, *n, leases) < 0)
			continue;
		for (guint i = 0; i < leases->len; i++) {
			const struct rate_lease *l = &g_array_index(leases, struct rate_lease, i);
			char key[45];

			if (rate_lease_live(l, now))
				continue;
			wg_key_to_base64(l->key, key);
			log_info("%s: peer %s's lease ended (not renewed): back to its configured "
				 "rate", *n, key);
			ended = true;
		}
		if (ended) {
			lease_save(d->opts->statedir, *n, (const struct rate_lease *)(void *)leases->data,
				   leases->len, now);
			daemon_schedule(d, *n, 0);
		}
		end = rate_lease_next_end((const struct rate_lease *)(void *)leases->data,
					  leases->len, now);
		if (end && (!next || end < next))
			next = end;
	}
	if (d->lease_timer)
		g_source_remove(d->lease_timer);
	d->lease_timer = next ? g_timeout_add_seconds((guint)(next - now), on_lease_end, d) : 0;
	d->lease_next = next;
}

static gboolean on_lease_end(gpointer data)
{
	struct daemon *d = data;

	d->lease_timer = 0; /* removed by returning G_SOURCE_REMOVE */
	leases_sweep(d);
	return G_SOURCE_REMOVE;
}

/*
 * A granted rate, on the peer's class alone where that is all reconciling
 * would change (shape_peer_rate): not while a tune holds ifname or profiles
 * decide for it. 1: reconcile instead.
 */
static int granted_in_place(struct daemon *d, const char *ifname, const uint8_t *key,
			    uint64_t rate)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	pid_t holder;

	if (!rate)
		return 1; /* back to the configured rate, or no class at all */
	holder = state_holder(d->opts->statedir, ifname);
	if (holder > 0 && holder != getpid())
		return 1;
	config_networks_for(d->cfg, ifname, profs);
	if (profs->len)
		return 1;
	return shape_peer_rate(d->nl, d->opts->statedir, ifname, key, rate, SOURCE_LEASE);
}

/* A client asks for its download rate: grant what the policy allows, and shape it now. */
static void on_rate_request(void *ud, const char *ifname, const uint8_t *key, uint64_t asked,
			    struct rate_msg *ans)
{
	struct daemon *d = ud;
	struct reconciler rc = daemon_reconciler(d);
	struct rate_policy pol;
	int64_t now = lease_now();
	uint64_t granted = 0, rate;
	int r;

	rc.only = NULL;
	config_rate_policy(d->cfg, ifname, key, &pol);
	ans->status = rate_policy_apply(&pol, asked, &granted);
	ans->fallback = pol.fallback;
	ans->rate = pol.fallback;
	if (ans->status == RATE_REFUSED)
		return;
	if (d->only && strcmp(d->only, ifname) != 0) {
		ans->status = RATE_REFUSED; /* this daemon does not look after ifname */
		return;
	}
	rate = ans->status == RATE_DEFAULT ? 0 : granted;
	/*
	 * The class first where one change is all it takes, the lease after;
	 * otherwise reconciling plans from the leases: the lease first. Both
	 * the state and the leases reach their files a moment later
	 * (daemon.c's flush). (now is in whole seconds: one more, so that a
	 * lease lasts at least its length.)
	 */
	r = granted_in_place(d, ifname, key, rate);
	if (r == 0) {
		r = lease_put(d->opts->statedir, ifname, key, rate, now + d->cfg->client_lease + 1,
			      now);
		if (r < 0)
			daemon_schedule(d, ifname, 0); /* back to what the leases say */
	} else if (r == 1) {
		r = lease_put(d->opts->statedir, ifname, key, rate, now + d->cfg->client_lease + 1,
			      now);
		if (r == 0)
			r = reconcile_iface(&rc, ifname);
		/* not shaped as granted: no lease to apply later behind the client's back */
		if (r < 0 && rate)
			lease_put(d->opts->statedir, ifname, key, 0, 0, now);
	}
	if (r < 0) {
		log_err("%s: a client's download rate: %s", ifname, strerror(-r));
		ans->status = RATE_FAILED;
		return;
	}
	if (ans->status != RATE_DEFAULT) {
		ans->rate = granted;
		ans->lease = d->cfg->client_lease;
	}
	/* a renewal ends no sooner than the lease the timer waits for: no need to look again */
	if (!d->lease_timer || ans->status == RATE_DEFAULT ||
	    now + d->cfg->client_lease + 1 < d->lease_next)
		leases_sweep(d);
}

static gboolean on_rate_fd(gint fd, GIOCondition cond, gpointer data)
{
	struct daemon *d = data;

	rate_server_read(d->rates, fd);
	return G_SOURCE_CONTINUE;
}

/* Listen on the rate port ([daemon] rate-port; 0: not at all). */
static void server_start(struct daemon *d)
{
	int fds[2], r;

	if (!d->cfg->rate_port)
		return;
	r = rate_server_open(d->nl, d->cfg->rate_port, on_rate_request, d, &d->rates);
	if (r < 0) {
		log_warn("rate channel: UDP port %u: %s; clients cannot set their download rate",
			 d->cfg->rate_port, strerror(-r));
		return;
	}
	rate_server_fds(d->rates, fds);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			d->rate_src[i] = g_unix_fd_add(fds[i], G_IO_IN, on_rate_fd, d);
	log_info("rate channel: answering on UDP port %u of WireGuard interfaces' addresses",
		 d->cfg->rate_port);
}

static void server_stop(struct daemon *d)
{
	for (int i = 0; i < 2; i++)
		if (d->rate_src[i])
			g_source_remove(d->rate_src[i]);
	d->rate_src[0] = d->rate_src[1] = 0;
	g_clear_pointer(&d->rates, rate_server_close);
}

/* As a client: what one interface asked of its server, renewed where due. */
static void renew_one(struct daemon *d, const char *name, int64_t now)
{
	struct rate_record old, rec;
	char said[256];
	int r;

	if (rate_record_load(d->opts->statedir, name, &old) < 0 || !rate_record_due(&old, now))
		return;
	if (strcmp(old.source, RATE_SOURCE_SET) != 0) {
		if (config_client_download(d->cfg, name)) {
			daemon_schedule(d, name, 0);
		} else {
			log_info("%s: nothing asks the server for a download rate any more: "
				 "its lease there lapses", name);
			rate_record_remove(d->opts->statedir, name);
		}
		return;
	}
	r = rate_client_request(d->opts->statedir, name, old.server, d->cfg->rate_port,
				old.asked, old.source, &rec);
	if (r < 0 && r != -ETIMEDOUT)
		return;
	rate_record_describe(&rec, said, sizeof(said));
	if (rec.status != old.status || rec.rate != old.rate)
		log_info("%s: renewing the download rate with %s: %s", name, rec.server, said);
}

/*
 * As a client: ask again for what was asked, where its lease is due (or it
 * got no answer). What `set client` asked is asked again as it was; what a
 * profile asked, reconciling the tunnel decides (client_follow in
 * reconcile.c), so that a profile changed or gone since is followed; a
 * request no profile and no `set` stands behind any more (a tune that was
 * killed, the profiles' download taken out) is forgotten, and its lease at
 * the server lapses.
 */
static gboolean on_renew(gpointer data)
{
	struct daemon *d = data;
	GHashTableIter it;
	gpointer name;
	int64_t now = lease_now();

	if (!d->cfg->rate_port)
		return G_SOURCE_CONTINUE; /* the configuration turned the channel off */
	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, NULL, &name)) {
		if ((d->only && strcmp(d->only, name) != 0) || holds_check(d, name))
			continue; /* not ours, or a tune is asking the server itself */
		renew_one(d, name, now);
	}
	return G_SOURCE_CONTINUE;
}

/* The server (if rate-port says so), the leases as they stand, the renewals' timer. */
void rate_channel_start(struct daemon *d)
{
	server_start(d);
	leases_sweep(d);
	d->renew_timer = g_timeout_add_seconds(RATE_RENEW_S / 4, on_renew, d);
}

/* The configuration was loaded again: listen again if the port changed, or to try again. */
void rate_channel_reload(struct daemon *d, bool port_changed)
{
	if (port_changed || !d->rates) {
		server_stop(d);
		server_start(d); /* again, also when it could not listen before */
	}
}

void rate_channel_stop(struct daemon *d)
{
	server_stop(d);
	if (d->lease_timer)
		g_source_remove(d->lease_timer);
	if (d->renew_timer)
		g_source_remove(d->renew_timer);
	d->lease_timer = d->renew_timer = 0;
}
