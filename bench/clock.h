/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The benchmarks' clock: wall time, and the process's CPU time (what other
 * loads on the machine do not inflate).
 */
#ifndef WGSHAPE_BENCH_CLOCK_H
#define WGSHAPE_BENCH_CLOCK_H

#include <time.h>

struct when {
	double wall, cpu;
};

static inline double secs(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline struct when now(void)
{
	return (struct when){ secs(CLOCK_MONOTONIC), secs(CLOCK_PROCESS_CPUTIME_ID) };
}

static inline struct when since(struct when t0)
{
	struct when t = now();

	return (struct when){ t.wall - t0.wall, t.cpu - t0.cpu };
}

#endif
