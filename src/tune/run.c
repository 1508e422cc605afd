// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The run of one direction. The decisions are tune.c's; the instruments are
 * measure.c's; this file drives them, proves the path, and keeps the
 * interface's shaping as it was whatever happens.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "measure/cpu.h"
#include "measure/measure.h"
#include "shape/shape.h"
#include "shape/units.h"
#include "proto/tune.h"
#include "tune/report.h"
#include "tune/run.h"
#include "util/addr.h"
#include "util/log.h"
#include "util/print.h"

#define WARMUP_MS 1000
#define IDLE_MS 2000
#define SINGLE_MS 3000

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

void tune_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

const char *tune_run_dir(const struct tune_run *t)
{
	static const char *const names[TUNE_DIRS] = { "egress", "ingress", "download" };

	return names[t->dir];
}

/* The kernel's view of IFACE's shaping in our direction, and the cake's drops. */
static int read_dir(struct tune_run *t, struct tune_before *out, uint64_t *drops)
{
	struct shape_view v;
	const struct shape_dir_view *d;
	int r;

	if (t->dir == TUNE_SERVER) {
		/* The server shapes: what this host asked it for is what to put back. */
		if (out) {
			memset(out, 0, sizeof(*out));
			out->had_record = rate_record_load(t->o->statedir, t->o->ifname,
							   &out->record) == 0;
		}
		if (drops)
			*drops = 0; /* the server's cake's, not known here */
		return 0;
	}
	r = shape_view(t->nl, t->o->statedir, t->o->ifname, &v);
	if (r < 0)
		return r;
	d = t->dir == TUNE_EGRESS ? &v.egress : &v.ingress;
	if (out) {
		memset(out, 0, sizeof(*out));
		out->shaped = d->shaped && d->managed;
		out->had_state = v.has_state;
		out->opts = d->qdisc.cake;
		snprintf(out->source, sizeof(out->source), "%s", v.source);
	}
	if (drops)
		*drops = d->shaped ? d->qdisc.stats.drops : 0;
	shape_view_clear(&v);
	return 0;
}

/*
 * Our direction at rate (0: off) with the options it had before tune (its
 * overhead above all: a step must cost the line what the result will), or
 * wgshape's defaults when it was not shaped.
 */
static int shape_dir(struct tune_run *t, enum dir_action act, uint64_t rate, const char *source)
{
	struct shape_request req = { 0 };
	const struct tune_before *b = &t->before;

	if (b->shaped && act == DIR_SET) {
		req.opts = b->opts;
		/* What set may send; the rest (flow mode, atm...) set never changes. */
		req.opts.has &= CAKE_HAS_OVERHEAD | CAKE_HAS_MPU | CAKE_HAS_RTT |
				CAKE_HAS_DIFFSERV | CAKE_HAS_NAT | CAKE_HAS_WASH |
				CAKE_HAS_ACK_FILTER | CAKE_HAS_MEMLIMIT;
	}
	if (t->dir == TUNE_EGRESS) {
		req.egress = act;
		req.egress_rate = rate;
	} else {
		req.ingress = act;
		req.ingress_rate = rate;
	}
	req.source = source;
	return shape_set(t->nl, t->o->statedir, t->o->ifname, &req);
}

/* The unshaped control at the server: more than any line (its class is then no limit). */
#define SERVER_UNLIMITED 12500000000ull

/*
 * The server's rate for this peer (0: the control, as unlimited as the
 * server allows), asked through the rate channel. A step must get the rate
 * it asked for: clamped by the server's client-download-min/-max, the run stops.
 */
static int ask_server(struct tune_run *t, uint64_t rate, const char *source, bool restoring)
{
	struct rate_record rec;
	char said[256], b[UNITS_BUFSZ];
	uint64_t want = restoring || rate ? rate : SERVER_UNLIMITED;
	int r;

	r = rate_client_request(t->o->statedir, t->o->ifname, t->o->rate_server, t->o->rate_port,
				want, source, &rec);
	if (r == -ETIMEDOUT) {
		snprintf(t->failure, sizeof(t->failure), "no answer from %s port %u (is wgshape "
			 "daemon running there, with the rate port open on the tunnel?)",
			 t->o->rate_server, t->o->rate_port);
		return r;
	}
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "asking %s: %s", t->o->rate_server,
			 strerror(-r));
		return r;
	}
	if (rec.status == RATE_APPLIED || rec.status == RATE_DEFAULT || restoring)
		return 0;
	if (rec.status == RATE_CLAMPED && !rate) {
		format_rate(b, sizeof(b), rec.rate);
		print_text("  (the server allows this peer at most %s: the control is shaped "
			   "there)\n", b);
		return 0;
	}
	rate_record_describe(&rec, said, sizeof(said));
	snprintf(t->failure, sizeof(t->failure), "the server %s: %s", t->o->rate_server, said);
	return rec.status == RATE_CLAMPED ? -ERANGE : -EPERM;
}

/*
 * A step's rate; 0 is cake unlimited, the unshaped control: the queue then
 * builds at the bottleneck as with no shaping, while the qdisc, its handle
 * and its counters stay, and a cake someone set by hand is out of the way
 * (saved, and put back by restore()).
 */
static int set_rate(struct tune_run *t, uint64_t rate)
{
	return t->dir == TUNE_SERVER ? ask_server(t, rate, "tune (running)", false) :
				       shape_dir(t, DIR_SET, rate, "tune (running)");
}

/* What became of IFACE while tune ran. */
enum link_fate {
	LINK_SAME,
	LINK_DOWN, /* set down: its qdiscs stay, and can be put back */
	LINK_REMADE, /* deleted and made again: a new interface, not ours to touch */
	LINK_GONE, /* deleted (wg-quick down) */
};

static enum link_fate link_fate(struct tune_run *t)
{
	struct link_info now;
	int r = netlink_link_get(t->nl, t->o->ifname, &now);

	if (r == -ENODEV)
		return LINK_GONE;
	if (r == 0 && now.ifindex != t->o->ifindex)
		return LINK_REMADE;
	if (r == 0 && !now.up)
		return LINK_DOWN;
	return LINK_SAME;
}

/*
 * IFACE went away while tune ran: its qdiscs went with it. What wgshape kept
 * for it (state, IFB) is removed when tune made it all; shaping that was
 * there before is left to the daemon or the next apply, as it would have
 * been without tune.
 */
static void forget_gone(struct tune_run *t)
{
	if (t->dir == TUNE_SERVER)
		return; /* nothing of ours here: the server's lease lapses */
	if (t->before_read && !t->before.had_state)
		shape_clear(t->nl, t->o->statedir, t->o->ifname);
}

/* Put our direction back exactly as it was before tune. */
static int restore(struct tune_run *t)
{
	const struct tune_before *b = &t->before;

	if (t->dir == TUNE_SERVER) {
		bool leased = b->had_record && (b->record.status == RATE_APPLIED ||
						b->record.status == RATE_CLAMPED);

		/* What was asked before (a lease), or else the server's own rate. */
		return ask_server(t, leased ? b->record.asked : 0,
				  leased ? b->record.source : "tune (ended)", true);
	}

	if (!b->shaped)
		return shape_dir(t, DIR_OFF, 0, NULL);
	return shape_dir(t, DIR_SET, b->opts.rate, b->source[0] ? b->source : NULL);
}

static int progress(const struct measure_progress *p, void *arg)
{
	struct tune_run *t = arg;
	char rate[UNITS_BUFSZ];

	if (!t->tty || print_is_json())
		return 0;
	format_rate(rate, sizeof(rate), (uint64_t)p->goodput);
	fprintf(stderr, "\r  %4.1f/%.0fs  %10s  rtt %6.1f ms  ", p->elapsed, p->duration, rate,
		p->last_rtt_ms);
	return 0;
}

/* The trend of the RTTs of the probes sent after the warm-up. */
static void step_trend(const struct measure_result *res, unsigned int warmup_ms,
		       struct lat_trend *out)
{
	g_autofree struct lat_sample *s = g_new(struct lat_sample, res->n_samples + 1);
	size_t n = 0;

	for (size_t i = 0; i < res->n_samples; i++)
		if (res->samples[i].t * 1000 >= warmup_ms)
			s[n++] = (struct lat_sample){ res->samples[i].t, res->samples[i].rtt_ms };
	lat_trend_compute(s, n, out);
}

/* One measurement: load with streams (0: idle), probes all along. */
static int measure(struct tune_run *t, unsigned int streams, unsigned int ms,
		   struct tune_step *step)
{
	struct measure_config mc;
	struct measure_result *res = NULL;
	struct cpu_sample *c0 = NULL, *c1 = NULL;
	struct cpu_busy busy = { 0 };
	uint64_t d0 = 0, d1 = 0;
	char msg[MEASURE_MSG_SIZE];
	int r;

	measure_config_init(&mc);
	mc.ifname = t->o->ifname;
	mc.family = t->o->family;
	mc.duration_ms = ms;
	mc.warmup_ms = streams ? WARMUP_MS : 0;
	mc.probe = t->o->serve ? MEASURE_PROBE_UDP : MEASURE_PROBE_ICMP;
	mc.probe_host = t->o->host;
	mc.probe_port = t->o->port;
	mc.load = !streams		? MEASURE_LOAD_NONE :
		  t->dir == TUNE_EGRESS ? MEASURE_LOAD_UPLOAD :
					  MEASURE_LOAD_DOWNLOAD;
	mc.url = t->url;
	mc.streams = streams ? streams : 1;
	mc.progress = progress;
	mc.progress_arg = t;
	mc.cancel = &interrupted;

	read_dir(t, NULL, &d0);
	cpu_read(&c0);
	r = measure_run(&mc, &res, msg);
	cpu_read(&c1);
	if (t->tty && !print_is_json())
		fputs("\r\033[K", stderr);
	if (r < 0) {
		cpu_sample_free(c0);
		cpu_sample_free(c1);
		if (r == -ECANCELED)
			snprintf(t->failure, sizeof(t->failure), "interrupted (%s)",
				 strsignal(interrupted ? interrupted : SIGINT));
		else
			snprintf(t->failure, sizeof(t->failure), "%s%s", msg,
				 measure_far_end_gone(r) ? " (the far end is gone?)" : "");
		return r;
	}
	read_dir(t, NULL, &d1);
	if (c0 && c1)
		cpu_busy(c0, c1, &busy);
	cpu_sample_free(c0);
	cpu_sample_free(c1);

	step->goodput = res->goodput;
	lat_stats_compute(res->rtt_ms, res->n_rtt, res->lost, &step->loaded);
	if (streams)
		step_trend(res, mc.warmup_ms, &step->trend);
	lat_stats_compute(res->self_rtt_ms, res->n_self_rtt, 0, &step->self);
	step->idle = t->idle;
	step->drops = d1 >= d0 ? d1 - d0 : 0;
	step->busiest_core = busy.busiest;
	if (streams == 1 && res->n_streams)
		t->single_stream_goodput = res->streams[0].goodput;
	measure_result_free(res);
	return 0;
}

/* The proof that our traffic takes IFACE: ask the kernel's routing. */
static int prove_path(struct tune_run *t, const char *what, const struct sockaddr_storage *ss)
{
	const void *addr = ss->ss_family == AF_INET
				   ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
				   : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
	char text[ADDR_STR_SIZE];
	struct link_info via;
	int oif, r;

	addr_str((const struct sockaddr *)ss, false, text, sizeof(text));
	r = netlink_route_oif(t->nl, ss->ss_family, addr, &oif);
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "no route to %s (%s): %s", what, text,
			 strerror(-r));
		return r;
	}
	if (oif != t->o->ifindex) {
		if (netlink_link_get_index(t->nl, oif, &via) < 0)
			snprintf(via.name, sizeof(via.name), "ifindex %d", oif);
		snprintf(t->failure, sizeof(t->failure), "the route to %s (%s) goes through %s, "
			 "not %s: the measurement would not cross the tunnel", what, text,
			 via.name, t->o->ifname);
		return -EXDEV;
	}
	print_text("%s: %s %s is reached through %s (checked in the kernel's routes)\n",
		   t->o->ifname, what, text, t->o->ifname);
	return 0;
}

/* Prove the path for the probes and the load, in the forced family. */
static int prove_paths(struct tune_run *t)
{
	const char *family = t->o->family == AF_INET ? "IPv4" : "IPv6";
	struct sockaddr_storage ss;
	socklen_t sl;
	int r;

	r = measure_resolve(t->o->host, t->o->port, t->o->family, &ss, &sl);
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "%s has no %s address (the family is "
			 "forced: ipv4 or ipv6)", t->o->host, family);
		return r;
	}
	r = prove_path(t, "the probe target", &ss);
	if (r < 0)
		return r;
	r = measure_resolve_url(t->url, t->o->family, &ss, &sl);
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "%s: no %s address for its host", t->url,
			 family);
		return r;
	}
	return prove_path(t, "the load server", &ss);
}

/* The control: idle, then one stream and all of them with no shaping. */
static int measure_unshaped(struct tune_run *t)
{
	int r;

	r = set_rate(t, 0);
	if (r == 0) {
		struct tune_step idle = { 0 };

		r = measure(t, 0, IDLE_MS, &idle);
		t->idle = idle.loaded;
	}
	tune_report_head();
	if (r == 0)
		r = measure(t, 1, SINGLE_MS, &t->single);
	if (r == 0)
		tune_report_row("unshaped x1", &t->single);
	if (r == 0)
		r = measure(t, t->o->streams, t->search.p.step_ms, &t->unshaped);
	if (r < 0)
		return r;
	tune_report_row("unshaped", &t->unshaped);
	tune_search_feed(&t->search, &t->unshaped);
	return 0;
}

/* Each rate the search asks for, until it has its answer. */
static int search(struct tune_run *t)
{
	while (tune_search_running(&t->search)) {
		struct tune_step s = { .rate = t->search.next_rate };
		const char *why = tune_why_str(t->search.why);
		int r;

		r = set_rate(t, s.rate);
		if (r < 0) {
			snprintf(t->failure, sizeof(t->failure), "setting the rate failed");
			return r;
		}
		r = measure(t, t->o->streams, tune_search_step_ms(&t->search), &s);
		if (r < 0)
			return r;
		g_array_append_val(t->steps, s);
		tune_report_row(t->search.phase == TUNE_CONFIRMING ? "confirm" : "search", &s);
		if (*why)
			print_text("  (%s)\n", why);
		tune_search_feed(&t->search, &s);
	}
	return 0;
}

static int run(struct tune_run *t)
{
	int r;

	r = prove_paths(t);
	if (r < 0)
		return r;
	r = read_dir(t, &t->before, NULL);
	if (r < 0)
		return r;
	t->before_read = true;

	print_text("\n%s %s (%s): %u streams, steps of %.0f s, confirmations of %.0f s\n",
		   t->o->ifname, tune_run_dir(t),
		   t->dir == TUNE_EGRESS ? "upload from this host" :
		   t->dir == TUNE_INGRESS ? "download to this host, shaped here" :
					    "download to this host, shaped at the server",
		   t->o->streams,
		   t->search.p.step_ms / 1000.0, t->search.p.confirm_ms / 1000.0);
	r = measure_unshaped(t);
	if (r == 0)
		r = search(t);
	if (r < 0)
		return r;
	if (t->search.phase == TUNE_DONE) {
		/* The seed's rule, for comparison: 20% under the unshaped speed. */
		t->rule20.rate = (uint64_t)(t->unshaped.goodput * 0.8);
		if (t->rule20.rate && set_rate(t, t->rule20.rate) == 0 &&
		    measure(t, t->o->streams, t->search.p.step_ms, &t->rule20) == 0)
			tune_report_row("20% under", &t->rule20);
		t->final = g_array_index(t->steps, struct tune_step, t->steps->len - 1);
	}
	return 0;
}

static void run_init(struct tune_run *t, struct netlink *nl, const struct tune_opts *o,
		     enum tune_dir dir)
{
	bool upload = dir == TUNE_EGRESS;

	t->o = o;
	t->nl = nl;
	t->dir = dir;
	t->tty = isatty(STDERR_FILENO);
	t->steps = g_array_new(FALSE, TRUE, sizeof(struct tune_step));
	/* The server shapes before the client's line, as egress does before its own. */
	if (dir != TUNE_INGRESS) {
		tune_search_init(&t->search, NULL);
	} else {
		struct tune_params p;

		tune_params_ingress(&p);
		tune_search_init(&t->search, &p);
	}
	if (o->target_us) {
		t->search.p.target.p50_ms = o->target_us / 1000.0;
		t->search.p.target.p95_ms = 3 * o->target_us / 1000.0;
	}
	/* Well under serve's 60 s cap: a step's transfers are fresh and short. */
	if (o->serve) {
		size_t size = strlen(o->host) + 64; /* the scheme, brackets, port, path, query */

		t->url = g_malloc(size);
		tune_url(t->url, size, o->host, o->port, upload, 30);
	} else
		t->url = g_strdup(upload ? o->upload_url : o->download_url);
}

int tune_run_direction(struct tune_run *t, struct netlink *nl, const struct tune_opts *o,
		       enum tune_dir dir)
{
	gint64 t0 = g_get_monotonic_time();
	enum link_fate fate;
	int r;

	run_init(t, nl, o, dir);
	r = run(t);
	t->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
	/* A tunnel taken down mid-run is what happened, whatever failed after. */
	fate = interrupted ? LINK_SAME : link_fate(t);
	if (fate != LINK_SAME) {
		snprintf(t->failure, sizeof(t->failure), "%s %s while tune ran", o->ifname,
			 fate == LINK_DOWN ? "was set down" : "was deleted");
		r = fate == LINK_DOWN ? -ENETDOWN : -ENODEV;
	}
	/*
	 * Whatever happened, this direction is as it was before tune. A run
	 * that stopped before reading it (path refused) changed nothing:
	 * "restoring" an empty view would take the shaping off.
	 */
	if (fate == LINK_GONE)
		forget_gone(t);
	else if (fate != LINK_REMADE && t->before_read && restore(t) < 0)
		log_err("%s: tune: could not put %s shaping back as it was", o->ifname,
			tune_run_dir(t));
	if (r < 0) {
		if (!t->failure[0])
			snprintf(t->failure, sizeof(t->failure), "%s", strerror(-r));
		log_err("%s: tune %s: %s; %s", o->ifname, tune_run_dir(t), t->failure,
			fate == LINK_GONE || fate == LINK_REMADE ? "its shaping went with it"
								 : "its shaping is as it was");
	}
	return r;
}

void tune_run_clear(struct tune_run *t)
{
	g_free(t->url);
	if (t->steps)
		g_array_unref(t->steps);
	memset(t, 0, sizeof(*t));
}
