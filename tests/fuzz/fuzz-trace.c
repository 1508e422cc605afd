/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for the adaptation trace's reader (adapt/trace.h), which
 * plot-trace runs on a file it is given. Beyond not crashing: what it
 * accepts has T that never goes back, a known direction and why, and
 * draws as well-formed markup; what it refuses leaves the rows as they
 * were and says which line, on one line.
 */
#include <stdint.h>
#include <string.h>
#include <glib.h>

#include "adapt/trace.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_svg(const struct adapt_trace_row *rows, size_t n, const char *title)
{
	static const GMarkupParser none = { 0 };
	g_autoptr(GString) svg = g_string_new(NULL);
	GMarkupParseContext *ctx = g_markup_parse_context_new(&none, 0, NULL, NULL);
	bool ok;

	adapt_trace_svg(svg, rows, n, title);
	ok = g_markup_parse_context_parse(ctx, svg->str, (gssize)svg->len, NULL) &&
	     g_markup_parse_context_end_parse(ctx, NULL);
	g_markup_parse_context_free(ctx);
	require(ok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct adapt_trace_row));
	struct adapt_trace_row first = { .t = -1 };
	/* a heap copy of exactly size bytes: ASan sees a read past it */
	g_autofree char *text = g_memdup2(data, size ? size : 1);
	g_autofree char *title = g_strndup((const char *)data, MIN(size, 64));
	char err[256];

	g_array_append_val(rows, first);
	if (adapt_trace_parse(text, size, rows, err, sizeof(err)) < 0) {
		require(rows->len == 1);
		require(!strncmp(err, "line ", 5) && !strchr(err, '\n'));
		return 0;
	}
	for (guint i = 1; i < rows->len; i++) {
		const struct adapt_trace_row *r = &g_array_index(rows, struct adapt_trace_row, i);

		require(r->t >= 0 && (i == 1 || r->t >= r[-1].t));
		require((unsigned int)r->dir < ADAPT_TRACE_NDIRS);
		require(strcmp(adapt_why_name(r->why), "?") != 0);
	}
	if (rows->len > 1 && rows->len < 2000)
		check_svg(&g_array_index(rows, struct adapt_trace_row, 1), rows->len - 1, title);
	return 0;
}
