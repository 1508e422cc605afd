// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One tunnel's adaptation (adapter.h): a timer, the prober's socket and the
 * rate channel's socket are its inputs.
 *
 * Timing. Idle, the timer looks at the tunnel's counters every IDLE_TICK_MS
 * (one netlink request) and sends no probe: the controllers are quiet
 * (adapt_quiet: the drift toward the base rate, in time). Traffic (a
 * direction sending a tenth of its rate) sends a probe at once and brings
 * them to every LOADED_TICK_MS until every direction has been idle for a
 * second, or, unanswered, until the far end is given up on. The controllers' own timer work (a settle falling due, the far
 * end's silence) rides on the same ticks. One probe at the start says
 * whether the far end answers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>
#include <glib-unix.h>

#include "adapt/controller.h"
#include "adapt/probe.h"
#include "adapt/trace.h"
#include "channel/client.h"
#include "channel/lease.h"
#include "daemon/adapter.h"
#include "daemon/adapter-state.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "shape/units.h"
#include "util/log.h"

#define LOADED_TICK_MS 50
#define IDLE_TICK_MS 200
#define IDLE_AFTER_US 1000000 /* no direction loaded this long: back to idle ticks */
#define STATE_EVERY_US 1000000
#define STATE_REFRESH_US 5000000
#define DOWNLOAD_RENEW_US (RATE_RENEW_S / 2 * G_USEC_PER_SEC)
#define ADAPT_ASK_MS 300 /* the server's bucket gives a peer one request every RATE_REFILL_S */
#define ASK_RETRY_MS 1000

enum { AD_EGRESS, AD_INGRESS, AD_DOWNLOAD, AD_N };
static const char *const dir_names[AD_N] = { "egress", "ingress", "download" };
static const enum adapt_trace_dir trace_dirs[AD_N] = { ADAPT_TRACE_EGRESS, ADAPT_TRACE_INGRESS,
						       ADAPT_TRACE_DOWNLOAD };

struct adapt_dir {
	bool on;
	struct adapt_ctl ctl;
	uint64_t min, base, max; /* as configured, bytes/s */
	uint64_t bytes; /* the counter at the last sample */
	uint64_t look_bytes; /* ... and at the last idle look */
	bool have_bytes, have_look;
	uint64_t applied; /* the rate in place (the server's answer for the download); 0: base */
	int64_t changed_at; /* CLOCK_REALTIME s of the last change */
	enum adapt_why last_why;
};

struct adapter {
	struct adapt_env env;
	char ifname[IFNAME_SIZE];
	char ifb[IFNAME_SIZE];
	char server[INET6_ADDRSTRLEN];
	int ifindex, ifb_index; /* 0: to be looked up */
	char *log; /* the trace's path, as configured */
	struct adapt_dir dir[AD_N];
	struct adapt_probe *probe;
	guint probe_src, timer;
	bool fast;
	gint64 last_probe_us, loaded_at_us, state_at_us;
	gint64 answer_at_us; /* the last answer to a probe */
	bool state_dirty;
	/* the download, through the rate channel */
	int rate_fd;
	guint rate_src;
	/* the last requests' tokens and rates, newest at [0]: a late answer still counts */
#define ASKED_KEPT 4
	uint32_t tokens[ASKED_KEPT];
	uint64_t rates[ASKED_KEPT];
	uint32_t lease_s; /* the lease the server gave; 0: none yet */
	uint64_t asked; /* the rate of the request in flight (or the last) */
	bool answered; /* ... and the server answered it */
	uint64_t confirmed; /* the rate asked of the last request the server applied */
	gint64 asked_at_us;
	struct adapt_trace *trace;
	bool trace_failed; /* the last line could not be written (said once) */
	bool unstamped_said, lost_said;
};

static uint64_t now_us(void)
{
	return (uint64_t)g_get_monotonic_time();
}

/* ifname's index, looked up again when it is not known or the link is gone. */
static int index_of(struct adapter *a, const char *ifname, int *cache, bool again)
{
	struct link_info link;
	int r;

	if (*cache && !again)
		return 0;
	r = netlink_link_get(a->env.nl, ifname, &link);
	*cache = r == 0 ? link.ifindex : 0;
	return r;
}

/* What direction i's shaper sent (or the tunnel received), in total. */
static int read_counter(struct adapter *a, int i, uint64_t *out)
{
	const char *dev = i == AD_INGRESS ? a->ifb : a->ifname;
	int *cache = i == AD_INGRESS ? &a->ifb_index : &a->ifindex;
	struct qdisc_info q = { 0 };
	uint64_t tx;
	int r;

	for (int again = 0; again < 2; again++) {
		r = index_of(a, dev, cache, again);
		if (r < 0)
			return r;
		if (i == AD_DOWNLOAD)
			r = netlink_link_bytes(a->env.nl, *cache, out, &tx);
		else
			r = netlink_qdisc_root(a->env.nl, *cache, &q);
		if (r != -ENODEV && r != -ENOENT)
			break;
	}
	if (r == 0 && i != AD_DOWNLOAD) {
		if (strcmp(q.kind, "cake") != 0)
			r = -ENOENT;
		else
			*out = q.stats.bytes;
	}
	qdisc_info_clear(&q);
	return r;
}

static void trace_row(struct adapter *a, int i, const struct adapt_ctl *c, enum adapt_why why,
		      uint32_t rtt_us)
{
	struct adapt_trace_row row = {
		.dir = trace_dirs[i],
		.rate_bps = c->rate * 8,
		.delay_us = adapt_added_us(c),
		.rtt_us = rtt_us,
		.load_bps = (uint64_t)(c->load * 8),
		.why = why,
	};

	int r;

	if (!a->trace)
		return;
	r = adapt_trace_write(a->trace, now_us(), &row);
	if (r < 0 && !a->trace_failed)
		log_warn("%s: adapt-log %s: %s; lines are lost until it can be written", a->ifname,
			 a->log, strerror(-r));
	a->trace_failed = r < 0;
}

static void rate_ask(struct adapter *a, uint64_t rate)
{
	int r;

	memmove(a->tokens + 1, a->tokens, sizeof(a->tokens) - sizeof(a->tokens[0]));
	memmove(a->rates + 1, a->rates, sizeof(a->rates) - sizeof(a->rates[0]));
	a->tokens[0] = g_random_int() | 1; /* 0: none */
	a->rates[0] = rate;
	a->asked = rate;
	a->answered = false;
	a->asked_at_us = g_get_monotonic_time();
	r = rate_client_send(a->rate_fd, rate, a->tokens[0]);
	if (r < 0)
		log_debug("%s: adapt: asking %s for the download rate: %s", a->ifname, a->server,
			  strerror(-r));
}

/*
 * The download's rate, asked of the server at most every ADAPT_ASK_MS (its
 * bucket: proto's RATE_BURST, RATE_REFILL_S): the newest wish when that
 * time has passed, again when the last request got no answer within
 * ASK_RETRY_MS, and once every DOWNLOAD_RENEW_US for the lease.
 */
static void rate_ask_due(struct adapter *a)
{
	const struct adapt_dir *d = &a->dir[AD_DOWNLOAD];
	gint64 since = g_get_monotonic_time() - a->asked_at_us;
	/* a third of the lease the server gives, so that a short one never lapses */
	gint64 renew = a->lease_s ? MIN(DOWNLOAD_RENEW_US, (gint64)a->lease_s * G_USEC_PER_SEC / 3) :
				    DOWNLOAD_RENEW_US;

	if (!d->on || since < ADAPT_ASK_MS * 1000)
		return;
	if (d->ctl.rate != a->asked || (!a->answered && since >= ASK_RETRY_MS * 1000) ||
	    since >= renew)
		rate_ask(a, d->ctl.rate);
}

/* Direction i's controller changed its rate (why): put it in place. */
static void apply(struct adapter *a, int i, enum adapt_why why)
{
	struct adapt_dir *d = &a->dir[i];
	char rate[UNITS_BUFSZ];

	d->last_why = why;
	d->changed_at = time(NULL);
	a->state_dirty = true;
	format_rate(rate, sizeof(rate), d->ctl.rate);
	log_debug("%s: adapt: %s %s (%s; %+.1f ms over the baseline)", a->ifname, dir_names[i],
		  rate, adapt_why_name(why), (double)adapt_added_us(&d->ctl) / 1000);
	if (i == AD_DOWNLOAD) {
		rate_ask_due(a);
		return;
	}
	d->applied = d->ctl.rate;
	a->env.reshape(a->env.ud, a->ifname);
}

static void note_lost(struct adapter *a, enum adapt_why why)
{
	if (why == ADAPT_LOST && !a->lost_said) {
		log_warn("%s: adapt: %s stopped answering probes: back to the base rates", a->ifname,
			 a->server);
		a->lost_said = true;
	}
}

static void write_state(struct adapter *a)
{
	struct adapter_state st = { .lost = a->lost_said, .stamped = !a->unstamped_said };

	G_STATIC_ASSERT((int)AD_N == (int)ADAPTER_NDIRS);
	g_strlcpy(st.server, a->server, sizeof(st.server));
	for (int i = 0; i < AD_N; i++) {
		const struct adapt_dir *d = &a->dir[i];

		if (!d->on)
			continue;
		st.dir[i] = (struct adapter_state_dir){
			.on = true,
			.rate = d->ctl.rate * 8,
			.applied = (d->applied ? d->applied : d->base) * 8,
			.min = d->min * 8,
			.base = d->base * 8,
			.max = d->max * 8,
			.baseline_us = d->ctl.baseline_us,
			.delay_us = adapt_added_us(&d->ctl),
			.rtt_us = d->ctl.rtt_min_us,
			.load = (uint64_t)(d->ctl.load * 8),
			.changed = d->changed_at,
		};
		g_strlcpy(st.dir[i].why, adapt_why_name(d->last_why), sizeof(st.dir[i].why));
	}
	if (adapter_state_save(a->env.statedir, a->ifname, &st) < 0)
		log_debug("%s: adapt: could not write %s%s", a->ifname, a->ifname,
			  ADAPT_STATE_SUFFIX);
	a->state_dirty = false;
	a->state_at_us = g_get_monotonic_time();
}

static void send_probe(struct adapter *a)
{
	int r = adapt_probe_send(a->probe);

	a->last_probe_us = g_get_monotonic_time();
	if (r < 0)
		log_debug("%s: adapt: probe: %s", a->ifname, strerror(-r));
}

static gboolean on_tick(gpointer data);

/*
 * Probing, no answer for a second and the far end not yet given up on: the
 * load is not known (it is measured between answers), so the probes go on
 * until the controllers say the far end is lost (lost_us), however idle the
 * tunnel looks.
 */
static bool unanswered(const struct adapter *a, gint64 t)
{
	if (!a->fast || t - a->answer_at_us < IDLE_AFTER_US)
		return false;
	for (int i = 0; i < AD_N; i++)
		if (a->dir[i].on && !a->dir[i].ctl.lost)
			return true;
	return false;
}

static void set_fast(struct adapter *a, bool fast)
{
	if (a->fast == fast && a->timer)
		return;
	if (a->fast && !fast)
		a->state_dirty = true; /* the load as it is now idle, once */
	a->fast = fast;
	if (a->timer)
		g_source_remove(a->timer);
	a->timer = g_timeout_add(fast ? LOADED_TICK_MS : IDLE_TICK_MS, on_tick, a);
}

static gboolean on_tick(gpointer data)
{
	struct adapter *a = data;
	uint64_t t = now_us(), rx = 0, tx = 0;
	bool traffic = false, have_bytes = false;

	if (!a->fast && index_of(a, a->ifname, &a->ifindex, false) == 0) {
		have_bytes = netlink_link_bytes(a->env.nl, a->ifindex, &rx, &tx) == 0;
		if (!have_bytes)
			a->ifindex = 0; /* gone, or another link now: look it up again */
	}

	for (int i = 0; i < AD_N; i++) {
		struct adapt_dir *d = &a->dir[i];
		enum adapt_why why;
		uint64_t bytes;

		if (!d->on)
			continue;
		why = a->fast ? adapt_tick(&d->ctl, t) : adapt_quiet(&d->ctl, t);
		note_lost(a, why);
		if (why == ADAPT_LOST)
			d->ctl.load = 0; /* nothing known: the probes slow down */
		if (why != ADAPT_NONE) {
			trace_row(a, i, &d->ctl, why, 0);
			apply(a, i, why);
		}
		if (d->ctl.load >= d->ctl.p.idle_frac * (double)d->ctl.rate)
			a->loaded_at_us = (gint64)t;
		/*
		 * idle: traffic since the last look brings the probes forward
		 * (the tunnel's own counters, one look for every direction: what
		 * it sent for egress, received for the others)
		 */
		if (!a->fast && have_bytes) {
			bytes = i == AD_EGRESS ? tx : rx;
			if (d->have_look && bytes >= d->look_bytes &&
			    (double)(bytes - d->look_bytes) * 1000 / IDLE_TICK_MS >=
						    d->ctl.p.idle_frac * (double)d->ctl.rate)
				traffic = true;
			d->look_bytes = bytes;
			d->have_look = true;
		}
	}
	if (traffic)
		a->loaded_at_us = (gint64)t;
	if (a->fast || traffic || !a->last_probe_us)
		send_probe(a);
	set_fast(a, (gint64)t - a->loaded_at_us < IDLE_AFTER_US || unanswered(a, (gint64)t));
	rate_ask_due(a);
	/* a change within a second; the delays and the load every few seconds */
	if ((a->state_dirty && (gint64)t - a->state_at_us >= STATE_EVERY_US) ||
	    (a->fast && (gint64)t - a->state_at_us >= STATE_REFRESH_US))
		write_state(a);
	return G_SOURCE_CONTINUE;
}

/* One answer: a sample for each direction. */
static void on_owd(struct adapter *a, const struct adapt_owd *o)
{
	if (!o->stamped) {
		if (!a->unstamped_said)
			log_warn("%s: adapt: %s answers probes without its times (an older "
				 "wgshape): no one-way delays, no adaptation", a->ifname, a->server);
		a->unstamped_said = true;
		return;
	}
	a->answer_at_us = g_get_monotonic_time();
	if (a->lost_said) {
		log_info("%s: adapt: %s answers probes again", a->ifname, a->server);
		a->lost_said = false;
	}
	for (int i = 0; i < AD_N; i++) {
		struct adapt_dir *d = &a->dir[i];
		struct adapt_sample s = {
			.now_us = o->back_ns / 1000,
			.delay_us = (i == AD_EGRESS ? o->up_ns : o->down_ns) / 1000,
			/* a round trip past 10 s is no line's: it would set hour-long hold-offs */
			.rtt_us = (uint32_t)CLAMP(o->rtt_ns / 1000, 0, 10000000),
		};
		enum adapt_why why;
		uint64_t bytes;

		if (!d->on || read_counter(a, i, &bytes) < 0)
			continue;
		s.sent = d->have_bytes && bytes >= d->bytes ? bytes - d->bytes : 0;
		d->bytes = bytes;
		if (!d->have_bytes) {
			d->have_bytes = true;
			continue; /* the first look: nothing to compare with */
		}
		why = adapt_sample(&d->ctl, &s);
		trace_row(a, i, &d->ctl, why, s.rtt_us);
		if (why != ADAPT_NONE)
			apply(a, i, why);
	}
}

static gboolean on_probe_fd(gint fd, GIOCondition cond, gpointer data)
{
	struct adapter *a = data;
	struct adapt_owd o;
	int r;

	while ((r = adapt_probe_read(a->probe, &o)) == 1)
		on_owd(a, &o);
	if (r < 0 && r != -ECONNREFUSED)
		log_debug("%s: adapt: reading answers: %s", a->ifname, strerror(-r));
	return G_SOURCE_CONTINUE;
}

/*
 * The server holds the download to its own bounds (client-download-min/-max
 * there): the controller's range shrinks to them, so that it does not ask
 * past them again and again (said once).
 */
static void clamped(struct adapter *a, uint64_t rate)
{
	struct adapt_ctl *c = &a->dir[AD_DOWNLOAD].ctl;
	char b[UNITS_BUFSZ];

	if (rate < c->p.min || rate > c->p.max)
		return; /* outside our own range: it cannot be a bound of ours to take */
	if (rate < a->asked)
		c->p.max = rate;
	else
		c->p.min = rate;
	c->rate = rate;
	a->asked = rate;
	format_rate(b, sizeof(b), rate);
	log_info("%s: adapt: %s holds the download within its bounds: %s %s from now on",
		 a->ifname, a->server, rate < c->p.max ? "at least" : "at most", b);
}

static gboolean on_rate_fd(gint fd, GIOCondition cond, gpointer data)
{
	struct adapter *a = data;
	struct adapt_dir *d = &a->dir[AD_DOWNLOAD];
	struct rate_record rec;
	struct rate_msg m;
	char said[256];

	while (rate_client_recv(fd, 0, &m) == 1) {
		unsigned int k;
		uint64_t asked;

		for (k = 0; k < ASKED_KEPT && a->tokens[k] != m.token; k++)
			;
		if (!m.token || k == ASKED_KEPT || !d->on)
			continue; /* not an answer to a request of ours still remembered */
		asked = a->rates[k];
		if (k == 0)
			a->answered = true;
		if (m.status == RATE_FAILED) {
			/* the server could not apply it (its log says why): asked again */
			a->answered = false;
			continue;
		}
		if ((m.status != RATE_APPLIED && m.status != RATE_CLAMPED) || !m.rate) {
			rec = (struct rate_record){ .status = m.status };
			rate_record_describe(&rec, said, sizeof(said));
			log_warn("%s: adapt: asked %s for the download rate: %s; the download is "
				 "not adapted", a->ifname, a->server, said);
			d->on = false;
			a->confirmed = 0;
			a->state_dirty = true;
			continue;
		}
		if (k > 0 && a->answered)
			continue; /* an older request, answered after a newer one: not in force */
		d->applied = m.rate;
		a->lease_s = m.lease;
		if (m.status == RATE_CLAMPED)
			clamped(a, m.rate);
		a->confirmed = asked;
		rec = (struct rate_record){ .asked = asked, .port = a->env.port,
					    .at = time(NULL), .at_boot = lease_now(),
					    .status = m.status, .rate = m.rate,
					    .fallback = m.fallback, .lease = m.lease };
		g_strlcpy(rec.server, a->server, sizeof(rec.server));
		g_strlcpy(rec.source, "adapt", sizeof(rec.source));
		rate_record_save(a->env.statedir, a->ifname, &rec);
	}
	return G_SOURCE_CONTINUE;
}

/*
 * Each direction's min, base and max as section c says (base 0: not
 * adapted): the download at the server when the section asks the server
 * for one, else the IFB's.
 */
static void section_ranges(const struct conf_section *c, uint64_t range[AD_N][3])
{
	const struct conf_adapt *ca = &c->adapt;
	uint64_t in = !c->net.download && c->req.ingress == DIR_SET ? c->req.ingress_rate : 0;

	memset(range, 0, sizeof(uint64_t[AD_N][3]));
	range[AD_EGRESS][0] = ca->egress_min;
	range[AD_EGRESS][1] = c->req.egress == DIR_SET ? c->req.egress_rate : 0;
	range[AD_EGRESS][2] = ca->egress_max;
	range[AD_INGRESS][0] = ca->ingress_min;
	range[AD_INGRESS][1] = in;
	range[AD_INGRESS][2] = ca->ingress_max;
	range[AD_DOWNLOAD][0] = ca->download_min;
	range[AD_DOWNLOAD][1] = c->net.download;
	range[AD_DOWNLOAD][2] = ca->download_max;
}

/* delivered: its load is counted after the line (the download, the IFB) */
static void dir_init(struct adapt_dir *d, uint64_t min, uint64_t base, uint64_t max,
		     bool delivered)
{
	struct adapt_params p;

	if (!base)
		return;
	d->on = true;
	d->min = min;
	d->base = base;
	d->max = max;
	adapt_params_default(&p, min, base, max);
	p.delivered = delivered;
	adapt_init(&d->ctl, &p);
}

struct adapter *adapter_new(const struct adapt_env *env, const char *ifname,
			    const struct conf_section *c, const char *server, char *why,
			    size_t whylen)
{
	struct adapter *a = g_new0(struct adapter, 1);
	uint64_t range[AD_N][3];
	int r;

	a->env = *env;
	a->rate_fd = -1;
	g_strlcpy(a->ifname, ifname, sizeof(a->ifname));
	g_strlcpy(a->server, server, sizeof(a->server));
	shape_ifb_name(ifname, a->ifb);
	a->log = g_strdup(c->adapt.log);
	section_ranges(c, range);
	for (int i = 0; i < AD_N; i++)
		dir_init(&a->dir[i], range[i][0], range[i][1], range[i][2], i != AD_EGRESS);
	r = adapt_probe_open(ifname, server, env->port, &a->probe);
	if (r < 0) {
		snprintf(why, whylen, "probes to %s port %u: %s", server, env->port, strerror(-r));
		goto fail;
	}
	if (a->dir[AD_DOWNLOAD].on) {
		a->rate_fd = rate_client_socket(ifname, server, env->port);
		if (a->rate_fd < 0) {
			snprintf(why, whylen, "the rate channel to %s: %s", server,
				 strerror(-a->rate_fd));
			goto fail;
		}
		a->rate_src = g_unix_fd_add(a->rate_fd, G_IO_IN, on_rate_fd, a);
		/* the base rate: asked by reconcile */
		a->asked = a->dir[AD_DOWNLOAD].ctl.rate;
		a->answered = true;
		a->asked_at_us = g_get_monotonic_time();
	}
	if (a->log && (r = adapt_trace_open(a->log, now_us(), &a->trace)) < 0)
		log_warn("%s: adapt-log %s: %s; no trace", ifname, a->log, strerror(-r));
	a->probe_src = g_unix_fd_add(adapt_probe_fd(a->probe), G_IO_IN, on_probe_fd, a);
	set_fast(a, false);
	send_probe(a);
	a->state_dirty = true;
	return a;
fail:
	adapter_free(a);
	return NULL;
}

void adapter_free(struct adapter *a)
{
	if (!a)
		return;
	if (a->timer)
		g_source_remove(a->timer);
	if (a->probe_src)
		g_source_remove(a->probe_src);
	if (a->rate_src)
		g_source_remove(a->rate_src);
	if (a->rate_fd >= 0)
		close(a->rate_fd);
	adapt_probe_free(a->probe);
	adapt_trace_close(a->trace);
	adapter_state_remove(a->env.statedir, a->ifname);
	g_free(a->log);
	g_free(a);
}

bool adapter_matches(const struct adapter *a, const struct conf_section *c, const char *server,
		     unsigned int port)
{
	uint64_t range[AD_N][3];

	if ((server && strcmp(a->server, server) != 0) || a->env.port != port ||
	    g_strcmp0(a->log, c->adapt.log) != 0)
		return false;
	section_ranges(c, range);
	for (int i = 0; i < AD_N; i++) {
		const struct adapt_dir *d = &a->dir[i];

		if (d->base != range[i][1] ||
		    (range[i][1] && (d->min != range[i][0] || d->max != range[i][2])))
			return false;
	}
	return true;
}

void adapter_rates(const struct adapter *a, struct adapted_rates *out)
{
	*out = (struct adapted_rates){
		.egress = a->dir[AD_EGRESS].on ? a->dir[AD_EGRESS].applied : 0,
		.ingress = a->dir[AD_INGRESS].on ? a->dir[AD_INGRESS].applied : 0,
		.download = a->dir[AD_DOWNLOAD].on ? a->confirmed : 0,
	};
}
