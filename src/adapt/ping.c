// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "adapt/ping.h"

struct adapt_ping {
	int fd;
	int family;
	bool raw; /* a raw socket: the IPv4 header comes first, others' echoes come too */
	uint16_t ident; /* raw only: ours (a ping socket's is its port, set by the kernel) */
};

int adapt_ping_open(int family, struct adapt_ping **out)
{
	int proto = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	struct adapt_ping *p;
	int fd, err;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->family = family;
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		fd = socket(family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
		p->raw = fd >= 0;
	}
	if (fd < 0) {
		err = errno == EACCES ? -EPERM : -errno;
		free(p);
		return err;
	}
	if (p->raw && getrandom(&p->ident, sizeof(p->ident), 0) != sizeof(p->ident))
		p->ident = (uint16_t)getpid();
	if (p->raw && family == AF_INET6) {
		struct icmp6_filter f;

		ICMP6_FILTER_SETBLOCKALL(&f);
		ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &f);
		setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f));
	}
	p->fd = fd;
	*out = p;
	return 0;
}

void adapt_ping_free(struct adapt_ping *p)
{
	if (!p)
		return;
	close(p->fd);
	free(p);
}

int adapt_ping_fd(const struct adapt_ping *p)
{
	return p->fd;
}

bool adapt_ping_raw(const struct adapt_ping *p)
{
	return p->raw;
}

/* RFC 1071's checksum, for IPv4's ICMP on a raw socket (the kernel does ICMPv6's). */
static uint16_t icmp_sum(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

int adapt_ping_send(struct adapt_ping *p, const uint8_t *addr, uint16_t seq)
{
	/* type, code, checksum, ident, seq; and 8 bytes that say who sent it */
	uint8_t pkt[16] = { p->family == AF_INET ? ICMP_ECHO : ICMP6_ECHO_REQUEST, 0 };
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	uint16_t id = htons(p->ident), sq = htons(seq);
	const struct sockaddr *sa;
	socklen_t len;

	memcpy(pkt + 4, &id, 2);
	memcpy(pkt + 6, &sq, 2);
	memcpy(pkt + 8, "wgshape", 8);
	if (p->family == AF_INET) {
		uint16_t sum = icmp_sum(pkt, sizeof(pkt));

		memcpy(pkt + 2, &sum, 2);
		memcpy(&in.sin_addr, addr, 4);
		sa = (const struct sockaddr *)&in;
		len = sizeof(in);
	} else {
		memcpy(&in6.sin6_addr, addr, 16);
		sa = (const struct sockaddr *)&in6;
		len = sizeof(in6);
	}
	if (sendto(p->fd, pkt, sizeof(pkt), 0, sa, len) < 0)
		return -errno;
	return 0;
}

int adapt_ping_read(struct adapt_ping *p, uint16_t *seq, uint8_t from[16])
{
	uint8_t buf[1500];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const uint8_t *icmp = buf;
	ssize_t n = recvfrom(p->fd, buf, sizeof(buf), 0, (struct sockaddr *)&ss, &sl);
	uint16_t id, sq;

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (p->raw && p->family == AF_INET) {
		size_t hl = n > 0 ? (size_t)(buf[0] & 0x0f) * 4 : 0;

		if (hl < 20 || (size_t)n < hl)
			return 2;
		icmp += hl;
		n -= (ssize_t)hl;
	}
	if (n < 8)
		return 2;
	if (icmp[0] != (p->family == AF_INET ? ICMP_ECHOREPLY : ICMP6_ECHO_REPLY))
		return 2;
	memcpy(&id, icmp + 4, 2);
	memcpy(&sq, icmp + 6, 2);
	if (p->raw && ntohs(id) != p->ident)
		return 2; /* another program's ping */
	*seq = ntohs(sq);
	memset(from, 0, 16);
	if (ss.ss_family == AF_INET)
		memcpy(from, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	else if (ss.ss_family == AF_INET6)
		memcpy(from, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	return 1;
}
