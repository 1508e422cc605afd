// SPDX-License-Identifier: GPL-2.0-or-later
/* The memory check before cake leaves (shape/memory.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "shape/memory.h"

enum leaves_fit leaves_fit(uint64_t n, uint64_t avail_kib, uint64_t total_kib,
			   struct leaves_need *out)
{
	struct leaves_need x;

	x.reserve_kib = MAX((uint64_t)LEAVES_RESERVE_MIN_KIB, total_kib / LEAVES_RESERVE_SHARE);
	x.need_kib = n * CAKE_LEAF_KIB;
	x.room_kib = avail_kib > x.reserve_kib ? avail_kib - x.reserve_kib : 0;
	if (out)
		*out = x;
	if (!n)
		return LEAVES_FIT;
	if (x.need_kib > x.room_kib)
		return LEAVES_REFUSED;
	return x.need_kib > x.room_kib / 2 ? LEAVES_TIGHT : LEAVES_FIT;
}

int meminfo_read(const char *path, uint64_t *avail_kib, uint64_t *total_kib)
{
	g_autofree char *text = NULL;
	bool have_avail = false, have_total = false;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return -EIO;
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		unsigned long long v;

		if (sscanf(*l, "MemAvailable: %llu kB", &v) == 1) {
			*avail_kib = v;
			have_avail = true;
		} else if (sscanf(*l, "MemTotal: %llu kB", &v) == 1) {
			*total_kib = v;
			have_total = true;
		}
	}
	return have_avail && have_total ? 0 : -ENODATA;
}
