/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CPU busy per core from /proc/stat, so tune can tell a saturated core (the
 * measuring host as the bottleneck) from a slow link. Report the busiest core,
 * not only the average: an average across cores hid a saturated one in the
 * seed measurements.
 *
 * cpu_parse() and cpu_busy() are pure; cpu_read() is the only I/O.
 */
#ifndef WGSHAPE_CPU_H
#define WGSHAPE_CPU_H

#include <stddef.h>
#include <stdint.h>

struct cpu_times {
	int cpu; /* N of the "cpuN" line; -1 for the "cpu" line (all cores) */
	uint64_t total; /* user nice system idle iowait irq softirq steal (guest is in user) */
	uint64_t idle; /* idle + iowait */
};

/* One reading of /proc/stat. Cores absent from it (offline) are absent here. */
struct cpu_sample {
	struct cpu_times all;
	struct cpu_times *cores; /* owned, in the order of the file */
	size_t n;
};

void cpu_sample_free(struct cpu_sample *s); /* NULL is fine */

/* Parse the text of /proc/stat. -EINVAL when there is no well-formed "cpu" line. */
int cpu_parse(const char *text, struct cpu_sample **out);
/* Read and parse /proc/stat. */
int cpu_read(struct cpu_sample **out);

struct cpu_busy {
	double average; /* 0..1, all cores together (the "cpu" line) */
	double busiest; /* 0..1, the busiest single core */
	int busiest_cpu; /* its N; -1 when no core was in both samples */
	size_t n; /* cores in both samples */
};

/*
 * Busy fraction between two samples: (total - idle - iowait) / total, per
 * core, matched by core number (a core that went offline in between is left
 * out). A counter that went backwards (iowait can) counts as zero.
 */
void cpu_busy(const struct cpu_sample *before, const struct cpu_sample *after,
	      struct cpu_busy *out);
/* The busy fraction of core cpu, or -1 when it is not in both samples. */
double cpu_core_busy(const struct cpu_sample *before, const struct cpu_sample *after, int cpu);

#endif
