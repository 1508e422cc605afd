/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the daemon's files share. daemon.c is the loop: it starts each input
 * in dependency order, stops them in reverse, and keeps the one queue they
 * all feed: daemon_schedule() an interface (or daemon_resync() every one) and it is
 * reconciled when the loop is idle. Each input is a file with the few calls
 * below; its fields in struct daemon are its own.
 */
#ifndef WGSHAPE_DAEMON_INTERNAL_H
#define WGSHAPE_DAEMON_INTERNAL_H

#include <stdbool.h>
#include <glib.h>

#include "config/config.h"
#include "apply/reconcile.h"
#include "daemon/daemon.h"
#include "netlink/kernel.h"
#include "nm/nm.h"

struct daemon {
	const struct daemon_opts *opts;
	const char *only;
	GMainLoop *loop;
	struct netlink *nl;
	struct config *cfg;
	/* daemon.c: what to reconcile when the loop is idle */
	GHashTable *pending; /* ifname -> appearance time (µs, 0 if not new) */
	bool resync;
	guint idle;
	guint flush_timer; /* states saved behind (rate requests) to their files */
	/* kernel-events.c */
	struct netlink_events *ev;
	GHashTable *names; /* ifindex -> ifname of every link we have seen */
	/* networks.c */
	struct nm_watch *nm;
	/* holds.c */
	GHashTable *holds; /* ifname -> struct hold_watch: a tune measuring it */
	/* peer-poll.c */
	GHashTable *peer_sums; /* ifname -> guint64: its WireGuard peers as last polled */
	/* ifname -> GHashTable (key -> struct leaf_seen): lazy leaves' traffic as last polled */
	GHashTable *leaf_seen;
	guint peer_poll; /* the timer that looks at WireGuard's peers, while anything needs it */
	struct wg_dumper *peer_dumper; /* the poll's dumps, in a thread of their own */
	/* rate-channel.c */
	struct rate_server *rates; /* the rate channel's server side; NULL: off */
	guint rate_src[2];
	guint lease_timer; /* the next end of a client's lease */
	int64_t lease_next; /* when (lease_now()'s clock); 0: no timer */
	guint renew_timer; /* this host's own requests, as a client, to renew */
	/* adapters.c */
	GHashTable *adapters;  /* ifname -> struct adapter: adapt = yes (daemon/adapter.h) */
	GHashTable *adapt_why; /* ifname -> why it does not adapt, as last said */
	/* peer-adapt.c */
	struct peer_adapters *padapt; /* [peer] adapt = yes: the server adapts those peers */
	/* metrics-file.c */
	guint metrics_timer; /* metrics-file: written every metrics-every seconds */
	char *metrics_path;  /* the file it writes, removed when it stops */
	bool metrics_failed; /* the last write failed (said once until one works) */
};

/* daemon.c: the loop's queue, the reconciler as the configuration says, reloading */
void daemon_schedule(struct daemon *d, const char *ifname, gint64 since);
void daemon_resync(struct daemon *d);
struct reconciler daemon_reconciler(struct daemon *d);
/* The same, with NetworkManager's networks as they are now (*nets: free with nm_nets_free). */
struct reconciler daemon_reconciler_now(struct daemon *d, struct nm_nets **nets);
/* Does the configuration enforce ifname (put its shaping back when changed)? */
bool daemon_enforced(struct daemon *d, const char *ifname);
/* Load the configuration again; false (the old one stays) when it is not valid. */
bool daemon_reload(struct daemon *d);

/* kernel-events.c: link and tc notifications; the links they name */
int kernel_events_open(struct daemon *d);
void kernel_events_watch(struct daemon *d);
bool kernel_events_known(struct daemon *d, const char *ifname);
void kernel_events_close(struct daemon *d);

/* networks.c: NetworkManager, followed once [network] profiles need it */
bool networks_follow(struct daemon *d);
void networks_now(struct daemon *d, struct nm_nets **nets);
void networks_close(struct daemon *d);

/* holds.c: a `wgshape tune` holding an interface, watched until it ends */
void holds_init(struct daemon *d);
bool holds_check(struct daemon *d, const char *ifname);
void holds_watch_all(struct daemon *d);
void holds_exit(struct daemon *d);

/* peer-poll.c: WireGuard's peers, looked at while per-peer shaping may be wanted */
void peer_poll_init(struct daemon *d);
void peer_poll_arm(struct daemon *d);
void peer_poll_maybe(struct daemon *d);
void peer_poll_exit(struct daemon *d);

/* rate-channel.c: the server's socket and leases; this host's renewals as a client */
void rate_channel_start(struct daemon *d);
void rate_channel_reload(struct daemon *d, bool port_changed);
void rate_channel_stop(struct daemon *d);

/* adapters.c: an adapter per tunnel whose section says adapt = yes */
void adapters_init(struct daemon *d);
void adapters_reconciler(struct daemon *d, struct reconciler *rc);
void adapters_sync(struct daemon *d, const struct reconciler *rc);
void adapters_forget(struct daemon *d, const char *ifname);
void adapters_stop_all(struct daemon *d);
void adapters_exit(struct daemon *d);

/* peer-adapt.c: [peer] adapt = yes, the server following a peer's line alone */
void peer_adapt_init(struct daemon *d);
void peer_adapt_reconciler(struct daemon *d, struct reconciler *rc);
void peer_adapt_sync(struct daemon *d);
void peer_adapt_stop_all(struct daemon *d);
void peer_adapt_exit(struct daemon *d);

/* metrics-file.c: metrics-file, written every metrics-every seconds */
void metrics_file_start(struct daemon *d);
void metrics_file_stop(struct daemon *d, const char *keep);

/* signals.c: SIGHUP reloads, SIGTERM and SIGINT end the loop */
void signals_watch(struct daemon *d);

#endif
