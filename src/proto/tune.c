// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "proto/tune.h"

_Static_assert(TUNE_PROBE_SIZE <= TUNE_UDP_MAX, "a probe must fit the echo");

/* Where the version and type bytes are (tune.h has the whole layout). */
enum { OFF_VERSION = 12, OFF_TYPE = 13 };

int tune_probe_encode(const struct tune_probe *p, void *buf, size_t size)
{
	uint8_t *b = buf;

	if (size < TUNE_PROBE_SIZE)
		return -ENOBUFS;
	if (p->type != TUNE_PROBE_REQUEST && p->type != TUNE_PROBE_ANSWER)
		return -EINVAL;
	put_be32(b, TUNE_PROBE_MAGIC);
	put_be32(b + 4, p->token);
	put_be32(b + 8, p->seq);
	b[OFF_VERSION] = TUNE_PROBE_VERSION;
	b[OFF_TYPE] = (uint8_t)p->type;
	b[14] = b[15] = 0;
	put_be64(b + 16, p->sent_ns);
	return 0;
}

int tune_probe_parse(const void *buf, size_t len, struct tune_probe *out)
{
	const uint8_t *b = buf;

	if (len < TUNE_PROBE_SIZE || get_be32(b) != TUNE_PROBE_MAGIC)
		return -EBADMSG;
	if (b[OFF_VERSION] > TUNE_PROBE_VERSION)
		return -EPROTONOSUPPORT;
	if (b[OFF_TYPE] != TUNE_PROBE_REQUEST && b[OFF_TYPE] != TUNE_PROBE_ANSWER)
		return -EBADMSG;
	*out = (struct tune_probe){
		.token = get_be32(b + 4),
		.seq = get_be32(b + 8),
		.type = (enum tune_probe_type)b[OFF_TYPE],
		.sent_ns = get_be64(b + 16),
	};
	return 0;
}

int tune_probe_answer(void *buf, size_t len)
{
	struct tune_probe p;
	int r = tune_probe_parse(buf, len, &p);

	if (r < 0)
		return r;
	if (p.type != TUNE_PROBE_REQUEST)
		return -EBADMSG;
	((uint8_t *)buf)[OFF_TYPE] = TUNE_PROBE_ANSWER;
	return 0;
}

bool tune_echo_accept(size_t len, uint16_t from_port, uint16_t own_port)
{
	return len <= TUNE_UDP_MAX && from_port >= 1024 && from_port != own_port;
}

int tune_url(char *buf, size_t size, const char *host, uint16_t port, bool upload,
	     unsigned int seconds)
{
	const char *path = upload ? TUNE_PATH_UPLOAD : TUNE_PATH_DOWNLOAD;
	bool v6 = strchr(host, ':') != NULL;
	char query[32] = "";
	int n;

	if (seconds)
		snprintf(query, sizeof(query), "?" TUNE_ARG_SECONDS "=%u", seconds);
	n = snprintf(buf, size, "http://%s%s%s:%u%s%s", v6 ? "[" : "", host, v6 ? "]" : "", port,
		     path, query);
	if (n < 0 || (size_t)n >= size)
		return -ENOBUFS;
	return 0;
}
