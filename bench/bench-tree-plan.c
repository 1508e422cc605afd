// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-tree-plan [N...]: the time the per-peer tree's planner (tree_plan +
 * tree_diff, no kernel) takes for N peers, each with a rate of its own and
 * an IPv4 and an IPv6 AllowedIP (default 1000 and 10000): from an empty
 * kernel (every class, leaf and filter to add), and again once the kernel
 * holds that tree and one peer's rate changed (one class change). Prints
 * figures and asserts nothing about time; it says when the plan is not the
 * one expected (a wrong count of changes). Each figure is the best of 5 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <glib.h>

#include "shape/tree-plan.h"
#include "clock.h"
#include "../tests/fake-kernel.h"

/* n peers with keys from a fixed seed, 10.a.b.c/32 and fd00::a:b:c/128 each, all wanted. */
static void make_peers(size_t n, struct wg_peer **peers, struct peer_want **wants)
{
	g_autoptr(GRand) rnd = g_rand_new_with_seed(27);

	*peers = g_new0(struct wg_peer, n);
	*wants = g_new0(struct peer_want, n);
	for (size_t i = 0; i < n; i++) {
		struct wg_peer *p = &(*peers)[i];
		uint32_t host = (uint32_t)i + 2;

		for (size_t b = 0; b < WG_KEY_LEN; b++)
			p->key[b] = (uint8_t)g_rand_int_range(rnd, 0, 256);
		p->endpoint_family = AF_INET;
		p->allowed = g_new0(struct tc_prefix, 2);
		p->n_allowed = 2;
		p->allowed[0].family = AF_INET;
		p->allowed[0].prefixlen = 32;
		p->allowed[0].addr[0] = 10;
		p->allowed[0].addr[1] = (uint8_t)(host >> 16);
		p->allowed[0].addr[2] = (uint8_t)(host >> 8);
		p->allowed[0].addr[3] = (uint8_t)host;
		p->allowed[1].family = AF_INET6;
		p->allowed[1].prefixlen = 128;
		p->allowed[1].addr[0] = 0xfd;
		p->allowed[1].addr[13] = (uint8_t)(host >> 16);
		p->allowed[1].addr[14] = (uint8_t)(host >> 8);
		p->allowed[1].addr[15] = (uint8_t)host;
		memcpy((*wants)[i].key, p->key, WG_KEY_LEN);
		(*wants)[i].rate = 125000 + 1000 * (i % 100);
	}
}

#define ROUNDS 5

/*
 * tree_plan + tree_diff, the best of ROUNDS (the first warms the allocator
 * up); the last round's plan is kept in *p (cleared by the caller).
 */
static struct when plan_best(struct tree_input *in, const struct tree_kernel *k,
			     struct tree_plan *p, guint *n_ops)
{
	struct when best = { 1e9, 1e9 };

	for (int r = 0; r < ROUNDS; r++) {
		g_autoptr(GArray) ops = g_array_new(false, true, sizeof(struct tree_op));
		struct when t0 = now(), took;

		if (r)
			tree_plan_clear(p);
		tree_plan_init(p);
		if (tree_plan(in, p) < 0)
			fprintf(stderr, "bench-tree-plan: tree_plan failed\n");
		tree_diff(p, k, ops);
		took = since(t0);
		*n_ops = ops->len;
		if (took.wall < best.wall)
			best = took;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const long def[] = { 1000, 10000 };
	int count = argc > 1 ? argc - 1 : (int)G_N_ELEMENTS(def);

	printf("%8s %25s %25s\n", "", "from empty", "one rate changed");
	printf("%8s %8s %8s %8s %8s %8s %8s\n", "peers", "changes", "wall ms", "cpu ms", "changes",
	       "wall ms", "cpu ms");
	for (int i = 0; i < count; i++) {
		long n = argc > 1 ? strtol(argv[i + 1], NULL, 10) : def[i];
		struct wg_peer *peers;
		struct peer_want *wants;
		struct tree_kernel empty = { 0 }, kv;
		struct fake_kernel k;
		struct tree_plan p;
		struct when full, one;
		guint full_ops, one_ops;

		if (n <= 0 || n > TREE_PEER_MINOR_LAST - TREE_PEER_MINOR_FIRST + 1) {
			fprintf(stderr, "usage: bench-tree-plan [N...] (1 to %u peers)\n",
				TREE_PEER_MINOR_LAST - TREE_PEER_MINOR_FIRST + 1);
			return 2;
		}
		make_peers((size_t)n, &peers, &wants);
		{
			struct tree_input in = { peers, (size_t)n, wants, (size_t)n, 0, { 0 } };

			full = plan_best(&in, &empty, &p, &full_ops);
			kernel_from_plan(&p, &k);
			tree_plan_clear(&p);
			kv = (struct tree_kernel){ (void *)k.classes->data, k.classes->len,
						   (void *)k.qdiscs->data, k.qdiscs->len,
						   (void *)k.filters->data, k.filters->len };
			wants[n / 2].rate += 1000;
			one = plan_best(&in, &kv, &p, &one_ops);
			tree_plan_clear(&p);
		}
		/* the cap and default classes, a class, a leaf and two filters a peer */
		if (full_ops != 3 + 4 * (guint)n || one_ops != 1)
			fprintf(stderr, "bench-tree-plan: %ld peers: %u and %u changes, not %ld and 1\n",
				n, full_ops, one_ops, 3 + 4 * n);
		printf("%8ld %8u %8.1f %8.1f %8u %8.1f %8.1f\n", n, full_ops, full.wall * 1e3,
		       full.cpu * 1e3, one_ops, one.wall * 1e3, one.cpu * 1e3);
		fflush(stdout);
		kernel_free(&k);
		for (long j = 0; j < n; j++)
			g_free(peers[j].allowed);
		g_free(peers);
		g_free(wants);
	}
	return 0;
}
