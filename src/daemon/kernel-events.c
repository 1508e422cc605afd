// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's input from the kernel: link and tc notifications. A link
 * that appears and is configured, a change to a link the configuration
 * enforces, a qdisc of ours or a class or leaf of our per-peer tree changed
 * by someone else: each schedules that interface (reconciling it re-reads it
 * and puts back what the configuration says). The links seen (ifindex ->
 * name) are kept for the others.
 */
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include <glib-unix.h>
#include <linux/pkt_sched.h>

#include "daemon/internal.h"
#include "shape/peers.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "util/log.h"

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

static void on_link_del(struct daemon *d, const struct netlink_event *ev)
{
	const char *name;

	/* Our IFB deleted by hand takes the download shaping with it. */
	if (!strncmp(ev->ifname, "ifb4", 4) && (name = ifb_owner(d, ev->ifname)) &&
	    daemon_enforced(d, name))
		daemon_schedule(d, name, 0);
	name = g_hash_table_lookup(d->names, GINT_TO_POINTER(ev->ifindex));
	if (name)
		adapters_forget(d, name);
	g_hash_table_remove(d->names, GINT_TO_POINTER(ev->ifindex));
}

static void on_link_new(struct daemon *d, const struct netlink_event *ev)
{
	const char *known;

	if (!ev->ifname[0])
		return;
	known = g_hash_table_lookup(d->names, GINT_TO_POINTER(ev->ifindex));
	if (known && !strcmp(known, ev->ifname)) {
		/* A change of flags or addresses: only enforcement cares. */
		if (daemon_enforced(d, ev->ifname))
			daemon_schedule(d, ev->ifname, 0);
		return;
	}
	g_hash_table_replace(d->names, GINT_TO_POINTER(ev->ifindex), g_strdup(ev->ifname));
	if (!strcmp(ev->kind, "ifb") && !strncmp(ev->ifname, "ifb4", 4))
		return;
	if (config_mentions(d->cfg, ev->ifname))
		daemon_schedule(d, ev->ifname, g_get_monotonic_time());
}

/* The interface a tc notification is about, an IFB of ours counting as its owner's. */
static const char *tc_event_iface(struct daemon *d, const struct netlink_event *ev)
{
	const char *name = g_hash_table_lookup(d->names, GINT_TO_POINTER(ev->ifindex));

	if (name && !strncmp(name, "ifb4", 4) && ifb_owner(d, name))
		name = ifb_owner(d, name);
	return name;
}

/*
 * Is ifname's egress our per-peer tree, as the state kept says? (Kept
 * since the interface was first reconciled; if it is not, the next
 * reconcile has the kernel's word anyway.)
 */
static bool ours_is_tree(struct daemon *d, const char *ifname)
{
	const struct shape_state *st = state_peek(d->opts->statedir, ifname);

	return st && st->tree;
}

/*
 * A class of our tree, or the leaf under one, made, changed or deleted by
 * another process (`tc class change ...`, a `wgshape set` beside us): that
 * interface again, if the configuration enforces it. Reconciling waits for
 * the state lock the other wgshape holds, so it plans from what that one
 * wrote, and changes only the classes that differ.
 */
static void on_tree_part(struct daemon *d, const struct netlink_event *ev, const char *what,
			 uint32_t id)
{
	const char *name;

	if (ev->portid && ev->portid == netlink_port(d->nl))
		return;
	name = tc_event_iface(d, ev);
	if (!name || !daemon_enforced(d, name) || !ours_is_tree(d, name))
		return;
	log_debug("%s: %s %x:%x changed by another process (port %u); reconciling", name, what,
		  TC_H_MAJ(id) >> 16, TC_H_MIN(id), ev->portid);
	daemon_schedule(d, name, 0);
}

static void on_qdisc(struct daemon *d, const struct netlink_event *ev)
{
	const char *name;

	if (TC_H_MAJ(ev->parent) == TREE_HANDLE(0) && ev->parent != TC_H_ROOT) {
		on_tree_part(d, ev, "the leaf of class", ev->parent);
		return;
	}
	if (ev->parent != TC_H_ROOT && ev->parent != TC_H_INGRESS)
		return;
	/* an HTB root: per-peer shaping set by hand, perhaps; follow its peers */
	if (ev->type == NL_EVENT_QDISC_NEW && !strcmp(ev->kind, "htb"))
		peer_poll_arm(d);
	/* Our own changes come back as notifications too: nothing to do. */
	if (ev->portid && ev->portid == netlink_port(d->nl))
		return;
	name = tc_event_iface(d, ev);
	if (name && daemon_enforced(d, name))
		daemon_schedule(d, name, 0);
}

static void on_event(const struct netlink_event *ev, void *arg)
{
	struct daemon *d = arg;

	switch (ev->type) {
	case NL_EVENT_OVERRUN:
		log_warn("netlink: the kernel dropped notifications; resynchronising");
		daemon_resync(d);
		return;
	case NL_EVENT_LINK_DEL:
		on_link_del(d, ev);
		return;
	case NL_EVENT_LINK_NEW:
		on_link_new(d, ev);
		return;
	case NL_EVENT_QDISC_NEW:
	case NL_EVENT_QDISC_DEL:
		on_qdisc(d, ev);
		return;
	case NL_EVENT_CLASS_NEW:
	case NL_EVENT_CLASS_DEL:
		if (TC_H_MAJ(ev->handle) == TREE_HANDLE(0))
			on_tree_part(d, ev, "class", ev->handle);
		return;
	}
}

static gboolean on_netlink(gint fd, GIOCondition cond, gpointer data)
{
	struct daemon *d = data;
	int r;

	r = netlink_events_read(d->ev, on_event, d);
	if (r < 0) {
		log_err("netlink notifications: %s; resynchronising", strerror(-r));
		daemon_resync(d);
	}
	return G_SOURCE_CONTINUE;
}

/*
 * Subscribe, then learn the links there are: subscribed before the first
 * pass, so nothing that happens in between is missed. 0 or -errno.
 */
int kernel_events_open(struct daemon *d)
{
	struct link_info *links = NULL;
	size_t n = 0;
	int r = netlink_events_open(&d->ev);

	if (r < 0)
		return r;
	d->names = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	if (netlink_link_list(d->nl, &links, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		g_hash_table_replace(d->names, GINT_TO_POINTER(links[i].ifindex),
				     g_strdup(links[i].name));
	free(links);
	return 0;
}

/* Read the notifications as they come (queued in the socket until then). */
void kernel_events_watch(struct daemon *d)
{
	g_unix_fd_add(netlink_events_fd(d->ev), G_IO_IN, on_netlink, d);
}

bool kernel_events_known(struct daemon *d, const char *ifname)
{
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, NULL, &val))
		if (!strcmp(val, ifname))
			return true;
	return false;
}

void kernel_events_close(struct daemon *d)
{
	g_clear_pointer(&d->names, g_hash_table_unref);
	netlink_events_close(d->ev);
	d->ev = NULL;
}
