/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-packet overhead a tunnel adds below the interface cake sits on.
 * Pure decision: given what the peers' endpoints are, say what to use and why.
 */
#ifndef WGSHAPE_OVERHEAD_H
#define WGSHAPE_OVERHEAD_H

#include <stdbool.h>
#include <stddef.h>

/* WireGuard data message: 16 header + 16 Poly1305 tag, then UDP 8 and outer IP. */
#define WG_OVERHEAD_IPV4 (16 + 16 + 8 + 20)
#define WG_OVERHEAD_IPV6 (16 + 16 + 8 + 40)
#define CAKE_OVERHEAD_MIN (-64)
#define CAKE_OVERHEAD_MAX 256

struct overhead_input {
	bool is_wireguard;
	unsigned int peers_v4; /* peers with an IPv4 endpoint */
	unsigned int peers_v6; /* peers with an IPv6 endpoint */
	unsigned int peers_none; /* peers with no endpoint yet */
	int link_overhead; /* the underlying link's framing, bytes */
};

struct overhead_choice {
	int overhead;
	bool warn; /* reason should be shown to the user as a warning */
	char reason[160];
};

/* 0 on success; -ERANGE when the sum falls outside cake's -64..256. */
int overhead_choose(const struct overhead_input *in, struct overhead_choice *out);

#endif
