/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Big-endian fields, for the codecs of proto/ (tune.c, rate.c). */
#ifndef WGSHAPE_PROTO_INTERNAL_H
#define WGSHAPE_PROTO_INTERNAL_H

#include <stdint.h>

static inline void put_be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

#endif
