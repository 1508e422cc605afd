/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * set's words into a shape_request, for the command line and the
 * configuration alike (a config key is turned into the same words).
 */
#ifndef WGSHAPE_SHAPE_WORDS_H
#define WGSHAPE_SHAPE_WORDS_H

#include <stddef.h>

#include "shape/shape.h"

/* 0, or -EINVAL with one line in err naming the word and what was wrong. */
int shape_words_parse(int argc, char **argv, struct shape_request *req, char *err, size_t errlen);
/*
 * tc's overhead keywords for the link under the tunnel (conservative,
 * ethernet): a link-overhead, added to the tunnel's own, with the link's mpu
 * and cell framing.
 */
struct shape_framing {
	const char *word;
	int link_overhead;
	uint32_t mpu; /* 0: left as it is */
	enum cake_atm atm;
};

/* The i-th, or NULL past the last. */
const struct shape_framing *shape_framing(size_t i);

#endif
