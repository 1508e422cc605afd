/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for the rate channel: the datagram codec (proto/rate.h),
 * which the server runs on whatever a peer sends through the tunnel, and
 * the lease file's parser (channel/lease.h). Beyond not crashing: a message
 * accepted encodes back to the same bytes (the reserved byte aside) and
 * parses again to the same message; a newer version is refused with its
 * version, type and token; a lease list holds no key twice, no rate 0, no
 * more than LEASE_MAX, and written out the way lease_save writes it, reads
 * back the same with nothing skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "channel/lease.h"
#include "proto/rate.h"
#include "shape/peers.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool same_msg(const struct rate_msg *a, const struct rate_msg *b)
{
	return a->version == b->version && a->type == b->type && a->status == b->status &&
	       a->token == b->token && a->lease == b->lease && a->rate == b->rate &&
	       a->fallback == b->fallback;
}

static void check_msg(const uint8_t *data, size_t size)
{
	/* A heap copy of exactly size bytes: ASan sees a read past it. */
	uint8_t *copy = malloc(size ? size : 1);
	uint8_t back[RATE_MSG_SIZE];
	struct rate_msg m, again;
	int r;

	require(copy);
	memcpy(copy, data, size);
	memset(&m, 0xa5, sizeof(m));
	r = rate_msg_parse(copy, size, &m);
	if (r == -EPROTONOSUPPORT) {
		require(size >= RATE_MSG_SIZE && be32(copy) == RATE_MAGIC);
		require(copy[4] > RATE_VERSION && m.version == copy[4]);
		require(copy[5] <= RATE_ANSWER && m.type == (enum rate_type)copy[5]);
		require(m.token == be32(copy + 8));
		free(copy);
		return;
	}
	if (r < 0) {
		require(r == -EBADMSG);
		free(copy);
		return;
	}
	require(r == 0 && size >= RATE_MSG_SIZE && be32(copy) == RATE_MAGIC);
	require(m.version >= 1 && m.version <= RATE_VERSION);
	require(m.type == RATE_REQUEST || m.type == RATE_ANSWER);
	require(m.status < RATE_STATUS_MAX && (m.type == RATE_ANSWER || m.status == RATE_NONE));
	require(rate_msg_encode(&m, back, sizeof(back)) == 0);
	require(memcmp(back, copy, 7) == 0 && back[7] == 0);
	require(memcmp(back + 8, copy + 8, RATE_MSG_SIZE - 8) == 0);
	require(rate_msg_parse(back, sizeof(back), &again) == 0);
	require(same_msg(&m, &again));
	free(copy);
}

static void check_accept(const uint8_t *data, size_t size)
{
	uint16_t from = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;

	require(rate_accept(size, from, RATE_PORT) ==
		(size >= RATE_MSG_SIZE && size <= RATE_MSG_MAX && from >= 1024 && from != RATE_PORT));
}

static void check_leases(const uint8_t *data, size_t size)
{
	g_autoptr(GArray) leases = g_array_new(false, true, sizeof(struct rate_lease));
	g_autoptr(GArray) again = g_array_new(false, true, sizeof(struct rate_lease));
	g_autoptr(GHashTable) keys = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
							   (GDestroyNotify)g_bytes_unref, NULL);
	g_autoptr(GString) text = g_string_new(NULL);
	int skipped = lease_parse((const char *)data, size, leases);

	require(skipped >= 0 && (size_t)skipped <= size);
	require(leases->len <= LEASE_MAX);
	for (guint i = 0; i < leases->len; i++) {
		const struct rate_lease *l = &g_array_index(leases, struct rate_lease, i);
		GBytes *key = g_bytes_new(l->key, WG_KEY_LEN);
		char b64[45];

		require(l->rate > 0 && l->until > 0);
		require(g_hash_table_add(keys, key)); /* no key twice */
		wg_key_to_base64(l->key, b64);
		g_string_append_printf(text, "%s %" PRIu64 " %" PRId64 "\n", b64, l->rate,
				       l->until);
	}
	require(lease_parse(text->str, text->len, again) == 0);
	require(again->len == leases->len);
	require(!leases->len ||
		memcmp(again->data, leases->data, leases->len * sizeof(struct rate_lease)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_msg(data, size);
	check_accept(data, size);
	check_leases(data, size);
	return 0;
}
