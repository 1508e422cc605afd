/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of the measure module share; no one outside includes it.
 *
 * A run (loop.c) owns at most one probe (probe.c: ICMP or UDP echo) and one
 * load (http-load.c: libcurl streams), each opaque to the others, and drives both
 * from one poll loop. Each reports a failure with measure_fail(); the first is
 * the run's error. resolve.c turns names and URLs into addresses for both.
 * No curl type crosses this header either: only http-load.c and resolve.c include
 * <curl/curl.h>.
 */
#ifndef WGSHAPE_MEASURE_INTERNAL_H
#define WGSHAPE_MEASURE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <glib.h>

#include "measure/measure.h"

#define NS_PER_MS INT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)

struct probe;
struct load;

struct run {
	const struct measure_config *cfg;
	int err; /* the first failure, 0 until then */
	char *msg; /* the caller's, MEASURE_MSG_SIZE */
	struct probe *probe; /* NULL without probes */
	struct load *load; /* NULL without load */
};

/* Only the first failure is kept: it is the cause, the rest follow from it. */
void measure_fail(struct run *r, int err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

int64_t measure_clock_ns(clockid_t id);
int64_t measure_mono_ns(void);
const char *measure_family_name(int family); /* "IPv4", "IPv6" */

/* resolve.c: host (brackets of an IPv6 literal removed) and port of an http(s) URL. */
int measure_url_host_port(const char *url, char *host, size_t hostlen, uint16_t *port);

/* probe.c: the probe socket and the probes sent on it. */
int measure_probe_open(struct run *r); /* sets r->probe, even on failure */
void measure_probe_free(struct probe *p); /* NULL is fine */
int measure_probe_fd(const struct probe *p);
/* The probes' grid starts at start: the first one is due then. */
void measure_probe_begin(struct probe *p, int64_t start);
/* Send a probe if one is due at now; returns when the next one is. */
int64_t measure_probe_tick(struct run *r, int64_t now);
/* Read every echo waiting on the socket. */
void measure_probe_recv(struct run *r);
/* Every probe answered, or the last past its timeout: nothing more to wait for. */
bool measure_probe_drained(const struct probe *p, int64_t now);
/* When the last probe sent times out; only while there is one. */
int64_t measure_probe_last_deadline(const struct probe *p);
void measure_probe_progress(const struct probe *p, struct measure_progress *pr);
/* The samples, and the RTTs and losses of probes sent from warm on. */
void measure_probe_collect(const struct probe *p, int64_t start, int64_t warm,
			   struct measure_result *res);

/* http-load.c: cfg->streams HTTP transfers on one libcurl multi handle. */
int measure_load_open(struct run *r); /* sets r->load, even on failure */
void measure_load_free(struct load *l); /* NULL is fine */
void measure_load_start(struct run *r);
/* Wait up to ms for curl's sockets and fd (-1: none); fd's revents. */
short measure_load_poll(struct run *r, int fd, int ms);
/* Move what is ready, and start again any transfer that ended. */
void measure_load_perform(struct run *r);
uint64_t measure_load_bytes(const struct load *l);
/* The warm-up is over: what moved so far is left out of goodput. */
void measure_load_mark_warm(struct load *l);
/*
 * After the warm-up, every probe interval: each stream's own RTT from the
 * kernel (TCP_INFO: the sender's smoothed RTT for an upload, the receiver's
 * estimate for a download), for measure_result.self_rtt_ms.
 */
void measure_load_sample_rtt(struct run *r);
/* The run is over: count what moved, then abort every transfer. */
void measure_load_end(struct load *l);
/* The streams' counts; res->steady_seconds is set. */
void measure_load_collect(const struct load *l, struct measure_result *res);

#endif
