// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/adapter-state.h"
#include "proto/rate.h"
#include "shape/cake.h"
#include "shape/state.h"
#include "util/log.h"

enum family {
	F_RATE,
	F_INFO,
	F_CAPACITY,
	F_MEMORY,
	F_SENT_BYTES,
	F_SENT_PACKETS,
	F_DROPPED_BYTES,
	F_DROPPED_PACKETS,
	F_ECN,
	F_ACK_DROPS,
	F_BACKLOG_BYTES,
	F_BACKLOG_PACKETS,
	F_PEAK_DELAY,
	F_AVG_DELAY,
	F_BASE_DELAY,
	F_TARGET_DELAY,
	F_TIN_RATE,
	F_SPARSE,
	F_BULK,
	F_UNRESPONSIVE,
	F_ADAPT_RATE,
	F_ADAPT_BASE,
	F_ADAPT_MIN,
	F_ADAPT_MAX,
	F_ADAPT_DELAY,
	F_ADAPT_LOST,
	F_CLIENT,
	F_PRESENT,
	F_LEAF,
	F_UPDATED,
	F_COUNT,
};

static const struct {
	const char *name, *type, *help;
} families[F_COUNT] = {
	[F_RATE] = { "wgshape_rate_bytes_per_second", "gauge",
		     "The shaper's rate (a peer's class: its ceil); 0: unlimited." },
	[F_INFO] = { "wgshape_shaper_info", "gauge",
		     "A cake wgshape reads back: what set it, and the device it is on." },
	[F_CAPACITY] = { "wgshape_capacity_estimate_bytes_per_second", "gauge",
			 "Cake's capacity estimate." },
	[F_MEMORY] = { "wgshape_memory_used_bytes", "gauge", "Memory cake uses for its queues." },
	[F_SENT_BYTES] = { "wgshape_sent_bytes_total", "counter", "Bytes the tin sent." },
	[F_SENT_PACKETS] = { "wgshape_sent_packets_total", "counter", "Packets the tin sent." },
	[F_DROPPED_BYTES] = { "wgshape_dropped_bytes_total", "counter", "Bytes the tin dropped." },
	[F_DROPPED_PACKETS] = { "wgshape_dropped_packets_total", "counter",
				"Packets the tin dropped." },
	[F_ECN] = { "wgshape_ecn_marked_packets_total", "counter",
		    "Packets the tin marked with ECN instead of dropping them." },
	[F_ACK_DROPS] = { "wgshape_ack_dropped_packets_total", "counter",
			  "ACKs the tin's ACK filter dropped." },
	[F_BACKLOG_BYTES] = { "wgshape_backlog_bytes", "gauge", "Bytes queued in the tin." },
	[F_BACKLOG_PACKETS] = { "wgshape_backlog_packets", "gauge", "Packets queued in the tin." },
	[F_PEAK_DELAY] = { "wgshape_peak_delay_seconds", "gauge",
			   "The tin's peak queueing delay (cake's, decaying)." },
	[F_AVG_DELAY] = { "wgshape_average_delay_seconds", "gauge",
			  "The tin's average queueing delay (cake's moving average)." },
	[F_BASE_DELAY] = { "wgshape_base_delay_seconds", "gauge",
			   "The tin's base queueing delay (the least of the sparse flows)." },
	[F_TARGET_DELAY] = { "wgshape_target_delay_seconds", "gauge",
			     "The tin's AQM target delay." },
	[F_TIN_RATE] = { "wgshape_tin_rate_bytes_per_second", "gauge",
			 "The tin's threshold rate." },
	[F_SPARSE] = { "wgshape_sparse_flows", "gauge", "Sparse flows in the tin." },
	[F_BULK] = { "wgshape_bulk_flows", "gauge", "Bulk flows in the tin." },
	[F_UNRESPONSIVE] = { "wgshape_unresponsive_flows", "gauge",
			     "Flows in the tin that do not respond to drops or marks." },
	[F_ADAPT_RATE] = { "wgshape_adapt_rate_bytes_per_second", "gauge",
			   "The rate the daemon's controller set for the direction." },
	[F_ADAPT_BASE] = { "wgshape_adapt_base_bytes_per_second", "gauge",
			   "The configured rate the controller starts from and drifts back to." },
	[F_ADAPT_MIN] = { "wgshape_adapt_min_bytes_per_second", "gauge",
			  "The least rate the controller may set." },
	[F_ADAPT_MAX] = { "wgshape_adapt_max_bytes_per_second", "gauge",
			  "The greatest rate the controller may set." },
	[F_ADAPT_DELAY] = { "wgshape_adapt_delay_seconds", "gauge",
			    "The one-way delay the last probe added over the baseline." },
	[F_ADAPT_LOST] = { "wgshape_adapt_far_end_lost", "gauge",
			   "1 while the server does not answer the probes (base rates)." },
	[F_CLIENT] = { "wgshape_client_download_bytes_per_second", "gauge",
		       "The download rate the server applied for this client (the rate channel)." },
	[F_PRESENT] = { "wgshape_interface_present", "gauge",
			"1 for an interface wgshape shapes, 0 when it is gone since." },
	[F_LEAF] = { "wgshape_peer_leaf_info", "gauge",
		     "What a peer's class holds (leaf), what it asked for (setting), and for a "
		     "lazy leaf whether its peer is active." },
	[F_UPDATED] = { "wgshape_metrics_updated_timestamp_seconds", "gauge",
			"When these figures were read (seconds since the epoch): a metrics-file "
			"the daemon could not write again keeps an old one." },
};

struct metrics {
	GString *fam[F_COUNT];
};

struct metrics *metrics_new(void)
{
	return g_new0(struct metrics, 1);
}

/*
 * A label value as the format wants it: \ " and newline escaped, and UTF-8
 * (the format allows nothing else; an interface name is any bytes): a byte
 * that is not part of a valid sequence comes out as the text \xNN.
 */
static void append_value(GString *s, const char *v)
{
	const char *end = v + strlen(v);

	while (v < end) {
		const gchar *bad;

		if (g_utf8_validate(v, end - v, &bad))
			bad = end;
		for (; v < bad; v++) {
			if (*v == '\\' || *v == '"')
				g_string_append_c(s, '\\');
			if (*v == '\n')
				g_string_append(s, "\\n");
			else
				g_string_append_c(s, *v);
		}
		if (v < end)
			g_string_append_printf(s, "\\\\x%02x", (unsigned char)*v++);
	}
}

struct label {
	const char *k, *v;
};

/*
 * One sample: family{labels} value, the labels up to one with a NULL name;
 * one with an empty value is left out (the format reads it so anyway).
 */
static void put(struct metrics *m, enum family f, const struct label *l, const char *value)
{
	GString *s;
	bool any = false;

	if (!m->fam[f])
		m->fam[f] = g_string_new(NULL);
	s = m->fam[f];
	g_string_append(s, families[f].name);
	for (; l->k; l++) {
		if (!l->v || !*l->v)
			continue;
		g_string_append_printf(s, "%s%s=\"", any ? "," : "{", l->k);
		append_value(s, l->v);
		g_string_append_c(s, '"');
		any = true;
	}
	g_string_append_printf(s, "%s %s\n", any ? "}" : "", value);
}

/* A count or a size, exact whatever its size. */
static void put_u64(struct metrics *m, enum family f, const struct label *l, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	put(m, f, l, b);
}

static void put_double(struct metrics *m, enum family f, const struct label *l, double v)
{
	char b[40];

	snprintf(b, sizeof(b), "%.9g", v);
	put(m, f, l, b);
}

#define US 1e-6

/* One cake: its rate and where it came from, its own figures, each tin's. */
static void add_cake(struct metrics *m, const char *ifname, const char *dir, const char *peer,
		     const char *source, const char *dev, uint64_t rate, const struct qdisc_info *q)
{
	const struct cake_stats *st = &q->stats;
	const struct label cake[] = { { "interface", ifname }, { "direction", dir },
				      { "peer", peer }, { NULL, NULL } };
	const struct label info[] = { { "interface", ifname }, { "direction", dir },
				      { "peer", peer },	       { "source", source },
				      { "device", dev },       { NULL, NULL } };

	put_u64(m, F_RATE, cake, rate);
	put(m, F_INFO, info, "1");
	if (!st->has_app)
		return;
	put_u64(m, F_CAPACITY, cake, st->capacity_estimate);
	put_u64(m, F_MEMORY, cake, st->memory_used);
	for (unsigned int i = 0; i < st->tin_count && i < CAKE_MAX_TINS; i++) {
		const struct cake_tin_stats *t = &st->tins[i];
		const char *name = cake_tin_name(q->cake.diffserv, i);
		char other[16];

		if (!name) {
			snprintf(other, sizeof(other), "tin %u", i);
			name = other;
		}
		const struct label tin[] = { { "interface", ifname }, { "direction", dir },
					     { "peer", peer },	      { "tin", name },
					     { NULL, NULL } };

		put_u64(m, F_SENT_BYTES, tin, t->sent_bytes);
		put_u64(m, F_SENT_PACKETS, tin, t->sent_packets);
		put_u64(m, F_DROPPED_BYTES, tin, t->dropped_bytes);
		put_u64(m, F_DROPPED_PACKETS, tin, t->dropped_packets);
		put_u64(m, F_ECN, tin, t->ecn_marked_packets);
		put_u64(m, F_ACK_DROPS, tin, t->acks_dropped_packets);
		put_u64(m, F_BACKLOG_BYTES, tin, t->backlog_bytes);
		put_u64(m, F_BACKLOG_PACKETS, tin, t->backlog_packets);
		put_double(m, F_PEAK_DELAY, tin, t->peak_delay_us * US);
		put_double(m, F_AVG_DELAY, tin, t->avg_delay_us * US);
		put_double(m, F_BASE_DELAY, tin, t->base_delay_us * US);
		put_double(m, F_TARGET_DELAY, tin, t->target_us * US);
		put_u64(m, F_TIN_RATE, tin, t->threshold_rate);
		put_u64(m, F_SPARSE, tin, t->sparse_flows);
		put_u64(m, F_BULK, tin, t->bulk_flows);
		put_u64(m, F_UNRESPONSIVE, tin, t->unresponsive_flows);
	}
}

/* Which leaf a peer's class has, and why (show's words). */
static void add_leaf(struct metrics *m, const char *ifname, const char *peer,
		     const struct shape_peer_view *p)
{
	const char *setting = peer_leaf_name(p->leaf_setting);
	const struct label l[] = {
		{ "interface", ifname },
		{ "peer", peer },
		{ "leaf", p->has_leaf ? p->leaf.kind : "none" },
		{ "setting", setting ? setting : "" },
		{ "active", p->leaf_setting != PEER_LEAF_LAZY ? "" : p->leaf_active ? "yes" : "no" },
		{ NULL, NULL },
	};

	put(m, F_LEAF, l, "1");
}

static void add_dir(struct metrics *m, const struct shape_view *v, const char *dir,
		    const struct shape_dir_view *d)
{
	if (!d->shaped || strcmp(d->qdisc.kind, "cake") != 0)
		return;
	add_cake(m, v->link.name, dir, "", d->managed ? v->source : "not set by wgshape", d->dev,
		 d->qdisc.cake.rate, &d->qdisc);
}

/* Has the download tree a class for the peer with key (base64)? */
static bool download_class(const struct shape_view *v, const char *key)
{
	for (guint i = 0; v->tree && i < v->peers->len; i++) {
		const struct shape_peer_view *p = &g_array_index(v->peers, struct shape_peer_view, i);

		if (!strcmp(p->key, key))
			return p->present && p->has_class;
	}
	return false;
}

/*
 * A per-peer tree's classes: each peer's rate and cake figures under dir
 * (egress: their download; ingress: their upload, on dev, the IFB); the
 * leaf info once a peer: its download class's, else its upload class's.
 */
static void add_tree(struct metrics *m, const struct shape_view *v, const char *dir,
		     const char *dev, GArray *peers)
{
	for (guint i = 0; i < peers->len; i++) {
		const struct shape_peer_view *p = &g_array_index(peers, struct shape_peer_view, i);
		const char *peer = p->name[0] ? p->name : p->key;

		if (!p->present || !p->has_class)
			continue;
		if (p->leaf_setting && (!strcmp(dir, "egress") || !download_class(v, p->key)))
			add_leaf(m, v->link.name, peer, p);
		/* a leaf that is not cake has no cake figures: its rate and source alone */
		add_cake(m, v->link.name, dir, peer, p->source, dev, p->cls.ceil, &p->leaf);
	}
}

void metrics_add_view(struct metrics *m, const struct shape_view *v)
{
	const struct label iface[] = { { "interface", v->link.name }, { NULL, NULL } };

	put(m, F_PRESENT, iface, "1");
	if (v->tree)
		add_tree(m, v, "egress", v->link.name, v->peers);
	else
		add_dir(m, v, "egress", &v->egress);
	if (v->in_tree)
		add_tree(m, v, "ingress", v->ingress.dev, v->upload_peers);
	else
		add_dir(m, v, "ingress", &v->ingress);
}

void metrics_add_gone(struct metrics *m, const char *ifname)
{
	const struct label iface[] = { { "interface", ifname }, { NULL, NULL } };

	put(m, F_PRESENT, iface, "0");
}

void metrics_add_adapt(struct metrics *m, const char *ifname, const struct adapter_state *st)
{
	const struct label iface[] = { { "interface", ifname }, { NULL, NULL } };

	put(m, F_ADAPT_LOST, iface, st->lost ? "1" : "0");
	for (int i = 0; i < ADAPTER_NDIRS; i++) {
		const struct label dir[] = { { "interface", ifname },
					     { "direction", adapter_dir_names[i] },
					     { NULL, NULL } };
		const struct adapter_state_dir *d = &st->dir[i];

		if (!d->on)
			continue;
		/* the state file has bit/s */
		put_u64(m, F_ADAPT_RATE, dir, d->rate / 8);
		put_u64(m, F_ADAPT_BASE, dir, d->base / 8);
		put_u64(m, F_ADAPT_MIN, dir, d->min / 8);
		put_u64(m, F_ADAPT_MAX, dir, d->max / 8);
		put_double(m, F_ADAPT_DELAY, dir, (double)d->delay_us * US);
	}
}

void metrics_add_client(struct metrics *m, const char *ifname, const struct rate_record *r)
{
	const struct label l[] = { { "interface", ifname },
				   { "server", r->server },
				   { "status", r->status ? rate_status_str(r->status) : "no answer" },
				   { "source", r->source },
				   { NULL, NULL } };

	put_u64(m, F_CLIENT, l, r->rate);
}

void metrics_add_time(struct metrics *m, double now)
{
	const struct label none[] = { { NULL, NULL } };
	char b[40];

	snprintf(b, sizeof(b), "%.3f", now);
	put(m, F_UPDATED, none, b);
}

void metrics_finish(struct metrics *m, GString *out)
{
	for (int f = 0; f < F_COUNT; f++) {
		if (!m->fam[f])
			continue;
		g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", families[f].name,
				       families[f].help, families[f].name, families[f].type);
		g_string_append_len(out, m->fam[f]->str, (gssize)m->fam[f]->len);
		g_string_free(m->fam[f], TRUE);
	}
	g_free(m);
}

int metrics_collect(struct netlink *nl, const char *statedir, char **names, GString *out)
{
	struct metrics *m = metrics_new();
	char **known = NULL;
	int status = 0;

	if (!names) {
		state_list(statedir, &known);
		names = known;
	}
	for (char **n = names; *n; n++) {
		struct adapter_state adapt;
		struct shape_view v;
		struct rate_record rec;
		int r = shape_view(nl, statedir, *n, &v);

		if (r == -ENODEV) {
			metrics_add_gone(m, *n);
			continue;
		}
		if (r < 0) {
			status = r;
			continue;
		}
		metrics_add_view(m, &v);
		shape_view_clear(&v);
		if (rate_record_load(statedir, *n, &rec) == 0)
			metrics_add_client(m, *n, &rec);
		if (adapter_state_load(statedir, *n, &adapt) == 0)
			metrics_add_adapt(m, *n, &adapt);
	}
	g_strfreev(known);
	metrics_add_time(m, (double)g_get_real_time() / G_USEC_PER_SEC);
	metrics_finish(m, out);
	return status;
}
