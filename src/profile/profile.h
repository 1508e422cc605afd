/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which [network NAME] profile applies to a tunnel, given the networks
 * NetworkManager has active. Pure: the caller brings the active networks
 * (from libnm) and the profiles (from the configuration).
 */
#ifndef WGSHAPE_PROFILE_H
#define WGSHAPE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

/* One active NetworkManager connection. */
struct active_net {
	const char *id; /* connection.id, e.g. "Home Wi-Fi 5G" */
	const char *uuid;
	const char *type; /* connection.type, e.g. "802-11-wireless" */
	const char *ssid; /* the access point's, for Wi-Fi; NULL otherwise */
	const char *iface; /* its device's interface */
	bool primary; /* it holds the default route */
};

/* The active networks, as far as they are known: what profiles are chosen against. */
struct net_view {
	struct active_net *nets;
	size_t n;
	/* NetworkManager away, or a connection half-way up or down: profiles wait */
	bool unknown;
};

/*
 * A profile's match keys: each NULL (not given) or a NULL-terminated list of
 * values, any of which matches. Every key given must match.
 */
struct net_match {
	char **ids, **uuids, **ssids, **types;
	bool any; /* [network *]: the fallback */
};

bool profile_net_matches(const struct net_match *m, const struct active_net *n);

/*
 * The profile for tunnel among profiles[0..n) (file order; those that name
 * the tunnel), or -1 when none applies. The tunnel's own connection is not a
 * network. The primary connection wins, then the order in the file; a [network *]
 * profile applies only when nothing else does. why says what matched.
 */
int profile_choose(const struct net_match *profiles, size_t n, const struct active_net *nets,
		   size_t n_nets, const char *tunnel, char *why, size_t whylen);

#endif
