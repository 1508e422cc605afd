/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rate channel's decisions, as pure logic (no sockets, no clock: times
 * come in as seconds of CLOCK_BOOTTIME, so tests/test-channel.c drives them):
 * which peer a request comes from, what the server's policy grants it, how
 * often a peer may ask, and when its lease ends.
 */
#ifndef WGSHAPE_CHANNEL_POLICY_H
#define WGSHAPE_CHANNEL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netlink/kernel.h"
#include "proto/rate.h"

/* A lease lasts this long unless renewed; a client renews every RATE_RENEW_S. */
#define RATE_LEASE_S 180u
#define RATE_RENEW_S 60u

/*
 * The peer a datagram from addr (family AF_INET or AF_INET6; 4 or 16 bytes,
 * network order) came from: the index of the one peer of peers[0..n) whose
 * AllowedIPs hold addr. -ENOENT when none does; -ENOTUNIQ when more than one
 * does (overlapping prefixes: a request counts only from exactly one peer).
 * An IPv4-mapped IPv6 address is not an IPv4 one here (WireGuard sees the
 * packet's own family).
 */
int peer_by_source(const struct wg_peer *peers, size_t n, int family, const uint8_t *addr);

/* What the server allows one peer ([peer] keys over [interface] ones). */
struct rate_policy {
	bool allowed; /* client-download = yes */
	uint64_t min, max; /* bytes/s; 0: no bound */
	uint64_t fallback; /* the configured download rate; 0: none */
};

/* The least rate a client is granted, bounds or not: 8 kbit/s (bytes/s). */
#define RATE_LEAST 1000u

/*
 * The answer to a request for asked bytes/s (0: the server's own rate) under
 * pol: RATE_REFUSED when not allowed (*granted untouched); RATE_DEFAULT for
 * 0 (*granted = fallback); RATE_CLAMPED with *granted at the bound it
 * crossed (the policy's, or RATE_LEAST and RATE_MAX_BYTES, which hold for
 * every rate); else RATE_APPLIED with *granted = asked.
 */
enum rate_status rate_policy_apply(const struct rate_policy *pol, uint64_t asked,
				   uint64_t *granted);

/*
 * A token bucket per peer: RATE_BURST requests at once, then one every
 * RATE_REFILL_S seconds (a client that adapts its download asks at most
 * every ADAPT_ASK_MS, src/daemon/adapt.c). The caller keeps one per peer,
 * zeroed at first.
 */
#define RATE_BURST 10u
#define RATE_REFILL_S 0.25
struct rate_bucket {
	double tokens;
	double last; /* when tokens was last brought up to date; 0: never */
};
/* May a request at now (seconds) go on? Takes a token when it may. */
bool rate_bucket_take(struct rate_bucket *b, double now);

/*
 * Timed probes (proto/tune.h) cost no netlink dump, and a client probes up
 * to 20 times a second under load: PROBE_BURST at once, then PROBE_PER_SECOND
 * a second, per peer. The same bucket, its own budget.
 */
#define PROBE_BURST 50u
#define PROBE_PER_SECOND 25.0
bool probe_bucket_take(struct rate_bucket *b, double now);

/* A lease: the peer's rate while it renews; now and until in CLOCK_BOOTTIME seconds. */
struct rate_lease {
	uint8_t key[WG_KEY_LEN];
	uint64_t rate; /* bytes/s, as granted */
	int64_t until;
};
static inline bool rate_lease_live(const struct rate_lease *l, int64_t now)
{
	return l->until > now;
}
/*
 * The earliest end among leases[0..n) still live at now, or 0 when none is
 * (when the daemon must look again).
 */
int64_t rate_lease_next_end(const struct rate_lease *leases, size_t n, int64_t now);

#endif
