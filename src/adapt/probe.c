// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "adapt/probe.h"
#include "proto/tune.h"

struct sent {
	uint32_t seq;
	uint64_t at_ns; /* 0: free, or answered */
};

struct adapt_probe {
	int fd;
	uint32_t token;
	uint32_t seq; /* the next to send */
	struct sent sent[ADAPT_PROBE_KEPT]; /* by seq % ADAPT_PROBE_KEPT */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void adapt_owd_compute(struct adapt_owd *o)
{
	uint64_t rtt = o->back_ns - o->sent_ns, held = o->tx_ns - o->rx_ns;

	/*
	 * A far end that gave no times, times that go backwards, or a probe
	 * held longer than its whole round trip took, gave none: garbage
	 * (tx - rx past 2^63 overflowed here) that would make the delays so.
	 */
	o->stamped = o->rx_ns && o->tx_ns >= o->rx_ns && held <= rtt;
	if (!o->stamped)
		held = 0;
	/* unsigned, which wraps: the far end's clock is any offset from ours */
	o->rtt_ns = (int64_t)(rtt - held);
	o->up_ns = o->stamped ? (int64_t)(o->rx_ns - o->sent_ns) : 0;
	o->down_ns = o->stamped ? (int64_t)(o->back_ns - o->tx_ns) : 0;
}

int adapt_probe_open(const char *ifname, const char *addr, unsigned int port,
		     struct adapt_probe **out)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	const struct sockaddr *sa;
	socklen_t len;
	struct adapt_probe *p;
	int fd, r;

	if (!port || port > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, addr, &in.sin_addr) == 1) {
		sa = (const struct sockaddr *)&in;
		len = sizeof(in);
	} else if (inet_pton(AF_INET6, addr, &in6.sin6_addr) == 1) {
		sa = (const struct sockaddr *)&in6;
		len = sizeof(in6);
	} else {
		return -EINVAL;
	}
	fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if ((ifname && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname,
				  (socklen_t)strlen(ifname) + 1) < 0) ||
	    connect(fd, sa, len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->fd = fd;
	if (getrandom(&p->token, sizeof(p->token), 0) != sizeof(p->token))
		p->token = (uint32_t)mono_ns() ^ (uint32_t)getpid();
	*out = p;
	return 0;
}

void adapt_probe_free(struct adapt_probe *p)
{
	if (!p)
		return;
	close(p->fd);
	free(p);
}

int adapt_probe_fd(const struct adapt_probe *p)
{
	return p->fd;
}

int adapt_probe_send(struct adapt_probe *p)
{
	uint8_t buf[TUNE_PROBE_TIMED_SIZE];
	struct sent *s = &p->sent[p->seq % ADAPT_PROBE_KEPT];
	uint64_t now = mono_ns();
	struct timespec real;

	clock_gettime(CLOCK_REALTIME, &real);
	tune_probe_encode(&(struct tune_probe){
				  .token = p->token,
				  .seq = p->seq,
				  .type = TUNE_PROBE_REQUEST,
				  .sent_ns = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec,
				  .timed = true,
			  },
			  buf, sizeof(buf));
	if (send(p->fd, buf, sizeof(buf), MSG_DONTWAIT) < 0)
		return -errno;
	*s = (struct sent){ .seq = p->seq, .at_ns = now };
	p->seq++;
	return 0;
}

int adapt_probe_read(struct adapt_probe *p, struct adapt_owd *out)
{
	uint8_t buf[TUNE_UDP_MAX + 1];

	for (;;) {
		ssize_t n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
		uint64_t back = mono_ns();
		struct tune_probe a;
		struct sent *s;

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		if (tune_probe_parse(buf, (size_t)n, &a) < 0 || a.type != TUNE_PROBE_ANSWER ||
		    a.token != p->token)
			continue;
		s = &p->sent[a.seq % ADAPT_PROBE_KEPT];
		if (s->seq != a.seq || !s->at_ns)
			continue; /* not one of ours still kept, or answered already */
		*out = (struct adapt_owd){
			.seq = a.seq,
			.sent_ns = s->at_ns,
			.back_ns = back,
			.rx_ns = a.timed ? a.rx_ns : 0,
			.tx_ns = a.timed ? a.tx_ns : 0,
		};
		s->at_ns = 0;
		adapt_owd_compute(out);
		return 1;
	}
}
