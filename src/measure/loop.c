// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One run: open the probe and the load, then a single poll loop on
 * CLOCK_MONOTONIC deadlines (the next probe, the end of the warm-up, the next
 * progress report, the end) until the run is over, and a drain for echoes
 * still on their way.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <glib.h>

#include "measure/internal.h"

/* Where a run is in time (CLOCK_MONOTONIC ns); the loop's own. */
struct timeline {
	int64_t start, warm, end, stop;
	bool warm_done; /* the warm-up's bytes are marked; at once without load */
	int64_t progress_ns, next_progress;
	int64_t self_ns, next_self; /* the load's own RTTs, after the warm-up */
	int64_t last_progress_ns;
	uint64_t last_progress_bytes;
};

int64_t measure_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t measure_mono_ns(void)
{
	return measure_clock_ns(CLOCK_MONOTONIC);
}

void measure_fail(struct run *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->err)
		return;
	r->err = err;
	va_start(ap, fmt);
	vsnprintf(r->msg, MEASURE_MSG_SIZE, fmt, ap);
	va_end(ap);
}

const char *measure_family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

void measure_config_init(struct measure_config *cfg)
{
	*cfg = (struct measure_config){
		.family = AF_UNSPEC,
		.warmup_ms = MEASURE_WARMUP_MS,
		.probe_port = TUNE_PORT,
		.probe_interval_ms = MEASURE_PROBE_INTERVAL_MS,
		.probe_timeout_ms = MEASURE_PROBE_TIMEOUT_MS,
		.streams = 1,
		.progress_ms = MEASURE_PROGRESS_MS,
	};
}

void measure_result_free(struct measure_result *r)
{
	if (!r)
		return;
	g_free(r->streams);
	g_free(r->rtt_ms);
	g_free(r->self_rtt_ms);
	g_free(r->samples);
	g_free(r);
}

bool measure_far_end_gone(int err)
{
	switch (-err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EPIPE:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case ENETDOWN:
		return true;
	default:
		return false;
	}
}

static int check_config(const struct measure_config *cfg, char *msg)
{
	const char *why = NULL;

	if (cfg->family != AF_INET && cfg->family != AF_INET6)
		why = "the address family must be forced (ipv4 or ipv6)";
	else if (cfg->duration_ms == 0)
		why = "no duration";
	else if (cfg->load != MEASURE_LOAD_NONE && cfg->warmup_ms >= cfg->duration_ms)
		why = "the warm-up takes the whole run";
	else if (cfg->load == MEASURE_LOAD_NONE && cfg->probe == MEASURE_PROBE_NONE)
		why = "neither load nor probes";
	else if (cfg->probe != MEASURE_PROBE_NONE &&
		 (!cfg->probe_host || !cfg->probe_interval_ms || !cfg->probe_timeout_ms))
		why = "probes need a host, an interval and a timeout";
	else if (cfg->probe == MEASURE_PROBE_UDP && !cfg->probe_port)
		why = "UDP probes need a port";
	else if (cfg->load != MEASURE_LOAD_NONE && (!cfg->url || cfg->streams == 0))
		why = "load needs a URL and at least one stream";
	else if (cfg->ifname && (!*cfg->ifname || strlen(cfg->ifname) >= IF_NAMESIZE))
		why = "bad interface name";
	if (!why)
		return 0;
	snprintf(msg, MEASURE_MSG_SIZE, "measure: %s", why);
	return -EINVAL;
}

static int timeout_ms(int64_t deadline, int64_t now)
{
	int64_t d = deadline - now;

	if (d <= 0)
		return 0;
	/* Rounded up: waking a little early would spin until the deadline. */
	d = (d + NS_PER_MS - 1) / NS_PER_MS;
	return d > INT_MAX ? INT_MAX : (int)d;
}

/* The one event wait: curl's sockets and the probe socket. */
static void wait_events(struct run *r, int64_t deadline)
{
	struct pollfd pfd = { .fd = r->probe ? measure_probe_fd(r->probe) : -1, .events = POLLIN };
	int ms = timeout_ms(deadline, measure_mono_ns());

	if (r->load) {
		pfd.revents = measure_load_poll(r, pfd.fd, ms);
	} else if (poll(&pfd, r->probe ? 1 : 0, ms) < 0) {
		pfd.revents = 0;
		if (errno != EINTR)
			measure_fail(r, -errno, "poll: %s", g_strerror(errno));
	}
	if (r->probe && pfd.revents)
		measure_probe_recv(r);
}

static bool cancelled(const struct run *r)
{
	return r->cfg->cancel && *r->cfg->cancel;
}

static void report_progress(struct run *r, struct timeline *tl, int64_t now)
{
	const struct measure_config *cfg = r->cfg;
	struct measure_progress pr = {
		.elapsed = (double)(now - tl->start) / NS_PER_S,
		.duration = cfg->duration_ms / 1000.0,
		.last_rtt_ms = -1,
	};

	if (r->load) {
		pr.bytes = measure_load_bytes(r->load);
		if (now > tl->last_progress_ns)
			pr.goodput = (double)(pr.bytes - tl->last_progress_bytes) * NS_PER_S /
				     (double)(now - tl->last_progress_ns);
		tl->last_progress_bytes = pr.bytes;
	}
	tl->last_progress_ns = now;
	if (r->probe)
		measure_probe_progress(r->probe, &pr);
	if (cfg->progress(&pr, cfg->progress_arg))
		measure_fail(r, -ECANCELED, "measurement stopped by its caller");
}

/* One turn of the loop at now: what is due, then a wait until the next thing is. */
static void run_turn(struct run *r, struct timeline *tl, int64_t now)
{
	const struct measure_config *cfg = r->cfg;
	int64_t deadline = tl->end;

	if (r->probe) {
		int64_t next_probe = measure_probe_tick(r, now);

		deadline = MIN(deadline, next_probe);
	}
	if (!tl->warm_done && now >= tl->warm) {
		measure_load_mark_warm(r->load);
		tl->warm = now;
		tl->warm_done = true;
		tl->next_self = now;
	}
	if (r->load && tl->warm_done && now >= tl->next_self) {
		measure_load_sample_rtt(r);
		tl->next_self += tl->self_ns;
		if (tl->next_self <= now)
			tl->next_self = now + tl->self_ns;
	}
	if (cfg->progress && now >= tl->next_progress) {
		report_progress(r, tl, now);
		tl->next_progress += tl->progress_ns;
		if (tl->next_progress <= now)
			tl->next_progress = now + tl->progress_ns;
	}
	if (!tl->warm_done)
		deadline = MIN(deadline, tl->warm);
	else if (r->load)
		deadline = MIN(deadline, tl->next_self);
	if (cfg->progress)
		deadline = MIN(deadline, tl->next_progress);
	wait_events(r, deadline);
	if (r->load && !r->err)
		measure_load_perform(r);
}

/* Load and probes until the end, a failure or a cancel. */
static void run_main(struct run *r, struct timeline *tl)
{
	int64_t now;

	for (now = measure_mono_ns(); !r->err; now = measure_mono_ns()) {
		if (cancelled(r)) {
			measure_fail(r, -ECANCELED, "measurement interrupted");
			break;
		}
		if (now >= tl->end)
			break;
		run_turn(r, tl, now);
	}
	tl->stop = now;
}

/* Echoes still on their way: wait for them up to their timeout. */
static void run_drain(struct run *r)
{
	while (r->probe && !r->err) {
		if (measure_probe_drained(r->probe, measure_mono_ns()))
			break;
		if (cancelled(r)) {
			measure_fail(r, -ECANCELED, "measurement interrupted");
			break;
		}
		wait_events(r, measure_probe_last_deadline(r->probe));
	}
}

static void timeline_init(struct timeline *tl, const struct measure_config *cfg)
{
	bool with_load = cfg->load != MEASURE_LOAD_NONE;

	tl->start = measure_mono_ns();
	tl->warm = with_load ? tl->start + (int64_t)cfg->warmup_ms * NS_PER_MS : tl->start;
	tl->end = tl->start + (int64_t)cfg->duration_ms * NS_PER_MS;
	tl->progress_ns = (int64_t)MAX(cfg->progress_ms, 10u) * NS_PER_MS;
	tl->next_progress = tl->start + tl->progress_ns;
	tl->last_progress_ns = tl->start;
	tl->last_progress_bytes = 0;
	tl->warm_done = !with_load;
	tl->self_ns = (int64_t)MAX(cfg->probe_interval_ms, 10u) * NS_PER_MS;
	tl->next_self = tl->warm;
}

static struct measure_result *collect(const struct run *r, const struct timeline *tl)
{
	struct measure_result *res = g_new0(struct measure_result, 1);

	res->seconds = (double)(tl->stop - tl->start) / NS_PER_S;
	if (r->load) {
		res->steady_seconds = (double)(tl->stop - tl->warm) / NS_PER_S;
		measure_load_collect(r->load, res);
	}
	if (r->probe)
		measure_probe_collect(r->probe, tl->start, tl->warm, res);
	return res;
}

int measure_run(const struct measure_config *cfg, struct measure_result **out,
		char msg[MEASURE_MSG_SIZE])
{
	struct run r = { .cfg = cfg, .msg = msg };
	struct timeline tl;
	int e;

	msg[0] = '\0';
	e = check_config(cfg, msg);
	if (e < 0)
		return e;
	if (cfg->load != MEASURE_LOAD_NONE && measure_load_open(&r) < 0)
		goto out;
	if (cfg->probe != MEASURE_PROBE_NONE && measure_probe_open(&r) < 0)
		goto out;

	timeline_init(&tl, cfg);
	if (r.probe)
		measure_probe_begin(r.probe, tl.start);
	if (r.load)
		measure_load_start(&r);
	run_main(&r, &tl);
	if (r.err)
		goto out;
	/* The load ends here, not after the probes' drain. */
	if (r.load)
		measure_load_end(r.load);
	run_drain(&r);
	if (!r.err)
		*out = collect(&r, &tl);
out:
	measure_probe_free(r.probe);
	measure_load_free(r.load);
	return r.err;
}
