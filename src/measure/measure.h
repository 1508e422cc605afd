/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The load/probe module: the instruments wgshape tune drives. The only module
 * that includes <curl/curl.h>; no curl type crosses this header. What it
 * speaks to wgshape serve is proto/tune.h.
 *
 * measure_run() blocks for one run: it loads the path with N parallel HTTP/1.1
 * streams (libcurl multi, fresh connections) and at the same time sends
 * latency probes (UDP echo to `wgshape serve`, or ICMP echo), all in one poll
 * loop with CLOCK_MONOTONIC deadlines. RTTs use the kernel's receive
 * timestamps (SO_TIMESTAMPNS), so a busy loop does not inflate them.
 * Without load it is the idle baseline; without probes, load only.
 *
 * Everything a run touches is local to the call: a caller on a GLib main loop
 * runs it in a worker thread (GTask) and forwards progress to its context with
 * g_main_context_invoke().
 *
 * Every socket is bound to the interface (SO_BINDTODEVICE) and to the address
 * family the caller forces: names are resolved with that family only
 * (getaddrinfo with ai_family set), never left to resolution order.
 *
 * Errors are 0 or -errno; measure_run() also words them in msg:
 *   -EINVAL        bad configuration (no duration, warm-up >= duration, bad URL)
 *   -EADDRNOTAVAIL the host has no address in the forced family, or no such name
 *   -ENODEV        no such interface to bind to
 *   -ECONNREFUSED  nothing listens (TCP refused, or ICMP port unreachable for UDP)
 *   -ECONNRESET    the far end went away mid-transfer
 *   -ETIMEDOUT     connecting, or a stream stalled (no byte for 5 s)
 *   -EHOSTUNREACH, -ENETUNREACH  no route
 *   -EPROTO        HTTP status not 200 (download) or not 2xx (upload), a
 *                  redirect (not followed: the path proof would not hold), TLS
 *   -ENODATA       a download answered 200 with an empty body
 *   -EPERM         ICMP: no ping socket (net.ipv4.ping_group_range) and no CAP_NET_RAW
 *   -EACCES        ICMP with MEASURE_ICMP_PING: the ping socket was refused
 *   -ECANCELED     the progress callback or *cancel asked to stop
 */
#ifndef WGSHAPE_MEASURE_H
#define WGSHAPE_MEASURE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/tune.h"

#define MEASURE_WARMUP_MS 1000
#define MEASURE_PROBE_INTERVAL_MS 100
#define MEASURE_PROBE_TIMEOUT_MS 1000
#define MEASURE_PROGRESS_MS 250
#define MEASURE_MSG_SIZE 256

enum measure_probe {
	MEASURE_PROBE_NONE,
	MEASURE_PROBE_UDP, /* wgshape serve's UDP echo (only its answers count) */
	MEASURE_PROBE_ICMP, /* ICMP / ICMPv6 echo */
};

enum measure_icmp {
	MEASURE_ICMP_AUTO, /* a ping socket; a raw socket when the kernel refuses it */
	MEASURE_ICMP_PING, /* only a ping socket (SOCK_DGRAM, IPPROTO_ICMP[V6]) */
	MEASURE_ICMP_RAW, /* only a raw socket (CAP_NET_RAW) */
};

enum measure_load {
	MEASURE_LOAD_NONE, /* idle: probes only */
	MEASURE_LOAD_DOWNLOAD, /* GET url, the body is counted and dropped */
	MEASURE_LOAD_UPLOAD, /* POST zeros to url */
};

struct measure_progress {
	double elapsed; /* s since the start */
	double duration; /* s, the whole run */
	uint64_t bytes; /* all streams since the start */
	double goodput; /* bytes/s over the last progress interval */
	size_t probes_sent, probes_received;
	double last_rtt_ms; /* -1 until a probe came back */
};

/* Called about every progress_ms from inside measure_run(); non-zero stops the run. */
typedef int (*measure_progress_fn)(const struct measure_progress *p, void *arg);

struct measure_config {
	const char *ifname; /* bind every socket to it; NULL: no binding */
	int family; /* AF_INET or AF_INET6: required */
	unsigned int duration_ms; /* required */
	unsigned int warmup_ms; /* with load: the start left out of goodput and RTTs */

	enum measure_probe probe;
	const char *probe_host; /* a name or an address */
	uint16_t probe_port; /* UDP only */
	unsigned int probe_interval_ms;
	unsigned int probe_timeout_ms; /* a later echo counts as lost */
	enum measure_icmp icmp;

	enum measure_load load;
	/* http or https; wgshape serve's is tune_url()'s. A
	 * transfer that ends before the run (a file, serve's per-request cap) is
	 * made again on a fresh connection; redirects are not followed. */
	const char *url;
	unsigned int streams; /* parallel connections */
	/* Upload: Content-Length of each POST, started again when done; 0: chunked, endless. */
	uint64_t upload_size;

	unsigned int progress_ms;
	measure_progress_fn progress; /* may be NULL */
	void *progress_arg;
	/* May be NULL; non-zero stops the run (a flag a signal handler sets). */
	volatile sig_atomic_t *cancel;
};

/* Defaults: the intervals above, one stream, probes and load off, no interface. */
void measure_config_init(struct measure_config *cfg);

struct measure_stream {
	uint64_t bytes; /* body bytes moved in the whole run */
	uint64_t steady_bytes; /* after the warm-up */
	double goodput; /* bytes/s: steady_bytes / steady_seconds */
	unsigned int transfers; /* requests made (one that finishes early is made again) */
};

struct measure_sample {
	double t; /* s from the start to the probe's sending */
	double rtt_ms; /* < 0: lost */
};

struct measure_result {
	double seconds; /* start to the end of the load (the probes' drain not included) */
	double steady_seconds; /* the part goodput is measured over */
	uint64_t bytes, steady_bytes; /* all streams */
	double goodput; /* bytes/s, all streams, over the steady part */
	struct measure_stream *streams; /* n_streams entries */
	size_t n_streams;

	/* Probes sent after the warm-up (all of them when there is no load). */
	double *rtt_ms; /* the ones that came back, in sending order */
	size_t n_rtt;
	/*
	 * The load's own connections' RTTs after the warm-up, each stream's
	 * every probe interval (TCP_INFO: the sender's smoothed RTT for an
	 * upload, the receiver's estimate for a download); NULL: none.
	 */
	double *self_rtt_ms;
	size_t n_self_rtt;
	size_t lost; /* no echo within probe_timeout_ms */
	struct measure_sample *samples; /* every probe, warm-up included (for plots) */
	size_t n_samples;
	bool icmp_raw; /* ICMP went through a raw socket */
	bool kernel_timestamps; /* every RTT came from kernel receive timestamps */

	char probe_addr[64]; /* what the names resolved to, for the report */
	char load_addr[64];
};

void measure_result_free(struct measure_result *r); /* NULL is fine */

/*
 * One run of cfg->duration_ms. On success *out is the result (free it with
 * measure_result_free()); on failure *out is untouched and msg says what
 * went wrong, naming the stream or the probe target and the address.
 * After the load ends, it waits at most probe_timeout_ms for echoes still
 * on their way.
 */
int measure_run(const struct measure_config *cfg, struct measure_result **out,
		char msg[MEASURE_MSG_SIZE]);

/* Is err one that means the far end is gone or cannot be reached? */
bool measure_far_end_gone(int err);

/* host (a name or an address) with family only; port may be 0. */
int measure_resolve(const char *host, uint16_t port, int family, struct sockaddr_storage *out,
		    socklen_t *len);
/* The host and port of an http(s) URL, resolved as measure_run() will. -EINVAL: bad URL. */
int measure_resolve_url(const char *url, int family, struct sockaddr_storage *out,
			socklen_t *len);

#endif
