// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <glib.h>

#include "channel/gate.h"
#include "channel/policy.h"
#include "shape/peers.h"
#include "util/hash.h"

/* Interfaces remembered; only WireGuard ones reach the gate, so this is never reached in use. */
#define GATE_IFACES_MAX 256

/* One peer's own budgets. */
struct budget {
	struct rate_bucket rate, probe;
};

/* An AllowedIP wider than one host, and its peer. */
struct net {
	struct tc_prefix prefix;
	int peer;
};

/* A host address, the key of the hosts index: family and the address. */
struct host {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* IPv4: the first 4, the rest zero */
};

/* In the hosts index: a host two peers hold (WireGuard takes no such thing, but a dump can). */
#define HOST_TWICE G_MAXUINT

struct iface {
	uint8_t (*keys)[WG_KEY_LEN]; /* the peers' keys, as dumped (the index points into it) */
	size_t n;
	double at; /* when dumped */
	GHashTable *budgets; /* key (WG_KEY_LEN bytes) -> struct budget */
	/*
	 * The address-to-peer index: a /32 or /128 by a hash (a hub's peers are
	 * mostly one host each), wider ones in a list looked through whole.
	 */
	GHashTable *hosts; /* struct host -> peer index + 1, or HOST_TWICE */
	GArray *nets; /* struct net */
};

static guint host_hash(gconstpointer k)
{
	return bytes_hash(k, sizeof(struct host));
}

static gboolean host_equal(gconstpointer a, gconstpointer b)
{
	return !memcmp(a, b, sizeof(struct host));
}

/* f's address index from the dump's peers (n of them, as f's keys). */
static void index_build(struct iface *f, const struct wg_peer *peers, size_t n)
{
	g_clear_pointer(&f->hosts, g_hash_table_unref);
	g_clear_pointer(&f->nets, g_array_unref);
	f->hosts = g_hash_table_new_full(host_hash, host_equal, g_free, NULL);
	f->nets = g_array_new(false, false, sizeof(struct net));
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < peers[i].n_allowed; j++) {
			const struct tc_prefix *p = &peers[i].allowed[j];
			struct host *h;
			gpointer had;

			if (p->prefixlen != (p->family == AF_INET ? 32u : 128u)) {
				g_array_append_val(f->nets, ((struct net){ .prefix = *p, .peer = (int)i }));
				continue;
			}
			h = g_new0(struct host, 1);
			h->family = (uint8_t)p->family;
			memcpy(h->addr, p->addr, p->family == AF_INET ? 4 : 16);
			had = g_hash_table_lookup(f->hosts, h);
			g_hash_table_replace(f->hosts, h,
					     GUINT_TO_POINTER(had && GPOINTER_TO_UINT(had) != i + 1
								      ? HOST_TWICE
								      : (guint)i + 1));
		}
	}
}

/*
 * The peer whose AllowedIPs hold addr, as peer_by_source says from the
 * whole list (-ENOENT none, -ENOTUNIQ more than one), by the index: the
 * host's entry, then every wider prefix.
 */
static int index_peer(const struct iface *f, int family, const uint8_t *addr)
{
	struct host key = { .family = (uint8_t)family };
	struct tc_prefix host = { .family = family };
	guint at;
	int found = -ENOENT;

	if (family != AF_INET && family != AF_INET6)
		return -ENOENT;
	host.prefixlen = family == AF_INET ? 32 : 128;
	memcpy(key.addr, addr, host.prefixlen / 8);
	memcpy(host.addr, addr, host.prefixlen / 8);
	at = GPOINTER_TO_UINT(g_hash_table_lookup(f->hosts, &key));
	if (at == HOST_TWICE)
		return -ENOTUNIQ;
	if (at)
		found = (int)at - 1;
	for (guint i = 0; i < f->nets->len; i++) {
		const struct net *n = &g_array_index(f->nets, struct net, i);

		if (n->peer == found || !tc_prefix_contains(&n->prefix, &host))
			continue;
		if (found >= 0)
			return -ENOTUNIQ;
		found = n->peer;
	}
	return found;
}

/* Everyone's budget for one kind: a count per whole second. */
struct shared {
	double second;
	unsigned int used;
};

struct gate {
	GHashTable *ifaces; /* ifindex -> struct iface */
	struct shared shared[2]; /* by enum gate_kind */
};

/* Public keys are the admin's and random: their first bytes hash well enough. */
static guint key_hash(gconstpointer k)
{
	guint h;

	memcpy(&h, k, sizeof(h));
	return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return !memcmp(a, b, WG_KEY_LEN);
}

static void iface_free(gpointer p)
{
	struct iface *f = p;

	g_free(f->keys);
	g_hash_table_unref(f->budgets);
	if (f->hosts)
		g_hash_table_unref(f->hosts);
	if (f->nets)
		g_array_unref(f->nets);
	g_free(f);
}

struct gate *gate_new(void)
{
	struct gate *g = g_new0(struct gate, 1);

	g->ifaces = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, iface_free);
	g->shared[GATE_RATE].second = g->shared[GATE_PROBE].second = -1;
	return g;
}

void gate_free(struct gate *g)
{
	if (!g)
		return;
	g_hash_table_unref(g->ifaces);
	g_free(g);
}

void gate_index(struct gate *g, int ifindex, const struct wg_peer *peers, size_t n, double now)
{
	struct iface *f = g_hash_table_lookup(g->ifaces, GINT_TO_POINTER(ifindex));
	GHashTable *budgets = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);

	if (!f) {
		if (g_hash_table_size(g->ifaces) >= GATE_IFACES_MAX)
			g_hash_table_remove_all(g->ifaces);
		f = g_new0(struct iface, 1);
		f->budgets = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
		g_hash_table_insert(g->ifaces, GINT_TO_POINTER(ifindex), f);
	}
	g_free(f->keys);
	f->keys = g_malloc_n(n ? n : 1, WG_KEY_LEN);
	f->n = n;
	for (size_t i = 0; i < n; i++) {
		gpointer old_key, b;

		memcpy(f->keys[i], peers[i].key, WG_KEY_LEN);
		/* a peer still there keeps what it has spent: a dump is no refill */
		if (g_hash_table_steal_extended(f->budgets, peers[i].key, &old_key, &b))
			g_hash_table_insert(budgets, old_key, b);
	}
	g_hash_table_unref(f->budgets);
	f->budgets = budgets;
	f->at = now;
	index_build(f, peers, n);
}

int gate_peer(const struct gate *g, int ifindex, int family, const uint8_t *addr, double now,
	      uint8_t key[WG_KEY_LEN])
{
	const struct iface *f = g_hash_table_lookup(g->ifaces, GINT_TO_POINTER(ifindex));
	double age;
	int who;

	if (!f)
		return -ESTALE;
	age = now - f->at;
	/* a clock behind the dump (a fake one, or a bug) must not keep an index forever */
	if (age >= GATE_INDEX_MAX_AGE || age < 0)
		return -ESTALE;
	who = index_peer(f, family, addr);
	if (who < 0)
		return age >= GATE_INDEX_MISS_AGE ? -ESTALE : who;
	memcpy(key, f->keys[who], WG_KEY_LEN);
	return 0;
}

double gate_index_at(const struct gate *g, int ifindex)
{
	const struct iface *f = g_hash_table_lookup(g->ifaces, GINT_TO_POINTER(ifindex));

	return f ? f->at : -1;
}

bool gate_fresh(const struct gate *g, int ifindex, double now, double max_age)
{
	const struct iface *f = g_hash_table_lookup(g->ifaces, GINT_TO_POINTER(ifindex));

	return f && now >= f->at && now - f->at < max_age;
}

static bool shared_take(struct shared *s, double now, unsigned int limit)
{
	double second = (double)(int64_t)now; /* now >= 0: a monotonic clock */

	if (second != s->second) {
		s->second = second;
		s->used = 0;
	}
	if (s->used >= limit)
		return false;
	s->used++;
	return true;
}

int gate_take(struct gate *g, int ifindex, const uint8_t *key, enum gate_kind kind, double now)
{
	struct iface *f = g_hash_table_lookup(g->ifaces, GINT_TO_POINTER(ifindex));
	struct budget *b;
	bool own;

	if (!f)
		return -EDQUOT; /* gate_peer named no peer here: nobody to charge */
	b = g_hash_table_lookup(f->budgets, key);
	if (!b) {
		/* at most one per indexed peer: gate_index drops the gone ones */
		b = g_new0(struct budget, 1);
		g_hash_table_insert(f->budgets, g_memdup2(key, WG_KEY_LEN), b);
	}
	own = kind == GATE_RATE ? rate_bucket_take(&b->rate, now) :
				  probe_bucket_take(&b->probe, now);
	if (!own)
		return -EDQUOT;
	if (!shared_take(&g->shared[kind], now,
			 kind == GATE_RATE ? GATE_RATES_PER_SECOND : GATE_PROBES_PER_SECOND))
		return -EBUSY;
	return 0;
}
