/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wgshape tune, the pure part: statistics of latency samples, the bufferbloat
 * grade, and the search for the highest rate whose latency under load stays
 * at the idle level. No I/O, no clock, no globals: measurements come in,
 * decisions go out, so all of it is tested against a simulated link
 * (tests/test-tune.c).
 *
 * The caller owns the I/O: it sets the rate, loads the link, probes the
 * latency and reads the goodput; this module says which rate to measure next
 * and when to stop.
 */
#ifndef WGSHAPE_TUNE_H
#define WGSHAPE_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- statistics -------------------------------------------------------- */

struct lat_stats {
	size_t n; /* samples that came back */
	size_t lost; /* probes that did not */
	double min, p50, p95, max, mean; /* milliseconds, over the n that came back */
	/* the mean of the lowest 95% (ceil(0.95 n) of them): the trimmed mean of
	 * the responsiveness draft (single-sided, at its default 95%) */
	double tm95;
};

/*
 * Summarise samples[0..n) (ms, finite; the array is sorted in place).
 * Percentiles interpolate linearly between the closest ranks (Hyndman and
 * Fan's type 7, as numpy and PERCENTILE.INC): with the samples sorted
 * x[0] <= ... <= x[n-1], the p-th percentile is at position h = (n-1)p,
 * x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]). So p50 is the usual
 * median (the mean of the middle two for even n), and one sample is every
 * percentile. n == 0 gives zeros (and lost as given).
 */
void lat_stats_compute(double *samples, size_t n, size_t lost, struct lat_stats *out);

/*
 * The trend of a step's RTTs: does the queue still grow? A rate a little over
 * the bottleneck fills a deep buffer slowly (1% over a 2,000-packet buffer at
 * 20 Mbit/s takes minutes), so the level a short step sees can be low while
 * the queue keeps growing. The samples after the load's warm-up, in sending
 * order, are cut in thirds: the first is left to the queue to settle, and the
 * slope runs from the median of the middle third to the median of the last
 * (medians: a spike or two move neither). A queue that grew and then held
 * has no slope left; one that keeps growing has.
 */
struct lat_sample {
	double t; /* s, when the probe was sent */
	double rtt_ms; /* < 0: lost (left out) */
};

struct lat_trend {
	size_t n; /* samples that came back; 0: too few for a trend (under 9) */
	double slope; /* ms per s, middle third to last third */
	double end_ms; /* the last third's median RTT */
	double span; /* s from the first sample to the last: the horizon */
};

/* The trend of samples[0..n) (in sending order). */
void lat_trend_compute(const struct lat_sample *samples, size_t n, struct lat_trend *out);

/* The common scale (DSLReports, Waveform) for added latency under load, in ms:
 * A+ < 5, A < 30, B < 60, C < 200, D < 400, F >= 400 (and for NaN). */
const char *bloat_grade(double added_ms);

/* Round trips per minute (IETF draft "Responsiveness under Working Conditions"):
 * 60000 / RTT in ms; 0 for an RTT that is not a positive number. */
double rpm(double loaded_rtt_ms);

/* ---- one measurement at one rate --------------------------------------- */

struct tune_step {
	uint64_t rate; /* bytes/s the shaper was set to; 0 = unshaped */
	double goodput; /* bytes/s, all streams together */
	/* idle: the baseline the added latency is counted from (the caller's
	 * idle measurement, copied into every step); loaded: during this load. */
	struct lat_stats idle, loaded;
	struct lat_trend trend; /* of the loaded RTTs; n 0: none, not judged */
	/*
	 * The load's own connections' RTTs under load (the kernel's TCP_INFO:
	 * the sender's smoothed RTT for an upload, the receiver's estimate for a
	 * download): the draft's stand-in for self probes on HTTP/1.1. n 0: none.
	 */
	struct lat_stats self;
	uint64_t drops; /* cake's drops during the step (reported, not judged) */
	double busiest_core; /* 0..1, from /proc/stat (reported, not judged) */
};

struct tune_target {
	double p50_ms; /* median added latency must stay at or under this (default 5) */
	double p95_ms; /* and the 95th percentile (default 15) */
};

/*
 * Added latency under load, quantile by quantile: loaded p50 - idle p50 and
 * loaded p95 - idle p95, never below 0. Lost probes count as later than any
 * that came back: more than 5% of the loaded probes lost makes p95 infinite,
 * more than half makes p50 infinite; no loaded sample at all makes both so.
 */
void tune_added(const struct tune_step *s, double *p50_ms, double *p95_ms);

/*
 * Where the step's queue would be had the step gone on as long again:
 * the last third's median RTT plus the slope over the step's own span,
 * minus the idle median (ms, never below 0; 0 without a trend).
 */
double tune_projected(const struct tune_step *s);

/*
 * Does the queue keep growing toward the target? The projection is over the
 * p95 target, and the growth over the span is at least the p50 target (a
 * queue that grows by less is noise, or too slow to matter).
 */
bool tune_step_growing(const struct tune_step *s, const struct tune_target *t);

/*
 * Responsiveness under load, in round trips per minute, as the IETF draft
 * "Responsiveness under Working Conditions" computes it from trimmed means
 * (tm95): the mean of the foreign responsiveness, 60000 / tm95 of the
 * probes' RTTs (UDP or ICMP echo on a flow of their own), and the loaded
 * one, 60000 / tm95 of the load connections' own RTTs (s->self). One of the
 * two when the other has no sample; 0 when neither has.
 */
struct tune_rpm {
	double rpm, foreign, loaded;
};
void tune_step_rpm(const struct tune_step *s, struct tune_rpm *out);

/* Did this step keep latency at the idle level: both added figures within t,
 * and its queue not growing toward the target? */
bool tune_step_ok(const struct tune_step *s, const struct tune_target *t);

/* ---- the search -------------------------------------------------------- */

/*
 * The method, all rates as fractions of the capacity (the unshaped goodput):
 *
 * 1. Unshaped: feed the unshaped measurement (next_rate 0), with the same
 *    load as the steps (N streams). Its goodput is the capacity. Latency
 *    within target already: TUNE_NOT_BLOATED, stop.
 * 2. Search: a bracket [lo, hi]; lo starts at low_frac (not yet measured), hi
 *    at high_frac (presumed bad). The first step is at first_frac, where most
 *    links are fine. A good step raises lo; it also shows how many bytes of
 *    shaper rate carry one byte of goodput (rate / goodput: the tunnel and
 *    cake's overhead), and the bottleneck sits near capacity times that, so
 *    hi comes down to that times 1 + headroom. A bad step lowers hi. Then
 *    bisect until hi <= lo * (1 + resolution).
 * 3. Doubt: one step is not trusted when it contradicts its own goodput. Bad
 *    latency while the goodput stayed under full_frac of the capacity (the
 *    shaper held the load below the bottleneck, so the queue should have been
 *    in cake: a burst of cross traffic?), or good latency with the goodput
 *    under half of what the rate allows (the load never filled the shaper, so
 *    the latency proves nothing). Such a step is measured once more and the
 *    second verdict stands (an idle-looking one again counts as bad): up to
 *    max_remeasures times in the search, and once for each confirmation
 *    whose median was within target (only its p95 failed: a spike or two;
 *    a long confirmation with its median over, or its queue growing, is
 *    believed, and the next one goes lower).
 *    Near the top the goodput cannot tell (the shaper and the bottleneck
 *    pass about the same), so before the end the lowest bad rate, which the
 *    result hangs on, gets one second look if a search step is left; good
 *    now, the search goes on above it.
 * 4. Margin and proof: result = lo * (1 - backoff), never more than lets
 *    through the capacity (capacity * rate_per_goodput: a rate whose goodput
 *    would pass the unshaped one can only queue at the bottleneck; a good
 *    step whose goodput passed the capacity raises the capacity), measured
 *    once more in a longer step (confirm_ms), long enough to show a queue
 *    that grows slowly. A failed confirm (after a second look, if 3. allows
 *    one) goes two backoffs lower and confirms again, while steps are left.
 * 5. Every verdict, the unshaped one included, counts the trend too
 *    (tune_step_growing): a queue that keeps growing is a bad rate whatever
 *    its level so far.
 *
 * At most max_steps shaped measurements in all (the unshaped one not
 * counted); the search stops early to keep confirm_steps of them for the
 * confirmation, and the confirmation takes no more than those. Never
 * measured good means the floor low_frac is measured itself; bad there:
 * TUNE_FAILED.
 *
 * The defaults: a clean link takes 7 steps (9 where the best rate is well
 * under the capacity): at most 8 search steps of 4 s and 2 confirmations of
 * 12 s, with the idle (2 s), one stream (3 s), unshaped (4 s) and 20%-under
 * (4 s) runs 69 s at most a direction; a clean link about 50 s. The result
 * lands at most resolution + backoff (2.5%) under the best rate, which
 * leaves half a percent of the 3% allowed for a misread step at the edge.
 */
struct tune_params {
	struct tune_target target;
	double first_frac; /* the first rate (0.9) */
	double low_frac; /* the floor: never searched below (0.5) */
	double high_frac; /* the ceiling before a good step says better (1.5) */
	double headroom; /* over the bottleneck estimate, for hi (0.05) */
	double resolution; /* stop when hi <= lo * (1 + resolution) (0.01) */
	double backoff; /* result = lo * (1 - backoff) (0.015; ingress 0.04) */
	double full_frac; /* goodput >= this * capacity: the bottleneck limited it (0.98) */
	unsigned int max_steps; /* shaped measurements in all (10) */
	unsigned int confirm_steps; /* of them kept for the confirmation (2) */
	unsigned int max_remeasures; /* second looks at doubtful search steps (2) */
	unsigned int step_ms; /* a search step's load, warm-up included (4000) */
	unsigned int confirm_ms; /* a confirmation's (12000) */
};

void tune_params_default(struct tune_params *p);

/*
 * The defaults for shaping at ingress. Cake there acts after the bottleneck:
 * the line's own queue takes the bursts before cake sees them, so latency
 * rises gradually toward the capacity instead of at a cliff (in the lab, on
 * a 10 Mbit/s line: median added 3.2 ms at 90%, 4.7 at 94%, 5.1 at 95%) and
 * a step near the top misreads more often. The margin is wider: backoff 4%.
 */
void tune_params_ingress(struct tune_params *p);

enum tune_phase {
	TUNE_UNSHAPED, /* measure with no shaping (next_rate 0) */
	TUNE_SEARCHING, /* measure at next_rate */
	TUNE_CONFIRMING, /* measure at next_rate, the result to be */
	TUNE_DONE, /* result is final */
	TUNE_NOT_BLOATED, /* latency stays at the idle level unshaped: shape nothing */
	TUNE_FAILED, /* why says why */
};

/* Why the search is where it is: the reason for a second look or the end. */
enum tune_why {
	TUNE_WHY_NONE,
	TUNE_WHY_DOUBT_BAD, /* next: again, bad latency though the shaper held the load */
	TUNE_WHY_DOUBT_IDLE, /* next: again, the load did not fill the shaper */
	TUNE_WHY_CHECK_TOP, /* next: again, the lowest bad rate, before the end */
	TUNE_WHY_CONFIRM_LOWER, /* next: a lower confirm, the last one failed */
	TUNE_WHY_NO_LOAD, /* failed: no goodput unshaped */
	TUNE_WHY_FLOOR, /* failed: bad even at the floor */
	TUNE_WHY_CONFIRM, /* failed: no confirm held within max_steps */
	TUNE_WHY_MAX,
};

/* A sentence for the progress line and the report ("" for TUNE_WHY_NONE). */
const char *tune_why_str(enum tune_why why);
const char *tune_phase_str(enum tune_phase phase);

struct tune_search {
	struct tune_params p;
	enum tune_phase phase;
	enum tune_why why;
	uint64_t capacity; /* unshaped goodput, bytes/s */
	uint64_t lo, hi; /* lo < hi; lo is the floor or measured good, hi presumed or measured bad */
	bool lo_known_good, hi_known_bad;
	bool top_checked; /* hi was measured bad twice, or its one second look is spent */
	uint64_t hi_next; /* the bound above hi, should hi turn out good after all */
	double rate_per_goodput; /* least rate/goodput over good steps; 0 before one */
	uint64_t next_rate; /* what to measure next; 0 = unshaped */
	bool remeasure; /* next_rate is a second look at the step just fed */
	uint64_t result; /* with TUNE_DONE: the rate to shape at, bytes/s */
	unsigned int steps; /* shaped measurements fed */
	unsigned int remeasures; /* of them second looks, all kinds */
	unsigned int doubts; /* second looks at doubtful search steps */
	unsigned int confirms; /* confirmation steps fed, second looks included */
};

/* Start a search (params NULL = defaults); phase TUNE_UNSHAPED. */
void tune_search_init(struct tune_search *s, const struct tune_params *params);
/* Feed the measurement taken at s->next_rate; the phase and next_rate move on.
 * Does nothing once the search is over. */
void tune_search_feed(struct tune_search *s, const struct tune_step *step);
/* Still wants measurements (TUNE_UNSHAPED, TUNE_SEARCHING or TUNE_CONFIRMING). */
bool tune_search_running(const struct tune_search *s);
/* How long the next measurement loads the link, warm-up included (ms). */
unsigned int tune_search_step_ms(const struct tune_search *s);

#endif
