// SPDX-License-Identifier: GPL-2.0-or-later
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "shape/units.h"
#include "tune/report.h"
#include "util/print.h"

/* Milliseconds in text; microseconds in JSON, -1 for infinite (probes lost). */
static void print_ms(const char *key, const char *fmt, double ms)
{
	print_double(NULL, fmt, ms);
	print_int(key, NULL, isfinite(ms) ? (int64_t)(ms * 1000) : -1);
}

/* A share: a percentage in text, 0..1 in JSON. */
static void print_share(const char *key, const char *fmt, double share)
{
	print_double(NULL, fmt, share * 100);
	print_double(key, NULL, share);
}

/* One step: a row of the table in text (label first), an object in JSON. */
static void print_step(const char *key, const char *label, const struct tune_step *s)
{
	char rate[UNITS_BUFSZ], good[UNITS_BUFSZ];
	struct tune_rpm rpm;
	double a50, a95;

	tune_added(s, &a50, &a95);
	tune_step_rpm(s, &rpm);
	if (s->rate)
		format_rate(rate, sizeof(rate), s->rate);
	else
		snprintf(rate, sizeof(rate), "-");
	format_rate(good, sizeof(good), (uint64_t)s->goodput);

	print_open_object(key);
	print_string(NULL, "  %-12s", label);
	print_uint_as("rate", " %10s", s->rate * 8, rate);
	print_uint_as("goodput", " %10s", (uint64_t)(s->goodput * 8), good);
	print_ms("idle_p50", " %7.1f", s->idle.p50);
	print_ms("idle_p95", " %7.1f", s->idle.p95);
	print_ms("loaded_p50", " %7.1f", s->loaded.p50);
	print_ms("loaded_p95", " %7.1f", s->loaded.p95);
	print_ms("added_p50", " %8.1f", a50);
	print_ms("added_p95", " %8.1f", a95);
	/* the queue's growth (ms per s) and where it leads in as long again */
	print_ms("trend", " %6.1f", s->trend.slope);
	print_ms("projected", " %6.1f", tune_projected(s));
	print_uint("lost", NULL, s->loaded.lost);
	print_uint("drops", " %6" PRIu64, s->drops);
	print_share("busiest_core", " %5.0f%%", s->busiest_core);
	/* responsiveness: round trips a minute, whole (0: no sample) */
	print_uint("rpm", " %6" PRIu64, (uint64_t)llround(rpm.rpm));
	print_uint("rpm_foreign", NULL, (uint64_t)llround(rpm.foreign));
	print_uint("rpm_loaded", NULL, (uint64_t)llround(rpm.loaded));
	print_string("grade", "  %s\n", bloat_grade(a50));
	print_close_object();
}

void tune_report_head(void)
{
	print_text("  %-12s %10s %10s %7s %7s %7s %7s %8s %8s %6s %6s %6s %6s %6s  %s\n", "step",
		   "rate", "goodput", "idle50", "idle95", "load50", "load95", "added50", "added95",
		   "trend", "proj", "drops", "core", "rpm", "grade");
}

void tune_report_row(const char *label, const struct tune_step *s)
{
	if (print_is_json())
		return;
	print_step(NULL, label, s);
	fflush(stdout);
}

/* A run that found no rate to shape at says why in one sentence (text). */
static void say_no_rate(const struct tune_run *t)
{
	char cap[UNITS_BUFSZ];
	struct tune_rpm rpm;
	double u50, u95;

	tune_added(&t->unshaped, &u50, &u95);
	tune_step_rpm(&t->unshaped, &rpm);
	format_rate(cap, sizeof(cap), (uint64_t)t->unshaped.goodput);
	if (t->search.phase == TUNE_NOT_BLOATED)
		print_text("not bloated: unshaped at %s, latency under load +%.1f ms (p95 +%.1f), "
			   "grade %s, %.0f RPM. Nothing to shape.\n", cap, u50, u95, bloat_grade(u50),
			   rpm.rpm);
	else
		print_text("no rate kept latency at the idle level (%s).\n",
			   tune_why_str(t->search.why));
}

/* A step beside the unshaped one (text). */
static void say_against_unshaped(const char *label, const struct tune_step *s,
				 const struct tune_step *unshaped)
{
	char good[UNITS_BUFSZ];
	struct tune_rpm rpm;
	double a50, a95;

	tune_added(s, &a50, &a95);
	tune_step_rpm(s, &rpm);
	format_rate(good, sizeof(good), (uint64_t)s->goodput);
	print_text("  %-12s goodput %s (%.0f%%), added latency %.1f ms (p95 %.1f), grade %s, "
		   "%.0f RPM\n",
		   label, good, 100.0 * s->goodput / unshaped->goodput, a50, a95, bloat_grade(a50),
		   rpm.rpm);
}

/*
 * The run as one object, or in text a sentence or two about the rate found
 * and a comparison with the unshaped line and the 20% rule (the steps are in
 * the table already). A format given only when shaped is text for a run that
 * found a rate; the other runs said all in say_no_rate().
 */
void tune_report(const struct tune_run *t)
{
	enum tune_phase ph = t->search.phase;
	bool shaped = ph != TUNE_NOT_BLOATED && ph != TUNE_FAILED;
	char rate[UNITS_BUFSZ], cap[UNITS_BUFSZ], single[UNITS_BUFSZ];
	struct tune_rpm urpm;
	double u50, u95;

	tune_added(&t->unshaped, &u50, &u95);
	tune_step_rpm(&t->unshaped, &urpm);
	format_rate(rate, sizeof(rate), t->search.result);
	format_rate(cap, sizeof(cap), (uint64_t)t->unshaped.goodput);
	snprintf(single, sizeof(single), "%.1f Mbit/s", t->single_stream_goodput * 8 / 1e6);

	print_open_object(NULL);
	print_string("ifname", "\n%s", t->o->ifname);
	print_string("direction", " %s: ", tune_run_dir(t));
	print_string("outcome", NULL, t->failure[0] ? "error" : tune_phase_str(ph));
	if (t->failure[0])
		print_string("error", NULL, t->failure);
	if (!shaped)
		say_no_rate(t);
	print_uint_as("rate", shaped ? "%s" : NULL, ph == TUNE_DONE ? t->search.result * 8 : 0,
		      rate);
	if (shaped)
		print_text(" (%.0f%% of the unshaped %s) in %u steps, ",
			   100.0 * (double)t->search.result / t->unshaped.goodput, cap,
			   t->search.steps);
	print_double("seconds", shaped ? "%.0f s\n" : NULL, t->seconds);
	print_uint("streams", NULL, t->o->streams);
	if (shaped)
		print_text("  unshaped:    goodput %s, added latency %.1f ms (p95 %.1f), "
			   "grade %s, %.0f RPM; ", cap, u50, u95, bloat_grade(u50), urpm.rpm);
	print_uint_as("single_stream_goodput", shaped ? "one stream alone %s\n" : NULL,
		      (uint64_t)(t->single_stream_goodput * 8), single);
	if (shaped) {
		say_against_unshaped("tuned:", &t->final, &t->unshaped);
		if (t->rule20.goodput > 0)
			say_against_unshaped("20% under:", &t->rule20, &t->unshaped);
	}
	if (print_is_json()) {
		print_step("unshaped", NULL, &t->unshaped);
		if (t->rule20.goodput > 0)
			print_step("rule_20_under", NULL, &t->rule20);
		print_open_array("steps");
		for (guint i = 0; t->steps && i < t->steps->len; i++)
			print_step(PRINT_ELEM, NULL, &g_array_index(t->steps, struct tune_step, i));
		print_close_array();
	}
	print_close_object();
}
