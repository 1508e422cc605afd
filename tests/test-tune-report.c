/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tune's report and chart (tune/report.c, tune/plot.c) on runs made up here:
 * the text and the JSON byte for byte as scripts and readers know them
 * (tests/vm/scenario-tune.sh reads .[0].steps, .outcome, .rate,
 * .unshaped.goodput, .seconds, .direction), and the chart unchanged.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "tune/plot.h"
#include "tune/report.h"
#include "tune/run.h"
#include "util/json.h"
#include "util/print.h"

static const struct tune_opts opts = { .ifname = "wg0", .streams = 4 };

static struct tune_step step(uint64_t rate, double goodput, double loaded_p50, double loaded_p95,
			     size_t lost, uint64_t drops, double core)
{
	struct tune_step s = { .rate = rate, .goodput = goodput, .drops = drops,
			       .busiest_core = core };

	s.idle = (struct lat_stats){ .n = 20, .min = 19, .p50 = 20.1, .p95 = 22.3, .max = 23 };
	s.loaded = (struct lat_stats){ .n = 40 - lost, .lost = lost, .p50 = loaded_p50,
				       .p95 = loaded_p95, .tm95 = loaded_p50 };
	/* the load's own connections: twice the probes' RTT (a queue of their own) */
	s.self = (struct lat_stats){ .n = 30, .p50 = 2 * loaded_p50, .tm95 = 2 * loaded_p50 };
	return s;
}

/* egress, done: two steps (the second lost probes), the 20% rule compared */
static void fab_done(struct tune_run *t)
{
	struct tune_step s1 = step(1300000, 1200000.25, 90.0, INFINITY, 3, 44, 0.7);
	struct tune_step s2 = step(1210000, 1160000, 22.0, 26.0, 0, 2, 0.995);

	/* the first step's queue still grew: 2.5 ms/s over 3 s from 60 ms */
	s1.trend = (struct lat_trend){ .n = 27, .slope = 2.5, .end_ms = 60, .span = 3 };
	/* the confirmation's held */
	s2.trend = (struct lat_trend){ .n = 110, .slope = -0.25, .end_ms = 21.5, .span = 11 };
	t->dir = TUNE_EGRESS;
	t->single = step(0, 712345.6, 40.2, 55.5, 0, 3, 0.51);
	t->single_stream_goodput = 712345.6;
	t->unshaped = step(0, 1234567.8, 120.25, 180.75, 1, 17, 0.734);
	t->rule20 = step(987654, 950000, 21.0, 25.0, 0, 1, 0.4);
	t->steps = g_array_new(FALSE, TRUE, sizeof(struct tune_step));
	g_array_append_val(t->steps, s1);
	g_array_append_val(t->steps, s2);
	t->final = s2;
	tune_search_init(&t->search, NULL);
	t->search.phase = TUNE_DONE;
	t->search.result = 1191234;
	t->search.steps = 2;
	t->seconds = 41.37;
}

/* ingress, not bloated */
static void fab_not_bloated(struct tune_run *t)
{
	t->dir = TUNE_INGRESS;
	t->unshaped = step(0, 1234567.8, 22.25, 24.75, 0, 0, 0.3);
	t->steps = g_array_new(FALSE, TRUE, sizeof(struct tune_step));
	tune_search_init(&t->search, NULL);
	t->search.phase = TUNE_NOT_BLOATED;
	t->seconds = 12.5;
}

/* egress, bad even at the floor */
static void fab_failed(struct tune_run *t)
{
	struct tune_step s1 = step(617283, 600000, 90.0, 140.0, 3, 44, 0.7);

	t->dir = TUNE_EGRESS;
	t->unshaped = step(0, 1234567.8, 120.25, 180.75, 1, 17, 0.734);
	t->steps = g_array_new(FALSE, TRUE, sizeof(struct tune_step));
	g_array_append_val(t->steps, s1);
	tune_search_init(&t->search, NULL);
	t->search.phase = TUNE_FAILED;
	t->search.why = TUNE_WHY_FLOOR;
	t->search.steps = 1;
	t->seconds = 20;
}

/* ingress, stopped before the first measurement */
static void fab_error(struct tune_run *t)
{
	t->dir = TUNE_INGRESS;
	t->steps = g_array_new(FALSE, TRUE, sizeof(struct tune_step));
	tune_search_init(&t->search, NULL);
	snprintf(t->failure, sizeof(t->failure), "no route to the probe target (10.0.0.1): "
		 "Network is unreachable");
	t->seconds = 0.25;
}

static void run_free(struct tune_run *t)
{
	g_array_unref(t->steps);
}

typedef void (*print_fn)(void);

/* What fn writes to stdout. */
static char *capture(print_fn fn)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);
	char *out = NULL;
	size_t len = 0;
	long size;

	g_assert_nonnull(tmp);
	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	fn();
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	size = ftell(tmp);
	g_assert_cmpint(size, >=, 0);
	rewind(tmp);
	out = g_malloc0((size_t)size + 1);
	len = fread(out, 1, (size_t)size, tmp);
	g_assert_cmpuint(len, ==, (size_t)size);
	fclose(tmp);
	return out;
}

/* clang-format off */
static const char text_report[] =
	"  step               rate    goodput  idle50  idle95  load50  load95  added50  added95  trend   proj  drops   core    rpm  grade\n"
	"  unshaped x1           -   5698Kbit    20.1    22.3    40.2    55.5     20.1     33.2    0.0    0.0      3    51%   1119  A\n"
	"  unshaped              -   9876Kbit    20.1    22.3   120.2   180.8    100.2    158.4    0.0    0.0     17    73%    374  C\n"
	"  search        10400Kbit   9600Kbit    20.1    22.3    90.0     inf     69.9      inf    2.5   47.4     44    70%    500  C\n"
	"  confirm        9680Kbit   9280Kbit    20.1    22.3    22.0    26.0      1.9      3.7   -0.2    1.4      2   100%   2045  A+\n"
	"  20% under      7901Kbit   7600Kbit    20.1    22.3    21.0    25.0      0.9      2.7    0.0    0.0      1    40%   2143  A+\n"
	"\n"
	"wg0 egress: 9529Kbit (96% of the unshaped 9876Kbit) in 2 steps, 41 s\n"
	"  unshaped:    goodput 9876Kbit, added latency 100.2 ms (p95 158.4), grade C, 374 RPM; one stream alone 5.7 Mbit/s\n"
	"  tuned:       goodput 9280Kbit (94%), added latency 1.9 ms (p95 3.7), grade A+, 2045 RPM\n"
	"  20% under:   goodput 7600Kbit (77%), added latency 0.9 ms (p95 2.7), grade A+, 2143 RPM\n"
	"\n"
	"wg0 ingress: not bloated: unshaped at 9876Kbit, latency under load +2.1 ms (p95 +2.4), grade A+, 2022 RPM. Nothing to shape.\n"
	"\n"
	"wg0 egress: no rate kept latency at the idle level (latency rose under load even at the lowest rate tried).\n";

static const char json_report[] =
	"[\n"
	"  {\n"
	"    \"ifname\" : \"wg0\",\n"
	"    \"direction\" : \"egress\",\n"
	"    \"outcome\" : \"done\",\n"
	"    \"rate\" : 9529872,\n"
	"    \"seconds\" : 41.369999999999997,\n"
	"    \"streams\" : 4,\n"
	"    \"single_stream_goodput\" : 5698764,\n"
	"    \"unshaped\" : {\n"
	"      \"rate\" : 0,\n"
	"      \"goodput\" : 9876542,\n"
	"      \"idle_p50\" : 20100,\n"
	"      \"idle_p95\" : 22300,\n"
	"      \"loaded_p50\" : 120250,\n"
	"      \"loaded_p95\" : 180750,\n"
	"      \"added_p50\" : 100150,\n"
	"      \"added_p95\" : 158450,\n"
	"      \"trend\" : 0,\n"
	"      \"projected\" : 0,\n"
	"      \"lost\" : 1,\n"
	"      \"drops\" : 17,\n"
	"      \"busiest_core\" : 0.73399999999999999,\n"
	"      \"rpm\" : 374,\n"
	"      \"rpm_foreign\" : 499,\n"
	"      \"rpm_loaded\" : 249,\n"
	"      \"grade\" : \"C\"\n"
	"    },\n"
	"    \"rule_20_under\" : {\n"
	"      \"rate\" : 7901232,\n"
	"      \"goodput\" : 7600000,\n"
	"      \"idle_p50\" : 20100,\n"
	"      \"idle_p95\" : 22300,\n"
	"      \"loaded_p50\" : 21000,\n"
	"      \"loaded_p95\" : 25000,\n"
	"      \"added_p50\" : 899,\n"
	"      \"added_p95\" : 2699,\n"
	"      \"trend\" : 0,\n"
	"      \"projected\" : 0,\n"
	"      \"lost\" : 0,\n"
	"      \"drops\" : 1,\n"
	"      \"busiest_core\" : 0.40000000000000002,\n"
	"      \"rpm\" : 2143,\n"
	"      \"rpm_foreign\" : 2857,\n"
	"      \"rpm_loaded\" : 1429,\n"
	"      \"grade\" : \"A+\"\n"
	"    },\n"
	"    \"steps\" : [\n"
	"      {\n"
	"        \"rate\" : 10400000,\n"
	"        \"goodput\" : 9600002,\n"
	"        \"idle_p50\" : 20100,\n"
	"        \"idle_p95\" : 22300,\n"
	"        \"loaded_p50\" : 90000,\n"
	"        \"loaded_p95\" : -1,\n"
	"        \"added_p50\" : 69900,\n"
	"        \"added_p95\" : -1,\n"
	"        \"trend\" : 2500,\n"
	"        \"projected\" : 47400,\n"
	"        \"lost\" : 3,\n"
	"        \"drops\" : 44,\n"
	"        \"busiest_core\" : 0.69999999999999996,\n"
	"        \"rpm\" : 500,\n"
	"        \"rpm_foreign\" : 667,\n"
	"        \"rpm_loaded\" : 333,\n"
	"        \"grade\" : \"C\"\n"
	"      },\n"
	"      {\n"
	"        \"rate\" : 9680000,\n"
	"        \"goodput\" : 9280000,\n"
	"        \"idle_p50\" : 20100,\n"
	"        \"idle_p95\" : 22300,\n"
	"        \"loaded_p50\" : 22000,\n"
	"        \"loaded_p95\" : 26000,\n"
	"        \"added_p50\" : 1899,\n"
	"        \"added_p95\" : 3699,\n"
	"        \"trend\" : -250,\n"
	"        \"projected\" : 1399,\n"
	"        \"lost\" : 0,\n"
	"        \"drops\" : 2,\n"
	"        \"busiest_core\" : 0.995,\n"
	"        \"rpm\" : 2045,\n"
	"        \"rpm_foreign\" : 2727,\n"
	"        \"rpm_loaded\" : 1364,\n"
	"        \"grade\" : \"A+\"\n"
	"      }\n"
	"    ]\n"
	"  },\n"
	"  {\n"
	"    \"ifname\" : \"wg0\",\n"
	"    \"direction\" : \"ingress\",\n"
	"    \"outcome\" : \"error\",\n"
	"    \"error\" : \"no route to the probe target (10.0.0.1): Network is unreachable\",\n"
	"    \"rate\" : 0,\n"
	"    \"seconds\" : 0.25,\n"
	"    \"streams\" : 4,\n"
	"    \"single_stream_goodput\" : 0,\n"
	"    \"unshaped\" : {\n"
	"      \"rate\" : 0,\n"
	"      \"goodput\" : 0,\n"
	"      \"idle_p50\" : 0,\n"
	"      \"idle_p95\" : 0,\n"
	"      \"loaded_p50\" : 0,\n"
	"      \"loaded_p95\" : 0,\n"
	"      \"added_p50\" : -1,\n"
	"      \"added_p95\" : -1,\n"
	"      \"trend\" : 0,\n"
	"      \"projected\" : 0,\n"
	"      \"lost\" : 0,\n"
	"      \"drops\" : 0,\n"
	"      \"busiest_core\" : 0.0,\n"
	"      \"rpm\" : 0,\n"
	"      \"rpm_foreign\" : 0,\n"
	"      \"rpm_loaded\" : 0,\n"
	"      \"grade\" : \"F\"\n"
	"    },\n"
	"    \"steps\" : []\n"
	"  }\n"
	"]\n";
/* clang-format on */

/* What tune prints for a run that found a rate, one that needs none and one that failed. */
static void print_text_report(void)
{
	struct tune_run done = { .o = &opts }, calm = { .o = &opts }, bad = { .o = &opts };

	fab_done(&done);
	fab_not_bloated(&calm);
	fab_failed(&bad);
	print_begin(false);
	tune_report_head();
	tune_report_row("unshaped x1", &done.single);
	tune_report_row("unshaped", &done.unshaped);
	tune_report_row("search", &g_array_index(done.steps, struct tune_step, 0));
	tune_report_row("confirm", &g_array_index(done.steps, struct tune_step, 1));
	tune_report_row("20% under", &done.rule20);
	tune_report(&done);
	tune_report(&calm);
	tune_report(&bad);
	print_end();
	run_free(&done);
	run_free(&calm);
	run_free(&bad);
}

/* With -j: the rows stay out of it, a run that failed is an object too. */
static void print_json_report(void)
{
	struct tune_run done = { .o = &opts }, failed = { .o = &opts };

	fab_done(&done);
	fab_error(&failed);
	print_begin(true);
	print_open_array(NULL);
	tune_report_row("unshaped", &done.unshaped);
	tune_report(&done);
	tune_report(&failed);
	print_close_array();
	print_end();
	run_free(&done);
	run_free(&failed);
}

static void test_text(void)
{
	g_autofree char *out = capture(print_text_report);

	g_assert_cmpstr(out, ==, text_report);
}

static void test_json(void)
{
	g_autofree char *out = capture(print_json_report);

	g_assert_cmpstr(out, ==, json_report);
}

static void test_plot(void)
{
	struct tune_run done = { .o = &opts }, bad = { .o = &opts };
	struct tune_run *runs[] = { &done, &bad };
	g_autofree char *dir = g_dir_make_tmp("test-tune-plot-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "tune.svg", NULL);
	g_autofree char *svg = NULL, *sum = NULL;
	gsize len;

	fab_done(&done);
	fab_failed(&bad);
	g_assert_cmpint(tune_plot(path, runs, 2), ==, 0);
	g_assert_true(g_file_get_contents(path, &svg, &len, NULL));
	g_assert_true(g_str_has_prefix(svg, "<svg xmlns='http://www.w3.org/2000/svg' width='720' "
					    "height='840' "));
	g_assert_true(g_str_has_suffix(svg, "</svg>\n"));
	g_assert_nonnull(strstr(svg, ">wg0 egress: added latency (ms, left; p95 dashed)"));
	g_assert_nonnull(strstr(svg, ">target 5 ms</text>"));
	g_assert_nonnull(strstr(svg, ">tuned 9.53 Mbit/s</text>"));
	/* The chart as tune drew it when this test was written: a change to it shows here. */
	sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)svg, len);
	g_assert_cmpstr(sum, ==, "3ae2566b70b877e5043f6ce9f0ec557774a063a0e4bd060783ebea57283a6fc0");
	g_unlink(path);
	g_rmdir(dir);
	run_free(&done);
	run_free(&bad);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	print_use_json(&wgshape_json_out); /* linked, not loaded */
	g_test_add_func("/tune/report/text", test_text);
	g_test_add_func("/tune/report/json", test_json);
	g_test_add_func("/tune/plot", test_plot);
	return g_test_run();
}
