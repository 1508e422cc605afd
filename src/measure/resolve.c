// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Names of the far end to addresses, in the family the caller forces and
 * never another: the probes and the load must take the path tune proved.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <glib.h>

#include "measure/internal.h"

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

int measure_url_host_port(const char *url, char *host, size_t hostlen, uint16_t *port)
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

	r = measure_url_host_port(url, host, sizeof(host), &port);
	if (r < 0)
		return r;
	return measure_resolve(host, port, family, out, len);
}
