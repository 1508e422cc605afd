// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <glib.h>

#include "channel/policy.h"
#include "shape/peers.h"
#include "shape/units.h"

static bool peer_holds(const struct wg_peer *p, const struct tc_prefix *host)
{
	for (size_t i = 0; i < p->n_allowed; i++)
		if (tc_prefix_contains(&p->allowed[i], host))
			return true;
	return false;
}

int peer_by_source(const struct wg_peer *peers, size_t n, int family, const uint8_t *addr)
{
	struct tc_prefix host = { .family = family };
	int found = -ENOENT;

	/* no other family comes in on a WireGuard interface: no peer holds it */
	if (family == AF_INET)
		host.prefixlen = 32;
	else if (family == AF_INET6)
		host.prefixlen = 128;
	else
		return -ENOENT;
	memcpy(host.addr, addr, host.prefixlen / 8);

	for (size_t i = 0; i < n; i++) {
		if (!peer_holds(&peers[i], &host))
			continue;
		if (found >= 0)
			return -ENOTUNIQ;
		found = (int)i;
	}
	return found;
}

enum rate_status rate_policy_apply(const struct rate_policy *pol, uint64_t asked,
				   uint64_t *granted)
{
	uint64_t g = asked;

	if (!pol->allowed)
		return RATE_REFUSED;
	if (!asked) {
		*granted = pol->fallback;
		return RATE_DEFAULT;
	}
	if (pol->min && g < pol->min)
		g = pol->min;
	/* after min: with bounds the wrong way round, the ceiling still holds */
	if (pol->max && g > pol->max)
		g = pol->max;
	/* what every rate of wgshape's stays within, bounds or not */
	g = CLAMP(g, RATE_LEAST, RATE_MAX_BYTES);
	*granted = g;
	return g == asked ? RATE_APPLIED : RATE_CLAMPED;
}

/* A bucket of burst tokens that refills per_second of them a second. */
static bool bucket_take(struct rate_bucket *b, double now, double burst, double per_second)
{
	if (b->last == 0) {
		b->tokens = burst;
		b->last = now;
	} else if (now > b->last) {
		b->tokens += (now - b->last) * per_second;
		if (b->tokens > burst)
			b->tokens = burst;
		b->last = now;
	}
	/*
	 * A clock behind last adds nothing, and last stays: moved back, it
	 * would count the same seconds again once the clock caught up.
	 */
	if (b->tokens < 1)
		return false;
	b->tokens -= 1;
	return true;
}

bool rate_bucket_take(struct rate_bucket *b, double now)
{
	return bucket_take(b, now, RATE_BURST, 1 / RATE_REFILL_S);
}

bool probe_bucket_take(struct rate_bucket *b, double now)
{
	return bucket_take(b, now, PROBE_BURST, PROBE_PER_SECOND);
}

int64_t rate_lease_next_end(const struct rate_lease *leases, size_t n, int64_t now)
{
	int64_t next = 0;

	for (size_t i = 0; i < n; i++)
		if (rate_lease_live(&leases[i], now) && (!next || leases[i].until < next))
			next = leases[i].until;
	return next;
}
