// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"

/* Not given matches anything; given, one of the values must equal it. */
static bool key_matches(char **values, const char *actual)
{
	if (!values)
		return true;
	if (!actual)
		return false;
	for (char **v = values; *v; v++)
		if (!strcmp(*v, actual))
			return true;
	return false;
}

bool profile_net_matches(const struct net_match *m, const struct active_net *n)
{
	if (m->any)
		return true;
	return key_matches(m->ids, n->id) && key_matches(m->uuids, n->uuid) &&
	       key_matches(m->ssids, n->ssid) && key_matches(m->types, n->type);
}

static bool is_network(const struct active_net *n, const char *tunnel)
{
	return !(n->iface && tunnel && !strcmp(n->iface, tunnel));
}

static int first_match(const struct net_match *profiles, size_t n, const struct active_net *net)
{
	for (size_t p = 0; p < n; p++)
		if (!profiles[p].any && profile_net_matches(&profiles[p], net))
			return (int)p;
	return -1;
}

int profile_choose(const struct net_match *profiles, size_t n, const struct active_net *nets,
		   size_t n_nets, const char *tunnel, char *why, size_t whylen)
{
	int best = -1;
	size_t via = 0;

	/* The primary connection first: it is the line the traffic takes. */
	for (size_t i = 0; i < n_nets && best < 0; i++) {
		if (nets[i].primary && is_network(&nets[i], tunnel)) {
			best = first_match(profiles, n, &nets[i]);
			via = i;
		}
	}
	/* Then the first profile in the file that any active network matches. */
	for (size_t p = 0; p < n && best < 0; p++) {
		if (profiles[p].any)
			continue;
		for (size_t i = 0; i < n_nets; i++) {
			if (is_network(&nets[i], tunnel) && profile_net_matches(&profiles[p], &nets[i])) {
				best = (int)p;
				via = i;
				break;
			}
		}
	}
	if (best >= 0) {
		const struct active_net *m = &nets[via];

		snprintf(why, whylen, "%s connection '%s'%s%s%s", m->primary ? "primary" : "active",
			 m->id ? m->id : "?", m->ssid ? " (SSID '" : "", m->ssid ? m->ssid : "",
			 m->ssid ? "')" : "");
		return best;
	}
	for (size_t p = 0; p < n; p++) {
		if (profiles[p].any) {
			snprintf(why, whylen, "no other profile matches: the fallback [network *]");
			return (int)p;
		}
	}
	snprintf(why, whylen, "no profile matches the active networks");
	return -1;
}
