// SPDX-License-Identifier: GPL-2.0-or-later
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- statistics -------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Type 7: linear between the closest ranks of the sorted x[0..n). */
static double percentile(const double *x, size_t n, double p)
{
	double h = (double)(n - 1) * p;
	size_t i = (size_t)h;

	if (i + 1 >= n)
		return x[n - 1];
	return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}

void lat_stats_compute(double *samples, size_t n, size_t lost, struct lat_stats *out)
{
	double sum = 0;
	size_t keep;

	memset(out, 0, sizeof(*out));
	out->n = n;
	out->lost = lost;
	if (!n)
		return;
	qsort(samples, n, sizeof(*samples), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += samples[i];
	out->min = samples[0];
	out->max = samples[n - 1];
	out->mean = sum / (double)n;
	out->p50 = percentile(samples, n, 0.50);
	out->p95 = percentile(samples, n, 0.95);
	/* the trimmed mean: the lowest ceil(0.95 n), the top 5% left out */
	keep = (n * 95 + 99) / 100;
	sum = 0;
	for (size_t i = 0; i < keep; i++)
		sum += samples[i];
	out->tm95 = sum / (double)keep;
}

/* The median of x[0..n) (n > 0), sorted in place. */
static double median(double *x, size_t n)
{
	qsort(x, n, sizeof(*x), cmp_double);
	return percentile(x, n, 0.5);
}

#define TREND_MIN 9 /* three a third */

/*
 * The median RTT and the mean sending time of ok[from, to), with buf for
 * scratch.
 */
static void third(const struct lat_sample *ok, size_t from, size_t to, double *buf, double *rtt,
		  double *t)
{
	double sum = 0;

	for (size_t i = from; i < to; i++) {
		buf[i - from] = ok[i].rtt_ms;
		sum += ok[i].t;
	}
	*rtt = median(buf, to - from);
	*t = sum / (double)(to - from);
}

void lat_trend_compute(const struct lat_sample *samples, size_t n, struct lat_trend *out)
{
	struct lat_sample *ok = NULL;
	double *buf = NULL, mid_rtt, mid_t, end_t;
	size_t m = 0, a, b;

	memset(out, 0, sizeof(*out));
	if (n < TREND_MIN)
		return;
	ok = malloc(n * sizeof(*ok));
	buf = malloc(n * sizeof(*buf));
	if (!ok || !buf)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (samples[i].rtt_ms >= 0 && isfinite(samples[i].rtt_ms))
			ok[m++] = samples[i];
	if (m < TREND_MIN)
		goto out;
	a = m / 3;
	b = m - m / 3;
	third(ok, a, b, buf, &mid_rtt, &mid_t);
	third(ok, b, m, buf, &out->end_ms, &end_t);
	out->n = m;
	out->span = ok[m - 1].t - ok[0].t;
	out->slope = end_t > mid_t ? (out->end_ms - mid_rtt) / (end_t - mid_t) : 0;
out:
	free(ok);
	free(buf);
}

static const struct {
	double below;
	const char *grade;
} grades[] = {
	{ 5, "A+" }, { 30, "A" }, { 60, "B" }, { 200, "C" }, { 400, "D" },
};

const char *bloat_grade(double added_ms)
{
	for (size_t i = 0; i < ARRAY_SIZE(grades); i++)
		if (added_ms < grades[i].below)
			return grades[i].grade;
	return "F"; /* also NaN: every comparison above was false */
}

double rpm(double loaded_rtt_ms)
{
	if (!(loaded_rtt_ms > 0))
		return 0;
	return 60000.0 / loaded_rtt_ms;
}

/* ---- one step ---------------------------------------------------------- */

void tune_step_rpm(const struct tune_step *s, struct tune_rpm *out)
{
	out->foreign = s->loaded.n ? rpm(s->loaded.tm95) : 0;
	out->loaded = s->self.n ? rpm(s->self.tm95) : 0;
	if (out->foreign > 0 && out->loaded > 0)
		out->rpm = (out->foreign + out->loaded) / 2;
	else
		out->rpm = out->foreign > 0 ? out->foreign : out->loaded;
}

void tune_added(const struct tune_step *s, double *p50_ms, double *p95_ms)
{
	const struct lat_stats *l = &s->loaded, *i = &s->idle;
	size_t all = l->n + l->lost;
	double p50, p95;

	if (!l->n) {
		*p50_ms = *p95_ms = INFINITY;
		return;
	}
	/* Lost probes rank after every answer: if they fill the top 5% of the
	 * ranks, the 95th percentile is one of them. */
	p50 = l->lost * 2 > all ? INFINITY : l->p50 - (i->n ? i->p50 : 0);
	p95 = l->lost * 20 > all ? INFINITY : l->p95 - (i->n ? i->p95 : 0);
	*p50_ms = p50 > 0 ? p50 : 0;
	*p95_ms = p95 > 0 ? p95 : 0;
}

double tune_projected(const struct tune_step *s)
{
	const struct lat_trend *tr = &s->trend;
	double v;

	if (!tr->n)
		return 0;
	v = tr->end_ms + (tr->slope > 0 ? tr->slope * tr->span : 0) -
	    (s->idle.n ? s->idle.p50 : 0);
	return v > 0 ? v : 0;
}

bool tune_step_growing(const struct tune_step *s, const struct tune_target *t)
{
	const struct lat_trend *tr = &s->trend;

	return tr->n && tr->slope * tr->span >= t->p50_ms && tune_projected(s) > t->p95_ms;
}

bool tune_step_ok(const struct tune_step *s, const struct tune_target *t)
{
	double p50, p95;

	tune_added(s, &p50, &p95);
	return p50 <= t->p50_ms && p95 <= t->p95_ms && !tune_step_growing(s, t);
}

/* ---- the search -------------------------------------------------------- */

void tune_params_default(struct tune_params *p)
{
	*p = (struct tune_params){
		.target = { .p50_ms = 5, .p95_ms = 15 },
		.first_frac = 0.9,
		.low_frac = 0.5,
		.high_frac = 1.5,
		.headroom = 0.05,
		.resolution = 0.01,
		.backoff = 0.015,
		.full_frac = 0.98,
		.max_steps = 10,
		.confirm_steps = 2,
		.max_remeasures = 2,
		.step_ms = 4000,
		.confirm_ms = 12000,
	};
}

void tune_params_ingress(struct tune_params *p)
{
	tune_params_default(p);
	p->backoff = 0.04;
}

static const char *const why_str[TUNE_WHY_MAX] = {
	[TUNE_WHY_NONE] = "",
	[TUNE_WHY_DOUBT_BAD] = "measuring again: latency rose with the load under the capacity",
	[TUNE_WHY_DOUBT_IDLE] = "measuring again: the load did not fill the shaper",
	[TUNE_WHY_CHECK_TOP] = "measuring the lowest bad rate again before the end",
	[TUNE_WHY_CONFIRM_LOWER] = "the confirmation failed: trying lower",
	[TUNE_WHY_NO_LOAD] = "no goodput without shaping: the load did not get through",
	[TUNE_WHY_FLOOR] = "latency rose under load even at the lowest rate tried",
	[TUNE_WHY_CONFIRM] = "no rate held its latency when confirmed, within the step limit",
};

const char *tune_why_str(enum tune_why why)
{
	return (unsigned int)why < TUNE_WHY_MAX ? why_str[why] : "?";
}

static const char *const phase_str[] = {
	[TUNE_UNSHAPED] = "unshaped",	[TUNE_SEARCHING] = "searching",
	[TUNE_CONFIRMING] = "confirming", [TUNE_DONE] = "done",
	[TUNE_NOT_BLOATED] = "not bloated", [TUNE_FAILED] = "failed",
};

const char *tune_phase_str(enum tune_phase phase)
{
	return (unsigned int)phase < ARRAY_SIZE(phase_str) ? phase_str[phase] : "?";
}

void tune_search_init(struct tune_search *s, const struct tune_params *params)
{
	memset(s, 0, sizeof(*s));
	if (params)
		s->p = *params;
	else
		tune_params_default(&s->p);
	/* At least one search step and one confirmation. */
	if (s->p.max_steps < 2)
		s->p.max_steps = 2;
	if (s->p.confirm_steps < 1)
		s->p.confirm_steps = 1;
	if (s->p.confirm_steps >= s->p.max_steps)
		s->p.confirm_steps = s->p.max_steps - 1;
	s->phase = TUNE_UNSHAPED;
}

bool tune_search_running(const struct tune_search *s)
{
	return s->phase == TUNE_UNSHAPED || s->phase == TUNE_SEARCHING ||
	       s->phase == TUNE_CONFIRMING;
}

unsigned int tune_search_step_ms(const struct tune_search *s)
{
	return s->phase == TUNE_CONFIRMING && s->p.confirm_ms ? s->p.confirm_ms : s->p.step_ms;
}

static uint64_t frac_of(uint64_t x, double f)
{
	double r = (double)x * f + 0.5;

	return r < 1 ? 1 : (uint64_t)r;
}

static unsigned int search_budget(const struct tune_search *s)
{
	return s->p.max_steps - s->p.confirm_steps;
}

static void finish(struct tune_search *s, enum tune_phase phase, enum tune_why why)
{
	s->phase = phase;
	s->why = why;
	s->next_rate = 0;
	s->remeasure = false;
}

/* The most a result may be: what lets the capacity through, no more. */
static uint64_t top_rate(const struct tune_search *s)
{
	double top = (double)s->capacity * (s->rate_per_goodput > 0 ? s->rate_per_goodput : 1);

	return top < 1 ? 1 : (uint64_t)top;
}

static void confirm_at(struct tune_search *s, uint64_t rate, enum tune_why why)
{
	uint64_t top = frac_of(top_rate(s), 1 - s->p.backoff);

	if (rate > top)
		rate = top;
	if (s->steps >= s->p.max_steps || s->confirms >= s->p.confirm_steps) {
		finish(s, TUNE_FAILED, TUNE_WHY_CONFIRM);
		return;
	}
	s->phase = TUNE_CONFIRMING;
	s->why = why;
	s->next_rate = rate ? rate : 1;
}

static bool converged(const struct tune_search *s)
{
	return s->hi - s->lo <= 1 || (double)s->hi <= (double)s->lo * (1 + s->p.resolution);
}

/* After a verdict: the next rate, or the confirmation. */
static void plan(struct tune_search *s)
{
	bool out = s->steps >= search_budget(s);

	if (s->lo_known_good) {
		if (!converged(s) && !out) {
			s->next_rate = s->lo + (s->hi - s->lo) / 2;
		} else if (!out && s->hi_known_bad && !s->top_checked) {
			/* The result hangs on the lowest bad rate, and near the
			 * top its goodput cannot say if it was noise. */
			s->next_rate = s->hi;
			s->remeasure = true;
			s->remeasures++;
			s->why = TUNE_WHY_CHECK_TOP;
		} else {
			confirm_at(s, frac_of(s->lo, 1 - s->p.backoff), TUNE_WHY_NONE);
		}
		return;
	}
	/* Nothing good yet: the floor itself, while a step is left for it. */
	if (converged(s) || s->steps + 1 >= search_budget(s))
		s->next_rate = s->lo;
	else
		s->next_rate = s->lo + (s->hi - s->lo) / 2;
}

/* What this rate lets through as goodput, as far as the search knows. */
static double allowed_goodput(const struct tune_search *s, uint64_t rate)
{
	double g = s->rate_per_goodput > 0 ? (double)rate / s->rate_per_goodput : (double)rate;

	return g < (double)s->capacity ? g : (double)s->capacity;
}

/*
 * A step whose latency and goodput disagree. Bad latency with the load held
 * under the capacity by the shaper: the queue should have stayed in cake.
 * Good latency with the load far under what the shaper allows: not a test.
 */
static enum tune_why doubt(const struct tune_search *s, bool ok, double goodput)
{
	if (!ok)
		return goodput < s->p.full_frac * (double)s->capacity ? TUNE_WHY_DOUBT_BAD
								      : TUNE_WHY_NONE;
	return goodput < 0.5 * allowed_goodput(s, s->next_rate) ? TUNE_WHY_DOUBT_IDLE
								: TUNE_WHY_NONE;
}

/* The median within target and the queue not growing: only the p95 was bad. */
static bool median_ok(const struct tune_search *s, const struct tune_step *st)
{
	double p50, p95;

	tune_added(st, &p50, &p95);
	return p50 <= s->p.target.p50_ms && !tune_step_growing(st, &s->p.target);
}

static bool second_look_allowed(const struct tune_search *s)
{
	/* Every confirmation may have one (a load that did not fill the
	 * shaper), while a step is left. */
	if (s->phase == TUNE_CONFIRMING)
		return s->steps < s->p.max_steps && s->confirms < s->p.confirm_steps;
	if (s->doubts >= s->p.max_remeasures)
		return false;
	/* Keep a step for the floor while nothing is known good. */
	if (s->lo_known_good || s->next_rate == s->lo)
		return s->steps < search_budget(s);
	return s->steps + 1 < search_budget(s);
}

static void feed_unshaped(struct tune_search *s, const struct tune_step *st)
{
	double g = st->goodput > 0 ? st->goodput : 0;

	s->capacity = (uint64_t)g;
	if (!s->capacity) {
		finish(s, TUNE_FAILED, TUNE_WHY_NO_LOAD);
		return;
	}
	if (tune_step_ok(st, &s->p.target)) {
		finish(s, TUNE_NOT_BLOATED, TUNE_WHY_NONE);
		return;
	}
	s->phase = TUNE_SEARCHING;
	s->lo = frac_of(s->capacity, s->p.low_frac);
	s->hi = frac_of(s->capacity, s->p.high_frac);
	if (s->hi <= s->lo)
		s->hi = s->lo + 1;
	s->hi_next = s->hi;
	s->next_rate = frac_of(s->capacity, s->p.first_frac);
	if (s->next_rate <= s->lo || s->next_rate >= s->hi)
		plan(s);
}

static void search_good(struct tune_search *s, uint64_t rate, double goodput)
{
	double ceiling;

	s->lo = rate;
	s->lo_known_good = true;
	/* The load got more through than unshaped: the capacity was more. */
	if (goodput > (double)s->capacity)
		s->capacity = (uint64_t)goodput;
	if (goodput > 0 && (!s->rate_per_goodput || (double)rate / goodput < s->rate_per_goodput))
		s->rate_per_goodput = (double)rate / goodput;
	if (!s->rate_per_goodput)
		return;
	/* The bottleneck is near capacity * rate_per_goodput in shaper bytes. */
	ceiling = (double)s->capacity * s->rate_per_goodput * (1 + s->p.headroom);
	if (ceiling > (double)s->capacity * s->p.high_frac)
		ceiling = (double)s->capacity * s->p.high_frac;
	if (ceiling < (double)s->hi && ceiling > (double)s->lo * (1 + s->p.resolution)) {
		s->hi_next = s->hi;
		s->hi = (uint64_t)ceiling;
		s->hi_known_bad = false;
	}
}

void tune_search_feed(struct tune_search *s, const struct tune_step *st)
{
	uint64_t rate = s->next_rate;
	double goodput = st->goodput > 0 ? st->goodput : 0;
	bool second = s->remeasure;
	enum tune_why doubted = s->why, why;
	bool ok;

	if (!tune_search_running(s))
		return;
	if (s->phase == TUNE_UNSHAPED) {
		feed_unshaped(s, st);
		return;
	}
	s->steps++;
	if (s->phase == TUNE_CONFIRMING)
		s->confirms++;
	s->remeasure = false;
	s->why = TUNE_WHY_NONE;
	ok = tune_step_ok(st, &s->p.target);
	why = doubt(s, ok, goodput);
	/* A confirmation is three steps long: its median over the target, or
	 * its queue growing, is no burst to look past, and the step is better
	 * spent lower. Its 95th percentile alone may be a spike or two. */
	if (why == TUNE_WHY_DOUBT_BAD && s->phase == TUNE_CONFIRMING && !median_ok(s, st))
		why = TUNE_WHY_NONE;
	if (why != TUNE_WHY_NONE && !second && second_look_allowed(s)) {
		s->remeasure = true;
		s->remeasures++;
		if (s->phase == TUNE_SEARCHING)
			s->doubts++;
		s->why = why;
		return; /* next_rate stays */
	}
	/* A step that never loaded the shaper proves nothing good. */
	if (why == TUNE_WHY_DOUBT_IDLE)
		ok = false;

	if (s->phase == TUNE_CONFIRMING) {
		if (ok) {
			s->result = rate;
			finish(s, TUNE_DONE, TUNE_WHY_NONE);
		} else {
			confirm_at(s, frac_of(rate, 1 - 2 * s->p.backoff), TUNE_WHY_CONFIRM_LOWER);
		}
		return;
	}
	if (doubted == TUNE_WHY_CHECK_TOP)
		s->top_checked = true;
	if (ok) {
		/* the top was good after all: up to the bound above it */
		if (rate >= s->hi)
			s->hi = s->hi_next;
		search_good(s, rate, goodput);
	} else if (rate <= s->lo) {
		finish(s, TUNE_FAILED, TUNE_WHY_FLOOR);
		return;
	} else {
		s->hi_next = s->hi;
		s->hi = rate;
		s->hi_known_bad = true;
		s->top_checked = second;
	}
	plan(s);
}
