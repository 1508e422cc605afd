// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-rate-change IFACE [N]: N rate-only changes of the cake on IFACE
 * through wgshape's netlink path, in one process. Prints microseconds per
 * change. Asserts nothing about time; the lab's bench script compares it
 * with `tc qdisc change` (a process per change).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "netlink/kernel.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	struct cake_opts o = { .has = CAKE_HAS_RATE };
	struct qdisc_info root = { 0 };
	struct link_info link;
	struct netlink *nl;
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
	double t0, t1;
	int r;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: bench-rate-change IFACE [N]\n");
		return 2;
	}
	r = netlink_open(&nl);
	if (r == 0)
		r = netlink_link_get(nl, argv[1], &link);
	if (r == 0)
		r = netlink_qdisc_root(nl, link.ifindex, &root);
	if (r < 0 || strcmp(root.kind, "cake") != 0) {
		fprintf(stderr, "bench-rate-change: %s: needs cake as root qdisc (%s)\n", argv[1],
			r < 0 ? strerror(-r) : root.kind);
		return 1;
	}
	t0 = now_us();
	for (long i = 0; i < n; i++) {
		/* Alternate between two rates so every change is a real one. */
		o.rate = (i & 1) ? 10000000 / 8 : 11000000 / 8;
		r = netlink_cake_set(nl, link.ifindex, root.handle, &o, QDISC_CHANGE);
		if (r < 0) {
			fprintf(stderr, "bench-rate-change: change %ld: %s\n", i, strerror(-r));
			return 1;
		}
	}
	t1 = now_us();
	printf("netlink (in-process): %ld changes, %.1f us/change\n", n, (t1 - t0) / (double)n);
	qdisc_info_clear(&root);
	netlink_close(nl);
	return 0;
}
