/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The adaptation trace (adapt/trace.h): what the writer writes the reader
 * reads back, a restart's header keeps T running on, a line that is not a
 * record is refused by its number, and the chart is well-formed SVG with a
 * line per series and the title escaped.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "adapt/trace.h"

#define ROWS(a) ((struct adapt_trace_row *)(void *)(a)->data)

static GArray *rows_new(void)
{
	return g_array_new(FALSE, FALSE, sizeof(struct adapt_trace_row));
}

static char *tmp_path(const char *name)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *dir = g_dir_make_tmp("wgshape-trace-XXXXXX", &err);

	g_assert_no_error(err);
	return g_build_filename(dir, name, NULL);
}

static void rm_tmp(const char *path)
{
	g_autofree char *dir = g_path_get_dirname(path);

	g_unlink(path);
	g_rmdir(dir);
}

static const struct adapt_trace_row written[] = {
	{ 0, ADAPT_TRACE_EGRESS, 20000000, 150, 31000, 19500000, ADAPT_NONE },
	{ 0, ADAPT_TRACE_DOWNLOAD, 80000000, -40, 0, 0, ADAPT_IDLE },
	{ 0, ADAPT_TRACE_EGRESS, 8000000, 42000, 75000, 21000000, ADAPT_QUEUE },
	{ 0, ADAPT_TRACE_INGRESS, 18446744073709551615ull, INT64_MIN, 4294967295u,
	  18446744073709551615ull, ADAPT_LOST },
	{ 0, ADAPT_TRACE_EGRESS, 8400000, 0, 30000, 8000000, ADAPT_RAISE },
	{ 0, ADAPT_TRACE_EGRESS, 8200000, 0, 30000, 8000000, ADAPT_SETTLE },
};

static void write_rows(const char *path, uint64_t start, uint64_t step)
{
	struct adapt_trace *t = NULL;

	g_assert_cmpint(adapt_trace_open(path, start, &t), ==, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(written); i++)
		g_assert_cmpint(adapt_trace_write(t, start + 1 + i * step, &written[i]), ==, 0);
	adapt_trace_close(t);
}

static void assert_rows(const struct adapt_trace_row *got, double t0, double step)
{
	for (size_t i = 0; i < G_N_ELEMENTS(written); i++) {
		g_assert_cmpfloat_with_epsilon(got[i].t, t0 + (double)i * step, 1e-9);
		g_assert_cmpint(got[i].dir, ==, written[i].dir);
		g_assert_cmpuint(got[i].rate_bps, ==, written[i].rate_bps);
		g_assert_cmpint(got[i].delay_us, ==, written[i].delay_us);
		g_assert_cmpuint(got[i].rtt_us, ==, written[i].rtt_us);
		g_assert_cmpuint(got[i].load_bps, ==, written[i].load_bps);
		g_assert_cmpint(got[i].why, ==, written[i].why);
	}
}

static void test_roundtrip(void)
{
	g_autofree char *path = tmp_path("trace");
	g_autofree char *text = NULL;
	g_autoptr(GArray) rows = rows_new();
	g_auto(GStrv) lines = NULL;
	struct stat st;
	char err[256];
	gsize len;

	/* a second run appends: its T starts at 0 again, the reader runs it on */
	write_rows(path, 5000000, 250000);
	write_rows(path, 900000000, 2000);
	g_assert_true(g_file_get_contents(path, &text, &len, NULL));
	g_test_message("%s", text);
	lines = g_strsplit(text, "\n", -1);
	g_assert_cmpstr(lines[0], ==, ADAPT_TRACE_HEADER);
	g_assert_true(g_str_has_prefix(lines[1], "# opened "));
	g_assert_cmpstr(lines[2], ==, "0.000 egress 20000000 150 31000 19500000 none");
	g_assert_cmpstr(lines[4], ==, "0.500 egress 8000000 42000 75000 21000000 queue");
	g_assert_cmpstr(lines[5], ==, "0.750 ingress 18446744073709551615 -9223372036854775808 "
				      "4294967295 18446744073709551615 lost");
	g_assert_cmpstr(lines[8], ==, ADAPT_TRACE_HEADER);
	g_assert_cmpstr(lines[11], ==, "0.002 download 80000000 -40 0 0 idle");
	g_assert_cmpint(g_stat(path, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 0777, ==, 0644 & ~(mode_t)0022 & 0777);

	g_assert_cmpint(adapt_trace_parse(text, len, rows, err, sizeof(err)), ==, 0);
	g_assert_cmpuint(rows->len, ==, 2 * G_N_ELEMENTS(written));
	assert_rows(ROWS(rows), 0, 0.25);
	/* the second segment after the first's last T (1.25 s) */
	assert_rows(ROWS(rows) + G_N_ELEMENTS(written), 1.25, 0.002);
	for (guint i = 1; i < rows->len; i++)
		g_assert_cmpfloat(ROWS(rows)[i].t, >=, ROWS(rows)[i - 1].t);
	rm_tmp(path);
}

static void test_open(void)
{
	g_autofree char *path = tmp_path("trace");
	g_autofree char *link = g_strconcat(path, ".link", NULL);
	g_autofree char *text = NULL;
	g_autofree char *dir = g_path_get_dirname(path);
	struct adapt_trace *t = NULL;

	/* a last line cut short gets its newline before the header */
	g_assert_true(g_file_set_contents(path, "0.000 egress 1 2", -1, NULL));
	g_assert_cmpint(adapt_trace_open(path, 0, &t), ==, 0);
	adapt_trace_close(t);
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_assert_true(g_str_has_prefix(text, "0.000 egress 1 2\n" ADAPT_TRACE_HEADER "\n"));

	/* not through a link, not into a folder or a FIFO */
	g_assert_cmpint(symlink(path, link), ==, 0);
	g_assert_cmpint(adapt_trace_open(link, 0, &t), ==, -ELOOP);
	g_assert_cmpint(adapt_trace_open(dir, 0, &t), <, 0);
	g_unlink(link);
	g_unlink(path);
	g_assert_cmpint(mkfifo(path, 0600), ==, 0);
	g_assert_cmpint(adapt_trace_open(path, 0, &t), <, 0);
	adapt_trace_close(NULL);
	rm_tmp(path);
}

/*
 * logrotate moves the trace away (issue 28, item 8): within a second the
 * writer starts a new file at the path, headed, and the old one keeps what
 * it had; while nothing moved, nothing is reopened.
 */
static void test_rotate(void)
{
	g_autofree char *path = tmp_path("trace");
	g_autofree char *old = g_strconcat(path, ".1", NULL);
	g_autofree char *text = NULL, *was = NULL;
	g_autoptr(GArray) rows = rows_new();
	struct adapt_trace *t = NULL;
	char err[256];
	gsize len;

	g_assert_cmpint(adapt_trace_open(path, 1000000, &t), ==, 0);
	g_assert_cmpint(adapt_trace_write(t, 1500000, &written[0]), ==, 0);
	g_assert_cmpint(adapt_trace_write(t, 3000000, &written[1]), ==, 0); /* checked: same */
	g_assert_cmpint(g_rename(path, old), ==, 0);
	g_assert_cmpint(adapt_trace_write(t, 3500000, &written[2]), ==, 0); /* not yet a second */
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	g_assert_cmpint(adapt_trace_write(t, 4500000, &written[3]), ==, 0);
	g_assert_cmpint(adapt_trace_write(t, 4750000, &written[4]), ==, 0);
	adapt_trace_close(t);

	g_assert_true(g_file_get_contents(old, &was, &len, NULL));
	g_assert_cmpint(adapt_trace_parse(was, len, rows, err, sizeof(err)), ==, 0);
	g_assert_cmpuint(rows->len, ==, 3);
	g_assert_null(strstr(strstr(was, "# opened") + 1, "# opened")); /* one header only */
	g_array_set_size(rows, 0);
	g_assert_true(g_file_get_contents(path, &text, &len, NULL));
	g_test_message("%s", text);
	g_assert_true(g_str_has_prefix(text, ADAPT_TRACE_HEADER "\n# opened "));
	g_assert_cmpint(adapt_trace_parse(text, len, rows, err, sizeof(err)), ==, 0);
	g_assert_cmpuint(rows->len, ==, 2);
	g_assert_cmpint(ROWS(rows)[0].dir, ==, written[3].dir);
	g_assert_cmpfloat_with_epsilon(ROWS(rows)[1].t, 0.25, 1e-9);
	g_unlink(old);
	rm_tmp(path);
}

static void test_comments(void)
{
	static const char text[] = "# a note before the header\n"
				   "\n"
				   "3.000 egress 1000 5 0 1000 none\n" /* a trace cut with tail */
				   ADAPT_TRACE_HEADER "\n"
				   "# opened 2026-12-05T10:00:00Z\n"
				   "0.000 egress 1000 5 0 1000 none\r\n"
				   "# anywhere\n"
				   "2.500 ingress 2000 -5 100 0 raise\n" ADAPT_TRACE_HEADER "\n"
				   "1.000 ingress 3000 0 0 0 queue"; /* no newline at the end */
	g_autoptr(GArray) rows = rows_new();
	char err[256];

	g_assert_cmpint(adapt_trace_parse(text, strlen(text), rows, err, sizeof(err)), ==, 0);
	g_assert_cmpuint(rows->len, ==, 4);
	g_assert_cmpfloat(ROWS(rows)[0].t, ==, 3);
	g_assert_cmpfloat(ROWS(rows)[1].t, ==, 3);
	g_assert_cmpfloat(ROWS(rows)[2].t, ==, 5.5);
	g_assert_cmpfloat(ROWS(rows)[3].t, ==, 6.5);
	g_assert_cmpint(ROWS(rows)[3].why, ==, ADAPT_QUEUE);
	g_assert_cmpint(ROWS(rows)[2].delay_us, ==, -5);

	g_array_set_size(rows, 0);
	g_assert_cmpint(adapt_trace_parse("", 0, rows, err, sizeof(err)), ==, 0);
	g_assert_cmpuint(rows->len, ==, 0);
}

static void test_bad(void)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "hello\n", "line 1: not a trace record: 1 fields" },
		{ ADAPT_TRACE_HEADER "\n1.0 egress 1 2 3 4\n", "line 2: not a trace record: 6 fields" },
		{ "1.0 egress 1 2 3 4 none x\n", "line 1: not a trace record: 8 fields" },
		{ "1.0 egress 1  3 4 none\n", "line 1: not a trace record: field 4 is empty" },
		{ "1.0  egress 1 2 3 none\n", "field 2 is empty" },
		{ "1.0  egress 1 2 3 4 none\n", "not a trace record: 8 fields, not 7" },
		{ "1.0 egress 1 2 3 none \n", "field 7 is empty" },
		{ "x egress 1 2 3 4 none\n", "t: 'x' is not seconds" },
		{ "-1 egress 1 2 3 4 none\n", "t: '-1'" },
		{ "1e3 egress 1 2 3 4 none\n", "t: '1e3'" },
		{ "1.2.3 egress 1 2 3 4 none\n", "t: '1.2.3'" },
		{ "1 up 1 2 3 4 none\n", "dir: 'up' is none of egress download ingress" },
		{ "1 egress -1 2 3 4 none\n", "rate: '-1' is not a whole number" },
		{ "1 egress 18446744073709551616 2 3 4 none\n", "rate: '18446744073709551616'" },
		{ "1 egress 1 2.5 3 4 none\n", "delay: '2.5'" },
		{ "1 egress 1 2 4294967296 4 none\n", "rtt: '4294967296' is not a whole number from 0 "
						      "to 4294967295" },
		{ "1 egress 1 2 3 x none\n", "load: 'x'" },
		{ "1 egress 1 2 3 4 fast\n",
		  "why: 'fast' is none of none queue settle raise idle lost stall" },
		{ "# x\n\n2 egress 1 2 3 4 none\n1 egress 1 2 3 4 none\n",
		  "line 4: t 1.000 is before the line above's 2.000" },
		{ "# wgshape adapt trace 2: t dir rate\n", "line 1: a trace of version 2; this "
							   "wgshape reads version 1" },
		{ "# wgshape adapt trace x\n", "line 1: a trace header without a version" },
		{ "1 egress 1 2 3 4 none\n1 egress 1\0 2 3 4 none\n", "line 2: not a trace record: "
								      "a NUL byte" },
	};
	g_autoptr(GArray) rows = rows_new();
	struct adapt_trace_row keep = { .t = 42 };
	g_autofree char *longline = g_strnfill(5000000, '7');
	g_autofree char *longfield = g_strdup_printf("1 %.100s 1 2 3 4 none", longline);
	char err[256];

	g_array_append_val(rows, keep);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		size_t len = strlen(bad[i].text);

		if (strstr(bad[i].says, "NUL"))
			len = sizeof("1 egress 1 2 3 4 none\n1 egress 1\0 2 3 4 none\n") - 1;
		err[0] = '\0';
		g_assert_cmpint(adapt_trace_parse(bad[i].text, len, rows, err, sizeof(err)), ==,
				-EINVAL);
		g_test_message("%s -> %s", bad[i].text, err);
		g_assert_nonnull(strstr(err, bad[i].says));
		g_assert_null(strchr(err, '\n'));
		/* rows as they were */
		g_assert_cmpuint(rows->len, ==, 1);
		g_assert_cmpfloat(ROWS(rows)[0].t, ==, 42);
	}
	/* a long line is not quoted whole */
	g_assert_cmpint(adapt_trace_parse(longline, strlen(longline), rows, err, sizeof(err)), ==,
			-EINVAL);
	g_assert_nonnull(strstr(err, "line 1: not a trace record: 5000000 bytes long"));
	g_assert_cmpint(adapt_trace_parse(longfield, strlen(longfield), rows, err, sizeof(err)), ==,
			-EINVAL);
	g_assert_nonnull(strstr(err, "dir: '77777777777777777777777777777777...' is none"));
	/* no room for the message is fine */
	g_assert_cmpint(adapt_trace_parse("x", 1, rows, NULL, 0), ==, -EINVAL);
}

static guint count(const char *s, const char *what)
{
	guint n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* Parsed as markup: well-formed, or the test fails with GMarkup's reason. */
static void assert_well_formed(const char *svg)
{
	static const GMarkupParser none = { 0 };
	g_autoptr(GMarkupParseContext) ctx = g_markup_parse_context_new(&none, 0, NULL, NULL);
	g_autoptr(GError) err = NULL;

	g_markup_parse_context_parse(ctx, svg, -1, &err);
	if (!err)
		g_markup_parse_context_end_parse(ctx, &err);
	g_assert_no_error(err);
}

static void test_svg(void)
{
	g_autoptr(GArray) rows = rows_new();
	g_autoptr(GString) svg = g_string_new(NULL);
	g_autoptr(GString) one = g_string_new(NULL);
	g_autoptr(GString) big = g_string_new(NULL);
	g_autoptr(GArray) many = rows_new();

	for (size_t i = 0; i < G_N_ELEMENTS(written); i++) {
		struct adapt_trace_row r = written[i];

		r.t = (double)i * 0.25;
		if (r.dir == ADAPT_TRACE_INGRESS) /* a sane ingress, or the axes span 10^13 */
			r.rate_bps = 9000000, r.load_bps = 100, r.delay_us = 80000;
		g_array_append_val(rows, r);
	}
	adapt_trace_svg(svg, ROWS(rows), rows->len, "wg0 <&'\"> \x1b[2J\xff trace");
	g_test_message("%s", svg->str);
	assert_well_formed(svg->str);
	g_assert_true(g_str_has_prefix(svg->str, "<svg "));
	/* three panels: egress, download, ingress, in that order; three lines each */
	g_assert_cmpuint(count(svg->str, "<polyline"), ==, 9);
	g_assert_true(strstr(svg->str, ">egress<") < strstr(svg->str, ">download<"));
	g_assert_true(strstr(svg->str, ">download<") < strstr(svg->str, ">ingress<"));
	g_assert_nonnull(strstr(svg->str, "wg0 &lt;&amp;&apos;&quot;&gt; \xef\xbf\xbd[2J"));
	g_assert_null(strchr(svg->str, '\x1b'));
	g_assert_true(g_utf8_validate(svg->str, -1, NULL));
	/* the queue's cut and the lost far end are marked */
	g_assert_cmpuint(count(svg->str, "<circle"), >=, 2 + 3 * 2);

	/* one direction: one panel */
	adapt_trace_svg(one, ROWS(rows), 1, "one");
	assert_well_formed(one->str);
	g_assert_cmpuint(count(one->str, "<polyline"), ==, 3);
	g_assert_null(strstr(one->str, ">download<"));

	/* four hours at 20 a second are thinned to what the pixels show */
	for (guint i = 0; i < 4 * 3600 * 20; i++) {
		struct adapt_trace_row r = {
			.t = i / 20.0,
			.rate_bps = 10000000 + (i % 97) * 10000,
			.delay_us = (int64_t)(i % 13) * 1000,
			.load_bps = 9000000,
			.why = i % 50 ? ADAPT_NONE : ADAPT_QUEUE,
		};
		g_array_append_val(many, r);
	}
	adapt_trace_svg(big, ROWS(many), many->len, "hours");
	assert_well_formed(big->str);
	g_test_message("hours: %zu bytes of SVG", big->len);
	g_assert_cmpuint(big->len, <, 200000);
	g_assert_cmpuint(count(big->str, "<polyline"), ==, 3);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	umask(0022);
	g_test_add_func("/adapt/trace/roundtrip", test_roundtrip);
	g_test_add_func("/adapt/trace/open", test_open);
	g_test_add_func("/adapt/trace/rotate", test_rotate);
	g_test_add_func("/adapt/trace/comments", test_comments);
	g_test_add_func("/adapt/trace/bad", test_bad);
	g_test_add_func("/adapt/trace/svg", test_svg);
	return g_test_run();
}
