// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <string.h>
#include <glib.h>

#include "channel/gate.h"
#include "channel/policy.h"

/* Interfaces remembered; only WireGuard ones reach the gate, so this is never reached in use. */
#define GATE_IFACES_MAX 256

/* One peer's own budgets. */
struct budget {
	struct rate_bucket rate, probe;
};

struct iface {
	struct wg_peer *peers; /* keys and AllowedIPs only; g_malloc'd */
	size_t n;
	double at; /* when dumped */
	GHashTable *budgets; /* key (WG_KEY_LEN bytes) -> struct budget */
};

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

static void peers_free(struct wg_peer *peers, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g_free(peers[i].allowed);
	g_free(peers);
}

static void iface_free(gpointer p)
{
	struct iface *f = p;

	peers_free(f->peers, f->n);
	g_hash_table_unref(f->budgets);
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
	peers_free(f->peers, f->n);
	f->peers = g_new0(struct wg_peer, n);
	f->n = n;
	for (size_t i = 0; i < n; i++) {
		gpointer old_key, b;

		memcpy(f->peers[i].key, peers[i].key, WG_KEY_LEN);
		f->peers[i].allowed = g_memdup2(peers[i].allowed,
						peers[i].n_allowed * sizeof(*peers[i].allowed));
		f->peers[i].n_allowed = peers[i].n_allowed;
		/* a peer still there keeps what it has spent: a dump is no refill */
		if (g_hash_table_steal_extended(f->budgets, peers[i].key, &old_key, &b))
			g_hash_table_insert(budgets, old_key, b);
	}
	g_hash_table_unref(f->budgets);
	f->budgets = budgets;
	f->at = now;
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
	who = peer_by_source(f->peers, f->n, family, addr);
	if (who < 0)
		return age >= GATE_INDEX_MISS_AGE ? -ESTALE : who;
	memcpy(key, f->peers[who].key, WG_KEY_LEN);
	return 0;
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
