/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Bring interfaces in line with the configuration: what `apply` does once
 * and the daemon does whenever something changes. Idempotent: an interface
 * already as configured is left untouched.
 */
#ifndef WGSHAPE_RECONCILE_H
#define WGSHAPE_RECONCILE_H

#include "config/config.h"
#include "netlink/kernel.h"

/* The rates continuous adaptation set (src/daemon/adapt.h), bytes/s; 0: the configured one. */
struct adapted_rates {
	uint64_t egress, ingress, download;
};

struct reconciler {
	struct netlink *nl;
	const char *statedir;
	const struct config *cfg;
	const char *only; /* one interface, or NULL for all */
	/* the active networks, for [network] profiles; NULL: none known of */
	const struct net_view *nets;
	/*
	 * The rates adaptation set for ifname now, shaped as section c says
	 * (all 0 when what adapts it was made for another section), which
	 * win over the section's, so that enforcing the configuration does
	 * not undo them; NULL: nothing adapts.
	 */
	void (*adapted)(void *ud, const char *ifname, const struct conf_section *c,
			struct adapted_rates *out);
	void *ud;
	/*
	 * The download (upload) rate the server's own adaptation set for the
	 * peer key on ifname now ([peer] adapt = yes), which wins over its
	 * [peer] download (upload); 0: none. NULL: nothing adapts peers.
	 */
	uint64_t (*peer_adapted)(void *ud, const char *ifname, const uint8_t *key, bool upload);
	void *peer_ud;
};

#define SOURCE_CONFIG "config"
#define SOURCE_NETWORK "network"
#define SOURCE_LEASE PEER_SOURCE_LEASE

/* Is this a link wgshape itself made (an IFB), never to be configured? */
bool reconcile_skips(const struct link_info *link);

/*
 * Shape ifname as its section says; if no section matches but its shaping
 * came from the configuration, clear it. An interface another process holds
 * (state_hold(): `tune` measuring it) is left as it is. 0, or -errno (already
 * logged).
 */
int reconcile_iface(const struct reconciler *rc, const char *ifname);

/*
 * The section that shapes ifname now: the [network] profile the networks in
 * view choose for it (NULL while they are unknown), else its [interface]
 * section; NULL when none.
 */
const struct conf_section *reconcile_section(const struct reconciler *rc, const char *ifname);

/* Every link there is. Returns how many failed (each logged), or -errno. */
int reconcile_all(const struct reconciler *rc);

#endif
