/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who may spend the rate channel's budgets, as pure logic (times come in as
 * seconds of a monotonic clock, so tests/test-channel.c drives them with a
 * fake one). Every datagram is charged to the peer that sent it before any
 * costly work: the peer is named from the source address by the interface's
 * peers as last dumped (an index, dumped again every GATE_INDEX_MAX_AGE
 * seconds, or after GATE_INDEX_MISS_AGE when a source no peer holds comes
 * in). A client that sends from many addresses of its AllowedIPs (a routed
 * /24, an IPv6 /64) is still one peer with one budget; a peer past its own
 * budget spends nothing of the others'. The shared budgets then bound the
 * whole: the netlink dumps a rate request costs, the probe answers.
 */
#ifndef WGSHAPE_CHANNEL_GATE_H
#define WGSHAPE_CHANNEL_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netlink/kernel.h"

/*
 * Rate requests carried out (each a class change, or the tree reconciled),
 * from everyone: above issue 27's 300 a second for a hub. A class change
 * costs no dump and its files are written behind (daemon.c's flush).
 */
#define GATE_RATES_PER_SECOND 500u
/* Timed probes cost no dump: at most this many a second, from everyone. */
#define GATE_PROBES_PER_SECOND 2000u
/* The index is dumped again when older than this (WireGuard says nothing of changes)... */
#define GATE_INDEX_MAX_AGE 5.0
/* ... or than this when a source no peer holds came in (a peer added, AllowedIPs moved). */
#define GATE_INDEX_MISS_AGE 1.0
/*
 * A rate request is carried out for the peer the index names when the index
 * is younger than this; else after a dump of its own. So requests cost at
 * most one dump a second an interface, and a peer's AllowedIPs moved to
 * another are the new holder's at most this long after.
 */
#define GATE_DECIDE_AGE 1.0
/*
 * While requests come in, the index is dumped again in the background
 * (kernel.h's wg_dumper) once it is older than this, so that it is young
 * enough to decide when the next request comes: a busy hub's requests do not
 * wait for a dump (15-20 ms at 1,000 peers in the lab VM).
 */
#define GATE_REFRESH_AGE 0.75

enum gate_kind {
	GATE_RATE, /* a rate request: channel/policy.h's rate bucket */
	GATE_PROBE, /* a timed probe: its probe bucket */
};

struct gate;

struct gate *gate_new(void);
void gate_free(struct gate *g);

/*
 * ifindex's peers, as dumped at now (copied; n 0 when the dump failed, so
 * that a failing interface is not dumped again for every datagram). A peer
 * no longer there loses its budgets; one still there keeps them.
 */
void gate_index(struct gate *g, int ifindex, const struct wg_peer *peers, size_t n, double now);

/*
 * The peer of ifindex whose AllowedIPs hold addr (family AF_INET or
 * AF_INET6, network order), as last indexed: 0 with its key in key.
 * -ESTALE when the index must be dumped again first (never dumped, too old,
 * or no peer holds addr and the last dump is old enough to look again): call
 * gate_index and ask again. -ENOENT when no peer holds it, -ENOTUNIQ when
 * more than one does (peer_by_source).
 */
int gate_peer(const struct gate *g, int ifindex, int family, const uint8_t *addr, double now,
	      uint8_t key[WG_KEY_LEN]);

/* Was ifindex's index dumped less than max_age seconds before now? */
bool gate_fresh(const struct gate *g, int ifindex, double now, double max_age);
/* When ifindex's index was dumped (gate_index's now); -1 never. */
double gate_index_at(const struct gate *g, int ifindex);

/*
 * Charge one datagram of kind to key's peer on ifindex at now: its own
 * bucket first, then everyone's budget for the second. 0 when it may go on;
 * -EDQUOT when the peer's own budget is spent (nothing of the shared one is
 * taken); -EBUSY when the shared one is.
 */
int gate_take(struct gate *g, int ifindex, const uint8_t *key, enum gate_kind kind, double now);

#endif
