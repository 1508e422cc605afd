/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tune/serve protocol's codec (proto/tune.h): the probe datagram byte for
 * byte, its round trip, every length short and long, a wrong magic, its
 * version and type; which datagrams the echo answers, and with what; the load
 * URLs.
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
	{ 0, 0, TUNE_PROBE_REQUEST, 0 },
	{ 0x01020304, 5, TUNE_PROBE_REQUEST, UINT64_C(0x1122334455667788) },
	{ UINT32_MAX, UINT32_MAX, TUNE_PROBE_ANSWER, UINT64_MAX },
	{ 0x80000000, 1, TUNE_PROBE_ANSWER, UINT64_C(1700000000123456789) },
};

static bool same_probe(const struct tune_probe *a, const struct tune_probe *b)
{
	return a->token == b->token && a->seq == b->seq && a->type == b->type &&
	       a->sent_ns == b->sent_ns;
}

/* Byte for byte: what a capture shows, and what ICMP and UDP echoes carry back. */
static void test_layout(void)
{
	static const uint8_t want[TUNE_PROBE_SIZE] = {
		0x77, 0x67, 0x73, 0x70, /* "wgsp" */
		0x01, 0x02, 0x03, 0x04, /* token */
		0x00, 0x00, 0x00, 0x05, /* seq */
		0x01, /* version */
		0x00, /* type: a request */
		0x00, 0x00, /* reserved */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* sent_ns */
	};
	struct tune_probe answer = probes[1];
	uint8_t buf[TUNE_PROBE_SIZE];

	memset(buf, 0xaa, sizeof(buf));
	g_assert_cmpint(tune_probe_encode(&probes[1], buf, sizeof(buf)), ==, 0);
	g_assert_cmpmem(buf, sizeof(buf), want, sizeof(want));
	g_assert_cmpint(TUNE_PROBE_SIZE, <=, TUNE_UDP_MAX);
	/* an answer differs in its type byte only */
	answer.type = TUNE_PROBE_ANSWER;
	g_assert_cmpint(tune_probe_encode(&answer, buf, sizeof(buf)), ==, 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		check(buf[i] == (i == 13 ? 0x01 : want[i]), "answer: byte %zu is %#x", i, buf[i]);
	/* no other type is sent */
	answer.type = (enum tune_probe_type)2;
	memset(buf, 0xaa, sizeof(buf));
	g_assert_cmpint(tune_probe_encode(&answer, buf, sizeof(buf)), ==, -EINVAL);
	for (size_t i = 0; i < sizeof(buf); i++)
		check(buf[i] == 0xaa, "type 2: byte %zu written", i);
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
		struct tune_probe out = { 7, 7, TUNE_PROBE_ANSWER, 7 }, untouched = out;
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

/* Every bit of the magic matters; the reserved bytes do not. */
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
	for (size_t i = 14; i < 16; i++) {
		uint8_t buf[TUNE_PROBE_SIZE];

		memcpy(buf, good, sizeof(buf));
		buf[i] = 0xff;
		check(tune_probe_parse(buf, sizeof(buf), &out) == 0 &&
			      same_probe(&out, &probes[1]),
		      "reserved byte %zu set: not read as the same probe", i);
	}
}

/*
 * The version and type bytes: every value of each. Version 0 is a sender
 * older than the field (bytes 12-15 zero: a request); a newer version than
 * ours is refused, as is a type that is neither.
 */
static void test_version_type(void)
{
	uint8_t good[TUNE_PROBE_SIZE];

	g_assert_cmpint(tune_probe_encode(&probes[1], good, sizeof(good)), ==, 0);
	for (unsigned int v = 0; v < 256; v++) {
		for (unsigned int t = 0; t < 256; t++) {
			struct tune_probe out = { 7, 7, TUNE_PROBE_ANSWER, 7 }, untouched = out;
			uint8_t buf[TUNE_PROBE_SIZE];
			int want = 0, r;

			if (v > TUNE_PROBE_VERSION)
				want = -EPROTONOSUPPORT;
			else if (t > TUNE_PROBE_ANSWER)
				want = -EBADMSG;

			memcpy(buf, good, sizeof(buf));
			buf[12] = (uint8_t)v;
			buf[13] = (uint8_t)t;
			r = tune_probe_parse(buf, sizeof(buf), &out);
			check(r == want, "version %u type %u: %d, not %d", v, t, r, want);
			if (r == 0)
				check(out.type == (enum tune_probe_type)t && out.seq == 5,
				      "version %u type %u: read as type %d", v, t, out.type);
			else
				check(same_probe(&out, &untouched), "version %u type %u: *out written",
				      v, t);
		}
	}
}

/*
 * A request becomes its answer in place, padding and version kept: exactly as
 * long, one byte different. Anything else is refused and left as it was: an
 * answer (which is how no two echoes can loop), a short or foreign datagram,
 * a version from the future.
 */
static void test_answer(void)
{
	uint8_t req[TUNE_UDP_MAX], buf[TUNE_UDP_MAX];
	struct tune_probe p;

	memset(req, 0x5a, sizeof(req));
	g_assert_cmpint(tune_probe_encode(&probes[1], req, sizeof(req)), ==, 0);
	for (size_t len = TUNE_PROBE_SIZE; len <= sizeof(req); len++) {
		uint8_t *copy = g_memdup2(req, len);

		check(tune_probe_answer(copy, len) == 0, "len %zu: request not answered", len);
		for (size_t i = 0; i < len; i++)
			check(copy[i] == (i == 13 ? TUNE_PROBE_ANSWER : req[i]),
			      "len %zu: byte %zu changed", len, i);
		check(tune_probe_parse(copy, len, &p) == 0 && p.type == TUNE_PROBE_ANSWER &&
			      p.token == probes[1].token && p.seq == probes[1].seq,
		      "len %zu: not the request's answer", len);
		/* and an answer is not answered */
		memcpy(buf, copy, len);
		check(tune_probe_answer(copy, len) == -EBADMSG, "len %zu: answer answered", len);
		check(!memcmp(buf, copy, len), "len %zu: answer changed", len);
		g_free(copy);
	}
	/* a request from a sender before the version field: answered, version kept */
	memcpy(buf, req, TUNE_PROBE_SIZE);
	buf[12] = 0;
	g_assert_cmpint(tune_probe_answer(buf, TUNE_PROBE_SIZE), ==, 0);
	g_assert_cmpint(buf[12], ==, 0);
	g_assert_cmpint(buf[13], ==, TUNE_PROBE_ANSWER);
	/* refused, untouched */
	static const struct {
		size_t len;
		size_t at; /* a byte set to val first */
		uint8_t val;
		int want;
	} bad[] = {
		{ TUNE_PROBE_SIZE - 1, 0, 0x77, -EBADMSG }, /* short */
		{ 0, 0, 0x77, -EBADMSG },
		{ TUNE_PROBE_SIZE, 0, 0x00, -EBADMSG }, /* magic */
		{ TUNE_PROBE_SIZE, 12, TUNE_PROBE_VERSION + 1, -EPROTONOSUPPORT },
		{ TUNE_PROBE_SIZE, 13, 2, -EBADMSG },
		{ TUNE_PROBE_SIZE, 13, 0xff, -EBADMSG },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		uint8_t *copy;

		memcpy(buf, req, sizeof(buf));
		buf[bad[i].at] = bad[i].val;
		copy = g_memdup2(buf, bad[i].len ? bad[i].len : 1);
		check(tune_probe_answer(copy, bad[i].len) == bad[i].want, "bad row %zu", i);
		check(!bad[i].len || !memcmp(copy, buf, bad[i].len), "bad row %zu: changed", i);
		g_free(copy);
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
	g_test_add_func("/proto/probe/version-type", test_version_type);
	g_test_add_func("/proto/probe/answer", test_answer);
	g_test_add_func("/proto/echo/accept", test_echo_accept);
	g_test_add_func("/proto/url", test_url);

	return g_test_run();
}
