/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Prometheus exposition (daemon/metrics.h) of views made here, as
 * shape_view() would fill them: a cake on a whole interface (diffserv3, its
 * three tins) and its IFB, a per-peer tree, an adapter's state file (and
 * that file's reader and writer, daemon/adapter-state.h), a
 * client's request and an interface that is gone. `test-metrics --print`
 * prints that exposition for tests/tools/check-metrics.py, which reads it
 * with Prometheus' own parser.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "daemon/metrics.h"
#include "safe-tmp.h"
#include "netlink/cake.h"

static void fill_cake(struct qdisc_info *q, uint64_t rate, uint32_t diffserv, unsigned int tins)
{
	memset(q, 0, sizeof(*q));
	g_strlcpy(q->kind, "cake", sizeof(q->kind));
	q->cake.rate = rate;
	q->cake.diffserv = diffserv;
	q->stats.has_app = true;
	q->stats.capacity_estimate = rate;
	q->stats.memory_used = 27760;
	q->stats.tin_count = tins;
	for (unsigned int t = 0; t < tins; t++) {
		struct cake_tin_stats *s = &q->stats.tins[t];

		s->threshold_rate = rate / (t + 1);
		/* past 2^53: a counter must come out exact, not as a double */
		s->sent_bytes = t == 1 ? UINT64_C(9007199254740993) : 1000 * (t + 1);
		s->sent_packets = 10 * (t + 1);
		s->dropped_packets = t;
		s->dropped_bytes = 1500 * t;
		s->ecn_marked_packets = 2 * t;
		s->backlog_bytes = 4260;
		s->backlog_packets = 3;
		s->peak_delay_us = 67200;
		s->avg_delay_us = 25700;
		s->base_delay_us = 4000;
		s->target_us = 5000;
		s->sparse_flows = 4;
		s->bulk_flows = 2;
	}
}

static struct shape_view plain_view(void)
{
	struct shape_view v = { 0 };

	g_strlcpy(v.link.name, "wg0", sizeof(v.link.name));
	g_strlcpy(v.source, "config /etc/wgshape/wgshape.conf:1", sizeof(v.source));
	v.egress.shaped = v.egress.managed = true;
	g_strlcpy(v.egress.dev, "wg0", sizeof(v.egress.dev));
	fill_cake(&v.egress.qdisc, 1163750, CAKE_DS_DIFFSERV3, 3);
	v.ingress.shaped = v.ingress.managed = true;
	g_strlcpy(v.ingress.dev, "ifb4wg0", sizeof(v.ingress.dev));
	fill_cake(&v.ingress.qdisc, 6250000, CAKE_DS_BESTEFFORT, 1);
	return v;
}

/* A server's tree: the default class, a named peer (whose name needs escaping), one gone. */
static struct shape_view tree_view(void)
{
	struct shape_view v = { 0 };
	struct shape_peer_view p = { 0 };

	g_strlcpy(v.link.name, "wg1", sizeof(v.link.name));
	v.tree = true;
	v.peers = g_array_new(FALSE, TRUE, sizeof(struct shape_peer_view));
	g_strlcpy(p.name, "default", sizeof(p.name));
	g_strlcpy(p.source, "config", sizeof(p.source));
	p.present = p.has_class = p.has_leaf = true;
	p.cls.ceil = 12500000;
	fill_cake(&p.leaf, 0, CAKE_DS_BESTEFFORT, 1);
	g_array_append_val(v.peers, p);
	memset(&p, 0, sizeof(p));
	g_strlcpy(p.name, "lap\"top\\1", sizeof(p.name));
	g_strlcpy(p.key, "evSXuwKdaCnJ+vBjiUiKllCHgGHyeuM1iZSRJLjZ2Fc=", sizeof(p.key));
	g_strlcpy(p.source, "client 10.0.0.2 (lease)", sizeof(p.source));
	p.present = p.has_class = p.has_leaf = true;
	p.cls.ceil = 2500000;
	fill_cake(&p.leaf, 0, CAKE_DS_DIFFSERV3, 3);
	g_array_append_val(v.peers, p);
	memset(&p, 0, sizeof(p));
	g_strlcpy(p.name, "phone", sizeof(p.name));
	p.present = false;
	g_array_append_val(v.peers, p);
	return v;
}

static const char adapt_state[] = "[adapt]\nserver=10.0.0.1\nlost=false\nstamped=true\n"
				  "[egress]\nrate=931000\napplied=931000\nmin=931000\n"
				  "base=9310000\nmax=9310000\nbaseline_us=-1234\ndelay_us=13600\n"
				  "rtt_us=26300\nload=736560\nchanged=1764860000\nwhy=queue\n"
				  "[download]\nrate=2000000\nmin=931000\nbase=9310000\nmax=9310000\n"
				  "delay_us=-200\n";

static char *exposition(void)
{
	struct metrics *m = metrics_new();
	struct shape_view a = plain_view(), b = tree_view();
	struct rate_record rec = { .asked = 250000, .port = 4781, .status = RATE_APPLIED,
				   .rate = 250000, .lease = 180 };
	struct adapter_state st;
	GString *out = g_string_new(NULL);

	g_assert_cmpint(adapter_state_parse(adapt_state, strlen(adapt_state), &st), ==, 0);
	g_strlcpy(rec.server, "10.0.0.1", sizeof(rec.server));
	g_strlcpy(rec.source, "network 'home' (/etc/wgshape/wgshape.conf:9)", sizeof(rec.source));
	metrics_add_view(m, &a);
	metrics_add_adapt(m, "wg0", &st);
	metrics_add_client(m, "wg0", &rec);
	metrics_add_view(m, &b);
	metrics_add_gone(m, "wg9");
	metrics_add_gone(m, "wg\xff\xfe"); /* not UTF-8: Prometheus' parser must read it all the same */
	metrics_finish(m, out);
	g_array_free(b.peers, TRUE);
	return g_string_free(out, FALSE);
}

static bool has_line(const char *text, const char *line)
{
	g_autofree char *nl = g_strdup_printf("\n%s\n", line);
	g_autofree char *whole = g_strdup_printf("\n%s", text);

	return strstr(whole, nl) != NULL;
}

#define ASSERT_LINE(text, line)                                                               \
	do {                                                                                  \
		if (!has_line(text, line))                                                    \
			g_error("no line '%s' in:\n%s", line, text);                          \
	} while (0)

/* Each family's samples come together, once (the format wants it so). */
static void assert_families_whole(const char *text)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *current = NULL;

	for (char **l = lines; *l && **l; l++) {
		char *name;

		if (**l == '#')
			continue;
		name = g_strndup(*l, strcspn(*l, "{ "));
		if (!g_strcmp0(name, current)) {
			g_free(name);
			continue;
		}
		if (g_hash_table_contains(seen, name))
			g_error("%s: its samples are not together", name);
		g_hash_table_add(seen, g_strdup(name));
		g_free(current);
		current = name;
	}
	g_assert_cmpuint(g_hash_table_size(seen), >=, 20);
}

static void test_lines(void)
{
	g_autofree char *t = exposition();

	/* the rate and where it came from, per direction */
	ASSERT_LINE(t, "wgshape_rate_bytes_per_second{interface=\"wg0\",direction=\"egress\"} "
		       "1163750");
	ASSERT_LINE(t, "wgshape_shaper_info{interface=\"wg0\",direction=\"ingress\",source=\"config "
		       "/etc/wgshape/wgshape.conf:1\",device=\"ifb4wg0\"} 1");
	/* per tin, by cake's names; a counter past 2^53 exact */
	ASSERT_LINE(t, "wgshape_sent_bytes_total{interface=\"wg0\",direction=\"egress\",tin="
		       "\"Best Effort\"} 9007199254740993");
	ASSERT_LINE(t, "wgshape_dropped_packets_total{interface=\"wg0\",direction=\"egress\",tin="
		       "\"Voice\"} 2");
	ASSERT_LINE(t, "wgshape_peak_delay_seconds{interface=\"wg0\",direction=\"egress\",tin="
		       "\"Bulk\"} 0.0672");
	ASSERT_LINE(t, "wgshape_ecn_marked_packets_total{interface=\"wg0\",direction=\"ingress\","
		       "tin=\"Tin 0\"} 0");
	/* the tree: a peer's class ceil, its name escaped; a peer gone has none */
	ASSERT_LINE(t, "wgshape_rate_bytes_per_second{interface=\"wg1\",direction=\"egress\",peer="
		       "\"lap\\\"top\\\\1\"} 2500000");
	ASSERT_LINE(t, "wgshape_rate_bytes_per_second{interface=\"wg1\",direction=\"egress\",peer="
		       "\"default\"} 12500000");
	g_assert_null(strstr(t, "phone"));
	/* the adapter and the client's request */
	ASSERT_LINE(t, "wgshape_adapt_rate_bytes_per_second{interface=\"wg0\",direction="
		       "\"egress\"} 116375");
	ASSERT_LINE(t, "wgshape_adapt_delay_seconds{interface=\"wg0\",direction=\"download\"} "
		       "-0.0002");
	ASSERT_LINE(t, "wgshape_adapt_far_end_lost{interface=\"wg0\"} 0");
	ASSERT_LINE(t, "wgshape_client_download_bytes_per_second{interface=\"wg0\",server="
		       "\"10.0.0.1\",status=\"applied\",source=\"network 'home' "
		       "(/etc/wgshape/wgshape.conf:9)\"} 250000");
	ASSERT_LINE(t, "wgshape_interface_present{interface=\"wg9\"} 0");
	ASSERT_LINE(t, "wgshape_interface_present{interface=\"wg1\"} 1");
	/* each family once, its HELP and TYPE first, its samples together */
	ASSERT_LINE(t, "# TYPE wgshape_sent_bytes_total counter");
	ASSERT_LINE(t, "# TYPE wgshape_backlog_bytes gauge");
	assert_families_whole(t);
}

/*
 * Issue 28: label values must be UTF-8, and an interface name is any bytes.
 * Valid sequences pass as they are; a stray byte comes out as the text
 * \xNN (its backslash escaped as the format wants).
 */
static void test_utf8(void)
{
	static const struct {
		const char *name, *line;
	} cases[] = {
		{ "wg\xff\xfe", "wgshape_interface_present{interface=\"wg\\\\xff\\\\xfe\"} 0" },
		{ "caf\xc3\xa9", "wgshape_interface_present{interface=\"caf\xc3\xa9\"} 0" },
		/* a sequence cut short, then a quote */
		{ "x\xe2\x82\"", "wgshape_interface_present{interface=\"x\\\\xe2\\\\x82\\\"\"} 0" },
		/* an overlong '/' (0xc0 0xaf) and a surrogate (0xed 0xa0 0x80) are no UTF-8 */
		{ "a\xc0\xaf", "wgshape_interface_present{interface=\"a\\\\xc0\\\\xaf\"} 0" },
		{ "\xed\xa0\x80z", "wgshape_interface_present{interface=\"\\\\xed\\\\xa0\\\\x80z\"} 0" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct metrics *m = metrics_new();
		g_autoptr(GString) out = g_string_new(NULL);

		metrics_add_gone(m, cases[i].name);
		metrics_finish(m, out);
		g_assert_true(g_utf8_validate(out->str, (gssize)out->len, NULL));
		ASSERT_LINE(out->str, cases[i].line);
	}
}

/*
 * Issue 28: a metrics-file the daemon cannot write again keeps its old
 * figures; the time they were read, in the file, says how old they are.
 */
static void test_updated(void)
{
	g_autoptr(GString) out = g_string_new(NULL);
	char *none[] = { NULL };
	const char *at;
	double now = (double)g_get_real_time() / G_USEC_PER_SEC, t;
	struct metrics *m = metrics_new();
	g_autoptr(GString) fixed = g_string_new(NULL);

	/* nothing to read but the time: no netlink needed */
	g_assert_cmpint(metrics_collect(NULL, "/nonexistent", none, out), ==, 0);
	ASSERT_LINE(out->str, "# TYPE wgshape_metrics_updated_timestamp_seconds gauge");
	at = strstr(out->str, "\nwgshape_metrics_updated_timestamp_seconds ");
	g_assert_nonnull(at);
	t = g_ascii_strtod(at + strlen("\nwgshape_metrics_updated_timestamp_seconds "), NULL);
	g_assert_cmpfloat(t, >=, now - 1);
	g_assert_cmpfloat(t, <=, now + 60);
	metrics_add_time(m, 1764860000.25);
	metrics_finish(m, fixed);
	ASSERT_LINE(fixed->str, "wgshape_metrics_updated_timestamp_seconds 1764860000.250");
}

/* Nothing shaped: nothing at all, which is a valid exposition too. */
static void test_empty(void)
{
	struct metrics *m = metrics_new();
	GString *out = g_string_new(NULL);

	metrics_finish(m, out);
	g_assert_cmpuint(out->len, ==, 0);
	g_string_free(out, TRUE);
}

/* IFNAME.adapt: what the adapter writes is what show and the metrics read back. */
static void test_adapter_state(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-adapt");
	g_autofree char *sub = g_build_filename(dir, "state", NULL);
	g_autofree char *path = g_build_filename(sub, "wg0.adapt", NULL);
	g_autofree char *text = NULL;
	struct adapter_state st, back;

	g_assert_cmpint(adapter_state_parse(adapt_state, strlen(adapt_state), &st), ==, 0);
	g_assert_cmpstr(st.server, ==, "10.0.0.1");
	g_assert_false(st.lost);
	g_assert_true(st.stamped);
	g_assert_true(st.dir[ADAPTER_EGRESS].on);
	g_assert_false(st.dir[ADAPTER_INGRESS].on);
	g_assert_true(st.dir[ADAPTER_DOWNLOAD].on);
	g_assert_cmpuint(st.dir[ADAPTER_EGRESS].load, ==, 736560);
	g_assert_cmpint(st.dir[ADAPTER_EGRESS].baseline_us, ==, -1234);
	g_assert_cmpint(st.dir[ADAPTER_EGRESS].changed, ==, 1764860000);
	g_assert_cmpstr(st.dir[ADAPTER_EGRESS].why, ==, "queue");
	g_assert_cmpint(st.dir[ADAPTER_DOWNLOAD].delay_us, ==, -200);
	g_assert_cmpstr(st.dir[ADAPTER_DOWNLOAD].why, ==, "");

	st.lost = true;
	g_assert_cmpint(adapter_state_save(sub, "wg0", &st), ==, 0);
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	/* the keys show reads, in bit/s, and only the directions that adapt */
	g_assert_nonnull(strstr(text, "[adapt]\nserver=10.0.0.1\nlost=true\nstamped=true\n"));
	g_assert_nonnull(strstr(text, "[egress]\nrate=931000\napplied=931000\n"));
	g_assert_null(strstr(text, "[ingress]"));
	g_assert_cmpint(adapter_state_load(sub, "wg0", &back), ==, 0);
	g_assert_cmpmem(&back, sizeof(back), &st, sizeof(st));

	adapter_state_remove(sub, "wg0");
	g_assert_cmpint(adapter_state_load(sub, "wg0", &back), ==, -ENOENT);
	g_assert_cmpint(adapter_state_parse("not [a key file", 15, &back), ==, -EINVAL);
	safe_tmp_rm(dir);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--print")) {
		g_autofree char *t = exposition();

		fputs(t, stdout);
		return fflush(stdout) ? 1 : 0;
	}
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/metrics/lines", test_lines);
	g_test_add_func("/metrics/empty", test_empty);
	g_test_add_func("/metrics/adapter-state", test_adapter_state);
	g_test_add_func("/metrics/utf8", test_utf8);
	g_test_add_func("/metrics/updated", test_updated);
	return g_test_run();
}
