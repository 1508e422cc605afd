/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NetworkManager module: the only place that includes <NetworkManager.h>.
 * It answers one question, which networks are active now, either once (the
 * dispatcher hook) or continuously (the daemon, on its GLib main loop).
 * libnm is loaded with the wgshape-nm.so module on the first question
 * (nm/loader.c): ask only when a [network] profile needs the answer.
 */
#ifndef WGSHAPE_NM_H
#define WGSHAPE_NM_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

/* A snapshot of the active connections; strings owned by the snapshot. */
struct nm_nets {
	/* unknown: NetworkManager is not on the bus, or a connection is activating
	 * or deactivating (wait for it) */
	struct net_view view;
	void *strings; /* owned */
};

void nm_nets_free(struct nm_nets *n);

/*
 * Ask NetworkManager now, blocking (the dispatcher hook). Not running is not
 * an error. Always gives a snapshot; -ENOENT (logged) when the module cannot
 * be loaded, and then the networks are unknown.
 */
int nm_nets_get(struct nm_nets **out);

struct nm_watch;

/* Called on the main loop whenever what nm_watch_nets() would say may have changed. */
typedef void (*nm_changed_fn)(void *arg);

/*
 * Follow NetworkManager on the thread-default main context: connections
 * coming and going, their state, the primary connection, Wi-Fi access points,
 * NetworkManager itself stopping and starting. Works without it on the bus.
 */
int nm_watch_new(nm_changed_fn fn, void *arg, struct nm_watch **out);
void nm_watch_free(struct nm_watch *w);
/* The snapshot now; an empty one until the client is ready or while NM is away. */
int nm_watch_nets(struct nm_watch *w, struct nm_nets **out);

#endif
