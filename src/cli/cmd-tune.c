// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape tune IFACE ...: find the highest rate that keeps latency under load
 * at the idle level, by measuring. The decisions are tune.c's; the
 * instruments are measure.c's; this file drives them, proves the path, keeps
 * the interface's shaping as it was whatever happens, and reports.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <glib.h>
#include <json-glib/json-glib.h>

#include "cli/cli.h"
#include "config/config.h"
#include "measure/cpu.h"
#include "util/log.h"
#include "measure/measure.h"
#include "netlink/kernel.h"
#include "nm/nm.h"
#include "config/reconcile.h"
#include "shape/state.h"
#include "tune/tune.h"
#include "shape/units.h"

const char tune_usage[] =
	"Usage: wgshape [-j] tune IFACE [egress|ingress|both] [server HOST[:PORT]]\n"
	"                   [download URL] [upload URL] [ping HOST] [target TIME]\n"
	"                   [streams N] [ipv4|ipv6] [save] [plot FILE]\n"
	"\n"
	"Find the highest rate whose latency under load stays at the idle level.\n"
	"  egress      upload from this host, shaped by cake on IFACE (the default)\n"
	"  ingress     download to this host, shaped through IFACE's IFB\n"
	"  server      the far end runs `wgshape serve` (HTTP load and a UDP echo, port 4780)\n"
	"  download, upload, ping   or any HTTP server (a large file, a POST sink) and ICMP\n"
	"  target      added latency allowed: median TIME, 95th percentile 3 x TIME (5ms)\n"
	"  streams     parallel load streams (4)     ipv4|ipv6  the address family (ipv4)\n"
	"  save        keep the result for IFACE and this network, and apply it\n"
	"  plot FILE   an SVG chart of added latency and goodput against the rate\n"
	"The route to the far end must go through IFACE. Interrupted, the far end\n"
	"gone or IFACE set down, IFACE's shaping is put back exactly as it was. While\n"
	"tune runs, the daemon and apply leave IFACE alone; when it ends, the daemon\n"
	"reloads.\n";

#define STEP_MS 4000
#define WARMUP_MS 1000
#define IDLE_MS 2000
#define SINGLE_MS 3000

/* ---- words ------------------------------------------------------------- */

int tune_args_parse(int argc, char **argv, struct tune_args *out, char *err, size_t errlen)
{
	struct tune_args a = { .streams = 4, .family = AF_INET, .egress = true };
	bool dir_given = false;

	for (int i = 0; i < argc; i++) {
		const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **dst = NULL;
		long n;

		if (!strcmp(w, "egress") || !strcmp(w, "ingress") || !strcmp(w, "both")) {
			if (!dir_given)
				a.egress = a.ingress = false;
			dir_given = true;
			a.egress |= strcmp(w, "ingress") != 0;
			a.ingress |= strcmp(w, "egress") != 0;
			continue;
		}
		if (!strcmp(w, "ipv4") || !strcmp(w, "ipv6")) {
			a.family = w[3] == '4' ? AF_INET : AF_INET6;
			continue;
		}
		if (!strcmp(w, "save")) {
			a.save = true;
			continue;
		}
		if (!strcmp(w, "server"))
			dst = &a.server;
		else if (!strcmp(w, "download"))
			dst = &a.download_url;
		else if (!strcmp(w, "upload"))
			dst = &a.upload_url;
		else if (!strcmp(w, "ping"))
			dst = &a.ping_host;
		else if (!strcmp(w, "plot"))
			dst = &a.plot;
		if (dst) {
			if (!v || !*v) {
				snprintf(err, errlen, "%s: missing its value", w);
				return -EINVAL;
			}
			*dst = v;
			i++;
			continue;
		}
		if (!strcmp(w, "target")) {
			uint32_t us;

			if (!v || parse_time(v, &us) < 0 || us > 1000000) {
				snprintf(err, errlen, "target: '%s' is not a time up to 1s (e.g. 5ms)",
					 v ? v : "");
				return -EINVAL;
			}
			a.target_us = us;
			i++;
			continue;
		}
		if (!strcmp(w, "streams")) {
			if (!v || parse_int_range(v, 1, 16, &n) < 0) {
				snprintf(err, errlen, "streams: '%s' is not a number from 1 to 16",
					 v ? v : "");
				return -EINVAL;
			}
			a.streams = (unsigned int)n;
			i++;
			continue;
		}
		snprintf(err, errlen, "'%s' is not an option of tune (see wgshape tune --help)", w);
		return -EINVAL;
	}
	if (a.server && (a.download_url || a.upload_url || a.ping_host)) {
		snprintf(err, errlen, "server, or download/upload with ping: not both");
		return -EINVAL;
	}
	if (!a.server && !a.ping_host) {
		snprintf(err, errlen, "give server HOST (running wgshape serve), or ping HOST with "
				      "download URL / upload URL");
		return -EINVAL;
	}
	if (!a.server && ((a.egress && !a.upload_url) || (a.ingress && !a.download_url))) {
		snprintf(err, errlen, "%s needs %s URL", a.egress && !a.upload_url ? "egress" : "ingress",
			 a.egress && !a.upload_url ? "upload" : "download");
		return -EINVAL;
	}
	*out = a;
	return 0;
}

/* HOST[:PORT], [V6]:PORT or V6 -> host (owned) and port. */
int tune_split_server(const char *s, char **host, uint16_t *port)
{
	const char *colon;
	long n = MEASURE_UDP_PORT;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end == s + 1 || (end[1] && end[1] != ':'))
			return -EINVAL;
		if (end[1] == ':' && parse_int_range(end + 2, 1, 65535, &n) < 0)
			return -EINVAL;
		*host = g_strndup(s + 1, (gsize)(end - s - 1));
		*port = (uint16_t)n;
		return 0;
	}
	colon = strrchr(s, ':');
	if (colon && strchr(s, ':') == colon) {
		if (colon == s || parse_int_range(colon + 1, 1, 65535, &n) < 0)
			return -EINVAL;
		*host = g_strndup(s, (gsize)(colon - s));
	} else {
		*host = g_strdup(s); /* a name, an IPv4 address, or a bare IPv6 one */
	}
	if (!**host) {
		g_free(*host);
		return -EINVAL;
	}
	*port = (uint16_t)n;
	return 0;
}

/* ---- the run ----------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

struct dir_before {
	bool shaped; /* wgshape's cake was there */
	bool had_state; /* wgshape shaped IFACE in either direction */
	struct cake_opts opts; /* as the kernel reported it */
	char source[256];
};

struct tune_run {
	const struct tune_args *a;
	const struct cli *cli;
	struct netlink *nl;
	const char *ifname;
	bool egress; /* this direction's run */
	char *host; /* the far end's probe host */
	uint16_t port;
	char *url;
	struct dir_before before;
	bool before_read; /* before holds the kernel's view: there is something to restore */
	struct lat_stats idle;
	struct tune_step single, unshaped, rule20, final;
	double single_stream_goodput;
	GArray *steps; /* struct tune_step, in order */
	struct tune_search search;
	double seconds;
	bool tty;
	char failure[320];
};

static const char *dirname_of(const struct tune_run *t)
{
	return t->egress ? "egress" : "ingress";
}

/* The kernel's view of IFACE's shaping in our direction, and the cake's drops. */
static int read_dir(struct tune_run *t, struct dir_before *out, uint64_t *drops)
{
	struct shape_view v;
	const struct shape_dir_view *d;
	int r;

	r = shape_view(t->nl, t->cli->statedir, t->ifname, &v);
	if (r < 0)
		return r;
	d = t->egress ? &v.egress : &v.ingress;
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
	const struct dir_before *b = &t->before;

	if (b->shaped && act == DIR_SET) {
		req.opts = b->opts;
		/* What set may send; the rest (flow mode, atm...) set never changes. */
		req.opts.has &= CAKE_HAS_OVERHEAD | CAKE_HAS_MPU | CAKE_HAS_RTT |
				CAKE_HAS_DIFFSERV | CAKE_HAS_NAT | CAKE_HAS_WASH |
				CAKE_HAS_ACK_FILTER | CAKE_HAS_MEMLIMIT;
	}
	if (t->egress) {
		req.egress = act;
		req.egress_rate = rate;
	} else {
		req.ingress = act;
		req.ingress_rate = rate;
	}
	req.source = source;
	return shape_set(t->nl, t->cli->statedir, t->ifname, &req);
}

/*
 * A step's rate; 0 is cake unlimited, the unshaped control: the queue then
 * builds at the bottleneck as with no shaping, while the qdisc, its handle
 * and its counters stay, and a cake someone set by hand is out of the way
 * (saved, and put back by restore()).
 */
static int set_rate(struct tune_run *t, uint64_t rate)
{
	return shape_dir(t, DIR_SET, rate, "tune (running)");
}

/* What became of IFACE while tune ran. */
enum link_fate {
	LINK_SAME,
	LINK_DOWN, /* set down: its qdiscs stay, and can be put back */
	LINK_REMADE, /* deleted and made again: a new interface, not ours to touch */
	LINK_GONE, /* deleted (wg-quick down) */
};

static enum link_fate link_fate(struct tune_run *t, int ifindex)
{
	struct link_info now;
	int r = netlink_link_get(t->nl, t->ifname, &now);

	if (r == -ENODEV)
		return LINK_GONE;
	if (r == 0 && now.ifindex != ifindex)
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
	if (t->before_read && !t->before.had_state)
		shape_clear(t->nl, t->cli->statedir, t->ifname);
}

/* Put our direction back exactly as it was before tune. */
static int restore(struct tune_run *t)
{
	const struct dir_before *b = &t->before;

	if (!b->shaped)
		return shape_dir(t, DIR_OFF, 0, NULL);
	return shape_dir(t, DIR_SET, b->opts.rate, b->source[0] ? b->source : NULL);
}

static int progress(const struct measure_progress *p, void *arg)
{
	struct tune_run *t = arg;
	char rate[UNITS_BUFSZ];

	if (!t->tty || t->cli->json)
		return 0;
	format_rate(rate, sizeof(rate), (uint64_t)p->goodput);
	fprintf(stderr, "\r  %4.1f/%.0fs  %10s  rtt %6.1f ms  ", p->elapsed, p->duration, rate,
		p->last_rtt_ms);
	return 0;
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
	mc.ifname = t->ifname;
	mc.family = t->a->family;
	mc.duration_ms = ms;
	mc.warmup_ms = streams ? WARMUP_MS : 0;
	mc.probe = t->a->server ? MEASURE_PROBE_UDP : MEASURE_PROBE_ICMP;
	mc.probe_host = t->host;
	mc.probe_port = t->port;
	mc.load = !streams ? MEASURE_LOAD_NONE : t->egress ? MEASURE_LOAD_UPLOAD
							   : MEASURE_LOAD_DOWNLOAD;
	mc.url = t->url;
	mc.streams = streams ? streams : 1;
	mc.progress = progress;
	mc.progress_arg = t;
	mc.cancel = &interrupted;

	read_dir(t, NULL, &d0);
	cpu_read(&c0);
	r = measure_run(&mc, &res, msg);
	cpu_read(&c1);
	if (t->tty && !t->cli->json)
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
	step->idle = t->idle;
	step->drops = d1 >= d0 ? d1 - d0 : 0;
	step->busiest_core = busy.busiest;
	if (streams == 1 && res->n_streams)
		t->single_stream_goodput = res->streams[0].goodput;
	measure_result_free(res);
	return 0;
}

static void say_step(struct tune_run *t, const char *label, const struct tune_step *s)
{
	char rate[UNITS_BUFSZ], good[UNITS_BUFSZ];
	double a50, a95;

	if (t->cli->json)
		return;
	tune_added(s, &a50, &a95);
	if (s->rate)
		format_rate(rate, sizeof(rate), s->rate);
	else
		snprintf(rate, sizeof(rate), "-");
	format_rate(good, sizeof(good), (uint64_t)s->goodput);
	printf("  %-12s %10s %10s %7.1f %7.1f %7.1f %7.1f %8.1f %8.1f %6" PRIu64 " %5.0f%%  %s\n",
	       label, rate, good, s->idle.p50, s->idle.p95, s->loaded.p50, s->loaded.p95, a50,
	       a95, s->drops, s->busiest_core * 100, bloat_grade(a50));
	fflush(stdout);
}

static void table_head(const struct tune_run *t)
{
	if (t->cli->json)
		return;
	printf("  %-12s %10s %10s %7s %7s %7s %7s %8s %8s %6s %6s  %s\n", "step", "rate",
	       "goodput", "idle50", "idle95", "load50", "load95", "added50", "added95", "drops",
	       "core", "grade");
}

/* The proof that our traffic takes IFACE: ask the kernel's routing. */
static int prove_path(struct tune_run *t, const char *what, const struct sockaddr_storage *ss,
		      int ifindex)
{
	const void *addr = ss->ss_family == AF_INET
				   ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
				   : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
	char text[INET6_ADDRSTRLEN] = "?";
	struct link_info via;
	int oif, r;

	inet_ntop(ss->ss_family, addr, text, sizeof(text));
	r = netlink_route_oif(t->nl, ss->ss_family, addr, &oif);
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "no route to %s (%s): %s", what, text,
			 strerror(-r));
		return r;
	}
	if (oif != ifindex) {
		if (netlink_link_get_index(t->nl, oif, &via) < 0)
			snprintf(via.name, sizeof(via.name), "ifindex %d", oif);
		snprintf(t->failure, sizeof(t->failure), "the route to %s (%s) goes through %s, "
			 "not %s: the measurement would not cross the tunnel", what, text,
			 via.name, t->ifname);
		return -EXDEV;
	}
	if (!t->cli->json)
		printf("%s: %s %s is reached through %s (checked in the kernel's routes)\n",
		       t->ifname, what, text, t->ifname);
	return 0;
}

static int run_direction(struct tune_run *t, int ifindex)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int r;

	t->steps = g_array_new(FALSE, TRUE, sizeof(struct tune_step));
	/* Prove the path for the probes and the load, in the forced family. */
	r = measure_resolve(t->host, t->port, t->a->family, &ss, &sl);
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "%s has no %s address (the family is "
			 "forced: ipv4 or ipv6)", t->host, t->a->family == AF_INET ? "IPv4" : "IPv6");
		return r;
	}
	r = prove_path(t, "the probe target", &ss, ifindex);
	if (r < 0)
		return r;
	r = measure_resolve_url(t->url, t->a->family, &ss, &sl);
	if (r < 0) {
		snprintf(t->failure, sizeof(t->failure), "%s: no %s address for its host", t->url,
			 t->a->family == AF_INET ? "IPv4" : "IPv6");
		return r;
	}
	r = prove_path(t, "the load server", &ss, ifindex);
	if (r < 0)
		return r;
	r = read_dir(t, &t->before, NULL);
	if (r < 0)
		return r;
	t->before_read = true;

	if (!t->cli->json)
		printf("\n%s %s (%s): %u streams, steps of %.0f s\n", t->ifname, dirname_of(t),
		       t->egress ? "upload from this host" : "download to this host",
		       t->a->streams, STEP_MS / 1000.0);

	/* Unshaped: the control. */
	r = set_rate(t, 0);
	if (r == 0) {
		struct tune_step idle = { 0 };

		r = measure(t, 0, IDLE_MS, &idle);
		t->idle = idle.loaded;
	}
	table_head(t);
	if (r == 0)
		r = measure(t, 1, SINGLE_MS, &t->single);
	if (r == 0)
		say_step(t, "unshaped x1", &t->single);
	if (r == 0)
		r = measure(t, t->a->streams, STEP_MS, &t->unshaped);
	if (r < 0)
		return r;
	say_step(t, "unshaped", &t->unshaped);
	tune_search_feed(&t->search, &t->unshaped);

	while (tune_search_running(&t->search)) {
		struct tune_step s = { .rate = t->search.next_rate };
		const char *why = tune_why_str(t->search.why);

		r = set_rate(t, s.rate);
		if (r < 0) {
			snprintf(t->failure, sizeof(t->failure), "setting the rate failed");
			return r;
		}
		r = measure(t, t->a->streams, STEP_MS, &s);
		if (r < 0)
			return r;
		g_array_append_val(t->steps, s);
		say_step(t, t->search.phase == TUNE_CONFIRMING ? "confirm" : "search", &s);
		if (*why && !t->cli->json)
			printf("  (%s)\n", why);
		tune_search_feed(&t->search, &s);
	}
	if (t->search.phase == TUNE_DONE) {
		/* The seed's rule, for comparison: 20% under the unshaped speed. */
		t->rule20.rate = (uint64_t)(t->unshaped.goodput * 0.8);
		if (t->rule20.rate && set_rate(t, t->rule20.rate) == 0 &&
		    measure(t, t->a->streams, STEP_MS, &t->rule20) == 0)
			say_step(t, "20% under", &t->rule20);
		t->final = g_array_index(t->steps, struct tune_step, t->steps->len - 1);
	}
	return 0;
}

/* ---- the report -------------------------------------------------------- */

static void report_text(struct tune_run *t)
{
	char rate[UNITS_BUFSZ], cap[UNITS_BUFSZ];
	double u50, u95, f50, f95, r50, r95;

	tune_added(&t->unshaped, &u50, &u95);
	format_rate(cap, sizeof(cap), (uint64_t)t->unshaped.goodput);
	printf("\n%s %s: ", t->ifname, dirname_of(t));
	switch (t->search.phase) {
	case TUNE_NOT_BLOATED:
		printf("not bloated: unshaped at %s, latency under load +%.1f ms (p95 +%.1f), "
		       "grade %s. Nothing to shape.\n", cap, u50, u95, bloat_grade(u50));
		return;
	case TUNE_FAILED:
		printf("no rate kept latency at the idle level (%s).\n",
		       tune_why_str(t->search.why));
		return;
	default:
		break;
	}
	tune_added(&t->final, &f50, &f95);
	format_rate(rate, sizeof(rate), t->search.result);
	printf("%s (%.0f%% of the unshaped %s) in %u steps, %.0f s\n", rate,
	       100.0 * (double)t->search.result / t->unshaped.goodput, cap, t->search.steps,
	       t->seconds);
	printf("  unshaped:    goodput %s, added latency %.1f ms (p95 %.1f), grade %s; "
	       "one stream alone %.1f Mbit/s\n", cap, u50, u95, bloat_grade(u50),
	       t->single_stream_goodput * 8 / 1e6);
	format_rate(cap, sizeof(cap), (uint64_t)t->final.goodput);
	printf("  tuned:       goodput %s (%.0f%%), added latency %.1f ms (p95 %.1f), grade %s\n",
	       cap, 100.0 * t->final.goodput / t->unshaped.goodput, f50, f95, bloat_grade(f50));
	if (t->rule20.goodput > 0) {
		tune_added(&t->rule20, &r50, &r95);
		format_rate(cap, sizeof(cap), (uint64_t)t->rule20.goodput);
		printf("  20%% under:   goodput %s (%.0f%%), added latency %.1f ms (p95 %.1f), "
		       "grade %s\n", cap, 100.0 * t->rule20.goodput / t->unshaped.goodput, r50,
		       r95, bloat_grade(r50));
	}
}

static void json_step(JsonBuilder *j, const struct tune_step *s)
{
	double a50, a95;

	tune_added(s, &a50, &a95);
	json_builder_begin_object(j);
	json_builder_set_member_name(j, "rate");
	json_builder_add_int_value(j, (gint64)(s->rate * 8));
	json_builder_set_member_name(j, "goodput");
	json_builder_add_int_value(j, (gint64)(s->goodput * 8));
#define LAT(name, v)                                   \
	json_builder_set_member_name(j, name);         \
	json_builder_add_int_value(j, isfinite(v) ? (gint64)((v) * 1000) : -1)
	LAT("idle_p50", s->idle.p50);
	LAT("idle_p95", s->idle.p95);
	LAT("loaded_p50", s->loaded.p50);
	LAT("loaded_p95", s->loaded.p95);
	LAT("added_p50", a50);
	LAT("added_p95", a95);
#undef LAT
	json_builder_set_member_name(j, "lost");
	json_builder_add_int_value(j, (gint64)s->loaded.lost);
	json_builder_set_member_name(j, "drops");
	json_builder_add_int_value(j, (gint64)s->drops);
	json_builder_set_member_name(j, "busiest_core");
	json_builder_add_double_value(j, s->busiest_core);
	json_builder_set_member_name(j, "grade");
	json_builder_add_string_value(j, bloat_grade(a50));
	json_builder_end_object(j);
}

static void report_json(JsonBuilder *j, struct tune_run *t)
{
	json_builder_begin_object(j);
	json_builder_set_member_name(j, "ifname");
	json_builder_add_string_value(j, t->ifname);
	json_builder_set_member_name(j, "direction");
	json_builder_add_string_value(j, dirname_of(t));
	json_builder_set_member_name(j, "outcome");
	json_builder_add_string_value(j, t->failure[0] ? "error"
						       : tune_phase_str(t->search.phase));
	if (t->failure[0]) {
		json_builder_set_member_name(j, "error");
		json_builder_add_string_value(j, t->failure);
	}
	json_builder_set_member_name(j, "rate");
	json_builder_add_int_value(j, t->search.phase == TUNE_DONE
					      ? (gint64)(t->search.result * 8) : 0);
	json_builder_set_member_name(j, "seconds");
	json_builder_add_double_value(j, t->seconds);
	json_builder_set_member_name(j, "streams");
	json_builder_add_int_value(j, t->a->streams);
	json_builder_set_member_name(j, "single_stream_goodput");
	json_builder_add_int_value(j, (gint64)(t->single_stream_goodput * 8));
	json_builder_set_member_name(j, "unshaped");
	json_step(j, &t->unshaped);
	if (t->rule20.goodput > 0) {
		json_builder_set_member_name(j, "rule_20_under");
		json_step(j, &t->rule20);
	}
	json_builder_set_member_name(j, "steps");
	json_builder_begin_array(j);
	for (guint i = 0; t->steps && i < t->steps->len; i++)
		json_step(j, &g_array_index(t->steps, struct tune_step, i));
	json_builder_end_array(j);
	json_builder_end_object(j);
}

static gint cmp_rate(gconstpointer a, gconstpointer b)
{
	uint64_t x = ((const struct tune_step *)a)->rate, y = ((const struct tune_step *)b)->rate;

	return x < y ? -1 : x > y;
}

/* ---- plot ------------------------------------------------------------- */

/* One panel's frame: where it sits and what its axes span. */
struct plot_frame {
	double x0, y0, w, h; /* the plot area, in px */
	double rmin, rmax; /* rate, bytes/s, along x */
	double lmax; /* added latency, ms, up the left axis */
	double gmax; /* goodput, bytes/s, up the right axis */
};

static double plot_x(const struct plot_frame *f, double rate)
{
	return f->x0 + (rate - f->rmin) / (f->rmax - f->rmin) * f->w;
}

/* Latency beyond the axis (or lost: infinite) sits on the top edge. */
static double plot_yl(const struct plot_frame *f, double ms)
{
	return f->y0 + f->h - MIN(isfinite(ms) ? ms : f->lmax, f->lmax) / f->lmax * f->h;
}

static double plot_yg(const struct plot_frame *f, double goodput)
{
	return f->y0 + f->h - goodput / f->gmax * f->h;
}

/* A round step for about n ticks over span: 1, 2 or 5 times a power of ten. */
static double tick_step(double span, int n)
{
	double raw = span / n, mag = pow(10, floor(log10(raw)));

	return raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
}

static void plot_axes(GString *s, const struct plot_frame *f, const struct tune_target *tg)
{
	double st = tick_step((f->rmax - f->rmin) * 8 / 1e6, 6);
	double bottom = f->y0 + f->h;

	g_string_append_printf(s, "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' "
			       "fill='none' stroke='#888'/>\n", f->x0, f->y0, f->w, f->h);
	for (double m = ceil(f->rmin * 8 / 1e6 / st) * st; m <= f->rmax * 8 / 1e6; m += st)
		g_string_append_printf(s, "<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' "
				       "stroke='#ddd'/><text x='%.1f' y='%.0f' "
				       "text-anchor='middle'>%g</text>\n", plot_x(f, m * 1e6 / 8),
				       f->y0, plot_x(f, m * 1e6 / 8), bottom,
				       plot_x(f, m * 1e6 / 8), bottom + 16, m);
	g_string_append_printf(s, "<text x='%.0f' y='%.0f' text-anchor='middle'>shaper rate, "
			       "Mbit/s</text>\n", f->x0 + f->w / 2, bottom + 34);
	st = tick_step(f->lmax, 5);
	for (double m = 0; m <= f->lmax; m += st)
		g_string_append_printf(s, "<text x='%.0f' y='%.1f' fill='#c33' "
				       "text-anchor='end'>%g</text>\n", f->x0 - 6,
				       plot_yl(f, m) + 4, m);
	st = tick_step(f->gmax * 8 / 1e6, 5);
	for (double m = 0; m <= f->gmax * 8 / 1e6; m += st)
		g_string_append_printf(s, "<text x='%.0f' y='%.1f' fill='#36c'>%g</text>\n",
				       f->x0 + f->w + 6, plot_yg(f, m * 1e6 / 8) + 4, m);
	/* the target: median added latency at or under it */
	g_string_append_printf(s, "<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' stroke='#c33' "
			       "stroke-dasharray='2 4'/><text x='%.0f' y='%.1f' fill='#c33' "
			       "font-size='10'>target %g ms</text>\n", f->x0, plot_yl(f, tg->p50_ms),
			       f->x0 + f->w, plot_yl(f, tg->p50_ms), f->x0 + 4,
			       plot_yl(f, tg->p50_ms) - 3, tg->p50_ms);
}

/* One series through the steps (sorted by rate), with a dot at each. */
static void plot_series(GString *s, const struct plot_frame *f, const GArray *st, int which)
{
	static const char *const colour[] = { "#c33", "#c33", "#36c" };
	GString *dots = g_string_new(NULL);

	g_string_append_printf(s, "<polyline fill='none' stroke='%s' %s points='", colour[which],
			       which == 1 ? "stroke-dasharray='4 3'" : "");
	for (guint i = 0; i < st->len; i++) {
		const struct tune_step *p = &g_array_index(st, struct tune_step, i);
		double a50, a95, x = plot_x(f, (double)p->rate), y;

		tune_added(p, &a50, &a95);
		y = which == 2 ? plot_yg(f, p->goodput) : plot_yl(f, which == 0 ? a50 : a95);
		g_string_append_printf(s, "%.1f,%.1f ", x, y);
		if (which != 1)
			g_string_append_printf(dots, "<circle cx='%.1f' cy='%.1f' r='3' "
					       "fill='%s'/>\n", x, y, colour[which]);
	}
	g_string_append(s, "'/>\n");
	g_string_append_len(s, dots->str, (gssize)dots->len);
	g_string_free(dots, TRUE);
}

/*
 * An SVG chart, a panel per direction: added latency (left axis, p50 solid,
 * p95 dashed) and goodput (right axis) against the shaper's rate, over the
 * span the search covered; the target and the tuned rate marked.
 */
static int write_plot(const char *path, struct tune_run *const *runs, size_t n)
{
	g_autoptr(GString) s = g_string_new(NULL);
	g_autoptr(GError) err = NULL;
	const double W = 720, H = 420, L = 60, R = 60, T = 44, B = 56;

	g_string_append_printf(s, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
			       "height='%.0f' font-family='sans-serif' font-size='12'>\n"
			       "<rect width='100%%' height='100%%' fill='white'/>\n", W, H * n);
	for (size_t k = 0; k < n; k++) {
		struct tune_run *t = runs[k];
		g_autoptr(GArray) st = g_array_copy(t->steps);
		struct plot_frame f = {
			.x0 = L, .y0 = H * (double)k + T, .w = W - L - R, .h = H - T - B,
			.rmin = HUGE_VAL, .rmax = 1, .lmax = 10, .gmax = 1,
		};

		/* the lines go by rate, not in the order the steps were taken */
		g_array_sort(st, cmp_rate);
		for (guint i = 0; i < st->len; i++) {
			const struct tune_step *p = &g_array_index(st, struct tune_step, i);
			double a50, a95;

			tune_added(p, &a50, &a95);
			f.rmin = MIN(f.rmin, (double)p->rate);
			f.rmax = MAX(f.rmax, (double)p->rate);
			f.gmax = MAX(f.gmax, p->goodput);
			if (isfinite(a95))
				f.lmax = MAX(f.lmax, a95);
		}
		if (!isfinite(f.rmin))
			f.rmin = 0;
		/* a little room either side; a flat span still gets an axis */
		f.rmin = MAX(0, f.rmin - MAX((f.rmax - f.rmin) * 0.1, f.rmax * 0.02));
		f.rmax += MAX((f.rmax - f.rmin) * 0.05, f.rmax * 0.01);
		f.gmax = MAX(f.gmax, t->unshaped.goodput) * 1.1;
		f.lmax *= 1.1;

		g_string_append_printf(s, "<text x='%.0f' y='%.0f' font-size='14'>%s %s: added "
				       "latency (ms, left; p95 dashed) and goodput (Mbit/s, "
				       "right)</text>\n", L, f.y0 - 20, t->ifname, dirname_of(t));
		plot_axes(s, &f, &t->search.p.target);
		for (int which = 0; which < 3; which++)
			plot_series(s, &f, st, which);
		if (t->search.phase == TUNE_DONE) {
			double x = plot_x(&f, (double)t->search.result);

			g_string_append_printf(s, "<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' "
					       "stroke='#393' stroke-width='2'/><text x='%.1f' "
					       "y='%.0f' fill='#393'>tuned %.2f Mbit/s</text>\n", x,
					       f.y0, x, f.y0 + f.h, x + 4, f.y0 + 14,
					       (double)t->search.result * 8 / 1e6);
		}
	}
	g_string_append(s, "</svg>\n");
	if (!g_file_set_contents(path, s->str, (gssize)s->len, &err)) {
		log_err("plot %s: %s", path, err->message);
		return -EIO;
	}
	return 0;
}

/* ---- save -------------------------------------------------------------- */

/*
 * Keep the result in its own file beside the hand-written ones (conf.d
 * /90-tune.conf), in the section of the network profile in use or of the
 * interface; sections of the same name merge, so it overrides only the rate.
 */
static int save_result(const struct cli *cli, struct tune_run *const *runs, size_t n)
{
	const char *conf = cli->config_path ? cli->config_path : CONFIG_DEFAULT_PATH;
	g_autofree char *dir = g_path_get_dirname(conf);
	g_autofree char *confd = g_build_filename(dir, "conf.d", NULL);
	g_autofree char *path = g_build_filename(confd, "90-tune.conf", NULL);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(config_t) cfg = NULL;
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	g_autofree char *data = NULL, *why = NULL, *when = NULL, *stamp = NULL;
	g_autoptr(GDateTime) now = g_date_time_new_now_local();
	struct nm_nets *nets = NULL;
	char group[300], value[64], why_net[192];
	const char *ifname = runs[0]->ifname;
	bool found = false;
	int idx = -1;

	/* The profile in use now, if a [network] profile names this tunnel. */
	if (config_load(conf, false, &cfg, &why) == 0) {
		config_networks_for(cfg, ifname, profs);
		if (profs->len) {
			g_autofree struct net_match *m = g_new0(struct net_match, profs->len);

			for (guint i = 0; i < profs->len; i++)
				m[i] = ((const struct conf_iface *)profs->pdata[i])->match;
			nm_nets_get(&nets);
			idx = profile_choose(m, profs->len, nets->nets, nets->n, ifname, why_net,
					     sizeof(why_net));
			nm_nets_free(nets);
		}
	}
	if (idx >= 0) {
		snprintf(group, sizeof(group), "network %s",
			 ((const struct conf_iface *)profs->pdata[idx])->name);
	} else if (profs->len) {
		/* An [interface] section would be overridden by the profiles. */
		log_err("save: [network] profiles decide %s's shaping but none matches this "
			"network (%s): add a profile for it, then save", ifname, why_net);
		return -ENOENT;
	} else {
		snprintf(group, sizeof(group), "interface %s", ifname);
	}
	for (size_t i = 0; i < n && !found; i++)
		found = runs[i]->search.phase == TUNE_DONE;
	if (!found) {
		if (!cli->json)
			printf("nothing to save: no rate was found\n");
		return 0;
	}

	g_key_file_load_from_file(kf, path, G_KEY_FILE_KEEP_COMMENTS, NULL);
	for (size_t i = 0; i < n; i++) {
		if (runs[i]->search.phase != TUNE_DONE)
			continue;
		snprintf(value, sizeof(value), "%" PRIu64 "kbit", runs[i]->search.result * 8 / 1000);
		g_key_file_set_string(kf, group, runs[i]->egress ? "egress" : "ingress", value);
	}
	when = g_date_time_format(now, "%Y-%m-%d %H:%M");
	stamp = g_strdup_printf(" by wgshape tune, %s", when);
	g_key_file_set_comment(kf, group, NULL, stamp, NULL);
	g_key_file_set_comment(kf, NULL, NULL,
			       " Written by `wgshape tune ... save`; hand-written files stay "
			       "as they are.\n Sections here merge with theirs: the rates win.",
			       NULL);
	data = g_key_file_to_data(kf, NULL, NULL);
	if (g_mkdir_with_parents(confd, 0755) < 0 ||
	    !g_file_set_contents_full(path, data, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &err)) {
		log_err("save: %s: %s", path, err ? err->message : g_strerror(errno));
		return -EIO;
	}
	if (!cli->json)
		printf("saved in %s, [%s]\n", path, group);
	return 0;
}

static int apply_saved(const struct cli *cli, struct netlink *nl, const char *ifname)
{
	g_autoptr(config_t) cfg = config_load_logged(cli->config_path);
	struct reconciler rc = { .nl = nl, .statedir = cli->statedir, .only = ifname };
	struct nm_nets *nets = NULL;
	int r;

	if (!cfg)
		return -EINVAL;
	nm_nets_get(&nets);
	rc.cfg = cfg;
	rc.nets = nets->nets;
	rc.n_nets = nets->n;
	rc.nets_unknown = !nets->running || nets->settling;
	r = reconcile_iface(&rc, ifname);
	nm_nets_free(nets);
	return r;
}

int tune_main(int argc, char **argv, const struct cli *cli)
{
	struct tune_args a;
	struct tune_run runs[2] = { 0 }, *done[2];
	struct sigaction sa = { .sa_handler = on_signal };
	struct netlink *nl = NULL;
	struct link_info link;
	g_autoptr(JsonBuilder) j = json_builder_new();
	char err[256];
	size_t n = 0;
	enum link_fate fate;
	pid_t holder;
	int r = 0, status = EXIT_OK;

	if (cli_wants_help(argc, argv)) {
		fputs(tune_usage, stdout);
		return EXIT_OK;
	}
	if (argc < 2) {
		log_err("tune: needs IFACE and a far end, e.g. server HOST (see wgshape tune --help)");
		return EXIT_USAGE;
	}
	if (!ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (tune_args_parse(argc - 2, argv + 2, &a, err, sizeof(err)) < 0) {
		log_err("tune %s: %s", argv[1], err);
		return EXIT_USAGE;
	}
	if (!cli_can_net_admin(argv[1]))
		return EXIT_FAIL;
	r = netlink_open(&nl);
	if (r == 0)
		r = netlink_link_get(nl, argv[1], &link);
	if (r < 0) {
		log_err("%s: %s", argv[1], r == -ENODEV ? "no such interface" : strerror(-r));
		netlink_close(nl);
		return EXIT_FAIL;
	}
	/* The daemon, apply and the dispatcher hook leave argv[1] alone until we end. */
	r = state_hold(cli->statedir, argv[1], &holder);
	if (r < 0) {
		if (r == -EBUSY)
			log_err("%s: another wgshape tune (pid %d) is measuring it", argv[1],
				(int)holder);
		else
			log_err("%s: tune: cannot hold it in %s: %s", argv[1], cli->statedir,
				strerror(-r));
		netlink_close(nl);
		return EXIT_FAIL;
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	json_builder_begin_array(j);
	for (int d = 0; d < 2 && r == 0; d++) {
		struct tune_run *t = &runs[d];
		gint64 t0 = g_get_monotonic_time();

		if ((d == 0 && !a.egress) || (d == 1 && !a.ingress))
			continue;
		t->a = &a;
		t->cli = cli;
		t->nl = nl;
		t->ifname = argv[1];
		t->egress = d == 0;
		t->tty = isatty(STDERR_FILENO);
		if (t->egress) {
			tune_search_init(&t->search, NULL);
		} else {
			struct tune_params p;

			tune_params_ingress(&p);
			tune_search_init(&t->search, &p);
		}
		if (a.target_us) {
			t->search.p.target.p50_ms = a.target_us / 1000.0;
			t->search.p.target.p95_ms = 3 * a.target_us / 1000.0;
		}
		if (a.server) {
			if (tune_split_server(a.server, &t->host, &t->port) < 0) {
				log_err("tune %s: server: '%s' is not HOST or HOST:PORT", argv[1],
					a.server);
				status = EXIT_USAGE;
				break;
			}
			/* Well under serve's 60 s cap: a step's transfers are fresh and short. */
			t->url = g_strdup_printf(strchr(t->host, ':') ? "http://[%s]:%u/%s?seconds=30"
								      : "http://%s:%u/%s?seconds=30",
						 t->host, t->port, t->egress ? "upload" : "download");
		} else {
			t->host = g_strdup(a.ping_host);
			t->url = g_strdup(t->egress ? a.upload_url : a.download_url);
		}
		r = run_direction(t, link.ifindex);
		t->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
		done[n++] = t;
		/* A tunnel taken down mid-run is what happened, whatever failed after. */
		fate = interrupted ? LINK_SAME : link_fate(t, link.ifindex);
		if (fate != LINK_SAME) {
			snprintf(t->failure, sizeof(t->failure), "%s %s while tune ran", argv[1],
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
			log_err("%s: tune: could not put %s shaping back as it was", argv[1],
				dirname_of(t));
		if (r < 0) {
			if (!t->failure[0])
				snprintf(t->failure, sizeof(t->failure), "%s", strerror(-r));
			log_err("%s: tune %s: %s; %s", argv[1], dirname_of(t), t->failure,
				fate == LINK_GONE || fate == LINK_REMADE
					? "its shaping went with it"
					: "its shaping is as it was");
			status = EXIT_FAIL;
		} else {
			if (!cli->json)
				report_text(t);
			if (t->search.phase == TUNE_FAILED)
				status = EXIT_FAIL;
		}
		if (cli->json)
			report_json(j, t);
	}
	json_builder_end_array(j);
	if (status == EXIT_OK && a.plot && n && write_plot(a.plot, done, n) < 0)
		status = EXIT_FAIL;
	if (status == EXIT_OK && a.save && n) {
		if (save_result(cli, done, n) < 0 || apply_saved(cli, nl, argv[1]) < 0)
			status = EXIT_FAIL;
	}
	if (cli->json) {
		g_autoptr(JsonNode) root = json_builder_get_root(j);
		g_autofree char *out = json_to_string(root, TRUE);

		puts(out);
	}
	for (int d = 0; d < 2; d++) {
		g_free(runs[d].host);
		g_free(runs[d].url);
		if (runs[d].steps)
			g_array_unref(runs[d].steps);
	}
	state_release(cli->statedir, argv[1]);
	netlink_close(nl);
	return status;
}
