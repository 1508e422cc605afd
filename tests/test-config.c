// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape.conf and conf.d: keys, warnings with file:line, glob precedence,
 * merging across files and refusing files others can write.
 *
 * A section's shape_request is filled once all files are read, so most tests
 * go through config_load on a folder of their own. Its files are 0444 and its
 * folders 0555: that is safe whoever owns them, so the tests pass as root and
 * as anyone else. The folder is made below no folder others can write, since
 * config_load refuses those (/tmp among them): see base_find().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "config/config.h"
#include "shape/peers.h"
#include "shape/state.h"
#include "util/err.h"

struct file {
	const char *name; /* below the folder: "wgshape.conf", "conf.d/10-a.conf" */
	const char *text;
	mode_t mode; /* 0: 0444 */
};

static void rm_rf(const char *path)
{
	GDir *d;
	const char *name;
	struct stat st;

	/* a link goes, not what it leads to */
	if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		g_remove(path);
		return;
	}
	g_chmod(path, 0700);
	d = g_dir_open(path, 0, NULL);
	if (d) {
		while ((name = g_dir_read_name(d))) {
			g_autofree char *p = g_build_filename(path, name, NULL);

			rm_rf(p);
		}
		g_dir_close(d);
	}
	g_remove(path);
}

/* Where the tests' folders are made (resolved): a folder config_load accepts. */
static char *base;

/* A new folder (0755) in below: base, or a candidate for it. */
static char *dir_new(const char *below)
{
	char *tmpl = g_build_filename(below, "wgshape-config-XXXXXX", NULL);

	if (!g_mkdtemp_full(tmpl, 0755))
		g_clear_pointer(&tmpl, g_free);
	return tmpl;
}

/*
 * The first of the user's runtime folder (else ~/.cache), /run and the build
 * folder where config_load reads a file: the first two are the user's or
 * root's alone on a usual system, the build folder is below a checkout.
 */
static void base_find(void)
{
	const char *candidates[] = { g_get_user_runtime_dir(), "/run",
				     g_test_get_dir(G_TEST_BUILT) };

	for (size_t i = 0; i < G_N_ELEMENTS(candidates) && !base; i++) {
		g_autofree char *real = realpath(candidates[i], NULL);
		g_autofree char *dir = real ? dir_new(real) : NULL;
		g_autofree char *path = dir ? g_build_filename(dir, "wgshape.conf", NULL) : NULL;
		char why[ERR_SIZE] = "";
		struct config *cfg = NULL;

		if (!dir)
			continue;
		if (g_file_set_contents(path, "", 0, NULL) && g_chmod(path, 0444) == 0 &&
		    g_chmod(dir, 0555) == 0 && config_load(path, true, &cfg, why, sizeof(why)) == 0)
			base = g_steal_pointer(&real);
		else
			g_test_message("not below %s: %s", candidates[i], why[0] ? why : "unwritable");
		config_free(cfg);
		g_chmod(dir, 0700);
		g_remove(path);
		g_rmdir(dir);
	}
	if (!base)
		g_error("no folder to make test files in that config_load accepts (is the build "
			"folder below one that others can write?)");
	g_test_message("test files below %s", base);
}

/* A folder holding files; its folders get dir_mode once written (0: 0555). */
static char *tree_new(const struct file *files, size_t n, mode_t dir_mode)
{
	char *dir = dir_new(base);
	g_autofree char *confd = NULL;

	g_assert_nonnull(dir);
	confd = g_build_filename(dir, "conf.d", NULL);
	for (size_t i = 0; i < n; i++) {
		g_autofree char *path = g_build_filename(dir, files[i].name, NULL);
		g_autofree char *parent = g_path_get_dirname(path);

		g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
		g_assert_true(g_file_set_contents(path, files[i].text, -1, NULL));
		g_assert_cmpint(g_chmod(path, files[i].mode ? files[i].mode : 0444), ==, 0);
	}
	if (g_file_test(confd, G_FILE_TEST_IS_DIR))
		g_assert_cmpint(g_chmod(confd, dir_mode ? dir_mode : 0555), ==, 0);
	g_assert_cmpint(g_chmod(dir, dir_mode ? dir_mode : 0555), ==, 0);
	return dir;
}

static char *main_path(const char *dir)
{
	return g_build_filename(dir, "wgshape.conf", NULL);
}

static void dump_warnings(const struct config *cfg)
{
	for (guint i = 0; i < cfg->warnings->len; i++)
		g_test_message("warning: %s", (const char *)cfg->warnings->pdata[i]);
}

/* config_load of a folder holding only wgshape.conf with text; *path: that file. */
static struct config *load_text(const char *text, char **path)
{
	const struct file f[] = { { "wgshape.conf", text } };
	g_autofree char *dir = tree_new(f, 1, 0);
	char why[ERR_SIZE] = "";
	struct config *cfg = NULL;

	*path = main_path(dir);
	g_assert_cmpint(config_load(*path, true, &cfg, why, sizeof(why)), ==, 0);
	g_assert_cmpstr(why, ==, "");
	g_assert_nonnull(cfg);
	rm_rf(dir);
	dump_warnings(cfg);
	return cfg;
}

static const struct shape_request *req_of(const struct config *cfg, const char *ifname)
{
	const struct conf_section *c = config_match(cfg, ifname);

	g_assert_nonnull(c);
	return &c->req;
}

static void assert_req_eq(const struct shape_request *a, const struct shape_request *b)
{
	g_assert_cmpint(a->egress, ==, b->egress);
	g_assert_cmpint(a->ingress, ==, b->ingress);
	if (a->egress == DIR_SET)
		g_assert_cmpuint(a->egress_rate, ==, b->egress_rate);
	if (a->ingress == DIR_SET)
		g_assert_cmpuint(a->ingress_rate, ==, b->ingress_rate);
	g_assert_cmphex(a->opts.has, ==, b->opts.has);
	if (a->opts.has & CAKE_HAS_OVERHEAD)
		g_assert_cmpint(a->opts.overhead, ==, b->opts.overhead);
	if (a->opts.has & CAKE_HAS_MPU)
		g_assert_cmpuint(a->opts.mpu, ==, b->opts.mpu);
	if (a->opts.has & CAKE_HAS_RTT)
		g_assert_cmpuint(a->opts.rtt, ==, b->opts.rtt);
	if (a->opts.has & CAKE_HAS_DIFFSERV)
		g_assert_cmpuint(a->opts.diffserv, ==, b->opts.diffserv);
	if (a->opts.has & CAKE_HAS_ACK_FILTER)
		g_assert_cmpuint(a->opts.ack_filter, ==, b->opts.ack_filter);
	if (a->opts.has & CAKE_HAS_MEMLIMIT)
		g_assert_cmpuint(a->opts.memlimit, ==, b->opts.memlimit);
	if (a->opts.has & CAKE_HAS_NAT)
		g_assert_cmpint(a->opts.nat, ==, b->opts.nat);
	if (a->opts.has & CAKE_HAS_WASH)
		g_assert_cmpint(a->opts.wash, ==, b->opts.wash);
	if (a->opts.has & CAKE_HAS_FLOW_MODE)
		g_assert_cmpuint(a->opts.flow_mode, ==, b->opts.flow_mode);
	if (a->opts.has & CAKE_HAS_SPLIT_GSO)
		g_assert_cmpint(a->opts.split_gso, ==, b->opts.split_gso);
	if (a->opts.has & CAKE_HAS_ATM)
		g_assert_cmpuint(a->opts.atm, ==, b->opts.atm);
	if (a->opts.has & CAKE_HAS_FWMARK)
		g_assert_cmphex(a->opts.fwmark, ==, b->opts.fwmark);
	if (a->opts.has & CAKE_HAS_RAW)
		g_assert_cmpint(a->opts.raw, ==, b->opts.raw);
	g_assert_cmpint(a->link_overhead, ==, b->link_overhead);
	g_assert_cmpint(a->overhead_auto, ==, b->overhead_auto);
}

static const char *warning(const struct config *cfg, guint i)
{
	return cfg->warnings->pdata[i];
}

static void assert_has(const char *haystack, const char *needle)
{
	if (!strstr(haystack, needle))
		g_error("'%s' does not say '%s'", haystack, needle);
}

/* Each key with good values: what reaches the shape_request, and no warning. */
static const struct {
	const char *line;
	struct shape_request want;
} key_cases[] = {
	{ "egress = 82mbit", { .egress = DIR_SET, .egress_rate = 10250000 } },
	{ "egress=1gbit", { .egress = DIR_SET, .egress_rate = 125000000 } },
	{ "egress = 10mbps", { .egress = DIR_SET, .egress_rate = 10000000 } },
	{ "egress = off", { .egress = DIR_OFF } },
	{ "ingress = 40mbit", { .ingress = DIR_SET, .ingress_rate = 5000000 } },
	{ "ingress = off", { .ingress = DIR_OFF } },
	{ "overhead = 60", { .opts = { .has = CAKE_HAS_OVERHEAD, .overhead = 60 } } },
	{ "overhead = -64", { .opts = { .has = CAKE_HAS_OVERHEAD, .overhead = -64 } } },
	{ "overhead = 256", { .opts = { .has = CAKE_HAS_OVERHEAD, .overhead = 256 } } },
	{ "overhead = auto", { .overhead_auto = true } },
	{ "link-overhead = 14", { .link_overhead = 14, .overhead_auto = true } },
	{ "link-overhead = -4", { .link_overhead = -4, .overhead_auto = true } },
	{ "mpu = 84", { .opts = { .has = CAKE_HAS_MPU, .mpu = 84 } } },
	{ "mpu = 0", { .opts = { .has = CAKE_HAS_MPU, .mpu = 0 } } },
	{ "rtt = 50ms", { .opts = { .has = CAKE_HAS_RTT, .rtt = 50000 } } },
	{ "rtt = 100us", { .opts = { .has = CAKE_HAS_RTT, .rtt = 100 } } },
	{ "rtt = 1s", { .opts = { .has = CAKE_HAS_RTT, .rtt = 1000000 } } },
	{ "memlimit = 4m", { .opts = { .has = CAKE_HAS_MEMLIMIT, .memlimit = 4 << 20 } } },
	{ "memlimit = 32kb", { .opts = { .has = CAKE_HAS_MEMLIMIT, .memlimit = 32 << 10 } } },
	{ "diffserv = besteffort",
	  { .opts = { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_BESTEFFORT } } },
	{ "diffserv = diffserv3",
	  { .opts = { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_DIFFSERV3 } } },
	{ "diffserv = diffserv4",
	  { .opts = { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_DIFFSERV4 } } },
	{ "diffserv = diffserv8",
	  { .opts = { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_DIFFSERV8 } } },
	{ "diffserv = precedence",
	  { .opts = { .has = CAKE_HAS_DIFFSERV, .diffserv = CAKE_DS_PRECEDENCE } } },
	{ "nat = yes", { .opts = { .has = CAKE_HAS_NAT, .nat = true } } },
	{ "nat = true", { .opts = { .has = CAKE_HAS_NAT, .nat = true } } },
	{ "nat = On", { .opts = { .has = CAKE_HAS_NAT, .nat = true } } },
	{ "nat = 1", { .opts = { .has = CAKE_HAS_NAT, .nat = true } } },
	{ "nat = no", { .opts = { .has = CAKE_HAS_NAT, .nat = false } } },
	{ "nat = false", { .opts = { .has = CAKE_HAS_NAT, .nat = false } } },
	{ "nat = off", { .opts = { .has = CAKE_HAS_NAT, .nat = false } } },
	{ "nat = 0", { .opts = { .has = CAKE_HAS_NAT, .nat = false } } },
	{ "wash = yes", { .opts = { .has = CAKE_HAS_WASH, .wash = true } } },
	{ "wash = no", { .opts = { .has = CAKE_HAS_WASH, .wash = false } } },
	{ "ack-filter = yes",
	  { .opts = { .has = CAKE_HAS_ACK_FILTER, .ack_filter = CAKE_ACKF_FILTER } } },
	{ "ack-filter = no",
	  { .opts = { .has = CAKE_HAS_ACK_FILTER, .ack_filter = CAKE_ACKF_NONE } } },
	{ "ack-filter = aggressive",
	  { .opts = { .has = CAKE_HAS_ACK_FILTER, .ack_filter = CAKE_ACKF_AGGRESSIVE } } },
	{ "flow-isolation = flowblind",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_FLOWBLIND } } },
	{ "flow-isolation = srchost",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_SRCHOST } } },
	{ "flow-isolation = dsthost",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_DSTHOST } } },
	{ "flow-isolation = hosts",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_HOSTS } } },
	{ "flow-isolation = flows",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_FLOWS } } },
	{ "flow-isolation = dual-srchost",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_DUAL_SRCHOST } } },
	{ "flow-isolation = dual-dsthost",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_DUAL_DSTHOST } } },
	{ "flow-isolation = triple-isolate",
	  { .opts = { .has = CAKE_HAS_FLOW_MODE, .flow_mode = CAKE_FM_TRIPLE_ISOLATE } } },
	{ "split-gso = yes", { .opts = { .has = CAKE_HAS_SPLIT_GSO, .split_gso = true } } },
	{ "split-gso = no", { .opts = { .has = CAKE_HAS_SPLIT_GSO, .split_gso = false } } },
	{ "atm = yes", { .opts = { .has = CAKE_HAS_ATM, .atm = CAKE_ATMC_ATM } } },
	{ "atm = no", { .opts = { .has = CAKE_HAS_ATM, .atm = CAKE_ATMC_NONE } } },
	{ "atm = ptm", { .opts = { .has = CAKE_HAS_ATM, .atm = CAKE_ATMC_PTM } } },
	{ "fwmark = 0xff", { .opts = { .has = CAKE_HAS_FWMARK, .fwmark = 0xff } } },
	{ "fwmark = 16", { .opts = { .has = CAKE_HAS_FWMARK, .fwmark = 16 } } },
	{ "rtt = internet", { .opts = { .has = CAKE_HAS_RTT, .rtt = 100000 } } },
	{ "rtt = satellite", { .opts = { .has = CAKE_HAS_RTT, .rtt = 1000000 } } },
	{ "overhead = raw",
	  { .opts = { .has = CAKE_HAS_OVERHEAD | CAKE_HAS_RAW | CAKE_HAS_ATM, .raw = true,
		      .overhead = 0, .atm = CAKE_ATMC_NONE } } },
	{ "link-overhead = ethernet",
	  { .opts = { .has = CAKE_HAS_MPU | CAKE_HAS_ATM, .mpu = 84, .atm = CAKE_ATMC_NONE },
	    .link_overhead = 38, .overhead_auto = true } },
	{ "link-overhead = conservative",
	  { .opts = { .has = CAKE_HAS_ATM, .atm = CAKE_ATMC_ATM },
	    .link_overhead = 48, .overhead_auto = true } },
	/* blanks an editor does not show */
	{ "egress = 82mbit  ", { .egress = DIR_SET, .egress_rate = 10250000 } },
	{ "nat = yes\t", { .opts = { .has = CAKE_HAS_NAT, .nat = true } } },
	{ "  egress\t=\t82mbit", { .egress = DIR_SET, .egress_rate = 10250000 } },
};

static void test_keys(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(key_cases); i++) {
		g_autofree char *text = g_strdup_printf("[interface wg0]\n%s\n", key_cases[i].line);
		g_autofree char *path = NULL;
		g_autoptr(config_t) cfg = NULL;
		const struct conf_section *c;

		g_test_message("%s", key_cases[i].line);
		cfg = load_text(text, &path);
		g_assert_cmpuint(cfg->warnings->len, ==, 0);
		g_assert_cmpuint(cfg->ifaces->len, ==, 1);
		c = config_match(cfg, "wg0");
		g_assert_nonnull(c);
		g_assert_cmpstr(c->name, ==, "wg0");
		g_assert_false(c->glob);
		g_assert_cmpint(c->enforce, ==, -1);
		assert_req_eq(&c->req, &key_cases[i].want);
	}
}

/* Every key in one section, as one `set` line would give them. */
static void test_all_keys(void)
{
	static const char text[] = "# the uplink\n"
				   "[interface wg0]\n"
				   "egress = 1gbit\n"
				   "ingress = 500mbit\n"
				   "overhead = -64\n"
				   "mpu = 84\n"
				   "rtt = 50ms\n"
				   "diffserv = diffserv4\n"
				   "nat = yes\n"
				   "wash = yes\n"
				   "ack-filter = aggressive\n"
				   "memlimit = 4m\n"
				   "flow-isolation = dual-dsthost\n"
				   "split-gso = no\n"
				   "atm = ptm\n"
				   "fwmark = 0xf\n"
				   "enforce = no\n";
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	const struct conf_section *c = config_match(cfg, "wg0");

	g_assert_cmpuint(cfg->warnings->len, ==, 0);
	g_assert_nonnull(c);
	g_assert_cmpint(c->req.egress, ==, DIR_SET);
	g_assert_cmpuint(c->req.egress_rate, ==, 125000000);
	g_assert_cmpint(c->req.ingress, ==, DIR_SET);
	g_assert_cmpuint(c->req.ingress_rate, ==, 62500000);
	g_assert_cmphex(c->req.opts.has, ==,
			CAKE_HAS_OVERHEAD | CAKE_HAS_MPU | CAKE_HAS_RTT | CAKE_HAS_DIFFSERV |
				CAKE_HAS_NAT | CAKE_HAS_WASH | CAKE_HAS_ACK_FILTER |
				CAKE_HAS_MEMLIMIT | CAKE_HAS_FLOW_MODE | CAKE_HAS_SPLIT_GSO |
				CAKE_HAS_ATM | CAKE_HAS_FWMARK);
	g_assert_cmpuint(c->req.opts.flow_mode, ==, CAKE_FM_DUAL_DSTHOST);
	g_assert_false(c->req.opts.split_gso);
	g_assert_cmpuint(c->req.opts.atm, ==, CAKE_ATMC_PTM);
	g_assert_cmphex(c->req.opts.fwmark, ==, 0xf);
	g_assert_cmpint(c->req.opts.overhead, ==, -64);
	g_assert_cmpuint(c->req.opts.mpu, ==, 84);
	g_assert_cmpuint(c->req.opts.rtt, ==, 50000);
	g_assert_cmpuint(c->req.opts.diffserv, ==, CAKE_DS_DIFFSERV4);
	g_assert_true(c->req.opts.nat);
	g_assert_true(c->req.opts.wash);
	g_assert_cmpuint(c->req.opts.ack_filter, ==, CAKE_ACKF_AGGRESSIVE);
	g_assert_cmpuint(c->req.opts.memlimit, ==, 4 << 20);
	g_assert_false(c->req.overhead_auto);
	g_assert_cmpint(c->enforce, ==, 0);
	/* the daemon's defaults stand */
	g_assert_true(cfg->enforce);
	g_assert_false(cfg->clear_on_exit);
	g_assert_cmpuint(cfg->files->len, ==, 1);
	g_assert_cmpstr(cfg->files->pdata[0], ==, path);
}

static void test_enforce_and_daemon(void)
{
	static const struct {
		const char *text;
		int iface_enforce;
		bool enforce, clear_on_exit;
	} t[] = {
		{ "[interface wg0]\n", -1, true, false },
		{ "[interface wg0]\nenforce = no\n", 0, true, false },
		{ "[interface wg0]\nenforce = yes\n", 1, true, false },
		{ "[interface wg0]\n[daemon]\nenforce = no\n", -1, false, false },
		{ "[daemon]\nclear-on-exit = yes\n[interface wg0]\nenforce = on\n", 1, true, true },
		{ "[daemon]\nenforce = false\nclear-on-exit = 1\n[interface wg0]\n", -1, false,
		  true },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *path = NULL;
		g_autoptr(config_t) cfg = NULL;
		const struct conf_section *c;

		g_test_message("%s", t[i].text);
		cfg = load_text(t[i].text, &path);
		g_assert_cmpuint(cfg->warnings->len, ==, 0);
		c = config_match(cfg, "wg0");
		g_assert_nonnull(c);
		g_assert_cmpint(c->enforce, ==, t[i].iface_enforce);
		g_assert_cmpint(cfg->enforce, ==, t[i].enforce);
		g_assert_cmpint(cfg->clear_on_exit, ==, t[i].clear_on_exit);
		/* a section with no shaping keys asks for nothing */
		g_assert_cmpint(c->req.egress, ==, DIR_KEEP);
		g_assert_cmpint(c->req.ingress, ==, DIR_KEEP);
		g_assert_cmphex(c->req.opts.has, ==, 0);
	}
}

/*
 * A bad value: one warning with file:line, the key and the value; that line
 * is skipped and the rest of the section applies as if it were not there.
 */
static void test_bad_value(void)
{
	static const struct {
		const char *key, *value;
	} t[] = {
		{ "egress", "fast" },
		{ "egress", "0" },
		{ "egress", "" },
		{ "egress", "85" },
		{ "egress", "10mbit nat" }, /* one value, not two words */
		{ "egress", "ingress" },
		{ "ingress", "-5mbit" },
		{ "ingress", "offf" },
		{ "overhead", "300" },
		{ "overhead", "6x" },
		{ "overhead", "auto wash" },
		{ "link-overhead", "1000" },
		{ "link-overhead", "auto" },
		{ "mpu", "257" },
		{ "mpu", "-1" },
		{ "rtt", "soon" },
		{ "rtt", "0" },
		{ "memlimit", "lots" },
		{ "diffserv", "diffserv5" },
		{ "diffserv", "nat" },
		{ "diffserv", "diffserv4 nat" },
		{ "nat", "maybe" },
		{ "nat", "nat" },
		{ "wash", "2" },
		{ "ack-filter", "very" },
		{ "ack-filter", "ack-filter-aggressive" },
		{ "flow-isolation", "triple" },
		{ "flow-isolation", "yes" },
		{ "flow-isolation", "dual-dsthost nat" },
		{ "split-gso", "split-gso" },
		{ "split-gso", "maybe" },
		{ "atm", "atm" },
		{ "atm", "noatm" },
		{ "atm", "adsl" },
		{ "fwmark", "ff" },
		{ "fwmark", "-1" },
		{ "fwmark", "" },
		{ "rtt", "earth" },
		{ "rtt", "internet lan" },
		{ "overhead", "none" },
		{ "overhead", "ethernet" },
		{ "link-overhead", "raw" },
		{ "link-overhead", "vlan" },
		{ "enforce", "perhaps" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		/* the lines around it use other keys than the bad one */
		const char *before = strcmp(t[i].key, "egress") ? "egress = 10mbit"
								: "ingress = 5mbit";
		const char *after = strcmp(t[i].key, "wash") ? "wash = yes" : "nat = yes";
		g_autofree char *text = g_strdup_printf("# wg0\n[interface wg0]\n%s\n%s = %s\n%s\n",
							before, t[i].key, t[i].value, after);
		g_autofree char *good = g_strdup_printf("[interface wg0]\n%s\n%s\n", before, after);
		g_autofree char *path = NULL, *good_path = NULL, *at = NULL, *quoted = NULL;
		g_autoptr(config_t) cfg = NULL;
		g_autoptr(config_t) want = NULL;

		g_test_message("%s = '%s'", t[i].key, t[i].value);
		cfg = load_text(text, &path);
		want = load_text(good, &good_path);
		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		at = g_strdup_printf("%s:4:", path);
		quoted = g_strdup_printf("'%s'", t[i].value);
		assert_has(warning(cfg, 0), at);
		assert_has(warning(cfg, 0), t[i].key);
		assert_has(warning(cfg, 0), quoted);
		g_assert_null(strchr(warning(cfg, 0), '\n'));
		assert_req_eq(req_of(cfg, "wg0"), req_of(want, "wg0"));
		g_assert_cmpint(config_match(cfg, "wg0")->enforce, ==, -1);
	}
}

/* A bad value's warning lists the choices, from the tables set parses with. */
static void test_bad_value_choices(void)
{
	static const struct {
		const char *line;
		const char *says;
	} t[] = {
		{ "flow-isolation = triple",
		  "flow-isolation = 'triple': not one of flowblind, srchost, dsthost, hosts, flows, "
		  "dual-srchost, dual-dsthost, triple-isolate; skipped" },
		{ "diffserv = diffserv5",
		  "diffserv = 'diffserv5': not one of besteffort, diffserv3, diffserv4, diffserv8, "
		  "precedence; skipped" },
		{ "atm = adsl", "atm = 'adsl': not yes, no or ptm; skipped" },
		{ "split-gso = maybe", "split-gso = 'maybe': not yes or no; skipped" },
		{ "rtt = earth", "rtt = 'earth': rtt: 'earth' is not a time (e.g. 100ms) nor one of "
				 "datacentre, lan, metro, regional, internet, oceanic, satellite, "
				 "interplanetary; skipped" },
		{ "link-overhead = vlan", "nor one of conservative, ethernet; skipped" },
		{ "fwmark = ff", "fwmark = 'ff': fwmark: 'ff' is not a mask" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *text = g_strdup_printf("[interface wg0]\negress = 1mbit\n%s\n",
							t[i].line);
		g_autofree char *path = NULL;
		g_autoptr(config_t) cfg = load_text(text, &path);

		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		assert_has(warning(cfg, 0), t[i].says);
	}
}

static void test_bad_daemon_value(void)
{
	static const char text[] = "[daemon]\n"
				   "enforce = sometimes\n"
				   "clear-on-exit = yes\n"
				   "[daemon]\n"
				   "clear-on-exit = 2\n";
	g_autofree char *path = NULL, *at2 = NULL, *at5 = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);

	/* the second [daemon] joins the first; clear-on-exit = 2 is its last word */
	g_assert_cmpuint(cfg->warnings->len, ==, 2);
	at2 = g_strdup_printf("%s:2:", path);
	at5 = g_strdup_printf("%s:5:", path);
	assert_has(warning(cfg, 0), at2);
	assert_has(warning(cfg, 0), "enforce");
	assert_has(warning(cfg, 0), "'sometimes'");
	assert_has(warning(cfg, 1), at5);
	assert_has(warning(cfg, 1), "clear-on-exit");
	assert_has(warning(cfg, 1), "'2'");
	g_assert_true(cfg->enforce);
	g_assert_false(cfg->clear_on_exit);
}

/*
 * A value with an invalid escape and a lone backslash at its end: GLib before
 * 2.76 set its error twice on it, a GLib warning (fatal under g_test_init),
 * found by fuzz-config. One warning of ours per such key, the rest read.
 */
static void test_escape_at_end(void)
{
	static const char text[] = "[interface wg0]\n"
				   "egress = 10mbit\\q\\\n"
				   "ingress = 5mbit\n"
				   "[network home]\n"
				   "connection-id = Home\\q\\\n"
				   "interface = wg1\n"
				   "egress = 20mbit\n"
				   "[daemon]\n"
				   "enforce = yes\\q\\\n";
	static const char *const keys[] = { "egress", "connection-id", "enforce" };
	static const unsigned int lines[] = { 2, 5, 9 };
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);

	g_assert_cmpuint(cfg->warnings->len, ==, 3);
	for (guint i = 0; i < 3; i++) {
		g_autofree char *at = g_strdup_printf("%s:%u:", path, lines[i]);

		assert_has(warning(cfg, i), at);
		assert_has(warning(cfg, i), keys[i]);
	}
	assert_has(warning(cfg, 1), "backslash");
	g_assert_nonnull(config_match(cfg, "wg0"));
	g_assert_cmpuint(req_of(cfg, "wg0")->ingress_rate, ==, 5000000 / 8);
}

/* Unknown keys and sections, and lines GKeyFile reads as odd keys. */
static void test_unknown(void)
{
	static const struct {
		const char *text;
		unsigned int line;
		const char *says[3];
	} t[] = {
		{ "[interface wg0]\negress = 10mbit\nbandwidth = 5mbit\n",
		  3,
		  { "unknown key", "'bandwidth'", "'5mbit'" } },
		{ "[interface wg0]\negress = 10mbit\n\n# x\nEgress = 5mbit\n",
		  5,
		  { "unknown key", "'Egress'", "'5mbit'" } },
		{ "[interface wg0]\negress = 10mbit\n; nat = yes\n", 3, { "unknown key", "'; nat'" } },
		{ "[interface wg0]\negress = 10mbit\n[daemon]\nverbose = yes\n",
		  4,
		  { "unknown key", "'verbose'", "'yes'" } },
		{ "[interfaces wg1]\negress = 5mbit\n[interface wg0]\negress = 10mbit\n",
		  1,
		  { "unknown section", "[interfaces wg1]" } },
		{ "[interface wg0]\negress = 10mbit\n[Daemon]\nenforce = no\n",
		  3,
		  { "unknown section", "[Daemon]" } },
		{ "[interface wg0]\negress = 10mbit\n[interface a/b]\negress = 5mbit\n",
		  3,
		  { "'a/b'", "not an interface name" } },
		{ "[interface wg0]\negress = 10mbit\n[interface ]\negress = 5mbit\n",
		  3,
		  { "[interface ]", "not an interface name" } },
		{ "[interface wg0]\negress = 10mbit\n[interface 0123456789abcdef]\n",
		  3,
		  { "'0123456789abcdef'", "not an interface name" } },
		/* one warning for a bad key written twice, at its last line */
		{ "[interface wg0]\negress = 10mbit\nspeed = 1\nspeed = 2\n",
		  4,
		  { "unknown key", "'speed'", "'2'" } },
		{ "[interface wg0]\negress = 10mbit\nrtt = soon\nrtt = later\n",
		  4,
		  { "rtt", "'later'" } },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *path = NULL, *at = NULL;
		g_autoptr(config_t) cfg = NULL;
		const struct shape_request *r;

		g_test_message("%s", t[i].text);
		cfg = load_text(t[i].text, &path);
		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		at = g_strdup_printf("%s:%u:", path, t[i].line);
		assert_has(warning(cfg, 0), at);
		for (size_t s = 0; s < G_N_ELEMENTS(t[i].says) && t[i].says[s]; s++)
			assert_has(warning(cfg, 0), t[i].says[s]);
		/* the rest of the file applies */
		g_assert_cmpuint(cfg->ifaces->len, ==, 1);
		r = req_of(cfg, "wg0");
		g_assert_cmpint(r->egress, ==, DIR_SET);
		g_assert_cmpuint(r->egress_rate, ==, 10000000 / 8);
		g_assert_true(cfg->enforce);
	}
}

/* Line numbers count blank lines, comments and CRLF line ends. */
static void test_line_numbers(void)
{
	static const char text[] = "\r\n"
				   "# comment\r\n"
				   "[interface wg1]\r\n"
				   "egress = 5mbit\r\n"
				   "\r\n"
				   "[interface wg0]\r\n"
				   "\t# rtt = soon\r\n"
				   "rtt = soon\r\n"
				   "[interface wg1]\r\n"
				   "mpu = 999\r\n";
	g_autofree char *path = NULL, *at8 = NULL, *at10 = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);

	g_assert_cmpuint(cfg->warnings->len, ==, 2);
	at8 = g_strdup_printf("%s:8:", path);
	at10 = g_strdup_printf("%s:10:", path);
	/* GKeyFile gives groups in order first seen, keys in order within */
	assert_has(warning(cfg, 0), at10);
	assert_has(warning(cfg, 0), "'999'");
	assert_has(warning(cfg, 1), at8);
	assert_has(warning(cfg, 1), "'soon'");
	g_assert_cmpuint(req_of(cfg, "wg1")->egress_rate, ==, 625000);
}

/* Not INI at all: the file is skipped as a whole with one warning. */
static void test_not_ini(void)
{
	static const struct {
		const char *data;
		size_t len;
	} t[] = {
		{ "egress = 10mbit\n[interface wg0]\n", 0 },
		{ "[interface wg0]\negress 10mbit\n", 0 },
		{ "[interface wg0\negress = 10mbit\n", 0 },
		{ "#!/bin/sh\nwgshape set wg0 egress 10mbit\n", 0 },
		{ "\x7f" "ELF\x02\x01\x01\x00\x00\x00", 10 },
		{ "\xff\xfe[\x00i\x00]\x00", 8 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autoptr(config_t) cfg = config_new();
		size_t len = t[i].len ? t[i].len : strlen(t[i].data);

		g_assert_cmpint(config_parse_data(cfg, "x.conf", t[i].data, len), ==, -EBADMSG);
		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		assert_has(warning(cfg, 0), "x.conf");
		assert_has(warning(cfg, 0), "not an INI file");
		g_assert_cmpuint(cfg->ifaces->len, ==, 0);
		g_assert_cmpuint(cfg->files->len, ==, 0);
		g_assert_null(config_match(cfg, "wg0"));
	}

	/* through config_load: that file skipped, the others read */
	{
		const struct file f[] = {
			{ "wgshape.conf", "egress = 10mbit\n" },
			{ "conf.d/10-a.conf", "[interface wg0]\negress = 20mbit\n" },
		};
		g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), 0);
		g_autofree char *path = main_path(dir);
		char why[ERR_SIZE] = "";
		g_autoptr(config_t) cfg = NULL;

		g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
		rm_rf(dir);
		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		assert_has(warning(cfg, 0), path);
		g_assert_cmpuint(req_of(cfg, "wg0")->egress_rate, ==, 2500000);
	}
}

/* Replace file (below dir, whose folders are 0555) with text. */
static void rewrite(const char *dir, const char *name, const char *text)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *parent = g_path_get_dirname(path);

	g_assert_cmpint(g_chmod(parent, 0755), ==, 0);
	g_assert_cmpint(g_remove(path), ==, 0);
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	g_assert_cmpint(g_chmod(path, 0444), ==, 0);
	g_assert_cmpint(g_chmod(parent, 0555), ==, 0);
}

/*
 * A reload (issue 28, item 6): a file that no longer parses keeps what it
 * said when it last did, with one warning naming it and GLib's reason; its
 * neighbours' changes still count, and once fixed its new text counts.
 */
static void test_reload_keeps_last_good(void)
{
	const struct file f[] = {
		{ "wgshape.conf", "[interface wg0]\negress = 10mbit\n" },
		{ "conf.d/10-a.conf", "[interface wg1]\negress = 20mbit\nbogus = 1\n" },
	};
	g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), 0);
	g_autofree char *path = main_path(dir);
	g_autofree char *confd_file = g_build_filename(dir, "conf.d/10-a.conf", NULL);
	char why[ERR_SIZE];
	g_autoptr(config_t) first = NULL, second = NULL, third = NULL, fixed = NULL, fresh = NULL;

	g_assert_cmpint(config_load(path, true, &first, why, sizeof(why)), ==, 0);
	g_assert_cmpuint(first->warnings->len, ==, 1); /* bogus = 1 */

	/* a typo in conf.d, a change in the main file */
	rewrite(dir, "conf.d/10-a.conf", "[interface wg1]\negress 30mbit\n");
	rewrite(dir, "wgshape.conf", "[interface wg0]\negress = 40mbit\n");
	g_assert_cmpint(config_reload(path, true, first, &second, why, sizeof(why)), ==, 0);
	dump_warnings(second);
	g_assert_cmpuint(second->warnings->len, ==, 1);
	assert_has(warning(second, 0), confd_file);
	assert_has(warning(second, 0), "not an INI file");
	assert_has(warning(second, 0), "egress 30mbit"); /* GLib's reason quotes the line */
	assert_has(warning(second, 0), "keeping what it said when it last read well");
	g_assert_cmpuint(req_of(second, "wg1")->egress_rate, ==, 2500000);
	g_assert_cmpuint(req_of(second, "wg0")->egress_rate, ==, 5000000);

	/* still broken at the next reload: the same text kept, not lost */
	g_assert_cmpint(config_reload(path, true, second, &third, why, sizeof(why)), ==, 0);
	g_assert_cmpuint(third->warnings->len, ==, 1);
	g_assert_cmpuint(req_of(third, "wg1")->egress_rate, ==, 2500000);

	/* the main file broken too: each keeps its own */
	rewrite(dir, "wgshape.conf", "egress = 50mbit\n");
	g_clear_pointer(&second, config_free);
	g_assert_cmpint(config_reload(path, true, third, &second, why, sizeof(why)), ==, 0);
	g_assert_cmpuint(second->warnings->len, ==, 2);
	assert_has(warning(second, 0), path);
	g_assert_cmpuint(req_of(second, "wg0")->egress_rate, ==, 5000000);
	g_assert_cmpuint(req_of(second, "wg1")->egress_rate, ==, 2500000);

	/* fixed: its new text counts */
	rewrite(dir, "conf.d/10-a.conf", "[interface wg1]\negress = 30mbit\n");
	rewrite(dir, "wgshape.conf", "[interface wg0]\negress = 60mbit\n");
	g_assert_cmpint(config_reload(path, true, second, &fixed, why, sizeof(why)), ==, 0);
	g_assert_cmpuint(fixed->warnings->len, ==, 0);
	g_assert_cmpuint(req_of(fixed, "wg1")->egress_rate, ==, 3750000);
	g_assert_cmpuint(req_of(fixed, "wg0")->egress_rate, ==, 7500000);

	/* a first load (no earlier one) still skips a broken file */
	rewrite(dir, "conf.d/10-a.conf", "[interface wg1]\negress 30mbit\n");
	g_assert_cmpint(config_load(path, true, &fresh, why, sizeof(why)), ==, 0);
	g_assert_cmpuint(fresh->warnings->len, ==, 1);
	assert_has(warning(fresh, 0), "file skipped");
	g_assert_null(config_match(fresh, "wg1"));
	rm_rf(dir);
}

/* An exact name beats a glob wherever it is; among globs the first one wins. */
static void test_glob_precedence(void)
{
	static const struct {
		const char *text;
		const char *ifname;
		const char *section; /* NULL: none */
	} t[] = {
		{ "[interface wg*]\n[interface wg0]\n", "wg0", "wg0" },
		{ "[interface wg*]\n[interface wg0]\n", "wg1", "wg*" },
		{ "[interface wg0]\n[interface wg*]\n", "wg0", "wg0" },
		{ "[interface wg0]\n[interface wg*]\n", "wg1", "wg*" },
		{ "[interface wg0]\n[interface wg*]\n", "eth0", NULL },
		{ "[interface wg0]\n[interface wg*]\n", "wg", "wg*" },
		{ "[interface wg*]\n[interface w*]\n", "wg1", "wg*" },
		{ "[interface wg*]\n[interface w*]\n", "wan0", "w*" },
		{ "[interface w*]\n[interface wg*]\n", "wg1", "w*" },
		{ "[interface w*]\n[interface wg*]\n[interface wg1]\n", "wg1", "wg1" },
		{ "[interface wg?]\n", "wg1", "wg?" },
		{ "[interface wg?]\n", "wg10", NULL },
		{ "[interface *]\n[interface wg0]\n", "anything", "*" },
		{ "[interface wg0]\n", "wg00", NULL },
		{ "[interface wg0]\n", "wg", NULL },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autoptr(config_t) cfg = config_new();
		const struct conf_section *c;

		g_test_message("%s -> %s", t[i].ifname, t[i].section ? t[i].section : "none");
		g_assert_cmpint(config_parse_data(cfg, "t.conf", t[i].text, strlen(t[i].text)), ==,
				0);
		g_assert_cmpuint(cfg->warnings->len, ==, 0);
		c = config_match(cfg, t[i].ifname);
		if (!t[i].section) {
			g_assert_null(c);
			continue;
		}
		g_assert_nonnull(c);
		g_assert_cmpstr(c->name, ==, t[i].section);
		g_assert_cmpint(c->glob, ==, strchr(t[i].section, '*') || strchr(t[i].section, '?'));
	}
}

/*
 * '*' and '?' as the shell has them, over bytes: an interface name need not be
 * UTF-8, and matching one against a glob must not abort (GLib's g_pattern
 * asserts on such text).
 */
static void test_glob(void)
{
	static const struct {
		const char *pattern, *name;
		bool match;
	} t[] = {
		{ "wg*", "wg", true },
		{ "wg*", "wg0", true },
		{ "wg*", "w", false },
		{ "wg*", "xwg0", false },
		{ "*", "", true },
		{ "*0", "wg0", true },
		{ "*0", "wg01", false },
		{ "*g*0", "wg10", true },
		{ "*g*0", "wg01", false },
		{ "w*g*", "wgg", true },
		{ "w*g?", "wg", false },
		{ "w*g?", "wgg1", true },
		{ "a*b*c", "aXbYbZc", true },
		{ "a*b*c", "aXbYcZ", false },
		{ "**", "x", true },
		{ "?", "", false },
		{ "?", "a", true },
		{ "??", "a", false },
		{ "wg?", "wg10", false },
		/* bytes, not UTF-8 */
		{ "wg?", "wg\xff", true },
		{ "wg??", "wg\xc3\xa9", true },
		{ "wg?", "wg\xc3\xa9", false },
		{ "*?", "wg0\xe0", true },
		{ "?*", "wg0\xe0", true },
		{ "*g*0", "wg0\xe0", false },
		{ "w*\xdd", "wg\xdd", true },
		{ "w*1\xdd", "wg0", false },
		{ "\xe0*", "\xe0\xe0", true },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *text = g_strdup_printf("[interface %s]\n", t[i].pattern);
		g_autofree char *p = g_strescape(t[i].pattern, NULL);
		g_autofree char *n = g_strescape(t[i].name, NULL);
		g_autoptr(config_t) cfg = config_new();
		const struct conf_section *c;

		g_test_message("%s vs %s", p, n);
		g_assert_cmpint(config_parse_data(cfg, "t.conf", text, strlen(text)), ==, 0);
		g_assert_cmpuint(cfg->ifaces->len, ==, 1);
		g_assert_true(((struct conf_section *)cfg->ifaces->pdata[0])->glob);
		c = config_match(cfg, t[i].name);
		g_assert_cmpint(c != NULL, ==, t[i].match);
	}
}

/*
 * wgshape.conf, then conf.d's NAME.conf files in name order; a section named again
 * merges with the earlier one and its later keys win.
 */
static void test_merge(void)
{
	/* written out of order, so the folder's order is not the name order */
	const struct file f[] = {
		{ "conf.d/20-b.conf", "[interface wg0]\negress = 30mbit\n" },
		{ "wgshape.conf", "[interface wg0]\n"
				  "egress = 10mbit\n"
				  "diffserv = diffserv4\n"
				  "enforce = no\n"
				  "[daemon]\n"
				  "clear-on-exit = yes\n" },
		{ "conf.d/README", "not read" },
		{ "conf.d/30-c.conf.disabled", "[interface wg0]\negress = 1kbit\n" },
		{ "conf.d/10-a.conf", "[interface wg0]\n"
				      "egress = 20mbit\n"
				      "nat = yes\n"
				      "enforce = yes\n"
				      "[interface wg*]\n"
				      "ingress = 1mbit\n" },
	};
	g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), 0);
	g_autofree char *path = main_path(dir);
	g_autofree char *a = g_build_filename(dir, "conf.d", "10-a.conf", NULL);
	g_autofree char *b = g_build_filename(dir, "conf.d", "20-b.conf", NULL);
	char why[ERR_SIZE] = "";
	g_autoptr(config_t) cfg = NULL;
	const struct conf_section *c;

	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
	rm_rf(dir);
	dump_warnings(cfg);
	g_assert_cmpuint(cfg->warnings->len, ==, 0);
	g_assert_cmpuint(cfg->files->len, ==, 3);
	g_assert_cmpstr(cfg->files->pdata[0], ==, path);
	g_assert_cmpstr(cfg->files->pdata[1], ==, a);
	g_assert_cmpstr(cfg->files->pdata[2], ==, b);

	g_assert_cmpuint(cfg->ifaces->len, ==, 2);
	c = config_match(cfg, "wg0");
	g_assert_cmpstr(c->name, ==, "wg0");
	g_assert_cmpuint(c->req.egress_rate, ==, 30000000 / 8);
	g_assert_cmpuint(c->req.opts.diffserv, ==, CAKE_DS_DIFFSERV4);
	g_assert_true(c->req.opts.has & CAKE_HAS_NAT);
	g_assert_true(c->req.opts.nat);
	g_assert_cmpint(c->req.ingress, ==, DIR_KEEP);
	g_assert_cmpint(c->enforce, ==, 1);
	/* the section is where it was first seen */
	g_assert_true(g_str_has_prefix(c->where, path));
	c = config_match(cfg, "wg1");
	g_assert_cmpstr(c->name, ==, "wg*");
	g_assert_cmpuint(c->req.ingress_rate, ==, 125000);
	g_assert_true(cfg->clear_on_exit);
}

/* Many files: the last by name wins, whatever order the folder lists them in. */
static void test_name_order(void)
{
	static const char *const names[] = { "50", "07", "99-z", "10", "9", "a", "00", "42-x",
					     "Z", "11", "zz", "05" };
	struct file f[G_N_ELEMENTS(names)];
	g_autofree char *dir = NULL, *path = NULL;
	char why[ERR_SIZE] = "";
	g_autoptr(config_t) cfg = NULL;
	char *texts[G_N_ELEMENTS(names)];
	char *files[G_N_ELEMENTS(names)];
	size_t last = 0;

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		files[i] = g_strdup_printf("conf.d/%s.conf", names[i]);
		texts[i] = g_strdup_printf("[interface wg0]\negress = %zukbit\n", i + 1);
		f[i] = (struct file){ files[i], texts[i], 0 };
		if (strcmp(names[i], names[last]) > 0)
			last = i;
	}
	dir = tree_new(f, G_N_ELEMENTS(f), 0);
	path = main_path(dir);
	g_assert_cmpint(config_load(path, false, &cfg, why, sizeof(why)), ==, 0);
	g_assert_cmpstr(why, ==, "");
	rm_rf(dir);

	/* the missing wgshape.conf, and nothing else */
	g_assert_cmpuint(cfg->warnings->len, ==, 1);
	g_assert_cmpuint(cfg->files->len, ==, G_N_ELEMENTS(names));
	for (guint i = 1; i < cfg->files->len; i++)
		g_assert_cmpstr(cfg->files->pdata[i - 1], <, cfg->files->pdata[i]);
	g_assert_cmpuint(req_of(cfg, "wg0")->egress_rate, ==, (last + 1) * 1000 / 8);

	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		g_free(files[i]);
		g_free(texts[i]);
	}
}

/* overhead and link-overhead together: the section is skipped, with a warning. */
static void test_conflict(void)
{
	static const struct {
		const char *text;
		unsigned int line;
		const char *says;
	} t[] = {
		{ "[interface wg1]\negress = 5mbit\n"
		  "[interface wg0]\negress = 10mbit\noverhead = 60\nlink-overhead = 14\n",
		  3, "link-overhead only adds to overhead auto" },
		{ "[interface wg1]\negress = 5mbit\n"
		  "[interface wg0]\nlink-overhead = 14\negress = 10mbit\noverhead = 60\n",
		  3, "link-overhead only adds to overhead auto" },
		{ "[interface wg1]\negress = 5mbit\n"
		  "[interface wg0]\negress = off\nnat = yes\n",
		  3, "off sets none" },
		{ "[interface wg1]\negress = 5mbit\n"
		  "[interface wg0]\negress = 10mbit\noverhead = 60\nlink-overhead = ethernet\n",
		  3, "ethernet only adds to overhead auto" },
		{ "[interface wg1]\negress = 5mbit\n"
		  "[interface wg0]\negress = 10mbit\nlink-overhead = 14\noverhead = raw\n",
		  3, "raw counts no overhead" },
		{ "[interface wg1]\negress = 5mbit\n"
		  "[interface wg0]\negress = off\nflow-isolation = dual-dsthost\n",
		  3, "off sets none" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *path = NULL, *at = NULL;
		g_autoptr(config_t) cfg = NULL;

		g_test_message("%s", t[i].text);
		cfg = load_text(t[i].text, &path);
		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		at = g_strdup_printf("%s:%u:", path, t[i].line);
		assert_has(warning(cfg, 0), at);
		assert_has(warning(cfg, 0), "[interface wg0]");
		assert_has(warning(cfg, 0), "section skipped");
		assert_has(warning(cfg, 0), t[i].says);
		g_assert_null(config_match(cfg, "wg0"));
		g_assert_cmpuint(cfg->ifaces->len, ==, 1);
		g_assert_cmpuint(req_of(cfg, "wg1")->egress_rate, ==, 625000);
	}

	/* the same across two files: the merged section is what is refused */
	{
		const struct file f[] = {
			{ "wgshape.conf", "\n[interface wg0]\negress = 10mbit\noverhead = 60\n" },
			{ "conf.d/10-a.conf", "[interface wg0]\nlink-overhead = 14\n" },
		};
		g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), 0);
		g_autofree char *path = main_path(dir);
		g_autofree char *at = g_strdup_printf("%s:2:", path);
		char why[ERR_SIZE] = "";
		g_autoptr(config_t) cfg = NULL;

		g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
		rm_rf(dir);
		dump_warnings(cfg);
		g_assert_cmpuint(cfg->warnings->len, ==, 1);
		assert_has(warning(cfg, 0), at);
		assert_has(warning(cfg, 0), "section skipped");
		g_assert_null(config_match(cfg, "wg0"));
	}
}

static void test_mode_safe(void)
{
	static const struct {
		uid_t uid;
		gid_t gid;
		mode_t mode;
		bool safe;
	} t[] = {
		{ 0, 0, 0644, true },	  { 0, 0, 0600, true },	     { 0, 0, 0664, true },
		{ 0, 0, 0444, true },	  { 0, 100, 0644, true },    { 0, 100, 0664, false },
		{ 0, 100, 0464, false },  { 0, 0, 0646, false },     { 0, 0, 0666, false },
		{ 0, 0, 0602, false },	  { 1000, 0, 0644, false },  { 1000, 0, 0444, true },
		{ 1000, 0, 0200, false }, { 1000, 1000, 0444, true }, { 1000, 1000, 0440, true },
		{ 0, 0, 0755 | S_IFDIR, true }, { 0, 0, 0775 | S_IFDIR, true },
		{ 0, 0, 0777 | S_IFDIR, false }, { 0, 0, 01777 | S_IFDIR, false },
		{ 0, 50, 0775 | S_IFDIR, false }, { 1000, 0, 0555 | S_IFDIR, true },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_test_message("uid %u gid %u mode %o", (unsigned int)t[i].uid,
			       (unsigned int)t[i].gid, (unsigned int)t[i].mode);
		g_assert_cmpint(config_mode_safe(t[i].uid, t[i].gid, t[i].mode), ==, t[i].safe);
	}
}

/* Files and folders others can write are refused, whoever runs the test. */
static void test_refuse_writable(void)
{
	static const struct {
		const char *what;
		mode_t main_mode, confd_file_mode, dir_mode;
		const char *refused; /* relative to the folder; "" is the folder */
	} t[] = {
		{ "world-writable wgshape.conf", 0666, 0, 0, "wgshape.conf" },
		{ "wgshape.conf 0646", 0646, 0, 0, "wgshape.conf" },
		{ "world-writable conf.d file", 0, 0666, 0, "conf.d/10-a.conf" },
		{ "world-writable folder", 0, 0, 0777, "" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		const struct file f[] = {
			{ "wgshape.conf", "[interface wg0]\negress = 10mbit\n", t[i].main_mode },
			{ "conf.d/10-a.conf", "[interface wg0]\nnat = yes\n", t[i].confd_file_mode },
		};
		g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), t[i].dir_mode);
		g_autofree char *path = main_path(dir);
		g_autofree char *bad = g_build_filename(dir, t[i].refused, NULL);
		char why[ERR_SIZE] = "";
		struct config *cfg = NULL;

		g_test_message("%s", t[i].what);
		g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -EPERM);
		rm_rf(dir);
		g_assert_null(cfg);
		g_assert_cmpstr(why, !=, "");
		g_test_message("why: %s", why);
		assert_has(why, bad);
		assert_has(why, "writable");
		g_assert_null(strchr(why, '\n'));
	}
}

/* Ownership: only root can chown, and a non-root owner's 0644 is refused. */
static void test_refuse_owner(void)
{
	const struct file f[] = { { "wgshape.conf", "[interface wg0]\n", 0644 } };
	g_autofree char *dir = tree_new(f, 1, 0);
	g_autofree char *path = main_path(dir);
	char why[ERR_SIZE] = "";
	struct config *cfg = NULL;

	if (geteuid() != 0) {
		/* our own 0644 file: we could rewrite it, so could anyone running as us */
		g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -EPERM);
		g_assert_null(cfg);
		assert_has(why, "writable");
		rm_rf(dir);
		return;
	}

	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
	g_clear_pointer(&cfg, config_free);
	g_assert_cmpint(chmod(path, 0664), ==, 0);
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
	g_clear_pointer(&cfg, config_free);
	/* group-writable by a group other than root's */
	g_assert_cmpint(chown(path, 0, 100), ==, 0);
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -EPERM);
	g_assert_null(cfg);
	assert_has(why, path);
	why[0] = '\0';
	/* owned by someone else */
	g_assert_cmpint(chown(path, 1000, 0), ==, 0);
	g_assert_cmpint(chmod(path, 0644), ==, 0);
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -EPERM);
	why[0] = '\0';
	/* read-only makes no difference: its owner can chmod it back */
	g_assert_cmpint(chmod(path, 0444), ==, 0);
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -EPERM);
	assert_has(why, "owned by uid 1000");
	g_assert_null(cfg);
	why[0] = '\0';
	g_assert_cmpint(chown(path, 0, 0), ==, 0);
	/* the folder owned by someone else */
	g_assert_cmpint(chown(dir, 1000, 0), ==, 0);
	g_assert_cmpint(chmod(dir, 0755), ==, 0);
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -EPERM);
	assert_has(why, dir);
	g_assert_null(cfg);
	rm_rf(dir);
}

static void test_missing(void)
{
	const struct file f[] = {
		{ "conf.d/10-a.conf", "[interface wg0]\negress = 20mbit\n" },
	};
	g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), 0);
	g_autofree char *path = main_path(dir);
	char why[ERR_SIZE] = "";
	struct config *cfg = NULL;

	/* must exist: an error naming the file, and nothing else read */
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -ENOENT);
	g_assert_null(cfg);
	assert_has(why, path);
	why[0] = '\0';

	/* may be missing: a warning, and conf.d still read */
	g_assert_cmpint(config_load(path, false, &cfg, why, sizeof(why)), ==, 0);
	g_assert_cmpstr(why, ==, "");
	g_assert_cmpuint(cfg->warnings->len, ==, 1);
	assert_has(warning(cfg, 0), path);
	assert_has(warning(cfg, 0), "no such file");
	g_assert_cmpuint(req_of(cfg, "wg0")->egress_rate, ==, 2500000);
	g_clear_pointer(&cfg, config_free);
	rm_rf(dir);

	/* no folder at all */
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, -ENOENT);
	g_assert_null(cfg);
	assert_has(why, path);
	why[0] = '\0';
	g_assert_cmpint(config_load(path, false, &cfg, why, sizeof(why)), ==, 0);
	g_assert_cmpstr(why, ==, "");
	g_assert_cmpuint(cfg->ifaces->len, ==, 0);
	g_assert_cmpuint(cfg->files->len, ==, 0);
	g_assert_cmpuint(cfg->warnings->len, ==, 1);
	g_clear_pointer(&cfg, config_free);
}

/* Not a regular file or folder: refused with a reason, not read. */
static void test_not_regular(void)
{
	const struct file f[] = { { "wgshape.conf/x", "" } };
	g_autofree char *dir = tree_new(f, G_N_ELEMENTS(f), 0);
	g_autofree char *path = main_path(dir);
	char why[ERR_SIZE] = "";
	struct config *cfg = NULL;

	g_assert_cmpint(g_chmod(path, 0555), ==, 0);
	g_assert_cmpint(config_load(path, false, &cfg, why, sizeof(why)), <, 0);
	g_assert_null(cfg);
	assert_has(why, path);
	assert_has(why, "not a regular file");
	why[0] = '\0';
	rm_rf(dir);

	/* a folder that is a file, and a path through a file: a reason each time */
	g_assert_cmpint(config_load("/dev/null/wgshape.conf", false, &cfg, why, sizeof(why)), <, 0);
	assert_has(why, "/dev/null: not a folder");
	why[0] = '\0';
	g_assert_cmpint(config_load("/dev/null/x/wgshape.conf", false, &cfg, why, sizeof(why)), ==,
			-ENOTDIR);
	g_assert_null(cfg);
	g_assert_cmpstr(why, !=, "");
	assert_has(why, "/dev/null/x");
}

/* [network NAME] profiles: the seed's laptop, and what can go wrong in them. */
static void test_networks(void)
{
	g_autofree char *path = NULL;
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	struct config *cfg = load_text(
		"[network home5]\n"
		"connection-id = Home Wi-Fi 5G\n"
		"interface = client\n"
		"egress = 85mbit\n"
		"\n"
		"[network home24]\n"
		"connection-id = Home Wi-Fi 2.4G;Home Wi-Fi 2.4G (guest)\n"
		"connection-type = 802-11-wireless\n"
		"ssid = Home\n"
		"interface = client;wg*\n"
		"egress = 40mbit\n"
		"\n"
		"[network *]\n"
		"interface = other\n"
		"egress = 10mbit\n"
		"\n"
		"[network odd]\n"
		"connection-id = Home $(touch /tmp/pwned) \"5G\"\n"
		"interface = client\n"
		"egress = 1mbit\n",
		&path);
	const struct conf_section *c;

	g_assert_cmpuint(cfg->warnings->len, ==, 0);
	g_assert_cmpuint(cfg->networks->len, ==, 4);
	/* profiles are not interface sections */
	g_assert_null(config_match(cfg, "client"));
	g_assert_true(config_mentions(cfg, "client"));
	g_assert_false(config_mentions(cfg, "eth0"));

	config_networks_for(cfg, "client", profs);
	g_assert_cmpuint(profs->len, ==, 3);
	c = profs->pdata[0];
	g_assert_cmpstr(c->name, ==, "home5");
	g_assert_cmpstr(c->net.match.ids[0], ==, "Home Wi-Fi 5G");
	g_assert_null(c->net.match.ids[1]);
	g_assert_null(c->net.match.ssids);
	g_assert_cmpuint(c->req.egress_rate, ==, 85000000 / 8);
	c = profs->pdata[1];
	g_assert_cmpstr(c->net.match.ids[1], ==, "Home Wi-Fi 2.4G (guest)");
	g_assert_cmpstr(c->net.match.types[0], ==, "802-11-wireless");
	g_assert_cmpstr(c->net.match.ssids[0], ==, "Home");
	g_assert_false(c->net.match.any);
	/* the value is data, kept byte for byte */
	c = profs->pdata[2];
	g_assert_cmpstr(c->net.match.ids[0], ==, "Home $(touch /tmp/pwned) \"5G\"");

	g_ptr_array_set_size(profs, 0);
	config_networks_for(cfg, "wg7", profs);
	g_assert_cmpuint(profs->len, ==, 1);
	g_ptr_array_set_size(profs, 0);
	config_networks_for(cfg, "other", profs);
	g_assert_cmpuint(profs->len, ==, 1);
	g_assert_true(((const struct conf_section *)profs->pdata[0])->net.match.any);
	config_free(cfg);
	g_clear_pointer(&path, g_free);

	/* no interface = : the profile shapes nothing, so it is refused */
	cfg = load_text("[network lost]\nconnection-id = x\negress = 1mbit\n", &path);
	g_assert_cmpuint(cfg->networks->len, ==, 0);
	g_assert_cmpuint(cfg->warnings->len, ==, 1);
	g_assert_nonnull(strstr(cfg->warnings->pdata[0], "no interface"));
	config_free(cfg);
	g_clear_pointer(&path, g_free);

	/* a bad tunnel name in interface = is one warning, the rest stands */
	cfg = load_text("[network x]\ninterface = a/b\nconnection-id = y\negress = 2mbit\n"
			"[network y]\ninterface = client\negress = fast\n",
			&path);
	g_assert_cmpuint(cfg->warnings->len, ==, 3);
	g_assert_nonnull(strstr(cfg->warnings->pdata[0], ":2: interface = 'a/b'"));
	g_assert_nonnull(strstr(cfg->warnings->pdata[1], "egress = 'fast'"));
	config_free(cfg);
}

/* Let the test change what is in dir (0755), or not (0555: safe whoever owns it). */
static void writable(const char *dir, bool yes)
{
	g_assert_cmpint(g_chmod(dir, yes ? 0755 : 0555), ==, 0);
}

/* A folder below below with wgshape.conf and, when given, conf.d/10-a.conf; 0555. */
static char *tree_at(const char *below, const char *confd_text)
{
	char *dir = dir_new(below);
	g_autofree char *path = NULL, *confd = NULL, *in_confd = NULL;

	g_assert_nonnull(dir);
	path = main_path(dir);
	g_assert_true(g_file_set_contents(path, "[interface wg0]\negress = 10mbit\n", -1, NULL));
	g_assert_cmpint(g_chmod(path, 0444), ==, 0);
	if (confd_text) {
		confd = g_build_filename(dir, "conf.d", NULL);
		in_confd = g_build_filename(confd, "10-a.conf", NULL);
		g_assert_cmpint(g_mkdir(confd, 0755), ==, 0);
		g_assert_true(g_file_set_contents(in_confd, confd_text, -1, NULL));
		g_assert_cmpint(g_chmod(in_confd, 0444), ==, 0);
		writable(confd, false);
	}
	writable(dir, false);
	return dir;
}

static void assert_loads(const char *path)
{
	char why[ERR_SIZE] = "";
	g_autoptr(config_t) cfg = NULL;

	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
	g_assert_cmpstr(why, ==, "");
	g_assert_nonnull(cfg);
}

static void assert_refused(const char *path, int err, const char *bad, const char *says)
{
	char why[ERR_SIZE] = "";
	struct config *cfg = NULL;

	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, err);
	g_assert_null(cfg);
	g_assert_cmpstr(why, !=, "");
	g_test_message("why: %s", why);
	assert_has(why, bad);
	assert_has(why, says);
}

/*
 * The folders on the way count, resolved, up to / (as sshd's StrictModes):
 * one that others can write, even sticky as /tmp, lets them swap what is
 * below it between a check and a read. So are a link to a file there, a
 * conf.d file that is one, and a conf.d that leads there.
 */
static void test_refuse_unsafe_path(void)
{
	static const struct {
		const char *what;
		mode_t mode;
		bool other_group; /* group-writable by a group other than root's */
		bool other_owner; /* owned by uid 1000, who may write it (root only) */
		const char *says;
	} t[] = {
		{ "world-writable", 0777, .says = "writable by someone other than root" },
		{ "sticky and world-writable, as /tmp", 01777, .says = "writable" },
		{ "writable by others only", 0757, .says = "writable" },
		{ "group-writable, not root's group", 0775, true, .says = "writable" },
		{ "another user's", 0755, .other_owner = true, .says = "owned by uid 1000" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *outer = NULL, *dir = NULL, *path = NULL, *safe = NULL, *link = NULL;
		g_autofree char *safe2 = NULL, *path2 = NULL, *confd2 = NULL, *in_confd2 = NULL;

		g_test_message("%s", t[i].what);
		if ((t[i].other_group && getegid() == 0 && geteuid() != 0) ||
		    (t[i].other_owner && geteuid() != 0))
			continue; /* cannot chown it so */
		outer = dir_new(base);
		dir = tree_at(outer, NULL);
		path = main_path(dir);
		safe = tree_at(base, NULL);
		link = main_path(safe);
		safe2 = tree_at(base, "[interface wg1]\n");
		path2 = main_path(safe2);
		confd2 = g_build_filename(safe2, "conf.d", NULL);
		in_confd2 = g_build_filename(confd2, "10-a.conf", NULL);
		assert_loads(path); /* outer as made (0755) */
		g_assert_cmpint(g_chmod(outer, t[i].mode), ==, 0);
		if (t[i].other_group && geteuid() == 0)
			g_assert_cmpint(chown(outer, 0, 100), ==, 0);
		if (t[i].other_owner)
			g_assert_cmpint(chown(outer, 1000, 1000), ==, 0);
		assert_refused(path, -EPERM, outer, t[i].says);
		/* a link from a safe folder to it */
		writable(safe, true);
		g_assert_cmpint(g_remove(link), ==, 0);
		g_assert_cmpint(symlink(path, link), ==, 0);
		writable(safe, false);
		assert_refused(link, -EPERM, outer, "anything below it");
		assert_refused(link, -EPERM, outer, t[i].says);
		/* a conf.d file that is a link to it, and a conf.d that is a link to its folder */
		writable(confd2, true);
		g_assert_cmpint(g_remove(in_confd2), ==, 0);
		g_assert_cmpint(symlink(path, in_confd2), ==, 0);
		writable(confd2, false);
		assert_refused(path2, -EPERM, outer, t[i].says);
		writable(safe2, true);
		rm_rf(confd2);
		g_assert_cmpint(symlink(dir, confd2), ==, 0);
		writable(safe2, false);
		assert_refused(path2, -EPERM, outer, t[i].says);
		rm_rf(safe);
		rm_rf(safe2);
		rm_rf(outer);
	}
}

/*
 * Not a file to read, refused without waiting or reading on: a FIFO with no
 * writer (opening it for reading would wait for one), as the main file or in
 * conf.d; a link to a device; a file larger than any configuration.
 */
static void test_refuse_special(void)
{
	g_autofree char *dir = dir_new(base), *path = main_path(dir);
	g_autofree char *dir2 = tree_at(base, "[interface wg1]\n"), *path2 = main_path(dir2);
	g_autofree char *confd2 = g_build_filename(dir2, "conf.d", NULL);
	g_autofree char *in_confd2 = g_build_filename(confd2, "10-a.conf", NULL);
	int fd;

	alarm(60); /* a hang fails the test rather than the run */
	g_assert_cmpint(mkfifo(path, 0444), ==, 0);
	writable(dir, false);
	assert_refused(path, -EINVAL, path, "not a regular file");
	writable(confd2, true);
	g_assert_cmpint(g_remove(in_confd2), ==, 0);
	g_assert_cmpint(mkfifo(in_confd2, 0444), ==, 0);
	writable(confd2, false);
	assert_refused(path2, -EINVAL, in_confd2, "not a regular file");
	writable(dir, true);
	g_assert_cmpint(g_remove(path), ==, 0);
	g_assert_cmpint(symlink("/dev/zero", path), ==, 0);
	writable(dir, false);
	assert_refused(path, -EINVAL, path, "not a regular file");
	writable(dir, true);
	g_assert_cmpint(g_remove(path), ==, 0);
	/* sparse: 64 MiB of nothing, twice the most a configuration may be */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0444);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(ftruncate(fd, (off_t)64 << 20), ==, 0);
	close(fd);
	writable(dir, false);
	assert_refused(path, -EFBIG, path, "bytes");
	alarm(0);
	rm_rf(dir);
	rm_rf(dir2);
}

/* One line of UTF-8 text, no control character in it, and not a whole file's worth. */
static void assert_shown(const char *w)
{
	g_assert_true(g_utf8_validate(w, -1, NULL));
	for (const char *p = w; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			g_error("'%s' holds byte 0x%02x", w, (unsigned char)*p);
	g_assert_cmpuint(strlen(w), <, 1024);
}

/*
 * What a warning quotes from a file is escaped (a control character or a
 * byte that is not UTF-8 as \xNN) and cut short (64 characters, then ...):
 * a terminal shows a warning as it is, and check-config -j carries it. A
 * value that is not UTF-8 is told as such.
 */
static void test_warnings_shown(void)
{
	g_autofree char *big = g_strnfill(5 << 20, 'x'), *big_key = g_strnfill(1 << 20, 'k');
	g_autofree char *text = g_strconcat("[interface wg0]\n"
					    "egress = 10mbit\n"
					    "rtt = \x1b]0;pwned\x07\n"
					    "mpu = caf\xc3\xa9\n"
					    "nat = \xff\xfe\n"
					    "\x1b" "c = 1\n"
					    "b\xff" "d = 1\n"
					    "memlimit = ", big, "\n",
					    big_key, " = 1\n"
					    "[bad\xfe\xff]\n"
					    "[network n\xff]\n"
					    "connection-id = \xff\n"
					    "ssid = \x9b\n"
					    "[daemon]\n"
					    "enforce = \xc3\n", NULL);
	static const char *const want[] = {
		":3: rtt = '\\x1b]0;pwned\\x07': ",
		":4: mpu = 'caf\xc3\xa9': ",
		":5: nat: the value is not UTF-8 text; skipped",
		":6: unknown key '\\x1bc' (= '1')",
		":7: unknown key 'b\\xffd' (= '1')",
		":8: memlimit = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': ",
		":9: unknown key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...' (= '1')",
		":10: unknown section [bad\\xfe\\xff]",
		":12: connection-id: the value is not UTF-8 text; skipped",
		":13: ssid: the value is not UTF-8 text; skipped",
		":15: enforce: the value is not UTF-8 text; skipped",
		":11: [network n\\xff]: no interface = TUNNEL; section skipped",
	};
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);

	g_assert_cmpuint(cfg->warnings->len, ==, G_N_ELEMENTS(want));
	for (guint i = 0; i < cfg->warnings->len; i++) {
		g_autofree char *at = g_strconcat(path, want[i], NULL);

		assert_shown(warning(cfg, i));
		assert_has(warning(cfg, i), at);
		g_assert_null(strstr(warning(cfg, i), "backslash"));
	}
	/* the other keys of the section still apply */
	g_assert_cmpuint(req_of(cfg, "wg0")->egress_rate, ==, 10000000 / 8);
}

/*
 * 100,000 sections, each found by its name in file order, one merged with a
 * later header, and warnings deep in the file at their own lines. Counts
 * only: bench/bench-config gives the times (this took minutes while finding
 * a section and a line number went through everything before it).
 */
static void test_many_sections(void)
{
	enum { N = 100000 };
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(config_t) cfg = config_new();
	g_autofree char *at_rtt = g_strdup_printf("big.conf:%u: rtt = 'soon'", 3 * N + 5);
	g_autofree char *at_bogus = g_strdup_printf("big.conf:%u: unknown key 'bogus'", 3 * N + 3);

	/* section i's header is on line 3i + 1 */
	for (unsigned int i = 0; i < N; i++)
		g_string_append_printf(text, "[interface wg%u]\negress = %ukbit\nnat = yes\n", i,
				       1000 + i);
	g_string_append(text, "[network n]\ninterface = wg1\nbogus = 1\n"
			      "[interface wg0]\nrtt = soon\n");
	g_assert_cmpint(config_parse_data(cfg, "big.conf", text->str, text->len), ==, 0);
	dump_warnings(cfg);
	g_assert_cmpuint(cfg->ifaces->len, ==, N);
	g_assert_cmpuint(cfg->networks->len, ==, 1);
	g_assert_cmpuint(cfg->warnings->len, ==, 2);
	/* groups in the order first seen: [interface wg0] before [network n] */
	assert_has(warning(cfg, 0), at_rtt);
	assert_has(warning(cfg, 1), at_bogus);
	for (unsigned int i = 0; i < N; i++) {
		const struct conf_section *c = cfg->ifaces->pdata[i];
		char name[16], where[32];

		snprintf(name, sizeof(name), "wg%u", i);
		snprintf(where, sizeof(where), "big.conf:%u", 3 * i + 1);
		if (strcmp(c->name, name) || strcmp(c->where, where) || c->words->len != 3)
			g_error("section %u: [interface %s] at %s, %u words", i, c->name, c->where,
				c->words->len);
	}
	g_assert_true(config_match(cfg, "wg99999") == cfg->ifaces->pdata[N - 1]);
}


/* The rate channel's keys: a server's policy, a client's wish, the daemon's port and lease. */
static void test_rate_channel(void)
{
	static const char text[] =
		"[interface wg0]\n"
		"client-download = yes\n"
		"client-download-min = 2mbit\n"
		"client-download-max = 100mbit\n"
		"[interface wg1]\n"
		"client-download-min = 50mbit\n"
		"client-download-max = 10mbit\n" /* 3: min above max, both dropped */
		"[peer laptop]\n"
		"public-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		"download = 10mbit\n"
		"client-download-max = 40mbit\n"
		"[peer phone]\n"
		"public-key = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n"
		"client-download = no\n"
		"[peer tablet]\n" /* neither download nor client-download: dropped */
		"public-key = AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=\n"
		"[peer guest]\n" /* no download of its own: the client sets it */
		"public-key = AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=\n"
		"interface = wg1\n"
		"client-download = yes\n"
		"[network home]\n"
		"connection-id = Home\n"
		"interface = wg0\n"
		"download = 40mbit\n"
		"server = fd00:0:0::1\n"
		"[network cafe]\n"
		"connection-id = Cafe\n"
		"interface = wg0\n"
		"server = not-an-address\n" /* 1 */
		"download = fast\n" /* 2 */
		"client-download = yes\n" /* 3: a server's key, not a profile's */
		"[daemon]\n"
		"rate-port = 4999\n"
		"client-lease = 30\n";
	g_autofree char *path = NULL, *path2 = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	g_autoptr(config_t) bad = load_text("[daemon]\nrate-port = 70000\nclient-lease = 1\n",
					    &path2);
	g_autoptr(GArray) peers = g_array_new(false, true, sizeof(struct peer_want));
	const struct conf_section *home, *cafe;
	struct rate_policy pol;
	uint8_t key[WG_KEY_LEN];

	/* cafe's 3, wg1's bounds, tablet */
	g_assert_cmpuint(cfg->warnings->len, ==, 5);
	g_assert_cmpuint(bad->warnings->len, ==, 2);
	g_assert_cmpuint(bad->rate_port, ==, RATE_PORT);
	g_assert_cmpuint(bad->client_lease, ==, RATE_LEASE_S);
	g_assert_cmpuint(cfg->rate_port, ==, 4999);
	g_assert_cmpuint(cfg->client_lease, ==, 30);
	g_assert_cmpuint(cfg->peers->len, ==, 3);

	/* laptop: the interface's policy, its own max over the interface's */
	memset(key, 0, sizeof(key));
	config_rate_policy(cfg, "wg0", key, &pol);
	g_assert_true(pol.allowed);
	g_assert_cmpuint(pol.min, ==, 2000000 / 8);
	g_assert_cmpuint(pol.max, ==, 40000000 / 8);
	g_assert_cmpuint(pol.fallback, ==, 10000000 / 8);
	g_assert_cmpstr(config_peer_name(cfg, "wg0", key), ==, "laptop");
	/* phone: refused by its own section */
	memset(key, 1, sizeof(key));
	config_rate_policy(cfg, "wg0", key, &pol);
	g_assert_false(pol.allowed);
	/* a peer with no section: the interface's policy, no fallback */
	memset(key, 9, sizeof(key));
	config_rate_policy(cfg, "wg0", key, &pol);
	g_assert_true(pol.allowed);
	g_assert_cmpuint(pol.max, ==, 100000000 / 8);
	g_assert_cmpuint(pol.fallback, ==, 0);
	g_assert_null(config_peer_name(cfg, "wg0", key));
	/* wg1 says nothing (its bounds were dropped): not allowed ... */
	config_rate_policy(cfg, "wg1", key, &pol);
	g_assert_false(pol.allowed);
	g_assert_cmpuint(pol.min, ==, 0);
	g_assert_cmpuint(pol.max, ==, 0);
	/* ... but guest, on wg1 only, may; it is not a configured rate */
	memset(key, 3, sizeof(key));
	config_rate_policy(cfg, "wg1", key, &pol);
	g_assert_true(pol.allowed);
	config_rate_policy(cfg, "wg0", key, &pol);
	g_assert_true(pol.allowed); /* wg0's own policy: guest's section is wg1's */
	g_assert_null(config_peer_name(cfg, "wg0", key));
	config_peers_for(cfg, "wg1", NULL, 0, peers);
	g_assert_cmpuint(peers->len, ==, 0);
	/* laptop names no interface: on wg0 when WireGuard has its key there, among others */
	{
		uint8_t present[3 * WG_KEY_LEN];

		memset(present, 9, WG_KEY_LEN);
		memset(present + WG_KEY_LEN, 0, WG_KEY_LEN);
		memset(present + 2 * WG_KEY_LEN, 3, WG_KEY_LEN);
		config_peers_for(cfg, "wg0", present, 3, peers);
		g_assert_cmpuint(peers->len, ==, 1);
		g_assert_cmpstr(g_array_index(peers, struct peer_want, 0).name, ==, "laptop");
		g_array_set_size(peers, 0);
		config_peers_for(cfg, "wg0", present, 1, peers);
		g_assert_cmpuint(peers->len, ==, 0);
	}

	home = cfg->networks->pdata[0];
	cafe = cfg->networks->pdata[1];
	g_assert_cmpuint(home->net.download, ==, 40000000 / 8);
	g_assert_cmpstr(home->net.server, ==, "fd00::1");
	g_assert_cmpuint(cafe->net.download, ==, 0);
	g_assert_null(cafe->net.server);
}

/*
 * Issue 28, item 10: a [peer] name over 63 bytes and a file whose path
 * makes "config FILE:LINE" over 127 are cut between characters, so the state
 * file keeps both: show names the peer, and its source stays the
 * configuration's (a source read back as "set" survived its section's end).
 */
static void test_long_names(void)
{
	g_autoptr(GString) name = g_string_new(NULL), file = g_string_new("conf.d/");
	g_autoptr(GString) text = g_string_new(NULL);
	g_autofree char *dir = NULL, *path = NULL, *state = NULL;
	char why[ERR_SIZE];
	g_autoptr(config_t) cfg = NULL;
	g_autoptr(GArray) peers = g_array_new(false, true, sizeof(struct peer_want));
	struct shape_state st = { 0 }, back = { 0 };
	const struct peer_want *w;

	for (int i = 0; i < 40; i++)
		g_string_append(name, "\u00e9"); /* 80 bytes, each character two */
	g_string_append(name, "x"); /* so that byte 63 is the middle of one */
	for (int i = 0; i < 70; i++)
		g_string_append(file, "\u00e9");
	g_string_append(file, ".conf");
	g_string_printf(text,
			"[peer %s]\npublic-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
			"download = 10mbit\n",
			name->str);
	{
		const struct file f[] = { { "wgshape.conf", "" }, { file->str, text->str } };

		dir = tree_new(f, G_N_ELEMENTS(f), 0);
	}
	path = main_path(dir);
	g_assert_cmpint(config_load(path, true, &cfg, why, sizeof(why)), ==, 0);
	dump_warnings(cfg);
	config_peers_for(cfg, "wg0", (const uint8_t[WG_KEY_LEN]){ 0 }, 1, peers);
	g_assert_cmpuint(peers->len, ==, 1);
	w = &g_array_index(peers, struct peer_want, 0);
	g_assert_true(g_utf8_validate(w->name, -1, NULL));
	g_assert_cmpuint(strlen(w->name), ==, 62);
	g_assert_true(g_str_has_prefix(name->str, w->name));
	g_assert_true(g_utf8_validate(w->source, -1, NULL));
	g_assert_true(g_str_has_prefix(w->source, "config "));
	g_assert_cmpuint(strlen(w->source), >=, sizeof(w->source) - 4);

	/* and through the state file */
	state = g_build_filename(dir, "state", NULL);
	g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
	st.peers = g_array_copy(peers);
	g_assert_cmpint(state_save(state, "wg0", &st), ==, 0);
	g_assert_cmpint(state_load(state, "wg0", &back), ==, 0);
	g_assert_nonnull(back.peers);
	g_assert_cmpuint(back.peers->len, ==, 1);
	g_assert_cmpstr(g_array_index(back.peers, struct peer_want, 0).name, ==, w->name);
	g_assert_cmpstr(g_array_index(back.peers, struct peer_want, 0).source, ==, w->source);
	shape_state_clear(&st);
	shape_state_clear(&back);
	rm_rf(dir);
}

/*
 * One name, one meaning (issue 28's papercut): download-min/-max are adapt's
 * range beside download = (as in a [network] profile); a server's bounds
 * for its clients are client-download-min/-max. The old spelling of those
 * still reads, with a warning naming the new one.
 */
static void test_old_spelling(void)
{
	static const char text[] =
		"[interface wg0]\n" /* a server, spelled as before */
		"client-download = yes\n"
		"download-min = 2mbit\n"
		"download-max = 100mbit\n"
		"[interface wg1]\n" /* both spellings: the new one counts */
		"client-download = yes\n"
		"client-download-max = 50mbit\n"
		"download-max = 10mbit\n"
		"[interface wg2]\n" /* a client adapting: its own range, no warning */
		"download = 40mbit\n"
		"download-min = 10mbit\n"
		"download-max = 60mbit\n"
		"server = 10.0.0.1\n"
		"adapt = yes\n"
		"[peer laptop]\n"
		"public-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		"download = 10mbit\n"
		"download-max = 40mbit\n"; /* line 18 */
	g_autofree char *path = NULL, *at18 = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	const struct conf_section *wg2 = config_match(cfg, "wg2");
	struct rate_policy pol;
	uint8_t key[WG_KEY_LEN];

	g_assert_cmpuint(cfg->warnings->len, ==, 3);
	at18 = g_strdup_printf("%s:18:", path);
	assert_has(warning(cfg, 0), at18);
	assert_has(warning(cfg, 0),
		   "download-max is now spelled client-download-max in [peer laptop]");
	assert_has(warning(cfg, 1), "[interface wg0]");
	assert_has(warning(cfg, 1), "client-download-min/-max");
	assert_has(warning(cfg, 2), "[interface wg1]");
	assert_has(warning(cfg, 2), "download-min/-max skipped");

	memset(key, 9, sizeof(key));
	config_rate_policy(cfg, "wg0", key, &pol);
	g_assert_true(pol.allowed);
	g_assert_cmpuint(pol.min, ==, 2000000 / 8);
	g_assert_cmpuint(pol.max, ==, 100000000 / 8);
	config_rate_policy(cfg, "wg1", key, &pol);
	g_assert_cmpuint(pol.max, ==, 50000000 / 8);
	memset(key, 0, sizeof(key));
	config_rate_policy(cfg, "wg0", key, &pol);
	g_assert_cmpuint(pol.max, ==, 40000000 / 8);

	g_assert_nonnull(wg2);
	g_assert_true(wg2->adapt.on);
	g_assert_cmpuint(wg2->adapt.download_min, ==, 10000000 / 8);
	g_assert_cmpuint(wg2->adapt.download_max, ==, 60000000 / 8);
	g_assert_cmpuint(wg2->rate.min, ==, 0);
	g_assert_cmpuint(wg2->rate.max, ==, 0);
	g_assert_cmpuint(config_match(cfg, "wg0")->adapt.download_max, ==, 0);
}

/*
 * The peer poll follows an interface's peers only where enforce holds
 * (issue 28, "the peer poll ignores enforce = no"): a reshape on a peer's
 * change would put back a tree someone took away by hand.
 */
static void test_follows_peers(void)
{
	static const struct {
		const char *text;
		const char *ifname;
		bool follows;
	} t[] = {
		{ "[interface wg0]\n", "wg0", true },
		{ "[interface wg0]\nenforce = no\n", "wg0", false },
		{ "[interface wg*]\nenforce = no\n[interface wg1]\n", "wg0", false },
		{ "[interface wg*]\nenforce = no\n[interface wg1]\n", "wg1", true },
		{ "[interface wg0]\n[daemon]\nenforce = no\n", "wg0", false },
		{ "[interface wg0]\nenforce = yes\n[daemon]\nenforce = no\n", "wg0", true },
		/* shaped by hand, no section: the [daemon]'s */
		{ "", "wg9", true },
		{ "[daemon]\nenforce = no\n", "wg9", false },
		/* a [peer] alone: the [daemon]'s */
		{ "[peer a]\npublic-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		  "download = 1mbit\n[daemon]\nenforce = no\n", "wg0", false },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *path = NULL;
		g_autoptr(config_t) cfg = load_text(t[i].text, &path);

		g_test_message("%zu: %s", i, t[i].text);
		g_assert_cmpint(config_follows_peers(cfg, t[i].ifname), ==, t[i].follows);
	}
}

/* adapt = yes and its ranges; a client's download = in [interface]. */
static void test_adapt(void)
{
	static const char text[] =
		"[interface wg0]\n"
		"egress = 20mbit\n"
		"download = 40mbit\n" /* a client's: download-min/-max are adapt's */
		"download-min = 10mbit\n"
		"server = 10.0.0.1\n"
		"adapt = yes\n"
		"adapt-log = /var/log/wgshape-wg0.trace\n"
		"[interface wg1]\n"
		"egress = 20mbit\n"
		"egress-min = 30mbit\n" /* 1: the base under the range */
		"adapt = yes\n"
		"[interface wg2]\n"
		"ingress = 50mbit\n"
		"ingress-max = 60mbit\n"
		"adapt = maybe\n" /* 2 */
		"adapt-log = relative.trace\n" /* 3 */
		"[interface wg3]\n"
		"overhead = 60\n"
		"adapt = yes\n" /* 4: nothing to adapt */
		"[interface wg4]\n"
		"download = 10mbit\n"
		"client-download = yes\n" /* 5: a client's and a server's key */
		"[interface wg5]\n"
		"download = 10mbit\n"
		"client-download = no\n" /* no matter: not a server's wish */
		"[network home]\n"
		"connection-id = Home\n"
		"interface = wg9\n"
		"egress = 8mbit\n"
		"egress-max = 12mbit\n"
		"download = 30mbit\n"
		"download-min = 5mbit\n"
		"download-max = 40mbit\n"
		"adapt = yes\n";
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	const struct conf_section *c;

	g_assert_cmpuint(cfg->warnings->len, ==, 5);
	c = config_match(cfg, "wg0");
	g_assert_true(c->adapt.on);
	g_assert_cmpuint(c->net.download, ==, 40000000 / 8);
	g_assert_cmpstr(c->net.server, ==, "10.0.0.1");
	g_assert_cmpuint(c->adapt.download_min, ==, 10000000 / 8);
	g_assert_cmpuint(c->adapt.download_max, ==, 40000000 / 8); /* the base */
	g_assert_cmpuint(c->rate.min, ==, 0); /* not a server's bound */
	g_assert_cmpuint(c->adapt.egress_min, ==, 20000000 / 8 / 10); /* a tenth of the base */
	g_assert_cmpuint(c->adapt.egress_max, ==, 20000000 / 8);
	g_assert_cmpstr(c->adapt.log, ==, "/var/log/wgshape-wg0.trace");
	g_assert_true(config_client_download(cfg, "wg0"));
	g_assert_false(config_match(cfg, "wg1")->adapt.on);
	g_assert_cmpuint(config_match(cfg, "wg1")->req.egress_rate, ==, 20000000 / 8);
	c = config_match(cfg, "wg2");
	g_assert_false(c->adapt.on);
	g_assert_null(c->adapt.log);
	g_assert_false(config_match(cfg, "wg3")->adapt.on);
	c = config_match(cfg, "wg4");
	g_assert_cmpuint(c->net.download, ==, 0);
	g_assert_cmpint(c->rate.client_download, ==, 1);
	g_assert_cmpuint(config_match(cfg, "wg5")->net.download, ==, 10000000 / 8);
	c = cfg->networks->pdata[0];
	g_assert_true(c->adapt.on);
	g_assert_cmpuint(c->adapt.egress_min, ==, 8000000 / 8 / 10);
	g_assert_cmpuint(c->adapt.egress_max, ==, 12000000 / 8);
	g_assert_cmpuint(c->adapt.download_min, ==, 5000000 / 8);
	g_assert_cmpuint(c->adapt.download_max, ==, 40000000 / 8);
	g_assert_cmpuint(c->adapt.ingress_max, ==, 0);
}

/* [peer] adapt = yes (issue 26): the server adapts that peer; its range and probe. */
/*
 * [peer] upload = RATE: a peer with an upload alone is wanted (download 0),
 * beside one with both; one with neither is skipped with a warning; a bad
 * rate is named.
 */
static void test_peer_upload(void)
{
	static const char text[] =
		"[peer phone]\n"
		"public-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		"upload = 4mbit\n"
		"[peer tv]\n"
		"public-key = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n"
		"download = 20mbit\n"
		"upload = 2mbit\n"
		"[peer box]\n" /* 1: neither */
		"public-key = AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=\n"
		"upload = fast\n"; /* 2: not a rate */
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	g_autoptr(GArray) peers = g_array_new(false, true, sizeof(struct peer_want));
	uint8_t present[3 * WG_KEY_LEN];

	g_assert_cmpuint(cfg->warnings->len, ==, 2);
	g_assert_nonnull(strstr(cfg->warnings->pdata[0], "upload"));
	g_assert_nonnull(strstr(cfg->warnings->pdata[1], "no download = RATE, upload = RATE"));
	memset(present, 0, WG_KEY_LEN);
	memset(present + WG_KEY_LEN, 1, WG_KEY_LEN);
	memset(present + 2 * WG_KEY_LEN, 2, WG_KEY_LEN);
	config_peers_for(cfg, "wg0", present, 3, peers);
	g_assert_cmpuint(peers->len, ==, 2);
	g_assert_cmpstr(g_array_index(peers, struct peer_want, 0).name, ==, "phone");
	g_assert_cmpuint(g_array_index(peers, struct peer_want, 0).rate, ==, 0);
	g_assert_cmpuint(g_array_index(peers, struct peer_want, 0).upload, ==, 4000000 / 8);
	g_assert_cmpuint(g_array_index(peers, struct peer_want, 1).rate, ==, 20000000 / 8);
	g_assert_cmpuint(g_array_index(peers, struct peer_want, 1).upload, ==, 2000000 / 8);
}

static void test_peer_adapt(void)
{
	static const char text[] =
		"[peer phone]\n"
		"public-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
		"download = 20mbit\n"
		"adapt = yes\n"
		"[peer tv]\n"
		"public-key = AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n"
		"download = 20mbit\n"
		"adapt = yes\n"
		"adapt-min = 5mbit\n"
		"adapt-max = 40mbit\n"
		"probe = fd00::7\n"
		"[peer guest]\n" /* 1: nothing to adapt from */
		"public-key = AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=\n"
		"client-download = yes\n"
		"adapt = yes\n"
		"[peer box]\n"
		"public-key = AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM=\n"
		"download = 20mbit\n"
		"adapt = yes\n"
		"adapt-max = 10mbit\n" /* 2: download above the range */
		"probe = phone.example\n" /* 3: not an address */
		"[peer old]\n"
		"public-key = BAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ=\n"
		"download = 8mbit\n"
		"adapt = perhaps\n"; /* 4 */
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	const struct conf_peer *p;
	uint8_t key[WG_KEY_LEN];

	g_assert_cmpuint(cfg->warnings->len, ==, 4);
	memset(key, 0, sizeof(key));
	p = config_peer(cfg, "wg0", key);
	g_assert_nonnull(p);
	g_assert_true(p->adapt);
	g_assert_cmpuint(p->adapt_min, ==, 20000000 / 8 / 10); /* a tenth of download */
	g_assert_cmpuint(p->adapt_max, ==, 20000000 / 8); /* download */
	g_assert_null(p->probe);
	memset(key, 1, sizeof(key));
	p = config_peer(cfg, "wg0", key);
	g_assert_true(p->adapt);
	g_assert_cmpuint(p->adapt_min, ==, 5000000 / 8);
	g_assert_cmpuint(p->adapt_max, ==, 40000000 / 8);
	g_assert_cmpstr(p->probe, ==, "fd00::7");
	memset(key, 2, sizeof(key));
	g_assert_false(config_peer(cfg, "wg0", key)->adapt);
	memset(key, 3, sizeof(key));
	g_assert_false(config_peer(cfg, "wg0", key)->adapt);
	memset(key, 4, sizeof(key));
	g_assert_false(config_peer(cfg, "wg0", key)->adapt);
}

/* [daemon] metrics-file and metrics-every: an absolute path, 1..3600 s. */
static void test_metrics_keys(void)
{
	g_autofree char *p1 = NULL, *p2 = NULL, *p3 = NULL;
	g_autoptr(config_t) none = load_text("[interface wg0]\negress = 1mbit\n", &p1);
	g_autoptr(config_t) cfg = load_text(
	    "[daemon]\nmetrics-file = /var/lib/node-exporter/wgshape.prom\nmetrics-every = 60\n",
	    &p2);
	g_autoptr(config_t) bad =
	    load_text("[daemon]\nmetrics-file = wgshape.prom\nmetrics-every = 3601\n", &p3);

	g_assert_null(none->metrics_file);
	g_assert_cmpuint(none->metrics_every, ==, METRICS_EVERY_S);
	g_assert_cmpuint(cfg->warnings->len, ==, 0);
	g_assert_cmpstr(cfg->metrics_file, ==, "/var/lib/node-exporter/wgshape.prom");
	g_assert_cmpuint(cfg->metrics_every, ==, 60);
	g_assert_cmpuint(bad->warnings->len, ==, 2);
	g_assert_null(bad->metrics_file);
	g_assert_cmpuint(bad->metrics_every, ==, METRICS_EVERY_S);
	g_assert_nonnull(strstr(bad->warnings->pdata[0], "not an absolute path"));
	g_assert_nonnull(strstr(bad->warnings->pdata[1], "from 1 to 3600"));
}

/* The server set client asks when none is named: [interface]'s server =, else a profile's. */
static void test_client_server(void)
{
	static const char text[] = "[interface wg0]\n"
				   "egress = 20mbit\n"
				   "server = 10.0.0.2\n"
				   "[interface wg1]\n"
				   "egress = 20mbit\n"
				   "[network home]\n"
				   "connection-id = Home\n"
				   "interface = wg1\n"
				   "egress = 8mbit\n"
				   "[network work]\n"
				   "connection-id = Work\n"
				   "interface = wg*\n"
				   "egress = 8mbit\n"
				   "server = fd00::2\n";
	g_autofree char *path = NULL;
	g_autoptr(config_t) cfg = load_text(text, &path);
	const char *where = NULL;

	g_assert_cmpuint(cfg->warnings->len, ==, 0);
	g_assert_cmpstr(config_client_server(cfg, "wg0", &where), ==, "10.0.0.2");
	g_assert_nonnull(strstr(where, ":1"));
	g_assert_cmpstr(config_client_server(cfg, "wg1", &where), ==, "fd00::2");
	g_assert_nonnull(strstr(where, ":10"));
	g_assert_null(config_client_server(cfg, "eth0", NULL));
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	base_find();
	g_test_add_func("/config/keys", test_keys);
	g_test_add_func("/config/all-keys", test_all_keys);
	g_test_add_func("/config/enforce-and-daemon", test_enforce_and_daemon);
	g_test_add_func("/config/bad-value", test_bad_value);
	g_test_add_func("/config/bad-value-choices", test_bad_value_choices);
	g_test_add_func("/config/bad-daemon-value", test_bad_daemon_value);
	g_test_add_func("/config/escape-at-end", test_escape_at_end);
	g_test_add_func("/config/unknown", test_unknown);
	g_test_add_func("/config/line-numbers", test_line_numbers);
	g_test_add_func("/config/not-ini", test_not_ini);
	g_test_add_func("/config/reload-keeps-last-good", test_reload_keeps_last_good);
	g_test_add_func("/config/glob", test_glob);
	g_test_add_func("/config/glob-precedence", test_glob_precedence);
	g_test_add_func("/config/merge", test_merge);
	g_test_add_func("/config/name-order", test_name_order);
	g_test_add_func("/config/conflict", test_conflict);
	g_test_add_func("/config/mode-safe", test_mode_safe);
	g_test_add_func("/config/refuse-writable", test_refuse_writable);
	g_test_add_func("/config/refuse-owner", test_refuse_owner);
	g_test_add_func("/config/missing", test_missing);
	g_test_add_func("/config/not-regular", test_not_regular);
	g_test_add_func("/config/networks", test_networks);
	g_test_add_func("/config/many-sections", test_many_sections);
	g_test_add_func("/config/refuse-unsafe-path", test_refuse_unsafe_path);
	g_test_add_func("/config/refuse-special", test_refuse_special);
	g_test_add_func("/config/warnings-shown", test_warnings_shown);
	g_test_add_func("/config/rate-channel", test_rate_channel);
	g_test_add_func("/config/old-spelling", test_old_spelling);
	g_test_add_func("/config/follows-peers", test_follows_peers);
	g_test_add_func("/config/peer-adapt", test_peer_adapt);
	g_test_add_func("/config/peer-upload", test_peer_upload);
	g_test_add_func("/config/client-server", test_client_server);
	g_test_add_func("/config/adapt", test_adapt);
	g_test_add_func("/config/long-names", test_long_names);
	g_test_add_func("/config/metrics", test_metrics_keys);
	return g_test_run();
}
