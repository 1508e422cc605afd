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

#endif
