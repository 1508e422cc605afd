// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape show [IFACE]: shaping as the kernel reports it, read back over
 * netlink, in the manner of `tc -s qdisc show` or, with -j, as JSON in base
 * units (bit/s, bytes, microseconds).
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <glib.h>

#include "channel/client.h"
#include "channel/lease.h"
#include "cli/cli.h"
#include "daemon/adapter-state.h"
#include "util/log.h"
#include "netlink/kernel.h"
#include "shape/state.h"
#include "shape/cake.h"
#include "shape/peers.h"
#include "shape/units.h"
#include "util/print.h"

const char show_usage[] =
	"Usage: wgshape [-j] show [IFACE]\n"
	"\n"
	"Show each interface wgshape shapes (or IFACE): egress and ingress cake settings\n"
	"and statistics as the kernel reports them, and why the overhead is what it is.\n";

/* A value a newer kernel may report that this build has no name for. */
static const char *name_or(const char *name)
{
	return name ? name : "unknown";
}

/* A family's word, as text (when text) and in JSON. */
static void show_word(const char *key, const struct cake_opts *o, enum cake_family f, bool text)
{
	uint32_t v;

	if (cake_word_get(o, f, &v))
		print_string(key, text ? " %s" : NULL, name_or(cake_word(f, v)));
}

/* An on/off family's word as text; a boolean in JSON. */
static void show_switch(const char *key, const struct cake_opts *o, enum cake_family f)
{
	uint32_t v;

	if (!cake_word_get(o, f, &v))
		return;
	print_text(" ");
	print_flag(key, v, name_or(cake_word(f, 1)), name_or(cake_word(f, 0)));
}

/* In tc's order (tc/q_cake.c, cake_print_opt). */
static void show_opts(const struct cake_opts *o)
{
	char b[UNITS_BUFSZ];

	print_open_object("options");
	if (o->rate)
		format_rate(b, sizeof(b), o->rate);
	print_uint_as("bandwidth", o->rate ? " bandwidth %s" : " %s", o->rate * 8,
		      o->rate ? b : "unlimited");
	show_word("diffserv", o, CAKE_WORDS_DIFFSERV, true);
	show_word("flow_mode", o, CAKE_WORDS_FLOW, true);
	show_switch("nat", o, CAKE_WORDS_NAT);
	show_switch("wash", o, CAKE_WORDS_WASH);
	show_word("ack_filter", o, CAKE_WORDS_ACK, true);
	print_flag("ingress", o->ingress, " ingress", "");
	show_switch("split_gso", o, CAKE_WORDS_SPLIT_GSO);
	format_time(b, sizeof(b), o->rtt);
	print_uint_as("rtt", (o->has & CAKE_HAS_RTT) ? " rtt %s" : NULL, o->rtt, b);
	print_flag("raw", o->raw, " raw", "");
	/* as tc: a raw cake's noatm goes without saying */
	show_word("atm", o, CAKE_WORDS_ATM, !(o->raw && o->atm == CAKE_ATMC_NONE));
	print_int("overhead", o->raw ? NULL : " overhead %" PRId64, o->overhead);
	print_uint("mpu", o->mpu ? " mpu %" PRIu64 : NULL, o->mpu);
	format_size(b, sizeof(b), o->memlimit);
	print_uint_as("memlimit", o->memlimit ? " memlimit %s" : NULL, o->memlimit, b);
	print_uint("fwmark", o->fwmark ? " fwmark 0x%" PRIx64 : NULL, o->fwmark);
	print_close_object();
}

/*
 * cake's per-tin statistics, each described once: the name is the JSON
 * member and the text row's label (the text is a table, a column per tin, as
 * tc -s shows it; JSON an object per tin).
 */
enum tin_unit { TIN_RATE, TIN_TIME, TIN_SIZE, TIN_COUNT };

#define TIN(name, unit, member)                                                              \
	{ name, unit, offsetof(struct cake_tin_stats, member),                               \
	  sizeof(((struct cake_tin_stats *)0)->member) }

static const struct tin_field {
	const char *name;
	enum tin_unit unit;
	size_t offset, size;
} tin_fields[] = {
	TIN("threshold_rate", TIN_RATE, threshold_rate),
	TIN("peak_delay", TIN_TIME, peak_delay_us),
	TIN("avg_delay", TIN_TIME, avg_delay_us),
	TIN("base_delay", TIN_TIME, base_delay_us),
	TIN("backlog_bytes", TIN_SIZE, backlog_bytes),
	TIN("sent_packets", TIN_COUNT, sent_packets),
	TIN("sent_bytes", TIN_COUNT, sent_bytes),
	TIN("drops", TIN_COUNT, dropped_packets),
	TIN("ecn_marks", TIN_COUNT, ecn_marked_packets),
	TIN("sparse_flows", TIN_COUNT, sparse_flows),
	TIN("bulk_flows", TIN_COUNT, bulk_flows),
};

/* The field's value in base units (bit/s for a rate), and as text into b. */
static uint64_t tin_value(const struct tin_field *f, const struct cake_tin_stats *tin, char *b,
			  size_t len)
{
	const char *p = (const char *)tin + f->offset;
	uint64_t v = f->size == sizeof(uint64_t) ? *(const uint64_t *)(const void *)p
						 : *(const uint32_t *)(const void *)p;

	switch (f->unit) {
	case TIN_RATE:
		format_rate(b, len, v);
		return v * 8;
	case TIN_TIME:
		format_time(b, len, (uint32_t)v);
		break;
	case TIN_SIZE:
		format_size(b, len, (uint32_t)v);
		break;
	case TIN_COUNT:
		snprintf(b, len, "%" PRIu64, v);
		break;
	}
	return v;
}

static void show_tins_text(const struct cake_opts *o, const struct cake_stats *s)
{
	char b[UNITS_BUFSZ];

	print_text("  %-14s", "");
	for (unsigned int t = 0; t < s->tin_count; t++)
		print_text("%13s", name_or(cake_tin_name(o->diffserv, t)));
	for (size_t f = 0; f < G_N_ELEMENTS(tin_fields); f++) {
		print_text("\n  %-14s", tin_fields[f].name);
		for (unsigned int t = 0; t < s->tin_count; t++) {
			tin_value(&tin_fields[f], &s->tins[t], b, sizeof(b));
			print_text("%13s", b);
		}
	}
	print_text("\n");
}

static void show_tins_json(const struct cake_opts *o, const struct cake_stats *s)
{
	char b[UNITS_BUFSZ];

	print_open_array("tins");
	for (unsigned int t = 0; t < s->tin_count; t++) {
		print_open_object(NULL);
		print_string("name", NULL, name_or(cake_tin_name(o->diffserv, t)));
		for (size_t f = 0; f < G_N_ELEMENTS(tin_fields); f++)
			print_uint(tin_fields[f].name, NULL,
				   tin_value(&tin_fields[f], &s->tins[t], b, sizeof(b)));
		print_close_object();
	}
	print_close_array();
}

static void show_stats(const struct cake_opts *o, const struct cake_stats *s)
{
	char b[UNITS_BUFSZ], b2[UNITS_BUFSZ];
	uint64_t marks = 0;

	for (unsigned int t = 0; t < s->tin_count; t++)
		marks += s->tins[t].ecn_marked_packets;
	print_open_object("stats");
	print_uint("bytes", " Sent %" PRIu64 " bytes", s->bytes);
	print_uint("packets", " %" PRIu64 " pkt", s->packets);
	print_uint("drops", " (dropped %" PRIu64, s->drops);
	print_uint("overlimits", ", overlimits %" PRIu64, s->overlimits);
	print_uint("requeues", " requeues %" PRIu64 ")\n", s->requeues);
	format_size(b, sizeof(b), s->backlog_bytes);
	print_uint_as("backlog_bytes", " backlog %s", s->backlog_bytes, b);
	print_uint("backlog_packets", " %" PRIu64 "p\n", s->backlog_packets);
	print_uint("ecn_marks", NULL, marks);
	if (s->has_app) {
		format_size(b, sizeof(b), s->memory_used);
		format_size(b2, sizeof(b2), s->memory_limit);
		print_uint_as("memory_used", " memory used: %s", s->memory_used, b);
		print_uint_as("memory_limit", " of %s\n", s->memory_limit, b2);
		format_rate(b, sizeof(b), s->capacity_estimate);
		print_uint_as("capacity_estimate", " capacity estimate: %s\n",
			      s->capacity_estimate * 8, b);
		if (print_is_json())
			show_tins_json(o, s);
		else if (s->tin_count)
			show_tins_text(o, s);
	}
	print_close_object();
}

/* A peer's cake in a few lines: its queue's options, counters and delay per tin. */
static void show_peer_text(const struct qdisc_info *q)
{
	const struct cake_stats *s = &q->stats;
	char b[UNITS_BUFSZ], b2[UNITS_BUFSZ];
	uint64_t marks = 0;

	print_text(", cake %s %s\n", name_or(cake_diffserv_name(q->cake.diffserv)),
		   name_or(cake_word(CAKE_WORDS_FLOW, q->cake.flow_mode)));
	for (unsigned int t = 0; t < s->tin_count; t++)
		marks += s->tins[t].ecn_marked_packets;
	format_size(b, sizeof(b), s->backlog_bytes);
	print_text("    sent %" PRIu64 " bytes %" PRIu64 " pkt, dropped %u, marked %" PRIu64
		   ", backlog %s\n    delay peak/avg:", s->bytes, s->packets, s->drops, marks, b);
	for (unsigned int t = 0; t < s->tin_count; t++) {
		format_time(b, sizeof(b), s->tins[t].peak_delay_us);
		format_time(b2, sizeof(b2), s->tins[t].avg_delay_us);
		print_text("%s %s %s/%s", t ? "," : "", name_or(cake_tin_name(q->cake.diffserv, t)),
			   b, b2);
	}
	print_text("\n");
}

/* The clients' leases of the interface shown (the rate channel), for its peers' lines. */
static GArray *shown_leases;

/* Seconds until p's client lease ends; -1 when it has none. */
static int64_t lease_left(const struct shape_peer_view *p)
{
	int64_t now = lease_now();
	uint8_t key[WG_KEY_LEN];

	if (!shown_leases || wg_key_from_base64(p->key, key) < 0)
		return -1;
	for (guint i = 0; i < shown_leases->len; i++) {
		const struct rate_lease *l = &g_array_index(shown_leases, struct rate_lease, i);

		if (!memcmp(l->key, key, WG_KEY_LEN) && rate_lease_live(l, now))
			return l->until - now;
	}
	return -1;
}

/*
 * Which leaf a peer's class has and why: its leaf = (lazy, cake, fq_codel),
 * and for lazy whether its peer is active. The default class always has cake.
 */
static void show_leaf_why(const struct shape_peer_view *p)
{
	const char *setting = peer_leaf_name(p->leaf_setting);

	print_string("leaf", NULL, p->has_leaf ? p->leaf.kind : "none");
	print_string("leaf_setting", NULL, setting ? setting : "cake");
	if (p->leaf_setting != PEER_LEAF_LAZY)
		return;
	print_bool("active", NULL, p->leaf_active);
	print_text(p->leaf_active ? ", lazy leaf: active" : ", lazy leaf: idle");
}

/* One class of a per-peer tree (dir: "download" or "upload"): who, its AllowedIPs and rate, its cake. */
static void show_peer(const struct shape_peer_view *p, const char *dir)
{
	char b[UNITS_BUFSZ], id[16];

	print_open_object(NULL);
	print_string("name", NULL, p->name);
	print_string(NULL, "  %s", p->name[0] ? p->name : "(set by hand)");
	if (p->key[0]) {
		print_string("public_key", NULL, p->key);
		print_text(" (%.8s...)", p->key);
		print_open_array("allowed_ips");
		for (char **a = p->allowed; a && *a; a++) {
			print_text("%s", a == p->allowed ? " " : ", ");
			print_string(PRINT_ELEM, "%s", *a);
		}
		print_close_array();
		format_rate(b, sizeof(b), p->rate);
		print_uint_as(dir, !strcmp(dir, "upload") ? ": upload %s" : ": download %s",
			      p->rate * 8, b);
		print_string("source", " (%s", p->source);
		if (!strcmp(dir, "download") && lease_left(p) >= 0)
			print_int("lease_ends_in", ", ends in %" PRId64 " s unless renewed",
				  lease_left(p));
		print_text(")");
	}
	print_bool("present", p->present ? NULL : ": not on the interface now\n", p->present);
	if (!p->present) {
		print_close_object();
		return;
	}
	snprintf(id, sizeof(id), "1:%x", p->minor);
	print_string("class", p->key[0] ? "\n    class %s" : ": class %s", id);
	format_rate(b, sizeof(b), p->cls.ceil);
	print_uint_as("ceil", p->has_class ? " up to %s" : " (missing)", p->cls.ceil * 8, b);
	format_rate(b, sizeof(b), p->cls.rate);
	print_uint_as("rate", p->has_class ? " (%s guaranteed)" : NULL, p->cls.rate * 8, b);
	print_bool("shaped", NULL, p->has_class && p->has_leaf);
	show_leaf_why(p);
	if (p->has_leaf && !strcmp(p->leaf.kind, "cake") && print_is_json()) {
		show_opts(&p->leaf.cake);
		show_stats(&p->leaf.cake, &p->leaf.stats);
	} else if (p->has_leaf && !strcmp(p->leaf.kind, "cake")) {
		show_peer_text(&p->leaf);
	} else if (p->has_leaf) {
		print_text(", %s", p->leaf.kind);
		if (p->leaf.fq_flows)
			print_text(" (%u flows)", p->leaf.fq_flows);
		print_text("\n");
	} else {
		print_text(", no leaf on it\n");
	}
	print_close_object();
}

/* A per-peer tree: egress (the peers' download) or, upload, the IFB's (their upload). */
static void show_tree(const struct shape_view *v, bool upload)
{
	const char *dirname = upload ? "ingress" : "egress";
	const struct shape_dir_view *d = upload ? &v->ingress : &v->egress;
	GArray *peers = upload ? v->upload_peers : v->peers;
	uint64_t cap = upload ? v->in_cap : v->cap;
	char b[UNITS_BUFSZ];

	print_open_object(dirname);
	print_string(NULL, "%s: ", v->link.name);
	print_text("%s", dirname);
	if (upload)
		print_string("dev", " via %s", d->dev);
	print_bool("per_peer", " per peer:", true);
	print_string("kind", " %s", d->qdisc.kind);
	print_string("handle", " %s", "1:");
	format_rate(b, sizeof(b), cap);
	print_uint_as("cap", cap ? ", all peers together up to %s\n" : ", no cap\n", cap * 8, b);
	print_open_array("classes");
	for (guint i = 0; i < peers->len; i++)
		show_peer(&g_array_index(peers, struct shape_peer_view, i),
			  upload ? "upload" : "download");
	print_close_array();
	print_close_object();
}

static void show_dir(const struct shape_view *v, const char *dirname, const struct shape_dir_view *d)
{
	bool via = strcmp(d->dev, v->link.name) != 0;
	char h[16];

	if (!d->shaped) {
		print_null(dirname, NULL);
		print_string(NULL, "%s: ", v->link.name);
		print_text("%s: not shaped", dirname);
		print_string(NULL, strcmp(dirname, "egress") ? "\n" : " (root qdisc %s)\n",
			     d->qdisc.kind[0] ? d->qdisc.kind : "default");
		return;
	}
	snprintf(h, sizeof(h), "%x:", d->qdisc.handle >> 16);
	print_open_object(dirname);
	print_string(NULL, "%s: ", v->link.name);
	print_text("%s", dirname);
	print_string("dev", via ? " via %s" : NULL, d->dev);
	print_string("kind", ": %s", d->qdisc.kind);
	print_string("handle", " %s", h);
	show_opts(&d->qdisc.cake);
	print_flag("managed", d->managed, "\n", " (not set by wgshape)\n");
	show_stats(&d->qdisc.cake, &d->qdisc.stats);
	print_close_object();
}

/* What this host, as a client, asked its server for (the rate channel). */
static void show_client(const char *statedir, const char *ifname)
{
	struct rate_record r;
	char b[UNITS_BUFSZ], said[256];
	int64_t left;

	if (rate_record_load(statedir, ifname, &r) < 0)
		return;
	print_open_object("client_download");
	print_text(" download at the server: asked ");
	format_rate(b, sizeof(b), r.asked);
	print_uint_as("asked", r.asked ? "%s" : "for its own rate", r.asked * 8, b);
	print_string("server", r.asked ? " of %s" : " (%s", r.server);
	print_uint("port", r.asked ? " port %" PRIu64 : " port %" PRIu64 ")", r.port);
	print_string("source", ", by %s", r.source);
	print_int("asked_at", NULL, r.at);
	print_string("status", NULL, r.status ? rate_status_str(r.status) : "no answer");
	rate_record_describe(&r, said, sizeof(said));
	print_text("\n  the server answered: %s", said);
	format_rate(b, sizeof(b), r.rate);
	print_uint_as("rate", NULL, r.rate * 8, b);
	format_rate(b, sizeof(b), r.fallback);
	print_uint_as("fallback", NULL, r.fallback * 8, b);
	print_uint("lease", NULL, r.lease);
	left = r.at_boot + (int64_t)r.lease - lease_now();
	if ((r.status == RATE_APPLIED || r.status == RATE_CLAMPED) && left > 0)
		print_int("lease_ends_in", "; the lease ends in %" PRId64 " s unless renewed", left);
	print_text("\n");
	print_close_object();
}

/* One adapted direction: its rate and range, the delay over its baseline, the load, the last change. */
static void show_adapt_dir(const char *g, const struct adapter_state_dir *d, int64_t now)
{
	char b[UNITS_BUFSZ], lo[UNITS_BUFSZ], hi[UNITS_BUFSZ], base[UNITS_BUFSZ];

	format_rate(b, sizeof(b), d->rate / 8);
	format_rate(lo, sizeof(lo), d->min / 8);
	format_rate(hi, sizeof(hi), d->max / 8);
	format_rate(base, sizeof(base), d->base / 8);
	print_open_object(g);
	print_text("  adapt %s", g);
	print_uint_as("rate", " %s", d->rate, b);
	print_uint_as("min", " (%s", d->min, lo);
	print_uint_as("max", " .. %s", d->max, hi);
	print_uint_as("base", ", base %s)", d->base, base);
	print_double("delay_ms", ": %+.1f ms over the baseline", (double)d->delay_us / 1000);
	print_double("rtt_ms", ", rtt %.1f ms", (double)d->rtt_us / 1000);
	format_rate(b, sizeof(b), d->load / 8);
	print_uint_as("load", ", load %s", d->load, b);
	print_int("baseline_us", NULL, d->baseline_us);
	print_int("changed", NULL, d->changed);
	if (d->changed)
		print_string("why", "; last change %s", d->why[0] ? d->why : "?");
	if (d->changed)
		print_int(NULL, " %" PRId64 " s ago", now - d->changed);
	print_text("\n");
	print_close_object();
}

/*
 * What the daemon's controllers do (adapt = yes; daemon/adapter.c writes
 * IFNAME.adapt at most once a second): each direction's rate and range, the
 * delay over its baseline, the load, the last change and why.
 */
static void show_adapt(const char *statedir, const char *ifname)
{
	struct adapter_state st;
	int64_t now = time(NULL);

	if (adapter_state_load(statedir, ifname, &st) < 0)
		return;
	print_open_object("adapt");
	print_string("server", " adapted by the daemon, probing %s",
		     st.server[0] ? st.server : "?");
	print_bool("lost", st.lost ? " (it stopped answering: base rates)" : NULL, st.lost);
	print_text("\n");
	for (int i = 0; i < ADAPTER_NDIRS; i++)
		if (st.dir[i].on)
			show_adapt_dir(adapter_dir_names[i], &st.dir[i], now);
	print_close_object();
}

static void show_view(const struct shape_view *v, const char *statedir)
{
	bool shaped = v->egress.shaped || v->ingress.shaped;

	print_open_object(NULL);
	print_string("ifname", NULL, v->link.name);
	print_bool("present", NULL, true);
	print_string("link_kind", NULL, v->link.kind);
	print_string("root_qdisc", NULL, v->egress.qdisc.kind);
	if (v->tree)
		show_tree(v, false);
	else
		show_dir(v, "egress", &v->egress);
	if (v->in_tree)
		show_tree(v, true);
	else
		show_dir(v, "ingress", &v->ingress);
	if (v->overhead_reason[0])
		print_string("overhead_reason", shaped ? " overhead: %s\n" : NULL,
			     v->overhead_reason);
	if (v->source[0])
		print_string("source", shaped ? " set by: %s\n" : NULL, v->source);
	if (v->orig_kind[0])
		print_string("restores", " clear puts back: %s\n", v->orig_kind);
	show_client(statedir, v->link.name);
	show_adapt(statedir, v->link.name);
	print_close_object();
}

/* Shaped once, gone since: say so, it is not a failure. */
static void show_gone(const char *ifname)
{
	print_open_object(NULL);
	print_string("ifname", "%s: not present (gone since it was shaped; ", ifname);
	print_bool("present", NULL, false);
	print_string(NULL, "'wgshape clear %s' forgets it)\n", ifname);
	print_close_object();
}

int show_main(int argc, char **argv, const struct cli *cli)
{
	struct netlink *nl;
	char **names = NULL;
	int r, status = EXIT_OK;

	if (argc > 2) {
		log_err("show: takes at most one IFACE (see wgshape show --help)");
		return EXIT_USAGE;
	}
	if (argc == 2 && !ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (print_begin(cli->json) < 0)
		return EXIT_FAIL;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	if (argc == 2) {
		names = g_new0(char *, 2);
		names[0] = g_strdup(argv[1]);
	} else {
		state_list(cli->statedir, &names);
	}

	print_open_array(NULL);
	for (char **n = names; *n; n++) {
		struct shape_view v;

		r = shape_view(nl, cli->statedir, *n, &v);
		if (r == -ENODEV && argc == 2)
			log_err("%s: no such interface", *n);
		if (r == -ENODEV && argc < 2) {
			show_gone(*n);
			continue;
		}
		if (r < 0) {
			status = EXIT_FAIL;
			continue;
		}
		shown_leases = g_array_new(false, true, sizeof(struct rate_lease));
		lease_load(cli->statedir, *n, shown_leases);
		show_view(&v, cli->statedir);
		g_clear_pointer(&shown_leases, g_array_unref);
		shape_view_clear(&v);
	}
	print_close_array();
	print_end();
	g_strfreev(names);
	netlink_close(nl);
	return status;
}
