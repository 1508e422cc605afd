/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tune's report through util/print.h: a step table printed as the steps are
 * taken and a summary per direction (text), or one object per direction
 * (JSON, between print_begin() and print_end(): rates in bit/s, latencies in
 * microseconds, -1 for a latency lost probes made infinite).
 */
#ifndef WGSHAPE_TUNE_REPORT_H
#define WGSHAPE_TUNE_REPORT_H

#include "tune/run.h"

/* The step table's heading, and one row (text only: JSON has them in tune_report). */
void tune_report_head(void);
void tune_report_row(const char *label, const struct tune_step *s);

/* What one direction's run found: a summary, or its object with every step. */
void tune_report(const struct tune_run *t);

#endif
