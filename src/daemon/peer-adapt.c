// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The server follows a peer's line alone ([peer NAME] adapt = yes): for a
 * client that runs nothing but WireGuard (a phone), the daemon times ICMP
 * echoes to the peer's address inside the tunnel while its classes carry
 * traffic, and runs the client's control law (adapt/controller.h) for each
 * direction on their round trips and that direction's class's own byte
 * counter: the download's on the interface, the upload's (when the peer has
 * upload =) on its IFB. A round trip holds both directions' queues; a
 * direction whose class is idle is not cut for it. A new rate is one change
 * of the peer's class in place (shape_peer_rate, shape_peer_upload_rate),
 * and the reconciler keeps it (peer_adapt_reconciler), so enforcing the
 * configuration does not undo it.
 *
 * Round trips come first from the peer's own TCP (passive): a tc program
 * pair on the interface (adapt/tcp-rtt.h) times data sent to the peer by
 * its ACK, and ACKs sent to it by the timestamp its next segment echoes,
 * armed only while the peer's class is loaded, and the daemon takes the
 * least round trip of each tick. A round trip timed from data sent to the
 * peer includes the time that data waited in the peer's own class (the
 * program sees it before the qdisc): the class's backlog and one packet at
 * its rate are taken off. A tick with none (no TCP: a call, QUIC; or an
 * upload without timestamps) sends an echo.
 *
 * The peer's timestamps also tell its upload's queue apart (the one-way
 * delay of its packets over their connection's least): then the upload's
 * controller is fed that wait and the download's the round trip less it,
 * so a queue on one line no longer cuts both (adapt_tcp_rtt_split).
 *
 * One socket per address family, one timer, one table and one tc program
 * pair serve every adapting peer; an answer finds its peer by its sequence
 * number. While a peer's class is idle nothing is sent or timed. When the
 * peer's own wgshape holds a lease on its rate (the rate channel), that one
 * adapts it: the server stands aside (said once) until the lease ends.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <glib.h>
#include <glib-unix.h>

#include "adapt/controller.h"
#include "adapt/ping.h"
#include "adapt/tcp-rtt.h"
#include "daemon/internal.h"
#include "shape/peers.h"
#include "shape/shape.h"
#include "shape/state.h"
#include "shape/units.h"
#include "util/log.h"

#define LOADED_TICK_MS 50 /* while a peer's class carries traffic: a probe each */
#define IDLE_TICK_MS 200 /* otherwise: its counter looked at, nothing sent */
#define IDLE_AFTER_US 1000000 /* no traffic this long: idle */
#define SENT_KEPT 1024 /* probes remembered, by seq % SENT_KEPT */
#define MAX_TIMED 8 /* a peer's addresses whose TCP is timed */
#define TC_PROG_NAME "wgshape_rtt"
#define FULL_PACKET 1500 /* bytes */
#define UP_FRESH_US 120000 /* the upload's own queue speaks for round trips this late */

enum { PA_DOWN, PA_UP };
static const char *const pa_dir_names[] = { "download", "upload" };

/* One direction of an adapting peer: its class's controller and counter. */
struct pdir {
	bool on; /* adapted: the download always, the upload when the peer has upload = */
	uint64_t min, base, max; /* as its [peer] section says */
	struct adapt_ctl ctl;
	uint64_t bytes; /* its class's, as last read */
	uint32_t backlog; /* ... and the bytes queued in it */
	gint64 bytes_us; /* when */
	uint64_t sample_bytes; /* ... at the last sample */
	bool have_bytes, have_sample;
	gint64 loaded_at_us; /* the last look that found traffic */
	uint64_t rate; /* what it set; 0: none (the configured rate) */
};

/* One adapting peer on one interface. */
struct padapt {
	unsigned int id;
	char ifname[IFNAME_SIZE];
	uint8_t key[WG_KEY_LEN];
	char name[64];
	int family;
	uint8_t addr[16];
	char addr_text[INET6_ADDRSTRLEN];
	/* the addresses whose TCP is timed: its /32s and /128s, and probe = */
	struct {
		int family;
		uint8_t addr[16];
	} timed[MAX_TIMED];
	int n_timed;
	bool armed; /* their timing is on (the peer is loaded) */
	bool passive_said, split_said;
	gint64 least_rtt_us; /* the least round trip of this load; 0: none yet */
	/* the wait in its upload alone, from its TCP's timestamps (the last tick's), and when */
	gint64 up_us, up_at_us;
	struct pdir dir[2]; /* PA_DOWN, PA_UP */
	bool aside; /* its client's lease decides (said once) */
	bool lost_said;
	/* from the kept state, looked at once a second (a stat each): its class, a lease */
	uint16_t minor;
	bool leased;
	gint64 looked_us;
};

struct sent {
	unsigned int id; /* 0: free */
	uint16_t seq;
	gint64 at_us;
};

struct peer_adapters {
	GHashTable *peers; /* "ifname key" -> struct padapt */
	GHashTable *by_id; /* id -> struct padapt */
	struct adapt_ping *ping[2]; /* AF_INET, AF_INET6; opened when first needed */
	guint ping_src[2];
	bool ping_failed[2];
	guint timer;
	unsigned int tick_ms;
	unsigned int next_id;
	uint16_t seq;
	struct sent sent[SENT_KEPT];
	struct adapt_tcp_rtt *rtt; /* the tc programs; NULL: not loaded (yet) */
	bool rtt_failed;
	GHashTable *hooked; /* ifname -> struct hook: where the programs are attached */
};

/* An interface the programs are attached to, or could not be (said once for its ifindex). */
struct hook {
	int ifindex;
	bool made; /* the clsact is wgshape's: it goes with the programs when nothing else is on it */
	bool failed;
};

static char *peer_id(const char *ifname, const uint8_t *key)
{
	char b64[45];

	wg_key_to_base64(key, b64);
	return g_strdup_printf("%s %s", ifname, b64);
}

static int fam_slot(int family)
{
	return family == AF_INET ? 0 : 1;
}

static void on_rtt(struct daemon *d, struct padapt *p, gint64 rtt_us, gint64 now_us);

static gboolean on_ping_fd(gint fd, GIOCondition cond, gpointer data)
{
	struct daemon *d = data;
	struct peer_adapters *pa = d->padapt;
	gint64 now = g_get_monotonic_time();
	uint8_t from[16];
	uint16_t seq;
	int r;

	for (int i = 0; i < 2; i++) {
		if (!pa->ping[i] || adapt_ping_fd(pa->ping[i]) != fd)
			continue;
		while ((r = adapt_ping_read(pa->ping[i], &seq, from)) > 0) {
			struct sent *s = &pa->sent[seq % SENT_KEPT];
			struct padapt *p;

			if (r != 1 || !s->id || s->seq != seq)
				continue;
			p = g_hash_table_lookup(pa->by_id, GUINT_TO_POINTER(s->id));
			s->id = 0;
			if (p && !memcmp(from, p->addr, p->family == AF_INET ? 4 : 16))
				on_rtt(d, p, now - s->at_us, now);
		}
	}
	return G_SOURCE_CONTINUE;
}

static struct adapt_ping *pinger(struct daemon *d, int family)
{
	struct peer_adapters *pa = d->padapt;
	int i = fam_slot(family), r;

	if (pa->ping[i] || pa->ping_failed[i])
		return pa->ping[i];
	r = adapt_ping_open(family, &pa->ping[i]);
	if (r < 0) {
		pa->ping_failed[i] = true;
		log_warn("peer adapt: no ICMP%s socket (%s): peers probed over IPv%s are not "
			 "adapted", family == AF_INET ? "" : "v6", strerror(-r),
			 family == AF_INET ? "4" : "6");
		return NULL;
	}
	pa->ping_src[i] = g_unix_fd_add(adapt_ping_fd(pa->ping[i]), G_IO_IN, on_ping_fd, d);
	log_debug("peer adapt: ICMP%s through a %s socket", family == AF_INET ? "" : "v6",
		  adapt_ping_raw(pa->ping[i]) ? "raw" : "ping");
	return pa->ping[i];
}

/* The rate the controller of p's direction i chose: its class changed in place. */
static void apply(struct daemon *d, struct padapt *p, int i, enum adapt_why why)
{
	struct pdir *x = &p->dir[i];
	char b[UNITS_BUFSZ];
	int r;

	if (x->ctl.rate == x->rate)
		return;
	r = (i == PA_UP ? shape_peer_upload_rate : shape_peer_rate)(
		d->nl, d->opts->statedir, p->ifname, p->key, x->ctl.rate, PEER_SOURCE_ADAPT);
	format_rate(b, sizeof(b), x->ctl.rate);
	if (r == 1) {
		/* not one class change (the tree is being remade): the reconciler asks us */
		daemon_schedule(d, p->ifname, 0);
	} else if (r < 0) {
		log_err("%s: peer %s: adapt: %s %s: %s", p->ifname, p->name, pa_dir_names[i], b,
			strerror(-r));
		return;
	}
	x->rate = x->ctl.rate;
	/* debug, as a client's adapter's: several a second under load, per peer */
	log_debug("%s: peer %s: adapt: %s %s (%s, %.1f ms over the least round trip)", p->ifname,
		  p->name, pa_dir_names[i], b, adapt_why_name(why),
		  (double)adapt_added_us(&x->ctl) / 1000);
}

/*
 * A round trip of p's (an echo's, or the least of its TCP's this tick): both
 * controllers. When its TCP's timestamps told the wait in its upload alone
 * (this tick), each direction is fed its own queue (adapt_tcp_rtt_split):
 * the upload that wait, the download the round trip less it.
 */
static void on_rtt(struct daemon *d, struct padapt *p, gint64 rtt_us, gint64 now_us)
{
	gint64 up_us = p->up_at_us && now_us - p->up_at_us <= UP_FRESH_US ? p->up_us : -1;

	if (p->aside)
		return;
	if (p->lost_said) {
		log_info("%s: peer %s: adapt: %s answers again", p->ifname, p->name, p->addr_text);
		p->lost_said = false;
	}
	if (!p->least_rtt_us || rtt_us < p->least_rtt_us)
		p->least_rtt_us = rtt_us;
	if (up_us >= 0 && !p->split_said) {
		log_info("%s: peer %s: adapt: its upload's own queue from its TCP timestamps: "
			 "each direction cut for its own", p->ifname, p->name);
		p->split_said = true;
	}
	for (int i = PA_DOWN; i <= PA_UP; i++) {
		struct pdir *x = &p->dir[i];
		struct adapt_sample s = {
			.now_us = (uint64_t)now_us,
			/* a round trip holds both directions' queues whole, unless split */
			.delay_us = adapt_tcp_rtt_split(rtt_us, p->least_rtt_us, up_us, i == PA_UP),
			.rtt_us = (uint32_t)CLAMP(rtt_us, 0, 10000000),
		};
		enum adapt_why why;

		if (!x->on || !x->have_bytes)
			continue;
		s.sent = x->have_sample && x->bytes >= x->sample_bytes ? x->bytes - x->sample_bytes
									  : 0;
		x->sample_bytes = x->bytes;
		if (!x->have_sample) {
			x->have_sample = true;
			continue; /* the first: nothing to compare with */
		}
		why = adapt_sample(&x->ctl, &s);
		if (why != ADAPT_NONE)
			apply(d, p, i, why);
	}
}

#define LOOK_EVERY_US 1000000

/*
 * p's class and whether its rate is its client's to decide (a lease through
 * the rate channel), from the kept state, at most once a second.
 */
static void look_up(struct daemon *d, struct padapt *p, gint64 now)
{
	struct peer_want *w = NULL;

	if (p->looked_us && now - p->looked_us < LOOK_EVERY_US)
		return;
	p->looked_us = now;
	state_borrow(d->opts->statedir, p->ifname, p->key, &w);
	p->minor = w ? w->minor : 0;
	p->leased = w && !strcmp(w->source, PEER_SOURCE_LEASE);
}

/*
 * ifname's HTB classes by classid (one dump), or its IFB's (upload), or NULL
 * when it has no such tree of ours.
 */
static GHashTable *classes_of(struct daemon *d, const char *ifname, bool upload,
			      struct tc_class_info **cls)
{
	const struct shape_state *st = state_peek(d->opts->statedir, ifname);
	struct link_info ifb;
	GHashTable *by_id;
	size_t n = 0;
	int ifindex;

	*cls = NULL;
	if (!st || !(upload ? st->in_tree : st->tree))
		return NULL;
	ifindex = st->ifindex;
	if (upload && netlink_link_get(d->nl, st->ifb, &ifb) < 0)
		return NULL;
	if (upload)
		ifindex = ifb.ifindex;
	if (netlink_class_list(d->nl, ifindex, cls, &n) < 0)
		return NULL;
	by_id = g_hash_table_new(g_direct_hash, g_direct_equal);
	for (size_t k = 0; k < n; k++)
		if (!strcmp((*cls)[k].kind, "htb"))
			g_hash_table_insert(by_id, GUINT_TO_POINTER((*cls)[k].classid), &(*cls)[k]);
	return by_id;
}

/* One direction's counter from its class (NULL: none), and whether it carries traffic. */
static void count(struct pdir *x, const struct tc_class_info *c, gint64 now)
{
	uint64_t was = x->bytes;
	gint64 was_us = x->bytes_us;
	bool had = x->have_bytes;

	x->have_bytes = c != NULL;
	x->backlog = c ? c->backlog_bytes : 0;
	if (c) {
		x->bytes = c->bytes;
		x->bytes_us = now;
	}
	/* traffic: a tenth of its rate since the last look */
	if (had && x->have_bytes && x->bytes >= was && now > was_us &&
	    (double)(x->bytes - was) * G_USEC_PER_SEC / (double)(now - was_us) >=
		    x->ctl.p.idle_frac * (double)x->ctl.rate)
		x->loaded_at_us = now;
}

/*
 * Each adapting peer's counters, from one dump a tick of its interface's
 * classes, and of its IFB's when a peer there adapts its upload.
 */
static void read_counters(struct daemon *d, gint64 now)
{
	struct peer_adapters *pa = d->padapt;
	/* ifname -> its classes by classid (an empty table: none to read), a table a direction */
	g_autoptr(GHashTable) down = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
							    (GDestroyNotify)g_hash_table_unref);
	g_autoptr(GHashTable) up = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
							  (GDestroyNotify)g_hash_table_unref);
	GHashTable *ifaces[2] = { down, up };
	g_autoptr(GPtrArray) dumps = g_ptr_array_new_with_free_func(free);
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, pa->peers);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct padapt *p = val;

		look_up(d, p, now);
		for (int i = PA_DOWN; i <= PA_UP; i++) {
			GHashTable *by_id = g_hash_table_lookup(ifaces[i], p->ifname);
			const struct tc_class_info *c = NULL;

			if (!p->dir[i].on)
				continue;
			if (!by_id) {
				struct tc_class_info *cls;

				by_id = classes_of(d, p->ifname, i == PA_UP, &cls);
				if (!by_id)
					by_id = g_hash_table_new(g_direct_hash, g_direct_equal);
				g_ptr_array_add(dumps, cls);
				g_hash_table_insert(ifaces[i], p->ifname, by_id);
			}
			if (p->minor)
				c = g_hash_table_lookup(by_id,
							GUINT_TO_POINTER(TREE_HANDLE(p->minor)));
			count(&p->dir[i], c, now);
		}
	}
}

static void set_tick(struct daemon *d, unsigned int ms);

/* Arm (or disarm) the timing of p's TCP. */
static void arm(struct daemon *d, struct padapt *p, bool on)
{
	struct peer_adapters *pa = d->padapt;

	if (p->armed == on || !pa->rtt)
		return;
	p->armed = on;
	for (int k = 0; k < p->n_timed; k++)
		adapt_tcp_rtt_watch(pa->rtt, p->timed[k].family, p->timed[k].addr, on);
}

/*
 * The least round trip of p's TCP since the last tick, in us: -1 when none
 * was timed. One timed from data sent to p loses what that data waited in
 * p's own class first (its backlog at its rate). The wait in p's upload
 * alone, when its timestamps told it, goes to p->up_us (the most of its
 * addresses').
 */
static gint64 passive_rtt(struct daemon *d, struct padapt *p, gint64 now)
{
	struct peer_adapters *pa = d->padapt;
	const struct pdir *down = &p->dir[PA_DOWN];
	uint32_t data = UINT32_MAX, ack = UINT32_MAX;
	gint64 best = -1, up = -1;

	if (!pa->rtt || !p->armed)
		return -1;
	for (int k = 0; k < p->n_timed; k++) {
		struct adapt_tcp_rtt_take t;

		if (adapt_tcp_rtt_take(pa->rtt, p->timed[k].family, p->timed[k].addr, &t) != 1)
			continue;
		data = MIN(data, t.data_us);
		ack = MIN(ack, t.ack_us);
		if (t.up_us != UINT32_MAX)
			up = MAX(up, (gint64)t.up_us);
	}
	if (up >= 0) {
		p->up_us = up;
		p->up_at_us = now;
	}
	best = adapt_tcp_rtt_pick(data, ack, down->backlog, FULL_PACKET, down->ctl.rate);
	if (best >= 0 && !p->passive_said) {
		log_info("%s: peer %s: adapt: round trips from its own TCP (timed on %s)",
			 p->ifname, p->name, p->ifname);
		p->passive_said = true;
	}
	return best;
}

static gboolean on_tick(gpointer data)
{
	struct daemon *d = data;
	struct peer_adapters *pa = d->padapt;
	gint64 now = g_get_monotonic_time();
	bool any_loaded = false;
	GHashTableIter it;
	gpointer val;

	read_counters(d, now);
	g_hash_table_iter_init(&it, pa->peers);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct padapt *p = val;
		bool loaded = false;
		struct adapt_ping *ping;
		gint64 rtt;

		look_up(d, p, now);
		if (p->leased != p->aside) {
			p->aside = !p->aside;
			log_info("%s: peer %s: %s", p->ifname, p->name,
				 p->aside ? "its own wgshape adapts (a client lease): the server's "
					    "adaptation stands aside" :
					    "no client lease any more: the server adapts it");
			for (int i = PA_DOWN; i <= PA_UP; i++) {
				struct adapt_params prm = p->dir[i].ctl.p;

				adapt_init(&p->dir[i].ctl, &prm);
				p->dir[i].rate = 0;
				p->dir[i].have_sample = false;
			}
		}
		if (p->aside) {
			arm(d, p, false);
			continue;
		}
		for (int i = PA_DOWN; i <= PA_UP; i++) {
			struct pdir *x = &p->dir[i];
			enum adapt_why why;

			if (!x->on)
				continue;
			if (!x->loaded_at_us || now - x->loaded_at_us >= IDLE_AFTER_US) {
				why = adapt_quiet(&x->ctl, (uint64_t)now);
				if (why != ADAPT_NONE)
					apply(d, p, i, why);
				continue;
			}
			loaded = true;
			why = adapt_tick(&x->ctl, (uint64_t)now);
			if (why == ADAPT_LOST && !p->lost_said) {
				log_warn("%s: peer %s: adapt: %s does not answer ICMP echo: its "
					 "configured rates until it does", p->ifname, p->name,
					 p->addr_text);
				p->lost_said = true;
			}
			if (why != ADAPT_NONE)
				apply(d, p, i, why);
		}
		arm(d, p, loaded);
		if (!loaded) {
			/* the next load finds the path anew (a phone that roamed) */
			p->least_rtt_us = 0;
			continue;
		}
		any_loaded = true;
		rtt = passive_rtt(d, p, now);
		if (rtt >= 0) {
			on_rtt(d, p, rtt, now);
			continue;
		}
		ping = pinger(d, p->family);
		if (ping) {
			struct sent *s = &pa->sent[pa->seq % SENT_KEPT];

			*s = (struct sent){ .id = p->id, .seq = pa->seq, .at_us = g_get_monotonic_time() };
			if (adapt_ping_send(ping, p->addr, pa->seq) < 0)
				s->id = 0;
			pa->seq++;
		}
	}
	set_tick(d, any_loaded ? LOADED_TICK_MS : IDLE_TICK_MS);
	return G_SOURCE_CONTINUE;
}

static void set_tick(struct daemon *d, unsigned int ms)
{
	struct peer_adapters *pa = d->padapt;

	if (pa->timer && pa->tick_ms == ms)
		return;
	if (pa->timer)
		g_source_remove(pa->timer);
	pa->tick_ms = ms;
	pa->timer = g_timeout_add(ms, on_tick, d);
}

/* The address to probe: probe = ADDR, else the peer's /32 or /128. false when none. */
static bool probe_addr(const struct conf_peer *cp, const struct wg_peer *wp, int *family,
		       uint8_t addr[16])
{
	if (cp->probe) {
		*family = strchr(cp->probe, ':') ? AF_INET6 : AF_INET;
		return inet_pton(*family, cp->probe, addr) == 1;
	}
	for (size_t i = 0; wp && i < wp->n_allowed; i++) {
		const struct tc_prefix *a = &wp->allowed[i];

		if (a->prefixlen == (a->family == AF_INET ? 32u : 128u)) {
			*family = a->family;
			memcpy(addr, a->addr, 16);
			return true;
		}
	}
	return false;
}

/* The addresses whose TCP is timed: p's /32s and /128s, and its probe address. */
static void timed_addrs(struct padapt *p, const struct wg_peer *wp)
{
	bool probe_in = false;

	for (size_t i = 0; wp && i < wp->n_allowed && p->n_timed < MAX_TIMED; i++) {
		const struct tc_prefix *a = &wp->allowed[i];

		if (a->prefixlen != (a->family == AF_INET ? 32u : 128u))
			continue;
		p->timed[p->n_timed].family = a->family;
		memcpy(p->timed[p->n_timed].addr, a->addr, 16);
		probe_in |= a->family == p->family &&
			    !memcmp(a->addr, p->addr, a->family == AF_INET ? 4 : 16);
		p->n_timed++;
	}
	if (!probe_in && p->n_timed < MAX_TIMED) {
		p->timed[p->n_timed].family = p->family;
		memcpy(p->timed[p->n_timed].addr, p->addr, 16);
		p->n_timed++;
	}
}

/* ifname's adapting peers as the configuration says now, into want (id -> padapt). */
static void wanted_on(struct daemon *d, const char *ifname, const struct shape_state *st,
		      GHashTable *want)
{
	struct wg_peer *peers = NULL;
	size_t n = 0;
	bool read = false;

	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);
		const struct conf_peer *cp = config_peer(d->cfg, ifname, w->key);
		const struct wg_peer *wp = NULL;
		struct adapt_params prm;
		struct padapt *p;

		if (!cp || !cp->adapt)
			continue;
		if (!read) {
			read = true;
			if (netlink_wg_peers(d->nl, ifname, &peers, &n) < 0)
				n = 0;
		}
		for (size_t k = 0; k < n && !wp; k++)
			if (!memcmp(peers[k].key, w->key, WG_KEY_LEN))
				wp = &peers[k];
		p = g_new0(struct padapt, 1);
		g_strlcpy(p->ifname, ifname, sizeof(p->ifname));
		memcpy(p->key, w->key, WG_KEY_LEN);
		g_strlcpy(p->name, cp->name, sizeof(p->name));
		p->dir[PA_DOWN] = (struct pdir){ .on = true, .min = cp->adapt_min,
						 .base = cp->download, .max = cp->adapt_max };
		/* the upload in [upload / 10, upload] */
		p->dir[PA_UP] = (struct pdir){ .on = cp->upload && w->upload, .min = cp->upload / 10,
					       .base = cp->upload, .max = cp->upload };
		if (!probe_addr(cp, wp, &p->family, p->addr)) {
			log_warn("%s: peer %s: adapt = yes, but it has no /32 or /128 in AllowedIPs "
				 "to probe (probe = ADDR says which): not adapted", ifname, cp->name);
			g_free(p);
			continue;
		}
		inet_ntop(p->family, p->addr, p->addr_text, sizeof(p->addr_text));
		timed_addrs(p, wp);
		for (int k = PA_DOWN; k <= PA_UP; k++) {
			if (!p->dir[k].on)
				continue;
			adapt_params_default(&prm, p->dir[k].min, p->dir[k].base, p->dir[k].max);
			/* the upload is counted at the IFB: after the line, what it delivered */
			prm.delivered = k == PA_UP;
			adapt_init(&p->dir[k].ctl, &prm);
		}
		g_hash_table_replace(want, peer_id(ifname, w->key), p);
	}
	wg_peers_free(peers, n);
}

/* Is the running p what q (wanted now) says (its AllowedIPs too: the addresses timed)? */
static bool same(const struct padapt *p, const struct padapt *q)
{
	for (int i = PA_DOWN; i <= PA_UP; i++)
		if (p->dir[i].on != q->dir[i].on || p->dir[i].min != q->dir[i].min ||
		    p->dir[i].base != q->dir[i].base || p->dir[i].max != q->dir[i].max)
			return false;
	return p->family == q->family && !memcmp(p->addr, q->addr, sizeof(p->addr)) &&
	       !strcmp(p->name, q->name) && p->n_timed == q->n_timed &&
	       !memcmp(p->timed, q->timed, sizeof(p->timed[0]) * (size_t)p->n_timed);
}

/* The tc programs, loaded when first needed; NULL when they cannot be (said once). */
static struct adapt_tcp_rtt *tcp_rtt(struct daemon *d)
{
	struct peer_adapters *pa = d->padapt;
	int r;

	if (pa->rtt || pa->rtt_failed)
		return pa->rtt;
	r = adapt_tcp_rtt_open(&pa->rtt);
	if (r < 0) {
		pa->rtt_failed = true;
		pa->rtt = NULL;
		log_info("peer adapt: no tc program to time peers' TCP (%s): ICMP echo alone",
			 r == -EOPNOTSUPP ? "built without libbpf" : strerror(-r));
	}
	return pa->rtt;
}

static void unhook(struct daemon *d, const char *ifname, const struct hook *h)
{
	int r;

	if (h->failed)
		return;
	r = netlink_tc_bpf_detach(d->nl, h->ifindex, h->made);
	if (r < 0 && r != -ENODEV)
		log_warn("%s: peer adapt: take its tc programs away: %s", ifname, strerror(-r));
}

/* The programs on ifname (its ifindex): attached unless they are there already. */
static void hook(struct daemon *d, const char *ifname, int ifindex)
{
	struct peer_adapters *pa = d->padapt;
	struct hook *h = g_hash_table_lookup(pa->hooked, ifname), nh = { 0 };
	struct ingress_slot slot;
	bool have, ours;
	int r;

	if (h && h->ifindex == ifindex && h->failed)
		return; /* failed here before (said): not again on this ifindex */
	have = netlink_ingress_get(d->nl, ifindex, &slot) == 0;
	if (h && h->ifindex == ifindex && have && slot.bpf)
		return; /* there */
	/* a clsact with only wgshape's redirect on it is wgshape's too */
	ours = have && slot.present && !slot.theirs;
	r = netlink_tc_bpf_attach(d->nl, ifindex, adapt_tcp_rtt_prog_fd(pa->rtt, true),
				  adapt_tcp_rtt_prog_fd(pa->rtt, false), TC_PROG_NAME, &nh.made);
	nh.made |= ours;
	nh.ifindex = ifindex;
	nh.failed = r < 0;
	if (r == 0) {
		if (h)
			log_info("%s: peer adapt: its tc programs were gone: attached again", ifname);
	} else if (r == -EBUSY) {
		log_warn("%s: peer adapt: an ingress qdisc holds the slot the programs need (a "
			 "clsact's): its peers' round trips from ICMP echo alone", ifname);
	} else {
		log_warn("%s: peer adapt: attach the tc programs that time its peers' TCP: %s: "
			 "ICMP echo alone", ifname, strerror(-r));
	}
	g_hash_table_replace(pa->hooked, g_strdup(ifname), g_memdup2(&nh, sizeof(nh)));
}

/* The programs on every interface with adapting peers, and on no other. */
static void hooks_sync(struct daemon *d)
{
	struct peer_adapters *pa = d->padapt;
	g_autoptr(GHashTable) want = g_hash_table_new(g_str_hash, g_str_equal);
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, pa->peers);
	while (g_hash_table_iter_next(&it, NULL, &val))
		g_hash_table_add(want, ((struct padapt *)val)->ifname);
	g_hash_table_iter_init(&it, pa->hooked);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		if (g_hash_table_contains(want, key))
			continue;
		unhook(d, key, val);
		g_hash_table_iter_remove(&it);
	}
	if (!g_hash_table_size(want) || !tcp_rtt(d))
		return;
	g_hash_table_iter_init(&it, want);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		const struct shape_state *st = state_peek(d->opts->statedir, key);

		if (st && st->ifindex)
			hook(d, key, st->ifindex);
	}
}

/* The daemon stops: the programs come off every interface and are unloaded. */
static void hooks_drop(struct daemon *d)
{
	struct peer_adapters *pa = d->padapt;
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, pa->hooked);
	while (g_hash_table_iter_next(&it, &key, &val))
		unhook(d, key, val);
	g_hash_table_remove_all(pa->hooked);
	adapt_tcp_rtt_free(pa->rtt);
	pa->rtt = NULL;
}

static bool config_adapts(const struct config *cfg)
{
	for (guint i = 0; i < cfg->peers->len; i++)
		if (((const struct conf_peer *)cfg->peers->pdata[i])->adapt)
			return true;
	return false;
}

void peer_adapt_sync(struct daemon *d)
{
	struct peer_adapters *pa = d->padapt;
	g_autoptr(GHashTable) want = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	GHashTableIter it;
	gpointer key, val;

	if (config_adapts(d->cfg)) {
		g_hash_table_iter_init(&it, d->names);
		while (g_hash_table_iter_next(&it, NULL, &val)) {
			const struct shape_state *st = state_peek(d->opts->statedir, val);

			if (st && st->tree && (!d->only || !strcmp(d->only, val)))
				wanted_on(d, val, st, want);
		}
	}
	/* gone, or changed: its class back to what the reconciler says without it */
	g_hash_table_iter_init(&it, pa->peers);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct padapt *q = g_hash_table_lookup(want, key), *p = val;

		if (q && same(p, q)) {
			g_hash_table_remove(want, key);
			continue;
		}
		log_info("%s: peer %s: the server no longer adapts it", p->ifname, p->name);
		if (p->dir[PA_DOWN].rate || p->dir[PA_UP].rate)
			daemon_schedule(d, p->ifname, 0);
		for (int k = 0; pa->rtt && k < p->n_timed; k++)
			adapt_tcp_rtt_unwatch(pa->rtt, p->timed[k].family, p->timed[k].addr);
		g_hash_table_remove(pa->by_id, GUINT_TO_POINTER(p->id));
		g_hash_table_iter_remove(&it);
	}
	g_hash_table_iter_init(&it, want);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct padapt *p = val;
		char b[2][UNITS_BUFSZ], lo[2][UNITS_BUFSZ], hi[2][UNITS_BUFSZ];

		p->id = ++pa->next_id;
		for (int k = 0; tcp_rtt(d) && k < p->n_timed; k++)
			adapt_tcp_rtt_watch(pa->rtt, p->timed[k].family, p->timed[k].addr, false);
		g_hash_table_iter_steal(&it);
		g_hash_table_replace(pa->peers, key, p);
		g_hash_table_replace(pa->by_id, GUINT_TO_POINTER(p->id), p);
		for (int i = PA_DOWN; i <= PA_UP; i++) {
			format_rate(b[i], sizeof(b[i]), p->dir[i].base);
			format_rate(lo[i], sizeof(lo[i]), p->dir[i].min);
			format_rate(hi[i], sizeof(hi[i]), p->dir[i].max);
		}
		if (p->dir[PA_UP].on)
			log_info("%s: peer %s: the server adapts its download (%s, %s .. %s) and its "
				 "upload (%s, %s .. %s), probing %s while either is loaded",
				 p->ifname, p->name, b[0], lo[0], hi[0], b[1], lo[1], hi[1],
				 p->addr_text);
		else
			log_info("%s: peer %s: the server adapts its download (%s, %s .. %s), "
				 "probing %s while it is loaded", p->ifname, p->name, b[0], lo[0],
				 hi[0], p->addr_text);
	}
	hooks_sync(d);
	if (g_hash_table_size(pa->peers))
		set_tick(d, pa->tick_ms ? pa->tick_ms : IDLE_TICK_MS);
	else if (pa->timer) {
		g_source_remove(pa->timer);
		pa->timer = 0;
		pa->tick_ms = 0;
	}
}

/*
 * The reconciler asks: the rate the server's adaptation set for key's
 * download (or upload) on ifname now (0: none).
 */
static uint64_t adapted(void *ud, const char *ifname, const uint8_t *key, bool upload)
{
	struct daemon *d = ud;
	g_autofree char *id = peer_id(ifname, key);
	const struct padapt *p = g_hash_table_lookup(d->padapt->peers, id);

	return p && !p->aside ? p->dir[upload ? PA_UP : PA_DOWN].rate : 0;
}

void peer_adapt_reconciler(struct daemon *d, struct reconciler *rc)
{
	rc->peer_adapted = adapted;
	rc->peer_ud = d;
}

/* The daemon stops: each adapted peer's class back to its configured rate. */
void peer_adapt_stop_all(struct daemon *d)
{
	struct peer_adapters *pa = d->padapt;
	g_autoptr(GHashTable) ifaces = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	struct reconciler rc;
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, pa->peers);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct padapt *p = val;

		if (p->dir[PA_DOWN].rate || p->dir[PA_UP].rate)
			g_hash_table_add(ifaces, g_strdup(p->ifname));
	}
	g_hash_table_remove_all(pa->by_id);
	g_hash_table_remove_all(pa->peers);
	hooks_drop(d);
	if (pa->timer)
		g_source_remove(pa->timer);
	pa->timer = 0;
	rc = daemon_reconciler(d);
	g_hash_table_iter_init(&it, ifaces);
	while (g_hash_table_iter_next(&it, &key, NULL))
		reconcile_iface(&rc, key);
}

void peer_adapt_init(struct daemon *d)
{
	struct peer_adapters *pa = g_new0(struct peer_adapters, 1);

	pa->peers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	pa->by_id = g_hash_table_new(g_direct_hash, g_direct_equal);
	pa->hooked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	pa->seq = (uint16_t)g_random_int();
	d->padapt = pa;
}

void peer_adapt_exit(struct daemon *d)
{
	struct peer_adapters *pa = d->padapt;

	if (!pa)
		return;
	if (pa->timer)
		g_source_remove(pa->timer);
	for (int i = 0; i < 2; i++) {
		if (pa->ping_src[i])
			g_source_remove(pa->ping_src[i]);
		adapt_ping_free(pa->ping[i]);
	}
	hooks_drop(d);
	g_hash_table_unref(pa->hooked);
	g_hash_table_unref(pa->by_id);
	g_hash_table_unref(pa->peers);
	g_free(pa);
	d->padapt = NULL;
}
