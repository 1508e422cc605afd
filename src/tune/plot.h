/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tune's chart: added latency and goodput against the shaper's rate, as SVG. */
#ifndef WGSHAPE_TUNE_PLOT_H
#define WGSHAPE_TUNE_PLOT_H

#include <stddef.h>

#include "tune/run.h"

/* A panel per run into the file at path; 0, or -EIO (logged). */
int tune_plot(const char *path, struct tune_run *const *runs, size_t n);

#endif
