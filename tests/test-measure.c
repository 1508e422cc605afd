// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The load/probe module against servers inside this test: a UDP echo that can
 * drop, and a small threaded HTTP/1.1 server (endless, held and sized
 * downloads, an upload sink, error statuses, a server that goes away). Then
 * ICMP echo on loopback through whichever socket the kernel allows, and the
 * /proc/stat parser on captured text. Loopback only.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <glib.h>

#include "measure/cpu.h"
#include "measure/measure.h"
#include "proto/tune.h"

/* ---- cpu --------------------------------------------------------------- */

/* Captured from a 4-core machine, then 1 s later with cpu2 saturated. */
static const char stat_before[] =
	"cpu  10000 100 5000 80000 400 0 100 0 0 0\n"
	"cpu0 2500 25 1250 20000 100 0 25 0 0 0\n"
	"cpu1 2500 25 1250 20000 100 0 25 0 0 0\n"
	"cpu2 2500 25 1250 20000 100 0 25 0 0 0\n"
	"cpu3 2500 25 1250 20000 100 0 25 0 0 0\n"
	"intr 123456 0 0 0\n"
	"ctxt 987654\n"
	"btime 1700000000\n"
	"processes 4242\n"
	"procs_running 2\n"
	"procs_blocked 0\n"
	"softirq 1 2 3 4 5 6 7 8 9 10 11\n";
static const char stat_after[] =
	"cpu  10085 100 5030 80260 410 0 115 0 50 0\n"
	/* cpu0: 10 busy of 100 */
	"cpu0 2505 25 1255 20090 100 0 25 0 0 0\n"
	/* cpu1: 20 busy of 100, 10 of the 100 in iowait (not busy) */
	"cpu1 2510 25 1260 20070 110 0 25 0 0 0\n"
	/* cpu2: 95 of 100 (softirq included), guest time already in user */
	"cpu2 2565 25 1265 20005 100 0 40 0 50 0\n"
	/* cpu3: 5 of 100 */
	"cpu3 2505 25 1250 20095 100 0 25 0 0 0\n"
	"intr 123999 0 0 0\n";

static void test_cpu_parse(void)
{
	struct cpu_sample *a = NULL, *b = NULL;
	struct cpu_busy busy;

	g_assert_cmpint(cpu_parse(stat_before, &a), ==, 0);
	g_assert_cmpint(cpu_parse(stat_after, &b), ==, 0);
	g_assert_cmpuint(a->n, ==, 4);
	g_assert_cmpint(a->all.cpu, ==, -1);
	g_assert_cmpint(a->cores[2].cpu, ==, 2);
	/* user+nice+system+idle+iowait+irq+softirq+steal, guest not again */
	g_assert_cmpuint(a->all.total, ==, 10000 + 100 + 5000 + 80000 + 400 + 100);
	g_assert_cmpuint(a->all.idle, ==, 80400);
	g_assert_cmpuint(b->cores[2].total, ==, 2565 + 25 + 1265 + 20005 + 100 + 40);

	cpu_busy(a, b, &busy);
	g_assert_cmpuint(busy.n, ==, 4);
	g_assert_cmpint(busy.busiest_cpu, ==, 2);
	g_assert_cmpfloat_with_epsilon(busy.busiest, 0.95, 1e-9);
	/* the average hides the saturated core: (10 + 20 + 95 + 5) / 400 */
	g_assert_cmpfloat_with_epsilon(busy.average, 130.0 / 400.0, 1e-9);
	g_assert_cmpfloat(busy.average, <, busy.busiest);
	g_assert_cmpfloat_with_epsilon(cpu_core_busy(a, b, 0), 0.10, 1e-9);
	g_assert_cmpfloat_with_epsilon(cpu_core_busy(a, b, 1), 0.20, 1e-9);
	g_assert_cmpfloat_with_epsilon(cpu_core_busy(a, b, 3), 0.05, 1e-9);
	g_assert_cmpfloat(cpu_core_busy(a, b, 7), <, 0);
	cpu_sample_free(a);
	cpu_sample_free(b);
}

static void test_cpu_edges(void)
{
	static const struct {
		const char *name, *text;
		int r;
		size_t n;
	} bad[] = {
		{ "empty", "", -EINVAL, 0 },
		{ "no cpu line", "intr 1 2 3\n", -EINVAL, 0 },
		{ "too few fields", "cpu  1 2 3\n", -EINVAL, 0 },
		{ "old kernel, 4 fields", "cpu  1 2 3 4\ncpu0 1 2 3 4\n", 0, 1 },
		{ "no final newline", "cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7", 0, 1 },
		{ "garbage core line skipped", "cpu  1 2 3 4\ncpux 1 2 3 4\ncpu1 1 2 3 4\n", 0, 1 },
	};
	struct cpu_sample *a = NULL, *b = NULL;
	struct cpu_busy busy;

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct cpu_sample *s = NULL;

		g_test_message("case %s", bad[i].name);
		g_assert_cmpint(cpu_parse(bad[i].text, &s), ==, bad[i].r);
		if (bad[i].r == 0) {
			g_assert_cmpuint(s->n, ==, bad[i].n);
			cpu_sample_free(s);
		} else {
			g_assert_null(s);
		}
	}
	cpu_sample_free(NULL);

	/* cpu1 went offline in between, cpu3 came: matched by number; iowait
	 * going backwards (it can) counts as zero, not as a huge busy figure. */
	g_assert_cmpint(cpu_parse("cpu  100 0 0 100 50 0 0 0\n"
				  "cpu0 50 0 0 50 50 0 0 0\n"
				  "cpu1 50 0 0 50 0 0 0 0\n",
				  &a),
			==, 0);
	g_assert_cmpint(cpu_parse("cpu  200 0 0 200 40 0 0 0\n"
				  "cpu0 60 0 0 140 40 0 0 0\n"
				  "cpu3 10 0 0 10 0 0 0 0\n",
				  &b),
			==, 0);
	cpu_busy(a, b, &busy);
	g_assert_cmpuint(busy.n, ==, 1);
	g_assert_cmpint(busy.busiest_cpu, ==, 0);
	g_assert_cmpfloat(busy.busiest, >=, 0);
	g_assert_cmpfloat(busy.busiest, <=, 1);
	g_assert_cmpfloat(busy.average, >=, 0);
	g_assert_cmpfloat(busy.average, <=, 1);
	/* no time passed: zero, not a division by zero */
	cpu_busy(a, a, &busy);
	g_assert_cmpfloat(busy.busiest, ==, 0);
	g_assert_cmpfloat(busy.average, ==, 0);
	cpu_sample_free(a);
	cpu_sample_free(b);
}

static void test_cpu_read(void)
{
	struct cpu_sample *a = NULL, *b = NULL;
	struct cpu_busy busy;

	g_assert_cmpint(cpu_read(&a), ==, 0);
	g_assert_cmpuint(a->n, >=, 1);
	g_assert_cmpint(cpu_read(&b), ==, 0);
	cpu_busy(a, b, &busy);
	g_assert_cmpfloat(busy.busiest, >=, 0);
	g_assert_cmpfloat(busy.busiest, <=, 1);
	cpu_sample_free(a);
	cpu_sample_free(b);
}

/* ---- test servers ------------------------------------------------------ */

static int listen_on(int family, int type, uint16_t *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd = socket(family, type | SOCK_CLOEXEC, 0), one = 1;

	g_assert_cmpint(fd, >=, 0);
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (void *)&ss;

		/* v6 only: a v4 client must not reach it through a mapped address */
		g_assert_cmpint(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), ==,
				0);
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (void *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*s4);
	}
	g_assert_cmpint(bind(fd, (struct sockaddr *)&ss, len), ==, 0);
	if (type == SOCK_STREAM)
		g_assert_cmpint(listen(fd, 64), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&ss, &len), ==, 0);
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					 : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* A port nobody listens on (bound, read, closed). */
static uint16_t closed_port(int family, int type)
{
	uint16_t port;

	close(listen_on(family, type, &port));
	return port;
}

/* serve's UDP echo (answers requests); drops every drop_every-th datagram
 * when set; verbatim: sends back what came, as a plain echo (or a loop) does. */
struct echo {
	int fd, wake[2];
	uint16_t port;
	unsigned int drop_every;
	bool verbatim;
	atomic_uint seen, dropped;
	GThread *thread;
};

static gpointer echo_thread(gpointer arg)
{
	struct echo *e = arg;

	for (;;) {
		struct pollfd p[2] = { { e->fd, POLLIN, 0 }, { e->wake[0], POLLIN, 0 } };
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		char buf[128];
		ssize_t n;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		n = recvfrom(e->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &flen);
		if (n < 0)
			continue;
		if (e->drop_every && ++e->seen % e->drop_every == 0) {
			e->dropped++;
			continue;
		}
		if (!e->verbatim && tune_probe_answer(buf, (size_t)n, 0, 0) < 0)
			continue;
		sendto(e->fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
	}
}

static struct echo *echo_start_verbatim(int family, unsigned int drop_every, bool verbatim)
{
	struct echo *e = g_new0(struct echo, 1);

	e->fd = listen_on(family, SOCK_DGRAM, &e->port);
	e->drop_every = drop_every;
	e->verbatim = verbatim;
	g_assert_cmpint(pipe2(e->wake, O_CLOEXEC), ==, 0);
	e->thread = g_thread_new("echo", echo_thread, e);
	return e;
}

static struct echo *echo_start(int family, unsigned int drop_every)
{
	return echo_start_verbatim(family, drop_every, false);
}

static void echo_stop(struct echo *e)
{
	g_assert_cmpint(write(e->wake[1], "x", 1), ==, 1);
	g_thread_join(e->thread);
	close(e->fd);
	close(e->wake[0]);
	close(e->wake[1]);
	g_free(e);
}

/*
 * HTTP/1.1, one thread per connection, Connection: close.
 *   GET /zero            zeros until the client goes
 *   GET /zero?hold=N     N zeros, then waits for the client to go
 *   GET /file?len=N      a body of N bytes with Content-Length
 *   GET /empty, /status/NNN, /redirect
 *   POST /upload         counts the body as it comes on the wire (chunk
 *                        framing included, as libcurl counts it), answers
 *                        when a Content-Length body is complete
 * With gone_after set, the server goes away once it has sent that much: the
 * listener closes and every connection is reset.
 */
struct http {
	int fd, wake[2];
	uint16_t port;
	uint64_t gone_after;
	atomic_bool gone;
	atomic_uint_fast64_t sent, received;
	atomic_uint requests;
	GThread *thread;
	GMutex lock;
	GPtrArray *conns;
};

struct conn {
	struct http *h;
	int fd;
};

static bool send_all(struct conn *c, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

static void reply(struct conn *c, const char *status, const char *extra, const char *body)
{
	char head[512];

	snprintf(head, sizeof(head),
		 "HTTP/1.1 %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n%s", status,
		 strlen(body), extra, body);
	send_all(c, head, strlen(head));
}

static void go_away(struct conn *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (!c->h->gone) {
		c->h->gone = true;
		g_assert_cmpint(write(c->h->wake[1], "g", 1), ==, 1);
	}
	/* a reset, as from a crashed server or a tunnel that went down */
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Zeros: len of them (UINT64_MAX: until the client goes). False when it went. */
static bool send_zeros(struct conn *c, uint64_t len)
{
	static const char zeros[65536];

	while (len) {
		size_t chunk = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);
		ssize_t n = send(c->fd, zeros, chunk, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		c->h->sent += (uint64_t)n;
		if (len != UINT64_MAX)
			len -= (uint64_t)n;
		if (c->h->gone || (c->h->gone_after && c->h->sent >= c->h->gone_after)) {
			go_away(c);
			return false;
		}
	}
	return true;
}

static uint64_t query_num(const char *path, const char *key)
{
	const char *q = strstr(path, key);

	return q ? g_ascii_strtoull(q + strlen(key), NULL, 10) : 0;
}

static void serve_upload(struct conn *c, const char *head, size_t have)
{
	const char *cl = strcasestr(head, "\r\nContent-Length:");
	uint64_t want = cl ? g_ascii_strtoull(cl + 17, NULL, 10) : UINT64_MAX;
	uint64_t got = have;
	char buf[65536];

	c->h->received += have;
	while (got < want) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

		if (n <= 0)
			return; /* the client stopped mid-body: fine for a load */
		got += (uint64_t)n;
		c->h->received += (uint64_t)n;
	}
	snprintf(buf, sizeof(buf), "{\"bytes\":%" G_GUINT64_FORMAT ",\"seconds\":0}", got);
	reply(c, "200 OK", "Content-Type: application/json\r\n", buf);
}

static gpointer conn_thread(gpointer arg)
{
	struct conn *c = arg;
	char buf[8192], method[16], path[256];
	size_t have = 0;
	char *end = NULL;

	while (!end) {
		ssize_t n = recv(c->fd, buf + have, sizeof(buf) - 1 - have, 0);

		if (n <= 0)
			goto out;
		have += (size_t)n;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end && have == sizeof(buf) - 1)
			goto out;
	}
	c->h->requests++;
	if (sscanf(buf, "%15s %255s", method, path) != 2)
		goto out;
	if (!strcmp(method, "POST") && g_str_has_prefix(path, "/upload")) {
		*end = '\0';
		serve_upload(c, buf, have - (size_t)(end + 4 - buf));
	} else if (g_str_has_prefix(path, "/zero")) {
		static const char head[] = "HTTP/1.1 200 OK\r\n"
					   "Content-Type: application/octet-stream\r\n"
					   "Connection: close\r\n\r\n";
		uint64_t hold = query_num(path, "hold=");

		if (!send_all(c, head, strlen(head)))
			goto out;
		if (send_zeros(c, hold ? hold : UINT64_MAX) && hold) {
			/* all sent: wait for the client to go */
			while (recv(c->fd, buf, sizeof(buf), 0) > 0)
				;
		}
	} else if (g_str_has_prefix(path, "/file")) {
		uint64_t len = query_num(path, "len=");
		char head[256];

		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Length: %" G_GUINT64_FORMAT
			 "\r\nConnection: close\r\n\r\n",
			 len);
		if (send_all(c, head, strlen(head)))
			send_zeros(c, len);
	} else if (!strcmp(path, "/empty")) {
		reply(c, "200 OK", "", "");
	} else if (g_str_has_prefix(path, "/status/")) {
		char status[64];

		snprintf(status, sizeof(status), "%.3s Test", path + 8);
		reply(c, status, "", "no\n");
	} else if (!strcmp(path, "/redirect")) {
		reply(c, "302 Found", "Location: /zero\r\n", "");
	} else {
		reply(c, "404 Not Found", "", "");
	}
out:
	close(c->fd);
	g_free(c);
	return NULL;
}

static gpointer http_thread(gpointer arg)
{
	struct http *h = arg;

	for (;;) {
		struct pollfd p[2] = { { h->fd, POLLIN, 0 }, { h->wake[0], POLLIN, 0 } };
		struct conn *c;
		int fd;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			break;
		fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		c = g_new0(struct conn, 1);
		c->h = h;
		c->fd = fd;
		g_mutex_lock(&h->lock);
		g_ptr_array_add(h->conns, g_thread_new("conn", conn_thread, c));
		g_mutex_unlock(&h->lock);
	}
	/* gone (or stopping): nobody listens any more */
	close(h->fd);
	h->fd = -1;
	return NULL;
}

static struct http *http_start(int family, uint64_t gone_after)
{
	struct http *h = g_new0(struct http, 1);

	h->fd = listen_on(family, SOCK_STREAM, &h->port);
	h->gone_after = gone_after;
	h->conns = g_ptr_array_new();
	g_mutex_init(&h->lock);
	g_assert_cmpint(pipe2(h->wake, O_CLOEXEC), ==, 0);
	h->thread = g_thread_new("http", http_thread, h);
	return h;
}

/* Joins everything: the counters are final afterwards. */
static void http_stop(struct http *h)
{
	if (!h->gone)
		g_assert_cmpint(write(h->wake[1], "s", 1), ==, 1);
	g_thread_join(h->thread);
	for (guint i = 0; i < h->conns->len; i++)
		g_thread_join(h->conns->pdata[i]);
	g_ptr_array_free(h->conns, TRUE);
	g_mutex_clear(&h->lock);
	close(h->wake[0]);
	close(h->wake[1]);
}

static char *http_url(const struct http *h, int family, const char *path)
{
	return g_strdup_printf(family == AF_INET6 ? "http://[::1]:%u%s" : "http://127.0.0.1:%u%s",
			       h->port, path);
}

/* ---- helpers ----------------------------------------------------------- */

/* Failures are reported at once: well before the 20 s the failing runs are
 * given, even under valgrind on a busy machine. */
#define NO_HANG 5.0

static void cfg_base(struct measure_config *cfg, int family, unsigned int duration_ms)
{
	measure_config_init(cfg);
	cfg->family = family;
	cfg->duration_ms = duration_ms;
	cfg->ifname = "lo"; /* bound like a tunnel, on loopback */
}

static void cfg_udp(struct measure_config *cfg, int family, const struct echo *e)
{
	cfg->probe = MEASURE_PROBE_UDP;
	cfg->probe_host = family == AF_INET6 ? "::1" : "127.0.0.1";
	cfg->probe_port = e->port;
	cfg->probe_interval_ms = 50;
	cfg->probe_timeout_ms = 1000; /* generous: the machine may be busy, or valgrind slow */
}

static struct measure_result *run_ok(const struct measure_config *cfg)
{
	struct measure_result *res = NULL;
	char msg[MEASURE_MSG_SIZE];
	int r = measure_run(cfg, &res, msg);

	if (r < 0)
		g_error("measure_run: %s (%s)", msg, g_strerror(-r));
	g_assert_nonnull(res);
	return res;
}

/* Runs cfg expecting err; returns how long it took (s). */
static double run_fails(const struct measure_config *cfg, int err, const char *msg_has)
{
	struct measure_result *res = NULL;
	char msg[MEASURE_MSG_SIZE];
	gint64 t0 = g_get_monotonic_time();
	int r = measure_run(cfg, &res, msg);
	double took = (g_get_monotonic_time() - t0) / 1e6;

	g_test_message("error %d after %.2f s: %s", r, took, msg);
	g_assert_cmpint(r, ==, err);
	g_assert_null(res); /* untouched on failure */
	g_assert_cmpstr(msg, !=, "");
	if (msg_has && !strstr(msg, msg_has))
		g_error("message \"%s\" lacks \"%s\"", msg, msg_has);
	return took;
}

static void check_rtts(const struct measure_result *res)
{
	for (size_t i = 0; i < res->n_rtt; i++) {
		g_assert_cmpfloat(res->rtt_ms[i], >, 0);
		g_assert_cmpfloat(res->rtt_ms[i], <, 1000); /* within the timeout */
	}
}

/* ---- probes ------------------------------------------------------------ */

static void test_config(void)
{
	static const struct {
		const char *name;
		int family;
		unsigned int duration, warmup;
		enum measure_probe probe;
		enum measure_load load;
		const char *url, *ifname;
	} t[] = {
		{ "family left to resolution", AF_UNSPEC, 1000, 0, MEASURE_PROBE_UDP },
		{ "no duration", AF_INET, 0, 0, MEASURE_PROBE_UDP },
		{ "nothing to do", AF_INET, 1000, 0, MEASURE_PROBE_NONE },
		{ "warm-up as long as the run", AF_INET, 1000, 1000, 0, MEASURE_LOAD_DOWNLOAD,
		  "http://127.0.0.1:1/" },
		{ "load without a URL", AF_INET, 1000, 0, 0, MEASURE_LOAD_UPLOAD },
		{ "interface name too long", AF_INET, 1000, 0, MEASURE_PROBE_UDP, 0, NULL,
		  "0123456789abcdef" },
		{ "not http", AF_INET, 1000, 0, 0, MEASURE_LOAD_DOWNLOAD, "ftp://127.0.0.1/x" },
		{ "not a URL", AF_INET, 1000, 0, 0, MEASURE_LOAD_DOWNLOAD, "::::" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		struct measure_config cfg;

		g_test_message("case %s", t[i].name);
		measure_config_init(&cfg);
		cfg.family = t[i].family;
		cfg.duration_ms = t[i].duration;
		cfg.warmup_ms = t[i].warmup;
		cfg.probe = t[i].probe;
		cfg.probe_host = "127.0.0.1";
		cfg.load = t[i].load;
		cfg.url = t[i].url;
		cfg.ifname = t[i].ifname;
		run_fails(&cfg, -EINVAL, NULL);
	}
}

static void test_resolve(void)
{
	struct sockaddr_storage ss;
	socklen_t len;

	g_assert_cmpint(measure_resolve("127.0.0.1", 4780, AF_INET, &ss, &len), ==, 0);
	g_assert_cmpint(ss.ss_family, ==, AF_INET);
	g_assert_cmpint(ntohs(((struct sockaddr_in *)&ss)->sin_port), ==, 4780);
	g_assert_cmpint(measure_resolve("::1", 0, AF_INET6, &ss, &len), ==, 0);
	g_assert_cmpint(ss.ss_family, ==, AF_INET6);
	/* the forced family is never traded for another one */
	g_assert_cmpint(measure_resolve("::1", 0, AF_INET, &ss, &len), ==, -EADDRNOTAVAIL);
	g_assert_cmpint(measure_resolve("127.0.0.1", 0, AF_INET6, &ss, &len), ==,
			-EADDRNOTAVAIL);
	g_assert_cmpint(measure_resolve("localhost", 0, AF_INET, &ss, &len), ==, 0);
	g_assert_cmpint(ss.ss_family, ==, AF_INET);
	g_assert_cmpint(measure_resolve("127.0.0.1", 0, AF_UNSPEC, &ss, &len), ==, -EAFNOSUPPORT);

	g_assert_cmpint(measure_resolve_url("http://[::1]:8080/download", AF_INET6, &ss, &len), ==,
			0);
	g_assert_cmpint(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), ==, 8080);
	g_assert_cmpint(measure_resolve_url("https://127.0.0.1/big.bin", AF_INET, &ss, &len), ==,
			0);
	g_assert_cmpint(ntohs(((struct sockaddr_in *)&ss)->sin_port), ==, 443);
	g_assert_cmpint(measure_resolve_url("http://[::1]:8080/", AF_INET, &ss, &len), ==,
			-EADDRNOTAVAIL);
	g_assert_cmpint(measure_resolve_url("ftp://127.0.0.1/", AF_INET, &ss, &len), ==, -EINVAL);
	g_assert_cmpint(measure_resolve_url("not a url", AF_INET, &ss, &len), ==, -EINVAL);

	g_assert_true(measure_far_end_gone(-ECONNREFUSED));
	g_assert_true(measure_far_end_gone(-ECONNRESET));
	g_assert_false(measure_far_end_gone(-EPROTO));
	g_assert_false(measure_far_end_gone(0));
}

static void test_udp(gconstpointer data)
{
	int family = GPOINTER_TO_INT(data);
	struct echo *e = echo_start(family, 0);
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, family, 600);
	cfg_udp(&cfg, family, e);
	res = run_ok(&cfg);
	g_test_message("%zu probes to %s, rtt[0] %.3f ms, kernel timestamps %d", res->n_samples,
		       res->probe_addr, res->n_rtt ? res->rtt_ms[0] : -1, res->kernel_timestamps);
	/* every 50 ms for 0.6 s: 12 on a fixed grid; fewer when the machine is
	 * so busy that slots are missed (they are skipped, not sent in a burst) */
	g_assert_cmpuint(res->n_samples, >=, 4);
	g_assert_cmpuint(res->n_samples, <=, 13);
	g_assert_cmpuint(res->lost, ==, 0);
	g_assert_cmpuint(res->n_rtt, ==, res->n_samples);
	g_assert_cmpuint(res->n_rtt, ==, e->seen ? e->seen : res->n_rtt);
	g_assert_true(res->kernel_timestamps);
	check_rtts(res);
	for (size_t i = 1; i < res->n_samples; i++)
		g_assert_cmpfloat(res->samples[i].t, >, res->samples[i - 1].t);
	g_assert_null(strstr(res->probe_addr, family == AF_INET6 ? "127." : "::"));
	g_assert_cmpuint(res->n_streams, ==, 0);
	measure_result_free(res);
	echo_stop(e);
}

static void test_udp_loss(void)
{
	struct echo *e = echo_start(AF_INET, 4);
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, AF_INET, 700);
	cfg_udp(&cfg, AF_INET, e);
	res = run_ok(&cfg);
	g_test_message("%zu probes, %zu lost, %u dropped by the echo", res->n_samples, res->lost,
		       e->dropped);
	g_assert_cmpuint(e->dropped, >=, 1);
	/* exactly the dropped ones: the run waited out their timeouts */
	g_assert_cmpuint(res->lost, ==, e->dropped);
	g_assert_cmpuint(res->n_rtt + res->lost, ==, res->n_samples);
	for (size_t i = 0; i < res->n_samples; i++)
		g_assert_cmpint(res->samples[i].rtt_ms < 0, ==, (i + 1) % 4 == 0);
	check_rtts(res);
	measure_result_free(res);
	echo_stop(e);
}

/* A UDP echo that sends the request back as it came is not serve: nothing counts. */
static void test_udp_verbatim(void)
{
	struct echo *e = echo_start_verbatim(AF_INET, 0, true);
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, AF_INET, 400);
	cfg_udp(&cfg, AF_INET, e);
	cfg.probe_timeout_ms = 300;
	res = run_ok(&cfg);
	g_test_message("%zu probes, %zu answered, %zu lost", res->n_samples, res->n_rtt,
		       res->lost);
	g_assert_cmpuint(res->n_samples, >=, 2);
	g_assert_cmpuint(res->n_rtt, ==, 0);
	g_assert_cmpuint(res->lost, ==, res->n_samples);
	measure_result_free(res);
	echo_stop(e);
}

static void test_udp_refused(void)
{
	struct measure_config cfg;
	double took;

	cfg_base(&cfg, AF_INET, 20000);
	cfg.probe = MEASURE_PROBE_UDP;
	cfg.probe_host = "127.0.0.1";
	cfg.probe_port = closed_port(AF_INET, SOCK_DGRAM);
	took = run_fails(&cfg, -ECONNREFUSED, "port unreachable");
	g_assert_cmpfloat(took, <, NO_HANG);
}

static void test_udp_family(void)
{
	struct echo *e = echo_start(AF_INET6, 0);
	struct measure_config cfg;

	/* a v6-only echo and IPv4 forced: no silent switch to IPv6 */
	cfg_base(&cfg, AF_INET, 500);
	cfg_udp(&cfg, AF_INET6, e);
	run_fails(&cfg, -EADDRNOTAVAIL, "no IPv4 address");
	/* a name that only has IPv4 here, with IPv6 forced */
	cfg_base(&cfg, AF_INET6, 500);
	cfg_udp(&cfg, AF_INET6, e);
	cfg.probe_host = "127.0.0.1";
	run_fails(&cfg, -EADDRNOTAVAIL, "no IPv6 address");
	echo_stop(e);
}

static void test_no_interface(void)
{
	struct echo *e = echo_start(AF_INET, 0);
	struct measure_config cfg;

	cfg_base(&cfg, AF_INET, 500);
	cfg_udp(&cfg, AF_INET, e);
	cfg.ifname = "wgshape-none0";
	run_fails(&cfg, -ENODEV, "wgshape-none0");
	echo_stop(e);
}

/* ---- ICMP -------------------------------------------------------------- */

/* 1: we got ICMP; 0: not permitted (skip message set) */
static int icmp_run(int family, enum measure_icmp how, bool *raw)
{
	struct measure_config cfg;
	struct measure_result *res = NULL;
	char msg[MEASURE_MSG_SIZE];
	int r;

	cfg_base(&cfg, family, 300);
	cfg.probe = MEASURE_PROBE_ICMP;
	cfg.probe_host = family == AF_INET6 ? "::1" : "127.0.0.1";
	cfg.probe_interval_ms = 50;
	cfg.probe_timeout_ms = 1000;
	cfg.icmp = how;
	r = measure_run(&cfg, &res, msg);
	if (r == -EPERM || r == -EACCES) {
		g_test_message("%s", msg);
		return 0;
	}
	if (r < 0)
		g_error("ICMP %s: %s", family == AF_INET6 ? "v6" : "v4", msg);
	g_test_message("ICMP%s echo via a %s socket: %zu probes, rtt[0] %.3f ms",
		       family == AF_INET6 ? "v6" : "", res->icmp_raw ? "raw" : "ping",
		       res->n_samples, res->n_rtt ? res->rtt_ms[0] : -1);
	g_assert_cmpuint(res->n_samples, >=, 2);
	/* raw sockets see our own requests on loopback: they must not count */
	g_assert_cmpuint(res->n_rtt, ==, res->n_samples);
	g_assert_cmpuint(res->lost, ==, 0);
	check_rtts(res);
	*raw = res->icmp_raw;
	measure_result_free(res);
	return 1;
}

static void test_icmp(gconstpointer data)
{
	int family = GPOINTER_TO_INT(data);
	bool raw = false;

	if (!icmp_run(family, MEASURE_ICMP_AUTO, &raw)) {
		g_test_skip("neither a ping socket (net.ipv4.ping_group_range) nor a raw socket "
			    "(CAP_NET_RAW) is permitted here");
		return;
	}
	g_test_message("auto chose the %s socket", raw ? "raw" : "ping");
}

/* Does net.ipv4.ping_group_range (of this namespace) include our group? */
static bool ping_group_allows(void)
{
	g_autofree char *text = NULL;
	unsigned long lo, hi;

	if (!g_file_get_contents("/proc/sys/net/ipv4/ping_group_range", &text, NULL, NULL) ||
	    sscanf(text, "%lu %lu", &lo, &hi) != 2)
		return false;
	return getegid() >= lo && getegid() <= hi;
}

/*
 * Both socket kinds, each forced. The ping-socket path needs a
 * ping_group_range that includes us: it is per network namespace, so a
 * private one is opened (when we may) rather than changing the host's.
 */
static void icmp_both_kinds_child(void)
{
	struct ifreq ifr = { 0 };
	bool raw;
	int fd;

	if (!ping_group_allows()) {
		g_assert_cmpint(unshare(CLONE_NEWNET), ==, 0);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		g_strlcpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name));
		g_assert_cmpint(ioctl(fd, SIOCGIFFLAGS, &ifr), ==, 0);
		ifr.ifr_flags |= IFF_UP;
		g_assert_cmpint(ioctl(fd, SIOCSIFFLAGS, &ifr), ==, 0);
		close(fd);
		/* this namespace's, not the host's */
		fd = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC);
		g_assert_cmpint(fd, >=, 0);
		g_assert_cmpint(write(fd, "0 2147483647", 12), ==, 12);
		close(fd);
		g_assert_true(ping_group_allows());
	}
	for (int family = AF_INET; family; family = family == AF_INET ? AF_INET6 : 0) {
		raw = true;
		g_assert_cmpint(icmp_run(family, MEASURE_ICMP_PING, &raw), ==, 1);
		g_assert_false(raw);
		raw = true;
		g_assert_cmpint(icmp_run(family, MEASURE_ICMP_AUTO, &raw), ==, 1);
		g_assert_false(raw); /* the ping socket first */
		raw = false;
		if (icmp_run(family, MEASURE_ICMP_RAW, &raw))
			g_assert_true(raw);
	}
}

/* Can we have a network namespace of our own? Asked in a child, which exits at once. */
static bool can_unshare_net(void)
{
	int status = 0;
	pid_t pid = fork();

	g_assert_cmpint(pid, >=, 0);
	if (pid == 0)
		_exit(unshare(CLONE_NEWNET) == 0 ? 0 : 1);
	g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_icmp_kinds(void)
{
	if (g_test_subprocess()) {
		icmp_both_kinds_child();
		return;
	}
	if (!ping_group_allows() && !can_unshare_net()) {
		g_test_skip("ping_group_range excludes us and no private network namespace "
			    "(CAP_SYS_ADMIN) to open it in: the ping-socket path is not tested");
		return;
	}
	g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
	g_test_trap_assert_passed();
}

/* ping_group_range "1 0" (the kernel default) refuses a ping socket, root included. */
static void test_icmp_ping_refused(void)
{
	struct measure_config cfg;

	if (ping_group_allows()) {
		g_test_skip("ping_group_range includes us here");
		return;
	}
	cfg_base(&cfg, AF_INET, 500);
	cfg.probe = MEASURE_PROBE_ICMP;
	cfg.probe_host = "127.0.0.1";
	cfg.icmp = MEASURE_ICMP_PING;
	run_fails(&cfg, -EACCES, "ping_group_range");
}

/* ---- load -------------------------------------------------------------- */

static void check_streams(const struct measure_result *res, unsigned int n)
{
	uint64_t bytes = 0, steady = 0;

	g_assert_cmpuint(res->n_streams, ==, n);
	for (unsigned int i = 0; i < n; i++) {
		const struct measure_stream *s = &res->streams[i];

		g_test_message("stream %u: %" G_GUINT64_FORMAT " bytes, %.1f Mbit/s, %u transfers",
			       i + 1, s->bytes, s->goodput * 8 / 1e6, s->transfers);
		g_assert_cmpuint(s->transfers, >=, 1);
		g_assert_cmpuint(s->steady_bytes, <=, s->bytes);
		g_assert_cmpfloat_with_epsilon(s->goodput, s->steady_bytes / res->steady_seconds,
					       1e-6 * s->goodput + 1e-9);
		bytes += s->bytes;
		steady += s->steady_bytes;
	}
	g_assert_cmpuint(bytes, ==, res->bytes);
	g_assert_cmpuint(steady, ==, res->steady_bytes);
	g_assert_cmpfloat_with_epsilon(res->goodput, res->steady_bytes / res->steady_seconds,
				       1e-6 * res->goodput + 1e-9);
}

static void test_download(void)
{
	struct http *h = http_start(AF_INET, 0);
	g_autofree char *url = http_url(h, AF_INET, "/zero");
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, AF_INET, 1200);
	cfg.warmup_ms = 400;
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	cfg.streams = 4;
	res = run_ok(&cfg);
	g_test_message("download, 4 streams: %.1f Mbit/s over %.2f s (of %.2f)",
		       res->goodput * 8 / 1e6, res->steady_seconds, res->seconds);
	check_streams(res, 4);
	/* the warm-up ends, and the run, at the first wake-up at or after their time */
	g_assert_cmpfloat(res->seconds, >=, 1.2);
	g_assert_cmpfloat(res->steady_seconds, >, 0);
	g_assert_cmpfloat(res->steady_seconds, <=, res->seconds - 0.4);
	for (unsigned int i = 0; i < 4; i++) {
		g_assert_cmpuint(res->streams[i].transfers, ==, 1); /* endless: never restarted */
		g_assert_cmpfloat(res->streams[i].goodput, >, 0);
	}
	g_assert_true(g_str_has_prefix(url + strlen("http://"), res->load_addr));
	g_assert_cmpint(url[strlen("http://") + strlen(res->load_addr)], ==, '/');
	http_stop(h);
	/* what reached us was sent (the rest was in flight when the run ended) */
	g_assert_cmpuint(res->bytes, <=, h->sent);
	g_assert_cmpuint(h->requests, ==, 4);
	measure_result_free(res);
	g_free(h);
}

/* Every byte the server sent is counted, no more: the server holds after N. */
static void test_download_exact(void)
{
	struct http *h = http_start(AF_INET, 0);
	g_autofree char *url = http_url(h, AF_INET, "/zero?hold=3000000");
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, AF_INET, 600);
	cfg.warmup_ms = 200;
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	cfg.streams = 4;
	res = run_ok(&cfg);
	check_streams(res, 4);
	for (unsigned int i = 0; i < 4; i++)
		g_assert_cmpuint(res->streams[i].bytes, ==, 3000000);
	http_stop(h);
	g_assert_cmpuint(res->bytes, ==, h->sent);
	measure_result_free(res);
	g_free(h);
}

/* A file shorter than the run: fetched again, on a fresh connection each time. */
static void test_download_restart(void)
{
	struct http *h = http_start(AF_INET, 0);
	g_autofree char *url = http_url(h, AF_INET, "/file?len=1000000");
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, AF_INET, 500);
	cfg.warmup_ms = 200;
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	res = run_ok(&cfg);
	check_streams(res, 1);
	g_test_message("%u transfers, %u requests", res->streams[0].transfers, h->requests);
	g_assert_cmpuint(res->streams[0].transfers, >, 1);
	g_assert_cmpuint(res->bytes, >=, (uint64_t)(res->streams[0].transfers - 1) * 1000000);
	http_stop(h);
	/* the last one may not have reached the server when the run ended */
	g_assert_cmpuint(h->requests, <=, res->streams[0].transfers);
	g_assert_cmpuint(h->requests + 1, >=, res->streams[0].transfers);
	g_assert_cmpuint(res->bytes, <=, h->sent);
	measure_result_free(res);
	g_free(h);
}

/* The most a TCP socket's send buffer grows to (tcp_wmem's third field). */
static uint64_t sndbuf_max(void)
{
	g_autofree char *s = NULL;
	uint64_t lo = 0, def = 0, max = 0;

	if (g_file_get_contents("/proc/sys/net/ipv4/tcp_wmem", &s, NULL, NULL) &&
	    sscanf(s, "%" SCNu64 " %" SCNu64 " %" SCNu64, &lo, &def, &max) == 3)
		return max;
	return 4u << 20; /* the kernel's default */
}

static void test_upload(gconstpointer data)
{
	uint64_t size = GPOINTER_TO_UINT(data);
	struct http *h = http_start(AF_INET6, 0);
	g_autofree char *url = http_url(h, AF_INET6, "/upload");
	struct measure_config cfg;
	struct measure_result *res;

	cfg_base(&cfg, AF_INET6, 600);
	cfg.warmup_ms = 200;
	cfg.load = MEASURE_LOAD_UPLOAD;
	cfg.url = url;
	cfg.streams = 2;
	cfg.upload_size = size;
	res = run_ok(&cfg);
	g_test_message("upload (%s), 2 streams: %.1f Mbit/s", size ? "Content-Length" : "chunked",
		       res->goodput * 8 / 1e6);
	check_streams(res, 2);
	for (unsigned int i = 0; i < 2; i++)
		g_assert_cmpfloat(res->streams[i].goodput, >, 0);
	if (size) {
		g_assert_cmpuint(res->streams[0].transfers + res->streams[1].transfers, >, 2);
	} else {
		g_assert_cmpuint(res->streams[0].transfers, ==, 1);
		g_assert_cmpuint(res->streams[1].transfers, ==, 1);
	}
	http_stop(h);
	/*
	 * The count is what the far end's kernel had acknowledged when the run
	 * cut the streams at its deadline: the sink has read it, but for what
	 * it had not read yet (2 MiB at most, seen as 512 KiB on a loaded
	 * machine). The sink also gets what was still in the send buffers when
	 * the streams closed, which the count leaves out: at most their size.
	 */
	g_assert_cmpuint(res->bytes, <=, h->received + (2u << 20));
	g_assert_cmpuint(h->received, <=, res->bytes + 2 * sndbuf_max());
	measure_result_free(res);
	g_free(h);
}

static void test_load_and_probes(void)
{
	struct http *h = http_start(AF_INET, 0);
	struct echo *e = echo_start(AF_INET, 0);
	g_autofree char *url = http_url(h, AF_INET, "/zero");
	struct measure_config cfg;
	struct measure_result *res;
	size_t in_warmup = 0;

	cfg_base(&cfg, AF_INET, 1000);
	cfg.warmup_ms = 300;
	cfg_udp(&cfg, AF_INET, e);
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	cfg.streams = 2;
	res = run_ok(&cfg);
	check_streams(res, 2);
	g_assert_cmpfloat(res->goodput, >, 0);
	for (size_t i = 0; i < res->n_samples; i++)
		in_warmup += res->samples[i].t < 0.3;
	g_test_message("loaded: %.1f Mbit/s, %zu RTTs (%zu in the warm-up left out), first %.3f ms",
		       res->goodput * 8 / 1e6, res->n_rtt, in_warmup,
		       res->n_rtt ? res->rtt_ms[0] : -1);
	g_assert_cmpuint(in_warmup, >=, 1);
	g_assert_cmpuint(res->n_rtt + res->lost, ==, res->n_samples - in_warmup);
	/* at least one each side of the warm-up's end (a machine so slow that
	 * load starves the loop, as under valgrind, sends fewer: slots are skipped) */
	g_assert_cmpuint(res->n_rtt, >=, 1);
	check_rtts(res);
	measure_result_free(res);
	echo_stop(e);
	http_stop(h);
	g_free(h);
}

/* The far end goes away mid-run: reported at once, not at the end of the run. */
static void test_server_gone(void)
{
	struct http *h = http_start(AF_INET, 8 * 1024 * 1024);
	g_autofree char *url = http_url(h, AF_INET, "/zero");
	struct measure_config cfg;
	struct measure_result *res = NULL;
	char msg[MEASURE_MSG_SIZE];
	gint64 t0;
	int r;

	cfg_base(&cfg, AF_INET, 20000);
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	cfg.streams = 4;
	t0 = g_get_monotonic_time();
	r = measure_run(&cfg, &res, msg);
	g_test_message("after %.2f s: %d %s", (g_get_monotonic_time() - t0) / 1e6, r, msg);
	g_assert_cmpint(r, <, 0);
	g_assert_true(measure_far_end_gone(r));
	g_assert_null(res);
	g_assert_nonnull(strstr(msg, "stream"));
	g_assert_cmpint(g_get_monotonic_time() - t0, <, NO_HANG * G_USEC_PER_SEC);
	http_stop(h);
	g_free(h);
}

static void test_load_errors(void)
{
	struct http *h = http_start(AF_INET, 0);
	static const struct {
		const char *path;
		int err;
		const char *msg_has;
	} t[] = {
		{ "/status/503", -EPROTO, "503" },
		{ "/status/404", -EPROTO, "404" },
		{ "/status/204", -EPROTO, "204" },
		{ "/redirect", -EPROTO, "redirect" },
		{ "/empty", -ENODATA, "empty" },
	};
	struct measure_config cfg;

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *url = http_url(h, AF_INET, t[i].path);
		double took;

		g_test_message("case %s", t[i].path);
		cfg_base(&cfg, AF_INET, 20000);
		cfg.load = MEASURE_LOAD_DOWNLOAD;
		cfg.url = url;
		took = run_fails(&cfg, t[i].err, t[i].msg_has);
		g_assert_cmpfloat(took, <, NO_HANG);
	}
	http_stop(h);
	g_free(h);
}

static void test_load_no_interface(void)
{
	struct http *h = http_start(AF_INET, 0);
	g_autofree char *url = http_url(h, AF_INET, "/zero");
	struct measure_config cfg;

	cfg_base(&cfg, AF_INET, 20000);
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	cfg.ifname = "wgshape-none0";
	g_assert_cmpfloat(run_fails(&cfg, -ENODEV, "wgshape-none0"), <, NO_HANG);
	http_stop(h);
	g_free(h);
}

static void test_refused(void)
{
	g_autofree char *url =
		g_strdup_printf("http://127.0.0.1:%u/zero", closed_port(AF_INET, SOCK_STREAM));
	struct measure_config cfg;
	double took;

	cfg_base(&cfg, AF_INET, 20000);
	cfg.load = MEASURE_LOAD_UPLOAD;
	cfg.url = url;
	cfg.streams = 4;
	took = run_fails(&cfg, -ECONNREFUSED, "127.0.0.1");
	g_assert_cmpfloat(took, <, NO_HANG);
}

/* A v6-only server: IPv4 forced fails cleanly, IPv6 forced works. */
static void test_load_family(void)
{
	struct http *h = http_start(AF_INET6, 0);
	g_autofree char *url6 = http_url(h, AF_INET6, "/zero");
	g_autofree char *url_name = g_strdup_printf("http://localhost:%u/zero", h->port);
	struct measure_config cfg;
	struct measure_result *res;
	struct sockaddr_storage ss;
	socklen_t len;

	cfg_base(&cfg, AF_INET, 400);
	cfg.warmup_ms = 100;
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url6;
	run_fails(&cfg, -EADDRNOTAVAIL, "no IPv4 address");

	/* a name: resolved for IPv4 only (127.0.0.1), where nothing listens */
	cfg.url = url_name;
	run_fails(&cfg, -ECONNREFUSED, "127.0.0.1");
	if (measure_resolve("localhost", 0, AF_INET6, &ss, &len) == 0) {
		cfg.family = AF_INET6;
		res = run_ok(&cfg);
		g_assert_cmpfloat(res->goodput, >, 0);
		measure_result_free(res);
	} else {
		g_test_message("localhost has no IPv6 address here: the name is not tried on IPv6");
		cfg.family = AF_INET6;
		run_fails(&cfg, -EADDRNOTAVAIL, "no IPv6 address");
	}

	cfg.family = AF_INET6;
	cfg.url = url6;
	res = run_ok(&cfg);
	g_assert_cmpfloat(res->goodput, >, 0);
	g_assert_nonnull(strstr(res->load_addr, "[::1]:"));
	measure_result_free(res);
	http_stop(h);
	g_free(h);
}

struct progress_seen {
	unsigned int calls;
	unsigned int stop_after;
	double last_elapsed;
	uint64_t last_bytes;
};

static int on_progress(const struct measure_progress *p, void *arg)
{
	struct progress_seen *s = arg;

	g_assert_cmpfloat(p->elapsed, >=, s->last_elapsed);
	g_assert_cmpuint(p->bytes, >=, s->last_bytes);
	g_assert_cmpfloat(p->goodput, >=, 0);
	s->last_elapsed = p->elapsed;
	s->last_bytes = p->bytes;
	s->calls++;
	return s->stop_after && s->calls >= s->stop_after;
}

static void test_progress(void)
{
	struct http *h = http_start(AF_INET, 0);
	struct echo *e = echo_start(AF_INET, 0);
	g_autofree char *url = http_url(h, AF_INET, "/zero");
	struct progress_seen seen = { 0 };
	volatile sig_atomic_t cancel = 0;
	struct measure_config cfg;
	struct measure_result *res;
	double took;

	cfg_base(&cfg, AF_INET, 600);
	cfg.warmup_ms = 200;
	cfg_udp(&cfg, AF_INET, e);
	cfg.load = MEASURE_LOAD_DOWNLOAD;
	cfg.url = url;
	cfg.progress_ms = 100;
	cfg.progress = on_progress;
	cfg.progress_arg = &seen;
	res = run_ok(&cfg);
	g_test_message("%u progress calls", seen.calls);
	/* called, not flooded (a slow machine or valgrind may manage only one) */
	g_assert_cmpuint(seen.calls, >=, 1);
	g_assert_cmpuint(seen.calls, <=, 6);
	measure_result_free(res);

	/* the callback stops it */
	seen = (struct progress_seen){ .stop_after = 3 };
	cfg.duration_ms = 20000;
	took = run_fails(&cfg, -ECANCELED, NULL);
	g_assert_cmpfloat(took, <, NO_HANG);

	/* so does the flag a signal handler sets */
	cancel = 1;
	cfg.progress = NULL;
	cfg.cancel = &cancel;
	took = run_fails(&cfg, -ECANCELED, NULL);
	g_assert_cmpfloat(took, <, NO_HANG);

	echo_stop(e);
	http_stop(h);
	g_free(h);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/measure/cpu/parse", test_cpu_parse);
	g_test_add_func("/measure/cpu/edges", test_cpu_edges);
	g_test_add_func("/measure/cpu/read", test_cpu_read);
	g_test_add_func("/measure/config", test_config);
	g_test_add_func("/measure/resolve", test_resolve);
	g_test_add_data_func("/measure/udp/ipv4", GINT_TO_POINTER(AF_INET), test_udp);
	g_test_add_data_func("/measure/udp/ipv6", GINT_TO_POINTER(AF_INET6), test_udp);
	g_test_add_func("/measure/udp/loss", test_udp_loss);
	g_test_add_func("/measure/udp/verbatim", test_udp_verbatim);
	g_test_add_func("/measure/udp/refused", test_udp_refused);
	g_test_add_func("/measure/udp/family", test_udp_family);
	g_test_add_func("/measure/udp/no-interface", test_no_interface);
	g_test_add_data_func("/measure/icmp/ipv4", GINT_TO_POINTER(AF_INET), test_icmp);
	g_test_add_data_func("/measure/icmp/ipv6", GINT_TO_POINTER(AF_INET6), test_icmp);
	g_test_add_func("/measure/icmp/socket-kinds", test_icmp_kinds);
	g_test_add_func("/measure/icmp/ping-refused", test_icmp_ping_refused);
	g_test_add_func("/measure/load/download", test_download);
	g_test_add_func("/measure/load/download-exact", test_download_exact);
	g_test_add_func("/measure/load/download-restart", test_download_restart);
	g_test_add_data_func("/measure/load/upload-sized", GUINT_TO_POINTER(4 * 1024 * 1024),
			     test_upload);
	g_test_add_data_func("/measure/load/upload-chunked", GUINT_TO_POINTER(0), test_upload);
	g_test_add_func("/measure/load/with-probes", test_load_and_probes);
	g_test_add_func("/measure/load/server-gone", test_server_gone);
	g_test_add_func("/measure/load/http-errors", test_load_errors);
	g_test_add_func("/measure/load/refused", test_refused);
	g_test_add_func("/measure/load/no-interface", test_load_no_interface);
	g_test_add_func("/measure/load/family", test_load_family);
	g_test_add_func("/measure/progress", test_progress);
	return g_test_run();
}
