// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"
#include "proto/tune.h"

_Static_assert(TUNE_PROBE_SIZE <= TUNE_UDP_MAX, "a probe must fit the echo");

/* Where the fields are (tune.h has the whole layout). */
enum { OFF_VERSION = 12, OFF_TYPE = 13, OFF_FLAGS = 14, OFF_RX = 24, OFF_TX = 32 };

_Static_assert(TUNE_PROBE_TIMED_SIZE <= TUNE_UDP_MAX, "a timed probe must fit the echo");
_Static_assert(OFF_TX + 8 == TUNE_PROBE_TIMED_SIZE, "the times end a timed probe");

int tune_probe_encode(const struct tune_probe *p, void *buf, size_t size)
{
	uint8_t *b = buf;

	if (size < (p->timed ? TUNE_PROBE_TIMED_SIZE : TUNE_PROBE_SIZE))
		return -ENOBUFS;
	if (p->type != TUNE_PROBE_REQUEST && p->type != TUNE_PROBE_ANSWER)
		return -EINVAL;
	put_be32(b, TUNE_PROBE_MAGIC);
	put_be32(b + 4, p->token);
	put_be32(b + 8, p->seq);
	b[OFF_VERSION] = TUNE_PROBE_VERSION;
	b[OFF_TYPE] = (uint8_t)p->type;
	b[OFF_FLAGS] = p->timed ? TUNE_PROBE_TIMED : 0;
	b[15] = 0;
	put_be64(b + 16, p->sent_ns);
	if (p->timed) {
		put_be64(b + OFF_RX, p->rx_ns);
		put_be64(b + OFF_TX, p->tx_ns);
	}
	return 0;
}

/* a timed probe: flagged, and long enough for the times */
static bool timed(const uint8_t *b, size_t len)
{
	return (b[OFF_FLAGS] & TUNE_PROBE_TIMED) && len >= TUNE_PROBE_TIMED_SIZE;
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
		.timed = timed(b, len),
		.rx_ns = timed(b, len) ? get_be64(b + OFF_RX) : 0,
		.tx_ns = timed(b, len) ? get_be64(b + OFF_TX) : 0,
	};
	return 0;
}

int tune_probe_answer(void *buf, size_t len, uint64_t rx_ns, uint64_t tx_ns)
{
	uint8_t *b = buf;
	struct tune_probe p;
	int r = tune_probe_parse(buf, len, &p);

	if (r < 0)
		return r;
	if (p.type != TUNE_PROBE_REQUEST)
		return -EBADMSG;
	b[OFF_TYPE] = TUNE_PROBE_ANSWER;
	if (p.timed) {
		put_be64(b + OFF_RX, rx_ns);
		put_be64(b + OFF_TX, tx_ns);
	}
	return 0;
}

uint64_t tune_stamp_offset_ns(void)
{
	static uint64_t offset;

	if (!offset) {
		uint64_t r = 0;
		struct timespec ts;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r)) {
			/* no entropy yet: the realtime clock's nanoseconds still hide the uptime */
			clock_gettime(CLOCK_REALTIME, &ts);
			r = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec;
		}
		offset = (UINT64_C(1) << 40) + r % ((UINT64_C(1) << 50) - (UINT64_C(1) << 40));
	}
	return offset;
}

uint64_t tune_stamp_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + tune_stamp_offset_ns();
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
