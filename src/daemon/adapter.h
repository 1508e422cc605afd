/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Continuous adaptation in the daemon: for a section with adapt = yes, one
 * adapter per tunnel. It sends timed probes through the tunnel to the far
 * end's wgshape (adapt/probe.h), reads what each shaper sent from the
 * kernel's own counters (cake's for egress and the IFB, the tunnel's
 * received bytes for a download shaped at the server), and runs one
 * controller per direction (adapt/controller.h). A new egress or ingress
 * rate is put in place by reconciling the tunnel (the reconciler asks
 * adapter_rates(), so enforcing the configuration keeps it); a new download
 * rate is asked of the server through the rate channel, without waiting.
 *
 * Its state for `show` is IFNAME.adapt in the state folder
 * (daemon/adapter-state.h), written within a second of a change of rate and
 * every 5 s otherwise.
 */
#ifndef WGSHAPE_DAEMON_ADAPTER_H
#define WGSHAPE_DAEMON_ADAPTER_H

#include <stdbool.h>

#include "config/config.h"
#include "apply/reconcile.h"
#include "netlink/kernel.h"

struct adapt_env {
	struct netlink *nl;
	const char *statedir;
	unsigned int port; /* the far end's rate port: its daemon answers timed probes there */
	/* An egress or ingress rate changed: shape ifname again, now. */
	void (*reshape)(void *ud, const char *ifname);
	void *ud;
};

struct adapter;

/*
 * An adapter for ifname as section c says, probing server (an address
 * inside the tunnel). NULL, with why, when it cannot run.
 */
struct adapter *adapter_new(const struct adapt_env *env, const char *ifname,
			    const struct conf_section *c, const char *server, char *why,
			    size_t whylen);
/* Stop it (its state file goes); the caller reshapes ifname at its base rates. */
void adapter_free(struct adapter *a);
/* Does a run as c, server (NULL: any) and port say (same rates, ranges, trace)? */
bool adapter_matches(const struct adapter *a, const struct conf_section *c, const char *server,
		     unsigned int port);
/* The rates it set now (0: the configured one), for the reconciler. */
void adapter_rates(const struct adapter *a, struct adapted_rates *out);

#endif
