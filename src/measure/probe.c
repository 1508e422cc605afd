// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Latency probes: ICMP echo (a ping socket, or a raw one) or wgshape serve's
 * UDP echo, one socket connected to the target. The payload is the protocol's
 * probe datagram (proto/tune.h), sent as a request. RTTs come from the kernel's
 * receive timestamps, so a busy loop does not inflate them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <glib.h>

#include "measure/internal.h"
#include "proto/tune.h"
#include "util/addr.h"

#ifndef ICMP_FILTER
#define ICMP_FILTER 1 /* SOL_RAW, linux/icmp.h (which clashes with netinet/ip_icmp.h) */
#endif
#define ICMP4_ECHOREPLY 0
#define ICMP4_ECHO 8

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
	char what[96]; /* "UDP echo 10.0.0.1 port 4780" for messages */
};

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

/* The target's address as messages show it: with the port for UDP. */
static const char *probe_addr_str(const struct probe *p, char *buf, size_t size)
{
	return addr_str((const struct sockaddr *)&p->addr, p->kind == MEASURE_PROBE_UDP, buf, size);
}

/* Raw sockets get every ICMP message, our own echo requests included on
 * some paths: let only echo replies through (and check type and id again). */
static void icmp_filter_replies(int fd, int family)
{
	if (family == AF_INET) {
		uint32_t block = ~(UINT32_C(1) << ICMP4_ECHOREPLY);

		(void)setsockopt(fd, SOL_RAW, ICMP_FILTER, &block, sizeof(block));
	} else {
		struct icmp6_filter f;

		ICMP6_FILTER_SETBLOCKALL(&f);
		ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &f);
		(void)setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f));
	}
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
			measure_fail(r, -ping_err,
				     "%s: no ping socket: %s "
				     "(net.ipv4.ping_group_range excludes gid %u?)",
				     p->what, g_strerror(ping_err), (unsigned int)getegid());
			return -1;
		}
	}
	fd = socket(p->family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd < 0) {
		int e = errno;

		if (ping_err)
			measure_fail(r, e == EPERM || e == EACCES ? -EPERM : -e,
				     "%s: no ping socket (%s; net.ipv4.ping_group_range "
				     "excludes gid %u) and no raw socket (%s; needs CAP_NET_RAW)",
				     p->what, g_strerror(ping_err), (unsigned int)getegid(),
				     g_strerror(e));
		else
			measure_fail(r, e == EACCES ? -EPERM : -e,
				     "%s: no raw socket: %s (needs CAP_NET_RAW)", p->what,
				     g_strerror(e));
		return -1;
	}
	p->raw = true;
	icmp_filter_replies(fd, p->family);
	return fd;
}

/* The socket, bound to the interface and connected to the resolved target. */
static int probe_socket(struct run *r, struct probe *p)
{
	const struct measure_config *cfg = r->cfg;
	int one = 1, e;

	if (p->kind == MEASURE_PROBE_UDP) {
		p->fd = socket(p->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (p->fd < 0) {
			measure_fail(r, -errno, "%s: socket: %s", p->what, g_strerror(errno));
			return r->err;
		}
	} else {
		p->fd = icmp_socket(r, p);
		if (p->fd < 0)
			return r->err;
	}
	e = bind_to_device(p->fd, cfg->ifname);
	if (e < 0) {
		measure_fail(r, e, "%s: binding to interface %s: %s", p->what, cfg->ifname,
			     g_strerror(-e));
		return e;
	}
	if (setsockopt(p->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		p->all_kernel_ts = false; /* fall back to the clock at reading */
	/* Connected: only the target's answers reach us, and errors it sends back
	 * (port unreachable) are reported to us. */
	if (connect(p->fd, (struct sockaddr *)&p->addr, p->addrlen) < 0) {
		char a[ADDR_STR_SIZE];

		e = -errno;
		measure_fail(r, e, "%s (%s): connect: %s", p->what, probe_addr_str(p, a, sizeof(a)),
			     g_strerror(-e));
		return e;
	}
	return 0;
}

int measure_probe_open(struct run *r)
{
	const struct measure_config *cfg = r->cfg;
	struct probe *p = g_new0(struct probe, 1);
	bool udp = cfg->probe == MEASURE_PROBE_UDP;
	int e;

	r->probe = p;
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
			measure_fail(r, e, "%s: no %s address", p->what,
				     measure_family_name(cfg->family));
		else
			measure_fail(r, e, "%s: %s", p->what, g_strerror(-e));
		return e;
	}
	return probe_socket(r, p);
}

void measure_probe_free(struct probe *p)
{
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	g_array_free(p->sent, TRUE);
	g_free(p);
}

int measure_probe_fd(const struct probe *p)
{
	return p->fd;
}

static bool probe_error_is_transient(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR || e == ENOMEM;
}

static void probe_hard_error(struct run *r, int e, const char *op)
{
	struct probe *p = r->probe;
	char a[ADDR_STR_SIZE];

	probe_addr_str(p, a, sizeof(a));
	if (e == ECONNREFUSED && p->kind == MEASURE_PROBE_UDP)
		measure_fail(r, -e,
			     "%s (%s): port unreachable: nothing listens there (is wgshape serve "
			     "running?)",
			     p->what, a);
	else
		measure_fail(r, -e, "%s (%s): %s: %s", p->what, a, op, g_strerror(e));
}

static void probe_send(struct run *r)
{
	struct probe *p = r->probe;
	struct sent_probe sp = { .rtt_ms = -1 };
	uint32_t seq = p->sent->len;
	uint8_t buf[sizeof(struct echo_hdr) + TUNE_PROBE_SIZE];
	size_t off = 0;
	ssize_t n;

	memset(buf, 0, sizeof(buf));
	if (p->kind == MEASURE_PROBE_ICMP) {
		struct echo_hdr *h = (struct echo_hdr *)buf;

		h->type = p->family == AF_INET6 ? ICMP6_ECHO_REQUEST : ICMP4_ECHO;
		h->id = htons(p->ident); /* a ping socket puts its own */
		h->seq = htons((uint16_t)seq);
		off = sizeof(*h);
	}
	sp.real_ns = measure_clock_ns(CLOCK_REALTIME);
	sp.mono_ns = measure_mono_ns();
	tune_probe_encode(&(struct tune_probe){ .token = p->token,
						.seq = seq,
						.type = TUNE_PROBE_REQUEST,
						.sent_ns = (uint64_t)sp.real_ns },
			  buf + off, TUNE_PROBE_SIZE);
	/* The kernel sums ICMPv6 and ping sockets itself; raw ICMPv4 is ours. */
	if (p->kind == MEASURE_PROBE_ICMP && p->family == AF_INET && p->raw)
		((struct echo_hdr *)buf)->cksum = inet_cksum(buf, off + TUNE_PROBE_SIZE);

	g_array_append_val(p->sent, sp);
	n = send(p->fd, buf, off + TUNE_PROBE_SIZE, MSG_DONTWAIT);
	if (n < 0 && !probe_error_is_transient(errno))
		probe_hard_error(r, errno, "send");
	/* A transient failure is a lost probe: the local queue was full. */
}

void measure_probe_begin(struct probe *p, int64_t start)
{
	p->next_send = start;
}

int64_t measure_probe_tick(struct run *r, int64_t now)
{
	struct probe *p = r->probe;

	if (now < p->next_send)
		return p->next_send;
	probe_send(r);
	/* On a fixed grid, skipping slots missed rather than bunching them. */
	p->next_send += p->interval_ns;
	if (p->next_send <= now)
		p->next_send = now + p->interval_ns - (now - p->next_send) % p->interval_ns;
	return p->next_send;
}

/* The ICMP header off an echo reply in *buf, or false when it is not one to us. */
static bool icmp_strip(const struct probe *p, const uint8_t **buf, size_t *len)
{
	const struct echo_hdr *h;

	if (p->family == AF_INET && p->raw) {
		/* IPv4 raw sockets hand us the IP header too. */
		size_t ihl;

		if (*len < 20 || ((*buf)[0] >> 4) != 4)
			return false;
		ihl = (size_t)((*buf)[0] & 0x0f) * 4;
		if (ihl < 20 || ihl > *len)
			return false;
		*buf += ihl;
		*len -= ihl;
	}
	if (*len < sizeof(*h))
		return false;
	h = (const struct echo_hdr *)*buf;
	if (h->type != (p->family == AF_INET6 ? ICMP6_ECHO_REPLY : ICMP4_ECHOREPLY) ||
	    h->code != 0)
		return false;
	/* A ping socket's replies are already matched on its id by the kernel. */
	if (p->raw && ntohs(h->id) != p->ident)
		return false;
	*buf += sizeof(*h);
	*len -= sizeof(*h);
	return true;
}

/*
 * The seq of an echo in buf, or false when it is not an answer to this run.
 * Over UDP only serve's answer counts (our request coming back is a loop or a
 * mirror, not the far end); an ICMP echo reply carries the request as sent.
 */
static bool probe_match(const struct probe *p, const uint8_t *buf, size_t len, uint32_t *seq)
{
	enum tune_probe_type want = TUNE_PROBE_ANSWER;
	struct tune_probe tp;

	if (p->kind == MEASURE_PROBE_ICMP) {
		if (!icmp_strip(p, &buf, &len))
			return false;
		want = TUNE_PROBE_REQUEST;
	}
	if (tune_probe_parse(buf, len, &tp) < 0 || tp.token != p->token || tp.type != want)
		return false;
	*seq = tp.seq;
	return true;
}

/* The kernel's receive time (CLOCK_REALTIME) of a message, -1 without one. */
static int64_t kernel_stamp(struct msghdr *mh)
{
	int64_t ns = -1;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			ns = (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
		}
	}
	return ns;
}

/* The echo of probe seq came in at kernel_ns (read at now): its RTT, or a loss if late. */
static void probe_answered(struct probe *p, uint32_t seq, int64_t kernel_ns, int64_t now)
{
	struct sent_probe *sp;
	int64_t user_rtt, rtt;

	if (seq >= p->sent->len)
		return;
	sp = &g_array_index(p->sent, struct sent_probe, seq);
	if (sp->rtt_ms >= 0)
		return; /* a duplicate */
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
		return; /* lost, as far as the statistics go */
	}
	sp->rtt_ms = (double)rtt / NS_PER_MS;
	p->received++;
	p->last_rtt = sp->rtt_ms;
}

void measure_probe_recv(struct run *r)
{
	struct probe *p = r->probe;

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
		int64_t now;
		uint32_t seq;
		ssize_t n;

		n = recvmsg(p->fd, &mh, MSG_DONTWAIT);
		now = measure_mono_ns(); /* after: the echo may have come in just now */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (!probe_error_is_transient(errno))
				probe_hard_error(r, errno, "receive");
			return;
		}
		if (probe_match(p, buf, (size_t)n, &seq))
			probe_answered(p, seq, kernel_stamp(&mh), now);
	}
}

int64_t measure_probe_last_deadline(const struct probe *p)
{
	const struct sent_probe *last =
		&g_array_index(p->sent, struct sent_probe, p->sent->len - 1);

	return last->mono_ns + p->timeout_ns;
}

bool measure_probe_drained(const struct probe *p, int64_t now)
{
	if (p->sent->len == 0 || p->received == p->sent->len)
		return true;
	return now >= measure_probe_last_deadline(p);
}

void measure_probe_progress(const struct probe *p, struct measure_progress *pr)
{
	pr->probes_sent = p->sent->len;
	pr->probes_received = p->received;
	pr->last_rtt_ms = p->last_rtt;
}

void measure_probe_collect(const struct probe *p, int64_t start, int64_t warm,
			   struct measure_result *res)
{
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
	probe_addr_str(p, res->probe_addr, sizeof(res->probe_addr));
}
