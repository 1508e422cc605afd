/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The memory check before the per-peer tree gets cake leaves: cake takes its
 * tables when it is made, whatever its rate or memlimit (bench-peers: 1,056
 * KiB a leaf at 1,000 peers, so 1 GiB), and a small VPS has 1-4 GiB. Asking
 * the kernel for more than it has ends in its out-of-memory killer, not in
 * an error: wgshape refuses first. leaves_fit is pure (tests/test-shape.c).
 */
#ifndef WGSHAPE_SHAPE_MEMORY_H
#define WGSHAPE_SHAPE_MEMORY_H

#include <stdint.h>

/* What one cake leaf is counted to take, KiB. */
#define CAKE_LEAF_KIB 1024u
/* Always left free: at least this, KiB (64 MiB)... */
#define LEAVES_RESERVE_MIN_KIB (64u << 10)
/* ... or this share of the machine's memory (1/16), whichever is more. */
#define LEAVES_RESERVE_SHARE 16u

enum leaves_fit {
	LEAVES_FIT, /* well within what is available */
	LEAVES_TIGHT, /* over half of what is available above the reserve: a warning */
	LEAVES_REFUSED, /* more than is available above the reserve */
};

struct leaves_need {
	uint64_t need_kib; /* what the new leaves take */
	uint64_t room_kib; /* what is available above the reserve (0: none) */
	uint64_t reserve_kib;
};

/* n new cake leaves on a machine with avail_kib of total_kib available (MemAvailable, MemTotal). */
enum leaves_fit leaves_fit(uint64_t n, uint64_t avail_kib, uint64_t total_kib,
			   struct leaves_need *out);

/* MemAvailable and MemTotal of a /proc/meminfo at path, KiB; -errno, -ENODATA without them. */
int meminfo_read(const char *path, uint64_t *avail_kib, uint64_t *total_kib);

#endif
