// SPDX-License-Identifier: GPL-2.0-or-later
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/icmp6.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/tcp.h>
#include <curl/curl.h>
#include <glib.h>

#include "measure/measure.h"

#define NS_PER_MS INT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)
#define CONNECT_TIMEOUT_MS 5000
#define STALL_SECONDS 5 /* a stream that moves no byte for this long has failed */
/* Bigger: fewer system calls, but longer turns away from the probes. */
#define CURL_BUF (128 * 1024)

#ifndef ICMP_FILTER
#define ICMP_FILTER 1 /* SOL_RAW, linux/icmp.h (which clashes with netinet/ip_icmp.h) */
#endif
#define ICMP4_ECHOREPLY 0
#define ICMP4_ECHO 8

#define PROBE_MAGIC 0x77677370u /* "wgsp" */

/* What a probe carries; echoed back verbatim (<= 64 bytes for wgshape serve). */
struct probe_payload {
	uint32_t magic;
	uint32_t token; /* random per run: echoes of another run or client are ignored */
	uint32_t seq;
	uint32_t zero;
	uint64_t sent_ns; /* CLOCK_REALTIME, for a reader of a capture; not trusted back */
} __attribute__((packed));

struct echo_hdr {
	uint8_t type, code;
	uint16_t cksum, id, seq;
} __attribute__((packed));

struct sent_probe {
	int64_t mono_ns, real_ns;
	double rtt_ms; /* < 0: no echo (yet) */
};

struct probe {
	int fd;
	int family;
	enum measure_probe kind;
	bool raw;
	uint16_t ident; /* raw ICMP: ours to choose; a ping socket's is the kernel's */
	uint32_t token;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	GArray *sent; /* struct sent_probe, indexed by seq */
	size_t received;
	size_t answered_late;
	double last_rtt;
	int64_t interval_ns, timeout_ns, next_send;
	bool all_kernel_ts;
	char what[96]; /* "UDP echo 10.0.0.1:4780" for messages */
};

struct run;

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

struct run {
	const struct measure_config *cfg;
	int err;
	char *msg;

	struct probe probe;
	bool have_probe;

	CURLM *multi;
	struct stream *streams;
	struct curl_slist *headers, *resolve;
	char load_host[256];
	char load_addr[64];
	uint64_t last_progress_bytes;
	int64_t last_progress_ns;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void G_GNUC_PRINTF(3, 4) fail(struct run *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->err)
		return; /* the first error is the cause; the rest follow from it */
	r->err = err;
	va_start(ap, fmt);
	vsnprintf(r->msg, MEASURE_MSG_SIZE, fmt, ap);
	va_end(ap);
}

static const char *family_name(int family)
{
	return family == AF_INET6 ? "IPv6" : "IPv4";
}

void measure_config_init(struct measure_config *cfg)
{
	*cfg = (struct measure_config){
		.family = AF_UNSPEC,
		.warmup_ms = MEASURE_WARMUP_MS,
		.probe_port = MEASURE_UDP_PORT,
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

/* ---- resolution -------------------------------------------------------- */

static int gai_to_errno(int gai)
{
	switch (gai) {
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
		return -EADDRNOTAVAIL;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_FAMILY:
		return -EAFNOSUPPORT;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	default:
		return -EINVAL;
	}
}

int measure_resolve(const char *host, uint16_t port, int family, struct sockaddr_storage *out,
		    socklen_t *len)
{
	struct addrinfo hints = {
		.ai_family = family,
		.ai_socktype = SOCK_DGRAM, /* one answer per address, not one per socket type */
		.ai_flags = AI_NUMERICSERV,
	};
	struct addrinfo *ai;
	char service[8];
	int r;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	if (!host || !*host)
		return -EINVAL;
	snprintf(service, sizeof(service), "%u", port);
	r = getaddrinfo(host, service, &hints, &ai);
	if (r)
		return gai_to_errno(r);
	if (ai->ai_addrlen > sizeof(*out) || ai->ai_family != family) {
		freeaddrinfo(ai);
		return -EADDRNOTAVAIL;
	}
	memset(out, 0, sizeof(*out));
	memcpy(out, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void addr_str(const struct sockaddr_storage *ss, bool with_port, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	uint16_t port;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		port = ntohs(s6->sin6_port);
		if (with_port)
			snprintf(buf, size, "[%s]:%u", ip, port);
		else
			snprintf(buf, size, "%s", ip);
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		port = ntohs(s4->sin_port);
		if (with_port)
			snprintf(buf, size, "%s:%u", ip, port);
		else
			snprintf(buf, size, "%s", ip);
	}
}

/* Host (brackets of an IPv6 literal removed) and port of an http(s) URL. */
static int url_host_port(const char *url, char *host, size_t hostlen, uint16_t *port)
{
	CURLU *u = curl_url();
	char *h = NULL, *p = NULL, *scheme = NULL, *zone = NULL;
	const char *bare;
	size_t n;
	long pn;
	int r = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		goto out;
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (g_ascii_strcasecmp(scheme, "http") && g_ascii_strcasecmp(scheme, "https")))
		goto out;
	if (curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) != CURLUE_OK)
		goto out;
	bare = h;
	n = strlen(h);
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		bare++;
		n -= 2;
	}
	pn = strtol(p, NULL, 10);
	if (n == 0 || n >= hostlen || pn <= 0 || pn > 65535)
		goto out;
	memcpy(host, bare, n);
	host[n] = '\0';
	/* fe80::1%wg0: the zone goes back on for getaddrinfo */
	if (curl_url_get(u, CURLUPART_ZONEID, &zone, 0) == CURLUE_OK && zone &&
	    n + 1 + strlen(zone) < hostlen) {
		host[n] = '%';
		strcpy(host + n + 1, zone);
	}
	*port = (uint16_t)pn;
	r = 0;
out:
	curl_free(scheme);
	curl_free(zone);
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
	return r;
}

int measure_resolve_url(const char *url, int family, struct sockaddr_storage *out,
			socklen_t *len)
{
	char host[256];
	uint16_t port;
	int r;

	r = url_host_port(url, host, sizeof(host), &port);
	if (r < 0)
		return r;
	return measure_resolve(host, port, family, out, len);
}

/* ---- probes ------------------------------------------------------------ */

static uint16_t inet_cksum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)p[0] << 8 | p[1];
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static int bind_to_device(int fd, const char *ifname)
{
	if (!ifname)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, strlen(ifname) + 1) < 0)
		return -errno;
	return 0;
}

/* An ICMP socket: a ping socket first, a raw one when the kernel refuses it. */
static int icmp_socket(struct run *r, struct probe *p)
{
	int proto = p->family == AF_INET6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
	int fd = -1, ping_err = 0;

	if (r->cfg->icmp != MEASURE_ICMP_RAW) {
		fd = socket(p->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
		if (fd >= 0)
			return fd;
		ping_err = errno;
		if (r->cfg->icmp == MEASURE_ICMP_PING) {
			fail(r, -ping_err,
			     "%s: no ping socket: %s (net.ipv4.ping_group_range excludes gid %u?)",
			     p->what, g_strerror(ping_err), (unsigned int)getegid());
			return -1;
		}
	}
	fd = socket(p->family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd < 0) {
		int e = errno;

		if (ping_err)
			fail(r, e == EPERM || e == EACCES ? -EPERM : -e,
			     "%s: no ping socket (%s; net.ipv4.ping_group_range excludes gid %u) "
			     "and no raw socket (%s; needs CAP_NET_RAW)",
			     p->what, g_strerror(ping_err), (unsigned int)getegid(), g_strerror(e));
		else
			fail(r, e == EACCES ? -EPERM : -e,
			     "%s: no raw socket: %s (needs CAP_NET_RAW)", p->what, g_strerror(e));
		return -1;
	}
	p->raw = true;
	/* Raw sockets get every ICMP message, our own echo requests included on
	 * some paths: let only echo replies through (and check type and id again). */
	if (p->family == AF_INET) {
		uint32_t block = ~(UINT32_C(1) << ICMP4_ECHOREPLY);

		(void)setsockopt(fd, SOL_RAW, ICMP_FILTER, &block, sizeof(block));
	} else {
		struct icmp6_filter f;

		ICMP6_FILTER_SETBLOCKALL(&f);
		ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &f);
		(void)setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f));
	}
	return fd;
}

static int probe_open(struct run *r)
{
	const struct measure_config *cfg = r->cfg;
	struct probe *p = &r->probe;
	bool udp = cfg->probe == MEASURE_PROBE_UDP;
	int one = 1, e;

	p->fd = -1;
	p->kind = cfg->probe;
	p->family = cfg->family;
	p->token = g_random_int();
	p->ident = (uint16_t)g_random_int();
	p->interval_ns = (int64_t)cfg->probe_interval_ms * NS_PER_MS;
	p->timeout_ns = (int64_t)cfg->probe_timeout_ms * NS_PER_MS;
	p->sent = g_array_new(FALSE, TRUE, sizeof(struct sent_probe));
	p->last_rtt = -1;
	p->all_kernel_ts = true;
	if (udp)
		snprintf(p->what, sizeof(p->what), "UDP echo %s port %u", cfg->probe_host,
			 cfg->probe_port);
	else
		snprintf(p->what, sizeof(p->what), "ICMP echo %s", cfg->probe_host);

	e = measure_resolve(cfg->probe_host, udp ? cfg->probe_port : 0, cfg->family, &p->addr,
			    &p->addrlen);
	if (e < 0) {
		if (e == -EADDRNOTAVAIL)
			fail(r, e, "%s: no %s address", p->what, family_name(cfg->family));
		else
			fail(r, e, "%s: %s", p->what, g_strerror(-e));
		return e;
	}
	if (udp) {
		p->fd = socket(p->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (p->fd < 0) {
			fail(r, -errno, "%s: socket: %s", p->what, g_strerror(errno));
			return r->err;
		}
	} else {
		p->fd = icmp_socket(r, p);
		if (p->fd < 0)
			return r->err;
	}
	e = bind_to_device(p->fd, cfg->ifname);
	if (e < 0) {
		fail(r, e, "%s: binding to interface %s: %s", p->what, cfg->ifname, g_strerror(-e));
		return e;
	}
	if (setsockopt(p->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		p->all_kernel_ts = false; /* fall back to the clock at reading */
	/* Connected: only the target's answers reach us, and errors it sends back
	 * (port unreachable) are reported to us. */
	if (connect(p->fd, (struct sockaddr *)&p->addr, p->addrlen) < 0) {
		char a[64];

		e = -errno;
		addr_str(&p->addr, udp, a, sizeof(a));
		fail(r, e, "%s (%s): connect: %s", p->what, a, g_strerror(-e));
		return e;
	}
	return 0;
}

static void probe_close(struct probe *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->sent)
		g_array_free(p->sent, TRUE);
}

static bool probe_error_is_transient(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR || e == ENOMEM;
}

static void probe_hard_error(struct run *r, int e, const char *op)
{
	struct probe *p = &r->probe;
	char a[64];

	addr_str(&p->addr, p->kind == MEASURE_PROBE_UDP, a, sizeof(a));
	if (e == ECONNREFUSED && p->kind == MEASURE_PROBE_UDP)
		fail(r, -e,
		     "%s (%s): port unreachable: nothing listens there (is wgshape serve running?)",
		     p->what, a);
	else
		fail(r, -e, "%s (%s): %s: %s", p->what, a, op, g_strerror(e));
}

static void probe_send(struct run *r)
{
	struct probe *p = &r->probe;
	struct sent_probe sp = { .rtt_ms = -1 };
	uint32_t seq = p->sent->len;
	uint8_t buf[sizeof(struct echo_hdr) + sizeof(struct probe_payload)];
	struct probe_payload *pl;
	size_t len, off = 0;
	ssize_t n;

	memset(buf, 0, sizeof(buf));
	if (p->kind == MEASURE_PROBE_ICMP) {
		struct echo_hdr *h = (struct echo_hdr *)buf;

		h->type = p->family == AF_INET6 ? ICMP6_ECHO_REQUEST : ICMP4_ECHO;
		h->id = htons(p->ident); /* a ping socket puts its own */
		h->seq = htons((uint16_t)seq);
		off = sizeof(*h);
	}
	pl = (struct probe_payload *)(buf + off);
	len = off + sizeof(*pl);
	sp.real_ns = clock_ns(CLOCK_REALTIME);
	sp.mono_ns = mono_ns();
	pl->magic = htonl(PROBE_MAGIC);
	pl->token = htonl(p->token);
	pl->seq = htonl(seq);
	pl->sent_ns = GUINT64_TO_BE((uint64_t)sp.real_ns);
	/* The kernel sums ICMPv6 and ping sockets itself; raw ICMPv4 is ours. */
	if (p->kind == MEASURE_PROBE_ICMP && p->family == AF_INET && p->raw)
		((struct echo_hdr *)buf)->cksum = inet_cksum(buf, len);

	g_array_append_val(p->sent, sp);
	n = send(p->fd, buf, len, MSG_DONTWAIT);
	if (n < 0 && !probe_error_is_transient(errno))
		probe_hard_error(r, errno, "send");
	/* A transient failure is a lost probe: the local queue was full. */
}

/* The payload of an echo in buf, or NULL when it is not an answer to us. */
static const struct probe_payload *probe_match(const struct probe *p, const uint8_t *buf,
					       size_t len)
{
	const struct probe_payload *pl;

	if (p->kind == MEASURE_PROBE_ICMP) {
		const struct echo_hdr *h;

		if (p->family == AF_INET && p->raw) {
			/* IPv4 raw sockets hand us the IP header too. */
			size_t ihl;

			if (len < 20 || (buf[0] >> 4) != 4)
				return NULL;
			ihl = (size_t)(buf[0] & 0x0f) * 4;
			if (ihl < 20 || ihl > len)
				return NULL;
			buf += ihl;
			len -= ihl;
		}
		if (len < sizeof(*h))
			return NULL;
		h = (const struct echo_hdr *)buf;
		if (h->type != (p->family == AF_INET6 ? ICMP6_ECHO_REPLY : ICMP4_ECHOREPLY) ||
		    h->code != 0)
			return NULL;
		/* A ping socket's replies are already matched on its id by the kernel. */
		if (p->raw && ntohs(h->id) != p->ident)
			return NULL;
		buf += sizeof(*h);
		len -= sizeof(*h);
	}
	if (len < sizeof(*pl))
		return NULL;
	pl = (const struct probe_payload *)buf;
	if (ntohl(pl->magic) != PROBE_MAGIC || ntohl(pl->token) != p->token)
		return NULL;
	return pl;
}

static void probe_recv(struct run *r)
{
	struct probe *p = &r->probe;

	for (;;) {
		uint8_t buf[256];
		union {
			char buf[CMSG_SPACE(sizeof(struct timespec)) * 2];
			struct cmsghdr align;
		} ctrl;
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctrl.buf,
			.msg_controllen = sizeof(ctrl.buf),
		};
		const struct probe_payload *pl;
		struct sent_probe *sp;
		struct cmsghdr *c;
		int64_t now, kernel_ns = -1, user_rtt, rtt;
		uint32_t seq;
		ssize_t n;

		n = recvmsg(p->fd, &mh, MSG_DONTWAIT);
		now = mono_ns(); /* after: the echo may have come in just now */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (!probe_error_is_transient(errno))
				probe_hard_error(r, errno, "receive");
			return;
		}
		pl = probe_match(p, buf, (size_t)n);
		if (!pl)
			continue;
		seq = ntohl(pl->seq);
		if (seq >= p->sent->len)
			continue;
		sp = &g_array_index(p->sent, struct sent_probe, seq);
		if (sp->rtt_ms >= 0)
			continue; /* a duplicate */
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;

				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				kernel_ns = (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
			}
		}
		/*
		 * The kernel stamps with CLOCK_REALTIME, so the send time is taken
		 * on that clock too; the monotonic clock bounds it: the kernel saw
		 * the echo before we read it. Outside that bound the wall clock was
		 * stepped, and the time at reading is the better figure.
		 */
		user_rtt = now - sp->mono_ns;
		rtt = kernel_ns - sp->real_ns;
		if (kernel_ns < 0 || rtt < 0 || rtt > user_rtt + NS_PER_MS) {
			rtt = user_rtt;
			p->all_kernel_ts = false;
		}
		if (rtt > p->timeout_ns) {
			p->answered_late++;
			continue; /* lost, as far as the statistics go */
		}
		sp->rtt_ms = (double)rtt / NS_PER_MS;
		p->received++;
		p->last_rtt = sp->rtt_ms;
	}
}

/* Every probe answered, or the last one past its timeout: nothing more to wait for. */
static bool probe_drained(const struct probe *p, int64_t now)
{
	const struct sent_probe *last;

	if (p->sent->len == 0 || p->received == p->sent->len)
		return true;
	last = &g_array_index(p->sent, struct sent_probe, p->sent->len - 1);
	return now >= last->mono_ns + p->timeout_ns;
}

/* ---- load -------------------------------------------------------------- */

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

	fail(r, -EPROTO, "%s stream %u of %u: %s answered HTTP %ld%s",
	     load_name(r), s->index + 1, r->cfg->streams, r->cfg->url, code,
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
#define SET(opt, val)                                        \
	do {                                                 \
		if (c == CURLE_OK)                           \
			c = curl_easy_setopt(e, opt, val);   \
	} while (0)
	SET(CURLOPT_URL, cfg->url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_FRESH_CONNECT, 1L);
	SET(CURLOPT_FORBID_REUSE, 1L);
	SET(CURLOPT_IPRESOLVE,
	    cfg->family == AF_INET6 ? (long)CURL_IPRESOLVE_V6 : (long)CURL_IPRESOLVE_V4);
	if (r->resolve)
		SET(CURLOPT_RESOLVE, r->resolve);
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
		SET(CURLOPT_HTTPHEADER, r->headers);
	}
#undef SET
	if (c != CURLE_OK)
		return c == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
	return 0;
}

static int stream_start(struct run *r, struct stream *s)
{
	s->cur_bytes = 0;
	s->upload_left = r->cfg->upload_size;
	s->status_ok = false;
	s->fail_err = 0;
	s->errbuf[0] = '\0';
	s->transfers++;
	if (curl_multi_add_handle(r->multi, s->easy) != CURLM_OK)
		return -ENOMEM;
	return 0;
}

static void stream_failed(struct run *r, struct stream *s, CURLcode c)
{
	long os_errno = 0;
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
	{
		const char *why = s->errbuf[0] ? s->errbuf : curl_easy_strerror(c);
		/* curl says "Couldn't connect to server"; the errno says why */
		bool add = os_errno > 0 && -e == os_errno && !strstr(why, g_strerror(-e));

		fail(r, e, "%s stream %u of %u: %s (%s): %s%s%s%s", load_name(r), s->index + 1,
		     r->cfg->streams, r->cfg->url, r->load_addr, why, add ? " (" : "",
		     add ? g_strerror(-e) : "", add ? ")" : "");
	}
}

/* A transfer ended before the run did: check it and start it again. */
static void stream_done(struct run *r, struct stream *s, CURLcode c)
{
	long code = 0;

	curl_multi_remove_handle(r->multi, s->easy);
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
		fail(r, -ENODATA, "download stream %u of %u: %s answered with an empty body",
		     s->index + 1, r->cfg->streams, r->cfg->url);
		return;
	}
	/* Answered: the far end has it all (its socket is gone by now). */
	if (r->cfg->load == MEASURE_LOAD_DOWNLOAD) {
		s->done_bytes += s->cur_bytes;
	} else {
		curl_off_t up = 0;

		curl_easy_getinfo(s->easy, CURLINFO_SIZE_UPLOAD_T, &up);
		s->done_bytes += (uint64_t)up;
	}
	/* A copy starts with fresh counters (a re-added handle keeps the old
	 * upload count until its transfer really begins). */
	{
		CURL *fresh = curl_easy_duphandle(s->easy);

		if (!fresh) {
			fail(r, -ENOMEM, "%s stream %u: cannot start a transfer", load_name(r),
			     s->index + 1);
			return;
		}
		curl_easy_cleanup(s->easy);
		s->easy = fresh;
	}
	if (stream_start(r, s) < 0)
		fail(r, -ENOMEM, "%s stream %u: cannot start a transfer", load_name(r),
		     s->index + 1);
}

static int load_open(struct run *r)
{
	const struct measure_config *cfg = r->cfg;
	struct sockaddr_storage ss;
	socklen_t len;
	uint16_t port;
	int e;

	e = url_host_port(cfg->url, r->load_host, sizeof(r->load_host), &port);
	if (e < 0) {
		fail(r, e, "%s URL %s: not an http or https URL", load_name(r), cfg->url);
		return e;
	}
	e = measure_resolve(r->load_host, port, cfg->family, &ss, &len);
	if (e < 0) {
		if (e == -EADDRNOTAVAIL)
			fail(r, e, "%s URL %s: %s has no %s address", load_name(r), cfg->url,
			     r->load_host, family_name(cfg->family));
		else
			fail(r, e, "%s URL %s: %s", load_name(r), cfg->url, g_strerror(-e));
		return e;
	}
	addr_str(&ss, true, r->load_addr, sizeof(r->load_addr));
	/* Pin what we resolved (and what tune proved the route for); an address
	 * in the URL is used as it is. */
	if (!strchr(r->load_host, ':')) {
		struct in_addr a4;
		char pin[512], ip[64];

		if (inet_pton(AF_INET, r->load_host, &a4) != 1) {
			addr_str(&ss, false, ip, sizeof(ip));
			snprintf(pin, sizeof(pin),
				 cfg->family == AF_INET6 ? "%s:%u:[%s]" : "%s:%u:%s", r->load_host,
				 port, ip);
			r->resolve = curl_slist_append(NULL, pin);
			if (!r->resolve)
				return -ENOMEM;
		}
	}
	if (cfg->load == MEASURE_LOAD_UPLOAD) {
		/* No "Expect: 100-continue": the body goes out at once. */
		r->headers = curl_slist_append(NULL, "Expect:");
		if (!r->headers)
			return -ENOMEM;
	}
	r->multi = curl_multi_init();
	if (!r->multi)
		return -ENOMEM;
	r->streams = g_new0(struct stream, cfg->streams);
	for (unsigned int i = 0; i < cfg->streams; i++) {
		struct stream *s = &r->streams[i];

		s->run = r;
		s->index = i;
		s->fd = -1;
		e = stream_setup(r, s);
		if (e < 0) {
			fail(r, e, "%s stream %u: setting up libcurl: %s", load_name(r), i + 1,
			     g_strerror(-e));
			return e;
		}
	}
	return 0;
}

/* Abort every transfer and close its connection; the counters stay. */
static void load_stop(struct run *r)
{
	for (unsigned int i = 0; r->streams && i < r->cfg->streams; i++) {
		if (!r->streams[i].easy)
			continue;
		if (r->multi)
			curl_multi_remove_handle(r->multi, r->streams[i].easy);
		curl_easy_cleanup(r->streams[i].easy);
		r->streams[i].easy = NULL;
	}
}

static void load_close(struct run *r)
{
	load_stop(r);
	g_free(r->streams);
	if (r->multi)
		curl_multi_cleanup(r->multi);
	curl_slist_free_all(r->headers);
	curl_slist_free_all(r->resolve);
}

static void load_perform(struct run *r)
{
	CURLMsg *m;
	int running, left;

	if (curl_multi_perform(r->multi, &running) != CURLM_OK) {
		fail(r, -EIO, "%s: libcurl multi failed", load_name(r));
		return;
	}
	while ((m = curl_multi_info_read(r->multi, &left))) {
		struct stream *s = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
		stream_done(r, s, m->data.result);
	}
}

static uint64_t load_bytes(const struct run *r)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < r->cfg->streams; i++)
		sum += stream_bytes(&r->streams[i]);
	return sum;
}

/* ---- the run ----------------------------------------------------------- */

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
	struct pollfd pfd = { .fd = r->have_probe ? r->probe.fd : -1, .events = POLLIN };
	int n = r->have_probe ? 1 : 0;
	int ms = timeout_ms(deadline, mono_ns());

	if (r->multi) {
		struct curl_waitfd wfd = { .fd = pfd.fd, .events = CURL_WAIT_POLLIN };

		/* EINTR (a signal) returns early, so *cancel is seen at once. */
		if (curl_multi_poll(r->multi, &wfd, (unsigned int)n, ms, NULL) != CURLM_OK)
			fail(r, -EIO, "%s: libcurl poll failed", load_name(r));
		pfd.revents = wfd.revents;
	} else if (poll(&pfd, (nfds_t)n, ms) < 0) {
		pfd.revents = 0;
		if (errno != EINTR)
			fail(r, -errno, "poll: %s", g_strerror(errno));
	}
	if (n && pfd.revents)
		probe_recv(r);
}

static bool cancelled(const struct run *r)
{
	return r->cfg->cancel && *r->cfg->cancel;
}

static void report_progress(struct run *r, int64_t start, int64_t now)
{
	const struct measure_config *cfg = r->cfg;
	struct measure_progress pr = {
		.elapsed = (double)(now - start) / NS_PER_S,
		.duration = cfg->duration_ms / 1000.0,
		.last_rtt_ms = -1,
	};

	if (r->multi) {
		pr.bytes = load_bytes(r);
		if (now > r->last_progress_ns)
			pr.goodput = (double)(pr.bytes - r->last_progress_bytes) * NS_PER_S /
				     (double)(now - r->last_progress_ns);
		r->last_progress_bytes = pr.bytes;
	}
	r->last_progress_ns = now;
	if (r->have_probe) {
		pr.probes_sent = r->probe.sent->len;
		pr.probes_received = r->probe.received;
		pr.last_rtt_ms = r->probe.last_rtt;
	}
	if (cfg->progress(&pr, cfg->progress_arg))
		fail(r, -ECANCELED, "measurement stopped by its caller");
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

static struct measure_result *collect(struct run *r, int64_t start, int64_t warm, int64_t stop)
{
	const struct measure_config *cfg = r->cfg;
	struct measure_result *res = g_new0(struct measure_result, 1);

	res->seconds = (double)(stop - start) / NS_PER_S;
	if (r->streams) {
		res->steady_seconds = (double)(stop - warm) / NS_PER_S;
		res->n_streams = cfg->streams;
		res->streams = g_new0(struct measure_stream, cfg->streams);
		for (unsigned int i = 0; i < cfg->streams; i++) {
			const struct stream *s = &r->streams[i];
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
		g_strlcpy(res->load_addr, r->load_addr, sizeof(res->load_addr));
	}
	if (r->have_probe) {
		struct probe *p = &r->probe;
		GArray *rtt = g_array_new(FALSE, FALSE, sizeof(double));

		res->n_samples = p->sent->len;
		res->samples = g_new0(struct measure_sample, MAX(p->sent->len, 1));
		for (guint i = 0; i < p->sent->len; i++) {
			const struct sent_probe *sp = &g_array_index(p->sent, struct sent_probe, i);

			res->samples[i].t = (double)(sp->mono_ns - start) / NS_PER_S;
			res->samples[i].rtt_ms = sp->rtt_ms;
			if (sp->mono_ns < warm)
				continue;
			if (sp->rtt_ms >= 0)
				g_array_append_val(rtt, sp->rtt_ms);
			else
				res->lost++;
		}
		res->n_rtt = rtt->len;
		res->rtt_ms = (double *)g_array_free(rtt, FALSE);
		res->icmp_raw = p->raw;
		res->kernel_timestamps = p->all_kernel_ts;
		addr_str(&p->addr, p->kind == MEASURE_PROBE_UDP, res->probe_addr,
			 sizeof(res->probe_addr));
	}
	return res;
}

int measure_run(const struct measure_config *cfg, struct measure_result **out,
		char msg[MEASURE_MSG_SIZE])
{
	struct run r = { .cfg = cfg, .msg = msg, .probe.fd = -1 };
	bool with_load = cfg->load != MEASURE_LOAD_NONE;
	bool curl_up = false, warm_done;
	int64_t start, warm, end, stop, next_progress, now, progress_ns;
	int e;

	msg[0] = '\0';
	e = check_config(cfg, msg);
	if (e < 0)
		return e;
	if (with_load) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(msg, MEASURE_MSG_SIZE, "libcurl failed to initialise");
			return -ENOMEM;
		}
		curl_up = true;
		if (load_open(&r) < 0)
			goto out;
	}
	if (cfg->probe != MEASURE_PROBE_NONE) {
		r.have_probe = true;
		if (probe_open(&r) < 0)
			goto out;
	}

	start = mono_ns();
	warm = with_load ? start + (int64_t)cfg->warmup_ms * NS_PER_MS : start;
	end = start + (int64_t)cfg->duration_ms * NS_PER_MS;
	progress_ns = (int64_t)MAX(cfg->progress_ms, 10u) * NS_PER_MS;
	next_progress = start + progress_ns;
	r.last_progress_ns = start;
	warm_done = !with_load;
	if (r.have_probe)
		r.probe.next_send = start;
	for (unsigned int i = 0; with_load && i < cfg->streams && !r.err; i++)
		if (stream_start(&r, &r.streams[i]) < 0)
			fail(&r, -ENOMEM, "%s stream %u: cannot start a transfer", load_name(&r),
			     i + 1);

	for (now = mono_ns(); !r.err; now = mono_ns()) {
		int64_t deadline = end;

		if (cancelled(&r)) {
			fail(&r, -ECANCELED, "measurement interrupted");
			break;
		}
		if (now >= end)
			break;
		if (r.have_probe && now >= r.probe.next_send) {
			probe_send(&r);
			/* On a fixed grid, skipping slots missed rather than bunching them. */
			r.probe.next_send += r.probe.interval_ns;
			if (r.probe.next_send <= now)
				r.probe.next_send =
					now + r.probe.interval_ns -
					(now - r.probe.next_send) % r.probe.interval_ns;
		}
		if (!warm_done && now >= warm) {
			for (unsigned int i = 0; i < cfg->streams; i++)
				r.streams[i].warm_bytes = stream_bytes(&r.streams[i]);
			warm = now;
			warm_done = true;
		}
		if (cfg->progress && now >= next_progress) {
			report_progress(&r, start, now);
			next_progress += progress_ns;
			if (next_progress <= now)
				next_progress = now + progress_ns;
		}
		if (r.have_probe && r.probe.next_send < deadline)
			deadline = r.probe.next_send;
		if (!warm_done && warm < deadline)
			deadline = warm;
		if (cfg->progress && next_progress < deadline)
			deadline = next_progress;
		wait_events(&r, deadline);
		if (r.multi && !r.err)
			load_perform(&r);
	}
	if (r.err)
		goto out;

	stop = now;
	for (unsigned int i = 0; with_load && i < cfg->streams; i++)
		r.streams[i].end_bytes = stream_bytes(&r.streams[i]);
	/* The load ends here, not after the probes' drain. */
	load_stop(&r);
	/* Echoes still on their way: wait for them up to their timeout. */
	while (r.have_probe && !r.err) {
		const struct sent_probe *last;

		now = mono_ns();
		if (probe_drained(&r.probe, now))
			break;
		if (cancelled(&r)) {
			fail(&r, -ECANCELED, "measurement interrupted");
			break;
		}
		last = &g_array_index(r.probe.sent, struct sent_probe, r.probe.sent->len - 1);
		wait_events(&r, last->mono_ns + r.probe.timeout_ns);
	}
	if (!r.err)
		*out = collect(&r, start, warm, stop);
out:
	if (r.have_probe)
		probe_close(&r.probe);
	load_close(&r);
	if (curl_up)
		curl_global_cleanup();
	return r.err;
}
