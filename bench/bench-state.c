// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-state [N...]: the time a state file with N per-peer classes takes to
 * write (state_save: GKeyFile's text, a temporary file, fsync, rename), to
 * read as this process wrote it (state_load: the file, then the state kept,
 * as the daemon does between rate requests), and to parse (state_parse, as
 * after another process's change or in a new process), default 1000 and
 * 10000 peers, each named, from the configuration, with a class of its own.
 * Every `set ... peer` and every rate request the daemon carries out reads
 * and writes it once. Run in a folder of the build tree (the loader refuses a
 * folder others can write, as /tmp). Prints figures (wall time), the best
 * of 5 runs; asserts nothing about time, says when what was read is not
 * what was written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <glib.h>

#include "shape/peers.h"
#include "shape/state.h"
#include "clock.h"

#define ROUNDS 5

static void make_state(long n, struct shape_state *st)
{
	g_autoptr(GRand) rnd = g_rand_new_with_seed(27);

	*st = (struct shape_state){ .ifindex = 7, .egress = true, .tree = true, .overhead = 60 };
	g_strlcpy(st->orig_kind, "noqueue", sizeof(st->orig_kind));
	g_strlcpy(st->source, "config /etc/wgshape/wgshape.conf:1", sizeof(st->source));
	st->peers = g_array_sized_new(false, true, sizeof(struct peer_want), (guint)n);
	for (long i = 0; i < n; i++) {
		struct peer_want w = { 0 };

		for (size_t b = 0; b < WG_KEY_LEN; b++)
			w.key[b] = (uint8_t)g_rand_int_range(rnd, 0, 256);
		w.rate = 2500000;
		w.minor = (uint16_t)(0x10 + i);
		g_snprintf(w.name, sizeof(w.name), "phone-%ld", i);
		g_snprintf(w.source, sizeof(w.source), "config /etc/wgshape/wgshape.conf:%ld",
			   4 * i + 3);
		g_array_append_val(st->peers, w);
	}
}

int main(int argc, char **argv)
{
	static const long def[] = { 1000, 10000 };
	int count = argc > 1 ? argc - 1 : (int)G_N_ELEMENTS(def);
	g_autofree char *dir = g_build_filename(g_get_current_dir(), "bench-state.d", NULL);

	state_cache_enable(); /* "cached read" is the daemon's */

	if (g_mkdir_with_parents(dir, 0700) < 0 || chmod(dir, 0700) < 0) {
		fprintf(stderr, "bench-state: %s: cannot make it\n", dir);
		return 1;
	}
	printf("%8s %10s %12s %12s %12s\n", "peers", "file KiB", "write ms", "read ms",
	       "parse ms");
	for (int i = 0; i < count; i++) {
		long n = argc > 1 ? strtol(argv[i + 1], NULL, 10) : def[i];
		struct shape_state st, back = { 0 };
		struct when rd = { 1e9, 1e9 }, wr = { 1e9, 1e9 }, pa = { 1e9, 1e9 };
		g_autofree char *text = NULL;
		gsize len = 0;
		g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
		struct stat sb = { 0 };

		if (n <= 0 || n > 60000) {
			fprintf(stderr, "usage: bench-state [N...] (1 to 60000 peers)\n");
			return 2;
		}
		make_state(n, &st);
		for (int r = 0; r < ROUNDS; r++) {
			struct when t0 = now(), took;

			if (state_save(dir, "wg0", &st) < 0) {
				fprintf(stderr, "bench-state: state_save failed\n");
				return 1;
			}
			took = since(t0);
			if (took.wall < wr.wall)
				wr = took;
			shape_state_clear(&back);
			t0 = now();
			if (state_load(dir, "wg0", &back) < 0) {
				fprintf(stderr, "bench-state: state_load failed\n");
				return 1;
			}
			took = since(t0);
			if (took.wall < rd.wall)
				rd = took;
		}
		if (!g_file_get_contents(path, &text, &len, NULL)) {
			fprintf(stderr, "bench-state: %s: cannot read it\n", path);
			return 1;
		}
		for (int r = 0; r < ROUNDS; r++) {
			struct when t0 = now(), took;

			shape_state_clear(&back);
			if (state_parse(text, len, &back) < 0) {
				fprintf(stderr, "bench-state: state_parse failed\n");
				return 1;
			}
			took = since(t0);
			if (took.wall < pa.wall)
				pa = took;
		}
		if (!back.peers || back.peers->len != st.peers->len ||
		    g_array_index(back.peers, struct peer_want, n - 1).minor !=
			    g_array_index(st.peers, struct peer_want, n - 1).minor)
			fprintf(stderr, "bench-state: %ld peers: what was read is not what was written\n", n);
		stat(path, &sb);
		printf("%8ld %10.1f %12.2f %12.2f %12.2f\n", n, (double)sb.st_size / 1024,
		       wr.wall * 1e3, rd.wall * 1e3, pa.wall * 1e3);
		fflush(stdout);
		unlink(path);
		shape_state_clear(&back);
		shape_state_clear(&st);
	}
	rmdir(dir);
	return 0;
}
