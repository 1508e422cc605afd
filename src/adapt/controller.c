// SPDX-License-Identifier: GPL-2.0-or-later
#include "adapt/controller.h"

#include <math.h>
#include <string.h>

#define US 1000000.0
#define MOVED 0.25 /* the line estimate moved by this since the last queue: a changing line */
#define ADAPT_FLOWING (3 * 1500) /* bytes an interval: some of ours flows */

void adapt_params_default(struct adapt_params *p, uint64_t min, uint64_t base, uint64_t max)
{
	*p = (struct adapt_params){
		.min = min,
		.max = max,
		.base = base,
		.target_us = 10000,
		.jitter_k = 4,
		.holdoff_us = 200000,
		.drain_us = 500000,
		.idle_decay_us = 10000000,
		.lost_us = 3000000,
		.probe_after_us = 3000000,
		.rise_loaded_us = 100,
		.rise_idle_us = 2000,
		.load_frac = 0.75,
		.idle_frac = 0.1,
		.raise_frac = 0.05,
		.margin = 0.05,
		.change_frac = 0.01,
	};
}

static const char *const why_names[] = {
	[ADAPT_NONE] = "none",
	[ADAPT_QUEUE] = "queue",
	[ADAPT_SETTLE] = "settle",
	[ADAPT_RAISE] = "raise",
	[ADAPT_IDLE] = "idle",
	[ADAPT_LOST] = "lost",
	[ADAPT_STALL] = "stall",
};

const char *adapt_why_name(enum adapt_why why)
{
	if ((unsigned int)why >= sizeof(why_names) / sizeof(why_names[0]) || !why_names[why])
		return "?";
	return why_names[why];
}

void adapt_init(struct adapt_ctl *c, const struct adapt_params *p)
{
	memset(c, 0, sizeof(*c));
	c->p = *p;
	c->rate = p->base;
}

static uint64_t clamp_rate(const struct adapt_ctl *c, double r)
{
	if (r < (double)c->p.min)
		return c->p.min;
	if (r > (double)c->p.max)
		return c->p.max;
	return (uint64_t)r;
}

/* Set the rate to r (clamped) when it moves by change_frac or more, or always when forced. */
static enum adapt_why change(struct adapt_ctl *c, double r, enum adapt_why why, uint64_t now,
			     bool forced)
{
	uint64_t to = clamp_rate(c, r);
	double d = fabs((double)to - (double)c->rate);

	if (to == c->rate || (!forced && d < c->p.change_frac * (double)c->rate))
		return ADAPT_NONE;
	c->rate = to;
	c->changed_us = now;
	c->why = why;
	return why;
}

static uint64_t holdoff(const struct adapt_ctl *c)
{
	uint64_t h = c->p.holdoff_us;

	return (uint64_t)c->rtt_min_us * 2 > h ? (uint64_t)c->rtt_min_us * 2 : h;
}

/*
 * The last cut's queue was a stall's, not the line's: it was big, and gone
 * in under a quarter of the time it takes to drain (a stalled host answers
 * a burst of probes late and then none; a queue of the line drains at what
 * the cut left over). The cut is undone: the rate, the ceiling and its
 * time as they were.
 */
static bool stalled(struct adapt_ctl *c)
{
	if (!c->cut_big || !c->cut_gone_us ||
	    c->cut_gone_us - c->cut_us >= c->cut_drain_us / 4)
		return false;
	c->settle_rate = c->cut_from;
	c->ceiling = c->cut_ceiling;
	c->ceiling_us = c->cut_ceiling_us;
	c->cut_big = false;
	return true;
}

/* The settle a cut set, when due: ADAPT_STALL when it undoes the cut. */
static enum adapt_why settle_if_due(struct adapt_ctl *c, uint64_t now, bool stall)
{
	if (!c->settle_us || now < c->settle_us)
		return ADAPT_NONE;
	c->settle_us = 0;
	return change(c, (double)c->settle_rate, stall ? ADAPT_STALL : ADAPT_SETTLE, now, true);
}

/*
 * The least of the last three samples over the baseline: a queue is in
 * each of them, a late answer (jitter) seldom in all three.
 */
static int64_t least_added(const struct adapt_ctl *c)
{
	int64_t m = adapt_added_us(c);

	for (unsigned int i = 1; i < c->nhist && i < 3; i++)
		if (c->hist_us[i] < m)
			m = c->hist_us[i];
	return m;
}

/*
 * The queue a cut drains: the last sample over the baseline, less what
 * jitter (over target) can add to it; but no less than the least of the
 * last three, each of which has the queue in it.
 */
static int64_t queue_us(const struct adapt_ctl *c)
{
	int64_t q = adapt_added_us(c) - ((int64_t)adapt_threshold_us(c) - c->p.target_us);
	int64_t least = least_added(c);

	return q > least ? q : least;
}

/* One of the last three samples over three thresholds: a queue that grew fast. */
static bool big_queue(const struct adapt_ctl *c)
{
	for (unsigned int i = 0; i < c->nhist && i < 3; i++)
		if (c->hist_us[i] > 3 * (int64_t)adapt_threshold_us(c))
			return true;
	return false;
}

/*
 * What the line delivered, counted after it. After a queue that grew fast
 * (a drop), the last interval's load: the line as it is now. After a small
 * one (a look past the line's rate), the median of the last three: one
 * interval can read half the line, a stalled host counting its bytes in
 * the next one.
 */
static double delivered(const struct adapt_ctl *c)
{
	const double *l = c->hist_load;

	if (c->nhist < 3 || big_queue(c))
		return c->load;
	return fmax(fmin(l[0], l[1]), fmin(fmax(l[0], l[1]), l[2]));
}

/* A queue under load: cut to what drains it, settle under the line later. */
static enum adapt_why cut(struct adapt_ctl *c, uint64_t now)
{
	double slope = c->slope > 0 ? c->slope : 0;
	/* what the line delivered is the line; what went into it, less what queued */
	double line = c->p.delivered ? delivered(c) : c->load / (1 + slope);
	double excess = (double)queue_us(c) / US;
	double drain = c->p.drain_us / US;
	double f = 1 - excess / drain, t;

	if (line < (double)c->p.min)
		line = (double)c->p.min;
	if (f < 0.25)
		f = 0.25;
	/*
	 * The queue (excess * line bytes) empties at line * (1 - f) a second:
	 * settle then at the latest (twice that, as the line is an estimate),
	 * or as soon as a sample shows it gone.
	 */
	t = 2 * excess / (1 - f);
	if (t < holdoff(c) / US)
		t = holdoff(c) / US;
	if (t > 8 * drain)
		t = 8 * drain;
	/* what a cut for a stall, not a queue, puts back (stalled()) */
	c->cut_from = c->rate;
	c->cut_ceiling = c->ceiling;
	c->cut_ceiling_us = c->ceiling_us;
	c->cut_us = now;
	c->cut_drain_us = (uint64_t)(excess / (1 - f) * US);
	c->cut_gone_us = 0;
	c->cut_big = big_queue(c);
	/* the rate the queue came at: the line is under it, and near it */
	c->ceiling = c->rate;
	c->ceiling_us = now;
	c->raises = 0;
	/*
	 * Never up: a load counted after the line is noisy, and a queue at a
	 * rate under the line estimate says the estimate is high.
	 */
	/* a line that moved since the last queue is a changing one: feel past sooner */
	c->line_moved = c->last_line > 0 && fabs(line / c->last_line - 1) > MOVED;
	c->prev_line = c->last_line;
	c->last_line = line;
	c->settle_rate = clamp_rate(c, fmin(line, (double)c->rate) * (1 - c->p.margin));
	c->settle_us = now + (uint64_t)(t * US);
	return change(c, fmin(line * f, (double)c->rate * (1 - c->p.margin)), ADAPT_QUEUE, now,
		      true);
}

static enum adapt_why raise(struct adapt_ctl *c, uint64_t now)
{
	double step = c->p.raise_frac, r;

	double back = fmin(fmax(c->last_line, c->prev_line), (double)c->ceiling) * (1 - c->p.margin);

	if (c->ceiling && (double)c->rate < back * (1 - 2 * c->p.margin)) {
		/*
		 * far under where one of the last two queues found the line (a
		 * deep cut in a dip of a line that changes): the line was there
		 * a moment ago, climb back fast, but not past that in one step
		 */
		step *= fmin(pow(1.5, c->raises), 3);
		c->raises++;
		return change(c, fmin((double)c->rate * (1 + step), back), ADAPT_RAISE, now, false);
	}
	if (c->ceiling && now - c->ceiling_us <
			      (c->line_moved ? c->p.probe_after_us / 4 : c->p.probe_after_us))
		return ADAPT_NONE; /* after a queue: stay a while */
	if (c->ceiling && !c->line_moved) {
		/* then feel past its rate slowly: a steady line is near it */
		step = fmax(step / 2, c->p.change_frac);
	} else {
		/* raise after raise with no queue: the line is well above, go faster */
		step *= fmin(pow(1.5, c->raises), 3);
		c->raises++;
	}
	r = (double)c->rate * (1 + step);
	if (c->ceiling && r > (double)c->ceiling * (1 + c->p.margin)) {
		/* past the last queue's rate with none: the line is faster now */
		c->ceiling = 0;
		c->raises = 0;
	}
	return change(c, r, ADAPT_RAISE, now, false);
}

static enum adapt_why decay(struct adapt_ctl *c, uint64_t now)
{
	double k = exp(-(double)(now - c->changed_us) / (double)c->p.idle_decay_us);
	double r = (double)c->p.base + ((double)c->rate - (double)c->p.base) * k;
	enum adapt_why why;

	/* measured from the last change, as the rate has held since */
	why = change(c, r, ADAPT_IDLE, now, false);
	if (why != ADAPT_NONE) {
		c->ceiling = 0;
		c->raises = 0;
	}
	return why;
}

/* forget the history: a start, or the far end back */
static void forget(struct adapt_ctl *c)
{
	c->nhist = 0;
	c->slope = 0;
	c->have_prev = false;
}

uint32_t adapt_threshold_us(const struct adapt_ctl *c)
{
	double t = c->p.jitter_k * c->jitter_us;

	if (t > 3.0 * c->p.target_us)
		t = 3.0 * c->p.target_us;
	return t > c->p.target_us ? (uint32_t)t : c->p.target_us;
}

/*
 * The jitter: the mean change from one sample's delay to the next (RFC 3550's
 * estimator, with gain 1/64 once 64 changes are in). Each change counts for
 * target at most, so the few samples of a queue's growth before its cut move
 * it little; while a cut drains its queue, whose delay falls fast and
 * smoothly, it is not updated.
 */
static void jitter(struct adapt_ctl *c, int64_t delay_us)
{
	double d = fabs((double)(delay_us - c->prev_delay_us));

	if (c->have_prev && !c->settle_us) {
		if (c->njitter < 64)
			c->njitter++;
		c->jitter_us += (fmin(d, c->p.target_us) - c->jitter_us) / c->njitter;
	}
	c->prev_delay_us = delay_us;
	c->have_prev = true;
}

static void remember(struct adapt_ctl *c, int64_t excess, uint64_t now)
{
	const int64_t *h = c->hist_us;

	memmove(c->hist_us + 1, c->hist_us, sizeof(c->hist_us) - sizeof(c->hist_us[0]));
	memmove(c->hist_at + 1, c->hist_at, sizeof(c->hist_at) - sizeof(c->hist_at[0]));
	memmove(c->hist_load + 1, c->hist_load, sizeof(c->hist_load) - sizeof(c->hist_load[0]));
	c->hist_us[0] = excess;
	c->hist_at[0] = now;
	c->hist_load[0] = c->load;
	if (c->nhist < ADAPT_HISTORY)
		c->nhist++;
	c->slope = 0;
	if (c->nhist == ADAPT_HISTORY && c->hist_at[0] > c->hist_at[3]) {
		/* the mean of the last two against the two before, over their times' span */
		double span =
		    (double)(c->hist_at[0] + c->hist_at[1] - c->hist_at[2] - c->hist_at[3]) / 2;

		c->slope = (double)(h[0] + h[1] - h[2] - h[3]) / 2 / span;
	} else if (c->nhist >= 2 && c->hist_at[0] > c->hist_at[c->nhist - 1]) {
		/* fewer: the newest against the oldest */
		c->slope = (double)(h[0] - h[c->nhist - 1]) /
			   (double)(c->hist_at[0] - c->hist_at[c->nhist - 1]);
	}
}

/*
 * Over the threshold in the last three samples, or over three times it in the
 * last two (a queue that grows that fast is no jitter: the third sample
 * would come later still, behind it).
 */
static bool queued(const struct adapt_ctl *c)
{
	int64_t thr = adapt_threshold_us(c);
	unsigned int need = 3;

	if (c->nhist >= 2 && c->hist_us[0] > 3 * thr && c->hist_us[1] > 3 * thr)
		need = 2;
	if (c->nhist < need)
		return false;
	for (unsigned int i = 0; i < need; i++)
		if (c->hist_us[i] <= thr)
			return false;
	return true;
}

/*
 * While a cut drains its queue, the queue still grows (a deeper drop than
 * the cut allowed for): the last two samples rise, and both left after the
 * cut, as the ones sent before it show the growth it already answered.
 */
static bool grows_since_cut(const struct adapt_ctl *c)
{
	return c->nhist >= 2 && c->hist_at[1] > c->cut_us && c->hist_us[0] > c->hist_us[1];
}

/* A first delay, or one under the baseline, is the baseline now: true then. */
static bool baseline_lower(struct adapt_ctl *c, int64_t delay_us)
{
	if (c->have_baseline && delay_us >= c->baseline_us)
		return false;
	c->baseline_us = delay_us;
	c->have_baseline = true;
	return true;
}

/*
 * When the sample's packet entered the queue it measured: it waited its
 * added delay there and a one-way trip besides. A sample speaks of that
 * time, not of its arrival: the queue's slope is over those times (over
 * arrivals, a queue that grows stretches its own samples apart and reads
 * flatter than it is), and a cut is felt only by packets sent after it.
 */
static uint64_t entered(const struct adapt_ctl *c, int64_t excess, uint64_t now)
{
	uint64_t back = (excess > 0 ? (uint64_t)excess : 0) + c->rtt_min_us / 2;

	return now > back ? now - back : 0;
}

/*
 * A queue in this direction lengthens the round trip as much as the one-way
 * delay; the clocks' offset is in the one-way delay only. A delay over the
 * baseline by more than the round trip's rise (and the threshold's slack
 * for the two measures' noise) is the offset moving (a reboot, a suspend,
 * a bogus timestamp), not a queue: the excess counts as the round trip's
 * rise, and after OFFSET_MOVED samples in a row the baseline moves by the
 * rest (it follows a lower delay at once, so an offset stepping down needs
 * this to step back up too).
 */
#define OFFSET_MOVED 3

static int64_t offset_checked(struct adapt_ctl *c, const struct adapt_sample *s, int64_t excess)
{
	int64_t rtt_added, most;

	if (!s->rtt_us || !c->rtt_min_us) {
		c->offset_runs = 0;
		return excess;
	}
	rtt_added = (int64_t)s->rtt_us - c->rtt_min_us;
	most = rtt_added + adapt_threshold_us(c);
	if (excess <= most) {
		c->offset_runs = 0;
		return excess;
	}
	if (++c->offset_runs >= OFFSET_MOVED) {
		c->baseline_us = s->delay_us - rtt_added;
		c->offset_runs = 0;
		c->offset_moves++;
	}
	return rtt_added > 0 ? rtt_added : 0;
}

static void track(struct adapt_ctl *c, const struct adapt_sample *s, double dt, bool idle)
{
	double rise;
	int64_t excess;

	if (!baseline_lower(c, s->delay_us)) {
		rise = (idle ? c->p.rise_idle_us : c->p.rise_loaded_us) * dt;
		if ((double)(s->delay_us - c->baseline_us) < rise)
			c->baseline_us = s->delay_us;
		else
			c->baseline_us += (int64_t)rise;
	}
	if (s->rtt_us && (!c->rtt_min_us || s->rtt_us < c->rtt_min_us))
		c->rtt_min_us = s->rtt_us;
	excess = offset_checked(c, s, s->delay_us - c->baseline_us);
	remember(c, excess, entered(c, excess, s->now_us));
	jitter(c, s->delay_us);
}

enum adapt_why adapt_sample(struct adapt_ctl *c, const struct adapt_sample *s)
{
	uint64_t now = s->now_us;
	double dt;
	bool idle, loaded, queue, can, low, stall = false;
	enum adapt_why why;

	if (!c->last_us || now <= c->last_us || c->lost || c->quiet) {
		/* the first sample, or the first after the far end came back or quiet: a start */
		c->last_us = now;
		c->lost = false;
		c->quiet = false;
		forget(c);
		baseline_lower(c, s->delay_us);
		jitter(c, s->delay_us);
		return ADAPT_NONE;
	}
	dt = (double)(now - c->last_us) / US;
	c->last_us = now;
	c->load = (double)s->sent / dt;
	idle = c->load < c->p.idle_frac * (double)c->rate;
	loaded = c->load >= c->p.load_frac * (double)c->rate;
	track(c, s, dt, idle);

	queue = queued(c);
	can = !c->changed_us || now - c->changed_us >= holdoff(c);
	low = adapt_added_us(c) < (int64_t)adapt_threshold_us(c) / 2; /* the queue gone */

	/* a queue under load; while a cut drains one, only if it still grows */
	/*
	 * A queue while ours flows: TCP sends no faster than the line
	 * delivers, so behind a line far slower than the rate the load reads
	 * "idle" against the rate; a few packets an interval are enough.
	 */
	if (queue && s->sent >= ADAPT_FLOWING && can && (!c->settle_us || grows_since_cut(c)))
		return cut(c, now);
	/* the queue a cut found is gone: settle now, not at the latest time */
	if (c->settle_us && low && !c->cut_gone_us)
		c->cut_gone_us = now;
	if (c->settle_us && can && low) {
		c->settle_us = now;
		stall = stalled(c);
	}
	why = settle_if_due(c, now, stall);
	if (why != ADAPT_NONE || c->settle_us || !can)
		return why;
	/* no queue: not in the last sample, nor under the jitter of the last three */
	if (loaded && low && least_added(c) < (int64_t)c->p.target_us / 2)
		return raise(c, now);
	if (idle)
		return decay(c, now);
	return ADAPT_NONE;
}

enum adapt_why adapt_tick(struct adapt_ctl *c, uint64_t now_us)
{
	if (c->last_us && !c->lost && now_us >= c->last_us + c->p.lost_us) {
		c->lost = true;
		c->settle_us = 0;
		c->ceiling = 0;
		forget(c);
		c->changed_us = now_us;
		c->why = ADAPT_LOST;
		c->rate = c->p.base;
		return ADAPT_LOST;
	}
	if (c->lost)
		return ADAPT_NONE;
	return settle_if_due(c, now_us, false);
}

enum adapt_why adapt_quiet(struct adapt_ctl *c, uint64_t now_us)
{
	enum adapt_why why = settle_if_due(c, now_us, false);

	if (why != ADAPT_NONE || c->settle_us || c->lost)
		return why;
	/*
	 * the probes resume as a start (the history is of another load); the
	 * far end's silence counts from the last quiet moment
	 */
	c->quiet = true;
	c->last_us = now_us;
	c->load = 0;
	return decay(c, now_us);
}
