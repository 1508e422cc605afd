// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <glib.h>

#include "channel/lease.h"
#include "shape/peers.h"
#include "shape/state.h"
#include "util/ifname.h"
#include "util/log.h"
#include "util/text.h"

/*
 * The longest lease line: 44 + 1 + 20 + 1 + 19 characters. A longer one is
 * not a lease, and is not copied to look at.
 */
#define LINE_MAX_LEN 96
/* LEASE_MAX lines of at most LINE_MAX_LEN and a newline: more is none of ours */
#define LEASE_MAX_BYTES ((size_t)LEASE_MAX * (LINE_MAX_LEN + 1))

int64_t lease_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec;
}

/* Decimal digits only (no sign, no space: strtoull would take both), at most max. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (d > 9 || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* One line, NUL-free and without its newline: a lease, or false. */
static bool parse_line(char *line, struct rate_lease *l)
{
	char *f[4], *save = NULL;
	uint64_t rate, until;
	size_t n = 0;

	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (n == G_N_ELEMENTS(f))
			return false;
		f[n++] = t;
	}
	if (n != 3 || wg_key_from_base64(f[0], l->key) < 0)
		return false;
	/* rate 0 is no lease (lease_put's way of taking one out), nor is a time before boot */
	if (!parse_u64(f[1], UINT64_MAX, &rate) || !rate ||
	    !parse_u64(f[2], INT64_MAX, &until) || !until)
		return false;
	l->rate = rate;
	l->until = (int64_t)until;
	return true;
}

static guint key_hash(gconstpointer k)
{
	const uint8_t *p = k;
	guint h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < WG_KEY_LEN; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, WG_KEY_LEN) == 0;
}

int lease_parse(const char *text, size_t len, GArray *out)
{
	/* key (in a lease of out) -> its index + 1, for the last to win */
	g_autoptr(GHashTable) seen = g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
	const char *p = text, *end = text + len;
	guint first = out->len;
	size_t skipped = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char line[LINE_MAX_LEN + 1];
		struct rate_lease l;
		gpointer at;

		if (n > LINE_MAX_LEN || memchr(p, '\0', n)) {
			skipped++;
			goto next;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		if (!line[strspn(line, " \t\r")])
			goto next; /* a blank line: nothing to skip */
		if (!parse_line(line, &l)) {
			skipped++;
			goto next;
		}
		at = g_hash_table_lookup(seen, l.key);
		if (at) {
			g_array_index(out, struct rate_lease, GPOINTER_TO_UINT(at) - 1) = l;
		} else if (out->len - first < LEASE_MAX) {
			g_array_append_val(out, l);
			g_hash_table_insert(seen, g_memdup2(l.key, WG_KEY_LEN),
					    GUINT_TO_POINTER(out->len));
		} else {
			skipped++;
		}
next:
		p = nl ? nl + 1 : end;
	}
	return skipped > INT_MAX ? INT_MAX : (int)skipped;
}

static char *lease_file(const char *ifname)
{
	return g_strconcat(ifname, LEASE_SUFFIX, NULL);
}

/*
 * Write-behind (lease_write_behind, the daemon): each interface's leases as
 * last read or written, with that file's text (NULL: no file), so that a
 * request changes them in memory and the file is written at the next
 * lease_flush; a load reads the file and takes the kept leases when its text
 * is theirs (another process's change is another text: parsed).
 */
struct kept {
	GString *text; /* the file's, as last read or written; NULL: there was none */
	GArray *leases; /* struct rate_lease */
	bool dirty; /* leases are newer than the file */
	char *dir, *ifname;
};

static GHashTable *kept; /* path -> struct kept, while write-behind is on */
static void (*behind_kick)(void *arg);
static void *behind_arg;
static bool behind_kicked;

static void kept_free(gpointer p)
{
	struct kept *k = p;

	if (k->text)
		g_string_free(k->text, true);
	g_array_unref(k->leases);
	g_free(k->dir);
	g_free(k->ifname);
	g_free(k);
}

void lease_write_behind(void (*kick)(void *arg), void *arg)
{
	behind_kick = kick;
	behind_arg = arg;
	behind_kicked = false;
	if (!kick)
		g_clear_pointer(&kept, g_hash_table_unref);
	else if (!kept)
		kept = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kept_free);
}

static bool same_text(const GString *a, const GString *b)
{
	if (!a || !b)
		return !a && !b;
	return a->len == b->len && !memcmp(a->str, b->str, a->len);
}

/* Keep text (taken; NULL: no file) and a copy of leases from first as ifname's. */
static struct kept *keep(const char *dir, const char *ifname, const char *path, GString *text,
			 const GArray *leases, guint first)
{
	struct kept *k = g_new0(struct kept, 1);

	k->text = text;
	k->leases = g_array_new(false, true, sizeof(struct rate_lease));
	if (leases->len > first)
		g_array_append_vals(k->leases, &g_array_index(leases, struct rate_lease, first),
				    leases->len - first);
	k->dir = g_strdup(dir);
	k->ifname = g_strdup(ifname);
	g_hash_table_replace(kept, g_strdup(path), k);
	return k;
}

int lease_load(const char *dir, const char *ifname, GArray *out)
{
	g_autoptr(GString) text = NULL;
	g_autofree char *file = NULL, *path = NULL;
	struct kept *k;
	guint first = out->len;
	int r, skipped;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	file = lease_file(ifname);
	path = g_build_filename(dir, file, NULL);
	k = kept ? g_hash_table_lookup(kept, path) : NULL;
	if (k && k->dirty) {
		g_array_append_vals(out, k->leases->data, k->leases->len);
		return 0;
	}
	/* the state files' care: safe folders, a regular file of ours, no link, a size cap */
	r = state_file_read(dir, file, LEASE_MAX_BYTES, &text);
	if (r < 0 && r != -ENOENT)
		return r;
	if (k && same_text(k->text, text)) {
		g_array_append_vals(out, k->leases->data, k->leases->len);
		return 0;
	}
	if (text) {
		skipped = lease_parse(text->str, text->len, out);
		if (skipped)
			log_warn("leases: %s: skipped %d lines that are not a lease",
				 TEXT_QUOTE(path), skipped);
	}
	if (kept)
		keep(dir, ifname, path, g_steal_pointer(&text), out, first);
	return 0;
}

/* Those of leases that the file keeps at now (live, with a rate): what a load reads back. */
static void live_only(GArray *leases, int64_t now)
{
	for (guint i = leases->len; i-- > 0;) {
		const struct rate_lease *l = &g_array_index(leases, struct rate_lease, i);

		if (!rate_lease_live(l, now) || !l->rate)
			g_array_remove_index(leases, i);
	}
}

/* The file's text for leases (those live at now); NULL when there are none. */
static GString *leases_text(const struct rate_lease *leases, size_t n, int64_t now)
{
	GString *text = g_string_new(NULL);

	for (size_t i = 0; i < n; i++) {
		char key[45];

		/* a rate 0 would read back as no lease: it is none here either */
		if (!rate_lease_live(&leases[i], now) || !leases[i].rate)
			continue;
		wg_key_to_base64(leases[i].key, key);
		g_string_append_printf(text, "%s %" PRIu64 " %" PRId64 "\n", key, leases[i].rate,
				       leases[i].until);
	}
	if (!text->len) {
		g_string_free(text, true);
		return NULL;
	}
	return text;
}

/* text (NULL: none live, so no file: a reader finds nothing rather than an empty list). */
static int write_text(const char *dir, const char *file, const GString *text)
{
	return text ? state_file_write(dir, file, text->str, text->len)
		    : state_file_remove(dir, file);
}

int lease_save(const char *dir, const char *ifname, const struct rate_lease *leases, size_t n,
	       int64_t now)
{
	g_autofree char *file = NULL, *path = NULL;
	GString *text;
	int r;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	file = lease_file(ifname);
	path = g_build_filename(dir, file, NULL);
	text = leases_text(leases, n, now);
	r = write_text(dir, file, text);
	if (kept)
		g_hash_table_remove(kept, path);
	if (kept && r == 0) {
		g_autoptr(GArray) written = g_array_new(false, true, sizeof(struct rate_lease));

		g_array_append_vals(written, leases, (guint)n);
		live_only(written, now);
		keep(dir, ifname, path, g_steal_pointer(&text), written, 0);
	}
	if (text)
		g_string_free(text, true);
	return r;
}

/* Take key's lease out of leases, and put l in its place when it has a rate. */
static void replace(GArray *leases, const struct rate_lease *l)
{
	for (guint i = leases->len; i-- > 0;)
		if (!memcmp(g_array_index(leases, struct rate_lease, i).key, l->key, WG_KEY_LEN))
			g_array_remove_index(leases, i);
	if (l->rate)
		g_array_append_val(leases, *l);
}

/* Write-behind: l into the leases kept at path, if any (then written at the next flush). */
static bool put_kept(const char *path, const struct rate_lease *l)
{
	struct kept *k = kept ? g_hash_table_lookup(kept, path) : NULL;

	if (!behind_kick || !k)
		return false;
	replace(k->leases, l);
	k->dirty = true;
	if (!behind_kicked) {
		behind_kicked = true;
		behind_kick(behind_arg);
	}
	return true;
}

int lease_put(const char *dir, const char *ifname, const uint8_t *key, uint64_t rate,
	      int64_t until, int64_t now)
{
	g_autoptr(GArray) leases = g_array_new(false, true, sizeof(struct rate_lease));
	g_autofree char *file = NULL, *path = NULL;
	struct rate_lease l = { .rate = rate, .until = until };
	struct kept *k;
	int r;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	memcpy(l.key, key, WG_KEY_LEN);
	file = lease_file(ifname);
	path = g_build_filename(dir, file, NULL);
	/* not written yet: nothing to read again (a copy of them all, at 10,000 peers) */
	k = kept ? g_hash_table_lookup(kept, path) : NULL;
	if (k && k->dirty && put_kept(path, &l))
		return 0;
	/* else the file, checked (the load keeps what it read) */
	r = lease_load(dir, ifname, leases);
	if (r < 0)
		return r;
	if (put_kept(path, &l))
		return 0;
	replace(leases, &l);
	/* lease_save leaves out the ended ones */
	return lease_save(dir, ifname, (const struct rate_lease *)(void *)leases->data,
			  leases->len, now);
}

int lease_flush(int64_t now, GPtrArray *lost)
{
	GHashTableIter it;
	gpointer key, val;
	int failed = 0;

	behind_kicked = false;
	if (!kept)
		return 0;
	g_hash_table_iter_init(&it, kept);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct kept *k = val;
		g_autofree char *file = NULL;
		g_autoptr(GString) text = NULL;
		GString *want;
		int r;

		if (!k->dirty)
			continue;
		file = lease_file(k->ifname);
		r = state_file_read(k->dir, file, LEASE_MAX_BYTES, &text);
		if ((r < 0 && r != -ENOENT) || !same_text(k->text, text)) {
			/* another process changed or removed the file: its leases stand */
			if (lost)
				g_ptr_array_add(lost, g_strdup(k->ifname));
			g_hash_table_iter_remove(&it);
			continue;
		}
		want = leases_text((const struct rate_lease *)(void *)k->leases->data,
				   k->leases->len, now);
		r = write_text(k->dir, file, want);
		if (r < 0) {
			log_err("leases: %s: %s", (const char *)key, strerror(-r));
			if (want)
				g_string_free(want, true);
			if (lost)
				g_ptr_array_add(lost, g_strdup(k->ifname));
			failed = failed ? failed : r;
			g_hash_table_iter_remove(&it);
			continue;
		}
		if (k->text)
			g_string_free(k->text, true);
		k->text = want;
		live_only(k->leases, now);
		k->dirty = false;
	}
	return failed;
}

int lease_drop_orphans(const char *dir, GPtrArray *removed)
{
	g_auto(GStrv) shaped = NULL;
	g_autoptr(GHashTable) has_state = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GDir) d = NULL;
	const char *name;
	int r = state_list(dir, &shaped);

	if (r < 0)
		return r;
	for (char **n = shaped; *n; n++)
		g_hash_table_add(has_state, *n);
	d = g_dir_open(dir, 0, NULL);
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *ifname = NULL;

		if (!g_str_has_suffix(name, LEASE_SUFFIX))
			continue;
		ifname = g_strndup(name, strlen(name) - strlen(LEASE_SUFFIX));
		if (!ifname_is_valid(ifname) || g_hash_table_contains(has_state, ifname))
			continue;
		r = state_file_remove(dir, name);
		if (r < 0)
			return r;
		if (removed)
			g_ptr_array_add(removed, g_steal_pointer(&ifname));
	}
	return 0;
}
