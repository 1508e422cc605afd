// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "util/addr.h"

const char *addr_str(const struct sockaddr *sa, bool with_port, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	const void *a;
	unsigned int port;

	if (sa && sa->sa_family == AF_INET) {
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		port = ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	} else if (sa && sa->sa_family == AF_INET6) {
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		port = ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	} else {
		snprintf(buf, size, "?");
		return buf;
	}
	inet_ntop(sa->sa_family, a, ip, sizeof(ip));
	if (!with_port)
		snprintf(buf, size, "%s", ip);
	else if (sa->sa_family == AF_INET6)
		snprintf(buf, size, "[%s]:%u", ip, port);
	else
		snprintf(buf, size, "%s:%u", ip, port);
	return buf;
}

int addr_parse(const char *s, int *family, uint8_t addr[16])
{
	int f = strchr(s, ':') ? AF_INET6 : AF_INET;
	uint8_t a[16];

	if (inet_pton(f, s, a) != 1)
		return -EINVAL;
	*family = f;
	memcpy(addr, a, f == AF_INET6 ? 16 : 4);
	return 0;
}
