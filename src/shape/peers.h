/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-peer download shaping, the words the rest of wgshape shares with the
 * engine (config, the rate channel, the state file): a peer's wanted rate,
 * the ids of the tree's classes, prefixes and WireGuard keys. The tree
 * itself is planned in src/shape/tree-plan.h and put in the kernel by
 * src/shape/tree-sync.h.
 */
#ifndef WGSHAPE_SHAPE_PEERS_H
#define WGSHAPE_SHAPE_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "netlink/kernel.h"

#define TREE_MAJOR 1u
#define TREE_CAP_MINOR 1u
#define TREE_DEFAULT_MINOR 2u
#define TREE_PEER_MINOR_FIRST 0x10u
#define TREE_PEER_MINOR_LAST 0xfffeu
#define TREE_PRIO_V4 1u
#define TREE_PRIO_V6 2u
/* "no cap": 100 Gbit/s, more than any WireGuard interface moves (bytes/s) */
#define TREE_RATE_UNLIMITED 12500000000ull
/* the least guaranteed rate a class gets when the cap is shared out (bytes/s) */
#define TREE_RATE_MIN 1000ull

#define TREE_HANDLE(minor) (((uint32_t)TREE_MAJOR << 16) | (uint32_t)(minor))
#define TREE_LEAF_HANDLE(minor) ((uint32_t)(minor) << 16)

/*
 * What a peer's class holds under it: leaf = in the configuration and set's
 * words. Lazy (the default) is cake while the peer is active (its class
 * carried traffic within the idle time, or its client holds a lease) and a
 * small fq_codel while it is idle, so that kernel memory follows the peers
 * that are active (src/shape/tree-plan.c).
 */
enum peer_leaf {
	PEER_LEAF_UNSET = 0, /* the interface's; lazy when it says none */
	PEER_LEAF_LAZY,
	PEER_LEAF_CAKE,
	PEER_LEAF_FQ_CODEL,
};

/* Is a peer active, for a lazy leaf? Not judged until its class is first planned. */
enum peer_activity {
	PEER_UNJUDGED = 0,
	PEER_IDLE,
	PEER_ACTIVE,
};

/* the source of a peer's rate its client asked for (src/channel/): it is active */
#define PEER_SOURCE_LEASE "client lease"
/* the source of a peer's rate the server's own adaptation set ([peer] adapt = yes) */
#define PEER_SOURCE_ADAPT "server adapt"
/*
 * WireGuard drops a session's keys 180 s after its handshake (REJECT_AFTER_TIME):
 * a peer without a handshake that recent has moved nothing since.
 */
#define PEER_HANDSHAKE_FRESH_S 180

/* "lazy", "cake", "fq_codel"; NULL for PEER_LEAF_UNSET or none. */
const char *peer_leaf_name(enum peer_leaf leaf);
/* The leaf named s; PEER_LEAF_UNSET when s is none of them. */
enum peer_leaf peer_leaf_of(const char *s);

/* in a request, a direction it does not name: the peer keeps what it has */
#define PEER_RATE_KEEP UINT64_MAX

/* One peer's wanted shaping: its download, its upload, or both. */
struct peer_want {
	uint8_t key[WG_KEY_LEN];
	char name[64]; /* the [peer NAME] label; "" when set by hand */
	uint64_t rate; /* its download, bytes/s; 0: none (no class in the download tree) */
	uint64_t upload; /* its upload, bytes/s; 0: none (no class in the upload tree) */
	struct cake_opts opts; /* its cake's own options (over the interface's) */
	char options[192]; /* the same as set's words, space-separated (kept in the state) */
	char source[128]; /* "set", "config FILE:LINE", ... */
	uint16_t minor; /* its class in either tree; 0 until tree_plan gives it one */
	uint8_t leaf; /* enum peer_leaf: its own (leaf in its words); UNSET: the interface's */
	uint8_t activity; /* enum peer_activity, for a lazy leaf (kept in the state) */
};

/* Does w's client hold a lease on its rate (then it is active, whatever its traffic)? */
bool peer_leased(const struct peer_want *w);

/* Does a contain b (same family, a's prefix no longer and matching)? */
bool tc_prefix_contains(const struct tc_prefix *a, const struct tc_prefix *b);
/* "10.0.0.0/24", "fd00::1/128" */
const char *tc_prefix_str(const struct tc_prefix *p, char *buf, size_t len);
/* A WireGuard public key in base64 (44 characters); 0 or -EINVAL. */
int wg_key_from_base64(const char *s, uint8_t key[WG_KEY_LEN]);
void wg_key_to_base64(const uint8_t key[WG_KEY_LEN], char out[45]);
/* Keys (pointers to WG_KEY_LEN bytes) as GHashTable keys: g_hash_table_new(wg_key_hash, wg_key_equal). */
guint wg_key_hash(gconstpointer key);
gboolean wg_key_equal(gconstpointer a, gconstpointer b);

#endif
