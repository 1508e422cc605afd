/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What every fuzz target shares. */
#ifndef WGSHAPE_FUZZ_H
#define WGSHAPE_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

/* Not assert(): a release build with NDEBUG must still find bugs. */
#define require(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			abort();					\
		}							\
	} while (0)

#endif
