// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cake on a tunnel interface sees packets before encapsulation, so it must
 * be told what the tunnel adds per packet, or it under-counts the line's load
 * and the queue builds in the modem again.
 */
#include <errno.h>
#include <stdio.h>

#include "shape/overhead.h"

int overhead_choose(const struct overhead_input *in, struct overhead_choice *out)
{
	struct overhead_choice c = { 0 };
	const char *what;
	int base;

	if (!in->is_wireguard) {
		base = 0;
		c.warn = true;
		what = "not a WireGuard interface, so its tunnel overhead is unknown: 0";
	} else if (in->peers_v6) {
		base = WG_OVERHEAD_IPV6;
		what = in->peers_v4 ? "WireGuard, peers over IPv4 and IPv6, the larger: 80 "
				      "(32 WireGuard + 8 UDP + 40 IPv6)"
				    : "WireGuard over IPv6: 80 (32 WireGuard + 8 UDP + 40 IPv6)";
	} else if (in->peers_v4) {
		base = WG_OVERHEAD_IPV4;
		what = "WireGuard over IPv4: 60 (32 WireGuard + 8 UDP + 20 IPv4)";
	} else {
		/* Too much overhead costs a little rate; too little brings the bloat back. */
		base = WG_OVERHEAD_IPV6;
		c.warn = true;
		what = "WireGuard, no peer endpoint known yet, assuming IPv6: 80";
	}
	c.overhead = base + in->link_overhead;
	if (in->link_overhead)
		snprintf(c.reason, sizeof(c.reason), "%s + %d link-overhead", what, in->link_overhead);
	else
		snprintf(c.reason, sizeof(c.reason), "%s", what);
	if (c.overhead < CAKE_OVERHEAD_MIN || c.overhead > CAKE_OVERHEAD_MAX)
		return -ERANGE;
	*out = c;
	return 0;
}
