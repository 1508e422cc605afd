// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * serve's HTTP side (the paths are proto/tune.h's): libmicrohttpd, one daemon
 * per address and a thread per connection, so a stream stalled on a slow
 * client blocks nobody else; the caps are counted here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <glib.h>
#include <microhttpd.h>

#include "build-config.h"
#include "serve/internal.h"
#include "util/addr.h"
#include "util/log.h"

/* Connections per address: room for the 503s past the stream cap, and a bound on threads. */
#define CONN_LIMIT(max_streams) ((max_streams) * 2 + 16)
#define DOWNLOAD_BLOCK (64 * 1024)
#define CONN_MEMORY (256 * 1024)

/* Requests are logged from MHD's threads: keep each line whole. */
#define log_locked(...)                    \
	do {                               \
		flockfile(stderr);         \
		log_msg(__VA_ARGS__);      \
		funlockfile(stderr);       \
	} while (0)

enum req_kind { REQ_OTHER, REQ_ROOT, REQ_DOWNLOAD, REQ_UPLOAD };

struct request {
	struct listener *l;
	enum req_kind kind;
	bool stream; /* holds one of the load stream slots */
	bool answered;
	bool cut; /* an upload closed at the cap */
	unsigned int status;
	int64_t start_us, deadline_us;
	uint64_t bytes;
	char method[8];
	char peer[ADDR_STR_SIZE];
};

/* What is served, and what the log shows; a path we do not serve is not
 * repeated (it is the client's text). */
static const struct {
	const char *method, *path;
} routes[] = {
	[REQ_OTHER] = { "", "(other)" },
	[REQ_ROOT] = { MHD_HTTP_METHOD_GET, TUNE_PATH_ROOT },
	[REQ_DOWNLOAD] = { MHD_HTTP_METHOD_GET, TUNE_PATH_DOWNLOAD },
	[REQ_UPLOAD] = { MHD_HTTP_METHOD_POST, TUNE_PATH_UPLOAD },
};

static bool stream_take(struct server *srv)
{
	if (g_atomic_int_add(&srv->streams, 1) < (gint)srv->opts.max_streams)
		return true;
	g_atomic_int_add(&srv->streams, -1);
	return false;
}

static enum MHD_Result queue(struct MHD_Connection *conn, struct request *rq, unsigned int status,
			     struct MHD_Response *resp, const char *type)
{
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES) {
		rq->answered = true;
		rq->status = status;
	}
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, struct request *rq,
				  unsigned int status, const char *text)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);

	return queue(conn, rq, status, resp, "text/plain; charset=utf-8");
}

static ssize_t read_zeros(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct request *rq = cls;

	if (g_get_monotonic_time() >= rq->deadline_us)
		return MHD_CONTENT_READER_END_OF_STREAM;
	memset(buf, 0, max);
	rq->bytes += max;
	return (ssize_t)max;
}

static enum MHD_Result reply_download(struct MHD_Connection *conn, struct request *rq)
{
	/* Size unknown: chunked, and a clean end when the time is up. */
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, DOWNLOAD_BLOCK, read_zeros, rq, NULL);

	return queue(conn, rq, MHD_HTTP_OK, resp, "application/octet-stream");
}

static enum MHD_Result reply_upload(struct MHD_Connection *conn, struct request *rq, int64_t now)
{
	char secs[G_ASCII_DTOSTR_BUF_SIZE], body[96];

	g_ascii_formatd(secs, sizeof(secs), "%.3f", (double)(now - rq->start_us) / 1e6);
	snprintf(body, sizeof(body), "{\"bytes\":%" G_GUINT64_FORMAT ",\"seconds\":%s}", rq->bytes,
		 secs);
	return queue(conn, rq, MHD_HTTP_OK,
		     MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY),
		     "application/json");
}

/* ?seconds=S: a positive number; more than the cap is the cap. */
static bool parse_seconds(struct MHD_Connection *conn, double cap, double *out)
{
	const char *s = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, TUNE_ARG_SECONDS);
	char *end;
	double v;

	if (!s) {
		*out = cap;
		return true;
	}
	v = g_ascii_strtod(s, &end);
	if (end == s || *end || !(v > 0))
		return false;
	*out = v < cap ? v : cap;
	return true;
}

static enum req_kind classify(const char *method, const char *url)
{
	for (size_t k = REQ_OTHER + 1; k < G_N_ELEMENTS(routes); k++)
		if (!strcmp(method, routes[k].method) && !strcmp(url, routes[k].path))
			return (enum req_kind)k;
	return REQ_OTHER;
}

static enum MHD_Result first_call(struct listener *l, struct MHD_Connection *conn,
				  struct request *rq)
{
	struct server *srv = l->srv;
	double seconds;

	switch (rq->kind) {
	case REQ_ROOT:
		return reply_text(conn, rq, MHD_HTTP_OK, "wgshape serve " WGSHAPE_VERSION "\n");
	case REQ_OTHER:
		return reply_text(conn, rq, MHD_HTTP_NOT_FOUND, "not found\n");
	case REQ_DOWNLOAD:
	case REQ_UPLOAD:
		break;
	}
	if (!parse_seconds(conn, srv->opts.max_seconds, &seconds))
		return reply_text(conn, rq, MHD_HTTP_BAD_REQUEST,
				  "seconds: a positive number, please\n");
	if (!stream_take(srv))
		return reply_text(conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "busy: too many load streams running\n");
	rq->stream = true;
	rq->deadline_us = rq->start_us + (int64_t)(seconds * 1e6);
	if (rq->kind == REQ_DOWNLOAD)
		return reply_download(conn, rq);
	return MHD_YES; /* the body comes in the next calls */
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct listener *l = cls;
	struct request *rq = *con_cls;
	int64_t now;

	if (!rq) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		rq = g_new0(struct request, 1);
		rq->l = l;
		rq->start_us = g_get_monotonic_time();
		rq->kind = classify(method, url);
		/* The client's words: keep them short and printable for the log. */
		for (size_t i = 0; i < sizeof(rq->method) - 1 && method[i]; i++)
			rq->method[i] = g_ascii_isupper(method[i]) ? method[i] : '?';
		addr_str(ci ? ci->client_addr : NULL, true, rq->peer, sizeof(rq->peer));
		*con_cls = rq;
		return first_call(l, conn, rq);
	}
	/* Only an upload still reading its body gets here. */
	if (rq->answered) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	now = g_get_monotonic_time();
	if (!*upload_data_size)
		return reply_upload(conn, rq, now); /* the body is complete */
	rq->bytes += *upload_data_size;
	*upload_data_size = 0;
	if (now < rq->deadline_us)
		return MHD_YES;
	/* libmicrohttpd 0.9 cannot answer before the body is complete: past
	 * the cap the connection is closed, and only a body ended in time gets
	 * its count. */
	rq->cut = true;
	return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct listener *l = cls;
	struct request *rq = *con_cls;

	if (!rq)
		return;
	if (rq->stream)
		g_atomic_int_add(&l->srv->streams, -1);
	if (l->srv->opts.verbose) {
		static const char *const how[] = {
			[MHD_REQUEST_TERMINATED_COMPLETED_OK] = "done",
			[MHD_REQUEST_TERMINATED_WITH_ERROR] = "error",
			[MHD_REQUEST_TERMINATED_TIMEOUT_REACHED] = "timed out",
			[MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN] = "shutdown",
			[MHD_REQUEST_TERMINATED_READ_ERROR] = "read error",
			[MHD_REQUEST_TERMINATED_CLIENT_ABORT] = "client closed",
		};
		const char *end = (size_t)toe < G_N_ELEMENTS(how) && how[toe] ? how[toe] : "ended";

		if (rq->cut)
			end = "closed at the time cap";

		log_locked(LOG_LVL_DEBUG,
			   "serve: %s %s from %s on %s: %u, %" G_GUINT64_FORMAT " bytes in %.2f s, %s",
			   rq->method, routes[rq->kind].path, rq->peer, l->name, rq->status,
			   rq->bytes, (double)(g_get_monotonic_time() - rq->start_us) / 1e6, end);
	}
	g_free(rq);
	*con_cls = NULL;
}

/* libmicrohttpd hands us its own format: say so, the compiler checks the rest. */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[256];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	log_locked(LOG_LVL_DEBUG, "serve: libmicrohttpd: %s", line);
}

int serve_http_start(struct listener *l)
{
	const struct serve_opts *o = &l->srv->opts;
	unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_ERROR_LOG;

	if (l->addr.family == AF_INET6)
		flags |= MHD_USE_IPv6;
	l->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, l,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, l->tcp,
				  MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT(o->max_streams),
				  MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout,
				  /* Bigger reads and writes than the 32 KiB default: fewer calls per byte. */
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
				  MHD_OPTION_END);
	if (!l->mhd)
		return -EIO;
	l->tcp = -1; /* MHD closes it */
	return 0;
}

void serve_http_stop(struct listener *l)
{
	if (l->mhd)
		MHD_stop_daemon(l->mhd);
	l->mhd = NULL;
}
