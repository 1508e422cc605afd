/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for the tune/serve protocol's codec (proto/tune.h): the
 * probe parser reads what comes back from the network, and serve's echo
 * turns what comes in into its answer. Beyond not crashing: what the parser
 * accepts must encode back to the same bytes (the reserved bytes aside, and
 * the version of a sender older than it) and parse again to the same probe;
 * what it refuses must be short, carry another magic, a newer version or
 * another type. Only a request is answered, by changing its type byte alone.
 * The echo's rule and the URL builder get the same bytes as lengths, ports
 * and a host.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/tune.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void check_probe(const uint8_t *data, size_t size)
{
	/* A heap copy of exactly size bytes: ASan sees a read past it. */
	uint8_t *copy = malloc(size ? size : 1);
	uint8_t back[TUNE_PROBE_TIMED_SIZE];
	struct tune_probe p, again;
	bool ours;
	int r;

	require(copy);
	memcpy(copy, data, size);
	ours = size >= TUNE_PROBE_SIZE && be32(copy) == TUNE_PROBE_MAGIC;
	r = tune_probe_parse(copy, size, &p);
	if (r < 0) {
		require(!ours || (r == -EPROTONOSUPPORT) == (copy[12] > TUNE_PROBE_VERSION));
		require(!ours || r == -EPROTONOSUPPORT || (r == -EBADMSG && copy[13] > 1));
		require(ours || r == -EBADMSG);
		free(copy);
		return;
	}
	require(ours && copy[12] <= TUNE_PROBE_VERSION && copy[13] <= 1);
	require(tune_probe_encode(&p, back, sizeof(back)) == 0);
	require(memcmp(back, copy, 12) == 0);
	require(back[12] == TUNE_PROBE_VERSION && back[13] == copy[13]);
	require(memcmp(back + 16, copy + 16, 8) == 0);
	/* timed: flagged and long enough, and then the times read are the bytes there */
	require(p.timed == ((copy[14] & TUNE_PROBE_TIMED) && size >= TUNE_PROBE_TIMED_SIZE));
	require(!p.timed || memcmp(back + 24, copy + 24, 16) == 0);
	require(p.timed || (!p.rx_ns && !p.tx_ns));
	require(tune_probe_parse(back, sizeof(back), &again) == 0);
	require(again.token == p.token && again.seq == p.seq && again.type == p.type &&
		again.sent_ns == p.sent_ns && again.timed == p.timed && again.rx_ns == p.rx_ns &&
		again.tx_ns == p.tx_ns);
	free(copy);
}

/*
 * Only a request is answered, in place: its type byte the only change, and a
 * timed request's times (bytes 24-39), which become the answerer's.
 */
static void check_answer(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct tune_probe p;
	bool request;
	int r;

	require(copy);
	memcpy(copy, data, size);
	request = tune_probe_parse(data, size, &p) == 0 && p.type == TUNE_PROBE_REQUEST;
	r = tune_probe_answer(copy, size, UINT64_C(0x0101010101010101), UINT64_C(0x0202020202020202));
	require((r == 0) == request);
	for (size_t i = 0; i < size; i++) {
		if (r == 0 && p.timed && i >= 24 && i < TUNE_PROBE_TIMED_SIZE)
			require(copy[i] == (i < 32 ? 0x01 : 0x02));
		else
			require(copy[i] == (r == 0 && i == 13 ? TUNE_PROBE_ANSWER : data[i]));
	}
	/* an answer is never answered */
	require(r < 0 || tune_probe_answer(copy, size, 1, 2) == -EBADMSG);
	free(copy);
}

static void check_echo(const uint8_t *data, size_t size)
{
	uint16_t from = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;
	uint16_t own = size >= 4 ? (uint16_t)(data[2] << 8 | data[3]) : 0;
	bool yes = tune_echo_accept(size, from, own);

	require(yes == (size <= TUNE_UDP_MAX && from >= 1024 && from != own));
}

/* The rest of the bytes as a host, into a buffer of every size up to the URL's. */
static void check_url(const uint8_t *data, size_t size)
{
	char *host, full[1024];
	uint16_t port;
	bool upload;
	unsigned int seconds;
	size_t need;
	int r;

	if (size < 4 || size > 512)
		return;
	port = (uint16_t)(data[0] << 8 | data[1]);
	upload = data[2] & 1;
	seconds = data[3];
	host = strndup((const char *)data + 4, size - 4);
	require(host);
	require(tune_url(full, sizeof(full), host, port, upload, seconds) == 0);
	need = strlen(full) + 1;
	for (size_t len = need - 1; len <= need; len++) {
		char *buf = malloc(len);

		require(buf);
		r = tune_url(buf, len, host, port, upload, seconds);
		require(r == (len < need ? -ENOBUFS : 0));
		require(strlen(buf) < len && strncmp(buf, full, len - 1) == 0);
		free(buf);
	}
	free(host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_probe(data, size);
	check_answer(data, size);
	check_echo(data, size);
	check_url(data, size);
	return 0;
}
