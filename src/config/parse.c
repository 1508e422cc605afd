// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One file's text into sections: GKeyFile reads the INI, a scan of the text
 * finds the line of each group and key for messages, and every key goes
 * through its row of keys.c.
 */
#include <errno.h>
#include <string.h>

#include "config/internal.h"
#include "util/ifname.h"
#include "util/text.h"

#define IFACE_PREFIX "interface "
#define NETWORK_PREFIX "network "
#define PEER_PREFIX "peer "

static void conf_section_free(gpointer p)
{
	struct conf_section *c = p;

	g_free(c->name);
	g_free(c->where);
	g_ptr_array_unref(c->words);
	g_strfreev(c->net.match.ids);
	g_strfreev(c->net.match.uuids);
	g_strfreev(c->net.match.ssids);
	g_strfreev(c->net.match.types);
	g_strfreev(c->net.tunnels);
	g_free(c->net.server);
	g_free(c->adapt.log);
	g_free(c);
}

static void conf_peer_free(gpointer ptr)
{
	struct conf_peer *p = ptr;

	g_free(p->name);
	g_free(p->where);
	g_free(p->probe);
	g_strfreev(p->ifaces);
	g_ptr_array_unref(p->words);
	g_free(p);
}

struct config *config_new(void)
{
	struct config *cfg = g_new0(struct config, 1);

	cfg->ifaces = g_ptr_array_new_with_free_func(conf_section_free);
	cfg->networks = g_ptr_array_new_with_free_func(conf_section_free);
	cfg->peers = g_ptr_array_new_with_free_func(conf_peer_free);
	cfg->warnings = g_ptr_array_new_with_free_func(g_free);
	cfg->files = g_ptr_array_new_with_free_func(g_free);
	cfg->texts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					   (GDestroyNotify)g_bytes_unref);
	cfg->enforce = true;
	cfg->rate_port = RATE_PORT;
	cfg->client_lease = RATE_LEASE_S;
	cfg->metrics_every = METRICS_EVERY_S;
	cfg->leaf_idle = LEAF_IDLE_S;
	return cfg;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	g_ptr_array_unref(cfg->ifaces);
	g_ptr_array_unref(cfg->networks);
	g_ptr_array_unref(cfg->peers);
	if (cfg->index)
		g_hash_table_unref(cfg->index);
	if (cfg->peer_keys)
		g_hash_table_unref(cfg->peer_keys);
	g_ptr_array_unref(cfg->warnings);
	g_ptr_array_unref(cfg->files);
	g_hash_table_unref(cfg->texts);
	g_free(cfg->metrics_file);
	g_free(cfg);
}

/*
 * A warning goes to the log and into check-config's JSON: it quotes what
 * the file says with TEXT_QUOTE (escaped, cut short), and whatever else it
 * holds (a file name, a parser's reason) is escaped here.
 */
void conf_warn(struct config *cfg, const char *file, unsigned int line, const char *fmt, ...)
{
	g_autofree char *msg = NULL, *all = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	all = line ? g_strdup_printf("%s:%u: %s", file, line, msg)
		   : g_strdup_printf("%s: %s", file, msg);
	g_ptr_array_add(cfg->warnings, text_escape(all));
}

/*
 * GKeyFile keeps no line numbers: they are found in the text, in one pass
 * that reads lines as GKeyFile does (split at '\n', up to a NUL, blanks
 * around, '#' comments). at maps "group" to the line of its first header and
 * "group]key" to the line of the key's last assignment in that group (no
 * group name holds a ']': GKeyFile refuses a file with one).
 */
struct lines {
	GHashTable *at;
	GStringChunk *names; /* at's keys: one allocation for many */
};

static void lines_scan(struct lines *lines, const char *data, size_t len)
{
	g_autoptr(GString) group = g_string_new(NULL); /* the name, then "]key" while needed */
	const char *next = data, *end = data + len;
	size_t glen = 0; /* 0: before the first group */

	for (unsigned int no = 1; next < end; no++) {
		const char *l = next, *e = memchr(l, '\n', (size_t)(end - l)), *mark;

		next = e ? e + 1 : end;
		e = e ? e : end;
		mark = memchr(l, '\0', (size_t)(e - l));
		e = mark ? mark : e;
		while (l < e && g_ascii_isspace(*l))
			l++;
		if (l < e && *l == '[') {
			mark = memchr(l, ']', (size_t)(e - l));
			if (!mark)
				continue;
			g_string_append_len(g_string_truncate(group, 0), l + 1, mark - l - 1);
			glen = group->len;
			if (!g_hash_table_contains(lines->at, group->str))
				g_hash_table_insert(lines->at,
						    g_string_chunk_insert(lines->names, group->str),
						    GUINT_TO_POINTER(no));
			continue;
		}
		/* GKeyFile's only comment is '#': "; x = 1" is a key named "; x" */
		mark = l < e && *l != '#' ? memchr(l, '=', (size_t)(e - l)) : NULL;
		if (!glen || !mark || mark == l)
			continue;
		while (mark > l && g_ascii_isspace(mark[-1]))
			mark--;
		g_string_append_c(g_string_truncate(group, glen), ']');
		g_string_append_len(group, l, mark - l);
		g_hash_table_insert(lines->at, g_string_chunk_insert(lines->names, group->str),
				    GUINT_TO_POINTER(no));
	}
}

/* The line of the last "key =" in group, or of its header when key is NULL; 0: not found. */
static unsigned int line_of(struct lines *lines, const char *group, const char *key)
{
	g_autofree char *big = NULL;
	char buf[128], *s = buf;
	size_t g, k;

	if (!key)
		return GPOINTER_TO_UINT(g_hash_table_lookup(lines->at, group));
	g = strlen(group);
	k = strlen(key);
	if (g + k + 2 > sizeof(buf))
		s = big = g_malloc(g + k + 2);
	memcpy(s, group, g);
	s[g] = ']';
	memcpy(s + g + 1, key, k + 1);
	return GPOINTER_TO_UINT(g_hash_table_lookup(lines->at, s));
}

/*
 * GKeyFile lists a key once per time it is written in one group (with the
 * last value each time): the group's keys, each once, in order first seen.
 */
static char **keys_once(GKeyFile *kf, const char *group)
{
	gsize n = 0, kept = 0;
	char **keys = g_key_file_get_keys(kf, group, &n, NULL);
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

	for (gsize i = 0; i < n; i++) {
		if (g_hash_table_contains(seen, keys[i])) {
			g_free(keys[i]);
			continue;
		}
		g_hash_table_add(seen, keys[i]);
		keys[kept++] = keys[i];
	}
	if (keys)
		keys[kept] = NULL;
	return keys;
}

/*
 * Does the value end in a lone backslash (an escape with nothing to escape)?
 * GLib before 2.76 sets its GError twice for such a value when it also holds
 * an invalid escape: a GLib warning on stderr (found by fuzz-config). The
 * value is refused before GLib parses it.
 */
static bool escape_at_end(GKeyFile *kf, const char *group, const char *key)
{
	g_autofree char *raw = g_key_file_get_value(kf, group, key, NULL);
	size_t n = raw ? strlen(raw) : 0, k = 0;

	while (k < n && raw[n - 1 - k] == '\\')
		k++;
	return k % 2;
}

/* Why GKeyFile gives no value (get_value's NULL, a list's): for the warning. */
static const char *unreadable(GKeyFile *kf, const char *group, const char *key)
{
	g_autofree char *raw = g_key_file_get_value(kf, group, key, NULL);

	if (!raw)
		return "no value";
	if (!g_utf8_validate(raw, -1, NULL))
		return "the value is not UTF-8 text";
	if (escape_at_end(kf, group, key))
		return "the value ends in a lone backslash (\\\\ is one backslash)";
	return "the value holds an escape GLib does not know (\\s, \\t, \\n, \\r, \\\\ and, "
	       "in a list, \\; are known)";
}

/* GKeyFile keeps trailing blanks in a value; an editor does not show them. */
static char *get_value(GKeyFile *kf, const char *group, const char *key)
{
	char *v;

	if (escape_at_end(kf, group, key))
		return NULL;
	v = g_key_file_get_string(kf, group, key, NULL);
	return v ? g_strchomp(v) : NULL;
}

static void index_add(GHashTable *index, const char *prefix, const char *name, void *section)
{
	g_hash_table_insert(index, g_strconcat(prefix, name, NULL), section);
}

/*
 * The sections by group name ("interface wg0", "peer laptop"), beside the
 * arrays that keep their order: a file of many sections reads in linear
 * time. Made from the arrays when first needed; finish_sections drops it.
 */
static GHashTable *section_index(struct config *cfg)
{
	if (cfg->index)
		return cfg->index;
	cfg->index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	for (guint i = 0; i < cfg->ifaces->len; i++)
		index_add(cfg->index, IFACE_PREFIX,
			  ((struct conf_section *)cfg->ifaces->pdata[i])->name,
			  cfg->ifaces->pdata[i]);
	for (guint i = 0; i < cfg->networks->len; i++)
		index_add(cfg->index, NETWORK_PREFIX,
			  ((struct conf_section *)cfg->networks->pdata[i])->name,
			  cfg->networks->pdata[i]);
	for (guint i = 0; i < cfg->peers->len; i++)
		index_add(cfg->index, PEER_PREFIX, ((struct conf_peer *)cfg->peers->pdata[i])->name,
			  cfg->peers->pdata[i]);
	return cfg->index;
}

static void *section_find(struct config *cfg, const char *prefix, const char *name)
{
	g_autofree char *group = g_strconcat(prefix, name, NULL);

	return g_hash_table_lookup(section_index(cfg), group);
}

static struct conf_section *section_get(struct config *cfg, const char *name, const char *where,
				      bool network)
{
	const char *prefix = network ? NETWORK_PREFIX : IFACE_PREFIX;
	struct conf_section *c = section_find(cfg, prefix, name);

	if (c)
		return c;
	c = g_new0(struct conf_section, 1);
	c->name = g_strdup(name);
	c->glob = !network && strpbrk(name, "*?") != NULL;
	c->network = network;
	c->rate.client_download = -1;
	c->net.match.any = network && !strcmp(name, "*");
	c->where = g_strdup(where);
	c->words = g_ptr_array_new_with_free_func(g_free);
	c->enforce = -1;
	g_ptr_array_add(network ? cfg->networks : cfg->ifaces, c);
	index_add(cfg->index, prefix, name, c);
	return c;
}

static struct conf_peer *peer_get(struct config *cfg, const char *name, const char *where)
{
	struct conf_peer *p = section_find(cfg, PEER_PREFIX, name);

	if (p)
		return p;
	p = g_new0(struct conf_peer, 1);
	p->name = g_strdup(name);
	p->where = g_strdup(where);
	p->words = g_ptr_array_new_with_free_func(g_free);
	p->rate.client_download = -1;
	g_ptr_array_add(cfg->peers, p);
	index_add(cfg->index, PEER_PREFIX, name, p);
	return p;
}

/* Every key of group through its row of keys.c into base, the section (struct per sec). */
static void parse_keys(struct config *cfg, GKeyFile *kf, const char *file, struct lines *lines,
		       const char *group, unsigned int sec, void *base, GPtrArray *words)
{
	g_auto(GStrv) keys = keys_once(kf, group);

	for (size_t i = 0; keys && keys[i]; i++) {
		const struct conf_key *k = conf_key_find(sec, keys[i]);
		unsigned int line = line_of(lines, group, keys[i]);
		g_autofree char *text = get_value(kf, group, keys[i]);
		struct conf_value v = { .kf = kf, .group = group, .key = keys[i], .text = text,
					.words = words };
		int r = -ENODATA;

		if (!k) {
			g_autofree char *named = sec == SEC_PEER ? conf_keys_named(sec) : NULL;

			conf_warn(cfg, file, line, "unknown key '%s' (= '%s') in [%s]; skipped%s%s%s",
				  TEXT_QUOTE(keys[i]), TEXT_QUOTE(text), TEXT_QUOTE(group),
				  named ? " (a peer has " : "", named ? named : "",
				  named ? " and cake's options)" : "");
			continue;
		}
		v.lone_backslash = escape_at_end(kf, group, keys[i]);
		if (text || k->list)
			r = k->parse(k, &v, (char *)base + k->offset);
		if (r == -ENODATA)
			conf_warn(cfg, file, line, "%s: %s; skipped", k->key,
				  v.why[0] ? v.why : unreadable(kf, group, keys[i]));
		else if (r < 0)
			conf_warn(cfg, file, line, "%s = '%s': %s; skipped", k->key,
				  TEXT_QUOTE(v.bad ? v.bad : text), v.why);
		else if (k->renamed)
			conf_warn(cfg, file, line, "%s is now spelled %s in [%s]; read as that",
				  k->key, k->renamed, TEXT_QUOTE(group));
		g_free(v.bad);
	}
}

/*
 * The section group names, made or found (a name given twice is one
 * section); NULL with a warning when the name cannot be one.
 */
static void *section_open(struct config *cfg, const char *file, struct lines *lines,
			  const char *group, unsigned int sec, GPtrArray **words)
{
	unsigned int line = line_of(lines, group, NULL);
	g_autofree char *where = g_strdup_printf("%s:%u", file, line);
	const char *name = strchr(group, ' ') ? strchr(group, ' ') + 1 : "";
	struct conf_section *c;
	struct conf_peer *p;

	switch (sec) {
	case SEC_IFACE:
		if (!ifname_is_valid(name) && !strpbrk(name, "*?")) {
			conf_warn(cfg, file, line,
				  "[%s]: '%s' is not an interface name or glob; section skipped",
				  TEXT_QUOTE(group), TEXT_QUOTE(name));
			return NULL;
		}
		G_GNUC_FALLTHROUGH;
	case SEC_NETWORK:
		if (!*name) {
			conf_warn(cfg, file, line, "[%s]: a profile needs a name; section skipped",
				  TEXT_QUOTE(group));
			return NULL;
		}
		c = section_get(cfg, name, where, sec == SEC_NETWORK);
		*words = c->words;
		return c;
	case SEC_PEER:
		if (!*name) {
			conf_warn(cfg, file, line, "[%s]: a peer needs a name; section skipped",
				  TEXT_QUOTE(group));
			return NULL;
		}
		p = peer_get(cfg, name, where);
		*words = p->words;
		return p;
	default:
		*words = NULL;
		return cfg;
	}
}

/* The kinds of section by their group name's start ("daemon" is one group, whole). */
static const struct {
	const char *prefix;
	unsigned int sec;
} kinds[] = {
	{ IFACE_PREFIX, SEC_IFACE },
	{ NETWORK_PREFIX, SEC_NETWORK },
	{ PEER_PREFIX, SEC_PEER },
	{ "daemon", SEC_DAEMON },
};

static unsigned int kind_of(const char *group)
{
	for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++)
		if (kinds[i].sec == SEC_DAEMON ? !strcmp(group, kinds[i].prefix) :
						 g_str_has_prefix(group, kinds[i].prefix))
			return kinds[i].sec;
	return 0;
}

void conf_warn_not_ini(struct config *cfg, const char *file, const GError *err, const char *then)
{
	char says[160 * 8 + 4]; /* GLib's message quotes the line it stopped at */

	conf_warn(cfg, file, 0, "not an INI file (%s); %s",
		  text_quote(says, sizeof(says), err->message, 160), then);
}

int conf_parse(struct config *cfg, const char *file, const char *data, size_t len, GError **err)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GHashTable) at = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GStringChunk) names = g_string_chunk_new(4096);
	struct lines lines = { .at = at, .names = names };
	g_auto(GStrv) groups = NULL;

	/* peers may come or change: config_finish indexes them again */
	g_clear_pointer(&cfg->peer_keys, g_hash_table_unref);
	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, err))
		return -EBADMSG;
	g_ptr_array_add(cfg->files, g_strdup(file));
	lines_scan(&lines, data, len);
	groups = g_key_file_get_groups(kf, NULL);
	for (size_t i = 0; groups[i]; i++) {
		unsigned int sec = kind_of(groups[i]);
		GPtrArray *words;
		void *base;

		if (!sec) {
			conf_warn(cfg, file, line_of(&lines, groups[i], NULL),
				  "unknown section [%s]; skipped (sections: [interface NAME], "
				  "[network NAME], [peer NAME], [daemon])",
				  TEXT_QUOTE(groups[i]));
			continue;
		}
		base = section_open(cfg, file, &lines, groups[i], sec, &words);
		if (base)
			parse_keys(cfg, kf, file, &lines, groups[i], sec, base, words);
	}
	return 0;
}

int config_parse_data(struct config *cfg, const char *file, const char *data, size_t len)
{
	g_autoptr(GError) err = NULL;
	int r = conf_parse(cfg, file, data, len, &err);

	if (r == -EBADMSG)
		conf_warn_not_ini(cfg, file, err, "file skipped");
	return r;
}
