/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Continuous adaptation of one direction's rate to a line whose speed
 * changes, as pure logic: samples (one-way delay, what the shaper sent, the
 * time) go in, the rate to set and why come out. No sockets, no clock, no
 * kernel: tests/test-adapt.c drives it against a simulated line.
 *
 * What it watches. The one-way delay of this direction (from probes stamped
 * at both ends: its absolute value carries the clocks' offset, which cancels
 * in its change) against a baseline, the least delay seen, which follows a
 * lower sample at once and rises only slowly (faster while idle, when no
 * queue of ours can be in it). The load: what the shaper sent in the
 * interval, from its own byte counters.
 *
 * The jitter: the mean change of the delay from one sample to the next
 * (RFC 3550's estimator, over the last 64 or so), each change counted for
 * target at most, none while a cut drains its queue. On a busy host (a VM starved of CPU) answers come late by
 * tens of ms with no queue anywhere: what counts as a queue (the threshold)
 * is target or jitter_k times the jitter, when that is more, up to three
 * times target.
 *
 * The law.
 * - A queue under load (the delay over the baseline by more than the
 *   threshold in three samples in a row, so a spike or two of jitter is not
 *   one, or by more than three times it in two; the shaper not idle): the
 *   line is slower than the rate. The queue's slope tells how much slower:
 *   the line drains C = sent / (1 + slope) (the queue grows by sent - C a
 *   second, and the delay by that over C; the slope is the last two
 *   samples' mean against the two before, so one noisy sample moves it by
 *   half). The rate drops at once to C less what drains the queue found
 *   (the last sample's, less the threshold's jitter part, but not under the
 *   least of the last three) within drain_us (to a quarter of C at the
 *   least; always at least the margin under the rate it was at), and once a
 *   sample shows the queue gone (at the latest twice the time that should
 *   take) settles at C less the margin. The rate the queue came at becomes
 *   the ceiling the next raises slow down under. (When the load is counted
 *   after the line, what it delivered is C itself: params.delivered; after
 *   a small queue, the median of the last three intervals', as one can
 *   read half the line.)
 * - A stall, not a queue: when a sample over three thresholds led to the
 *   cut and its queue was gone in under a quarter of the time it should
 *   take to drain (a host that stalled answers a burst of probes late, then
 *   none), the settle puts back the rate and the ceiling from before the
 *   cut (ADAPT_STALL).
 * - Loaded with the delay at the baseline (the last sample under half the
 *   threshold, and the least of the last three under half of target, which
 *   late answers seldom spoil all three of): raise by raise_frac, at most
 *   once a hold-off, each raise in a row half as big again as the one
 *   before (up to three times raise_frac), so a line back from a deep drop
 *   is found in seconds. After a queue, not for probe_after_us, then by
 *   half of raise_frac (at least change_frac): a steady line is felt past
 *   every probe_after_us, not at every hold-off. Past the ceiling by the margin
 *   with no queue, it is forgotten.
 * - Idle: drift back to the base rate (time constant idle_decay_us), so a
 *   rate set by one moment's line does not stay for the next load.
 * - No change within a hold-off of the last one (max(holdoff_us, 2 RTTs)),
 *   none outside [min, max], none smaller than change_frac.
 * - No sample for lost_us: back to the base rate, once.
 * - The clocks' offset moves (a reboot, a suspend, one bogus timestamp): a
 *   queue here lengthens the probe's round trip as much as the one-way
 *   delay, so a delay over the baseline by more than the round trip rose
 *   (and the threshold) counts as that rise only, and three such in a row
 *   move the baseline by the rest.
 * - A sample speaks of when its packet entered the queue (its arrival less
 *   its added delay and half the least RTT): slopes are over those times,
 *   and while a cut drains, only samples sent after it can cut again. A
 *   queue counts while a few packets of ours flow (TCP behind a slow line
 *   reads "idle" against the rate). Far under where one of the last two
 *   queues found the line, raises grow at once, up to that line.
 */
#ifndef WGSHAPE_ADAPT_CONTROLLER_H
#define WGSHAPE_ADAPT_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

struct adapt_params {
	uint64_t min, max, base; /* bytes/s; min <= base <= max */
	uint32_t target_us; /* added one-way delay that counts as a queue (10 ms) */
	double jitter_k; /* ... or this many times the jitter, when more, up to 3 targets (4) */
	uint32_t holdoff_us; /* least time between two changes (200 ms; 2 RTTs if longer) */
	uint32_t drain_us; /* a cut empties the queue it found within this (500 ms) */
	uint32_t idle_decay_us; /* idle: time constant toward base (10 s) */
	uint32_t lost_us; /* no sample this long: the far end is gone (3 s) */
	uint32_t probe_after_us; /* at the ceiling, try past it after this (3 s) */
	uint32_t rise_loaded_us; /* the baseline's rise a second under load (100 us) */
	uint32_t rise_idle_us; /* ... and while idle (2000 us) */
	double load_frac; /* loaded: sent >= this * rate (0.75) */
	double idle_frac; /* idle: sent < this * rate (0.1) */
	double raise_frac; /* a raise (0.05) */
	double margin; /* a settled rate sits this far under the line (0.05) */
	double change_frac; /* smaller changes are not made (0.01) */
	/*
	 * The samples' sent is what the line delivered (counted after it: the
	 * client's received bytes for a download shaped at the server, an IFB),
	 * not what the shaper put into it (false, egress).
	 */
	bool delivered;
};

void adapt_params_default(struct adapt_params *p, uint64_t min, uint64_t base, uint64_t max);

/* Why the rate changed (or did not). */
enum adapt_why {
	ADAPT_NONE, /* no change */
	ADAPT_QUEUE, /* a queue under load: cut to what drains it */
	ADAPT_SETTLE, /* the queue drained: settle under the line */
	ADAPT_RAISE, /* loaded at the baseline: raise */
	ADAPT_IDLE, /* idle: toward the base rate */
	ADAPT_LOST, /* the far end stopped answering: the base rate */
	ADAPT_STALL, /* the last cut's queue was the host stalling: the cut undone */
};
const char *adapt_why_name(enum adapt_why why);

/* One sample: its time, this direction's one-way delay, the shaper's bytes. */
struct adapt_sample {
	uint64_t now_us; /* any monotonic clock; the same for every call */
	int64_t delay_us; /* one-way delay, clock offset included */
	uint32_t rtt_us; /* the probe's round trip; 0: unknown */
	uint64_t sent; /* bytes the shaper sent since the previous sample */
};

struct adapt_ctl {
	struct adapt_params p;
	uint64_t rate; /* bytes/s, what the shaper is at */
	int64_t baseline_us;
	/* the last ADAPT_HISTORY samples over the baseline, their times and loads, newest at [0] */
#define ADAPT_HISTORY 4
	int64_t hist_us[ADAPT_HISTORY];
	uint64_t hist_at[ADAPT_HISTORY];
	double hist_load[ADAPT_HISTORY];
	unsigned int nhist;
	uint64_t last_us; /* the previous sample; 0: none yet */
	uint64_t changed_us; /* the last change */
	uint64_t settle_us; /* when the settle after a cut is due; 0: none */
	uint64_t settle_rate;
	uint64_t ceiling; /* the rate the last queue came at; 0: none known */
	uint64_t ceiling_us; /* when it was found */
	/* the last cut: the rate, ceiling and its time before it, when it was
	 * made, how long its queue should take to drain, when a sample first
	 * showed it gone */
	uint64_t cut_from, cut_ceiling, cut_ceiling_us, cut_us, cut_drain_us, cut_gone_us;
	bool cut_big; /* one of the last three samples before it was over three thresholds */
	unsigned int raises; /* in a row, since the last cut */
	double last_line, prev_line; /* the line the last two queues found, bytes/s */
	bool line_moved; /* ... and it had moved from the one before */
	uint32_t rtt_min_us;
	double jitter_us; /* the delay's mean change from a sample to the next */
	unsigned int njitter; /* changes it is the mean of, up to 64 */
	int64_t prev_delay_us;
	bool have_prev;
	double load; /* bytes/s sent in the last interval */
	double slope; /* the delay's change (s a s): the last two samples against the two before */
	enum adapt_why why; /* of the last change */
	unsigned int offset_runs; /* samples in a row whose delay rose past their round trip's */
	unsigned int offset_moves; /* times the baseline moved with the clocks' offset */
	bool lost; /* in fallback after lost_us without a sample */
	bool quiet; /* adapt_quiet since the last sample: the next is a start */
	bool have_baseline;
};

/* A controller at p's base rate. */
void adapt_init(struct adapt_ctl *c, const struct adapt_params *p);

/* A sample came: returns why the rate changed (c->rate), ADAPT_NONE when it did not. */
enum adapt_why adapt_sample(struct adapt_ctl *c, const struct adapt_sample *s);

/*
 * The time passed with no sample (a timer): ADAPT_LOST when the far end has
 * not answered for lost_us (c->rate is the base again, once), ADAPT_SETTLE
 * when a settle fell due, else ADAPT_NONE.
 */
enum adapt_why adapt_tick(struct adapt_ctl *c, uint64_t now_us);

/*
 * Nothing flows and no probe goes (an idle tunnel costs nothing): a settle
 * that fell due, else the drift toward the base rate (ADAPT_IDLE), in time
 * since the last change as an idle sample would. The far end's silence
 * counts from the last quiet call (probes resume, none is answered: lost
 * after lost_us), and the next sample is a start (its interval's load and
 * slope would be over the quiet time). No-op while a cut's settle is
 * pending (but for the settle falling due) or the far end is lost.
 */
enum adapt_why adapt_quiet(struct adapt_ctl *c, uint64_t now_us);

/*
 * The added delay that counts as a queue: target, or jitter_k times the
 * jitter when that is more (a busy host's late answers are not a queue).
 */
uint32_t adapt_threshold_us(const struct adapt_ctl *c);

/* The current added delay (the last sample over the baseline), us; 0 before one. */
static inline int64_t adapt_added_us(const struct adapt_ctl *c)
{
	return c->nhist ? c->hist_us[0] : 0;
}

#endif
