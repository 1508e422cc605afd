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

/* One peer's wanted download shaping. */
struct peer_want {
	uint8_t key[WG_KEY_LEN];
	char name[64]; /* the [peer NAME] label; "" when set by hand */
	uint64_t rate; /* bytes/s */
	struct cake_opts opts; /* its cake's own options (over the interface's) */
	char options[192]; /* the same as set's words, space-separated (kept in the state) */
	char source[128]; /* "set", "config FILE:LINE", ... */
	uint16_t minor; /* its class; 0 until tree_plan gives it one */
};

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
