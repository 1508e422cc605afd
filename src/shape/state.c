// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "shape/peers.h"
#include "shape/state.h"
#include "shape/words.h"
#include "util/err.h"
#include "util/ifname.h"
#include "util/log.h"
#include "util/safe.h"
#include "util/text.h"

#define SUFFIX ".state"
#define HOLD_SUFFIX ".hold" /* never SUFFIX's end: a hold is not an interface's state */
/*
 * Far more than a state file needs, and small enough to read whole: a
 * [peer KEY] group takes about 200 bytes, so 65,536 peers (a big server)
 * take about 13 MiB. A hold file is one line.
 */
#define STATE_MAX_BYTES (16 << 20)
#define HOLD_MAX_BYTES 256

char *state_dir_for_netns(const char *base)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) < 0 || stat("/proc/1/ns/net", &init) < 0 ||
	    (self.st_ino == init.st_ino && self.st_dev == init.st_dev))
		return g_strdup(base);
	return g_strdup_printf("%s/netns-%llu", base, (unsigned long long)self.st_ino);
}

void shape_state_clear(struct shape_state *st)
{
	if (!st)
		return;
	g_free(st->orig_options);
	if (st->peers)
		g_array_free(st->peers, true);
	memset(st, 0, sizeof(*st));
}

static char *state_path(const char *dir, const char *ifname)
{
	g_autofree char *file = g_strconcat(ifname, SUFFIX, NULL);

	return g_build_filename(dir, file, NULL);
}

static int gerror_to_errno(GError *err)
{
	if (err && err->domain == G_FILE_ERROR)
		switch (err->code) {
		case G_FILE_ERROR_NOENT:
			return -ENOENT;
		case G_FILE_ERROR_ACCES:
		case G_FILE_ERROR_PERM:
			return -EACCES;
		case G_FILE_ERROR_ROFS:
			return -EROFS;
		case G_FILE_ERROR_NOSPC:
			return -ENOSPC;
		default:
			break;
		}
	return -EIO;
}

/*
 * The tree's cake options, as the struct's bytes: the state lives in /run
 * and goes with a reboot, and a size that does not match (another build)
 * reads as none given.
 */
static void tree_opts_load(GKeyFile *kf, const char *group, struct cake_opts *o)
{
	g_autofree char *b64 = g_key_file_get_string(kf, group, "tree-options", NULL);
	g_autofree guchar *raw = NULL;
	gsize n = 0;

	memset(o, 0, sizeof(*o));
	if (b64)
		raw = g_base64_decode(b64, &n);
	if (raw && n == sizeof(*o))
		memcpy(o, raw, sizeof(*o));
}

static void tree_opts_save(GKeyFile *kf, const char *group, const struct cake_opts *o,
			   uint8_t leaf)
{
	g_autofree char *b64 = g_base64_encode((const guchar *)o, sizeof(*o));

	g_key_file_set_string(kf, group, "tree-options", b64);
	if (peer_leaf_name(leaf))
		g_key_file_set_string(kf, group, "leaf", peer_leaf_name(leaf));
}

/*
 * Is the state folder fit to take orders from (util/safe.h)? Whoever can
 * write it can plant a state file that tells clear what to delete. -ENOENT
 * when it does not exist yet; any other refusal logged.
 */
static int dir_safe(const char *dir)
{
	char err[ERR_SIZE];
	int r = safe_dirs(dir, NULL, err, sizeof(err));

	if (r < 0 && r != -ENOENT)
		log_err("state folder: %s", err);
	return r;
}

int state_file_read(const char *dir, const char *name, size_t max, GString **out)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	g_autofree char *shown = NULL;
	g_autoptr(GString) text = g_string_new(NULL);
	char err[ERR_SIZE] = "";
	struct stat st;
	int fd, r;

	r = dir_safe(dir);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	shown = text_escape(path);
	if (fd < 0 && errno == ELOOP) {
		log_err("state: %s: a symbolic link; refusing to take orders from it", shown);
		return -EPERM;
	}
	if (fd < 0) {
		r = -errno;
		log_err("state: %s: %s", shown, g_strerror(-r));
		return r;
	}
	r = fstat(fd, &st) < 0 ? -errno : safe_stat(&st, path, false, false, err,
							       sizeof(err));
	if (r == 0 && (uint64_t)st.st_size > max)
		r = -EFBIG;
	if (r == 0)
		r = safe_read(fd, text, max);
	close(fd);
	if (r < 0) {
		if (r == -EFBIG)
			log_err("state: %s: more than %zu bytes, more than wgshape writes; refusing "
				"it", shown, max);
		else
			log_err("state: %s", err[0] ? err : g_strerror(-r));
		return r;
	}
	*out = g_steal_pointer(&text);
	return 0;
}

char *state_get_string(GKeyFile *kf, const char *group, const char *key)
{
	g_autofree char *raw = NULL, *valid = NULL;
	char *v = g_key_file_get_string(kf, group, key, NULL);

	if (v)
		return v;
	raw = g_key_file_get_value(kf, group, key, NULL);
	if (!raw || g_utf8_validate(raw, -1, NULL))
		return NULL; /* none, or an escape GLib does not know: not ours */
	valid = g_utf8_make_valid(raw, -1);
	g_key_file_set_value(kf, group, key, valid);
	return g_key_file_get_string(kf, group, key, NULL);
}

#define PEER_GROUP "peer "

/* w's cake options from its words (w->options, set's): none without words. */
static int peer_opts(struct peer_want *w)
{
	g_auto(GStrv) words = NULL;
	struct shape_request req;
	char err[128];

	memset(&w->opts, 0, sizeof(w->opts));
	w->leaf = PEER_LEAF_UNSET;
	if (!w->options[0])
		return 0;
	words = g_strsplit_set(w->options, " ", -1);
	if (shape_words_parse((int)g_strv_length(words), words, &req, err, sizeof(err)) < 0)
		return -EBADMSG;
	w->opts = req.opts;
	w->leaf = req.leaf;
	return 0;
}

/* One [peer KEY] group: its class, rates, options (set's words), name and source. */
static int peer_load(GKeyFile *kf, const char *group, struct peer_want *w)
{
	g_autofree char *name = NULL, *options = NULL, *source = NULL, *activity = NULL;
	guint64 minor;

	memset(w, 0, sizeof(*w));
	if (wg_key_from_base64(group + strlen(PEER_GROUP), w->key) < 0)
		return -EBADMSG;
	minor = g_key_file_get_uint64(kf, group, "class", NULL);
	w->minor = minor <= TREE_PEER_MINOR_LAST ? (uint16_t)minor : 0;
	w->rate = g_key_file_get_uint64(kf, group, "rate", NULL);
	w->upload = g_key_file_get_uint64(kf, group, "upload", NULL);
	name = state_get_string(kf, group, "name");
	source = state_get_string(kf, group, "source");
	options = g_key_file_get_string(kf, group, "options", NULL);
	if ((!w->rate && !w->upload) || w->rate == PEER_RATE_KEEP || w->upload == PEER_RATE_KEEP)
		return -EBADMSG;
	text_copy(w->name, sizeof(w->name), name);
	text_copy(w->source, sizeof(w->source), source ? source : "set");
	g_strlcpy(w->options, options ? options : "", sizeof(w->options));
	activity = state_get_string(kf, group, "activity");
	w->activity = !activity ? PEER_UNJUDGED : !strcmp(activity, "active") ? PEER_ACTIVE
										 : PEER_IDLE;
	return peer_opts(w);
}

static int peers_load(GKeyFile *kf, struct shape_state *st)
{
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);

	for (size_t i = 0; groups[i]; i++) {
		struct peer_want w;

		if (!g_str_has_prefix(groups[i], PEER_GROUP))
			continue;
		if (peer_load(kf, groups[i], &w) < 0)
			return -EBADMSG;
		if (!st->peers)
			st->peers = g_array_new(false, true, sizeof(struct peer_want));
		g_array_append_val(st->peers, w);
	}
	return 0;
}

static void peer_save(GKeyFile *kf, const struct peer_want *w)
{
	char key[45];
	g_autofree char *group = NULL;

	wg_key_to_base64(w->key, key);
	group = g_strconcat(PEER_GROUP, key, NULL);
	g_key_file_set_uint64(kf, group, "class", w->minor);
	g_key_file_set_uint64(kf, group, "rate", w->rate);
	if (w->upload)
		g_key_file_set_uint64(kf, group, "upload", w->upload);
	if (w->name[0])
		g_key_file_set_string(kf, group, "name", w->name);
	g_key_file_set_string(kf, group, "source", w->source);
	if (w->options[0])
		g_key_file_set_string(kf, group, "options", w->options);
	if (w->activity != PEER_UNJUDGED)
		g_key_file_set_string(kf, group, "activity",
				      w->activity == PEER_ACTIVE ? "active" : "idle");
}

static void peers_save(GKeyFile *kf, const struct shape_state *st)
{
	for (guint i = 0; st->peers && i < st->peers->len; i++)
		peer_save(kf, &g_array_index(st->peers, struct peer_want, i));
}

void state_copy(const struct shape_state *from, struct shape_state *to)
{
	*to = *from;
	to->orig_options = from->orig_options_len ?
				   g_memdup2(from->orig_options, from->orig_options_len) : NULL;
	to->orig_options_len = to->orig_options ? from->orig_options_len : 0;
	to->peers = NULL;
	if (from->peers) {
		to->peers = g_array_sized_new(false, true, sizeof(struct peer_want),
					      from->peers->len);
		g_array_append_vals(to->peers, from->peers->data, from->peers->len);
	}
}

/*
 * What each state file last held, as this process read or wrote it: its
 * text and the state it stands for. When a load reads the text this process
 * wrote itself, it takes the state from here instead of parsing it again (at
 * 1,000 peers 0.1 ms instead of 3 on the build machine, bench/bench-state.c).
 * Another process's change is another text: parsed. The text is compared
 * whole, so nothing but the file's content decides. Only a process that
 * called state_cache_enable() keeps them: for a command that reads its state
 * once, the copy took about 60 ms of `set ... peer`'s 440 at 1,000 peers in
 * the lab VM (tests/vm/README.md). The daemon's rate requests go further:
 * the kept state is changed in place and written behind (state_borrow,
 * state_borrow_changed, state_flush_async below).
 */
/* Which file a path held when it was read or written: a rename over it is another inode. */
struct file_id {
	bool known;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

static void file_id_of(const char *path, struct file_id *id)
{
	struct stat s;

	memset(id, 0, sizeof(*id));
	if (stat(path, &s) < 0)
		return;
	*id = (struct file_id){ .known = true, .dev = s.st_dev, .ino = s.st_ino,
				.size = s.st_size, .mtime = s.st_mtim };
}

static bool file_id_same(const struct file_id *a, const struct file_id *b)
{
	return a->known && b->known && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

struct state_cached {
	GString *text; /* the file's text as last read or written */
	struct file_id id; /* and which file that was (state_borrow's check) */
	struct shape_state st;
	GHashTable *by_key; /* st's peers: key -> index + 1; built by state_borrow */
	guint64 serial; /* this entry's, of all ever kept: a flush's result finds its entry by it */
	guint64 gen; /* st's changes while dirty: a flush's result says which it wrote */
	bool flushing; /* state_flush_async is writing it */
	/* write-behind: st is newer than the file, which state_flush writes */
	bool dirty;
	char *dir, *ifname; /* where to, while dirty */
};

static GHashTable *cache; /* path -> struct state_cached */
static guint64 serial_last;
G_LOCK_DEFINE_STATIC(cache);
/* a process that reads its states again (the daemon) keeps them; a command does not */
static bool cache_on;

void state_cache_enable(void)
{
	cache_on = true;
}

static void cached_free(gpointer p)
{
	struct state_cached *c = p;

	g_string_free(c->text, true);
	shape_state_clear(&c->st);
	if (c->by_key)
		g_hash_table_destroy(c->by_key);
	g_free(c->dir);
	g_free(c->ifname);
	g_free(c);
}

/* write-behind (state_write_behind): who is told of the first change not yet written */
static void (*behind_kick)(void *arg);
static void *behind_arg;
static bool behind_kicked;

void state_write_behind(void (*kick)(void *arg), void *arg)
{
	behind_kick = kick;
	behind_arg = arg;
	behind_kicked = false;
}

static void cache_drop(const char *path)
{
	G_LOCK(cache);
	if (cache)
		g_hash_table_remove(cache, path);
	G_UNLOCK(cache);
}

static bool utf8_ok(const char *s)
{
	return g_utf8_validate(s, -1, NULL);
}

/*
 * st (a copy) made what state_parse gives back from what state_save wrote
 * of it: what a state leaves out of its file is not kept either, a peer's
 * cake options come from its words. -EBADMSG when the text would not read
 * back as st at all (not UTF-8, a peer twice or without a rate): not kept.
 */
static int as_parsed(struct shape_state *st)
{
	g_autoptr(GHashTable) keys = g_hash_table_new(wg_key_hash, wg_key_equal);

	if (!utf8_ok(st->overhead_reason) || !utf8_ok(st->source) || !utf8_ok(st->orig_kind))
		return -EBADMSG;
	if (!st->egress) {
		g_clear_pointer(&st->orig_options, g_free);
		st->orig_options_len = 0;
		st->orig_kind[0] = '\0';
		st->orig_handle = 0;
	}
	st->tree = st->egress && st->tree;
	st->in_tree = st->ingress && st->in_tree;
	if (!st->tree)
		st->cap = 0;
	if (!st->in_tree)
		st->in_cap = 0;
	if (!st->tree && !st->in_tree) {
		memset(&st->tree_opts, 0, sizeof(st->tree_opts));
		st->tree_leaf = PEER_LEAF_UNSET;
	}
	if (!peer_leaf_name(st->tree_leaf))
		st->tree_leaf = PEER_LEAF_UNSET;
	if (!st->ingress)
		st->ifb[0] = '\0';
	else if (!ifname_is_valid(st->ifb))
		return -EBADMSG;
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);

		if ((!w->rate && !w->upload) || !utf8_ok(w->name) || !utf8_ok(w->source) || !utf8_ok(w->options) ||
		    !g_hash_table_add(keys, w->key) || peer_opts(w) < 0)
			return -EBADMSG;
		if (w->minor > TREE_PEER_MINOR_LAST)
			w->minor = 0;
		if (w->activity > PEER_ACTIVE)
			w->activity = PEER_IDLE;
	}
	if (st->peers && !st->peers->len)
		g_clear_pointer(&st->peers, g_array_unref);
	return 0;
}

/* Keep text (taken) and a copy of st as path's (what it stands for, when that is known). */
static void cache_put(const char *path, GString *text, const struct file_id *id,
		      const struct shape_state *st)
{
	struct state_cached *c;

	if (!cache_on) {
		g_string_free(text, true);
		return;
	}
	c = g_new0(struct state_cached, 1);

	c->text = text;
	c->id = *id;
	c->serial = ++serial_last;
	state_copy(st, &c->st);
	if (as_parsed(&c->st) < 0) {
		cached_free(c);
		cache_drop(path);
		return;
	}
	G_LOCK(cache);
	if (!cache)
		cache = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, cached_free);
	g_hash_table_replace(cache, g_strdup(path), c);
	G_UNLOCK(cache);
}

/* c has changes its file has not (under the lock): true to kick, the first since the last flush. */
static bool mark_dirty(struct state_cached *c, const char *dir, const char *ifname)
{
	c->gen++;
	if (!c->dirty) {
		c->dirty = true;
		c->dir = g_strdup(dir);
		c->ifname = g_strdup(ifname);
	}
	if (behind_kicked)
		return false;
	behind_kicked = true;
	return true;
}

/* A copy of path's state into out when it has one not written yet. */
static bool cache_get_dirty(const char *path, struct shape_state *out)
{
	struct state_cached *c;
	bool hit = false;

	G_LOCK(cache);
	c = cache ? g_hash_table_lookup(cache, path) : NULL;
	if (c && c->dirty) {
		state_copy(&c->st, out);
		hit = true;
	}
	G_UNLOCK(cache);
	return hit;
}

/* A copy of path's state into out when text (of the file id) is what it last held. */
static bool cache_get(const char *path, const GString *text, const struct file_id *id,
		      struct shape_state *out)
{
	struct state_cached *c;
	bool hit = false;

	G_LOCK(cache);
	c = cache ? g_hash_table_lookup(cache, path) : NULL;
	if (c && c->text->len == text->len && !memcmp(c->text->str, text->str, text->len)) {
		state_copy(&c->st, out);
		c->id = *id;
		hit = true;
	}
	G_UNLOCK(cache);
	return hit;
}

int state_load(const char *dir, const char *ifname, struct shape_state *out)
{
	g_autoptr(GString) text = NULL;
	g_autofree char *file = NULL, *path = NULL;
	struct file_id id;
	int r;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	file = g_strconcat(ifname, SUFFIX, NULL);
	path = g_build_filename(dir, file, NULL);
	if (cache_get_dirty(path, out))
		return 0;
	/* before the read: a file renamed over it in between is then seen as changed */
	file_id_of(path, &id);
	r = state_file_read(dir, file, STATE_MAX_BYTES, &text);
	if (r < 0)
		return r;
	if (cache_get(path, text, &id, out))
		return 0;
	r = state_parse(text->str, text->len, out);
	if (r == 0)
		cache_put(path, g_steal_pointer(&text), &id, out);
	return r;
}

/* What clear puts back on egress: the [egress] group's original-*; -EBADMSG without a kind. */
static int orig_load(GKeyFile *kf, struct shape_state *st)
{
	g_autofree char *kind = g_key_file_get_string(kf, "egress", "original-kind", NULL);
	g_autofree char *options = NULL;
	gsize n = 0;

	if (!kind)
		return -EBADMSG;
	g_strlcpy(st->orig_kind, kind, sizeof(st->orig_kind));
	st->orig_handle = (uint32_t)g_key_file_get_uint64(kf, "egress", "original-handle", NULL);
	options = g_key_file_get_string(kf, "egress", "original-options", NULL);
	if (options && *options) {
		st->orig_options = g_base64_decode(options, &n);
		st->orig_options_len = n;
	}
	return 0;
}

int state_parse(const char *data, size_t len, struct shape_state *out)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *s = NULL;
	struct shape_state st = { 0 };

	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, NULL))
		return -EBADMSG;

	st.ifindex = g_key_file_get_integer(kf, "interface", "ifindex", NULL);
	st.overhead = g_key_file_get_integer(kf, "interface", "overhead", NULL);
	s = state_get_string(kf, "interface", "overhead-reason");
	text_copy(st.overhead_reason, sizeof(st.overhead_reason), s);
	g_clear_pointer(&s, g_free);
	s = state_get_string(kf, "interface", "source");
	text_copy(st.source, sizeof(st.source), s);
	g_clear_pointer(&s, g_free);

	st.egress = g_key_file_has_group(kf, "egress");
	if (st.egress && orig_load(kf, &st) < 0) {
		shape_state_clear(&st);
		return -EBADMSG;
	}

	st.tree = st.egress && g_key_file_get_boolean(kf, "egress", "per-peer", NULL);
	st.cap = st.tree ? g_key_file_get_uint64(kf, "egress", "cap", NULL) : 0;
	if (peers_load(kf, &st) < 0) {
		shape_state_clear(&st);
		return -EBADMSG;
	}

	st.ingress = g_key_file_has_group(kf, "ingress");
	if (st.ingress) {
		s = g_key_file_get_string(kf, "ingress", "ifb", NULL);
		if (!s || !ifname_is_valid(s)) {
			shape_state_clear(&st);
			return -EBADMSG;
		}
		g_strlcpy(st.ifb, s, sizeof(st.ifb));
		g_clear_pointer(&s, g_free);
		st.in_tree = g_key_file_get_boolean(kf, "ingress", "per-peer", NULL);
		st.in_cap = st.in_tree ? g_key_file_get_uint64(kf, "ingress", "cap", NULL) : 0;
	}
	/* both trees' options: with the egress tree, else with the ingress one */
	if (st.tree || st.in_tree) {
		const char *group = st.tree ? "egress" : "ingress";

		tree_opts_load(kf, group, &st.tree_opts);
		s = g_key_file_get_string(kf, group, "leaf", NULL);
		st.tree_leaf = s ? (uint8_t)peer_leaf_of(s) : PEER_LEAF_UNSET;
		g_clear_pointer(&s, g_free);
	}
	*out = st;
	return 0;
}

/* st as a state file's text (what state_parse reads); g_free() it. */
static char *state_text(const struct shape_state *st, gsize *len)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();

	g_key_file_set_integer(kf, "interface", "ifindex", st->ifindex);
	g_key_file_set_integer(kf, "interface", "overhead", st->overhead);
	if (st->overhead_reason[0])
		g_key_file_set_string(kf, "interface", "overhead-reason", st->overhead_reason);
	if (st->source[0])
		g_key_file_set_string(kf, "interface", "source", st->source);
	if (st->egress) {
		g_autofree char *b64 = NULL;

		g_key_file_set_string(kf, "egress", "original-kind", st->orig_kind);
		g_key_file_set_uint64(kf, "egress", "original-handle", st->orig_handle);
		if (st->orig_options_len)
			b64 = g_base64_encode(st->orig_options, st->orig_options_len);
		g_key_file_set_string(kf, "egress", "original-options", b64 ? b64 : "");
	}
	if (st->egress && st->tree) {
		g_key_file_set_boolean(kf, "egress", "per-peer", true);
		g_key_file_set_uint64(kf, "egress", "cap", st->cap);
		tree_opts_save(kf, "egress", &st->tree_opts, st->tree_leaf);
	}
	if (st->ingress)
		g_key_file_set_string(kf, "ingress", "ifb", st->ifb);
	if (st->ingress && st->in_tree) {
		g_key_file_set_boolean(kf, "ingress", "per-peer", true);
		g_key_file_set_uint64(kf, "ingress", "cap", st->in_cap);
		if (!(st->egress && st->tree))
			tree_opts_save(kf, "ingress", &st->tree_opts, st->tree_leaf);
	}
	peers_save(kf, st);
	return g_key_file_to_data(kf, len, NULL);
}

/*
 * The flush's texts, made from parts kept between flushes. A rate request
 * changes one peer: its [peer KEY] group is all that needs GKeyFile again
 * (the whole text of 1,000 peers took 60-95 ms of a lab VM's core, once a
 * second, beside the requests). A peer's part is its group as
 * g_key_file_to_data writes one alone; the whole is the other groups' text,
 * then each part after an empty line, as g_key_file_to_data joins groups
 * (tests/test-state.c compares the two on every kind of state).
 */
struct peer_part {
	struct peer_want w; /* what the text was made from (the fields it shows) */
	char *text;
	gsize len;
};

static GHashTable *parts; /* state path -> GHashTable (peer key -> struct peer_part) */
G_LOCK_DEFINE_STATIC(parts);

static void part_free(gpointer p)
{
	struct peer_part *part = p;

	g_free(part->text);
	g_free(part);
}

/* Does part's text show w as it is now? */
static bool part_same(const struct peer_part *part, const struct peer_want *w)
{
	return part->w.minor == w->minor && part->w.rate == w->rate && part->w.upload == w->upload &&
	       part->w.activity == w->activity && !strcmp(part->w.name, w->name) &&
	       !strcmp(part->w.source, w->source) && !strcmp(part->w.options, w->options);
}

/* st's groups but its peers' (the text before the first [peer]), with room for extra more. */
static GString *head_text(const struct shape_state *st, gsize extra)
{
	struct shape_state head = *st;
	g_autofree char *top = NULL;
	GString *out;
	gsize len;

	head.peers = NULL;
	top = state_text(&head, &len);
	out = g_string_sized_new(len + extra);
	g_string_append_len(out, top, (gssize)len);
	return out;
}

/* w's [peer KEY] group, as g_key_file_to_data writes it alone. */
static char *peer_text(const struct peer_want *w, gsize *len)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();

	peer_save(kf, w);
	return g_key_file_to_data(kf, len, NULL);
}

static char *state_text_parts(const char *path, const struct shape_state *st, gsize *len)
{
	GString *out = head_text(st, st->peers ? st->peers->len * 160 : 0);
	GHashTable *old, *now;

	now = g_hash_table_new_full(wg_key_hash, wg_key_equal, NULL, part_free);
	G_LOCK(parts);
	if (!parts)
		parts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					      (GDestroyNotify)g_hash_table_unref);
	old = g_hash_table_lookup(parts, path);
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);
		struct peer_part *part = NULL;

		if (g_hash_table_contains(now, w->key))
			continue; /* a key twice: not a state that loads back, never kept */
		if (old && g_hash_table_steal_extended(old, w->key, NULL, (gpointer *)&part) &&
		    !part_same(part, w))
			g_clear_pointer(&part, part_free);
		if (!part) {
			part = g_new0(struct peer_part, 1);
			part->w = *w;
			part->text = peer_text(w, &part->len);
		}
		g_hash_table_insert(now, part->w.key, part);
		g_string_append_c(out, '\n');
		g_string_append_len(out, part->text, (gssize)part->len);
	}
	g_hash_table_replace(parts, g_strdup(path), now);
	G_UNLOCK(parts);
	*len = out->len;
	return g_string_free(out, false);
}

static int save_now(const char *dir, const char *ifname, const struct shape_state *st)
{
	g_autofree char *file = g_strconcat(ifname, SUFFIX, NULL);
	g_autofree char *path = g_build_filename(dir, file, NULL);
	g_autofree char *data = NULL;
	struct file_id id;
	gsize len;
	int r;

	data = state_text(st, &len);
	r = state_file_write(dir, file, data, len);
	if (r == 0) {
		file_id_of(path, &id);
		cache_put(path, g_string_new_len(data, (gssize)len), &id, st);
	} else {
		cache_drop(path);
	}
	return r;
}

void state_one_clear(struct state_one *one)
{
	if (one->text)
		g_string_free(one->text, true);
	memset(one, 0, sizeof(*one));
}

/* Where a line that begins with what (from pos on) starts in text; text->len if none. */
static gsize line_find(const GString *text, gsize pos, const char *what)
{
	gsize n = strlen(what);

	for (; pos + n <= text->len; pos++) {
		const char *at = memmem(text->str + pos, text->len - pos, what, n);

		if (!at)
			break;
		pos = (gsize)(at - text->str);
		if (pos == 0 || text->str[pos - 1] == '\n')
			return pos;
	}
	return text->len;
}

int state_load_one(const char *dir, const char *ifname, const uint8_t *key,
		   struct shape_state *st, struct state_one *one)
{
	g_autofree char *file = NULL, *head = NULL, *partial = NULL;
	char b64[45];
	gsize next;
	int r;

	memset(one, 0, sizeof(*one));
	memset(st, 0, sizeof(*st));
	if (!ifname_is_valid(ifname))
		return -EINVAL;
	file = g_strconcat(ifname, SUFFIX, NULL);
	r = state_file_read(dir, file, STATE_MAX_BYTES, &one->text);
	if (r < 0)
		return r;
	wg_key_to_base64(key, b64);
	head = g_strconcat("[" PEER_GROUP, b64, "]\n", NULL);
	one->first = line_find(one->text, 0, "[" PEER_GROUP);
	one->start = line_find(one->text, one->first, head);
	/* none, or twice (GKeyFile would merge the two): the whole way */
	if (one->start == one->text->len ||
	    line_find(one->text, one->start + 1, head) != one->text->len) {
		state_one_clear(one);
		return -ENOENT;
	}
	/* the group ends where the next one begins, less the empty line between */
	next = line_find(one->text, one->start + 1, "[");
	one->end = next < one->text->len ? next - 1 : next;
	partial = g_strdup_printf("%.*s%.*s", (int)one->first, one->text->str,
				  (int)(one->end - one->start), one->text->str + one->start);
	r = state_parse(partial, strlen(partial), st);
	if (r == 0 && (!st->peers || st->peers->len != 1 ||
		       memcmp(g_array_index(st->peers, struct peer_want, 0).key, key, WG_KEY_LEN))) {
		shape_state_clear(st);
		r = -EBADMSG;
	}
	if (r < 0)
		state_one_clear(one);
	return r;
}

int state_save_one(const char *dir, const char *ifname, const struct shape_state *st,
		   const struct state_one *one)
{
	g_autofree char *file = NULL, *group = NULL;
	GString *out;
	gsize group_len;
	int r;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	if (!st->peers || st->peers->len != 1 || !one->text)
		return -EINVAL;
	group = peer_text(&g_array_index(st->peers, struct peer_want, 0), &group_len);
	out = head_text(st, one->text->len + group_len);
	/* as g_key_file_to_data joins groups: each after an empty line */
	g_string_append_c(out, '\n');
	g_string_append_len(out, one->text->str + one->first, (gssize)(one->start - one->first));
	g_string_append_len(out, group, (gssize)group_len);
	g_string_append_len(out, one->text->str + one->end, (gssize)(one->text->len - one->end));
	file = g_strconcat(ifname, SUFFIX, NULL);
	r = state_file_write(dir, file, out->str, out->len);
	g_string_free(out, true);
	return r;
}

int state_save(const char *dir, const char *ifname, const struct shape_state *st)
{
	if (!ifname_is_valid(ifname))
		return -EINVAL;
	return save_now(dir, ifname, st);
}

/* ifname's kept entry, when write-behind is on and its file is the one it was. */
static struct state_cached *kept_entry(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;
	struct state_cached *c;
	struct file_id now;

	if (!behind_kick || !ifname_is_valid(ifname))
		return NULL;
	path = state_path(dir, ifname);
	G_LOCK(cache);
	c = cache ? g_hash_table_lookup(cache, path) : NULL;
	G_UNLOCK(cache);
	if (!c)
		return NULL;
	/* kept and clean: the file must be the one it was (no other process's since) */
	if (!c->dirty) {
		file_id_of(path, &now);
		if (!file_id_same(&now, &c->id))
			return NULL;
	}
	return c;
}

const struct shape_state *state_peek(const char *dir, const char *ifname)
{
	struct state_cached *c = kept_entry(dir, ifname);

	return c ? &c->st : NULL;
}

struct shape_state *state_borrow(const char *dir, const char *ifname, const uint8_t *key,
				 struct peer_want **peer)
{
	struct state_cached *c;
	gpointer at;

	*peer = NULL;
	c = kept_entry(dir, ifname);
	if (!c)
		return NULL;
	if (!c->by_key) {
		c->by_key = g_hash_table_new(wg_key_hash, wg_key_equal);
		for (guint i = 0; c->st.peers && i < c->st.peers->len; i++)
			g_hash_table_insert(c->by_key, g_array_index(c->st.peers, struct peer_want, i).key,
					    GUINT_TO_POINTER(i + 1));
	}
	at = g_hash_table_lookup(c->by_key, key);
	if (at)
		*peer = &g_array_index(c->st.peers, struct peer_want, GPOINTER_TO_UINT(at) - 1);
	return &c->st;
}

void state_borrow_changed(const char *dir, const char *ifname)
{
	g_autofree char *path = state_path(dir, ifname);
	struct state_cached *c;
	bool kick = false;

	G_LOCK(cache);
	c = cache ? g_hash_table_lookup(cache, path) : NULL;
	if (c)
		kick = mark_dirty(c, dir, ifname);
	G_UNLOCK(cache);
	if (kick)
		behind_kick(behind_arg);
}

/*
 * A flush: copies of the dirty states (jobs), their texts made (in a thread
 * for state_flush_async), then each written over its file if its entry is
 * still the one it was copied from.
 */
enum flush_outcome {
	FLUSH_SKIPPED, /* the entry was written whole or removed since it was copied */
	FLUSH_WRITTEN,
	FLUSH_CHANGED, /* another process changed or removed the file: left as it is */
	FLUSH_FAILED, /* the write failed (r) */
};

struct flush_job {
	char *path;
	guint64 serial, gen;
	struct shape_state st;
	char *data;
	gsize len;
	/* batch_files: what became of it */
	enum flush_outcome outcome;
	int r;
	struct file_id id; /* the file written */
};

struct flush_batch {
	GPtrArray *jobs; /* struct flush_job */
	GThread *thread;
	void (*done)(GPtrArray *lost, void *arg);
	void *arg;
};

static struct flush_batch *flush_running;

static void job_free(gpointer p)
{
	struct flush_job *j = p;

	g_free(j->path);
	shape_state_clear(&j->st);
	g_free(j->data);
	g_free(j);
}

static void batch_free(struct flush_batch *b)
{
	g_ptr_array_unref(b->jobs);
	g_free(b);
}

/* The dirty states, copied, and marked as being written; NULL when there are none. */
static struct flush_batch *batch_new(void)
{
	struct flush_batch *b = g_new0(struct flush_batch, 1);
	GHashTableIter it;
	gpointer key, val;

	b->jobs = g_ptr_array_new_with_free_func(job_free);
	G_LOCK(cache);
	behind_kicked = false;
	if (cache) {
		g_hash_table_iter_init(&it, cache);
		while (g_hash_table_iter_next(&it, &key, &val)) {
			struct state_cached *c = val;
			struct flush_job *j;

			if (!c->dirty)
				continue;
			j = g_new0(struct flush_job, 1);
			j->path = g_strdup(key);
			j->serial = c->serial;
			j->gen = c->gen;
			state_copy(&c->st, &j->st);
			c->flushing = true;
			g_ptr_array_add(b->jobs, j);
		}
	}
	G_UNLOCK(cache);
	if (b->jobs->len)
		return b;
	batch_free(b);
	return NULL;
}

/* The texts: all that may run in a thread (a GKeyFile each, nothing shared). */
static gpointer batch_texts(gpointer data)
{
	struct flush_batch *b = data;

	for (guint i = 0; i < b->jobs->len; i++) {
		struct flush_job *j = b->jobs->pdata[i];

		j->data = state_text_parts(j->path, &j->st, &j->len);
	}
	return NULL;
}

/*
 * Each text over its file (in the thread for state_flush_async), when the
 * file is still the one the entry last read or wrote (by its id: a rename
 * over it is another inode). Under state_lock, as every whole write of a
 * state is, so that no other write comes between the look and the write;
 * the cache's lock is not held meanwhile (the loop's requests go on).
 */
static void batch_files(struct flush_batch *b)
{
	for (guint i = 0; i < b->jobs->len; i++) {
		struct flush_job *j = b->jobs->pdata[i];
		g_autofree char *dir = NULL, *ifname = NULL, *file = NULL;
		struct state_cached *c;
		struct file_id was, now;
		int lock;

		G_LOCK(cache);
		c = cache ? g_hash_table_lookup(cache, j->path) : NULL;
		if (c && c->serial == j->serial && c->flushing) {
			dir = g_strdup(c->dir);
			ifname = g_strdup(c->ifname);
			was = c->id;
		}
		G_UNLOCK(cache);
		if (!dir) {
			j->outcome = FLUSH_SKIPPED;
			continue;
		}
		file = g_strconcat(ifname, SUFFIX, NULL);
		lock = state_lock(dir, ifname);
		file_id_of(j->path, &now);
		if (!file_id_same(&now, &was)) {
			j->outcome = FLUSH_CHANGED;
		} else {
			j->r = state_file_write(dir, file, j->data, j->len);
			j->outcome = j->r < 0 ? FLUSH_FAILED : FLUSH_WRITTEN;
			file_id_of(j->path, &j->id);
		}
		state_unlock(lock);
		if (j->outcome == FLUSH_FAILED)
			log_err("%s: write state %s: %s", ifname, j->path, strerror(-j->r));
	}
}

/*
 * What the files say, into the cache: a state another process changed or
 * removed meanwhile (or that could not be written) goes into lost and is
 * no longer kept. *again: a state is dirty still (changed while it was
 * written). 0, or the first write's -errno.
 */
static int batch_finish(struct flush_batch *b, GPtrArray *lost, bool *again)
{
	GHashTableIter it;
	gpointer val;
	int failed = 0;

	*again = false;
	G_LOCK(cache);
	for (guint i = 0; i < b->jobs->len; i++) {
		struct flush_job *j = b->jobs->pdata[i];
		struct state_cached *c = cache ? g_hash_table_lookup(cache, j->path) : NULL;

		/* written whole or removed since: nothing of this job's holds */
		if (!c || c->serial != j->serial || !c->flushing)
			continue;
		c->flushing = false;
		if (j->outcome == FLUSH_WRITTEN) {
			g_string_free(c->text, true);
			c->text = g_string_new_len(j->data, (gssize)j->len);
			c->id = j->id;
			if (c->gen != j->gen)
				continue; /* changed again since: still dirty */
			c->dirty = false;
			g_clear_pointer(&c->dir, g_free);
			g_clear_pointer(&c->ifname, g_free);
			continue;
		}
		if (lost)
			g_ptr_array_add(lost, g_strdup(c->ifname));
		if (j->outcome == FLUSH_FAILED)
			failed = failed ? failed : j->r;
		g_hash_table_remove(cache, j->path);
	}
	if (cache) {
		g_hash_table_iter_init(&it, cache);
		while (!*again && g_hash_table_iter_next(&it, NULL, &val))
			*again = ((struct state_cached *)val)->dirty;
	}
	if (*again)
		behind_kicked = true;
	G_UNLOCK(cache);
	return failed;
}

int state_flush(GPtrArray *lost)
{
	struct flush_batch *b = batch_new();
	bool again;
	int r;

	if (!b)
		return 0;
	batch_texts(b);
	batch_files(b);
	r = batch_finish(b, lost, &again);
	batch_free(b);
	return r;
}

/* Back in the loop after the thread: what the files say into the cache, then the caller's done. */
static gboolean flush_finished(gpointer data)
{
	struct flush_batch *b = data;
	g_autoptr(GPtrArray) lost = g_ptr_array_new_with_free_func(g_free);
	bool again;

	g_thread_join(b->thread);
	batch_finish(b, lost, &again);
	flush_running = NULL;
	if (b->done)
		b->done(lost, b->arg);
	/* changed while it was written, or dirty since and left for this one: once more */
	if (again && behind_kick)
		behind_kick(behind_arg);
	batch_free(b);
	return G_SOURCE_REMOVE;
}

static gpointer flush_thread(gpointer data)
{
	/* background work: the loop's requests first when the CPUs are busy (nice 10, this thread) */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	batch_texts(data);
	batch_files(data);
	g_idle_add(flush_finished, data);
	return NULL;
}

bool state_flush_async(void (*done)(GPtrArray *lost, void *arg), void *arg)
{
	struct flush_batch *b;

	if (flush_running)
		return true; /* its end kicks again for what changed meanwhile */
	b = batch_new();
	if (!b)
		return false;
	b->done = done;
	b->arg = arg;
	flush_running = b;
	b->thread = g_thread_new("wgshape-state", flush_thread, b);
	return true;
}

bool state_flush_busy(void)
{
	return flush_running != NULL;
}

int state_file_write(const char *dir, const char *name, const char *data, size_t len)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *path = NULL;
	int r;

	if (g_mkdir_with_parents(dir, 0755) < 0)
		return -errno;
	r = dir_safe(dir);
	if (r < 0)
		return r;
	path = g_build_filename(dir, name, NULL);
	/* Writes a temporary file and renames it over the old one. */
	if (!g_file_set_contents_full(path, data, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT,
				      0644, &err))
		return gerror_to_errno(err);
	return 0;
}

int state_file_remove(const char *dir, const char *name)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);
	int r = dir_safe(dir);

	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (g_unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int state_remove(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	path = state_path(dir, ifname);
	cache_drop(path);
	G_LOCK(parts);
	if (parts)
		g_hash_table_remove(parts, path);
	G_UNLOCK(parts);
	if (g_unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int state_lock(const char *dir, const char *ifname)
{
	int fd;

	if (g_mkdir_with_parents(dir, 0755) < 0 || dir_safe(dir) < 0)
		return -1;
	/* the folder itself: no lock file to leave behind */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		log_warn("%s: lock %s: %s (going on without it)", ifname, dir, strerror(errno));
		return -1;
	}
	/* held for one change at a time (a set, a clear): a process that dies lets go */
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		log_warn("%s: lock %s: %s (going on without it)", ifname, dir, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void state_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* and with it the lock */
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_list(const char *dir, char ***names)
{
	g_autoptr(GPtrArray) arr = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GDir) d = NULL;
	const char *name;
	int r = dir_safe(dir);

	if (r == 0)
		d = g_dir_open(dir, 0, NULL);
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *ifname = NULL;

		if (!g_str_has_suffix(name, SUFFIX))
			continue;
		ifname = g_strndup(name, strlen(name) - strlen(SUFFIX));
		if (ifname_is_valid(ifname))
			g_ptr_array_add(arr, g_steal_pointer(&ifname));
	}
	g_ptr_array_sort(arr, cmp_str);
	g_ptr_array_add(arr, NULL);
	*names = (char **)g_ptr_array_free(g_steal_pointer(&arr), FALSE);
	return r == -ENOENT ? 0 : r;
}

/* ---- holds ----------------------------------------------------------------- */

static char *hold_path(const char *dir, const char *ifname)
{
	g_autofree char *file = g_strconcat(ifname, HOLD_SUFFIX, NULL);

	return g_build_filename(dir, file, NULL);
}

/* The command name of pid (/proc/PID/comm), or NULL when it is gone. */
static char *proc_comm(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int)pid);
	char *comm = NULL;

	if (!g_file_get_contents(path, &comm, NULL, NULL))
		return NULL;
	g_strchomp(comm);
	return comm;
}

/*
 * Whether two command names are the same program: wgshape runs tune in
 * wgshape-measure (src/main.c), which the daemon, a wgshape, must know.
 */
static bool same_program(const char *a, const char *b)
{
	static const char *const ours[] = { "wgshape", "wgshape-measure" };
	bool a_ours = false, b_ours = false;

	if (!strcmp(a, b))
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(ours); i++) {
		a_ours |= !strcmp(a, ours[i]);
		b_ours |= !strcmp(b, ours[i]);
	}
	return a_ours && b_ours;
}

/*
 * When pid started (field 22 of /proc/PID/stat, in clock ticks since boot),
 * or 0 when it is gone: with the PID, it names one process for good, where
 * a PID alone may be used again by any other.
 */
static uint64_t proc_start(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
	g_autofree char *data = NULL;
	g_auto(GStrv) f = NULL;
	const char *after;
	char *end;
	uint64_t t;

	if (!g_file_get_contents(path, &data, NULL, NULL))
		return 0;
	after = strrchr(data, ')'); /* the name, field 2, may hold spaces and ')' */
	if (!after)
		return 0;
	f = g_strsplit(after + 1, " ", 22);
	/* f[0] is "" (the space after ')'), f[1] field 3, ... f[20] field 22 */
	if (g_strv_length(f) < 21)
		return 0;
	errno = 0;
	t = g_ascii_strtoull(f[20], &end, 10);
	return errno || end == f[20] ? 0 : t;
}

/* A hold file's one line: "PID START tune IFNAME". */
static char *hold_line(pid_t pid, const char *ifname)
{
	return g_strdup_printf("%d %" G_GUINT64_FORMAT " tune %s\n", (int)pid,
			       proc_start(pid), ifname);
}

int hold_parse(const char *text, const char *ifname, pid_t *pid, uint64_t *start)
{
	g_autofree char *line = g_strchomp(g_strdup(text));
	g_auto(GStrv) f = g_strsplit(line, " ", 0);
	char *end;
	long p;

	if (g_strv_length(f) != 4 || strcmp(f[2], "tune") != 0 || strcmp(f[3], ifname) != 0)
		return -EBADMSG;
	errno = 0;
	p = strtol(f[0], &end, 10);
	if (errno || end == f[0] || *end || p <= 0 || p > INT32_MAX)
		return -EBADMSG;
	*start = g_ascii_strtoull(f[1], &end, 10);
	if (errno || end == f[1] || *end || !*start || f[1][0] == '-')
		return -EBADMSG;
	*pid = (pid_t)p;
	return 0;
}

/*
 * The PID in the hold file of ifname, if that process still lives and is
 * the one that wrote it: a wgshape that started when the file says, and
 * wrote it as a tune of this interface (a serve, or the PID used again by
 * another program, is no hold).
 */
static pid_t live_holder(const char *dir, const char *ifname)
{
	g_autofree char *file = g_strconcat(ifname, HOLD_SUFFIX, NULL);
	g_autoptr(GString) text = NULL;
	g_autofree char *theirs = NULL, *ours = NULL;
	uint64_t start;
	pid_t pid;

	if (state_file_read(dir, file, HOLD_MAX_BYTES, &text) < 0 ||
	    hold_parse(text->str, ifname, &pid, &start) < 0)
		return 0;
	if (proc_start((pid_t)pid) != start)
		return 0; /* gone, or its PID used again */
	theirs = proc_comm((pid_t)pid);
	ours = proc_comm(getpid());
	if (!theirs || !ours || !same_program(theirs, ours))
		return 0;
	return (pid_t)pid;
}

pid_t state_holder(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;

	if (!ifname_is_valid(ifname))
		return 0;
	/*
	 * No file, no hold: one lstat, not the folder's checks (a stat and a
	 * readlink for each parent), which the daemon's rate requests would
	 * pay on every request. A file there is read the careful way.
	 */
	path = hold_path(dir, ifname);
	if (g_lstat(path, &(struct stat){ 0 }) < 0 && errno == ENOENT)
		return 0;
	return live_holder(dir, ifname);
}

int state_hold(const char *dir, const char *ifname, pid_t *holder)
{
	g_autofree char *path = NULL, *tmp = NULL, *line = NULL;
	pid_t h;
	int fd, r = 0;

	*holder = 0;
	if (!ifname_is_valid(ifname))
		return -EINVAL;
	if (g_mkdir_with_parents(dir, 0755) < 0)
		return -errno;
	r = dir_safe(dir);
	if (r < 0)
		return r;
	path = hold_path(dir, ifname);
	tmp = g_strconcat(path, ".XXXXXX", NULL);
	fd = g_mkstemp_full(tmp, O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	line = hold_line(getpid(), ifname);
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		r = errno ? -errno : -EIO;
	close(fd);
	/* link() makes the hold only where there is none: two tunes cannot both win. */
	if (r == 0 && link(tmp, path) < 0) {
		if (errno != EEXIST) {
			r = -errno;
		} else if ((h = live_holder(dir, ifname)) > 0 && h != getpid()) {
			*holder = h;
			r = -EBUSY;
		} else if (rename(tmp, path) < 0) {
			r = -errno; /* a stale hold, left by a process that is gone: ours now */
		} else if ((h = live_holder(dir, ifname)) != getpid()) {
			*holder = h; /* another tune replaced the same stale hold first */
			r = -EBUSY;
		}
	}
	g_unlink(tmp);
	return r;
}

void state_release(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;

	if (!ifname_is_valid(ifname))
		return;
	path = hold_path(dir, ifname);
	if (live_holder(dir, ifname) == getpid())
		g_unlink(path);
}
