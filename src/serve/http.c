// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * serve's HTTP side (the paths are proto/tune.h's): libmicrohttpd, one daemon
 * per address and a thread per connection, so a stream stalled on a slow
 * client blocks nobody else; the caps are counted here, and each connection's
 * request head has a deadline (libmicrohttpd has only an idle timeout).
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

/*
 * A connection's head deadline. A client that sends its head a line at a
 * time is never idle, so libmicrohttpd's idle timeout never ends it: a timer
 * on the echo's loop shuts the socket down when a head is due and not whole,
 * and libmicrohttpd's thread then sees the stream end and closes it. The
 * socket is libmicrohttpd's: it is touched only under srv->watch_lock while
 * fd >= 0, and the connection's end sets -1 under that lock before
 * libmicrohttpd closes it. The timer owns the watch (freed with it).
 */
struct conn_watch {
	struct listener *l;
	int fd; /* -1 once the connection ended */
	bool in_head; /* a request head is due */
	int64_t deadline_us;
	GSource *timer;
	char peer[ADDR_STR_SIZE];
};

/* The timer fires at its ready time, once; head_due() sets that. */
static gboolean deadline_dispatch(GSource *src, GSourceFunc cb, gpointer data)
{
	g_source_set_ready_time(src, -1);
	return cb(data);
}

static GSourceFuncs deadline_funcs = { .dispatch = deadline_dispatch };

/* A head is due from now on w; under watch_lock. */
static void head_due(struct conn_watch *w)
{
	w->in_head = true;
	w->deadline_us = g_get_monotonic_time() +
			 (int64_t)w->l->srv->opts.head_timeout * G_USEC_PER_SEC;
	g_source_set_ready_time(w->timer, w->deadline_us);
}

static gboolean on_head_deadline(gpointer data)
{
	struct conn_watch *w = data;
	struct server *srv = w->l->srv;
	bool cut = false;

	g_mutex_lock(&srv->watch_lock);
	if (w->fd >= 0 && w->in_head) {
		if (g_get_monotonic_time() >= w->deadline_us) {
			shutdown(w->fd, SHUT_RDWR);
			w->in_head = false;
			cut = true;
		} else {
			g_source_set_ready_time(w->timer, w->deadline_us); /* moved on since */
		}
	}
	g_mutex_unlock(&srv->watch_lock);
	if (cut && srv->opts.verbose)
		log_locked(LOG_LVL_DEBUG, "serve: connection from %s on %s: no whole request "
			   "head within %u s: closed", w->peer, w->l->name, srv->opts.head_timeout);
	return G_SOURCE_CONTINUE;
}

static struct conn_watch *watch_new(struct listener *l, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *fdi =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct conn_watch *w = g_new0(struct conn_watch, 1);

	w->l = l;
	w->fd = fdi ? fdi->connect_fd : -1;
	addr_str(ci ? ci->client_addr : NULL, true, w->peer, sizeof(w->peer));
	w->timer = g_source_new(&deadline_funcs, sizeof(GSource));
	g_source_set_callback(w->timer, on_head_deadline, w, g_free);
	g_mutex_lock(&l->srv->watch_lock);
	head_due(w);
	g_mutex_unlock(&l->srv->watch_lock);
	g_source_attach(w->timer, serve_echo_context(l->srv->echo));
	return w;
}

static void watch_end(struct listener *l, struct conn_watch *w)
{
	GSource *timer;

	if (!w)
		return;
	g_mutex_lock(&l->srv->watch_lock);
	w->fd = -1;
	timer = w->timer;
	g_mutex_unlock(&l->srv->watch_lock);
	/* w goes with the timer, after a dispatch running now */
	g_source_destroy(timer);
	g_source_unref(timer);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct listener *l = cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		*socket_context = watch_new(l, conn);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		watch_end(l, *socket_context);
}

/* The head is whole (due = false), or the answer ended and the next is due. */
static void head_set(struct listener *l, struct MHD_Connection *conn, bool due)
{
	const union MHD_ConnectionInfo *si =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_watch *w = si ? si->socket_context : NULL;

	if (!w)
		return;
	g_mutex_lock(&l->srv->watch_lock);
	if (w->fd >= 0) {
		if (due)
			head_due(w);
		else
			w->in_head = false;
	}
	g_mutex_unlock(&l->srv->watch_lock);
}

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

/* ?seconds=S (serve_parse_seconds()); none is the cap. */
static bool parse_seconds(struct MHD_Connection *conn, double cap, double *out)
{
	const char *s = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, TUNE_ARG_SECONDS);

	if (!s) {
		*out = cap;
		return true;
	}
	return serve_parse_seconds(s, cap, out) == 0;
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
		head_set(l, conn, false);
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
	head_set(l, conn, true); /* a kept-alive connection's next request */
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
				  MHD_OPTION_CONNECTION_LIMIT, SERVE_CONN_LIMIT(o->max_streams),
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				  SERVE_CONN_PER_SOURCE(o->max_streams),
				  MHD_OPTION_CONNECTION_TIMEOUT, o->conn_timeout,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
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
