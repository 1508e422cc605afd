// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape plot-trace FILE OUT.svg
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>

#include "adapt/trace.h"
#include "cli/cli.h"
#include "util/log.h"
#include "util/safe.h"

/* Half a gigabyte is a week of one direction at 20 lines a second. */
#define TRACE_MAX (512u << 20)

const char plot_trace_usage[] =
	"Usage: wgshape plot-trace FILE OUT.svg\n"
	"\n"
	"Draw the trace of the daemon's rate adaptation (the file adapt-log = names in\n"
	"wgshape.conf) as an SVG chart: a panel per direction with the shaper's rate and\n"
	"what it sent, in Mbit/s, over the one-way delay added above the baseline, in ms,\n"
	"against time. A daemon restart starts the time again in FILE; the chart runs it\n"
	"on. OUT.svg is replaced whole, or left as it was when FILE cannot be read.\n";

/* FILE's text into s: a regular file of at most TRACE_MAX bytes, or said why (log_msg escapes). */
static int read_trace(const char *path, GString *s, struct stat *st)
{
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		log_err("plot-trace: %s: %s", path, g_strerror(-r));
		return r;
	}
	r = fstat(fd, st) < 0 ? -errno : S_ISREG(st->st_mode) ? 0 : -EINVAL;
	if (r == 0)
		r = safe_read(fd, s, TRACE_MAX);
	close(fd);
	if (r == -EINVAL)
		log_err("plot-trace: %s: not a regular file", path);
	else if (r == -EFBIG)
		log_err("plot-trace: %s: over %u MiB; plot a part of it (tail -n 100000 FILE >PART)",
			path, TRACE_MAX >> 20);
	else if (r < 0)
		log_err("plot-trace: %s: %s", path, g_strerror(-r));
	return r;
}

int plot_trace_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct adapt_trace_row));
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GString) svg = g_string_new(NULL);
	g_autoptr(GError) gerr = NULL;
	g_autofree char *base = NULL, *title = NULL;
	struct stat st, ost;
	char err[256];

	if (argc != 3) {
		log_err("plot-trace: takes FILE and OUT.svg (see wgshape plot-trace --help)");
		return EXIT_USAGE;
	}
	if (read_trace(argv[1], text, &st) < 0)
		return EXIT_FAIL;
	/* drawing over the trace itself would lose it */
	if (stat(argv[2], &ost) == 0 && ost.st_dev == st.st_dev && ost.st_ino == st.st_ino) {
		log_err("plot-trace: %s is FILE itself; name another OUT.svg", argv[2]);
		return EXIT_FAIL;
	}
	if (adapt_trace_parse(text->str, text->len, rows, err, sizeof(err)) < 0) {
		log_err("plot-trace: %s: %s", argv[1], err);
		return EXIT_FAIL;
	}
	if (!rows->len) {
		log_err("plot-trace: %s: no records (an adaptation trace has lines like "
			"'12.345 egress 20000000 150 31000 19500000 none')",
			argv[1]);
		return EXIT_FAIL;
	}
	base = g_path_get_basename(argv[1]);
	title = g_strdup_printf("wgshape adaptation: %s, %u records over %.1f s", base, rows->len,
				g_array_index(rows, struct adapt_trace_row, rows->len - 1).t -
					g_array_index(rows, struct adapt_trace_row, 0).t);
	adapt_trace_svg(svg, (const struct adapt_trace_row *)(void *)rows->data, rows->len, title);
	/* a temporary file beside OUT.svg, renamed over it: whole or not at all */
	if (!g_file_set_contents(argv[2], svg->str, (gssize)svg->len, &gerr)) {
		log_err("plot-trace: %s", gerr->message);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
