// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-config [N...]: the time config_parse_data and config_load take for a
 * file of N [interface] sections of three keys each (default 1000, 10000 and
 * 100000). Prints figures and asserts nothing about time: a reload and every
 * dispatch parse the whole configuration, so this should grow linearly.
 *
 * config_load reads the file from a private folder made in the current
 * folder, since the loader refuses a folder on a path others can write
 * (/tmp); when it refuses this one too the column says why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "config/config.h"
#include "util/err.h"
#include "clock.h"

static GString *sections(long n)
{
	GString *s = g_string_new("[daemon]\nenforce = yes\n");

	for (long i = 0; i < n; i++)
		g_string_append_printf(s, "[interface wg%ld]\negress = %ldkbit\ningress = 5mbit\n"
				       "nat = yes\n", i, 1000 + i % 1000);
	return s;
}

/* config_load of text written to a private folder; -errno, why says why. */
static int load(const GString *text, struct when *took, guint *n, char *why, size_t whylen)
{
	g_autofree char *dir = g_strdup("bench-config-XXXXXX");
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = NULL;
	struct when t0;
	int r;

	if (!g_mkdtemp_full(dir, 0700))
		return -errno;
	path = g_build_filename(dir, "wgshape.conf", NULL);
	if (!g_file_set_contents(path, text->str, (gssize)text->len, NULL) ||
	    chmod(path, 0444) < 0) {
		g_remove(path);
		g_rmdir(dir);
		return -EIO;
	}
	t0 = now();
	r = config_load(path, true, &cfg, why, whylen);
	*took = since(t0);
	if (r == 0)
		*n = cfg->ifaces->len;
	g_remove(path);
	g_rmdir(dir);
	return r;
}

int main(int argc, char **argv)
{
	static const long def[] = { 1000, 10000, 100000 };
	int count = argc > 1 ? argc - 1 : (int)G_N_ELEMENTS(def);

	printf("%9s %9s %23s %23s\n", "", "", "config_parse_data", "config_load");
	printf("%9s %9s %11s %11s %11s %11s\n", "sections", "bytes", "wall s", "cpu s", "wall s",
	       "cpu s");
	for (int i = 0; i < count; i++) {
		long n = argc > 1 ? strtol(argv[i + 1], NULL, 10) : def[i];
		g_autoptr(GString) text = NULL;
		g_autoptr(config_t) cfg = config_new();
		char why[ERR_SIZE] = "";
		struct when t0, parse, loaded = { 0 };
		guint got = 0;

		if (n <= 0) {
			fprintf(stderr, "usage: bench-config [N...]\n");
			return 2;
		}
		text = sections(n);
		t0 = now();
		config_parse_data(cfg, "bench.conf", text->str, text->len);
		parse = since(t0);
		if (cfg->ifaces->len != (guint)n || cfg->warnings->len)
			fprintf(stderr, "bench-config: %ld sections gave %u, %u warnings\n", n,
				cfg->ifaces->len, cfg->warnings->len);
		if (load(text, &loaded, &got, why, sizeof(why)) < 0)
			printf("%9ld %9zu %11.3f %11.3f   (config_load: %s)\n", n, text->len,
			       parse.wall, parse.cpu, why[0] ? why : "could not write the file");
		else
			printf("%9ld %9zu %11.3f %11.3f %11.3f %11.3f\n", n, text->len, parse.wall,
			       parse.cpu, loaded.wall, loaded.cpu);
		if (!why[0] && got != (guint)n)
			fprintf(stderr, "bench-config: config_load kept %u of %ld sections\n", got,
				n);
		fflush(stdout);
	}
	return 0;
}
