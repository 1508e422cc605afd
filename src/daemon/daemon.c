// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon: one GLib main loop; link and tc notifications from
 * the kernel, the rate channel's requests (src/channel/server.h) and
 * signals are its only inputs. Changes are coalesced per interface and
 * reconciled when the loop is idle; a client's request is carried out at
 * once. Only per-peer shaping polls (WireGuard tells nobody when its peers
 * change), and only while an interface is shaped per peer or a [peer]
 * section exists. Timers: a lease's end, and a client's renewals.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <glib.h>
#include <glib-unix.h>
#include <linux/pkt_sched.h>

#include "channel/client.h"
#include "channel/lease.h"
#include "channel/server.h"
#include "daemon/adapter.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "config/config.h"
#include "util/log.h"
#include "nm/nm.h"
#include "config/reconcile.h"
#include "shape/peers.h"
#include "shape/state.h"
#include "util/notify.h"

struct daemon {
	const struct daemon_opts *opts;
	const char *only;
	GMainLoop *loop;
	struct netlink *nl;
	struct netlink_events *ev;
	struct config *cfg;
	struct nm_watch *nm;
	GHashTable *names; /* ifindex -> ifname of every link we have seen */
	GHashTable *pending; /* ifname -> appearance time (µs, 0 if not new) */
	GHashTable *holds; /* ifname -> struct hold_watch: a tune measuring it */
	GHashTable *peer_sums; /* ifname -> guint64: its WireGuard peers as last polled */
	bool resync;
	guint idle;
	guint peer_poll; /* the timer that looks at WireGuard's peers, while anything needs it */
	struct rate_server *rates; /* the rate channel's server side; NULL: off */
	guint rate_src[2];
	guint lease_timer; /* the next end of a client's lease */
	guint renew_timer; /* this host's own requests, as a client, to renew */
	GHashTable *adapters; /* ifname -> struct adapter: adapt = yes (daemon/adapter.h) */
	GHashTable *adapt_why; /* ifname -> why it does not adapt, as last said */
	guint metrics_timer; /* metrics-file: written every metrics-every seconds */
	char *metrics_path; /* the file it writes, removed when it stops */
	bool metrics_failed; /* the last write failed (said once until one works) */
};

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

static struct reconciler reconciler(struct daemon *d)
{
	return (struct reconciler){
		.nl = d->nl,
		.statedir = d->opts->statedir,
		.cfg = d->cfg,
		.only = d->only,
		.adapted = adapted,
		.ud = d,
	};
}

/* The same, with NetworkManager's networks as they are now (*nets: free with nm_nets_free). */
static struct reconciler reconciler_now(struct daemon *d, struct nm_nets **nets)
{
	struct reconciler rc = reconciler(d);

	*nets = NULL;
	if (d->nm) {
		nm_watch_nets(d->nm, nets);
		rc.nets = &(*nets)->view;
	}
	return rc;
}

static bool enforced(struct daemon *d, const char *ifname)
{
	const struct conf_section *c = config_match(d->cfg, ifname);

	if (!c)
		return config_mentions(d->cfg, ifname) && d->cfg->enforce;
	return c->enforce < 0 ? d->cfg->enforce : c->enforce;
}

static void schedule(struct daemon *d, const char *ifname, gint64 since);
static bool reload(struct daemon *d);
static void peer_poll_arm(struct daemon *d);
static void peer_poll_maybe(struct daemon *d);
static void rate_server_start(struct daemon *d);
static void rate_server_stop(struct daemon *d);
static void metrics_start(struct daemon *d);

/* A `tune` holding an interface (state_hold()): its end wakes us (a pidfd). */
struct hold_watch {
	struct daemon *d;
	char *ifname;
	pid_t pid;
	int pidfd;
	guint source;
};

static void hold_watch_free(gpointer p)
{
	struct hold_watch *w = p;

	if (w->source)
		g_source_remove(w->source);
	close(w->pidfd);
	g_free(w->ifname);
	g_free(w);
}

static gboolean on_holder_gone(gint fd, GIOCondition cond, gpointer data)
{
	struct hold_watch *w = data;
	struct daemon *d = w->d;

	/* `tune ... save` may have written a new rate: read the configuration again. */
	log_info("%s: wgshape tune (pid %d) ended: reloading the configuration", w->ifname,
		 (int)w->pid);
	w->source = 0; /* removed by returning G_SOURCE_REMOVE */
	g_hash_table_remove(d->holds, w->ifname); /* frees w */
	if (!reload(d))
		log_err("keeping the configuration that was loaded before");
	d->resync = true;
	schedule(d, NULL, 0);
	return G_SOURCE_REMOVE;
}

/* Is ifname held by a tune? Then watch for its end (once) and leave ifname alone. */
static bool held(struct daemon *d, const char *ifname)
{
	struct hold_watch *w;
	pid_t pid = state_holder(d->opts->statedir, ifname);
	int fd;

	if (pid <= 0)
		return false;
	w = g_hash_table_lookup(d->holds, ifname);
	if (w && w->pid == pid)
		return true;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (errno != ESRCH) /* ESRCH: it ended just now */
			log_warn("%s: pidfd_open(%d): %s; enforcing it anyway", ifname, (int)pid,
				 strerror(errno));
		return false;
	}
	w = g_new0(struct hold_watch, 1);
	w->d = d;
	w->ifname = g_strdup(ifname);
	w->pid = pid;
	w->pidfd = fd;
	w->source = g_unix_fd_add(fd, G_IO_IN, on_holder_gone, w);
	g_hash_table_replace(d->holds, g_strdup(ifname), w);
	log_info("%s: wgshape tune (pid %d) is measuring it: not enforced until tune ends",
		 ifname, (int)pid);
	return true;
}

/* Watch every tune holding a link we know (reconcile_all() leaves those alone). */
static void watch_holds(struct daemon *d)
{
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, &key, &val))
		held(d, val);
}

/* An adapter's new egress or ingress rate: shape ifname again, now. */
static void reshape(void *ud, const char *ifname)
{
	struct daemon *d = ud;
	struct nm_nets *nets = NULL;
	struct reconciler rc = reconciler_now(d, &nets);

	reconcile_iface(&rc, ifname);
	nm_nets_free(nets);
}

static bool name_known(struct daemon *d, const char *ifname)
{
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, NULL, &val))
		if (!strcmp(val, ifname))
			return true;
	return false;
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

/*
 * After a reconciling pass: an adapter for every tunnel whose section says
 * adapt = yes (made again when the section changed), none for the others,
 * which get their configured rates back.
 */
static void adapt_sync(struct daemon *d, const struct reconciler *rc)
{
	struct adapt_env env = { .nl = d->nl, .statedir = d->opts->statedir,
				 .port = d->cfg->rate_port, .reshape = reshape, .ud = d };
	g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		const char *name = val;
		const struct conf_section *c = reconcile_section(rc, name);
		struct adapter *a = g_hash_table_lookup(d->adapters, name);
		char server[INET6_ADDRSTRLEN], why[256];

		if (!c || !c->adapt.on || (d->only && strcmp(d->only, name) != 0) ||
		    state_holder(d->opts->statedir, name) > 0) {
			if (a)
				g_ptr_array_add(gone, g_strdup(name));
			adapt_say(d, name, NULL);
			continue;
		}
		if (!d->cfg->rate_port ||
		    rate_client_server(d->nl, name, c->net.server, server, why, sizeof(why)) < 0) {
			adapt_say(d, name, d->cfg->rate_port ? why :
				  "rate-port = 0 (the far end answers probes there)");
			if (a)
				g_ptr_array_add(gone, g_strdup(name));
			continue;
		}
		if (a && adapter_matches(a, c, server, env.port))
			continue;
		/*
		 * Not tried again until the next pass (a link or configuration
		 * event): a tunnel that is down cannot connect its sockets, and a
		 * pass of its own would only fail again, at once.
		 */
		if (a) {
			g_hash_table_remove(d->adapters, name);
			schedule(d, name, 0); /* the new section's rates, not the old adapter's */
		}
		a = adapter_new(&env, name, c, server, why, sizeof(why));
		if (!a) {
			adapt_say(d, name, why);
			continue;
		}
		adapt_say(d, name, NULL);
		g_hash_table_replace(d->adapters, g_strdup(name), a);
		log_info("%s: adapting its rates, probing %s port %u", name, server, env.port);
	}
	/* and those whose tunnel is gone */
	g_hash_table_iter_init(&it, d->adapters);
	while (g_hash_table_iter_next(&it, &key, NULL))
		if (!name_known(d, key))
			g_ptr_array_add(gone, g_strdup(key));
	for (guint i = 0; i < gone->len; i++) {
		log_info("%s: no longer adapted: back to its configured rates",
			 (const char *)gone->pdata[i]);
		g_hash_table_remove(d->adapters, gone->pdata[i]);
		schedule(d, gone->pdata[i], 0);
	}
}

static gboolean on_idle(gpointer data)
{
	struct daemon *d = data;
	struct nm_nets *nets = NULL;
	struct reconciler rc = reconciler_now(d, &nets);
	GHashTableIter it;
	gpointer key, val;

	d->idle = 0;
	if (d->resync) {
		d->resync = false;
		g_hash_table_remove_all(d->pending);
		log_debug("reconciling every interface");
		watch_holds(d);
		reconcile_all(&rc);
		adapt_sync(d, &rc);
		nm_nets_free(nets);
		return G_SOURCE_REMOVE;
	}
	g_hash_table_iter_init(&it, d->pending);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		gint64 since = *(gint64 *)val;

		if (held(d, key)) {
			g_hash_table_iter_remove(&it);
			continue;
		}
		if (reconcile_iface(&rc, key) == 0 && since && config_mentions(d->cfg, key))
			log_info("%s: shaped %.1f ms after it appeared", (const char *)key,
				 (double)(g_get_monotonic_time() - since) / 1000.0);
		g_hash_table_iter_remove(&it);
	}
	adapt_sync(d, &rc);
	nm_nets_free(nets);
	return G_SOURCE_REMOVE;
}

static void schedule(struct daemon *d, const char *ifname, gint64 since)
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

/* The interface an IFB of ours serves, if we know it. */
static const char *ifb_owner(struct daemon *d, const char *ifb)
{
	GHashTableIter it;
	gpointer key, val;
	char name[IFNAME_SIZE];

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		shape_ifb_name(val, name);
		if (!strcmp(name, ifb) && strcmp(val, ifb) != 0)
			return val;
	}
	return NULL;
}

static void on_event(const struct netlink_event *ev, void *arg)
{
	struct daemon *d = arg;
	const char *known, *name;

	switch (ev->type) {
	case NL_EVENT_OVERRUN:
		log_warn("netlink: the kernel dropped notifications; resynchronising");
		d->resync = true;
		schedule(d, NULL, 0);
		return;
	case NL_EVENT_LINK_DEL:
		/* Our IFB deleted by hand takes the download shaping with it. */
		if (!strncmp(ev->ifname, "ifb4", 4) && (name = ifb_owner(d, ev->ifname)) &&
		    enforced(d, name))
			schedule(d, name, 0);
		name = g_hash_table_lookup(d->names, GINT_TO_POINTER(ev->ifindex));
		if (name && g_hash_table_remove(d->adapters, name))
			log_info("%s: gone: no longer adapted", ev->ifname);
		g_hash_table_remove(d->names, GINT_TO_POINTER(ev->ifindex));
		return;
	case NL_EVENT_LINK_NEW:
		if (!ev->ifname[0])
			return;
		known = g_hash_table_lookup(d->names, GINT_TO_POINTER(ev->ifindex));
		if (known && !strcmp(known, ev->ifname)) {
			/* A change of flags or addresses: only enforcement cares. */
			if (enforced(d, ev->ifname))
				schedule(d, ev->ifname, 0);
			return;
		}
		g_hash_table_replace(d->names, GINT_TO_POINTER(ev->ifindex), g_strdup(ev->ifname));
		if (!strcmp(ev->kind, "ifb") && !strncmp(ev->ifname, "ifb4", 4))
			return;
		if (config_mentions(d->cfg, ev->ifname))
			schedule(d, ev->ifname, g_get_monotonic_time());
		return;
	case NL_EVENT_QDISC_NEW:
	case NL_EVENT_QDISC_DEL:
		if (ev->parent != TC_H_ROOT && ev->parent != TC_H_INGRESS)
			return;
		/* an HTB root: per-peer shaping set by hand, perhaps; follow its peers */
		if (ev->type == NL_EVENT_QDISC_NEW && !strcmp(ev->kind, "htb"))
			peer_poll_arm(d);
		/* Our own changes come back as notifications too: nothing to do. */
		if (ev->portid && ev->portid == netlink_port(d->nl))
			return;
		name = g_hash_table_lookup(d->names, GINT_TO_POINTER(ev->ifindex));
		if (!name)
			return;
		if (!strncmp(name, "ifb4", 4) && ifb_owner(d, name))
			name = ifb_owner(d, name);
		if (enforced(d, name))
			schedule(d, name, 0);
		return;
	}
}

/* NetworkManager changed something: which profile applies may have changed. */
static void on_nm(void *arg)
{
	struct daemon *d = arg;

	d->resync = true;
	schedule(d, NULL, 0);
}

static gboolean on_netlink(gint fd, GIOCondition cond, gpointer data)
{
	struct daemon *d = data;
	int r;

	r = netlink_events_read(d->ev, on_event, d);
	if (r < 0) {
		log_err("netlink notifications: %s; resynchronising", strerror(-r));
		d->resync = true;
		schedule(d, NULL, 0);
	}
	return G_SOURCE_CONTINUE;
}

/*
 * Follow NetworkManager once [network] profiles need it (loading libnm only
 * then: a server's daemon never does); true while it is followed.
 */
static bool follow_nm(struct daemon *d)
{
	if (!d->nm && d->cfg->networks->len)
		nm_watch_new(on_nm, d, &d->nm);
	return d->nm != NULL;
}

/* Load the configuration again; false (the old one stays) when it is not valid. */
static bool reload(struct daemon *d)
{
	struct config *cfg = config_load_logged(d->opts->config_path);
	bool port_changed;

	if (!cfg)
		return false;
	port_changed = cfg->rate_port != d->cfg->rate_port;
	config_free(d->cfg);
	d->cfg = cfg;
	if (port_changed || !d->rates) {
		rate_server_stop(d);
		rate_server_start(d); /* again, also when it could not listen before */
	}
	follow_nm(d);
	peer_poll_maybe(d);
	metrics_start(d);
	return true;
}

static gboolean on_hup(gpointer data)
{
	struct daemon *d = data;

	notify_systemd("RELOADING=1");
	log_info("reloading the configuration");
	if (reload(d)) {
		d->resync = true;
		schedule(d, NULL, 0);
	} else {
		log_err("keeping the configuration that was loaded before");
	}
	notify_systemd("READY=1");
	return G_SOURCE_CONTINUE;
}

static gboolean on_term(gpointer data)
{
	struct daemon *d = data;

	g_main_loop_quit(d->loop);
	return G_SOURCE_CONTINUE;
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

static void learn_names(struct daemon *d)
{
	struct link_info *links = NULL;
	size_t n = 0;

	if (netlink_link_list(d->nl, &links, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		g_hash_table_replace(d->names, GINT_TO_POINTER(links[i].ifindex),
				     g_strdup(links[i].name));
	free(links);
}

/*
 * WireGuard says nothing when peers or their AllowedIPs change (wg set,
 * syncconf): every few seconds, one dump of each interface's peers, and only
 * when they changed since the last look is the interface reconciled (which
 * reads its whole tree back: at 1,000 peers that is what costs).
 */
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

	if (held(d, ifname) || g_hash_table_contains(d->pending, ifname))
		return;
	sum = peers_sum(d, ifname);
	old = g_hash_table_lookup(d->peer_sums, ifname);
	if (old && *old == sum)
		return;
	g_hash_table_replace(d->peer_sums, g_strdup(ifname), g_memdup2(&sum, sizeof(sum)));
	schedule(d, ifname, 0);
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

/* Poll while per-peer shaping may be wanted (on_peer_poll stops itself when not). */
static void peer_poll_arm(struct daemon *d)
{
	if (!d->peer_poll)
		d->peer_poll = g_timeout_add_seconds(PEER_POLL_SECONDS, on_peer_poll, d);
}

/* At the start and on reload: poll if a [peer] section or per-peer shaping is there. */
static void peer_poll_maybe(struct daemon *d)
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

/* ---- the rate channel ---------------------------------------------------- */

static gboolean on_lease_end(gpointer data);

/*
 * One look at every interface's leases: those that ended are said, dropped
 * and their peers shaped at their configured rates again (also those that
 * ended while no daemon ran); the timer is set for the next end (none: no
 * timer).
 */
static void leases_sweep(struct daemon *d)
{
	g_auto(GStrv) names = NULL;
	int64_t now = lease_now(), next = 0;

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
			schedule(d, *n, 0);
		}
		end = rate_lease_next_end((const struct rate_lease *)(void *)leases->data,
					  leases->len, now);
		if (end && (!next || end < next))
			next = end;
	}
	if (d->lease_timer)
		g_source_remove(d->lease_timer);
	d->lease_timer = next ? g_timeout_add_seconds((guint)(next - now), on_lease_end, d) : 0;
}

static gboolean on_lease_end(gpointer data)
{
	struct daemon *d = data;

	d->lease_timer = 0; /* removed by returning G_SOURCE_REMOVE */
	leases_sweep(d);
	return G_SOURCE_REMOVE;
}

/* A client asks for its download rate: grant what the policy allows, and shape it now. */
static void on_rate_request(void *ud, const char *ifname, const uint8_t *key, uint64_t asked,
			    struct rate_msg *ans)
{
	struct daemon *d = ud;
	struct reconciler rc = reconciler(d);
	struct rate_policy pol;
	int64_t now = lease_now();
	uint64_t granted = 0;
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
	/* now is in whole seconds: one more, so that a lease lasts at least its length */
	r = lease_put(d->opts->statedir, ifname, key, ans->status == RATE_DEFAULT ? 0 : granted,
		      now + d->cfg->client_lease + 1, now);
	if (r == 0) {
		r = reconcile_iface(&rc, ifname);
		/* not shaped as granted: no lease to apply later behind the client's back */
		if (r < 0 && ans->status != RATE_DEFAULT)
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
	leases_sweep(d);
}

static gboolean on_rate_fd(gint fd, GIOCondition cond, gpointer data)
{
	struct daemon *d = data;

	rate_server_read(d->rates, fd);
	return G_SOURCE_CONTINUE;
}

/* Listen on the rate port ([daemon] rate-port; 0: not at all). */
static void rate_server_start(struct daemon *d)
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

static void rate_server_stop(struct daemon *d)
{
	for (int i = 0; i < 2; i++)
		if (d->rate_src[i])
			g_source_remove(d->rate_src[i]);
	d->rate_src[0] = d->rate_src[1] = 0;
	g_clear_pointer(&d->rates, rate_server_close);
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
		struct rate_record old, rec;
		char said[256];
		int r;

		if ((d->only && strcmp(d->only, name) != 0) || held(d, name))
			continue; /* not ours, or a tune is asking the server itself */
		if (rate_record_load(d->opts->statedir, name, &old) < 0 ||
		    !rate_record_due(&old, now))
			continue;
		if (strcmp(old.source, RATE_SOURCE_SET) != 0) {
			if (config_client_download(d->cfg, name)) {
				schedule(d, name, 0);
			} else {
				log_info("%s: nothing asks the server for a download rate any more: "
					 "its lease there lapses", (const char *)name);
				rate_record_remove(d->opts->statedir, name);
			}
			continue;
		}
		r = rate_client_request(d->opts->statedir, name, old.server, d->cfg->rate_port,
					old.asked, old.source, &rec);
		if (r < 0 && r != -ETIMEDOUT)
			continue;
		rate_record_describe(&rec, said, sizeof(said));
		if (rec.status != old.status || rec.rate != old.rate)
			log_info("%s: renewing the download rate with %s: %s", (const char *)name,
				 rec.server, said);
	}
	return G_SOURCE_CONTINUE;
}

/* metrics-file: the exposition of every interface (daemon/metrics.h), at once. */
static gboolean on_metrics(gpointer data)
{
	struct daemon *d = data;
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GError) err = NULL;

	metrics_collect(d->nl, d->opts->statedir, NULL, out);
	if (!g_file_set_contents_full(d->metrics_path, out->str, (gssize)out->len,
				      G_FILE_SET_CONTENTS_CONSISTENT, 0644, &err)) {
		if (!d->metrics_failed)
			log_err("metrics-file %s: %s (tried again every %u s)", d->metrics_path,
				err->message, d->cfg->metrics_every);
		d->metrics_failed = true;
	} else if (d->metrics_failed) {
		log_info("metrics-file %s: written again", d->metrics_path);
		d->metrics_failed = false;
	}
	return G_SOURCE_CONTINUE;
}

/*
 * Stop writing metrics-file; unless keep names it, its file goes too
 * (figures nobody updates would read as current).
 */
static void metrics_stop(struct daemon *d, const char *keep)
{
	if (d->metrics_timer)
		g_source_remove(d->metrics_timer);
	d->metrics_timer = 0;
	if (d->metrics_path && g_strcmp0(keep, d->metrics_path) != 0 &&
	    unlink(d->metrics_path) < 0 && errno != ENOENT)
		log_warn("metrics-file %s: removing it: %s", d->metrics_path, strerror(errno));
	g_clear_pointer(&d->metrics_path, g_free);
	d->metrics_failed = false;
}

/* As the configuration says: write now, then every metrics-every seconds. */
static void metrics_start(struct daemon *d)
{
	metrics_stop(d, d->cfg->metrics_file);
	if (!d->cfg->metrics_file)
		return;
	d->metrics_path = g_strdup(d->cfg->metrics_file);
	on_metrics(d);
	d->metrics_timer = g_timeout_add_seconds(d->cfg->metrics_every, on_metrics, d);
}

int daemon_run(const struct daemon_opts *opts)
{
	struct daemon d = { .opts = opts, .only = opts->only };
	struct reconciler rc;
	int r;

	d.cfg = config_load_logged(opts->config_path);
	if (!d.cfg)
		return -EINVAL;
	r = netlink_open(&d.nl);
	if (r == 0)
		r = netlink_events_open(&d.ev);
	if (r < 0) {
		log_err("netlink: %s", strerror(-r));
		goto out;
	}
	d.names = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	d.pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	d.holds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, hold_watch_free);
	d.peer_sums = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	d.adapters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					   (GDestroyNotify)adapter_free);
	d.adapt_why = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	d.loop = g_main_loop_new(NULL, FALSE);

	/* Subscribed before the first pass, so nothing that happens in between is missed. */
	learn_names(&d);
	rc = reconciler(&d);
	watch_holds(&d);
	/* With profiles, the first pass waits for NetworkManager's answer (on_nm). */
	if (!follow_nm(&d)) {
		reconcile_all(&rc);
		adapt_sync(&d, &rc);
	}

	g_unix_fd_add(netlink_events_fd(d.ev), G_IO_IN, on_netlink, &d);
	peer_poll_maybe(&d);
	rate_server_start(&d);
	leases_sweep(&d);
	d.renew_timer = g_timeout_add_seconds(RATE_RENEW_S / 4, on_renew, &d);
	metrics_start(&d);
	g_unix_signal_add(SIGHUP, on_hup, &d);
	g_unix_signal_add(SIGTERM, on_term, &d);
	g_unix_signal_add(SIGINT, on_term, &d);
	notify_systemd("READY=1");
	log_info("running%s%s", d.only ? " for " : "", d.only ? d.only : "");
	g_main_loop_run(d.loop);

	notify_systemd("STOPPING=1");
	if (g_hash_table_size(d.adapters)) {
		/* the configured rates back: the adapters' go with them */
		g_hash_table_remove_all(d.adapters);
		rc = reconciler(&d);
		reconcile_all(&rc);
	}
	rate_server_stop(&d);
	if (d.cfg->clear_on_exit)
		clear_configured(&d);
	metrics_stop(&d, NULL);
	log_info("stopped");
out:
	if (d.loop)
		g_main_loop_unref(d.loop);
	if (d.names)
		g_hash_table_unref(d.names);
	if (d.pending)
		g_hash_table_unref(d.pending);
	if (d.holds)
		g_hash_table_unref(d.holds);
	if (d.peer_sums)
		g_hash_table_unref(d.peer_sums);
	if (d.adapters)
		g_hash_table_unref(d.adapters);
	if (d.adapt_why)
		g_hash_table_unref(d.adapt_why);
	nm_watch_free(d.nm);
	netlink_events_close(d.ev);
	netlink_close(d.nl);
	config_free(d.cfg);
	return r;
}
