// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape serve (the protocol is in serve.h). HTTP is libmicrohttpd's: one
 * daemon per address, a thread per connection, so a stream stalled on a slow
 * client blocks nobody else; the caps are counted here. The UDP echo is a
 * GLib loop on a context and thread of its own, so neither the caller's loop
 * nor a test's blocking sockets have to drive it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <glib.h>
#include <glib-unix.h>
#include <microhttpd.h>

#include "build-config.h"
#include "util/log.h"
#include "serve/serve.h"

/* Sources the echo remembers; past this, idle ones are forgotten, then new ones refused. */
#define UDP_SOURCES_MAX 4096
/* Datagrams read per wakeup, so one busy socket cannot starve the others. */
#define UDP_BATCH 64
/* Connections per address: room for the 503s past the stream cap, and a bound on threads. */
#define CONN_LIMIT(max_streams) ((max_streams) * 2 + 16)
#define DOWNLOAD_BLOCK (64 * 1024)
#define CONN_MEMORY (256 * 1024)

struct listener {
	struct server *srv;
	struct serve_addr addr;
	char name[INET6_ADDRSTRLEN + IFNAME_SIZE + 2];
	int tcp, udp; /* -1 when closed or handed over */
	struct MHD_Daemon *mhd;
};

struct server {
	struct serve_opts opts; /* defaults filled in; addrs not kept */
	uint16_t port;
	struct listener *ls;
	size_t n_ls;
	gint streams; /* load streams running, all addresses together */
	/* The UDP echo; only its thread touches buckets. */
	GMainContext *ctx;
	GMainLoop *loop;
	GThread *thread;
	GHashTable *buckets; /* struct src_key -> struct src_entry */
};

/* ---- token bucket ------------------------------------------------------ */

void token_bucket_init(struct token_bucket *b, double burst, int64_t now_us)
{
	b->tokens = burst;
	b->last_us = now_us;
}

bool token_bucket_take(struct token_bucket *b, double rate, double burst, int64_t now_us)
{
	if (now_us > b->last_us) {
		b->tokens += (double)(now_us - b->last_us) * rate / 1e6;
		if (b->tokens > burst)
			b->tokens = burst;
		b->last_us = now_us;
	}
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

/* ---- addresses --------------------------------------------------------- */

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static bool is_link_local6(const struct serve_addr *a)
{
	return a->family == AF_INET6 && a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80;
}

int serve_addr_parse(const char *s, struct serve_addr *out)
{
	struct serve_addr a = { 0 };
	char buf[INET6_ADDRSTRLEN];
	const char *pct = strchr(s, '%');
	size_t len = pct ? (size_t)(pct - s) : strlen(s);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!pct && inet_pton(AF_INET, buf, a.addr) == 1) {
		a.family = AF_INET;
	} else if (inet_pton(AF_INET6, buf, a.addr) == 1) {
		a.family = AF_INET6;
	} else {
		return -EINVAL;
	}
	if (pct) {
		const char *scope = pct + 1;
		char *end;
		unsigned long idx;

		if (!*scope || strlen(scope) >= IFNAME_SIZE || !is_link_local6(&a))
			return -EINVAL;
		idx = strtoul(scope, &end, 10);
		if (!*end && g_ascii_isdigit(*scope)) {
			if (idx == 0 || idx > INT32_MAX)
				return -EINVAL;
			a.scope_id = (unsigned int)idx;
		} else {
			g_strlcpy(a.ifname, scope, sizeof(a.ifname));
		}
	}
	*out = a;
	return 0;
}

void serve_addr_str(const struct serve_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	inet_ntop(a->family, a->addr, ip, sizeof(ip));
	if (a->scope_id && a->ifname[0])
		snprintf(buf, len, "%s%%%s", ip, a->ifname);
	else if (a->scope_id)
		snprintf(buf, len, "%s%%%u", ip, a->scope_id);
	else
		snprintf(buf, len, "%s", ip);
}

static const struct link_info *link_by_index(const struct link_info *links, size_t n, int ifindex)
{
	for (size_t i = 0; i < n; i++)
		if (links[i].ifindex == ifindex)
			return &links[i];
	return NULL;
}

static const struct link_info *link_by_name(const struct link_info *links, size_t n,
					    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(links[i].name, name))
			return &links[i];
	return NULL;
}

static bool is_wireguard(const struct link_info *l)
{
	return l && !strcmp(l->kind, "wireguard");
}

static bool same_addr(const struct serve_addr *a, const struct addr_info *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, addr_len(a->family));
}

static bool usable(const struct addr_info *a)
{
	/* IFA_F_DADFAILED: the kernel will not let anyone bind it. */
	return (a->family == AF_INET || a->family == AF_INET6) && !(a->flags & 0x08);
}

static void add_unique(GArray *out, const struct serve_addr *a)
{
	for (guint i = 0; i < out->len; i++) {
		const struct serve_addr *b = &g_array_index(out, struct serve_addr, i);

		if (a->family == b->family && a->scope_id == b->scope_id &&
		    !memcmp(a->addr, b->addr, addr_len(a->family)))
			return;
	}
	g_array_append_val(out, *a);
}

/* Where an explicit address is, and whether a WireGuard link has it. */
static int place_explicit(const struct link_info *links, size_t n_links,
			  const struct addr_info *addrs, size_t n_addrs, struct serve_addr *a,
			  char *err, size_t errlen)
{
	char shown[INET6_ADDRSTRLEN + IFNAME_SIZE + 2];
	const struct link_info *l;

	serve_addr_str(a, shown, sizeof(shown));
	if (a->ifname[0]) { /* %IFNAME */
		l = link_by_name(links, n_links, a->ifname);
		if (!l) {
			snprintf(err, errlen, "listen '%s%%%s': no interface %s", shown, a->ifname,
				 a->ifname);
			return -ENODEV;
		}
		a->scope_id = (unsigned int)l->ifindex;
	} else if (a->scope_id) {
		l = link_by_index(links, n_links, (int)a->scope_id);
		if (!l) {
			snprintf(err, errlen, "listen '%s': no interface with index %u", shown,
				 a->scope_id);
			return -ENODEV;
		}
		g_strlcpy(a->ifname, l->name, sizeof(a->ifname));
	}
	for (size_t i = 0; i < n_addrs; i++) {
		if (!usable(&addrs[i]) || !same_addr(a, &addrs[i]))
			continue;
		if (a->scope_id && addrs[i].ifindex != (int)a->scope_id)
			continue;
		l = link_by_index(links, n_links, addrs[i].ifindex);
		if (!l)
			continue;
		/* The same address on two links: prefer the WireGuard one. */
		if (a->ifname[0] && a->tunnel)
			continue;
		g_strlcpy(a->ifname, l->name, sizeof(a->ifname));
		a->tunnel = is_wireguard(l);
		if (is_link_local6(a) && !a->scope_id)
			a->scope_id = (unsigned int)l->ifindex;
	}
	if (is_link_local6(a) && !a->scope_id) {
		snprintf(err, errlen,
			 "listen '%s': a link-local address needs its interface, as in %s%%wg0",
			 shown, shown);
		return -EINVAL;
	}
	return 0;
}

int serve_pick_addresses(const struct link_info *links, size_t n_links,
			 const struct addr_info *addrs, size_t n_addrs,
			 const struct serve_addr *explicit, size_t n_explicit,
			 struct serve_addr **out, size_t *n_out, char *err, size_t errlen)
{
	GArray *picked = g_array_new(FALSE, TRUE, sizeof(struct serve_addr));
	int r;

	for (size_t i = 0; i < n_explicit; i++) {
		struct serve_addr a = explicit[i];

		a.tunnel = false;
		r = place_explicit(links, n_links, addrs, n_addrs, &a, err, errlen);
		if (r < 0) {
			g_array_free(picked, TRUE);
			return r;
		}
		add_unique(picked, &a);
	}
	for (size_t i = 0; !n_explicit && i < n_addrs; i++) {
		const struct link_info *l = link_by_index(links, n_links, addrs[i].ifindex);
		struct serve_addr a = { .family = addrs[i].family, .tunnel = true };

		if (!is_wireguard(l) || !usable(&addrs[i]))
			continue;
		memcpy(a.addr, addrs[i].addr, addr_len(a.family));
		g_strlcpy(a.ifname, l->name, sizeof(a.ifname));
		if (is_link_local6(&a))
			a.scope_id = (unsigned int)l->ifindex;
		add_unique(picked, &a);
	}
	if (!picked->len) {
		snprintf(err, errlen,
			 "no WireGuard interface has an address to listen on (or say where: "
			 "listen ADDR)");
		g_array_free(picked, TRUE);
		return -ENOENT;
	}
	*n_out = picked->len;
	*out = (struct serve_addr *)(void *)g_array_free(picked, FALSE);
	return 0;
}

/* ---- sockets ----------------------------------------------------------- */

static socklen_t make_sockaddr(const struct serve_addr *a, uint16_t port,
			       struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a->addr, 4);
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a->addr, 16);
		sin6->sin6_scope_id = a->scope_id;
		return sizeof(*sin6);
	}
}

static int open_socket(const struct serve_addr *a, int type, uint16_t port, uint16_t *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = make_sockaddr(a, port, &ss);
	int one = 1, fd, r;

	fd = socket(a->family, type | SOCK_CLOEXEC | (type == SOCK_DGRAM ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	/* `listen ::` means IPv6 only; `listen 0.0.0.0` can then sit beside it. */
	if (a->family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	/* A restart must not wait for the last run's TIME_WAIT connections. */
	if (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		goto fail;
	if (type == SOCK_STREAM && listen(fd, 64) < 0)
		goto fail;
	if (bound) {
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			goto fail;
		*bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						       : ((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	return fd;
fail:
	r = -errno;
	close(fd);
	return r;
}

static void peer_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (!sa) {
		snprintf(buf, len, "?");
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

/* Requests are logged from MHD's threads: keep each line whole. */
#define log_locked(...)                    \
	do {                               \
		flockfile(stderr);         \
		log_msg(__VA_ARGS__);      \
		funlockfile(stderr);       \
	} while (0)

/* ---- UDP echo ---------------------------------------------------------- */

struct src_key {
	uint8_t family;
	uint8_t addr[16];
};

struct src_entry {
	struct src_key key; /* first: the table's key points here */
	struct token_bucket tb;
};

static guint src_hash(gconstpointer p)
{
	const struct src_key *k = p;
	guint h = k->family;

	for (size_t i = 0; i < sizeof(k->addr); i++)
		h = h * 31 + k->addr[i];
	return h;
}

static gboolean src_equal(gconstpointer a, gconstpointer b)
{
	return !memcmp(a, b, sizeof(struct src_key));
}

struct prune {
	const struct server *srv;
	int64_t now;
};

static gboolean src_idle(gpointer key, gpointer value, gpointer data)
{
	const struct src_entry *e = value;
	const struct prune *p = data;

	/* Full again by now: forgetting it changes nothing. */
	return e->tb.tokens + (double)(p->now - e->tb.last_us) * p->srv->opts.udp_rate / 1e6 >=
	       p->srv->opts.udp_burst;
}

static bool udp_allowed(struct server *srv, const struct sockaddr_storage *from, int64_t now)
{
	struct src_key key = { .family = (uint8_t)from->ss_family };
	struct src_entry *e;

	if (from->ss_family == AF_INET)
		memcpy(key.addr, &((const struct sockaddr_in *)from)->sin_addr, 4);
	else
		memcpy(key.addr, &((const struct sockaddr_in6 *)from)->sin6_addr, 16);
	e = g_hash_table_lookup(srv->buckets, &key);
	if (!e) {
		if (g_hash_table_size(srv->buckets) >= UDP_SOURCES_MAX) {
			struct prune p = { srv, now };

			g_hash_table_foreach_remove(srv->buckets, src_idle, &p);
			if (g_hash_table_size(srv->buckets) >= UDP_SOURCES_MAX)
				return false;
		}
		e = g_new0(struct src_entry, 1);
		e->key = key;
		token_bucket_init(&e->tb, srv->opts.udp_burst, now);
		g_hash_table_insert(srv->buckets, &e->key, e);
	}
	return token_bucket_take(&e->tb, srv->opts.udp_rate, srv->opts.udp_burst, now);
}

static uint16_t sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static gboolean on_udp(gint fd, GIOCondition cond, gpointer data)
{
	struct listener *l = data;
	struct server *srv = l->srv;
	uint8_t buf[SERVE_UDP_MAX];

	for (int i = 0; i < UDP_BATCH; i++) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		uint16_t port;
		ssize_t n;

		/* MSG_TRUNC: n is the datagram's real length. */
		n = recvfrom(fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&from, &flen);
		if (n < 0)
			break;
		if (n > SERVE_UDP_MAX)
			continue;
		/* Well-known ports are services (echo, chargen, DNS...), our own port
		 * another serve: answering them could start an endless loop. */
		port = sockaddr_port(&from);
		if (port < 1024 || port == srv->port)
			continue;
		if (!udp_allowed(srv, &from, g_get_monotonic_time()))
			continue;
		sendto(fd, buf, (size_t)n, MSG_DONTWAIT, (struct sockaddr *)&from, flen);
	}
	return G_SOURCE_CONTINUE;
}

static gboolean quit_loop(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

static gpointer udp_thread(gpointer data)
{
	struct server *srv = data;

	g_main_context_push_thread_default(srv->ctx);
	g_main_loop_run(srv->loop);
	g_main_context_pop_thread_default(srv->ctx);
	return NULL;
}

/* ---- HTTP -------------------------------------------------------------- */

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
	char peer[INET6_ADDRSTRLEN + 8];
};

/* What the log shows; a path we do not serve is not repeated (it is the client's text). */
static const char *const paths[] = {
	[REQ_OTHER] = "(other)",
	[REQ_ROOT] = "/",
	[REQ_DOWNLOAD] = "/download",
	[REQ_UPLOAD] = "/upload",
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
	const char *s = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "seconds");
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
	if (!strcmp(method, MHD_HTTP_METHOD_GET) && !strcmp(url, "/"))
		return REQ_ROOT;
	if (!strcmp(method, MHD_HTTP_METHOD_GET) && !strcmp(url, "/download"))
		return REQ_DOWNLOAD;
	if (!strcmp(method, MHD_HTTP_METHOD_POST) && !strcmp(url, "/upload"))
		return REQ_UPLOAD;
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
		peer_str(ci ? ci->client_addr : NULL, rq->peer, sizeof(rq->peer));
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
			   rq->method, paths[rq->kind], rq->peer, l->name, rq->status, rq->bytes,
			   (double)(g_get_monotonic_time() - rq->start_us) / 1e6, end);
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

/* ---- start and stop ---------------------------------------------------- */

static int listener_start(struct server *srv, struct listener *l)
{
	unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_ERROR_LOG;
	GSource *src;

	if (l->addr.family == AF_INET6)
		flags |= MHD_USE_IPv6;
	l->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, l,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, l->tcp,
				  MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT(srv->opts.max_streams),
				  MHD_OPTION_CONNECTION_TIMEOUT, srv->opts.conn_timeout,
				  /* Bigger reads and writes than the 32 KiB default: fewer calls per byte. */
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
				  MHD_OPTION_END);
	if (!l->mhd)
		return -EIO;
	l->tcp = -1; /* MHD closes it */
	src = g_unix_fd_source_new(l->udp, G_IO_IN);
	g_source_set_callback(src, (GSourceFunc)(void (*)(void))on_udp, l, NULL);
	g_source_attach(src, srv->ctx);
	g_source_unref(src);
	return 0;
}

static void fill_defaults(struct serve_opts *o)
{
	if (!o->max_streams)
		o->max_streams = SERVE_MAX_STREAMS;
	if (!(o->max_seconds > 0))
		o->max_seconds = SERVE_MAX_SECONDS;
	if (!o->conn_timeout)
		o->conn_timeout = SERVE_CONN_TIMEOUT;
	if (!(o->udp_rate > 0))
		o->udp_rate = SERVE_UDP_RATE;
	if (!(o->udp_burst >= 1))
		o->udp_burst = SERVE_UDP_BURST;
	o->addrs = NULL;
	o->n_addrs = 0;
}

/*
 * One try at opening every listener. With port 0 the first socket picks a
 * free port and the rest follow it; another program may hold that number in
 * the other protocol or family, which is -EADDRINUSE with @quiet_busy set
 * so the caller can try a fresh port without a line in the log.
 */
static int serve_start_once(const struct serve_opts *opts, bool quiet_busy, struct server **out)
{
	struct server *srv;
	int r = 0;

	if (!opts->n_addrs)
		return -EINVAL;
	srv = g_new0(struct server, 1);
	srv->opts = *opts;
	fill_defaults(&srv->opts);
	srv->port = opts->port;
	srv->ctx = g_main_context_new();
	srv->loop = g_main_loop_new(srv->ctx, FALSE);
	srv->buckets = g_hash_table_new_full(src_hash, src_equal, NULL, g_free);
	srv->ls = g_new0(struct listener, opts->n_addrs);
	for (size_t i = 0; i < opts->n_addrs; i++) {
		struct listener *l = &srv->ls[i];

		l->srv = srv;
		l->addr = opts->addrs[i];
		l->tcp = l->udp = -1;
		serve_addr_str(&l->addr, l->name, sizeof(l->name));
		srv->n_ls++;
		/* Port 0: the first socket picks one and the others follow it. */
		r = open_socket(&l->addr, SOCK_STREAM, srv->port, srv->port ? NULL : &srv->port);
		if (r >= 0) {
			l->tcp = r;
			r = open_socket(&l->addr, SOCK_DGRAM, srv->port, NULL);
		}
		if (r >= 0) {
			l->udp = r;
			r = listener_start(srv, l);
		}
		if (r < 0) {
			if (!(quiet_busy && r == -EADDRINUSE))
				log_err("serve: listen on %s port %u: %s", l->name, srv->port,
					r == -EIO ? "libmicrohttpd could not start" : g_strerror(-r));
			serve_stop(srv);
			return r;
		}
	}
	srv->thread = g_thread_new("wgshape-echo", udp_thread, srv);
	for (size_t i = 0; i < srv->n_ls; i++) {
		const struct listener *l = &srv->ls[i];
		static const uint8_t any[16];
		const char *where = l->addr.ifname;

		if (!*where && !memcmp(l->addr.addr, any, addr_len(l->addr.family)))
			where = "every address";
		log_info("serve: listening on %s port %u%s%s%s%s: HTTP and UDP echo", l->name,
			 srv->port, *where ? " (" : "", where,
			 l->addr.ifname[0] && !l->addr.tunnel ? ", not a tunnel" : "",
			 *where ? ")" : "");
	}
	*out = srv;
	return 0;
}

int serve_start(const struct serve_opts *opts, struct server **out)
{
	enum { TRIES = 16 };
	int r;

	if (opts->port)
		return serve_start_once(opts, false, out);
	for (int i = 1;; i++) {
		r = serve_start_once(opts, i < TRIES, out);
		if (r != -EADDRINUSE || i >= TRIES)
			return r;
	}
}

uint16_t serve_port(const struct server *srv)
{
	return srv->port;
}

unsigned int serve_streams(const struct server *srv)
{
	return (unsigned int)g_atomic_int_get(&srv->streams);
}

void serve_stop(struct server *srv)
{
	if (!srv)
		return;
	if (srv->thread) {
		/* From inside the loop: a quit before it started running would be lost. */
		GSource *idle = g_idle_source_new();

		g_source_set_callback(idle, quit_loop, srv->loop, NULL);
		g_source_attach(idle, srv->ctx);
		g_source_unref(idle);
		g_thread_join(srv->thread);
	}
	for (size_t i = 0; i < srv->n_ls; i++) {
		struct listener *l = &srv->ls[i];

		if (l->mhd)
			MHD_stop_daemon(l->mhd);
		if (l->tcp >= 0)
			close(l->tcp);
		if (l->udp >= 0)
			close(l->udp);
	}
	g_hash_table_unref(srv->buckets);
	g_main_loop_unref(srv->loop);
	g_main_context_unref(srv->ctx);
	g_free(srv->ls);
	g_free(srv);
}
