// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The words of per-peer shaping that the rest of wgshape shares (config,
 * the rate channel, the state file): prefixes and WireGuard keys.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "shape/peers.h"

bool tc_prefix_contains(const struct tc_prefix *a, const struct tc_prefix *b)
{
	unsigned int full, rest;

	if (a->family != b->family || a->prefixlen > b->prefixlen)
		return false;
	full = a->prefixlen / 8;
	rest = a->prefixlen % 8;
	if (memcmp(a->addr, b->addr, full) != 0)
		return false;
	if (!rest)
		return true;
	return ((a->addr[full] ^ b->addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

const char *tc_prefix_str(const struct tc_prefix *p, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	inet_ntop(p->family, p->addr, addr, sizeof(addr));
	snprintf(buf, len, "%s/%u", addr, p->prefixlen);
	return buf;
}

int wg_key_from_base64(const char *s, uint8_t key[WG_KEY_LEN])
{
	g_autofree guchar *raw = NULL;
	gsize n = 0;

	/* 32 bytes are 43 characters and one '=': GLib skips junk, so check first */
	if (!s || strlen(s) != 44 || s[43] != '=')
		return -EINVAL;
	for (size_t i = 0; i < 43; i++)
		if (!g_ascii_isalnum(s[i]) && s[i] != '+' && s[i] != '/')
			return -EINVAL;
	raw = g_base64_decode(s, &n);
	if (!raw || n != WG_KEY_LEN)
		return -EINVAL;
	/*
	 * The last character's 2 low bits are no part of the key: set, the
	 * spelling is not the key's (wg refuses it, and a [peer] spelled so
	 * would name a key WireGuard shows otherwise).
	 */
	if (strchr("AEIMQUYcgkosw048", s[42]) == NULL)
		return -EINVAL;
	memcpy(key, raw, WG_KEY_LEN);
	return 0;
}

void wg_key_to_base64(const uint8_t key[WG_KEY_LEN], char out[45])
{
	g_autofree char *s = g_base64_encode(key, WG_KEY_LEN);

	snprintf(out, 45, "%s", s);
}

/*
 * A key is a Curve25519 point, as good as random, but made-up keys (tests,
 * benchmarks) are not: FNV-1a over all of it spreads both.
 */
guint wg_key_hash(gconstpointer key)
{
	const uint8_t *k = key;
	guint h = 2166136261u;

	for (size_t i = 0; i < WG_KEY_LEN; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

gboolean wg_key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, WG_KEY_LEN) == 0;
}

bool peer_leased(const struct peer_want *w)
{
	return !strcmp(w->source, PEER_SOURCE_LEASE);
}

static const char *const leaf_names[] = {
	[PEER_LEAF_LAZY] = "lazy",
	[PEER_LEAF_CAKE] = "cake",
	[PEER_LEAF_FQ_CODEL] = "fq_codel",
};

const char *peer_leaf_name(enum peer_leaf leaf)
{
	return (size_t)leaf < G_N_ELEMENTS(leaf_names) ? leaf_names[leaf] : NULL;
}

enum peer_leaf peer_leaf_of(const char *s)
{
	for (size_t i = 1; i < G_N_ELEMENTS(leaf_names); i++)
		if (!strcmp(s, leaf_names[i]))
			return (enum peer_leaf)i;
	return PEER_LEAF_UNSET;
}
