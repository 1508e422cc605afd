// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * HTTP load: cfg->streams parallel HTTP/1.1 transfers on one libcurl multi
 * handle, each on a fresh connection, pinned to the address resolved in the
 * forced family and bound to the interface. A transfer that ends before the
 * run is made again. Downloads count body bytes received; uploads count what
 * the far end acknowledged (TCP_INFO), not what curl wrote.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <linux/tcp.h>
#include <curl/curl.h>
#include <glib.h>

#include "measure/internal.h"
#include "util/addr.h"

#define CONNECT_TIMEOUT_MS 5000
#define STALL_SECONDS 5 /* a stream that moves no byte for this long has failed */
/* Bigger: fewer system calls, but longer turns away from the probes. */
#define CURL_BUF (128 * 1024)

struct stream {
	struct run *run;
	unsigned int index;
	CURL *easy;
	uint64_t done_bytes; /* transfers that finished */
	uint64_t cur_bytes; /* download: the transfer under way */
	uint64_t warm_bytes, end_bytes;
	uint64_t upload_left; /* Content-Length mode */
	int fd; /* the transfer's TCP socket, -1 when it has none */
	unsigned int transfers;
	bool status_ok;
	int fail_err; /* set by a callback that stopped the transfer */
	char errbuf[CURL_ERROR_SIZE];
};

struct load {
	bool curl_up; /* curl_global_init() done */
	CURLM *multi;
	struct stream *streams; /* n of them */
	unsigned int n;
	struct curl_slist *headers, *resolve;
	char host[256];
	char addr[ADDR_STR_SIZE];
	GArray *self_rtt; /* double ms: the streams' own RTTs, sampled after the warm-up */
};

static int curl_to_errno(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EADDRNOTAVAIL;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
		return -ECONNRESET;
	case CURLE_INTERFACE_FAILED:
		return -ENODEV;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	case CURLE_HTTP_RETURNED_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_TOO_MANY_REDIRECTS:
		return -EPROTO;
	default:
		return -EIO;
	}
}

static const char *load_name(const struct run *r)
{
	return r->cfg->load == MEASURE_LOAD_UPLOAD ? "upload" : "download";
}

/* ---- one stream -------------------------------------------------------- */

/*
 * An upload under way counts what the far end has acknowledged, not what
 * curl has handed to the socket: the socket's send buffer and a bloated
 * line's queue hold seconds of the latter, and while they fill, a count at
 * the sender runs ahead of the line. Capped by the body sent (the count
 * acknowledged includes the request's header).
 */
static uint64_t upload_acked(const struct stream *s)
{
	curl_off_t up = 0;
	struct tcp_info ti = { 0 };
	socklen_t len = sizeof(ti);

	curl_easy_getinfo(s->easy, CURLINFO_SIZE_UPLOAD_T, &up);
	if (up <= 0 || s->fd < 0 || getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
		return 0;
	return ti.tcpi_bytes_acked < (uint64_t)up ? ti.tcpi_bytes_acked : (uint64_t)up;
}

static uint64_t stream_bytes(const struct stream *s)
{
	if (s->run->cfg->load == MEASURE_LOAD_DOWNLOAD)
		return s->done_bytes + s->cur_bytes;
	return s->done_bytes + upload_acked(s);
}

static bool status_acceptable(const struct run *r, long code)
{
	if (r->cfg->load == MEASURE_LOAD_DOWNLOAD)
		return code == 200;
	return code >= 200 && code < 300;
}

static void status_fail(struct stream *s, long code)
{
	struct run *r = s->run;

	measure_fail(r, -EPROTO, "%s stream %u of %u: %s answered HTTP %ld%s", load_name(r),
		     s->index + 1, r->cfg->streams, r->cfg->url, code,
		     code >= 300 && code < 400 ? " (a redirect; give the final URL)" : "");
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct stream *s = arg;
	size_t n = size * nmemb;

	if (!s->status_ok) {
		long code = 0;

		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
		if (!status_acceptable(s->run, code)) {
			s->fail_err = -EPROTO;
			status_fail(s, code);
			return 0; /* stops the transfer */
		}
		s->status_ok = true;
	}
	if (s->run->cfg->load == MEASURE_LOAD_DOWNLOAD)
		s->cur_bytes += n;
	return n;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct stream *s = arg;
	size_t n = size * nitems;

	if (s->run->cfg->upload_size) {
		if (n > s->upload_left)
			n = (size_t)s->upload_left;
		s->upload_left -= n;
	}
	memset(buf, 0, n);
	return n;
}

/* The transfer's socket, for upload_acked (libcurl names it only afterwards). */
static int on_sockopt(void *p, curl_socket_t fd, curlsocktype purpose)
{
	struct stream *s = p;

	if (purpose == CURLSOCKTYPE_IPCXN)
		s->fd = fd;
	return CURL_SOCKOPT_OK;
}

static int on_closesocket(void *p, curl_socket_t fd)
{
	struct stream *s = p;

	if (s->fd == fd)
		s->fd = -1;
	return close(fd);
}

static int stream_setup(struct run *r, struct stream *s)
{
	const struct measure_config *cfg = r->cfg;
	CURL *e = curl_easy_init();
	char iface[IF_NAMESIZE + 8];
	CURLcode c = CURLE_OK;

	if (!e)
		return -ENOMEM;
	s->easy = e;
#define SET(opt, val)                                      \
	do {                                               \
		if (c == CURLE_OK)                         \
			c = curl_easy_setopt(e, opt, val); \
	} while (0)
	SET(CURLOPT_URL, cfg->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_FRESH_CONNECT, 1L);
	SET(CURLOPT_FORBID_REUSE, 1L);
	SET(CURLOPT_IPRESOLVE,
	    cfg->family == AF_INET6 ? (long)CURL_IPRESOLVE_V6 : (long)CURL_IPRESOLVE_V4);
	if (r->load->resolve)
		SET(CURLOPT_RESOLVE, r->load->resolve);
	if (cfg->ifname) {
		snprintf(iface, sizeof(iface), "if!%s", cfg->ifname);
		SET(CURLOPT_INTERFACE, iface);
	}
	/* An http_proxy in the environment would measure the proxy, not the path. */
	SET(CURLOPT_PROXY, "");
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_FAILONERROR, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
	SET(CURLOPT_LOW_SPEED_TIME, (long)STALL_SECONDS);
	SET(CURLOPT_USERAGENT, "wgshape-tune");
	SET(CURLOPT_BUFFERSIZE, (long)CURL_BUF);
	SET(CURLOPT_ERRORBUFFER, s->errbuf);
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, s);
	SET(CURLOPT_PRIVATE, s);
	if (cfg->load == MEASURE_LOAD_UPLOAD) {
		SET(CURLOPT_POST, 1L);
		SET(CURLOPT_READFUNCTION, on_read);
		SET(CURLOPT_READDATA, s);
		SET(CURLOPT_UPLOAD_BUFFERSIZE, (long)CURL_BUF);
		SET(CURLOPT_SOCKOPTFUNCTION, on_sockopt);
		SET(CURLOPT_SOCKOPTDATA, s);
		SET(CURLOPT_CLOSESOCKETFUNCTION, on_closesocket);
		SET(CURLOPT_CLOSESOCKETDATA, s);
		/* -1: no Content-Length, chunked */
		SET(CURLOPT_POSTFIELDSIZE_LARGE,
		    cfg->upload_size ? (curl_off_t)cfg->upload_size : (curl_off_t)-1);
		SET(CURLOPT_HTTPHEADER, r->load->headers);
	}
#undef SET
	if (c != CURLE_OK)
		return c == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
	return 0;
}

static void stream_start(struct run *r, struct stream *s)
{
	s->cur_bytes = 0;
	s->upload_left = r->cfg->upload_size;
	s->status_ok = false;
	s->fail_err = 0;
	s->errbuf[0] = '\0';
	s->transfers++;
	if (curl_multi_add_handle(r->load->multi, s->easy) != CURLM_OK)
		measure_fail(r, -ENOMEM, "%s stream %u: cannot start a transfer", load_name(r),
			     s->index + 1);
}

static void stream_failed(struct run *r, struct stream *s, CURLcode c)
{
	long os_errno = 0;
	const char *why;
	bool add;
	int e;

	if (s->fail_err)
		return; /* the callback said why */
	e = curl_to_errno(c);
	curl_easy_getinfo(s->easy, CURLINFO_OS_ERRNO, &os_errno);
	if (os_errno > 0 && (c == CURLE_COULDNT_CONNECT || c == CURLE_RECV_ERROR ||
			     c == CURLE_SEND_ERROR || c == CURLE_INTERFACE_FAILED))
		e = -(int)os_errno;
	if (c == CURLE_HTTP_RETURNED_ERROR) {
		long code = 0;

		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
		status_fail(s, code);
		return;
	}
	why = s->errbuf[0] ? s->errbuf : curl_easy_strerror(c);
	/* curl says "Couldn't connect to server"; the errno says why */
	add = os_errno > 0 && -e == os_errno && !strstr(why, g_strerror(-e));
	measure_fail(r, e, "%s stream %u of %u: %s (%s): %s%s%s%s", load_name(r), s->index + 1,
		     r->cfg->streams, r->cfg->url, r->load->addr, why, add ? " (" : "",
		     add ? g_strerror(-e) : "", add ? ")" : "");
}

/* A transfer ended before the run did: check it and start it again. */
static void stream_done(struct run *r, struct stream *s, CURLcode c)
{
	long code = 0;
	curl_off_t up = 0;
	CURL *fresh;

	curl_multi_remove_handle(r->load->multi, s->easy);
	if (c != CURLE_OK) {
		stream_failed(r, s, c);
		return;
	}
	curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
	if (!status_acceptable(r, code)) {
		status_fail(s, code);
		return;
	}
	if (r->cfg->load == MEASURE_LOAD_DOWNLOAD && s->cur_bytes == 0) {
		/* Starting it again would spin on connections that carry nothing. */
		measure_fail(r, -ENODATA,
			     "download stream %u of %u: %s answered with an empty body",
			     s->index + 1, r->cfg->streams, r->cfg->url);
		return;
	}
	/* Answered: the far end has it all (its socket is gone by now). */
	if (r->cfg->load == MEASURE_LOAD_DOWNLOAD) {
		s->done_bytes += s->cur_bytes;
	} else {
		curl_easy_getinfo(s->easy, CURLINFO_SIZE_UPLOAD_T, &up);
		s->done_bytes += (uint64_t)up;
	}
	/* A copy starts with fresh counters (a re-added handle keeps the old
	 * upload count until its transfer really begins). */
	fresh = curl_easy_duphandle(s->easy);
	if (!fresh) {
		measure_fail(r, -ENOMEM, "%s stream %u: cannot start a transfer", load_name(r),
			     s->index + 1);
		return;
	}
	curl_easy_cleanup(s->easy);
	s->easy = fresh;
	stream_start(r, s);
}

/* ---- the load ---------------------------------------------------------- */

static int load_nomem(struct run *r)
{
	measure_fail(r, -ENOMEM, "%s: out of memory", load_name(r));
	return -ENOMEM;
}

/* Resolve the URL's host as the probes do, and pin curl to that address. */
static int load_resolve(struct run *r, struct load *l)
{
	const struct measure_config *cfg = r->cfg;
	struct sockaddr_storage ss;
	struct in_addr a4;
	socklen_t len;
	uint16_t port;
	int e;

	e = measure_url_host_port(cfg->url, l->host, sizeof(l->host), &port);
	if (e < 0) {
		measure_fail(r, e, "%s URL %s: not an http or https URL", load_name(r), cfg->url);
		return e;
	}
	e = measure_resolve(l->host, port, cfg->family, &ss, &len);
	if (e < 0) {
		if (e == -EADDRNOTAVAIL)
			measure_fail(r, e, "%s URL %s: %s has no %s address", load_name(r),
				     cfg->url, l->host, measure_family_name(cfg->family));
		else
			measure_fail(r, e, "%s URL %s: %s", load_name(r), cfg->url, g_strerror(-e));
		return e;
	}
	addr_str((struct sockaddr *)&ss, true, l->addr, sizeof(l->addr));
	/* Pin what we resolved (and what tune proved the route for); an address
	 * in the URL is used as it is. */
	if (!strchr(l->host, ':') && inet_pton(AF_INET, l->host, &a4) != 1) {
		char pin[512], ip[ADDR_STR_SIZE];

		addr_str((struct sockaddr *)&ss, false, ip, sizeof(ip));
		snprintf(pin, sizeof(pin), cfg->family == AF_INET6 ? "%s:%u:[%s]" : "%s:%u:%s",
			 l->host, port, ip);
		l->resolve = curl_slist_append(NULL, pin);
		if (!l->resolve)
			return load_nomem(r);
	}
	return 0;
}

int measure_load_open(struct run *r)
{
	const struct measure_config *cfg = r->cfg;
	struct load *l = g_new0(struct load, 1);
	int e;

	r->load = l;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		measure_fail(r, -ENOMEM, "libcurl failed to initialise");
		return -ENOMEM;
	}
	l->curl_up = true;
	e = load_resolve(r, l);
	if (e < 0)
		return e;
	if (cfg->load == MEASURE_LOAD_UPLOAD) {
		/* No "Expect: 100-continue": the body goes out at once. */
		l->headers = curl_slist_append(NULL, "Expect:");
		if (!l->headers)
			return load_nomem(r);
	}
	l->multi = curl_multi_init();
	if (!l->multi)
		return load_nomem(r);
	l->n = cfg->streams;
	l->streams = g_new0(struct stream, l->n);
	for (unsigned int i = 0; i < l->n; i++) {
		struct stream *s = &l->streams[i];

		s->run = r;
		s->index = i;
		s->fd = -1;
		e = stream_setup(r, s);
		if (e < 0) {
			measure_fail(r, e, "%s stream %u: setting up libcurl: %s", load_name(r),
				     i + 1, g_strerror(-e));
			return e;
		}
	}
	return 0;
}

/* Abort every transfer and close its connection; the counters stay. */
static void load_stop(struct load *l)
{
	for (unsigned int i = 0; i < l->n; i++) {
		if (!l->streams[i].easy)
			continue;
		if (l->multi)
			curl_multi_remove_handle(l->multi, l->streams[i].easy);
		curl_easy_cleanup(l->streams[i].easy);
		l->streams[i].easy = NULL;
	}
}

void measure_load_free(struct load *l)
{
	if (!l)
		return;
	load_stop(l);
	g_free(l->streams);
	if (l->self_rtt)
		g_array_free(l->self_rtt, TRUE);
	if (l->multi)
		curl_multi_cleanup(l->multi);
	curl_slist_free_all(l->headers);
	curl_slist_free_all(l->resolve);
	if (l->curl_up)
		curl_global_cleanup();
	g_free(l);
}

void measure_load_start(struct run *r)
{
	for (unsigned int i = 0; i < r->load->n && !r->err; i++)
		stream_start(r, &r->load->streams[i]);
}

short measure_load_poll(struct run *r, int fd, int ms)
{
	struct curl_waitfd wfd = { .fd = fd, .events = CURL_WAIT_POLLIN };

	/* EINTR (a signal) returns early, so *cancel is seen at once. */
	if (curl_multi_poll(r->load->multi, &wfd, fd >= 0 ? 1 : 0, ms, NULL) != CURLM_OK)
		measure_fail(r, -EIO, "%s: libcurl poll failed", load_name(r));
	return wfd.revents;
}

void measure_load_perform(struct run *r)
{
	CURLMsg *m;
	int running, left;

	if (curl_multi_perform(r->load->multi, &running) != CURLM_OK) {
		measure_fail(r, -EIO, "%s: libcurl multi failed", load_name(r));
		return;
	}
	while ((m = curl_multi_info_read(r->load->multi, &left))) {
		struct stream *s = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
		stream_done(r, s, m->data.result);
	}
}

uint64_t measure_load_bytes(const struct load *l)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < l->n; i++)
		sum += stream_bytes(&l->streams[i]);
	return sum;
}

void measure_load_mark_warm(struct load *l)
{
	for (unsigned int i = 0; i < l->n; i++)
		l->streams[i].warm_bytes = stream_bytes(&l->streams[i]);
}

void measure_load_sample_rtt(struct run *r)
{
	struct load *l = r->load;
	bool upload = r->cfg->load == MEASURE_LOAD_UPLOAD;

	if (!l->self_rtt)
		l->self_rtt = g_array_new(FALSE, FALSE, sizeof(double));
	for (unsigned int i = 0; i < l->n; i++) {
		const struct stream *s = &l->streams[i];
		struct tcp_info ti = { 0 };
		socklen_t len = sizeof(ti);
		uint32_t us;
		double ms;

		if (s->fd < 0 || getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
		    len < offsetof(struct tcp_info, tcpi_rcv_rtt) + sizeof(ti.tcpi_rcv_rtt))
			continue;
		/* the sender smooths its RTT from ACKs; a receiver estimates one */
		us = upload ? ti.tcpi_rtt : ti.tcpi_rcv_rtt;
		if (!us)
			continue; /* no estimate yet */
		ms = us / 1000.0;
		g_array_append_val(l->self_rtt, ms);
	}
}

void measure_load_end(struct load *l)
{
	for (unsigned int i = 0; i < l->n; i++)
		l->streams[i].end_bytes = stream_bytes(&l->streams[i]);
	load_stop(l);
}

void measure_load_collect(const struct load *l, struct measure_result *res)
{
	res->n_streams = l->n;
	res->streams = g_new0(struct measure_stream, l->n);
	for (unsigned int i = 0; i < l->n; i++) {
		const struct stream *s = &l->streams[i];
		struct measure_stream *ms = &res->streams[i];

		ms->bytes = s->end_bytes;
		ms->steady_bytes = s->end_bytes - s->warm_bytes;
		ms->transfers = s->transfers;
		if (res->steady_seconds > 0)
			ms->goodput = ms->steady_bytes / res->steady_seconds;
		res->bytes += ms->bytes;
		res->steady_bytes += ms->steady_bytes;
	}
	if (res->steady_seconds > 0)
		res->goodput = res->steady_bytes / res->steady_seconds;
	if (l->self_rtt && l->self_rtt->len) {
		res->n_self_rtt = l->self_rtt->len;
		res->self_rtt_ms = g_memdup2(l->self_rtt->data, l->self_rtt->len * sizeof(double));
	}
	g_strlcpy(res->load_addr, l->addr, sizeof(res->load_addr));
}
