/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tune/serve protocol's codec (proto/tune.h): the probe datagram byte for
 * byte, its round trip, every length short and long, a wrong magic, its
 * version and type; which datagrams the echo answers, and with what; the load
 * URLs. The rate channel's codec (proto/rate.h) the same way: every type
 * and status, every short length, the magic, the versions, a status where
 * none may be, and which datagrams the server takes at all.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "proto/rate.h"
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

		check(tune_probe_answer(copy, len, 1, 2) == 0, "len %zu: request not answered", len);
		for (size_t i = 0; i < len; i++)
			check(copy[i] == (i == 13 ? TUNE_PROBE_ANSWER : req[i]),
			      "len %zu: byte %zu changed", len, i);
		check(tune_probe_parse(copy, len, &p) == 0 && p.type == TUNE_PROBE_ANSWER &&
			      p.token == probes[1].token && p.seq == probes[1].seq,
		      "len %zu: not the request's answer", len);
		/* and an answer is not answered */
		memcpy(buf, copy, len);
		check(tune_probe_answer(copy, len, 1, 2) == -EBADMSG, "len %zu: answer answered", len);
		check(!memcmp(buf, copy, len), "len %zu: answer changed", len);
		g_free(copy);
	}
	/* a request from a sender before the version field: answered, version kept */
	memcpy(buf, req, TUNE_PROBE_SIZE);
	buf[12] = 0;
	g_assert_cmpint(tune_probe_answer(buf, TUNE_PROBE_SIZE, 1, 2), ==, 0);
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
		check(tune_probe_answer(copy, bad[i].len, 1, 2) == bad[i].want, "bad row %zu", i);
		check(!bad[i].len || !memcmp(copy, buf, bad[i].len), "bad row %zu: changed", i);
		g_free(copy);
	}
}

/*
 * A timed probe: the flag, zeros for the times in the request, and the
 * answerer's times in its answer, nothing else changed; a flag on a probe too
 * short for the times is no timed probe (answered as a plain one).
 */
static void test_timed(void)
{
	static const uint8_t want[TUNE_PROBE_TIMED_SIZE] = {
		0x77, 0x67, 0x73, 0x70, /* "wgsp" */
		0x01, 0x02, 0x03, 0x04, /* token */
		0x00, 0x00, 0x00, 0x05, /* seq */
		0x01, /* version */
		0x00, /* type: a request */
		0x01, /* flags: timed */
		0x00, /* reserved */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* sent_ns */
		0, 0, 0, 0, 0, 0, 0, 0, /* rx_ns */
		0, 0, 0, 0, 0, 0, 0, 0, /* tx_ns */
	};
	struct tune_probe req = probes[1], p;
	uint8_t buf[TUNE_UDP_MAX], ans[TUNE_UDP_MAX];

	req.timed = true;
	g_assert_cmpint(tune_probe_encode(&req, buf, TUNE_PROBE_TIMED_SIZE - 1), ==, -ENOBUFS);
	memset(buf, 0xaa, sizeof(buf));
	g_assert_cmpint(tune_probe_encode(&req, buf, sizeof(buf)), ==, 0);
	g_assert_cmpmem(buf, TUNE_PROBE_TIMED_SIZE, want, sizeof(want));
	g_assert_cmpint(buf[TUNE_PROBE_TIMED_SIZE], ==, 0xaa);
	g_assert_cmpint(tune_probe_parse(buf, TUNE_PROBE_TIMED_SIZE, &p), ==, 0);
	g_assert_true(p.timed);
	g_assert_cmpuint(p.rx_ns, ==, 0);

	/* answered at any length from the timed size up: the times, the type, nothing else */
	for (size_t len = TUNE_PROBE_TIMED_SIZE; len <= TUNE_UDP_MAX; len++) {
		memcpy(ans, buf, len);
		g_assert_cmpint(tune_probe_answer(ans, len, UINT64_C(0x0102030405060708),
						  UINT64_C(0xa1a2a3a4a5a6a7a8)),
				==, 0);
		for (size_t i = 0; i < len; i++)
			if (i != 13 && (i < 24 || i >= TUNE_PROBE_TIMED_SIZE))
				check(ans[i] == buf[i], "len %zu: byte %zu changed", len, i);
		g_assert_cmpint(tune_probe_parse(ans, len, &p), ==, 0);
		check(p.type == TUNE_PROBE_ANSWER && p.timed && p.seq == req.seq &&
			      p.rx_ns == UINT64_C(0x0102030405060708) &&
			      p.tx_ns == UINT64_C(0xa1a2a3a4a5a6a7a8),
		      "len %zu: not the timed answer", len);
	}
	/* encode and parse agree on an answer's times */
	req.type = TUNE_PROBE_ANSWER;
	req.rx_ns = 7;
	req.tx_ns = 9;
	g_assert_cmpint(tune_probe_encode(&req, ans, sizeof(ans)), ==, 0);
	g_assert_cmpint(tune_probe_parse(ans, TUNE_PROBE_TIMED_SIZE, &p), ==, 0);
	g_assert_true(p.timed && p.rx_ns == 7 && p.tx_ns == 9);

	/* flagged but short: a plain probe, its bytes after the probe left alone */
	for (size_t len = TUNE_PROBE_SIZE; len < TUNE_PROBE_TIMED_SIZE; len++) {
		memcpy(ans, buf, len);
		g_assert_cmpint(tune_probe_parse(ans, len, &p), ==, 0);
		check(!p.timed && !p.rx_ns && !p.tx_ns, "len %zu: taken for timed", len);
		g_assert_cmpint(tune_probe_answer(ans, len, 1, 2), ==, 0);
		for (size_t i = 0; i < len; i++)
			check(ans[i] == (i == 13 ? TUNE_PROBE_ANSWER : buf[i]),
			      "len %zu: byte %zu changed", len, i);
	}
	/* a plain probe is never stamped, padding or not */
	req = probes[1];
	memset(buf, 0, sizeof(buf));
	g_assert_cmpint(tune_probe_encode(&req, buf, sizeof(buf)), ==, 0);
	g_assert_cmpint(tune_probe_answer(buf, TUNE_UDP_MAX, 1, 2), ==, 0);
	for (size_t i = TUNE_PROBE_SIZE; i < TUNE_UDP_MAX; i++)
		check(buf[i] == 0, "plain probe: byte %zu stamped", i);
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

/* ---- the rate channel (proto/rate.h) --------------------------------------- */

static const struct rate_msg rate_req = {
	.version = RATE_VERSION, .type = RATE_REQUEST, .status = RATE_NONE,
	.token = 0x01020304, .rate = UINT64_C(0x1122334455667788),
};

static bool same_msg(const struct rate_msg *a, const struct rate_msg *b)
{
	return a->version == b->version && a->type == b->type && a->status == b->status &&
	       a->token == b->token && a->lease == b->lease && a->rate == b->rate &&
	       a->fallback == b->fallback;
}

/* A message that no parse writes: one to see whether *out was touched. */
static const struct rate_msg rate_poison = {
	.version = 99, .type = RATE_ANSWER, .status = RATE_FAILED,
	.token = 7, .lease = 7, .rate = 7, .fallback = 7,
};

/* Byte for byte, as a capture shows it. */
static void test_rate_layout(void)
{
	static const uint8_t want[RATE_MSG_SIZE] = {
		0x77, 0x67, 0x73, 0x72, /* "wgsr" */
		0x01, /* version */
		0x01, /* type: an answer */
		0x02, /* status: clamped */
		0x00, /* reserved */
		0xde, 0xad, 0xbe, 0xef, /* token */
		0x00, 0x00, 0x00, 0xb4, /* lease: 180 s */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* rate */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x98, 0x96, 0x80, /* fallback: 10,000,000 */
	};
	struct rate_msg m = {
		.type = RATE_ANSWER, .status = RATE_CLAMPED, .token = 0xdeadbeef, .lease = 180,
		.rate = UINT64_C(0x1122334455667788), .fallback = 10000000,
	};
	uint8_t buf[RATE_MSG_SIZE + 1];

	memset(buf, 0xaa, sizeof(buf));
	/* version 0 in the struct: encode writes ours */
	g_assert_cmpint(rate_msg_encode(&m, buf, sizeof(buf)), ==, 0);
	g_assert_cmpmem(buf, RATE_MSG_SIZE, want, sizeof(want));
	g_assert_cmpint(buf[RATE_MSG_SIZE], ==, 0xaa);
	/* nor a version above ours: it is never sent */
	m.version = RATE_VERSION + 1;
	g_assert_cmpint(rate_msg_encode(&m, buf, sizeof(buf)), ==, 0);
	g_assert_cmpint(buf[4], ==, RATE_VERSION);
	/* the reserved byte is zero whatever was in the buffer */
	memset(buf, 0xff, sizeof(buf));
	g_assert_cmpint(rate_msg_encode(&m, buf, sizeof(buf)), ==, 0);
	g_assert_cmpint(buf[7], ==, 0);
}

/* Every type with every status it may carry comes back the same. */
static void test_rate_roundtrip(void)
{
	size_t n = 0;

	for (unsigned int t = RATE_REQUEST; t <= RATE_ANSWER; t++) {
		for (unsigned int s = 0; s < RATE_STATUS_MAX; s++) {
			struct rate_msg m = {
				.version = RATE_VERSION, .type = (enum rate_type)t,
				.status = (enum rate_status)s, .token = 0x80000001u * (s + 1),
				.lease = t ? 180 : 0, .rate = UINT64_MAX - s,
				.fallback = t ? UINT64_C(12500000) + s : 0,
			}, back = rate_poison;
			uint8_t buf[RATE_MSG_SIZE];
			int r = rate_msg_encode(&m, buf, sizeof(buf));

			if (t == RATE_REQUEST && s != RATE_NONE) {
				check(r == -EINVAL, "request with status %u encoded: %d", s, r);
				continue;
			}
			check(r == 0, "type %u status %u: encode %d", t, s, r);
			r = rate_msg_parse(buf, sizeof(buf), &back);
			check(r == 0, "type %u status %u: parse %d", t, s, r);
			check(same_msg(&m, &back), "type %u status %u: came back different", t, s);
			n++;
		}
	}
	/* a request, and an answer with each status */
	g_assert_cmpuint(n, ==, 1 + RATE_STATUS_MAX);
}

/* Every length short of a message refused, *out untouched; longer: the rest ignored. */
static void test_rate_lengths(void)
{
	uint8_t buf[RATE_MSG_MAX * 2];

	memset(buf, 0x5a, sizeof(buf));
	g_assert_cmpint(rate_msg_encode(&rate_req, buf, sizeof(buf)), ==, 0);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		struct rate_msg out = rate_poison;
		uint8_t *copy = g_memdup2(buf, len); /* exactly len: ASan sees a read past it */
		int r = rate_msg_parse(copy, len, &out);

		if (len < RATE_MSG_SIZE) {
			check(r == -EBADMSG, "len %zu: %d, not -EBADMSG", len, r);
			check(same_msg(&out, &rate_poison), "len %zu: *out written", len);
		} else {
			check(r == 0 && same_msg(&out, &rate_req), "len %zu: %d, or not the same",
			      len, r);
		}
		g_free(copy);
	}
}

/* Every bit of the magic matters; the reserved byte does not. */
static void test_rate_magic(void)
{
	uint8_t good[RATE_MSG_SIZE];
	struct rate_msg out;

	g_assert_cmpint(rate_msg_encode(&rate_req, good, sizeof(good)), ==, 0);
	for (size_t bit = 0; bit < 32; bit++) {
		uint8_t buf[RATE_MSG_SIZE];

		memcpy(buf, good, sizeof(buf));
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		out = rate_poison;
		check(rate_msg_parse(buf, sizeof(buf), &out) == -EBADMSG,
		      "magic with bit %zu flipped accepted", bit);
		check(same_msg(&out, &rate_poison), "bit %zu: *out written", bit);
	}
	/* the tune probe's magic is not ours */
	memcpy(good, "wgsp", 4);
	g_assert_cmpint(rate_msg_parse(good, sizeof(good), &out), ==, -EBADMSG);
	g_assert_cmpint(rate_msg_encode(&rate_req, good, sizeof(good)), ==, 0);
	for (unsigned int v = 1; v < 256; v++) {
		good[7] = (uint8_t)v;
		out = rate_poison;
		check(rate_msg_parse(good, sizeof(good), &out) == 0 && same_msg(&out, &rate_req),
		      "reserved byte %#x: not read as the same message", v);
	}
}

/*
 * The version byte, every value, with each type: 0 is no version; a newer
 * one than ours is refused with just enough filled in to answer it.
 */
static void test_rate_version(void)
{
	struct rate_msg ans = { .type = RATE_ANSWER, .status = RATE_APPLIED, .token = 9,
				.lease = 180, .rate = 1000, .fallback = 500 };
	uint8_t req[RATE_MSG_SIZE], answer[RATE_MSG_SIZE];

	g_assert_cmpint(rate_msg_encode(&rate_req, req, sizeof(req)), ==, 0);
	g_assert_cmpint(rate_msg_encode(&ans, answer, sizeof(answer)), ==, 0);
	for (unsigned int v = 0; v < 256; v++) {
		for (int which = 0; which < 2; which++) {
			const uint8_t *good = which ? answer : req;
			struct rate_msg out = rate_poison;
			uint8_t buf[RATE_MSG_SIZE];
			int r;

			memcpy(buf, good, sizeof(buf));
			buf[4] = (uint8_t)v;
			r = rate_msg_parse(buf, sizeof(buf), &out);
			if (v == 0) {
				check(r == -EBADMSG, "version 0: %d", r);
				check(same_msg(&out, &rate_poison), "version 0: *out written");
			} else if (v <= RATE_VERSION) {
				check(r == 0 && out.version == v, "version %u: %d", v, r);
			} else {
				check(r == -EPROTONOSUPPORT, "version %u: %d", v, r);
				check(out.version == v && out.token == (which ? 9u : rate_req.token) &&
					      out.type == (which ? RATE_ANSWER : RATE_REQUEST),
				      "version %u: version, type or token not filled", v);
				/* the rest as it was */
				check(out.status == rate_poison.status &&
					      out.lease == rate_poison.lease &&
					      out.rate == rate_poison.rate &&
					      out.fallback == rate_poison.fallback,
				      "version %u: more than version, type and token written", v);
			}
		}
	}
	/* a newer version with a type that is neither: no message at all */
	{
		struct rate_msg out = rate_poison;

		req[4] = RATE_VERSION + 1;
		req[5] = 2;
		g_assert_cmpint(rate_msg_parse(req, sizeof(req), &out), ==, -EBADMSG);
		g_assert_true(same_msg(&out, &rate_poison));
	}
}

/* The type and status bytes, every pair: a request carries none, an answer one of the enum. */
static void test_rate_type_status(void)
{
	uint8_t good[RATE_MSG_SIZE];

	g_assert_cmpint(rate_msg_encode(&rate_req, good, sizeof(good)), ==, 0);
	for (unsigned int t = 0; t < 256; t++) {
		for (unsigned int s = 0; s < 256; s++) {
			struct rate_msg out = rate_poison;
			uint8_t buf[RATE_MSG_SIZE];
			bool ok = (t == RATE_REQUEST && s == RATE_NONE) ||
				  (t == RATE_ANSWER && s < RATE_STATUS_MAX);
			int r;

			memcpy(buf, good, sizeof(buf));
			buf[5] = (uint8_t)t;
			buf[6] = (uint8_t)s;
			r = rate_msg_parse(buf, sizeof(buf), &out);
			check(r == (ok ? 0 : -EBADMSG), "type %u status %u: %d", t, s, r);
			if (ok)
				check(out.type == (enum rate_type)t &&
					      out.status == (enum rate_status)s,
				      "type %u status %u: read as %d %d", t, s, out.type,
				      out.status);
			else
				check(same_msg(&out, &rate_poison), "type %u status %u: *out written",
				      t, s);
		}
	}
}

/* What is never sent: refused, and not a byte written. */
static void test_rate_encode_bad(void)
{
	static const struct {
		unsigned int type, status;
		size_t size;
		int want;
	} cases[] = {
		{ RATE_REQUEST, RATE_APPLIED, RATE_MSG_SIZE, -EINVAL }, /* a request with a status */
		{ RATE_REQUEST, RATE_UNSUPPORTED, RATE_MSG_SIZE, -EINVAL },
		{ RATE_ANSWER, RATE_STATUS_MAX, RATE_MSG_SIZE, -EINVAL },
		{ RATE_ANSWER, 255, RATE_MSG_SIZE, -EINVAL },
		{ 2, RATE_NONE, RATE_MSG_SIZE, -EINVAL },
		{ RATE_ANSWER, RATE_APPLIED, 0, -ENOBUFS },
		{ RATE_ANSWER, RATE_APPLIED, RATE_MSG_SIZE - 1, -ENOBUFS },
		{ RATE_ANSWER, RATE_APPLIED, RATE_MSG_SIZE, 0 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct rate_msg m = { .type = (enum rate_type)cases[i].type,
				      .status = (enum rate_status)cases[i].status, .token = 1 };
		uint8_t buf[RATE_MSG_SIZE + 1];
		int r;

		memset(buf, 0xcc, sizeof(buf));
		r = rate_msg_encode(&m, buf, cases[i].size);
		check(r == cases[i].want, "row %zu: %d, not %d", i, r, cases[i].want);
		for (size_t b = 0; r < 0 && b < sizeof(buf); b++)
			check(buf[b] == 0xcc, "row %zu: byte %zu written", i, b);
		check(buf[RATE_MSG_SIZE] == 0xcc, "row %zu: wrote past the message", i);
	}
	/* every size short of a message */
	for (size_t size = 0; size < RATE_MSG_SIZE; size++) {
		uint8_t *buf = g_malloc(size ? size : 1); /* ASan sees a write past it */

		check(rate_msg_encode(&rate_req, buf, size) == -ENOBUFS, "size %zu", size);
		g_free(buf);
	}
}

static void test_rate_accept(void)
{
	static const struct {
		size_t len;
		uint16_t from;
		bool want;
	} cases[] = {
		{ 0, 40000, false },
		{ RATE_MSG_SIZE - 1, 40000, false }, /* shorter than a message: no answer */
		{ RATE_MSG_SIZE, 40000, true },
		{ RATE_MSG_MAX, 40000, true }, /* a later version's longer request */
		{ RATE_MSG_MAX + 1, 40000, false },
		{ 65507, 40000, false },
		{ RATE_MSG_SIZE, 0, false },
		{ RATE_MSG_SIZE, 53, false }, /* a service */
		{ RATE_MSG_SIZE, 1023, false },
		{ RATE_MSG_SIZE, 1024, true },
		{ RATE_MSG_SIZE, RATE_PORT - 1, true },
		{ RATE_MSG_SIZE, RATE_PORT, false }, /* another daemon */
		{ RATE_MSG_SIZE, RATE_PORT + 1, true },
		{ RATE_MSG_SIZE, 65535, true },
	};

	/* the port the server runs on, not the default */
	check(!rate_accept(RATE_MSG_SIZE, 5000, 5000), "from the server's own port 5000");
	check(rate_accept(RATE_MSG_SIZE, RATE_PORT, 5000), "from 4781 to a server on 5000");

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		check(rate_accept(cases[i].len, cases[i].from, RATE_PORT) == cases[i].want,
		      "%zu bytes from port %u: want %s", cases[i].len, cases[i].from,
		      cases[i].want ? "taken" : "dropped");
}

static void test_rate_status_str(void)
{
	static const char *const want[] = {
		[RATE_NONE] = "none",	    [RATE_APPLIED] = "applied", [RATE_CLAMPED] = "clamped",
		[RATE_DEFAULT] = "default", [RATE_REFUSED] = "refused", [RATE_FAILED] = "failed",
		[RATE_UNSUPPORTED] = "unsupported",
	};

	G_STATIC_ASSERT(G_N_ELEMENTS(want) == RATE_STATUS_MAX);
	for (unsigned int s = 0; s < RATE_STATUS_MAX; s++)
		check(!g_strcmp0(rate_status_str((enum rate_status)s), want[s]), "status %u: '%s'",
		      s, rate_status_str((enum rate_status)s));
	g_assert_cmpstr(rate_status_str(RATE_STATUS_MAX), ==, "?");
	g_assert_cmpstr(rate_status_str((enum rate_status)255), ==, "?");
	g_assert_cmpstr(rate_status_str((enum rate_status)-1), ==, "?");
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
	g_test_add_func("/proto/probe/timed", test_timed);
	g_test_add_func("/proto/echo/accept", test_echo_accept);
	g_test_add_func("/proto/url", test_url);
	g_test_add_func("/proto/rate/layout", test_rate_layout);
	g_test_add_func("/proto/rate/roundtrip", test_rate_roundtrip);
	g_test_add_func("/proto/rate/lengths", test_rate_lengths);
	g_test_add_func("/proto/rate/magic", test_rate_magic);
	g_test_add_func("/proto/rate/version", test_rate_version);
	g_test_add_func("/proto/rate/type-status", test_rate_type_status);
	g_test_add_func("/proto/rate/encode-bad", test_rate_encode_bad);
	g_test_add_func("/proto/rate/accept", test_rate_accept);
	g_test_add_func("/proto/rate/status-str", test_rate_status_str);

	return g_test_run();
}
