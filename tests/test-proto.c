/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tune/serve protocol's codec (proto/tune.h): the probe datagram byte for
 * byte, its round trip, every length short and long, a wrong magic; which
 * datagrams the echo answers; the load URLs.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "proto/tune.h"

#define check(cond, ...)                                  \
	do {                                              \
		if (!(cond))                              \
			g_test_fail_printf(__VA_ARGS__);  \
	} while (0)

static const struct tune_probe probes[] = {
	{ 0, 0, 0 },
	{ 0x01020304, 5, UINT64_C(0x1122334455667788) },
	{ UINT32_MAX, UINT32_MAX, UINT64_MAX },
	{ 0x80000000, 1, UINT64_C(1700000000123456789) },
};

static bool same_probe(const struct tune_probe *a, const struct tune_probe *b)
{
	return a->token == b->token && a->seq == b->seq && a->sent_ns == b->sent_ns;
}

/* Byte for byte: what a capture shows, and what ICMP and UDP echoes carry back. */
static void test_layout(void)
{
	static const uint8_t want[TUNE_PROBE_SIZE] = {
		0x77, 0x67, 0x73, 0x70, /* "wgsp" */
		0x01, 0x02, 0x03, 0x04, /* token */
		0x00, 0x00, 0x00, 0x05, /* seq */
		0x00, 0x00, 0x00, 0x00, /* reserved */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* sent_ns */
	};
	uint8_t buf[TUNE_PROBE_SIZE];

	memset(buf, 0xaa, sizeof(buf));
	g_assert_cmpint(tune_probe_encode(&probes[1], buf, sizeof(buf)), ==, 0);
	g_assert_cmpmem(buf, sizeof(buf), want, sizeof(want));
	g_assert_cmpint(TUNE_PROBE_SIZE, <=, TUNE_UDP_MAX);
}

static void test_roundtrip(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(probes); i++) {
		uint8_t buf[TUNE_PROBE_SIZE];
		struct tune_probe back;

		check(tune_probe_encode(&probes[i], buf, sizeof(buf)) == 0, "row %zu: encode", i);
		check(tune_probe_parse(buf, sizeof(buf), &back) == 0, "row %zu: parse", i);
		check(same_probe(&probes[i], &back), "row %zu: came back different", i);
	}
}

/* Shorter than a probe: refused, *out untouched; longer: the probe, the rest ignored. */
static void test_lengths(void)
{
	uint8_t buf[TUNE_UDP_MAX * 4];

	memset(buf, 0x5a, sizeof(buf));
	g_assert_cmpint(tune_probe_encode(&probes[1], buf, sizeof(buf)), ==, 0);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		struct tune_probe out = { 7, 7, 7 }, untouched = out;
		/* A heap copy of exactly len bytes: ASan sees a read past it. */
		uint8_t *copy = g_memdup2(buf, len);
		int r = tune_probe_parse(copy, len, &out);

		if (len < TUNE_PROBE_SIZE) {
			check(r == -EBADMSG, "len %zu: %d, not -EBADMSG", len, r);
			check(same_probe(&out, &untouched), "len %zu: *out written", len);
		} else {
			check(r == 0, "len %zu: %d", len, r);
			check(same_probe(&out, &probes[1]), "len %zu: wrong probe", len);
		}
		g_free(copy);
	}
}

/* Every bit of the magic matters; the reserved word does not. */
static void test_magic(void)
{
	uint8_t good[TUNE_PROBE_SIZE];
	struct tune_probe out;

	g_assert_cmpint(tune_probe_encode(&probes[1], good, sizeof(good)), ==, 0);
	for (size_t bit = 0; bit < 32; bit++) {
		uint8_t buf[TUNE_PROBE_SIZE];

		memcpy(buf, good, sizeof(buf));
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		check(tune_probe_parse(buf, sizeof(buf), &out) == -EBADMSG,
		      "magic with bit %zu flipped accepted", bit);
	}
	for (size_t i = 12; i < 16; i++) {
		uint8_t buf[TUNE_PROBE_SIZE];

		memcpy(buf, good, sizeof(buf));
		buf[i] = 0xff;
		check(tune_probe_parse(buf, sizeof(buf), &out) == 0 &&
			      same_probe(&out, &probes[1]),
		      "reserved byte %zu set: not read as the same probe", i);
	}
}

/* Too small a buffer: -ENOBUFS and not a byte written. */
static void test_encode_small(void)
{
	for (size_t size = 0; size <= TUNE_PROBE_SIZE; size++) {
		uint8_t buf[TUNE_PROBE_SIZE + 1];
		int r;

		memset(buf, 0xcc, sizeof(buf));
		r = tune_probe_encode(&probes[1], buf, size);
		if (size < TUNE_PROBE_SIZE) {
			check(r == -ENOBUFS, "size %zu: %d, not -ENOBUFS", size, r);
			for (size_t i = 0; i < sizeof(buf); i++)
				check(buf[i] == 0xcc, "size %zu: byte %zu written", size, i);
		} else {
			check(r == 0, "size %zu: %d", size, r);
		}
		check(buf[TUNE_PROBE_SIZE] == 0xcc, "size %zu: wrote past the probe", size);
	}
}

static void test_echo_accept(void)
{
	static const struct {
		size_t len;
		uint16_t from, own;
		bool want;
	} cases[] = {
		{ 0, 40000, 4780, true }, /* the echo does not read what it returns */
		{ TUNE_PROBE_SIZE, 40000, 4780, true },
		{ TUNE_UDP_MAX, 40000, 4780, true },
		{ TUNE_UDP_MAX + 1, 40000, 4780, false },
		{ 65507, 40000, 4780, false },
		{ 16, 1024, 4780, true },
		{ 16, 1023, 4780, false }, /* a service: echo, chargen, DNS */
		{ 16, 7, 4780, false },
		{ 16, 53, 4780, false },
		{ 16, 0, 4780, false },
		{ 16, 4780, 4780, false }, /* another echo */
		{ 16, 4780, 5000, true },
		{ 16, 65535, 65535, false },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		check(tune_echo_accept(cases[i].len, cases[i].from, cases[i].own) == cases[i].want,
		      "%zu bytes from port %u to %u: want %s", cases[i].len, cases[i].from,
		      cases[i].own, cases[i].want ? "an answer" : "none");
}

static void test_url(void)
{
	static const struct {
		const char *host;
		uint16_t port;
		bool upload;
		unsigned int seconds;
		const char *want;
	} cases[] = {
		{ "10.0.0.1", TUNE_PORT, false, 30, "http://10.0.0.1:4780/download?seconds=30" },
		{ "10.0.0.1", TUNE_PORT, true, 30, "http://10.0.0.1:4780/upload?seconds=30" },
		{ "fd00::1", 8080, false, 5, "http://[fd00::1]:8080/download?seconds=5" },
		{ "peer.example", 1, true, 0, "http://peer.example:1/upload" },
		{ "fe80::1%wg0", 65535, false, 4294967295u,
		  "http://[fe80::1%wg0]:65535/download?seconds=4294967295" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		size_t need = strlen(cases[i].want) + 1;
		char buf[128];

		check(tune_url(buf, sizeof(buf), cases[i].host, cases[i].port, cases[i].upload,
			       cases[i].seconds) == 0 &&
			      !strcmp(buf, cases[i].want),
		      "row %zu: '%s', not '%s'", i, buf, cases[i].want);
		/* Every smaller buffer is too small, and the exact one is enough. */
		for (size_t size = 0; size <= need; size++) {
			char *b = size ? g_malloc(size) : NULL;
			int r = tune_url(b, size, cases[i].host, cases[i].port, cases[i].upload,
					 cases[i].seconds);

			check(r == (size < need ? -ENOBUFS : 0), "row %zu, size %zu: %d", i, size,
			      r);
			g_free(b);
		}
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);

	g_test_add_func("/proto/probe/layout", test_layout);
	g_test_add_func("/proto/probe/roundtrip", test_roundtrip);
	g_test_add_func("/proto/probe/lengths", test_lengths);
	g_test_add_func("/proto/probe/magic", test_magic);
	g_test_add_func("/proto/probe/encode-small", test_encode_small);
	g_test_add_func("/proto/echo/accept", test_echo_accept);
	g_test_add_func("/proto/url", test_url);

	return g_test_run();
}
