/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The adaptation controller (adapt/controller.h) against a simulated line:
 * a shaper at the controller's rate feeds a line whose capacity follows a
 * schedule (steps and ramps), with a bloated buffer in front of it (1.2 s of
 * its fastest rate), probes whose one-way delay carries a clock offset and
 * noise (and, per case, late answers, a stall of the host, delivered counts
 * that come late), and a load that fills the shaper or stops.
 * Deterministic: the noise comes from a fixed-seed generator, time from the
 * simulation's own clock.
 *
 * What is asserted, per case: the line's queue back under 30 ms within 2 s
 * of a drop (or of the load's start), the rate back at 85% of the line
 * within a time after a rise (or a stall: its cut undone), the p95 of the
 * queue's delay over the loaded time, the share of the capacity delivered,
 * no rate outside [min, max], no two changes within a hold-off, and (steady
 * line) no oscillation: few cuts, the rate in a band. The figures are
 * printed (g_test_message; `meson test -v adapt`).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "adapt/controller.h"

#define MBIT(x) ((x) * 1e6 / 8) /* bytes/s */
#define DT 0.001 /* the simulation's step, s */
#define PROBE_LOADED 0.05 /* a probe every 50 ms under load */
#define COUNTERS_IDLE 0.2 /* while idle, the shaper's counters every 200 ms */
#define OFFSET 123.456789 /* the far end's clock is this far ahead, s */
#define PING_EVERY 0.010 /* the added latency is sampled as a ping this often */
#define MTU 1500.0
/* the rate channel (daemon/adapt.c): a request at most this often, applied this late */
#define ASK_EVERY 0.300
#define ASK_DELAY 0.020
/* the load: this many TCP flows, as one fluid window (tcp_step) */
#define FLOWS 4
#define CODEL_TARGET 0.005
#define CODEL_INTERVAL 0.100

/* capacity (bytes/s) and load (true: fills the shaper) at time t */
struct phase {
	double secs;
	double from, to; /* Mbit/s, linear over the phase */
	bool loaded;
};

struct line_case {
	const char *name;
	struct phase phases[6];
	/*
	 * Or a recorded line: tests/traces/TRACE.rates (a capacity per window,
	 * from a cellular trace), loaded all along, for secs (0: all of it)
	 */
	const char *trace;
	double secs;
	double base, min, max; /* Mbit/s */
	double owd_ms; /* the path's one-way delay each way (10 ms when 0) */
	unsigned int buf_packets; /* the line's buffer (0: 1.2 s of its fastest rate) */
	double noise_ms; /* uniform +- this on each probe */
	unsigned int spike_every; /* one probe in this many +20 ms (0: none) */
	/*
	 * A busy host: each probe's answer late by up to this, uniform (a VM
	 * starved of CPU: the lab's, beside a CPU hog, measured 0..25 ms)
	 */
	double late_ms;
	/*
	 * A stall of the host's CPU at this time (0: none): the probes of the
	 * next 150 ms are answered when it ends, up to 150 ms late, while the
	 * line has no queue (the lab's trace showed one: 91 ms, cut in half)
	 */
	double stall_at;
	/*
	 * One sample in this many (0: none) counts half of its interval's
	 * bytes, the rest in the next (a counter read late, the lab's download)
	 */
	unsigned int lumpy_every;
	double stop_probes_at; /* the far end stops answering at this time (0: never) */
	/*
	 * The two clocks' offset steps by this at clock_step_at (0: never): a
	 * reboot of the far end, a suspend of this one (its monotonic clock
	 * paused), a far end's clock set by hand. The one-way delays step by
	 * it; the round trips do not. With silence_secs, the far end says
	 * nothing for that long first (the suspend itself).
	 */
	double clock_step_at, clock_step_ms, silence_secs;
	/* one answer at this time comes with a delay this far under the truth (0: none) */
	double bogus_at, bogus_ms;
	/* what is asserted */
	double p95_max_ms; /* over the loaded time */
	double share_min; /* delivered / capacity over the loaded time */
	double react_max_s; /* after a drop, the queue under 30 ms within this */
	double rise_max_s; /* after a rise, the rate at 85% of the line within this */
	double steady_from; /* > 0: from this time on, no oscillation */
	/*
	 * A recorded line against the limit (the line's own rate, known each
	 * window: what cake at the bottleneck, told it, would do): at least
	 * this share of its goodput; the p95 at most this share of the same
	 * line's unshaped; the p50 under p50_max_ms
	 */
	double of_limit_min, of_unshaped_p95, p50_max_ms;
	/* the load counted after the line (a download at the client), not at the shaper */
	bool delivered;
	/* the rate put in place through the rate channel (the download at the server) */
	bool channel;
};

/* a byte position in the line's FIFO: a ping's or a probe's, when it was sent */
struct mark {
	double at; /* sent */
	double pos; /* the arrivals before it */
	bool probe;
};

/* a probe's answer on its way back */
struct answer {
	double due;
	double owd, rtt; /* s */
};

struct sim {
	const struct line_case *lc;
	struct adapt_ctl ctl;
	/*
	 * No controller: the limit (cake at the line itself, told its rate),
	 * or a shaper at this end told the line's rate as it was LAG ago
	 * (what knowing the line perfectly, a trip and a sample late, gives)
	 */
	enum { CONTROLLED, LIMIT, LAGGED, UNSHAPED } oracle;
	const GArray *trace; /* bytes/s per window */
	double window; /* s */
	uint64_t rng;
	double in, out; /* bytes into and out of the line's buffer, in all */
	double buf; /* its size */
	double shaper; /* the rate the shaper is at (the controller's, once in place) */
	double asked_at, apply_at, pending; /* the rate channel */
	GArray *marks; /* in the buffer, oldest first from marks_head */
	guint marks_head;
	GArray *answers;
	uint64_t answer_us; /* the last answer's time */
	bool bogus_done; /* the bogus answer came */
	unsigned int idle_probes; /* probes sent while the line had no load */
	/*
	 * The load, FLOWS TCP flows as one window: what they have in flight
	 * (sent, less what came back acknowledged a round trip after the line
	 * delivered it), the shaper's queue (cake: CoDel keeps it short), the
	 * line's deliveries of the last round trip (the ACKs on their way)
	 */
	double wnd, tcp_sent, acked, shaper_q;
	bool slow_start;
	double last_loss, codel_first, codel_next;
	unsigned int codel_count;
	double *acks;
	unsigned int nacks;
	uint64_t acked_steps;
	double sent; /* bytes the shaper sent since the last sample */
	double held; /* bytes a lumpy count left for the next sample */
	double delivered, capacity; /* over the loaded time */
	GArray *delays; /* each ping's time in the buffer, s */
	unsigned int pings_lost;
	double last_change, min_gap; /* between two changes */
	unsigned int changes, cuts, lost, stalls;
	bool out_of_range;
	/* the steady part */
	unsigned int steady_cuts;
	double steady_lo, steady_hi, steady_cap;
	/*
	 * drops: the time from each one until the pings stay under 30 ms for
	 * a second (as vm-adapt measures it), the longest of them; under_at:
	 * when the pings' present run under 30 ms began (-1: none)
	 */
	double drop_at, react_worst, under_at;
	bool reacted;
	/* rises: the longest time from one until the rate is 85% of the line's */
	double rise_at, rise_worst;
	double peak_ms;
};

static double uniform(struct sim *s)
{
	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(s->rng >> 11) / (double)(1ull << 53);
}

/* tests/traces/NAME.rates: the capacity per window, bytes/s (loaded once per name) */
static const GArray *trace_load(const char *name, double *window)
{
	static GHashTable *cache;
	g_autofree char *path = NULL, *data = NULL;
	g_auto(GStrv) lines = NULL;
	GError *err = NULL;
	GArray *rates;
	unsigned int ms = 0;

	if (!cache)
		cache = g_hash_table_new(g_str_hash, g_str_equal);
	rates = g_hash_table_lookup(cache, name);
	if (rates) {
		*window = g_array_index(rates, double, 0);
		goto out;
	}
	path = g_strconcat(g_test_get_dir(G_TEST_DIST), "/traces/", name, ".rates", NULL);
	if (!g_file_get_contents(path, &data, NULL, &err))
		g_error("%s: %s", path, err->message);
	rates = g_array_new(FALSE, FALSE, sizeof(double));
	g_array_append_val(rates, *window); /* [0]: the window, set below */
	lines = g_strsplit(data, "\n", -1);
	for (char **l = lines; *l; l++) {
		double r;

		if (**l == '#' || !**l)
			continue;
		if (sscanf(*l, "window_ms %u", &ms) == 1)
			continue;
		r = g_ascii_strtod(*l, NULL) * 1000 / 8;
		g_array_append_val(rates, r);
	}
	g_assert_cmpuint(ms, >, 0);
	g_assert_cmpuint(rates->len, >, 1);
	*window = ms / 1000.0;
	g_array_index(rates, double, 0) = *window;
	g_hash_table_insert(cache, (gpointer)name, rates);
out:
	return rates;
}

/* the schedule at t: capacity (bytes/s) and whether the load runs; false past the end */
static bool schedule(const struct sim *s, double t, double *cap, bool *loaded)
{
	const struct line_case *lc = s->lc;
	double start = 0;

	if (s->trace) {
		guint w = 1 + (guint)(t / s->window);

		if (w >= s->trace->len || (lc->secs > 0 && t >= lc->secs))
			return false;
		*cap = g_array_index(s->trace, double, w);
		*loaded = true;
		return true;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(lc->phases) && lc->phases[i].secs > 0; i++) {
		const struct phase *p = &lc->phases[i];

		if (t < start + p->secs) {
			double f = (t - start) / p->secs;

			*cap = MBIT(p->from + (p->to - p->from) * f);
			*loaded = p->loaded;
			return true;
		}
		start += p->secs;
	}
	return false;
}

static void note_change(struct sim *s, enum adapt_why why, double t)
{
	double r = (double)s->ctl.rate;

	if (why == ADAPT_NONE)
		return;
	if (r < MBIT(s->lc->min) - 1 || r > MBIT(s->lc->max) + 1)
		s->out_of_range = true;
	if (why != ADAPT_LOST && why != ADAPT_SETTLE && s->changes &&
	    t - s->last_change < s->min_gap)
		s->min_gap = t - s->last_change;
	s->last_change = t;
	s->changes++;
	if (why == ADAPT_QUEUE) {
		s->cuts++;
		if (s->lc->steady_from > 0 && t >= s->lc->steady_from)
			s->steady_cuts++;
	}
	if (why == ADAPT_LOST)
		s->lost++;
	if (why == ADAPT_STALL)
		s->stalls++;
}

static int cmp_double(gconstpointer a, gconstpointer b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double owd_base(const struct line_case *lc)
{
	return (lc->owd_ms > 0 ? lc->owd_ms : 10) / 1000;
}

/* The controller's rate into the shaper: at once, or through the rate channel. */
static void actuate(struct sim *s, double t)
{
	if (s->oracle)
		return;
	if (!s->lc->channel) {
		s->shaper = (double)s->ctl.rate;
		return;
	}
	if (s->apply_at >= 0 && t >= s->apply_at) {
		s->shaper = s->pending;
		s->apply_at = -1;
	}
	if ((double)s->ctl.rate != s->pending && t - s->asked_at >= ASK_EVERY) {
		s->pending = (double)s->ctl.rate;
		s->asked_at = t;
		s->apply_at = t + ASK_DELAY;
	}
}

/* A probe leaves the buffer: its answer is back a one-way delay later, or later still. */
static void probe_out(struct sim *s, const struct mark *m, double t)
{
	const struct line_case *lc = s->lc;
	double base = owd_base(lc);
	struct answer a = {
		.owd = base + (t - m->at) + (2 * uniform(s) - 1) * lc->noise_ms / 1000,
		.rtt = 2 * base + (t - m->at),
	};
	double late = 0;

	if (lc->spike_every && uniform(s) * lc->spike_every < 1)
		late += 0.020;
	if (lc->late_ms > 0)
		late += uniform(s) * lc->late_ms / 1000;
	if (lc->stall_at > 0 && m->at >= lc->stall_at && m->at < lc->stall_at + 0.150)
		late += lc->stall_at + 0.150 - m->at;
	/* late on the path or at either end: the round trip is as late */
	a.owd += late;
	a.rtt += late;
	a.due = t + base + late;
	g_array_append_val(s->answers, a);
}

/* The answers due by t, to the controller. */
static void answers_in(struct sim *s, double t, bool trace)
{
	for (guint i = 0; i < s->answers->len;) {
		struct answer *a = &g_array_index(s->answers, struct answer, i);
		struct adapt_sample smp;
		enum adapt_why why;

		if (a->due > t) {
			i++;
			continue;
		}
		/* as the kernel stamps each answer: answers in one step are apart */
		s->answer_us = MAX(s->answer_us + 1, (uint64_t)llround(a->due * 1e6) + 1);
		smp = (struct adapt_sample){
			.now_us = s->answer_us,
			.delay_us = (int64_t)llround((OFFSET + a->owd) * 1e6),
			.rtt_us = (uint32_t)llround(a->rtt * 1e6),
			.sent = (uint64_t)(s->sent + s->held),
		};
		if (s->lc->clock_step_at > 0 && a->due >= s->lc->clock_step_at)
			smp.delay_us += (int64_t)llround(s->lc->clock_step_ms * 1000);
		if (s->lc->bogus_at > 0 && !s->bogus_done && a->due >= s->lc->bogus_at) {
			smp.delay_us -= (int64_t)llround(s->lc->bogus_ms * 1000);
			s->bogus_done = true;
		}
		g_array_remove_index(s->answers, i);
		s->held = 0;
		if (s->lc->lumpy_every && uniform(s) * s->lc->lumpy_every < 1) {
			s->held = smp.sent / 2.0;
			smp.sent -= (uint64_t)s->held;
		}
		s->sent = 0;
		why = adapt_sample(&s->ctl, &smp);
		note_change(s, why, t);
		if (trace)
			printf("%8.3f rate %6.2f threshold %4.1f excess %7.1f slope %6.2f %s\n", t,
			       (double)s->ctl.rate * 8 / 1e6, adapt_threshold_us(&s->ctl) / 1000.0,
			       (double)adapt_added_us(&s->ctl) / 1000, s->ctl.slope,
			       why ? adapt_why_name(why) : "");
	}
}

/* A ping sent at `at` waited d: back under 30 ms for a second since the last drop? */
static void react(struct sim *s, double at, double d)
{
	if (s->drop_at < 0 || s->reacted)
		return;
	if (d > 0.030) {
		s->under_at = -1;
		s->react_worst = fmax(s->react_worst, at - s->drop_at);
		return;
	}
	if (s->under_at < 0)
		s->under_at = fmax(at, s->drop_at);
	if (at - s->under_at >= 1.0) {
		s->reacted = true;
		s->react_worst = fmax(s->react_worst, s->under_at - s->drop_at);
	}
}

/* Put a ping's or a probe's mark in the buffer: false when it is full (dropped). */
static bool mark_in(struct sim *s, double t, bool probe)
{
	struct mark m = { .at = t, .probe = probe };

	if (s->in - s->out > s->buf - MTU)
		return false;
	m.pos = s->in;
	g_array_append_val(s->marks, m);
	return true;
}

/* The marks the line has delivered by t: pings' delays, probes on their way back. */
static void marks_out(struct sim *s, double t, double cap, bool loaded)
{
	/* a line that delivers nothing holds every packet, the first too */
	while (cap > 0 && s->marks_head < s->marks->len) {
		const struct mark *m = &g_array_index(s->marks, struct mark, s->marks_head);
		double d = t - m->at;

		if (m->pos > s->out + 1e-6)
			break;
		if (m->probe) {
			probe_out(s, m, t);
		} else if (loaded) {
			g_array_append_val(s->delays, d);
			s->peak_ms = fmax(s->peak_ms, d * 1000);
			react(s, m->at, d);
		}
		s->marks_head++;
	}
	if (s->marks_head > 4096 && s->marks_head * 2 > s->marks->len) {
		g_array_remove_range(s->marks, 0, s->marks_head);
		s->marks_head = 0;
	}
}

/* A loss: the flows' window shrinks by factor f, once a round trip at most. */
static void tcp_loss(struct sim *s, double t, double f)
{
	double rtt = (double)s->nacks * DT + (s->in - s->out) / fmax(s->shaper, 1);

	s->slow_start = false;
	if (t - s->last_loss < rtt)
		return;
	s->last_loss = t;
	s->wnd = fmax(s->wnd * f, 2 * FLOWS * MTU);
}

/* What the line delivered now is acknowledged a round trip later: the window moves. */
static void tcp_acked(struct sim *s, double out)
{
	unsigned int i = (unsigned int)(s->acked_steps++ % s->nacks);
	double acked = s->acks[i];

	s->acks[i] = out;
	s->acked += acked;
	/* slow start doubles each round trip; then Reno's MSS a round trip per flow */
	s->wnd += s->slow_start ? acked : FLOWS * MTU * acked / s->wnd;
}

/*
 * The flows send what their window allows into the shaper's queue, which
 * the shaper empties at its rate into the line (returned: bytes into the
 * line this step). The shaper is cake: a queue that stays over its target
 * for an interval drops (CoDel), and the window shrinks by one flow's
 * backoff of FLOWS.
 */
static double tcp_step(struct sim *s, double t, bool loaded, uint32_t rtt_us)
{
	double want = s->wnd - (s->tcp_sent - s->acked), out;

	(void)rtt_us;
	if (loaded && want > 0) {
		s->shaper_q += want;
		s->tcp_sent += want;
	}
	out = fmin(s->shaper_q, s->shaper * DT);
	s->shaper_q -= out;
	if (s->shaper > 0 && s->shaper_q / s->shaper > CODEL_TARGET) {
		if (!s->codel_first) {
			s->codel_first = t + CODEL_INTERVAL;
		} else if (t >= s->codel_first && t >= s->codel_next) {
			/* cake drops from the fattest flow: the aggregate loses one flow's 30% */
			tcp_loss(s, t, 1 - 0.3 / FLOWS);
			s->codel_count++;
			s->codel_next = t + CODEL_INTERVAL / sqrt(s->codel_count);
		}
	} else {
		s->codel_first = 0;
		s->codel_count = 0;
	}
	return out;
}

/*
 * The line: the shaper (at the controller's rate, or the line's own for the
 * oracle) fills a FIFO buffer that the line empties at its capacity. Pings
 * and probes take their place in the FIFO: each one's delay is the time it
 * really waited, however the line changed meanwhile (a window with nothing
 * delivered holds everything behind it).
 */
#define LAG 0.070 /* a one-way trip and a sample */

static void run_line(const struct line_case *lc, struct sim *s, int oracle)
{
	struct adapt_params p;
	double t = 0, next_probe = 0, last_probe = 0, next_ping = 0, prev_cap = 0, cap;
	bool loaded, was_loaded = false;
	/* WGSHAPE_ADAPT_TRACE=NAME: each probe of that case on stdout */
	bool trace = !oracle && !g_strcmp0(g_getenv("WGSHAPE_ADAPT_TRACE"), lc->name);

	memset(s, 0, sizeof(*s));
	s->lc = lc;
	s->oracle = oracle;
	s->rng = 42;
	s->min_gap = INFINITY;
	s->steady_lo = INFINITY;
	s->delays = g_array_new(FALSE, FALSE, sizeof(double));
	s->marks = g_array_new(FALSE, FALSE, sizeof(struct mark));
	s->answers = g_array_new(FALSE, FALSE, sizeof(struct answer));
	s->drop_at = -1;
	s->under_at = -1;
	s->rise_at = -1;
	s->asked_at = -INFINITY;
	s->apply_at = -1;
	adapt_params_default(&p, (uint64_t)MBIT(lc->min), (uint64_t)MBIT(lc->base),
			     (uint64_t)MBIT(lc->max));
	p.delivered = lc->delivered;
	adapt_init(&s->ctl, &p);
	s->shaper = s->pending = (double)s->ctl.rate;
	s->wnd = 10 * FLOWS * MTU;
	s->slow_start = true;
	s->last_loss = -INFINITY;
	s->nacks = (unsigned int)lround(2 * owd_base(lc) / DT);
	s->acks = g_new0(double, s->nacks);
	if (lc->trace)
		s->trace = trace_load(lc->trace, &s->window);
	if (lc->buf_packets)
		s->buf = lc->buf_packets * MTU;
	/* else 1.2 s of the fastest rate the schedule has */
	for (size_t i = 0; !lc->buf_packets && i < G_N_ELEMENTS(lc->phases); i++)
		s->buf = fmax(s->buf, 1.2 * MBIT(fmax(lc->phases[i].from, lc->phases[i].to)));

	for (; schedule(s, t, &cap, &loaded); t += DT) {
		double send, out;

		/* the limit: cake at the line itself, which sends what the line takes now */
		if (oracle == LIMIT)
			s->shaper = fmax(0, cap - (s->in - s->out) / DT);
		if (oracle == UNSHAPED)
			s->shaper = INFINITY;
		if (oracle == LAGGED) {
			double lagged;
			bool l;

			if (schedule(s, fmax(0, t - LAG), &lagged, &l))
				s->shaper = lagged;
		}
		send = tcp_step(s, t, loaded, s->ctl.rtt_min_us);
		/* a drop (a step down of a tenth or more) or the load's start
		 * starts a reaction clock */
		if ((prev_cap > 0 && cap < prev_cap * 0.9) || (loaded && !was_loaded)) {
			s->drop_at = t;
			s->reacted = false;
			s->under_at = -1;
		}
		/*
		 * A rise (a step up of a tenth or more) starts the climb's
		 * clock; so does a stall, once its cut is made (the clock then
		 * from the stall's start)
		 */
		if (prev_cap > 0 && cap > prev_cap * 1.1 && loaded)
			s->rise_at = t;
		if (lc->stall_at > 0 && t <= lc->stall_at + 0.3 && t + DT > lc->stall_at + 0.3)
			s->rise_at = lc->stall_at;
		if (s->rise_at >= 0) {
			s->rise_worst = fmax(s->rise_worst, t - s->rise_at);
			if ((double)s->ctl.rate >= 0.85 * cap)
				s->rise_at = -1;
		}
		prev_cap = cap;
		was_loaded = loaded;

		/* what finds no room in the buffer is dropped: TCP sends it again */
		if (send > s->buf - (s->in - s->out)) {
			s->tcp_sent -= send - (s->buf - (s->in - s->out));
			tcp_loss(s, t, 0.75);
			send = s->buf - (s->in - s->out);
		}
		s->in += send;
		if (loaded && t + 1e-9 >= next_ping) {
			if (!mark_in(s, t, false))
				s->pings_lost++;
			next_ping = t + PING_EVERY;
		}
		out = fmin(s->in - s->out, cap * DT);
		s->out += out;
		tcp_acked(s, out);
		s->sent += lc->delivered ? out : send;
		if (loaded) {
			s->delivered += out;
			s->capacity += cap * DT;
		}
		marks_out(s, t, cap, loaded);
		if (lc->steady_from > 0 && t >= lc->steady_from) {
			s->steady_lo = fmin(s->steady_lo, (double)s->ctl.rate);
			s->steady_hi = fmax(s->steady_hi, (double)s->ctl.rate);
			s->steady_cap = cap;
		}
		if (oracle)
			continue;

		answers_in(s, t, trace);
		if (t + 1e-9 >= next_probe) {
			bool silent = (lc->stop_probes_at > 0 && t >= lc->stop_probes_at) ||
				      (lc->silence_secs > 0 && t >= lc->clock_step_at - lc->silence_secs &&
				       t < lc->clock_step_at);

			if (!silent)
				mark_in(s, t, true); /* lost when the buffer is full */
			if (!loaded)
				s->idle_probes++;
			last_probe = t;
			/* idle, no probe: the counters bring the next one */
			next_probe = t + (s->ctl.load >= s->ctl.p.idle_frac * (double)s->ctl.rate
					      ? PROBE_LOADED
					      : INFINITY);
		}
		/*
		 * idle, the daemon reads the tunnel's counters every
		 * COUNTERS_IDLE: traffic brings a probe at once; none, the
		 * controller is quiet (the drift toward base, no probe)
		 */
		if (next_probe - last_probe > PROBE_LOADED && fmod(t, COUNTERS_IDLE) < DT) {
			if (s->sent > 0)
				next_probe = t + DT;
			else if (t - last_probe > 1)
				note_change(s, adapt_quiet(&s->ctl, (uint64_t)llround(t * 1e6) + 1), t);
		}
		/* the daemon's timer: settles and the far end's silence */
		if (fmod(t, PROBE_LOADED) < DT)
			note_change(s, adapt_tick(&s->ctl, (uint64_t)llround(t * 1e6) + 1), t);
		actuate(s, t);
	}
	g_array_sort(s->delays, cmp_double);
	g_array_free(s->marks, TRUE);
	g_array_free(s->answers, TRUE);
	g_free(s->acks);
}

static void run(const struct line_case *lc, struct sim *s)
{
	run_line(lc, s, CONTROLLED);
}

static double pct_ms(const struct sim *s, double q)
{
	if (!s->delays->len)
		return 0;
	return 1000 * g_array_index(s->delays, double, (guint)(q * (s->delays->len - 1)));
}

static double p95_ms(const struct sim *s)
{
	return pct_ms(s, 0.95);
}

static double share_of(const struct sim *s)
{
	return s->capacity > 0 ? s->delivered / s->capacity : 1;
}

/*
 * A recorded line: the adapted run beside the same line unshaped, the
 * limit (cake at the line, told its rate) and a shaper at this end told
 * the line's rate LAG late (what perfect knowledge of the line gives at
 * the end of a path: the price of not being at the line).
 */
static void against_anchors(const struct line_case *lc, const struct sim *s)
{
	static const struct {
		const char *name;
		int mode;
	} anchors[] = { { "unshaped", UNSHAPED }, { "the limit", LIMIT }, { "told 70 ms late", LAGGED } };
	double share[G_N_ELEMENTS(anchors)], p95[G_N_ELEMENTS(anchors)];

	for (size_t i = 0; i < G_N_ELEMENTS(anchors); i++) {
		struct sim a;

		run_line(lc, &a, anchors[i].mode);
		share[i] = share_of(&a);
		p95[i] = p95_ms(&a);
		g_test_message("%s: %s: p50/p95/p99 %.1f/%.1f/%.1f ms, %.0f%% of the capacity",
			       lc->name, anchors[i].name, pct_ms(&a, 0.5), p95[i], pct_ms(&a, 0.99),
			       100 * share[i]);
		g_array_free(a.delays, TRUE);
	}
	g_test_message("%s: adapted: %.0f%% of the limit's goodput, p95 %+.0f ms over the limit's, "
		       "%.0f%% of the unshaped p95",
		       lc->name, 100 * share_of(s) / share[1], p95_ms(s) - p95[1],
		       100 * p95_ms(s) / p95[0]);
	if (lc->of_limit_min > 0)
		g_assert_cmpfloat(share_of(s) / share[1], >=, lc->of_limit_min);
	if (lc->of_unshaped_p95 > 0)
		g_assert_cmpfloat(p95_ms(s), <=, lc->of_unshaped_p95 * p95[0]);
}

static void test_line(gconstpointer data)
{
	const struct line_case *lc = data;
	struct sim s;
	double share, p95;

	run(lc, &s);
	share = s.capacity > 0 ? s.delivered / s.capacity : 1;
	p95 = p95_ms(&s);
	g_test_message("%s: p50/p95/p99 queue %.1f/%.1f/%.1f ms (peak %.0f), %.0f%% of the capacity, "
		       "%u changes (%u cuts, %u undone), least gap %.2f s, worst drop back under "
		       "30 ms after %.2f s, rise found (85%%) after %.2f s, final rate %.2f Mbit/s",
		       lc->name, pct_ms(&s, 0.5), p95, pct_ms(&s, 0.99), s.peak_ms, 100 * share,
		       s.changes, s.cuts, s.stalls, s.min_gap, s.react_worst, s.rise_worst,
		       (double)s.ctl.rate * 8 / 1e6);
	if (lc->trace)
		against_anchors(lc, &s);
	if (lc->p50_max_ms > 0)
		g_assert_cmpfloat(pct_ms(&s, 0.5), <=, lc->p50_max_ms);

	g_assert_false(s.out_of_range);
	/* no two changes within the hold-off (the settle after a cut is the cut's own) */
	g_assert_cmpfloat(s.min_gap, >=, s.ctl.p.holdoff_us / 1e6 - 2 * DT);
	if (lc->p95_max_ms > 0)
		g_assert_cmpfloat(p95, <=, lc->p95_max_ms);
	if (lc->share_min > 0)
		g_assert_cmpfloat(share, >=, lc->share_min);
	if (lc->react_max_s > 0)
		g_assert_cmpfloat(s.react_worst, <=, lc->react_max_s);
	if (lc->rise_max_s > 0)
		g_assert_cmpfloat(s.rise_worst, <=, lc->rise_max_s);
	if (lc->steady_from > 0) {
		g_test_message("%s: steady: %u cuts, rate %.2f..%.2f Mbit/s on a %.2f Mbit/s line, "
			       "%u offset moves",
			       lc->name, s.steady_cuts, s.steady_lo * 8 / 1e6,
			       s.steady_hi * 8 / 1e6, s.steady_cap * 8 / 1e6, s.ctl.offset_moves);
		/* a look past the ceiling every 3 s or so, each a small cut: not more */
		g_assert_cmpuint(s.steady_cuts, <=, 12);
		g_assert_cmpfloat(s.steady_lo, >=, 0.80 * s.steady_cap);
		g_assert_cmpfloat(s.steady_hi, <=, 1.08 * s.steady_cap);
	}
	/* the stall's cut was undone */
	if (lc->stall_at > 0)
		g_assert_cmpuint(s.stalls, >=, 1);
	if (lc->stop_probes_at > 0) {
		g_assert_cmpuint(s.lost, ==, 1);
		g_assert_cmpuint(s.ctl.rate, ==, s.ctl.p.base);
	}
	g_array_free(s.delays, TRUE);
}

static const struct line_case cases[] = {
	{
		.name = "step 30-8-30",
		.phases = { { 20, 30, 30, true }, { 20, 8, 8, true }, { 20, 30, 30, true } },
		.base = 28, .min = 2, .max = 40, .noise_ms = 2,
		.p95_max_ms = 30, .share_min = 0.80, .react_max_s = 2, .rise_max_s = 8,
	},
	{
		.name = "step 30-8-30, base 8",
		.phases = { { 20, 30, 30, true }, { 20, 8, 8, true }, { 20, 30, 30, true } },
		.base = 8, .min = 2, .max = 40, .noise_ms = 2,
		.p95_max_ms = 30, .share_min = 0.80, .react_max_s = 2, .rise_max_s = 8,
	},
	{
		/* the download, counted as the client receives it */
		.name = "step 30-8-30, delivered",
		.phases = { { 20, 30, 30, true }, { 20, 8, 8, true }, { 20, 30, 30, true } },
		.base = 28, .min = 2, .max = 40, .noise_ms = 2, .delivered = true,
		.p95_max_ms = 30, .share_min = 0.80, .react_max_s = 2, .rise_max_s = 8,
	},
	{
		/* and one count in four late by half */
		.name = "step 30-8-30, delivered, lumpy",
		.phases = { { 20, 30, 30, true }, { 20, 8, 8, true }, { 20, 30, 30, true } },
		.base = 28, .min = 2, .max = 40, .noise_ms = 2, .delivered = true, .lumpy_every = 4,
		.p95_max_ms = 30, .share_min = 0.80, .react_max_s = 2, .rise_max_s = 8,
	},
	{
		.name = "ramp 30-8-30",
		.phases = { { 20, 30, 8, true }, { 20, 8, 30, true } },
		.base = 28, .min = 2, .max = 40, .noise_ms = 2,
		.p95_max_ms = 30, .share_min = 0.80,
	},
	{
		.name = "steady 20, noisy",
		.phases = { { 60, 20, 20, true } },
		.base = 30, .min = 2, .max = 40, .noise_ms = 5, .spike_every = 50,
		.p95_max_ms = 20, .share_min = 0.85, .steady_from = 15,
	},
	/*
	 * A busy host: answers late by up to 25 ms, while no queue of the
	 * line's is there. Not a queue: the rate stays near the line, and the
	 * line's real queue low.
	 */
	{
		.name = "steady 20, busy host",
		.phases = { { 60, 20, 20, true } },
		.base = 30, .min = 2, .max = 40, .noise_ms = 2, .late_ms = 25,
		.p95_max_ms = 20, .share_min = 0.85, .steady_from = 15,
	},
	{
		/* a CPU stall, no queue: the cut it causes is undone within seconds */
		.name = "steady 20, a stall",
		.phases = { { 60, 20, 20, true } },
		.base = 30, .min = 2, .max = 40, .noise_ms = 2, .stall_at = 30,
		.p95_max_ms = 20, .share_min = 0.85, .rise_max_s = 5,
	},
	{
		.name = "step 30-8-30, busy host",
		.phases = { { 20, 30, 30, true }, { 20, 8, 8, true }, { 20, 30, 30, true } },
		.base = 28, .min = 2, .max = 40, .noise_ms = 2, .late_ms = 25,
		.p95_max_ms = 30, .share_min = 0.80, .react_max_s = 2, .rise_max_s = 8,
	},
	/*
	 * Past what a delay-based controller can do in 2 s: three probes (150 ms)
	 * see the queue, and 47 Mbit/s too much for 150 ms is 2.3 s of queue at
	 * 3 Mbit/s, which takes 3 s to drain at a quarter of the line. Asserted:
	 * that it drains in about that, and the line is found again.
	 */
	{
		.name = "deep drop 50-3-50",
		.phases = { { 20, 50, 50, true }, { 20, 3, 3, true }, { 20, 50, 50, true } },
		.base = 45, .min = 1, .max = 60, .noise_ms = 1,
		.share_min = 0.60, .react_max_s = 3.5, .rise_max_s = 8,
	},
	{
		/* the load starts at a base almost 4 times the line (a deep drop) */
		.name = "idle back to base",
		.phases = { { 15, 8, 8, true }, { 60, 8, 8, false } },
		.base = 30, .min = 2, .max = 40, .noise_ms = 1,
		.react_max_s = 2,
	},
	/*
	 * Recorded cellular lines (tests/traces/, from mahimahi's traces), with
	 * 1,000 packets of buffer and 40 ms of round trip: each download as
	 * the client's daemon adapts it (counted as received, the rate put in
	 * place at the server through the rate channel), each upload as its
	 * egress; the base about the line's median, the range a tenth of it
	 * to its peaks. Asserted: the p50 under 10 ms (issue 24's goal), and
	 * goodput and p95 against the anchors no worse than today's, less a
	 * margin (today: 55-77% of the limit's goodput, p95 3-56% of the
	 * unshaped; the goal, 90% and p95 within 50 ms of the limit's, is out
	 * of reach even for a shaper told the line 70 ms late: see
	 * docs/adaptation.md).
	 */
#define TRACE_LINE .owd_ms = 20, .buf_packets = 1000, .noise_ms = 1
#define DOWNLOAD .delivered = true, .channel = true
	{
		.name = "trace ATT-LTE-driving.down",
		.trace = "ATT-LTE-driving.down", TRACE_LINE, DOWNLOAD,
		.base = 5, .min = 0.5, .max = 30,
		.of_limit_min = 0.65, .of_unshaped_p95 = 0.10, .p50_max_ms = 10,
	},
	{
		.name = "trace ATT-LTE-driving.up",
		.trace = "ATT-LTE-driving.up", TRACE_LINE,
		.base = 0.8, .min = 0.08, .max = 3,
		.of_limit_min = 0.60, .of_unshaped_p95 = 0.70, .p50_max_ms = 10,
	},
	{
		.name = "trace TMobile-UMTS-driving.down",
		.trace = "TMobile-UMTS-driving.down", TRACE_LINE, DOWNLOAD,
		.base = 2, .min = 0.2, .max = 9,
		.of_limit_min = 0.60, .of_unshaped_p95 = 0.25, .p50_max_ms = 10,
	},
	{
		.name = "trace TMobile-UMTS-driving.up",
		.trace = "TMobile-UMTS-driving.up", TRACE_LINE,
		.base = 1, .min = 0.1, .max = 3.5,
		.of_limit_min = 0.60, .of_unshaped_p95 = 0.10, .p50_max_ms = 10,
	},
	{
		.name = "trace Verizon-LTE-short.down",
		.trace = "Verizon-LTE-short.down", TRACE_LINE, DOWNLOAD,
		.base = 4, .min = 0.4, .max = 20,
		.of_limit_min = 0.50, .of_unshaped_p95 = 0.10, .p50_max_ms = 10,
	},
	{
		.name = "trace Verizon-LTE-short.up",
		.trace = "Verizon-LTE-short.up", TRACE_LINE,
		.base = 5, .min = 0.5, .max = 16,
		.of_limit_min = 0.50, .of_unshaped_p95 = 0.10, .p50_max_ms = 10,
	},
	/* the other way round: lines the law was not tuned on */
	{
		.name = "trace ATT-LTE-driving.down as an upload",
		.trace = "ATT-LTE-driving.down", TRACE_LINE,
		.base = 5, .min = 0.5, .max = 30,
		.of_limit_min = 0.65, .of_unshaped_p95 = 0.10, .p50_max_ms = 10,
	},
	{
		.name = "trace Verizon-LTE-short.up as a download",
		.trace = "Verizon-LTE-short.up", TRACE_LINE, DOWNLOAD,
		.base = 5, .min = 0.5, .max = 16,
		.of_limit_min = 0.45, .of_unshaped_p95 = 0.10, .p50_max_ms = 10,
	},
	{
		.name = "trace TMobile-UMTS-driving.down as an upload",
		.trace = "TMobile-UMTS-driving.down", TRACE_LINE,
		.base = 2, .min = 0.2, .max = 9,
		.of_limit_min = 0.55, .of_unshaped_p95 = 0.25, .p50_max_ms = 10,
	},
	{
		.name = "trace TMobile-UMTS-driving.up as a download",
		.trace = "TMobile-UMTS-driving.up", TRACE_LINE, DOWNLOAD,
		.base = 1, .min = 0.1, .max = 3.5,
		.of_limit_min = 0.65, .of_unshaped_p95 = 0.15, .p50_max_ms = 10,
	},
	/*
	 * The clocks' offset steps (issue 28, item 3): a far end's reboot, a
	 * one-off bogus timestamp, this end's suspend (5 s of silence, then
	 * the offset half a second off). The one-way delay moves, the round
	 * trip does not: no queue, and the rate stays near the line.
	 */
	{
		.name = "clock step +500 ms",
		.phases = { { 20, 20, 20, true }, { 40, 20, 20, true } },
		.base = 20, .min = 2, .max = 40, .noise_ms = 1,
		.clock_step_at = 20, .clock_step_ms = 500,
		.p95_max_ms = 20, .share_min = 0.85,
	},
	{
		.name = "clock step -500 ms",
		.phases = { { 20, 20, 20, true }, { 40, 20, 20, true } },
		.base = 20, .min = 2, .max = 40, .noise_ms = 1,
		.clock_step_at = 20, .clock_step_ms = -500,
		.p95_max_ms = 20, .share_min = 0.85,
	},
	{
		.name = "one bogus timestamp",
		.phases = { { 20, 20, 20, true }, { 40, 20, 20, true } },
		.base = 20, .min = 2, .max = 40, .noise_ms = 1,
		.bogus_at = 20, .bogus_ms = 300,
		.p95_max_ms = 20, .share_min = 0.85,
	},
	{
		.name = "suspend, offset +500 ms",
		.phases = { { 20, 20, 20, true }, { 40, 20, 20, true } },
		.base = 20, .min = 2, .max = 40, .noise_ms = 1,
		.clock_step_at = 25, .clock_step_ms = 500, .silence_secs = 5,
		.share_min = 0.70,
	},
	{
		.name = "far end gone",
		.phases = { { 10, 8, 8, true }, { 10, 8, 8, true } },
		.base = 20, .min = 2, .max = 40, .noise_ms = 1, .stop_probes_at = 10,
	},
	{
		/* gone while idle (no probe goes then): said when the load brings probes */
		.name = "far end gone while idle",
		.phases = { { 10, 8, 8, true }, { 10, 8, 8, false }, { 10, 8, 8, true } },
		.base = 20, .min = 2, .max = 40, .noise_ms = 1, .stop_probes_at = 15,
	},
};

/* after 60 s idle the rate is back within 5% of the base */
static void test_idle_returns(void)
{
	const struct line_case *lc = NULL;
	struct sim s;

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		if (!strcmp(cases[i].name, "idle back to base"))
			lc = &cases[i];
	g_assert_nonnull(lc);
	run(lc, &s);
	g_test_message("idle: %.2f Mbit/s after 60 s idle (base 30), %u probes while idle",
		       (double)s.ctl.rate * 8 / 1e6, s.idle_probes);
	g_assert_cmpfloat(fabs((double)s.ctl.rate - MBIT(30)), <=, 0.05 * MBIT(30));
	/*
	 * an idle tunnel costs no probes: the few that see the load end (50 ms
	 * apart), then none (one a second before, 60 in this minute)
	 */
	g_assert_cmpuint(s.idle_probes, <=, 5);
	g_array_free(s.delays, TRUE);
}

/* the bounds hold whatever the samples say */
static void test_bounds(void)
{
	struct adapt_params p;
	struct adapt_ctl c;
	uint64_t t = 1;

	adapt_params_default(&p, 1000000, 5000000, 6000000);
	adapt_init(&c, &p);
	/* loaded at the baseline for a minute: raises stop at max */
	for (int i = 0; i < 1200; i++, t += 50000)
		adapt_sample(
		    &c, &(struct adapt_sample){.now_us = t, .delay_us = 5000, .sent = c.rate / 20});
	g_assert_cmpuint(c.rate, ==, 6000000);
	/* a queue growing fast: cuts stop at min */
	for (int i = 0; i < 1200; i++, t += 50000)
		adapt_sample(&c, &(struct adapt_sample){.now_us = t,
							.delay_us = 5000 + (int64_t)i * 50000,
							.sent = c.rate / 20});
	g_assert_cmpuint(c.rate, ==, 1000000);
	g_assert_cmpstr(adapt_why_name(ADAPT_QUEUE), ==, "queue");
	g_assert_cmpstr(adapt_why_name((enum adapt_why)99), ==, "?");
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *path = g_strdup_printf("/adapt/line/%s", cases[i].name);

		g_test_add_data_func(path, &cases[i], test_line);
	}
	g_test_add_func("/adapt/idle-returns", test_idle_returns);
	g_test_add_func("/adapt/bounds", test_bounds);
	return g_test_run();
}
