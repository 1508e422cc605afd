/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rate channel's pure logic (channel/policy.h): which peer a request
 * comes from, what the policy grants, the token bucket, the next lease end;
 * the budgets per peer and for everyone (channel/gate.h) on a fake clock;
 * and the lease file (channel/lease.h): its parser on good and bad lines,
 * the round trip through a private state folder, and the refusals.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "safe-tmp.h"
#include "channel/client.h"
#include "channel/gate.h"
#include "channel/lease.h"
#include "channel/policy.h"
#include "shape/units.h"
#include "shape/peers.h"

#define check(cond, ...)                                  \
	do {                                              \
		if (!(cond))                              \
			g_test_fail_printf(__VA_ARGS__);  \
	} while (0)

/* "10.0.0.0/24" or "fd00::/64" */
static struct tc_prefix prefix(const char *s)
{
	g_auto(GStrv) f = g_strsplit(s, "/", 2);
	struct tc_prefix p = { 0 };

	p.family = strchr(f[0], ':') ? AF_INET6 : AF_INET;
	g_assert_cmpint(inet_pton(p.family, f[0], p.addr), ==, 1);
	p.prefixlen = (unsigned int)g_ascii_strtoull(f[1], NULL, 10);
	return p;
}

/* Peers with up to 4 AllowedIPs each, from a table (NULL ends a peer's list). */
#define MAX_ALLOWED 4
struct peer_row {
	const char *allowed[MAX_ALLOWED];
};

static struct wg_peer *peers_new(const struct peer_row *rows, size_t n)
{
	struct wg_peer *peers = g_new0(struct wg_peer, n);

	for (size_t i = 0; i < n; i++) {
		peers[i].key[0] = (uint8_t)i;
		peers[i].allowed = g_new0(struct tc_prefix, MAX_ALLOWED);
		for (size_t j = 0; j < MAX_ALLOWED && rows[i].allowed[j]; j++)
			peers[i].allowed[peers[i].n_allowed++] = prefix(rows[i].allowed[j]);
	}
	return peers;
}

static void peers_free(struct wg_peer *peers, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g_free(peers[i].allowed);
	g_free(peers);
}

static int from(const struct wg_peer *peers, size_t n, const char *addr)
{
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	uint8_t a[16];

	g_assert_cmpint(inet_pton(family, addr, a), ==, 1);
	return peer_by_source(peers, n, family, a);
}

static void test_peer_by_source(void)
{
	static const struct peer_row rows[] = {
		{ { "10.0.0.2/32", "fd00::2/128" } }, /* 0: one host of each family */
		{ { "192.168.1.0/24", "fd00:1::/64" } }, /* 1: a network behind a router */
		{ { "10.0.0.3/32", "172.16.0.0/12" } }, /* 2 */
		{ { NULL } }, /* 3: no AllowedIPs at all */
	};
	static const struct {
		const char *addr;
		int want;
	} cases[] = {
		{ "10.0.0.2", 0 },
		{ "fd00::2", 0 },
		{ "10.0.0.1", -ENOENT }, /* /32: the host only */
		{ "fd00::3", -ENOENT }, /* /128 */
		{ "192.168.1.0", 1 },
		{ "192.168.1.77", 1 },
		{ "192.168.1.255", 1 },
		{ "192.168.2.1", -ENOENT }, /* just past the /24 */
		{ "192.168.0.255", -ENOENT },
		{ "fd00:1::1", 1 },
		{ "fd00:1::ffff:ffff:ffff:ffff", 1 },
		{ "fd00:1:0:1::1", -ENOENT }, /* just past the /64 */
		{ "10.0.0.3", 2 },
		{ "172.31.255.255", 2 }, /* /12: not on a byte boundary */
		{ "172.32.0.0", -ENOENT },
		{ "172.15.255.255", -ENOENT },
		{ "8.8.8.8", -ENOENT },
		{ "2001:db8::1", -ENOENT },
		/* an IPv4-mapped IPv6 address is not the IPv4 one */
		{ "::ffff:10.0.0.2", -ENOENT },
		{ "::ffff:192.168.1.7", -ENOENT },
		/* nor an IPv6 address whose first bytes are an IPv4 peer's */
		{ "a00:2::", -ENOENT },
	};
	struct wg_peer *peers = peers_new(rows, G_N_ELEMENTS(rows));

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		int r = from(peers, G_N_ELEMENTS(rows), cases[i].addr);

		check(r == cases[i].want, "%s: %d, not %d", cases[i].addr, r, cases[i].want);
	}
	/* no peers, and a family no peer can have */
	g_assert_cmpint(from(peers, 0, "10.0.0.2"), ==, -ENOENT);
	g_assert_cmpint(peer_by_source(peers, G_N_ELEMENTS(rows), AF_UNIX,
				       (const uint8_t[16]){ 10, 0, 0, 2 }),
			==, -ENOENT);
	peers_free(peers, G_N_ELEMENTS(rows));
}

/* /0 holds its whole family and no other; two peers holding one source: from neither. */
static void test_peer_overlap(void)
{
	static const struct peer_row v4_all[] = {
		{ { "10.0.0.2/32" } },
		{ { "0.0.0.0/0" } }, /* a catch-all, as a site-to-site peer has */
	};
	static const struct peer_row v6_all[] = {
		{ { "::/0" } },
		{ { "10.0.0.9/32" } },
	};
	static const struct peer_row nested[] = {
		{ { "10.1.0.0/16" } },
		{ { "8.8.8.8/32" } },
		{ { "10.1.2.0/24", "fd00::/64" } },
		{ { "fd00::1/128" } },
	};
	struct wg_peer *p4 = peers_new(v4_all, G_N_ELEMENTS(v4_all));
	struct wg_peer *p6 = peers_new(v6_all, G_N_ELEMENTS(v6_all));
	struct wg_peer *pn = peers_new(nested, G_N_ELEMENTS(nested));

	g_assert_cmpint(from(p4, 2, "10.0.0.2"), ==, -ENOTUNIQ);
	g_assert_cmpint(from(p4, 2, "10.0.0.3"), ==, 1);
	g_assert_cmpint(from(p4, 2, "255.255.255.255"), ==, 1);
	g_assert_cmpint(from(p4, 2, "::1"), ==, -ENOENT); /* /0 of the other family */
	g_assert_cmpint(from(p4, 2, "::ffff:10.0.0.3"), ==, -ENOENT);
	/* order does not matter: the first match is not taken */
	g_assert_cmpint(from(p4 + 1, 1, "10.0.0.2"), ==, 0);

	g_assert_cmpint(from(p6, 2, "2001:db8::1"), ==, 0);
	g_assert_cmpint(from(p6, 2, "::ffff:10.0.0.9"), ==, 0); /* IPv6 after all */
	g_assert_cmpint(from(p6, 2, "10.0.0.9"), ==, 1);
	g_assert_cmpint(from(p6, 2, "10.0.0.8"), ==, -ENOENT);

	g_assert_cmpint(from(pn, 4, "10.1.2.3"), ==, -ENOTUNIQ);
	g_assert_cmpint(from(pn, 4, "10.1.3.3"), ==, 0);
	g_assert_cmpint(from(pn, 4, "fd00::1"), ==, -ENOTUNIQ);
	g_assert_cmpint(from(pn, 4, "fd00::2"), ==, 2);
	g_assert_cmpint(from(pn, 4, "8.8.8.8"), ==, 1);

	peers_free(p4, G_N_ELEMENTS(v4_all));
	peers_free(p6, G_N_ELEMENTS(v6_all));
	peers_free(pn, G_N_ELEMENTS(nested));
}

/* One peer holding the source through two of its own prefixes is still one peer. */
static void test_peer_own_overlap(void)
{
	static const struct peer_row rows[] = {
		{ { "10.0.0.0/8", "10.0.0.0/24", "10.0.0.5/32" } },
		{ { "10.1.0.0/16" } },
	};
	struct wg_peer *peers = peers_new(rows, G_N_ELEMENTS(rows));

	g_assert_cmpint(from(peers, 1, "10.0.0.5"), ==, 0);
	g_assert_cmpint(from(peers, 2, "10.0.0.5"), ==, 0);
	g_assert_cmpint(from(peers, 2, "10.1.0.5"), ==, -ENOTUNIQ);
	peers_free(peers, G_N_ELEMENTS(rows));
}

static void test_policy(void)
{
	static const struct {
		const char *what;
		struct rate_policy pol;
		uint64_t asked;
		enum rate_status want;
		uint64_t granted;
	} cases[] = {
		{ "refused", { false, 0, 0, 5000 }, 1000, RATE_REFUSED, 77 },
		{ "refused, asking the default", { false, 0, 0, 5000 }, 0, RATE_REFUSED, 77 },
		{ "default", { true, 100, 200, 5000 }, 0, RATE_DEFAULT, 5000 },
		{ "default, none configured", { true, 0, 0, 0 }, 0, RATE_DEFAULT, 0 },
		{ "default outside the bounds", { true, 100, 200, 50 }, 0, RATE_DEFAULT, 50 },
		{ "clamped low", { true, 1000, 9000, 0 }, 999, RATE_CLAMPED, 1000 },
		{ "clamped low, 1", { true, 1000, 9000, 0 }, 1, RATE_CLAMPED, 1000 },
		{ "at min", { true, 1000, 9000, 0 }, 1000, RATE_APPLIED, 1000 },
		{ "between", { true, 1000, 9000, 0 }, 4321, RATE_APPLIED, 4321 },
		{ "at max", { true, 1000, 9000, 0 }, 9000, RATE_APPLIED, 9000 },
		{ "clamped high", { true, 1000, 9000, 0 }, 9001, RATE_CLAMPED, 9000 },
		{ "clamped high, huge", { true, 1000, 9000, 0 }, UINT64_MAX, RATE_CLAMPED, 9000 },
		{ "no bounds, 1", { true, 0, 0, 0 }, 1, RATE_CLAMPED, RATE_LEAST },
		{ "no bounds, the least", { true, 0, 0, 0 }, RATE_LEAST, RATE_APPLIED, RATE_LEAST },
		{ "no bounds, huge", { true, 0, 0, 0 }, UINT64_MAX, RATE_CLAMPED, RATE_MAX_BYTES },
		{ "no bounds, the most", { true, 0, 0, 0 }, RATE_MAX_BYTES, RATE_APPLIED,
		  RATE_MAX_BYTES },
		{ "min only, below", { true, 5000, 0, 0 }, 4999, RATE_CLAMPED, 5000 },
		{ "min only, far above", { true, 5000, 0, 0 }, UINT64_MAX, RATE_CLAMPED,
		  RATE_MAX_BYTES },
		{ "max only, above", { true, 0, 5000, 0 }, 5001, RATE_CLAMPED, 5000 },
		{ "max only, below", { true, 0, 5000, 0 }, 2000, RATE_APPLIED, 2000 },
		{ "max only, under the least", { true, 0, 5000, 0 }, 1, RATE_CLAMPED, RATE_LEAST },
		/* bounds the wrong way round: the ceiling holds */
		{ "min above max", { true, 9000, 2000, 0 }, 1500, RATE_CLAMPED, 2000 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t granted = 77;
		enum rate_status s = rate_policy_apply(&cases[i].pol, cases[i].asked, &granted);

		check(s == cases[i].want, "%s: %s, not %s", cases[i].what, rate_status_str(s),
		      rate_status_str(cases[i].want));
		check(granted == cases[i].granted, "%s: granted %" G_GUINT64_FORMAT ", not %"
		      G_GUINT64_FORMAT, cases[i].what, granted, cases[i].granted);
	}
}

static void test_bucket_burst(void)
{
	struct rate_bucket b = { 0 };
	double t = 1000.0;

	for (unsigned int i = 0; i < RATE_BURST; i++)
		check(rate_bucket_take(&b, t), "request %u of the burst refused", i);
	g_assert_false(rate_bucket_take(&b, t));
	g_assert_false(rate_bucket_take(&b, t + RATE_REFILL_S / 2));
	/* one refill's time: one more, and only one */
	g_assert_true(rate_bucket_take(&b, t + RATE_REFILL_S));
	g_assert_false(rate_bucket_take(&b, t + RATE_REFILL_S));
	/* half refills add up */
	g_assert_false(rate_bucket_take(&b, t + RATE_REFILL_S * 1.5));
	g_assert_true(rate_bucket_take(&b, t + RATE_REFILL_S * 2));
	g_assert_false(rate_bucket_take(&b, t + RATE_REFILL_S * 2));
}

/* The probes' bucket: a larger burst, 25 a second after it, kept apart. */
static void test_probe_bucket(void)
{
	struct rate_bucket b = { 0 }, r = { 0 };
	double t = 1000.0;
	unsigned int n = 0;

	for (unsigned int i = 0; i < PROBE_BURST; i++)
		check(probe_bucket_take(&b, t), "probe %u of the burst refused", i);
	g_assert_false(probe_bucket_take(&b, t));
	/* a second and a bit: 25 more, not 26 (a probe every 10 ms) */
	for (unsigned int i = 1; i <= 102; i++)
		n += probe_bucket_take(&b, t + i * 0.01);
	g_assert_cmpuint(n, ==, (unsigned int)PROBE_PER_SECOND);
	/* 20 a second goes on for a minute: all taken */
	n = 0;
	for (unsigned int i = 1; i <= 1200; i++)
		n += probe_bucket_take(&b, t + 1 + i * 0.05);
	g_assert_cmpuint(n, ==, 1200);
	/* a rate request's bucket is its own */
	g_assert_true(rate_bucket_take(&r, t + 100));
}

/* A long quiet spell fills the bucket to its burst, no further. */
static void test_bucket_gap(void)
{
	struct rate_bucket b = { 0 };
	double t = 50.0;
	unsigned int n = 0;

	g_assert_true(rate_bucket_take(&b, t));
	t += 1e6;
	while (rate_bucket_take(&b, t))
		g_assert_cmpuint(++n, <=, RATE_BURST);
	g_assert_cmpuint(n, ==, RATE_BURST);
	g_assert_cmpfloat(b.tokens, <=, RATE_BURST);
}

/* A clock going backwards gives nothing, then or when it catches up. */
static void test_bucket_backwards(void)
{
	struct rate_bucket b = { 0 };
	double t = 500.0;

	for (unsigned int i = 0; i < RATE_BURST; i++)
		g_assert_true(rate_bucket_take(&b, t));
	g_assert_false(rate_bucket_take(&b, t - 1000));
	g_assert_false(rate_bucket_take(&b, t - RATE_REFILL_S * 10));
	g_assert_false(rate_bucket_take(&b, t - 1));
	/* back at t: nothing gone by since the burst */
	g_assert_false(rate_bucket_take(&b, t));
	g_assert_false(rate_bucket_take(&b, t + RATE_REFILL_S / 2));
	g_assert_true(rate_bucket_take(&b, t + RATE_REFILL_S));
	g_assert_false(rate_bucket_take(&b, t + RATE_REFILL_S));
}

/* ---- the gate (channel/gate.h) ------------------------------------------- */

#define IFX 7

static int gate_from(struct gate *g, const char *addr, double now, uint8_t key[WG_KEY_LEN])
{
	int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	uint8_t a[16];

	g_assert_cmpint(inet_pton(family, addr, a), ==, 1);
	return gate_peer(g, IFX, family, a, now, key);
}

/* A datagram from addr at now, as the server charges it: the peer, then its budget. */
static int gate_send(struct gate *g, const char *addr, enum gate_kind kind, double now)
{
	uint8_t key[WG_KEY_LEN];
	int r = gate_from(g, addr, now, key);

	return r < 0 ? r : gate_take(g, IFX, key, kind, now);
}

/*
 * The gate's index (hosts by a hash, wider prefixes by a list) names the
 * peer peer_by_source names from the whole list, on random peers: hosts,
 * wider prefixes, nested and repeated ones, both families.
 */
static void test_gate_index_same(void)
{
	GRand *rnd = g_rand_new_with_seed(27);

	for (int round = 0; round < 50; round++) {
		size_t n = (size_t)g_rand_int_range(rnd, 1, 40);
		struct wg_peer *peers = g_new0(struct wg_peer, n);
		struct gate *g = gate_new();

		for (size_t i = 0; i < n; i++) {
			peers[i].key[0] = (uint8_t)i;
			peers[i].key[1] = (uint8_t)round;
			peers[i].n_allowed = (size_t)g_rand_int_range(rnd, 0, 4);
			peers[i].allowed = g_new0(struct tc_prefix, MAX(peers[i].n_allowed, 1));
			for (size_t j = 0; j < peers[i].n_allowed; j++) {
				struct tc_prefix *p = &peers[i].allowed[j];
				bool v6 = g_rand_int_range(rnd, 0, 4) == 0;
				unsigned int host = v6 ? 128 : 32;
				/* mostly hosts, some /24 (/120), now and then all */
				int kind = g_rand_int_range(rnd, 0, 10);

				p->family = v6 ? AF_INET6 : AF_INET;
				p->prefixlen = kind < 7 ? host : kind < 9 ? host - 8 : 0;
				p->addr[0] = 10;
				/* a small space, so that prefixes meet */
				p->addr[host / 8 - 1] = (uint8_t)g_rand_int_range(rnd, 0, 6);
				if (p->prefixlen < host)
					memset(p->addr + p->prefixlen / 8, 0, host / 8 - p->prefixlen / 8);
			}
		}
		gate_index(g, IFX, peers, n, 100.0);
		for (int a = 0; a < 200; a++) {
			bool v6 = a % 4 == 0;
			int family = v6 ? AF_INET6 : AF_INET;
			uint8_t addr[16] = { 10 }, key[WG_KEY_LEN];
			int want, got;

			addr[(v6 ? 16 : 4) - 1] = (uint8_t)(a % 7);
			want = peer_by_source(peers, n, family, addr);
			got = gate_peer(g, IFX, family, addr, 100.5, key);
			g_assert_cmpint(got < 0 ? got : key[0], ==, want);
		}
		gate_free(g);
		peers_free(peers, n);
	}
	g_rand_free(rnd);
}

/* Which peer, and when the index must be dumped again. */
static void test_gate_index(void)
{
	static const struct peer_row rows[] = {
		{ { "10.0.0.2/32" } },
		{ { "10.1.0.0/24", "fd00:1::/64" } },
		{ { "10.0.0.0/8" } }, /* overlaps both: their sources are no one's */
	};
	struct wg_peer *peers = peers_new(rows, 2), *more = peers_new(rows, 3);
	g_autoptr(GPtrArray) keep = g_ptr_array_new();
	struct gate *g = gate_new();
	uint8_t key[WG_KEY_LEN] = { 0 };
	double t = 100;

	/* never dumped: dump first */
	g_assert_cmpint(gate_from(g, "10.0.0.2", t, key), ==, -ESTALE);
	g_assert_false(gate_fresh(g, IFX, t, GATE_DECIDE_AGE));
	gate_index(g, IFX, peers, 2, t);
	/* a request is decided by the index for GATE_DECIDE_AGE, then by a dump */
	g_assert_true(gate_fresh(g, IFX, t, GATE_DECIDE_AGE));
	g_assert_true(gate_fresh(g, IFX, t + GATE_DECIDE_AGE - 0.01, GATE_DECIDE_AGE));
	g_assert_false(gate_fresh(g, IFX, t + GATE_DECIDE_AGE, GATE_DECIDE_AGE));
	g_assert_false(gate_fresh(g, IFX, t - 0.5, GATE_DECIDE_AGE));
	g_assert_false(gate_fresh(g, IFX + 1, t, GATE_DECIDE_AGE));
	/* the index copied them: the dump may go */
	peers_free(peers, 2);
	g_assert_cmpint(gate_from(g, "10.0.0.2", t, key), ==, 0);
	g_assert_cmpuint(key[0], ==, 0);
	g_assert_cmpint(gate_from(g, "10.1.0.77", t + 1, key), ==, 0);
	g_assert_cmpuint(key[0], ==, 1);
	g_assert_cmpint(gate_from(g, "fd00:1::ab", t + 2, key), ==, 0);
	g_assert_cmpuint(key[0], ==, 1);
	/* a source no peer holds: no look again within a second of the dump ... */
	g_assert_cmpint(gate_from(g, "10.2.0.1", t + GATE_INDEX_MISS_AGE - 0.01, key), ==, -ENOENT);
	/* ... after it, one */
	g_assert_cmpint(gate_from(g, "10.2.0.1", t + GATE_INDEX_MISS_AGE, key), ==, -ESTALE);
	/* a known source, until the index is GATE_INDEX_MAX_AGE old */
	g_assert_cmpint(gate_from(g, "10.0.0.2", t + GATE_INDEX_MAX_AGE - 0.01, key), ==, 0);
	g_assert_cmpint(gate_from(g, "10.0.0.2", t + GATE_INDEX_MAX_AGE, key), ==, -ESTALE);
	/* a clock behind the dump does not keep the index forever */
	g_assert_cmpint(gate_from(g, "10.0.0.2", t - 1, key), ==, -ESTALE);
	/* another interface has its own index */
	g_assert_cmpint(gate_peer(g, IFX + 1, AF_INET, (const uint8_t[4]){ 10, 0, 0, 2 }, t, key),
			==, -ESTALE);
	/* the third peer overlaps both: within the second, no one's */
	t += 10;
	gate_index(g, IFX, more, 3, t);
	g_assert_cmpint(gate_from(g, "10.0.0.2", t, key), ==, -ENOTUNIQ);
	g_assert_cmpint(gate_from(g, "10.200.0.1", t, key), ==, 0);
	g_assert_cmpuint(key[0], ==, 2);
	/* a failed dump (no peers): nothing, and no dump again for every datagram */
	gate_index(g, IFX, NULL, 0, t + 20);
	g_assert_cmpint(gate_from(g, "10.0.0.2", t + 20.5, key), ==, -ENOENT);
	peers_free(more, 3);
	gate_free(g);
	gate_free(NULL);
}

/*
 * Issue 28: a client whose AllowedIPs are a routed /24 (or an IPv6 /64) asks
 * from 64 of its addresses, 1,000 times a second, for 10 s; another asks once
 * every 2 s, as its daemon does when it adapts. The flood gets its one
 * peer's budget (a burst of 10, then 4 a second), not the server's 100 a
 * second, and the other client every answer.
 */
static void test_gate_rate_flood(void)
{
	static const struct peer_row rows[] = {
		{ { "10.1.0.0/24", "fd00:1::/64" } }, /* the flood */
		{ { "10.0.0.2/32" } }, /* the well-behaved one */
	};
	struct wg_peer *peers = peers_new(rows, G_N_ELEMENTS(rows));
	struct gate *g = gate_new();
	unsigned int flood = 0, good = 0, asked = 0, ms;
	double t0 = 1000;

	gate_index(g, IFX, peers, G_N_ELEMENTS(rows), t0);
	for (ms = 0; ms < 10000; ms++) {
		double now = t0 + ms / 1000.0;
		char a[64];

		/* an index as old as the server's refresh allows */
		if (ms % 5000 == 4999)
			gate_index(g, IFX, peers, G_N_ELEMENTS(rows), now);
		snprintf(a, sizeof(a), ms % 2 ? "10.1.0.%u" : "fd00:1::%x", 1 + ms % 64);
		flood += gate_send(g, a, GATE_RATE, now) == 0;
		if (ms % 2000 == 1) {
			asked++;
			good += gate_send(g, "10.0.0.2", GATE_RATE, now) == 0;
		}
	}
	check(good == asked, "the good client got %u of %u answers", good, asked);
	/* 10 at once, then one every 0.25 s over 10 s */
	check(flood <= RATE_BURST + 10 / RATE_REFILL_S + 1 && flood >= RATE_BURST + 10 / RATE_REFILL_S - 1,
	      "the flood got %u answers, not its own budget's %.0f", flood,
	      RATE_BURST + 10 / RATE_REFILL_S);
	peers_free(peers, G_N_ELEMENTS(rows));
	gate_free(g);
}

/*
 * Issue 28, probes: one client probes from 100 of its addresses as fast as
 * it can (here 10 a millisecond) for 10 s; another probes 20 times a second.
 * The flood gets its peer's 50 and 25 a second; the other, every answer.
 */
static void test_gate_probe_flood(void)
{
	static const struct peer_row rows[] = {
		{ { "10.1.0.0/24" } },
		{ { "10.0.0.2/32" } },
	};
	struct wg_peer *peers = peers_new(rows, G_N_ELEMENTS(rows));
	struct gate *g = gate_new();
	unsigned int flood = 0, good = 0, asked = 0;
	double t0 = 1000;

	gate_index(g, IFX, peers, G_N_ELEMENTS(rows), t0);
	for (unsigned int ms = 0; ms < 10000; ms++) {
		double now = t0 + ms / 1000.0;

		if (ms % 1000 == 999)
			gate_index(g, IFX, peers, G_N_ELEMENTS(rows), now);
		for (unsigned int i = 0; i < 10; i++) {
			char a[32];

			snprintf(a, sizeof(a), "10.1.0.%u", 1 + (ms * 10 + i) % 100);
			flood += gate_send(g, a, GATE_PROBE, now) == 0;
		}
		if (ms % 50 == 0) {
			asked++;
			good += gate_send(g, "10.0.0.2", GATE_PROBE, now) == 0;
		}
	}
	g_assert_cmpuint(asked, ==, 200);
	check(good == asked, "the good client's probes: %u of %u answered", good, asked);
	check(flood <= PROBE_BURST + 10 * PROBE_PER_SECOND + 1,
	      "the flood got %u answers, more than its peer's budget", flood);
	check(flood >= PROBE_BURST + 10 * PROBE_PER_SECOND - 1, "the flood got only %u", flood);
	peers_free(peers, G_N_ELEMENTS(rows));
	gate_free(g);
}

/*
 * Everyone's budget: 60 peers within their own bursts use up the second's
 * GATE_RATES_PER_SECOND rate requests; the next second has as many again. A
 * peer over its own budget takes nothing of everyone's.
 */
static void test_gate_shared(void)
{
	struct peer_row rows[60];
	char addrs[60][16];
	struct wg_peer *peers;
	struct gate *g = gate_new();
	uint8_t key[WG_KEY_LEN];
	unsigned int ok = 0, busy = 0;
	double t = 2000.25;

	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "10.0.%zu.1", i);
		memset(&rows[i], 0, sizeof(rows[i]));
		rows[i].allowed[0] = g_strdup_printf("%s/32", addrs[i]);
	}
	peers = peers_new(rows, G_N_ELEMENTS(rows));
	gate_index(g, IFX, peers, G_N_ELEMENTS(rows), t);
	/* peer 0 spends its own burst, then asks 500 times more: refused as its own */
	for (unsigned int i = 0; i < RATE_BURST; i++)
		g_assert_cmpint(gate_send(g, addrs[0], GATE_RATE, t), ==, 0);
	for (unsigned int i = 0; i < 500; i++)
		g_assert_cmpint(gate_send(g, addrs[0], GATE_RATE, t), ==, -EDQUOT);
	for (size_t i = 1; i < G_N_ELEMENTS(rows); i++) {
		for (unsigned int j = 0; j < RATE_BURST; j++) {
			int r = gate_send(g, addrs[i], GATE_RATE, t);

			ok += r == 0;
			busy += r == -EBUSY;
		}
	}
	g_assert_cmpuint(G_N_ELEMENTS(rows) * RATE_BURST, >, GATE_RATES_PER_SECOND);
	/* peer 0's 10 and the rest: the 500 refused took none */
	g_assert_cmpuint(ok, ==, GATE_RATES_PER_SECOND - RATE_BURST);
	g_assert_cmpuint(busy, ==, (G_N_ELEMENTS(rows) - 1) * RATE_BURST - ok);
	/* the probes' budget is apart */
	g_assert_cmpint(gate_send(g, addrs[59], GATE_PROBE, t), ==, 0);
	/* the next second: everyone's budget again, the peers' own as they refilled */
	g_assert_cmpint(gate_send(g, addrs[59], GATE_RATE, t + 1), ==, 0);
	/* and a peer no index holds is charged to nobody */
	memset(key, 0xee, sizeof(key));
	g_assert_cmpint(gate_take(g, IFX + 1, key, GATE_RATE, t + 1), ==, -EDQUOT);
	for (size_t i = 0; i < G_N_ELEMENTS(rows); i++)
		g_free((char *)rows[i].allowed[0]);
	peers_free(peers, G_N_ELEMENTS(rows));
	gate_free(g);
}

/* A new dump is no refill for a peer still there; a peer gone loses its budget. */
static void test_gate_keeps(void)
{
	static const struct peer_row rows[] = {
		{ { "10.0.0.2/32" } },
		{ { "10.0.0.3/32" } },
	};
	struct wg_peer *peers = peers_new(rows, G_N_ELEMENTS(rows));
	struct gate *g = gate_new();
	double t = 300;

	gate_index(g, IFX, peers, 2, t);
	for (unsigned int i = 0; i < RATE_BURST; i++) {
		g_assert_cmpint(gate_send(g, "10.0.0.2", GATE_RATE, t), ==, 0);
		g_assert_cmpint(gate_send(g, "10.0.0.3", GATE_RATE, t), ==, 0);
	}
	g_assert_cmpint(gate_send(g, "10.0.0.2", GATE_RATE, t), ==, -EDQUOT);
	/* dumped again: still spent */
	gate_index(g, IFX, peers, 2, t);
	g_assert_cmpint(gate_send(g, "10.0.0.2", GATE_RATE, t), ==, -EDQUOT);
	/* peer 1 removed, then back: a new peer, its burst whole */
	gate_index(g, IFX, peers, 1, t);
	gate_index(g, IFX, peers, 2, t);
	g_assert_cmpint(gate_send(g, "10.0.0.3", GATE_RATE, t), ==, 0);
	peers_free(peers, G_N_ELEMENTS(rows));
	gate_free(g);
}

static void test_lease_next_end(void)
{
	struct rate_lease l[4] = {
		{ .rate = 1, .until = 300 },
		{ .rate = 1, .until = 100 },
		{ .rate = 1, .until = 200 },
		{ .rate = 1, .until = 100 },
	};

	g_assert_cmpint(rate_lease_next_end(l, 0, 0), ==, 0);
	g_assert_cmpint(rate_lease_next_end(l, 4, 0), ==, 100);
	g_assert_cmpint(rate_lease_next_end(l, 4, 99), ==, 100);
	/* a lease that ends now is over */
	g_assert_cmpint(rate_lease_next_end(l, 4, 100), ==, 200);
	g_assert_cmpint(rate_lease_next_end(l, 4, 250), ==, 300);
	g_assert_cmpint(rate_lease_next_end(l, 4, 300), ==, 0);
	g_assert_cmpint(rate_lease_next_end(l, 1, 0), ==, 300);
	g_assert_false(rate_lease_live(&l[1], 100));
	g_assert_true(rate_lease_live(&l[1], 99));
}

/* ---- lease files ---------------------------------------------------------- */

static void key_of(unsigned int i, uint8_t key[WG_KEY_LEN])
{
	memset(key, 0, WG_KEY_LEN);
	key[0] = 0x42;
	key[1] = (uint8_t)(i >> 24);
	key[2] = (uint8_t)(i >> 16);
	key[3] = (uint8_t)(i >> 8);
	key[4] = (uint8_t)i;
}

static char *key_b64(unsigned int i)
{
	uint8_t key[WG_KEY_LEN];
	char s[45];

	key_of(i, key);
	wg_key_to_base64(key, s);
	return g_strdup(s);
}

static const struct rate_lease *lease_at(GArray *a, guint i)
{
	return &g_array_index(a, struct rate_lease, i);
}

static bool is_lease(const struct rate_lease *l, unsigned int key, uint64_t rate, int64_t until)
{
	uint8_t k[WG_KEY_LEN];

	key_of(key, k);
	return !memcmp(l->key, k, WG_KEY_LEN) && l->rate == rate && l->until == until;
}

static void test_lease_parse(void)
{
	g_autofree char *k1 = key_b64(1), *k2 = key_b64(2), *k3 = key_b64(3);
	g_autofree char *text = g_strdup_printf(
		"%s 1250000 1000\n"
		"\n" /* blank: not counted */
		"%s\t625000   2000\r\n" /* tabs, runs of spaces, a CR */
		"junk\n"
		"%s 1250000\n" /* two fields */
		"%s 1250000 1000 extra\n" /* four */
		"%s 0 1000\n" /* rate 0 is no lease */
		"%s -5 1000\n"
		"%s +5 1000\n"
		"%s 5 -1000\n"
		"%s 5 0\n" /* never live */
		"%s 5 1000x\n"
		"%s 18446744073709551616 1000\n" /* rate past 64 bits */
		"%s 5 9223372036854775808\n" /* until past int64 */
		"%.43s 5 1000\n" /* a key one character short */
		"AAAA 5 1000\n"
		"%s 18446744073709551615 9223372036854775807\n" /* the largest of both */
		"%s 42 77", /* no newline at the end */
		k1, k2, k1, k1, k1, k1, k1, k1, k1, k1, k1, k1, k1, k3, k3);
	g_autoptr(GArray) out = g_array_new(false, true, sizeof(struct rate_lease));
	struct rate_lease before = { .rate = 9, .until = 9 };

	/* appended after what out holds */
	g_array_append_val(out, before);
	g_assert_cmpint(lease_parse(text, strlen(text), out), ==, 13);
	g_assert_cmpuint(out->len, ==, 4);
	g_assert_true(lease_at(out, 0)->rate == 9);
	g_assert_true(is_lease(lease_at(out, 1), 1, 1250000, 1000));
	g_assert_true(is_lease(lease_at(out, 2), 2, 625000, 2000));
	/* k3 twice: the last wins, in the place of the first */
	g_assert_true(is_lease(lease_at(out, 3), 3, 42, 77));

	/* a NUL inside a line makes it none; the next line still counts */
	g_array_set_size(out, 0);
	{
		g_autofree char *t = g_strdup_printf("%s 5 100 x\n%s 6 200\n", k1, k2);
		size_t len = strlen(t);

		t[strlen(k1) + strlen(" 5 100")] = '\0'; /* what comes before it is a lease */
		g_assert_cmpint(lease_parse(t, len, out), ==, 1);
		g_assert_cmpuint(out->len, ==, 1);
		g_assert_true(is_lease(lease_at(out, 0), 2, 6, 200));
	}
	/* only len bytes are read: the lease after them is not */
	g_array_set_size(out, 0);
	{
		g_autofree char *t = g_strdup_printf("%s 5 100\n%s 6 200\n", k1, k2);
		size_t first = strlen(k1) + strlen(" 5 100\n");

		g_assert_cmpint(lease_parse(t, first, out), ==, 0);
		g_assert_cmpuint(out->len, ==, 1);
		g_assert_cmpint(lease_parse(t, first - 2, out), ==, 0); /* "... 5 10" */
		g_assert_cmpuint(out->len, ==, 2);
		g_assert_true(is_lease(lease_at(out, 1), 1, 5, 10));
	}
	/* nothing, and a line far longer than any lease */
	g_array_set_size(out, 0);
	g_assert_cmpint(lease_parse("", 0, out), ==, 0);
	{
		g_autofree char *t = g_strnfill(100000, 'A');

		g_assert_cmpint(lease_parse(t, strlen(t), out), ==, 1);
	}
	g_assert_cmpuint(out->len, ==, 0);
}

/* More leases than LEASE_MAX: the first LEASE_MAX kept, the rest counted as skipped. */
static void test_lease_parse_max(void)
{
	const unsigned int extra = 1000;
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GArray) out = g_array_new(false, true, sizeof(struct rate_lease));
	g_autofree char *k0 = key_b64(0);

	for (unsigned int i = 0; i < LEASE_MAX + extra; i++) {
		g_autofree char *k = key_b64(i);

		g_string_append_printf(text, "%s %u %u\n", k, i + 1, i + 1000);
	}
	/* a kept key again, past the cap: not a new lease, so it still wins */
	g_string_append_printf(text, "%s 7 7\n", k0);
	g_assert_cmpint(lease_parse(text->str, text->len, out), ==, extra);
	g_assert_cmpuint(out->len, ==, LEASE_MAX);
	g_assert_true(is_lease(lease_at(out, 0), 0, 7, 7));
	g_assert_true(is_lease(lease_at(out, 1), 1, 2, 1001));
	g_assert_true(is_lease(lease_at(out, LEASE_MAX - 1), LEASE_MAX - 1, LEASE_MAX,
			       LEASE_MAX - 1 + 1000));
}

static char *file_text(const char *dir, const char *name)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return NULL;
	return text;
}

static void test_lease_files(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-lease");
	g_autofree char *sub = g_build_filename(dir, "run", "wgshape", NULL);
	g_autofree char *path = g_build_filename(sub, "wg0" LEASE_SUFFIX, NULL);
	g_autoptr(GArray) back = g_array_new(false, true, sizeof(struct rate_lease));
	g_autofree char *text = NULL, *k1 = key_b64(1);
	struct rate_lease l[3];
	uint8_t k[WG_KEY_LEN];
	struct stat st;

	key_of(1, l[0].key);
	l[0].rate = 1250000;
	l[0].until = 1180;
	key_of(2, l[1].key);
	l[1].rate = 625000;
	l[1].until = 999; /* ended before now */
	key_of(3, l[2].key);
	l[2].rate = UINT64_MAX;
	l[2].until = INT64_MAX;

	/* no folder, no file: no leases, no error */
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 0);
	/* the folder is made on demand; the ended lease is not written */
	g_assert_cmpint(lease_save(sub, "wg0", l, 3, 1000), ==, 0);
	text = file_text(sub, "wg0" LEASE_SUFFIX);
	g_assert_nonnull(text);
	g_assert_true(g_str_has_prefix(text, k1));
	g_assert_null(strstr(text, " 625000 "));
	g_assert_cmpint(stat(path, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 07777, ==, 0644);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 2);
	g_assert_true(is_lease(lease_at(back, 0), 1, 1250000, 1180));
	g_assert_true(is_lease(lease_at(back, 1), 3, UINT64_MAX, INT64_MAX));
	/* one interface's leases are not another's */
	g_array_set_size(back, 0);
	g_assert_cmpint(lease_load(sub, "wg1", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 0);

	/* put: a new one, a renewal in place of the old, one taken out */
	key_of(4, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 5000, 1500, 1000), ==, 0);
	key_of(1, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 2500000, 1360, 1000), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 3);
	g_assert_true(is_lease(lease_at(back, 0), 3, UINT64_MAX, INT64_MAX));
	g_assert_true(is_lease(lease_at(back, 1), 4, 5000, 1500));
	g_assert_true(is_lease(lease_at(back, 2), 1, 2500000, 1360));
	/* rate 0 takes it out, whatever until says */
	key_of(3, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 0, 5000, 1000), ==, 0);
	g_free(text);
	text = file_text(sub, "wg0" LEASE_SUFFIX);
	g_assert_nonnull(text);
	g_assert_null(strstr(text, " 5000\n")); /* not even as a line that is no lease */
	/* later: key 1's lease ended on the way, key 4's lives */
	key_of(5, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 100, 1400, 1360), ==, 0);
	g_array_set_size(back, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 2);
	g_assert_true(is_lease(lease_at(back, 0), 4, 5000, 1500));
	g_assert_true(is_lease(lease_at(back, 1), 5, 100, 1400));
	/* a lease put already ended is not kept */
	key_of(6, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 100, 1360, 1360), ==, 0);
	g_array_set_size(back, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 2);

	/* the last lease taken out: the file goes */
	key_of(4, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 0, 0, 1360), ==, 0);
	g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
	key_of(5, k);
	g_assert_cmpint(lease_put(sub, "wg0", k, 0, 0, 1360), ==, 0);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	/* as it does when all have ended; and saving none where there is none is fine */
	g_assert_cmpint(lease_save(sub, "wg0", l, 3, 1000), ==, 0);
	g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
	g_assert_cmpint(lease_save(sub, "wg0", l, 1, 1180), ==, 0);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	g_assert_cmpint(lease_save(sub, "wg0", NULL, 0, 0), ==, 0);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));

	/* an interface name that is none: not made into a path */
	g_assert_cmpint(lease_save(sub, "../x", l, 1, 0), ==, -EINVAL);
	g_assert_cmpint(lease_save(sub, "", l, 1, 0), ==, -EINVAL);
	g_assert_cmpint(lease_load(sub, "a/b", back), ==, -EINVAL);
	g_assert_cmpint(lease_put(sub, "..", k, 1, 2, 1), ==, -EINVAL);
	g_assert_cmpint(lease_put(sub, "wg0/x", k, 1, 2, 1), ==, -EINVAL);
	safe_tmp_rm(dir);
}

static unsigned int lease_kicks;
static void lease_kick(void *arg)
{
	(void)arg;
	lease_kicks++;
}

/* Leases through a new process's eyes: the file parsed. */
static guint file_leases(const char *dir, GArray *out)
{
	g_autofree char *text = file_text(dir, "wg0" LEASE_SUFFIX);

	g_array_set_size(out, 0);
	if (text)
		g_assert_cmpint(lease_parse(text, strlen(text), out), ==, 0);
	return out->len;
}

/* Write-behind: puts are loaded back at once, in the file at the flush, which yields to another writer. */
static void test_lease_write_behind(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-lease");
	g_autofree char *path = g_build_filename(dir, "wg0" LEASE_SUFFIX, NULL);
	g_autoptr(GArray) back = g_array_new(false, true, sizeof(struct rate_lease));
	g_autoptr(GPtrArray) lost = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *k9 = key_b64(9), *line = NULL;
	uint8_t k[WG_KEY_LEN];

	lease_write_behind(lease_kick, NULL);
	lease_kicks = 0;
	/* the first lease of an interface with no file: kept, no file yet, one kick */
	key_of(1, k);
	g_assert_cmpint(lease_put(dir, "wg0", k, 1000, 2000, 1000), ==, 0);
	key_of(2, k);
	g_assert_cmpint(lease_put(dir, "wg0", k, 2000, 1500, 1000), ==, 0);
	g_assert_cmpuint(lease_kicks, ==, 1);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	g_assert_cmpint(lease_load(dir, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 2);
	g_assert_true(is_lease(lease_at(back, 1), 2, 2000, 1500));
	/* the flush writes those live at its time: key 2's ended */
	g_assert_cmpint(lease_flush(1600, lost), ==, 0);
	g_assert_cmpuint(lost->len, ==, 0);
	g_assert_cmpuint(file_leases(dir, back), ==, 1);
	g_assert_true(is_lease(lease_at(back, 0), 1, 1000, 2000));
	/* and a load after it gives what the file says */
	g_array_set_size(back, 0);
	g_assert_cmpint(lease_load(dir, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);

	/* another process writes the file in between: its leases stand */
	key_of(3, k);
	g_assert_cmpint(lease_put(dir, "wg0", k, 3000, 3000, 1600), ==, 0);
	g_assert_cmpuint(lease_kicks, ==, 2);
	line = g_strdup_printf("%s 9000 3000\n", k9);
	g_assert_true(g_file_set_contents(path, line, -1, NULL));
	g_assert_cmpint(lease_flush(1600, lost), ==, 0);
	g_assert_cmpuint(lost->len, ==, 1);
	g_assert_cmpstr(lost->pdata[0], ==, "wg0");
	g_assert_cmpuint(file_leases(dir, back), ==, 1);
	g_assert_true(is_lease(lease_at(back, 0), 9, 9000, 3000));
	g_array_set_size(back, 0);
	g_assert_cmpint(lease_load(dir, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);
	g_assert_true(is_lease(lease_at(back, 0), 9, 9000, 3000));

	/* the last one taken out: the file goes at the flush */
	key_of(9, k);
	g_assert_cmpint(lease_put(dir, "wg0", k, 0, 0, 1600), ==, 0);
	g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
	g_ptr_array_set_size(lost, 0);
	g_assert_cmpint(lease_flush(1600, lost), ==, 0);
	g_assert_cmpuint(lost->len, ==, 0);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));

	/* off: a put writes at once again */
	lease_write_behind(NULL, NULL);
	key_of(4, k);
	g_assert_cmpint(lease_put(dir, "wg0", k, 4000, 3000, 1600), ==, 0);
	g_assert_cmpuint(file_leases(dir, back), ==, 1);
	g_assert_cmpint(lease_save(dir, "wg0", NULL, 0, 0), ==, 0);
	safe_tmp_rm(dir);
}

/* Junk in a lease file is skipped, not fatal: the leases around it load. */
static void test_lease_load_junk(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-lease");
	g_autofree char *path = g_build_filename(dir, "wg0" LEASE_SUFFIX, NULL);
	g_autofree char *k1 = key_b64(1);
	g_autofree char *text = g_strdup_printf("garbage\n%s 10 20\n\x01\xff\n", k1);
	g_autoptr(GArray) back = g_array_new(false, true, sizeof(struct rate_lease));

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	g_assert_cmpint(g_chmod(path, 0644), ==, 0);
	g_assert_cmpint(lease_load(dir, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);
	g_assert_true(is_lease(lease_at(back, 0), 1, 10, 20));
	safe_tmp_rm(dir);
}

/*
 * A lease file without a state file (issue 28, "a stale .leases file"): the
 * interface was cleared, so its leases go; those beside a state file stay,
 * and so does anything else in the folder.
 */
static void test_lease_orphans(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-lease");
	g_autoptr(GPtrArray) removed = g_ptr_array_new_with_free_func(g_free);
	static const char *const files[] = { "wg0.state", "wg0" LEASE_SUFFIX, "wg1" LEASE_SUFFIX,
					     "wg2.state", "other.txt" };
	g_autofree char *k1 = key_b64(1);
	g_autofree char *text = g_strdup_printf("%s 10 99999999\n", k1);
	g_autoptr(GArray) back = g_array_new(false, true, sizeof(struct rate_lease));

	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *path = g_build_filename(dir, files[i], NULL);

		g_assert_true(g_file_set_contents(path, g_str_has_suffix(files[i], ".state") ?
						  "[interface]\nifindex=3\n" : text, -1, NULL));
		g_assert_cmpint(g_chmod(path, 0644), ==, 0);
	}
	g_assert_cmpint(lease_drop_orphans(dir, removed), ==, 0);
	g_assert_cmpuint(removed->len, ==, 1);
	g_assert_cmpstr(removed->pdata[0], ==, "wg1");
	g_assert_cmpint(lease_load(dir, "wg1", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 0);
	g_assert_cmpint(lease_load(dir, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		g_autofree char *path = g_build_filename(dir, files[i], NULL);

		g_assert_cmpint(g_file_test(path, G_FILE_TEST_EXISTS), ==, i != 2);
	}
	/* again: nothing more to do; and a folder that is not there is no error */
	g_ptr_array_set_size(removed, 0);
	g_assert_cmpint(lease_drop_orphans(dir, removed), ==, 0);
	g_assert_cmpuint(removed->len, ==, 0);
	safe_tmp_rm(dir);
	g_assert_cmpint(lease_drop_orphans(dir, NULL), ==, 0);
}

/* The state files' refusals (test-state.c): others can write it, a link, not a file, too big. */
static void test_lease_refuses(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-lease");
	g_autofree char *sub = g_build_filename(dir, "run", NULL);
	g_autofree char *path = g_build_filename(sub, "wg0" LEASE_SUFFIX, NULL);
	g_autofree char *target = g_build_filename(sub, "elsewhere", NULL);
	g_autoptr(GArray) back = g_array_new(false, true, sizeof(struct rate_lease));
	struct rate_lease l = { .rate = 10, .until = 20 };
	uint8_t k[WG_KEY_LEN];
	int fd;

	key_of(1, l.key);
	key_of(2, k);
	g_assert_cmpint(lease_save(sub, "wg0", &l, 1, 0), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);

	/* a file others can write */
	g_array_set_size(back, 0);
	g_assert_cmpint(g_chmod(path, 0666), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
	g_assert_cmpuint(back->len, ==, 0);
	/* put does not build on what it may not read */
	g_assert_cmpint(lease_put(sub, "wg0", k, 1, 100, 0), ==, -EPERM);
	g_assert_cmpint(g_chmod(path, 0620), ==, 0);
	if (getgid() != 0)
		g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
	g_assert_cmpint(g_chmod(path, 0644), ==, 0);
	if (geteuid() == 0) {
		g_assert_cmpint(chown(path, 65534, 65534), ==, 0);
		g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
		g_assert_cmpint(chown(path, 0, 0), ==, 0);
	}
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);

	/* a folder others can write, or one above it, sticky or not */
	g_array_set_size(back, 0);
	g_assert_cmpint(g_chmod(sub, 0777), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
	g_assert_cmpint(lease_save(sub, "wg0", &l, 1, 0), ==, -EPERM);
	g_assert_cmpint(g_chmod(sub, 0755), ==, 0);
	g_assert_cmpint(g_chmod(dir, 01777), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
	g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
	g_assert_cmpuint(back->len, ==, 0);

	/* a link is not followed, wherever it leads */
	g_assert_cmpint(g_rename(path, target), ==, 0);
	g_assert_cmpint(symlink(target, path), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
	g_unlink(path);
	g_assert_cmpint(symlink("/dev/zero", path), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EPERM);
	g_unlink(path);
	/* a FIFO would hang the read */
	g_assert_cmpint(mkfifo(path, 0600), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EINVAL);
	g_unlink(path);
	/* more than LEASE_MAX lines could take (sparse: it takes no room) */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(ftruncate(fd, (off_t)64 << 20), ==, 0);
	close(fd);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, -EFBIG);
	g_assert_cmpuint(back->len, ==, 0);
	/* save replaces any of them whole */
	g_assert_cmpint(lease_save(sub, "wg0", &l, 1, 0), ==, 0);
	g_assert_cmpint(lease_load(sub, "wg0", back), ==, 0);
	g_assert_cmpuint(back->len, ==, 1);
	safe_tmp_rm(dir);
}

static void test_lease_now(void)
{
	int64_t a = lease_now(), b = lease_now();

	g_assert_cmpint(a, >, 0);
	g_assert_cmpint(b, >=, a);
}

/*
 * Which address set client asks, and what a message says of it when nothing
 * answers: a guess is said to be one, with what it came from.
 */
static void test_server_choose(void)
{
	static const struct {
		struct peer_row peers[2];
		size_t n_peers;
		const char *own; /* the tunnel's own address, "10.0.0.3/24"; NULL: none */
		const char *server, *answered;
		int how; /* -1: refused */
		const char *addr, *says; /* says: in the description, or in why */
	} t[] = {
		/* the case: one peer routing the /24, no /32 among its AllowedIPs */
		{ { { { "10.0.0.0/24" } } }, 1, "10.0.0.3/24", NULL, NULL, RATE_SERVER_GUESS,
		  "10.0.0.1",
		  "10.0.0.1 was a guess: the first address of the subnet of wg0's address "
		  "10.0.0.3/24, inside the peer's AllowedIPs 10.0.0.0/24" },
		{ { { { "0.0.0.0/0" } } }, 1, "10.0.0.3/24", NULL, NULL, RATE_SERVER_GUESS,
		  "10.0.0.1", "inside the peer's AllowedIPs 0.0.0.0/0" },
		{ { { { "fd00::/64" } } }, 1, "fd00::3/64", NULL, NULL, RATE_SERVER_GUESS, "fd00::1",
		  "fd00::1 was a guess: the first address of the subnet of wg0's address fd00::3/64" },
		/* known: a /32 among the AllowedIPs, the address that answered, a named one */
		{ { { { "10.0.0.0/24", "10.0.0.2/32" } } }, 1, "10.0.0.3/24", NULL, NULL,
		  RATE_SERVER_HOST, "10.0.0.2", "10.0.0.2 is the peer's only AllowedIPs entry" },
		{ { { { "10.0.0.0/24" } } }, 1, "10.0.0.3/24", NULL, "10.0.0.2", RATE_SERVER_ANSWERED,
		  "10.0.0.2", "10.0.0.2 answered the last request" },
		{ { { { "10.0.0.0/24" } }, { { "10.1.0.0/24" } } }, 2, "10.0.0.3/24", NULL,
		  "10.1.0.9", RATE_SERVER_ANSWERED, "10.1.0.9", "answered" },
		{ { { { "10.0.0.0/24" } } }, 1, "10.0.0.3/24", "10.0.0.2", NULL, RATE_SERVER_GIVEN,
		  "10.0.0.2", "10.0.0.2 was named as the server" },
		/* an answer from an address no peer holds now is no knowledge */
		{ { { { "10.0.0.0/24" } } }, 1, "10.0.0.3/24", NULL, "192.168.1.1",
		  RATE_SERVER_GUESS, "10.0.0.1", "was a guess" },
		/* nothing to go on */
		{ { { { "10.0.0.0/24" } }, { { "10.1.0.0/24" } } }, 2, "10.0.0.3/24", NULL, NULL, -1,
		  NULL, "2 peers: name the server's tunnel address (server ADDR)" },
		{ { { { "10.0.0.0/24" } } }, 1, "10.0.0.3/32", NULL, NULL, -1, NULL,
		  "name it (server ADDR)" },
		{ { { { "10.0.0.0/24" } } }, 1, "10.0.0.1/24", NULL, NULL, -1, NULL,
		  "name it (server ADDR)" }, /* the first address is this host's own */
		{ { { { "10.0.0.0/24" } } }, 1, NULL, "10.0.0.x", NULL, -1, NULL, "not an IPv4" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		struct wg_peer *peers = peers_new(t[i].peers, t[i].n_peers);
		struct addr_info own = { .ifindex = 7, .scope = 0 };
		struct rate_server srv;
		char why[192] = "", said[320] = "";
		int r;

		if (t[i].own) {
			struct tc_prefix p = prefix(t[i].own);

			own.family = p.family;
			own.prefixlen = p.prefixlen;
			memcpy(own.addr, p.addr, 16);
		}
		r = rate_server_choose("wg0", peers, t[i].n_peers, &own, t[i].own ? 1 : 0,
				       t[i].server, t[i].answered, &srv, why, sizeof(why));
		g_test_message("%zu: %d %s", i, r, why);
		if (t[i].how < 0) {
			g_assert_cmpint(r, ==, -EINVAL);
			g_assert_nonnull(strstr(why, t[i].says));
		} else {
			g_assert_cmpint(r, ==, 0);
			g_assert_cmpint(srv.how, ==, t[i].how);
			g_assert_cmpstr(srv.addr, ==, t[i].addr);
			rate_server_describe(&srv, said, sizeof(said));
			g_test_message("%s", said);
			g_assert_nonnull(strstr(said, t[i].says));
		}
		peers_free(peers, t[i].n_peers);
	}
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);

	g_test_add_func("/channel/peer/source", test_peer_by_source);
	g_test_add_func("/channel/peer/overlap", test_peer_overlap);
	g_test_add_func("/channel/peer/own-overlap", test_peer_own_overlap);
	g_test_add_func("/channel/policy", test_policy);
	g_test_add_func("/channel/server/choose", test_server_choose);
	g_test_add_func("/channel/bucket/burst", test_bucket_burst);
	g_test_add_func("/channel/bucket/probe", test_probe_bucket);
	g_test_add_func("/channel/bucket/gap", test_bucket_gap);
	g_test_add_func("/channel/bucket/backwards", test_bucket_backwards);
	g_test_add_func("/channel/gate/index", test_gate_index);
	g_test_add_func("/channel/gate/index-same", test_gate_index_same);
	g_test_add_func("/channel/gate/rate-flood", test_gate_rate_flood);
	g_test_add_func("/channel/gate/probe-flood", test_gate_probe_flood);
	g_test_add_func("/channel/gate/shared", test_gate_shared);
	g_test_add_func("/channel/gate/keeps", test_gate_keeps);
	g_test_add_func("/channel/lease/next-end", test_lease_next_end);
	g_test_add_func("/channel/lease/parse", test_lease_parse);
	g_test_add_func("/channel/lease/parse-max", test_lease_parse_max);
	g_test_add_func("/channel/lease/files", test_lease_files);
	g_test_add_func("/channel/lease/write-behind", test_lease_write_behind);
	g_test_add_func("/channel/lease/load-junk", test_lease_load_junk);
	g_test_add_func("/channel/lease/orphans", test_lease_orphans);
	g_test_add_func("/channel/lease/refuses", test_lease_refuses);
	g_test_add_func("/channel/lease/now", test_lease_now);

	return g_test_run();
}
