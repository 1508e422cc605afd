// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "safe-tmp.h"
#include "shape/peers.h"
#include "shape/state.h"
#include "util/ifname.h"

static void test_ifname(void)
{
	static const struct {
		const char *name;
		bool ok;
	} t[] = {
		{ "wg0", true },	   { "client", true },	      { "a", true },
		{ "123456789012345", true }, { "1234567890123456", false }, { "", false },
		{ ".", false },	   { "..", false },	      { "a/b", false },
		{ "wg 0", false },	   { "wg\n0", false },	      { "wg:0", false },
		{ "...", true },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++)
		g_assert_cmpint(ifname_is_valid(t[i].name), ==, t[i].ok);
	g_assert_false(ifname_is_valid(NULL));
}

static void test_roundtrip(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *sub = g_build_filename(dir, "run", "wgshape", NULL);
	static const unsigned char opts[] = { 8, 0, 1, 0, 0x10, 0x27, 0, 0, 0xff };
	struct shape_state st = { 0 }, back = { 0 };
	char **names = NULL;

	st.ifindex = 42;
	st.egress = true;
	g_strlcpy(st.orig_kind, "fq_codel", sizeof(st.orig_kind));
	st.orig_handle = 0x80010000;
	st.orig_options = g_memdup2(opts, sizeof(opts));
	st.orig_options_len = sizeof(opts);
	st.ingress = true;
	g_strlcpy(st.ifb, "ifb4wg0", sizeof(st.ifb));
	g_strlcpy(st.overhead_reason, "WireGuard over IPv4: 60", sizeof(st.overhead_reason));

	/* the directory is created on demand */
	g_assert_cmpint(state_save(sub, "wg0", &st), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, 0);
	g_assert_cmpint(back.ifindex, ==, 42);
	g_assert_true(back.egress);
	g_assert_cmpstr(back.orig_kind, ==, "fq_codel");
	g_assert_cmphex(back.orig_handle, ==, 0x80010000);
	g_assert_cmpmem(back.orig_options, back.orig_options_len, opts, sizeof(opts));
	g_assert_true(back.ingress);
	g_assert_cmpstr(back.ifb, ==, "ifb4wg0");
	g_assert_cmpstr(back.overhead_reason, ==, "WireGuard over IPv4: 60");
	shape_state_clear(&back);

	/* an egress-only state with the kernel's default qdisc and no options */
	shape_state_clear(&st);
	st.ifindex = 7;
	st.egress = true;
	g_strlcpy(st.orig_kind, "noqueue", sizeof(st.orig_kind));
	g_assert_cmpint(state_save(sub, "client", &st), ==, 0);
	g_assert_cmpint(state_load(sub, "client", &back), ==, 0);
	g_assert_true(back.egress);
	g_assert_false(back.ingress);
	g_assert_cmpuint(back.orig_handle, ==, 0);
	g_assert_null(back.orig_options);
	shape_state_clear(&back);

	g_assert_cmpint(state_list(sub, &names), ==, 0);
	g_assert_cmpuint(g_strv_length(names), ==, 2);
	g_assert_cmpstr(names[0], ==, "client");
	g_assert_cmpstr(names[1], ==, "wg0");
	g_strfreev(names);

	g_assert_cmpint(state_remove(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_remove(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, -ENOENT);
	g_assert_cmpint(state_remove(sub, "client"), ==, 0);
	g_assert_cmpint(g_rmdir(sub), ==, 0);
	safe_tmp_rm(dir);
	shape_state_clear(&st);
}

/*
 * The state this process wrote or read last is taken again without a parse
 * while the file's text is the same; any other text (another process's
 * change, a torn file) is parsed, and a copy given out is the caller's own.
 */
static void test_cache(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	g_autofree char *text = NULL, *edited = NULL;
	struct shape_state st = { .ifindex = 5, .egress = true, .tree = true }, back = { 0 };
	struct peer_want w = { .rate = 1250000, .minor = 0x10 };
	g_auto(GStrv) parts = NULL;

	g_strlcpy(st.orig_kind, "noqueue", sizeof(st.orig_kind));
	g_strlcpy(st.source, "config /etc/wgshape/wgshape.conf:1", sizeof(st.source));
	st.peers = g_array_new(false, true, sizeof(struct peer_want));
	memset(w.key, 7, sizeof(w.key));
	g_strlcpy(w.name, "phone", sizeof(w.name));
	g_strlcpy(w.source, "client lease", sizeof(w.source));
	g_array_append_val(st.peers, w);
	g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);

	/* as written; the copy is the caller's to change */
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(back.peers->len, ==, 1);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 1250000);
	g_assert_true(back.peers != st.peers);
	g_array_index(back.peers, struct peer_want, 0).rate = 1;
	shape_state_clear(&back);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 1250000);
	g_assert_cmpstr(g_array_index(back.peers, struct peer_want, 0).name, ==, "phone");
	shape_state_clear(&back);

	/* another process changed the file: its text is read, not the one kept */
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	parts = g_strsplit(text, "rate=1250000", 2);
	g_assert_cmpuint(g_strv_length(parts), ==, 2);
	edited = g_strjoinv("rate=2500000", parts);
	g_assert_true(g_file_set_contents(path, edited, -1, NULL));
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 2500000);
	shape_state_clear(&back);
	/* and that text is now the one kept: the same again */
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 2500000);
	shape_state_clear(&back);

	/* torn: refused, whatever was kept */
	g_assert_true(g_file_set_contents(path, "[egress]\noriginal-handle=1\n", -1, NULL));
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EBADMSG);
	/* removed, then the first text put back by hand: read as any file */
	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -ENOENT);
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 1250000);
	shape_state_clear(&back);

	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	safe_tmp_rm(dir);
	shape_state_clear(&st);
}

static unsigned int kicks;
static void count_kick(void *arg)
{
	(void)arg;
	kicks++;
}

/* The rate of wg0's first peer as its file says (a new process's view). */
static uint64_t file_rate(const char *path)
{
	g_autofree char *text = NULL;
	struct shape_state st = { 0 };
	uint64_t rate;

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_assert_cmpint(state_parse(text, strlen(text), &st), ==, 0);
	rate = g_array_index(st.peers, struct peer_want, 0).rate;
	shape_state_clear(&st);
	return rate;
}

/* A tree with one peer (key 7...) at 10 Mbit/s in class 1:10. */
static void one_peer_tree(struct shape_state *st)
{
	struct peer_want w = { .rate = 1250000, .minor = 0x10 };

	*st = (struct shape_state){ .ifindex = 5, .egress = true, .tree = true };
	g_strlcpy(st->orig_kind, "noqueue", sizeof(st->orig_kind));
	st->peers = g_array_new(false, true, sizeof(struct peer_want));
	memset(w.key, 7, sizeof(w.key));
	g_array_append_val(st->peers, w);
}

/* Borrow wg0's kept state and set its peer (key 7...) to rate, as a rate request does; false when not kept. */
static bool borrow_rate(const char *dir, uint64_t rate)
{
	uint8_t key[WG_KEY_LEN];
	struct peer_want *w;

	memset(key, 7, sizeof(key));
	if (!state_borrow(dir, "wg0", key, &w))
		return false;
	g_assert_nonnull(w);
	w->rate = rate;
	state_borrow_changed(dir, "wg0");
	return true;
}

/* A borrowed change: loaded back at once, in the file at the flush, which yields to another writer. */
static void test_write_behind(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	g_autoptr(GPtrArray) lost = g_ptr_array_new_with_free_func(g_free);
	struct shape_state st, back = { 0 };
	uint8_t key[WG_KEY_LEN];
	struct peer_want *w;

	one_peer_tree(&st);
	memset(key, 7, sizeof(key));

	/* not asked for: nothing is lent */
	g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
	g_assert_false(borrow_rate(dir, 2500000));
	g_assert_null(state_peek(dir, "wg0"));

	state_write_behind(count_kick, NULL);
	kicks = 0;
	/* a state this process has not seen is not lent either */
	g_assert_null(state_borrow(dir, "wg1", key, &w));
	/* nor one another process wrote since this one did */
	{
		g_autofree char *text = NULL;

		g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
		g_assert_true(g_file_set_contents(path, text, -1, NULL));
		g_assert_false(borrow_rate(dir, 2500000));
		g_assert_null(state_peek(dir, "wg0"));
		g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
		shape_state_clear(&back);
	}
	g_assert_cmpuint(kicks, ==, 0);

	/* two changes: one kick, loads see the last, the file the first until the flush */
	g_assert_true(borrow_rate(dir, 2500000));
	g_assert_true(borrow_rate(dir, 3750000));
	g_assert_cmpuint(kicks, ==, 1);
	g_assert_cmpuint(file_rate(path), ==, 1250000);
	g_assert_nonnull(state_peek(dir, "wg0"));
	g_assert_cmpuint(g_array_index(state_peek(dir, "wg0")->peers, struct peer_want, 0).rate, ==,
			 3750000);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 3750000);
	shape_state_clear(&back);
	g_assert_cmpint(state_flush(lost), ==, 0);
	g_assert_cmpuint(lost->len, ==, 0);
	g_assert_cmpuint(file_rate(path), ==, 3750000);

	/* another process writes in between: its file stays, the interface is named */
	g_assert_true(borrow_rate(dir, 5000000));
	g_assert_cmpuint(kicks, ==, 2);
	{
		g_autofree char *text = NULL, *edited = NULL;

		g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
		g_assert_nonnull(strstr(text, "rate=3750000"));
		*strstr(text, "rate=3750000") = '\0';
		edited = g_strconcat(text, "rate=625000\n", NULL);
		g_assert_true(g_file_set_contents(path, edited, -1, NULL));
	}
	g_assert_cmpint(state_flush(lost), ==, 0);
	g_assert_cmpuint(lost->len, ==, 1);
	g_assert_cmpstr(lost->pdata[0], ==, "wg0");
	g_assert_cmpuint(file_rate(path), ==, 625000);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 625000);
	shape_state_clear(&back);

	/* removed while not yet written: gone, and the flush writes nothing */
	g_assert_true(borrow_rate(dir, 5000000));
	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	g_ptr_array_set_size(lost, 0);
	g_assert_cmpint(state_flush(lost), ==, 0);
	g_assert_cmpuint(lost->len, ==, 0);
	g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -ENOENT);

	state_write_behind(NULL, NULL);
	safe_tmp_rm(dir);
	shape_state_clear(&st);
}

/* A file's whole text. */
static char *file_text(const char *path)
{
	char *text = NULL;

	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	return text;
}

/*
 * The flush makes its text from parts kept per peer; it must be state_save's
 * (GKeyFile's whole text) byte for byte, on every kind of state and as
 * peers change, come and go.
 */
static void test_flush_text(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	static const unsigned char opts[] = { 8, 0, 1, 0, 0x10 };
	static const char *const names[] = { "", "phone", " lead\\ing\ttab=é#[x]", "tv box" };
	g_autoptr(GPtrArray) lost = g_ptr_array_new_with_free_func(g_free);
	struct shape_state st = { .ifindex = 5, .egress = true, .tree = true, .overhead = 60 };

	g_strlcpy(st.orig_kind, "fq_codel", sizeof(st.orig_kind));
	st.orig_options = g_memdup2(opts, sizeof(opts));
	st.orig_options_len = sizeof(opts);
	st.ingress = true;
	g_strlcpy(st.ifb, "ifb4wg0", sizeof(st.ifb));
	g_strlcpy(st.source, "config /etc/wgshape/wgshape.conf:3", sizeof(st.source));
	g_strlcpy(st.overhead_reason, "WireGuard over IPv6: 80", sizeof(st.overhead_reason));
	st.cap = 12500000;
	st.tree_leaf = PEER_LEAF_LAZY;
	st.peers = g_array_new(false, true, sizeof(struct peer_want));
	for (guint i = 0; i < 12; i++) {
		struct peer_want w = { .rate = 125000 * (i + 1), .minor = (uint16_t)(0x10 + i) };

		memset(w.key, (int)i + 1, sizeof(w.key));
		g_strlcpy(w.name, names[i % G_N_ELEMENTS(names)], sizeof(w.name));
		g_snprintf(w.source, sizeof(w.source), "config wgshape.conf:%u", 10 + i);
		if (i % 3 == 1)
			g_strlcpy(w.options, "leaf fq_codel", sizeof(w.options));
		w.activity = (uint8_t)(i % 3); /* unjudged, idle, active */
		g_array_append_val(st.peers, w);
	}
	state_write_behind(count_kick, NULL);
	for (guint round = 0; round < 4; round++) {
		g_autofree char *whole = NULL, *flushed_text = NULL;
		struct peer_want *w;

		/* peers come and go between rounds: a whole write */
		if (round == 2)
			g_array_remove_index(st.peers, 4);
		if (round == 3) {
			struct peer_want extra = { .rate = 1, .minor = 0x40 };

			memset(extra.key, 0x77, sizeof(extra.key));
			g_strlcpy(extra.source, "set", sizeof(extra.source));
			g_array_prepend_val(st.peers, extra);
		}
		g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
		/* one peer changed through the flush (its part made again, the others kept) */
		g_assert_nonnull(state_borrow(dir, "wg0", g_array_index(st.peers, struct peer_want,
									 round + 1).key, &w));
		g_assert_nonnull(w);
		w->rate += 1000 * (round + 1);
		g_strlcpy(w->source, round % 2 ? "lease" : "set", sizeof(w->source));
		w->activity = PEER_ACTIVE;
		state_borrow_changed(dir, "wg0");
		g_assert_cmpint(state_flush(lost), ==, 0);
		g_assert_cmpuint(lost->len, ==, 0);
		flushed_text = file_text(path);
		/* the same change made whole */
		g_array_index(st.peers, struct peer_want, round + 1) = *w;
		g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
		whole = file_text(path);
		g_assert_cmpstr(flushed_text, ==, whole);
	}
	state_write_behind(NULL, NULL);
	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	safe_tmp_rm(dir);
	shape_state_clear(&st);
}

/*
 * A process that changes one peer (set ... peer KEY download RATE) reads and
 * writes only its entry: what it reads is that peer and the rest of the
 * state; what it writes is the file state_save would write of the whole
 * state so changed, byte for byte, whichever peer it is (first, last).
 */
static void test_one_peer(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	static const char *const names[] = { "", "phone", " lead\\ing\ttab=é#[x]" };
	struct shape_state st = { .ifindex = 5, .egress = true, .tree = true, .overhead = 60 };
	static const guint which[] = { 0, 3, 6 };
	struct state_one one;
	struct shape_state got;
	uint8_t key[WG_KEY_LEN];

	g_strlcpy(st.orig_kind, "noqueue", sizeof(st.orig_kind));
	g_strlcpy(st.source, "config /etc/wgshape/wgshape.conf:3", sizeof(st.source));
	st.tree_leaf = PEER_LEAF_LAZY;
	st.peers = g_array_new(false, true, sizeof(struct peer_want));
	for (guint i = 0; i < 7; i++) {
		struct peer_want w = { .rate = 125000 * (i + 1), .minor = (uint16_t)(0x10 + i) };

		memset(w.key, (int)i + 1, sizeof(w.key));
		g_strlcpy(w.name, names[i % G_N_ELEMENTS(names)], sizeof(w.name));
		g_snprintf(w.source, sizeof(w.source), "config wgshape.conf:%u", 10 + i);
		w.activity = (uint8_t)(i % 3);
		g_array_append_val(st.peers, w);
	}
	for (guint k = 0; k < G_N_ELEMENTS(which); k++) {
		g_autofree char *one_text = NULL, *whole = NULL;
		struct peer_want *w = &g_array_index(st.peers, struct peer_want, which[k]);

		g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
		g_assert_cmpint(state_load_one(dir, "wg0", w->key, &got, &one), ==, 0);
		g_assert_cmpuint(got.peers->len, ==, 1);
		g_assert_cmpmem(g_array_index(got.peers, struct peer_want, 0).key, WG_KEY_LEN, w->key,
				WG_KEY_LEN);
		g_assert_cmpstr(g_array_index(got.peers, struct peer_want, 0).name, ==, w->name);
		g_assert_cmpuint(g_array_index(got.peers, struct peer_want, 0).rate, ==, w->rate);
		g_assert_cmpint(got.ifindex, ==, 5);
		g_assert_true(got.tree);
		/* the change: the peer's rate and source, and the state's source */
		g_array_index(got.peers, struct peer_want, 0).rate = 999000 + k;
		g_strlcpy(g_array_index(got.peers, struct peer_want, 0).source, "set",
			  sizeof(w->source));
		g_strlcpy(got.source, "set", sizeof(got.source));
		g_assert_cmpint(state_save_one(dir, "wg0", &got, &one), ==, 0);
		one_text = file_text(path);
		shape_state_clear(&got);
		state_one_clear(&one);
		/* the same change to the whole state */
		w->rate = 999000 + k;
		g_strlcpy(w->source, "set", sizeof(w->source));
		g_strlcpy(st.source, "set", sizeof(st.source));
		g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
		whole = file_text(path);
		g_assert_cmpstr(one_text, ==, whole);
	}

	/* a peer with no entry, or none at all: not found (the whole way) */
	memset(key, 0x55, sizeof(key));
	g_assert_cmpint(state_load_one(dir, "wg0", key, &got, &one), ==, -ENOENT);
	g_assert_null(one.text);
	g_assert_cmpint(state_load_one(dir, "wg9", key, &got, &one), ==, -ENOENT);
	/* a group twice (a hand edit; GKeyFile would merge them): the whole way */
	{
		g_autofree char *text = file_text(path), *twice = NULL;
		const char *grp = strstr(text, "[peer AQEB");

		g_assert_nonnull(grp);
		twice = g_strconcat(text, "\n", grp, NULL);
		g_assert_true(g_file_set_contents(path, twice, -1, NULL));
		g_assert_cmpint(state_load_one(dir, "wg0",
					       g_array_index(st.peers, struct peer_want, 0).key, &got,
					       &one), ==, -ENOENT);
	}
	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	safe_tmp_rm(dir);
	shape_state_clear(&st);
}

static unsigned int flushed;
static void count_flushed(GPtrArray *lost, void *arg)
{
	g_assert_cmpuint(lost->len, ==, 0);
	(void)arg;
	flushed++;
}

/* The flush whose texts a thread makes: written when the loop runs, and what changed meanwhile stays dirty. */
static void test_write_behind_async(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	struct shape_state st, back = { 0 };
	int lock;

	one_peer_tree(&st);
	g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
	state_write_behind(count_kick, NULL);
	kicks = flushed = 0;

	/* nothing to write: no thread, no callback */
	g_assert_false(state_flush_async(count_flushed, NULL));

	g_assert_true(borrow_rate(dir, 2500000));
	g_assert_true(state_flush_async(count_flushed, NULL));
	g_assert_true(state_flush_busy());
	/* a change while the text is made: loads see it, the file gets it at the next flush */
	g_assert_true(borrow_rate(dir, 3750000));
	g_assert_cmpuint(kicks, ==, 2);
	/* one running: a second call joins it */
	g_assert_true(state_flush_async(count_flushed, NULL));
	while (state_flush_busy())
		g_main_context_iteration(NULL, TRUE);
	g_assert_cmpuint(flushed, ==, 1);
	g_assert_cmpuint(file_rate(path), ==, 2500000);
	/* still dirty: kicked again */
	g_assert_cmpuint(kicks, ==, 3);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 3750000);
	shape_state_clear(&back);
	g_assert_true(state_flush_async(count_flushed, NULL));
	while (state_flush_busy())
		g_main_context_iteration(NULL, TRUE);
	g_assert_cmpuint(file_rate(path), ==, 3750000);
	g_assert_cmpuint(kicks, ==, 3);
	g_assert_false(state_flush_async(count_flushed, NULL));

	/*
	 * written whole meanwhile (state_save, under state_lock as every whole
	 * write is): the thread's older text is not written over it
	 */
	g_assert_true(borrow_rate(dir, 5000000));
	lock = state_lock(dir, "wg0");
	g_assert_cmpint(lock, >=, 0);
	g_assert_true(state_flush_async(count_flushed, NULL));
	g_array_index(st.peers, struct peer_want, 0).rate = 6250000;
	g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
	state_unlock(lock);
	while (state_flush_busy())
		g_main_context_iteration(NULL, TRUE);
	g_assert_cmpuint(file_rate(path), ==, 6250000);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	g_assert_cmpuint(g_array_index(back.peers, struct peer_want, 0).rate, ==, 6250000);
	shape_state_clear(&back);

	state_write_behind(NULL, NULL);
	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	safe_tmp_rm(dir);
	shape_state_clear(&st);
}

/* Can another process take the state folder's lock now (without waiting)? */
static bool other_can_lock(const char *dir)
{
	pid_t child = fork();
	int status;

	g_assert_cmpint(child, >=, 0);
	if (child == 0) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		_exit(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
	}
	g_assert_cmpint(waitpid(child, &status, 0), ==, child);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* state_lock: one holder across processes, made folder and all; let go by state_unlock. */
static void test_lock(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *sub = g_build_filename(dir, "run", NULL);
	int fd;

	g_assert_true(other_can_lock(dir));
	fd = state_lock(sub, "wg0");
	g_assert_cmpint(fd, >=, 0);
	g_assert_true(g_file_test(sub, G_FILE_TEST_IS_DIR));
	g_assert_false(other_can_lock(sub));
	state_unlock(fd);
	g_assert_true(other_can_lock(sub));
	/* nothing left in the folder */
	g_assert_cmpint(g_rmdir(sub), ==, 0);
	safe_tmp_rm(dir);
}

static void assert_same_state(const struct shape_state *a, const struct shape_state *b)
{
	g_assert_cmpint(a->ifindex, ==, b->ifindex);
	g_assert_cmpint(a->egress, ==, b->egress);
	g_assert_cmpstr(a->orig_kind, ==, b->orig_kind);
	g_assert_cmphex(a->orig_handle, ==, b->orig_handle);
	g_assert_cmpmem(a->orig_options, a->orig_options_len, b->orig_options, b->orig_options_len);
	g_assert_cmpint(a->ingress, ==, b->ingress);
	g_assert_cmpstr(a->ifb, ==, b->ifb);
	g_assert_cmpstr(a->overhead_reason, ==, b->overhead_reason);
	g_assert_cmpint(a->overhead, ==, b->overhead);
	g_assert_cmpstr(a->source, ==, b->source);
	g_assert_cmpint(a->tree, ==, b->tree);
	g_assert_cmpuint(a->cap, ==, b->cap);
	g_assert_cmpmem(&a->tree_opts, sizeof(a->tree_opts), &b->tree_opts, sizeof(b->tree_opts));
	g_assert_cmpint(!a->peers, ==, !b->peers);
	for (guint i = 0; a->peers && i < MAX(a->peers->len, b->peers->len); i++) {
		const struct peer_want *x = &g_array_index(a->peers, struct peer_want, i);
		const struct peer_want *y = &g_array_index(b->peers, struct peer_want, i);

		g_assert_cmpuint(a->peers->len, ==, b->peers->len);
		g_assert_cmpmem(x->key, WG_KEY_LEN, y->key, WG_KEY_LEN);
		g_assert_cmpstr(x->name, ==, y->name);
		g_assert_cmpuint(x->rate, ==, y->rate);
		g_assert_cmpmem(&x->opts, sizeof(x->opts), &y->opts, sizeof(y->opts));
		g_assert_cmpstr(x->options, ==, y->options);
		g_assert_cmpstr(x->source, ==, y->source);
		g_assert_cmpuint(x->minor, ==, y->minor);
	}
}

/*
 * What a load gives from what this process wrote is what a new process
 * parsing the file gets, also for a state that says more than its file
 * keeps: options left behind by a direction taken off, a peer's words
 * without their cake options, an empty list of peers.
 */
static void test_cache_as_parsed(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	static const unsigned char opts[] = { 1, 2, 3 };

	for (int k = 0; k < 4; k++) {
		struct shape_state st = { .ifindex = 9, .overhead = 60 }, hit = { 0 }, parsed = { 0 };
		struct peer_want w = { .rate = 500000, .minor = 0x12 };
		g_autofree char *text = NULL;
		gsize len = 0;

		memset(w.key, 3, sizeof(w.key));
		g_strlcpy(st.orig_kind, "fq_codel", sizeof(st.orig_kind));
		st.orig_options = g_memdup2(opts, sizeof(opts));
		st.orig_options_len = sizeof(opts);
		g_strlcpy(st.ifb, "ifb4wg0", sizeof(st.ifb));
		st.tree = true;
		st.cap = 99;
		st.peers = g_array_new(false, true, sizeof(struct peer_want));
		switch (k) {
		case 0: /* ingress alone: the egress side's fields are not in the file */
			st.ingress = true;
			break;
		case 1: /* a tree: a peer's words, their cake options not filled in */
			st.egress = true;
			g_strlcpy(w.options, "diffserv4 ack-filter", sizeof(w.options));
			g_array_append_val(st.peers, w);
			break;
		case 2: /* egress without a tree, no IFB: an empty list of peers */
			st.egress = true;
			st.tree = false;
			break;
		default: /* a peer whose words are gone but whose options stayed */
			st.egress = true;
			w.opts.has = ~0u;
			g_array_append_val(st.peers, w);
			break;
		}
		g_assert_cmpint(state_save(dir, "wg0", &st), ==, 0);
		g_assert_cmpint(state_load(dir, "wg0", &hit), ==, 0);
		g_assert_true(g_file_get_contents(path, &text, &len, NULL));
		g_assert_cmpint(state_parse(text, len, &parsed), ==, 0);
		assert_same_state(&hit, &parsed);
		shape_state_clear(&hit);
		shape_state_clear(&parsed);
		shape_state_clear(&st);
	}
	g_assert_cmpint(state_remove(dir, "wg0"), ==, 0);
	safe_tmp_rm(dir);
}

/*
 * A state file as earlier builds wrote it, a peer's name and source cut
 * inside a character (issue 28, item 10): both still read, the source still
 * the configuration's (GLib alone gives no value, and the source read "set").
 */
static void test_cut_utf8(void)
{
	static const char text[] =
		"[interface]\nifindex=3\noverhead=60\nsource=config /etc/wgshape/\xc3\n"
		"[egress]\noriginal-kind=noqueue\noriginal-handle=0\noriginal-options=\n"
		"per-peer=true\ncap=0\n"
		"[peer AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=]\nclass=16\nrate=1250000\n"
		"name=caf\xc3\nsource=config /etc/wgshape/conf.d/caf\xc3\n";
	struct shape_state st = { 0 };
	const struct peer_want *w;

	g_assert_cmpint(state_parse(text, sizeof(text) - 1, &st), ==, 0);
	g_assert_true(g_str_has_prefix(st.source, "config /etc/wgshape/"));
	g_assert_nonnull(st.peers);
	w = &g_array_index(st.peers, struct peer_want, 0);
	g_assert_true(g_str_has_prefix(w->name, "caf"));
	g_assert_true(g_utf8_validate(w->name, -1, NULL));
	g_assert_true(g_str_has_prefix(w->source, "config /etc/wgshape/conf.d/caf"));
	shape_state_clear(&st);
}

static void test_refuses(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "bad.state", NULL);
	struct shape_state st = { 0 }, back = { .ifindex = 99 };
	char **names = NULL;

	g_assert_cmpint(state_save(dir, "../etc", &st), ==, -EINVAL);
	g_assert_cmpint(state_load(dir, "a/b", &back), ==, -EINVAL);
	/* a torn or hand-edited file is refused, not half-read */
	g_assert_true(g_file_set_contents(path, "[egress]\noriginal-handle=1\n", -1, NULL));
	g_assert_cmpint(state_load(dir, "bad", &back), ==, -EBADMSG);
	g_assert_cmpint(back.ifindex, ==, 99);
	g_assert_true(g_file_set_contents(path, "not a key file", -1, NULL));
	g_assert_cmpint(state_load(dir, "bad", &back), ==, -EBADMSG);
	g_assert_cmpint(g_unlink(path), ==, 0);
	/* a missing directory lists as empty */
	g_assert_cmpint(g_rmdir(dir), ==, 0);
	g_assert_cmpint(state_list(dir, &names), ==, 0);
	g_assert_cmpuint(g_strv_length(names), ==, 0);
	g_strfreev(names);
}

/* A child of this test (same command name), blocked until *release is closed. */
static pid_t spawn_blocked(int *release)
{
	int p[2];
	pid_t pid;
	char c;

	g_assert_cmpint(pipe(p), ==, 0);
	pid = fork();
	g_assert_cmpint(pid, >=, 0);
	if (pid == 0) {
		close(p[1]);
		(void)!read(p[0], &c, 1); /* returns when the parent closes its end */
		_exit(0);
	}
	close(p[0]);
	*release = p[1];
	return pid;
}

static void write_hold(const char *dir, const char *ifname, const char *text)
{
	g_autofree char *file = g_strconcat(ifname, ".hold", NULL);
	g_autofree char *path = g_build_filename(dir, file, NULL);

	g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* When pid started: field 22 of /proc/PID/stat, as a tune writes it in its hold. */
static unsigned long long start_of(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
	g_autofree char *data = NULL;
	g_auto(GStrv) f = NULL;

	g_assert_true(g_file_get_contents(path, &data, NULL, NULL));
	f = g_strsplit(strrchr(data, ')') + 2, " ", 0);
	return g_ascii_strtoull(f[19], NULL, 10);
}

/* The line a tune of ifname writes: "PID START tune IFNAME". */
static char *hold_text(pid_t pid, const char *ifname)
{
	return g_strdup_printf("%d %llu tune %s\n", (int)pid, start_of(pid), ifname);
}

static void test_hold(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *sub = g_build_filename(dir, "run", NULL);
	g_autofree char *other = NULL, *path = NULL;
	char **names = NULL;
	pid_t holder = -1, child;
	int release, status;

	/* none yet; then ours, twice (idempotent) */
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, 0);
	g_assert_cmpint(holder, ==, 0);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, getpid());
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, 0);
	g_assert_cmpint(state_holder(sub, "wg1"), ==, 0);
	/* a hold is not an interface's state */
	g_assert_cmpint(state_list(sub, &names), ==, 0);
	g_assert_null(names[0]);
	g_strfreev(names);
	state_release(sub, "wg0");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);

	/* another live process holds it: busy, and not ours to release */
	child = spawn_blocked(&release);
	other = hold_text(child, "wg0");
	write_hold(sub, "wg0", other);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, child);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, -EBUSY);
	g_assert_cmpint(holder, ==, child);
	state_release(sub, "wg0");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, child);

	/* it ends without releasing (killed): the hold left behind counts as none */
	close(release);
	g_assert_cmpint(waitpid(child, &status, 0), ==, child);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, 0);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, getpid());
	state_release(sub, "wg0");

	/* a live PID of another program (PID 1 is never this test) is no hold */
	g_free(other);
	other = hold_text(1, "wg0");
	write_hold(sub, "wg0", other);
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	/* nor is what is not a PID */
	write_hold(sub, "wg0", "12x\n");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	write_hold(sub, "wg0", "");
	g_assert_cmpint(state_holder(sub, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(sub, "bad/name", &holder), ==, -EINVAL);

	path = g_build_filename(sub, "wg0.hold", NULL);
	g_unlink(path);
	g_rmdir(sub);
	g_rmdir(dir);
}

/*
 * A wgshape that is not a tune of this interface is no hold: any other
 * wgshape (a serve) living under the PID, a process that has the PID now
 * but started after the hold was written, a hold of another interface.
 */
static void test_hold_who(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *text = NULL;
	int release, status;
	pid_t child = spawn_blocked(&release);

	text = g_strdup_printf("%d\n", (int)child); /* the PID alone */
	write_hold(dir, "wg0", text);
	g_assert_cmpint(state_holder(dir, "wg0"), ==, 0);
	g_free(text);
	text = g_strdup_printf("%d %llu tune wg0\n", (int)child, start_of(child) - 1);
	write_hold(dir, "wg0", text);
	g_assert_cmpint(state_holder(dir, "wg0"), ==, 0);
	g_free(text);
	text = hold_text(child, "wg1");
	write_hold(dir, "wg0", text);
	g_assert_cmpint(state_holder(dir, "wg0"), ==, 0);
	g_free(text);
	text = hold_text(child, "wg0");
	write_hold(dir, "wg0", text);
	g_assert_cmpint(state_holder(dir, "wg0"), ==, child);
	close(release);
	g_assert_cmpint(waitpid(child, &status, 0), ==, child);
	safe_tmp_rm(dir);
}

/* A state folder others can write is refused: they could plant what clear deletes. */
static void test_unsafe_dir(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *sub = g_build_filename(dir, "run", NULL);
	struct shape_state st = { .ifindex = 7 }, back = { 0 };
	char **names = NULL;
	pid_t holder;

	g_assert_cmpint(state_save(sub, "wg0", &st), ==, 0);
	g_assert_cmpint(g_chmod(sub, 0777), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, -EPERM);
	g_assert_cmpint(state_save(sub, "wg0", &st), ==, -EPERM);
	g_assert_cmpint(state_list(sub, &names), <, 0);
	g_assert_null(names[0]);
	g_strfreev(names);
	g_assert_cmpint(state_hold(sub, "wg0", &holder), ==, -EPERM);
	/* and so is one below a folder others can write, sticky or not */
	g_assert_cmpint(g_chmod(sub, 0755), ==, 0);
	g_assert_cmpint(g_chmod(dir, 01777), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, -EPERM);
	g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
	g_assert_cmpint(state_load(sub, "wg0", &back), ==, 0);
	g_assert_cmpint(back.ifindex, ==, 7);
	safe_tmp_rm(dir);
}

/* A state file others can write, or not owned by root or us, is refused. */
static void test_unsafe_file(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *path = g_build_filename(dir, "wg0.state", NULL);
	g_autofree char *target = g_build_filename(dir, "elsewhere", NULL);
	struct shape_state back = { 0 };

	g_assert_true(g_file_set_contents(path, "[interface]\nifindex=7\n", -1, NULL));
	g_assert_cmpint(g_chmod(path, 0666), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EPERM);
	g_assert_cmpint(g_chmod(path, 0620), ==, 0);
	if (getgid() != 0)
		g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EPERM);
	g_assert_cmpint(g_chmod(path, 0644), ==, 0);
	if (geteuid() == 0) {
		g_assert_cmpint(chown(path, 65534, 65534), ==, 0);
		g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EPERM);
		g_assert_cmpint(chown(path, 0, 0), ==, 0);
	}
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, 0);
	/* a link is not followed, wherever it leads */
	g_assert_cmpint(g_rename(path, target), ==, 0);
	g_assert_cmpint(symlink(target, path), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EPERM);
	safe_tmp_rm(dir);
}

/* A FIFO, a device or a huge file in place of a state or hold file: refused at once. */
static void test_not_regular(void)
{
	g_autofree char *dir = safe_tmp_dir("wgshape-state");
	g_autofree char *state = g_build_filename(dir, "wg0.state", NULL);
	g_autofree char *hold = g_build_filename(dir, "wg0.hold", NULL);
	struct shape_state back = { 0 };
	pid_t holder;
	int fd;

	g_assert_cmpint(mkfifo(state, 0600), ==, 0);
	g_assert_cmpint(mkfifo(hold, 0600), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EINVAL);
	g_assert_cmpint(state_holder(dir, "wg0"), ==, 0);
	g_assert_cmpint(state_hold(dir, "wg0", &holder), ==, 0); /* a stale hold: replaced */
	g_assert_cmpint(state_holder(dir, "wg0"), ==, getpid());
	g_unlink(state);
	g_unlink(hold);
	/* /dev/zero, linked, would be read until memory runs out */
	g_assert_cmpint(symlink("/dev/zero", hold), ==, 0);
	g_assert_cmpint(symlink("/dev/zero", state), ==, 0);
	g_assert_cmpint(state_holder(dir, "wg0"), ==, 0);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EPERM);
	g_unlink(state);
	/* larger than wgshape ever writes (sparse: it takes no room) */
	fd = open(state, O_WRONLY | O_CREAT | O_EXCL, 0644);
	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(ftruncate(fd, (off_t)(16 << 20) + 1), ==, 0);
	close(fd);
	g_assert_cmpint(state_load(dir, "wg0", &back), ==, -EFBIG);
	safe_tmp_rm(dir);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	state_cache_enable(); /* as the daemon: /state/cache and /state/cache-as-parsed need it */
	g_test_add_func("/state/ifname", test_ifname);
	g_test_add_func("/state/roundtrip", test_roundtrip);
	g_test_add_func("/state/cache", test_cache);
	g_test_add_func("/state/cache-as-parsed", test_cache_as_parsed);
	g_test_add_func("/state/write-behind", test_write_behind);
	g_test_add_func("/state/flush-text", test_flush_text);
	g_test_add_func("/state/one-peer", test_one_peer);
	g_test_add_func("/state/write-behind-async", test_write_behind_async);
	g_test_add_func("/state/lock", test_lock);
	g_test_add_func("/state/refuses", test_refuses);
	g_test_add_func("/state/cut-utf8", test_cut_utf8);
	g_test_add_func("/state/hold", test_hold);
	g_test_add_func("/state/hold-who", test_hold_who);
	g_test_add_func("/state/unsafe-dir", test_unsafe_dir);
	g_test_add_func("/state/unsafe-file", test_unsafe_file);
	g_test_add_func("/state/not-regular", test_not_regular);
	return g_test_run();
}
