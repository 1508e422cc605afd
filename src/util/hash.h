/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A hash of a fixed-size key's bytes (FNV-1a), for GHashTables keyed by
 * small structs: zero their padding before hashing (g_new0, or a memset).
 */
#ifndef WGSHAPE_UTIL_HASH_H
#define WGSHAPE_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

static inline guint bytes_hash(const void *p, size_t len)
{
	const uint8_t *b = p;
	guint h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

#endif
