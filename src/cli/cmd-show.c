// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape show [IFACE]: shaping as the kernel reports it, read back over
 * netlink, in the manner of `tc -s qdisc show` or, with -j, as JSON in base
 * units (bit/s, bytes, microseconds).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "cli/cli.h"
#include "util/log.h"
#include "netlink/kernel.h"
#include "shape/state.h"
#include "shape/units.h"

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

static void handle_str(char *buf, size_t len, uint32_t handle)
{
	snprintf(buf, len, "%x:", handle >> 16);
}

static void print_opts(const struct cake_opts *o)
{
	char b[UNITS_BUFSZ];

	if (o->rate) {
		format_rate(b, sizeof(b), o->rate);
		printf(" bandwidth %s", b);
	} else {
		printf(" unlimited");
	}
	if (o->has & CAKE_HAS_DIFFSERV)
		printf(" %s", name_or(cake_diffserv_name(o->diffserv)));
	printf(" %s %s", o->nat ? "nat" : "nonat", o->wash ? "wash" : "nowash");
	if (o->has & CAKE_HAS_ACK_FILTER)
		printf(" %s", name_or(cake_ack_name(o->ack_filter)));
	if (o->ingress)
		printf(" ingress");
	if (o->has & CAKE_HAS_RTT) {
		format_time(b, sizeof(b), o->rtt);
		printf(" rtt %s", b);
	}
	if (o->raw)
		printf(" raw");
	else
		printf(" overhead %d", o->overhead);
	if (o->mpu)
		printf(" mpu %u", o->mpu);
	if (o->memlimit) {
		format_size(b, sizeof(b), o->memlimit);
		printf(" memlimit %s", b);
	}
}

static void print_tins(const struct cake_opts *o, const struct cake_stats *s)
{
	char b[UNITS_BUFSZ];
	unsigned int t;

	if (!s->tin_count)
		return;
	printf("  %-10s", "");
	for (t = 0; t < s->tin_count; t++) {
		const char *name = cake_tin_name(o->diffserv, t);

		printf("%13s", name_or(name));
	}
#define ROW(label, expr)                                           \
	do {                                                      \
		printf("\n  %-10s", label);                       \
		for (t = 0; t < s->tin_count; t++) {              \
			const struct cake_tin_stats *tin = &s->tins[t]; \
			expr;                                     \
			printf("%13s", b);                        \
		}                                                 \
	} while (0)
	ROW("thresh", format_rate(b, sizeof(b), tin->threshold_rate));
	ROW("pk_delay", format_time(b, sizeof(b), tin->peak_delay_us));
	ROW("av_delay", format_time(b, sizeof(b), tin->avg_delay_us));
	ROW("sp_delay", format_time(b, sizeof(b), tin->base_delay_us));
	ROW("backlog", format_size(b, sizeof(b), tin->backlog_bytes));
	ROW("pkts", snprintf(b, sizeof(b), "%" PRIu64, tin->sent_packets));
	ROW("bytes", snprintf(b, sizeof(b), "%" PRIu64, tin->sent_bytes));
	ROW("drops", snprintf(b, sizeof(b), "%" PRIu64, tin->dropped_packets));
	ROW("marks", snprintf(b, sizeof(b), "%" PRIu64, tin->ecn_marked_packets));
	ROW("sp_flows", snprintf(b, sizeof(b), "%u", tin->sparse_flows));
	ROW("bk_flows", snprintf(b, sizeof(b), "%u", tin->bulk_flows));
#undef ROW
	putchar('\n');
}

static void print_dir(const struct shape_view *v, const char *dirname,
		      const struct shape_dir_view *d)
{
	const struct cake_stats *s = &d->qdisc.stats;
	char h[16], b[UNITS_BUFSZ], b2[UNITS_BUFSZ];

	if (!d->shaped) {
		if (!strcmp(dirname, "egress"))
			printf("%s: egress: not shaped (root qdisc %s)\n", v->link.name,
			       d->qdisc.kind[0] ? d->qdisc.kind : "default");
		else
			printf("%s: ingress: not shaped\n", v->link.name);
		return;
	}
	handle_str(h, sizeof(h), d->qdisc.handle);
	printf("%s: %s%s%s: cake %s", v->link.name, dirname, strcmp(d->dev, v->link.name) ? " via " : "",
	       strcmp(d->dev, v->link.name) ? d->dev : "", h);
	print_opts(&d->qdisc.cake);
	printf("%s\n", d->managed ? "" : " (not set by wgshape)");
	printf(" Sent %" PRIu64 " bytes %" PRIu64 " pkt (dropped %u, overlimits %u requeues %u)\n",
	       s->bytes, s->packets, s->drops, s->overlimits, s->requeues);
	format_size(b, sizeof(b), s->backlog_bytes);
	printf(" backlog %s %up\n", b, s->backlog_packets);
	if (s->has_app) {
		format_size(b, sizeof(b), s->memory_used);
		format_size(b2, sizeof(b2), s->memory_limit);
		printf(" memory used: %s of %s\n", b, b2);
		format_rate(b, sizeof(b), s->capacity_estimate);
		printf(" capacity estimate: %s\n", b);
		print_tins(&d->qdisc.cake, s);
	}
}

static void print_text(const struct shape_view *v)
{
	print_dir(v, "egress", &v->egress);
	print_dir(v, "ingress", &v->ingress);
	if ((v->egress.shaped || v->ingress.shaped) && v->overhead_reason[0])
		printf(" overhead: %s\n", v->overhead_reason);
	if (v->source[0] && (v->egress.shaped || v->ingress.shaped))
		printf(" set by: %s\n", v->source);
	if (v->orig_kind[0])
		printf(" clear puts back: %s\n", v->orig_kind);
}

static void json_u64(JsonBuilder *j, const char *key, uint64_t v)
{
	json_builder_set_member_name(j, key);
	json_builder_add_int_value(j, (gint64)v);
}

static void json_str(JsonBuilder *j, const char *key, const char *v)
{
	json_builder_set_member_name(j, key);
	json_builder_add_string_value(j, v);
}

static void json_bool(JsonBuilder *j, const char *key, bool v)
{
	json_builder_set_member_name(j, key);
	json_builder_add_boolean_value(j, v);
}

static void json_opts(JsonBuilder *j, const struct cake_opts *o)
{
	json_builder_set_member_name(j, "options");
	json_builder_begin_object(j);
	json_u64(j, "bandwidth", o->rate * 8);
	if (o->has & CAKE_HAS_DIFFSERV)
		json_str(j, "diffserv", name_or(cake_diffserv_name(o->diffserv)));
	json_bool(j, "nat", o->nat);
	json_bool(j, "wash", o->wash);
	if (o->has & CAKE_HAS_ACK_FILTER)
		json_str(j, "ack_filter", name_or(cake_ack_name(o->ack_filter)));
	json_bool(j, "ingress", o->ingress);
	json_u64(j, "rtt", o->rtt);
	json_bool(j, "raw", o->raw);
	json_builder_set_member_name(j, "overhead");
	json_builder_add_int_value(j, o->overhead);
	json_u64(j, "mpu", o->mpu);
	json_u64(j, "memlimit", o->memlimit);
	json_builder_end_object(j);
}

static void json_stats(JsonBuilder *j, const struct cake_opts *o, const struct cake_stats *s)
{
	uint64_t marks = 0;

	json_builder_set_member_name(j, "stats");
	json_builder_begin_object(j);
	json_u64(j, "bytes", s->bytes);
	json_u64(j, "packets", s->packets);
	json_u64(j, "drops", s->drops);
	json_u64(j, "overlimits", s->overlimits);
	json_u64(j, "requeues", s->requeues);
	json_u64(j, "backlog_bytes", s->backlog_bytes);
	json_u64(j, "backlog_packets", s->backlog_packets);
	for (unsigned int t = 0; t < s->tin_count; t++)
		marks += s->tins[t].ecn_marked_packets;
	json_u64(j, "ecn_marks", marks);
	if (s->has_app) {
		json_u64(j, "capacity_estimate", s->capacity_estimate * 8);
		json_u64(j, "memory_used", s->memory_used);
		json_u64(j, "memory_limit", s->memory_limit);
		json_builder_set_member_name(j, "tins");
		json_builder_begin_array(j);
		for (unsigned int t = 0; t < s->tin_count; t++) {
			const struct cake_tin_stats *tin = &s->tins[t];
			const char *name = cake_tin_name(o->diffserv, t);

			json_builder_begin_object(j);
			json_str(j, "name", name_or(name));
			json_u64(j, "threshold_rate", tin->threshold_rate * 8);
			json_u64(j, "sent_bytes", tin->sent_bytes);
			json_u64(j, "sent_packets", tin->sent_packets);
			json_u64(j, "drops", tin->dropped_packets);
			json_u64(j, "ecn_marks", tin->ecn_marked_packets);
			json_u64(j, "backlog_bytes", tin->backlog_bytes);
			json_u64(j, "peak_delay", tin->peak_delay_us);
			json_u64(j, "avg_delay", tin->avg_delay_us);
			json_u64(j, "base_delay", tin->base_delay_us);
			json_u64(j, "sparse_flows", tin->sparse_flows);
			json_u64(j, "bulk_flows", tin->bulk_flows);
			json_builder_end_object(j);
		}
		json_builder_end_array(j);
	}
	json_builder_end_object(j);
}

static void json_dir(JsonBuilder *j, const char *key, const struct shape_dir_view *d)
{
	char h[16];

	json_builder_set_member_name(j, key);
	if (!d->shaped) {
		json_builder_add_null_value(j);
		return;
	}
	handle_str(h, sizeof(h), d->qdisc.handle);
	json_builder_begin_object(j);
	json_str(j, "dev", d->dev);
	json_str(j, "kind", d->qdisc.kind);
	json_str(j, "handle", h);
	json_bool(j, "managed", d->managed);
	json_opts(j, &d->qdisc.cake);
	json_stats(j, &d->qdisc.cake, &d->qdisc.stats);
	json_builder_end_object(j);
}

static void json_view(JsonBuilder *j, const struct shape_view *v)
{
	json_builder_begin_object(j);
	json_str(j, "ifname", v->link.name);
	json_bool(j, "present", true);
	json_str(j, "link_kind", v->link.kind);
	json_str(j, "root_qdisc", v->egress.qdisc.kind);
	if (v->overhead_reason[0])
		json_str(j, "overhead_reason", v->overhead_reason);
	if (v->orig_kind[0])
		json_str(j, "restores", v->orig_kind);
	if (v->source[0])
		json_str(j, "source", v->source);
	json_dir(j, "egress", &v->egress);
	json_dir(j, "ingress", &v->ingress);
	json_builder_end_object(j);
}

int show_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(JsonBuilder) j = json_builder_new();
	struct netlink *nl;
	char **names = NULL;
	int r, status = EXIT_OK;

	if (cli_wants_help(argc, argv)) {
		fputs(show_usage, stdout);
		return EXIT_OK;
	}
	if (argc > 2) {
		log_err("show: takes at most one IFACE (see wgshape show --help)");
		return EXIT_USAGE;
	}
	if (argc == 2 && !ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	if (argc == 2) {
		names = g_new0(char *, 2);
		names[0] = g_strdup(argv[1]);
	} else {
		state_list(cli->statedir, &names);
	}

	json_builder_begin_array(j);
	for (char **n = names; *n; n++) {
		struct shape_view v;

		r = shape_view(nl, cli->statedir, *n, &v);
		if (r == -ENODEV && argc == 2)
			log_err("%s: no such interface", *n);
		if (r == -ENODEV && argc < 2) {
			/* Shaped once, gone since: say so, it is not a failure. */
			if (cli->json) {
				json_builder_begin_object(j);
				json_str(j, "ifname", *n);
				json_bool(j, "present", false);
				json_builder_end_object(j);
			} else {
				printf("%s: not present (gone since it was shaped; 'wgshape clear %s' "
				       "forgets it)\n", *n, *n);
			}
			continue;
		}
		if (r < 0) {
			status = EXIT_FAIL;
			continue;
		}
		if (cli->json)
			json_view(j, &v);
		else
			print_text(&v);
		shape_view_clear(&v);
	}
	json_builder_end_array(j);
	if (cli->json) {
		g_autoptr(JsonNode) root = json_builder_get_root(j);
		g_autofree char *out = json_to_string(root, TRUE);

		puts(out);
	}
	g_strfreev(names);
	netlink_close(nl);
	return status;
}
