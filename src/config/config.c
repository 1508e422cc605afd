// SPDX-License-Identifier: GPL-2.0-or-later
#include <dirent.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "shape/cake.h"
#include "shape/peers.h"
#include "shape/units.h"
#include "shape/words.h"
#include "util/log.h"
#include "util/safe.h"
#include "util/text.h"
#include "shape/state.h"
#include "util/ifname.h"

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
	cfg->enforce = true;
	cfg->rate_port = RATE_PORT;
	cfg->client_lease = RATE_LEASE_S;
	cfg->metrics_every = METRICS_EVERY_S;
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
	g_ptr_array_unref(cfg->warnings);
	g_ptr_array_unref(cfg->files);
	g_free(cfg->metrics_file);
	g_free(cfg);
}

static void warn(struct config *cfg, const char *file, unsigned int line, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

/*
 * A warning goes to the log and into check-config's JSON: it quotes what
 * the file says with TEXT_QUOTE (escaped, cut short), and whatever else it
 * holds (a file name, a parser's reason) is escaped here.
 */
static void warn(struct config *cfg, const char *file, unsigned int line, const char *fmt, ...)
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

/* yes/no as GKeyFile's booleans and systemd's: yes, no, true, false, on, off, 1, 0. */
static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
		if (!g_ascii_strcasecmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!g_ascii_strcasecmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
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

enum key_kind {
	KEY_WORD_VALUE, /* "key value" as set's words */
	KEY_FAMILY, /* the value alone is set's word, one of a family (diffserv = diffserv4) */
	KEY_BOOL_WORDS, /* yes/no (or one more value) -> one word of a family */
	KEY_ENFORCE,
};

static const struct {
	const char *key;
	enum key_kind kind;
	enum cake_family family; /* KEY_FAMILY, KEY_BOOL_WORDS */
	const char *more; /* KEY_BOOL_WORDS: a value besides yes and no ... */
	uint32_t more_value; /* ... and the family's value it stands for */
} iface_keys[] = {
	{ "egress", KEY_WORD_VALUE },
	{ "ingress", KEY_WORD_VALUE },
	{ "overhead", KEY_WORD_VALUE },
	{ "link-overhead", KEY_WORD_VALUE },
	{ "mpu", KEY_WORD_VALUE },
	{ "rtt", KEY_WORD_VALUE },
	{ "memlimit", KEY_WORD_VALUE },
	{ "fwmark", KEY_WORD_VALUE },
	{ "diffserv", KEY_FAMILY, CAKE_WORDS_DIFFSERV },
	{ "flow-isolation", KEY_FAMILY, CAKE_WORDS_FLOW },
	{ "nat", KEY_BOOL_WORDS, CAKE_WORDS_NAT },
	{ "wash", KEY_BOOL_WORDS, CAKE_WORDS_WASH },
	{ "split-gso", KEY_BOOL_WORDS, CAKE_WORDS_SPLIT_GSO },
	{ "ack-filter", KEY_BOOL_WORDS, CAKE_WORDS_ACK, "aggressive", CAKE_ACKF_AGGRESSIVE },
	{ "atm", KEY_BOOL_WORDS, CAKE_WORDS_ATM, "ptm", CAKE_ATMC_PTM },
	{ "enforce", KEY_ENFORCE },
};

/* Turn key = value into set's words; NULL words with *err set when bad. */
static int key_words(size_t k, const char *v, const char *words[2], int *n, char *err,
		     size_t errlen)
{
	enum cake_family f = iface_keys[k].family;
	char names[160];
	bool b;

	*n = 0;
	switch (iface_keys[k].kind) {
	case KEY_WORD_VALUE:
		words[0] = iface_keys[k].key;
		words[1] = v;
		*n = 2;
		break;
	case KEY_FAMILY:
		if (cake_word_value(f, v) < 0) {
			snprintf(err, errlen, "not one of %s",
				 cake_word_choices(f, ", ", names, sizeof(names)));
			return -EINVAL;
		}
		words[(*n)++] = v;
		break;
	case KEY_BOOL_WORDS:
		if (iface_keys[k].more && !strcmp(v, iface_keys[k].more)) {
			words[(*n)++] = cake_word(f, iface_keys[k].more_value);
		} else if (parse_bool(v, &b) == 0) {
			words[(*n)++] = cake_word(f, b);
		} else if (iface_keys[k].more) {
			snprintf(err, errlen, "not yes, no or %s", iface_keys[k].more);
			return -EINVAL;
		} else {
			snprintf(err, errlen, "not yes or no");
			return -EINVAL;
		}
		break;
	case KEY_ENFORCE:
		break;
	}
	return 0;
}

/* key = v (iface_keys[k]) as set's words, appended to words; a warning when bad. */
static void add_key_words(struct config *cfg, const char *file, unsigned int line, size_t k,
			  const char *key, const char *v, GPtrArray *words)
{
	struct shape_request probe;
	const char *w[2];
	char err[256];
	int n;

	if (key_words(k, v, w, &n, err, sizeof(err)) < 0 ||
	    shape_words_parse(n, (char **)w, &probe, err, sizeof(err)) < 0) {
		warn(cfg, file, line, "%s = '%s': %s; skipped", key, TEXT_QUOTE(v), err);
		return;
	}
	for (int i = 0; i < n; i++)
		g_ptr_array_add(words, g_strdup(w[i]));
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

/* A key that must be a positive rate: into *dst, or a warning. */
static void parse_rate_value(struct config *cfg, const char *key, const char *v, uint64_t *dst,
			     const char *file, unsigned int line)
{
	uint64_t rate;

	if (parse_rate(v, &rate) < 0 || !rate)
		warn(cfg, file, line, "%s = '%s': not a rate (e.g. 20mbit); skipped", key,
		     TEXT_QUOTE(v));
	else
		*dst = rate;
}

/*
 * The rate channel's policy keys, of [interface] and [peer]: true when key
 * was one (handled, perhaps with a warning).
 */
static bool parse_rate_key(struct config *cfg, struct conf_rate *r, const char *key,
			   const char *v, const char *file, unsigned int line)
{
	bool b;

	if (strcmp(key, "client-download") && strcmp(key, "download-min") &&
	    strcmp(key, "download-max"))
		return false;
	if (!v)
		warn(cfg, file, line, "%s: not readable as UTF-8 text; skipped", key);
	else if (strcmp(key, "client-download"))
		parse_rate_value(cfg, key, v, !strcmp(key, "download-min") ? &r->min : &r->max,
				 file, line);
	else if (parse_bool(v, &b) < 0)
		warn(cfg, file, line, "client-download = '%s': not yes or no; skipped",
		     TEXT_QUOTE(v));
	else
		r->client_download = b;
	return true;
}

/*
 * Continuous adaptation's keys: adapt = yes, adapt-log = PATH and the ranges
 * (download-min/-max only in a [network] profile: in an [interface] section
 * they bound what the server grants its clients). true when key was one.
 */
static bool parse_adapt_key(struct config *cfg, struct conf_section *c, const char *key,
			    const char *v, const char *file, unsigned int line)
{
	static const struct {
		const char *key;
		size_t off;
		bool network;
	} ranges[] = {
		{ "egress-min", offsetof(struct conf_adapt, egress_min) },
		{ "egress-max", offsetof(struct conf_adapt, egress_max) },
		{ "ingress-min", offsetof(struct conf_adapt, ingress_min) },
		{ "ingress-max", offsetof(struct conf_adapt, ingress_max) },
		{ "download-min", offsetof(struct conf_adapt, download_min), true },
		{ "download-max", offsetof(struct conf_adapt, download_max), true },
	};
	bool b;

	for (size_t k = 0; k < G_N_ELEMENTS(ranges); k++) {
		if (strcmp(key, ranges[k].key) != 0 || (ranges[k].network && !c->network))
			continue;
		if (!v)
			warn(cfg, file, line, "%s: not readable as UTF-8 text; skipped", key);
		else
			parse_rate_value(cfg, key, v,
					 (uint64_t *)(void *)((char *)&c->adapt + ranges[k].off),
					 file, line);
		return true;
	}
	if (strcmp(key, "adapt") && strcmp(key, "adapt-log"))
		return false;
	if (!v) {
		warn(cfg, file, line, "%s: not readable as UTF-8 text; skipped", key);
	} else if (!strcmp(key, "adapt-log")) {
		if (!g_path_is_absolute(v))
			warn(cfg, file, line, "adapt-log = '%s': not an absolute path; skipped",
			     TEXT_QUOTE(v));
		else {
			g_free(c->adapt.log);
			c->adapt.log = g_strdup(v);
		}
	} else if (parse_bool(v, &b) < 0) {
		warn(cfg, file, line, "adapt = '%s': not yes or no; skipped", TEXT_QUOTE(v));
	} else {
		c->adapt.on = b;
	}
	return true;
}

/* A [network] profile's keys for the server: download = RATE, server = ADDR. */
static bool parse_client_key(struct config *cfg, struct conf_section *c, const char *key,
			     const char *v, const char *file, unsigned int line)
{
	char canon[INET6_ADDRSTRLEN];
	uint8_t a[16];
	int family;

	if (strcmp(key, "download") && strcmp(key, "server"))
		return false;
	if (!v) {
		warn(cfg, file, line, "%s: not readable as UTF-8 text; skipped", key);
		return true;
	}
	if (!strcmp(key, "download")) {
		parse_rate_value(cfg, key, v, &c->net.download, file, line);
		return true;
	}
	family = strchr(v, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(family, v, a) != 1 || !inet_ntop(family, a, canon, sizeof(canon))) {
		warn(cfg, file, line, "server = '%s': not an IPv4 or IPv6 address (the server's "
		     "address inside the tunnel); skipped", TEXT_QUOTE(v));
		return true;
	}
	g_free(c->net.server);
	c->net.server = g_strdup(canon);
	return true;
}

/* A [network] profile's own keys: what it matches and which tunnels it shapes. */
static const struct {
	const char *key;
	size_t off; /* of the char ** in struct conf_section */
} network_keys[] = {
	{ "connection-id", offsetof(struct conf_section, net.match.ids) },
	{ "connection-uuid", offsetof(struct conf_section, net.match.uuids) },
	{ "ssid", offsetof(struct conf_section, net.match.ssids) },
	{ "connection-type", offsetof(struct conf_section, net.match.types) },
	{ "interface", offsetof(struct conf_section, net.tunnels) },
};

/* true when key was one of network_keys (handled, perhaps with a warning). */
static bool parse_network_key(struct config *cfg, struct conf_section *c, GKeyFile *kf,
			      const char *group, const char *key, const char *file, unsigned int line)
{
	g_auto(GStrv) values = NULL;
	char ***dst;
	size_t k;

	for (k = 0; k < G_N_ELEMENTS(network_keys); k++)
		if (!strcmp(key, network_keys[k].key))
			break;
	if (k == G_N_ELEMENTS(network_keys))
		return false;
	/* a;b is a list, any of which matches (GKeyFile's list syntax: \; for a ';') */
	values = escape_at_end(kf, group, key) ? NULL :
		 g_key_file_get_string_list(kf, group, key, NULL, NULL);
	if (!values || !values[0]) {
		warn(cfg, file, line, "%s: %s; skipped", key,
		     values ? "no value" : unreadable(kf, group, key));
		return true;
	}
	for (char **v = values; *v; v++) {
		g_strstrip(*v);
		if (!strcmp(key, "interface") && !ifname_is_valid(*v) && !strpbrk(*v, "*?")) {
			warn(cfg, file, line, "interface = '%s': not an interface name or glob; "
			     "skipped", TEXT_QUOTE(*v));
			return true;
		}
	}
	dst = (char ***)((char *)c + network_keys[k].off);
	g_strfreev(*dst);
	*dst = g_steal_pointer(&values);
	return true;
}

static void parse_iface_group(struct config *cfg, GKeyFile *kf, const char *file,
			      struct lines *lines, const char *group)
{
	bool network = g_str_has_prefix(group, NETWORK_PREFIX);
	const char *name = group + strlen(network ? NETWORK_PREFIX : IFACE_PREFIX);
	g_autofree char *where = g_strdup_printf("%s:%u", file, line_of(lines, group, NULL));
	g_auto(GStrv) keys = keys_once(kf, group);
	struct conf_section *c;

	if (!network && !ifname_is_valid(name) && !strpbrk(name, "*?")) {
		warn(cfg, file, line_of(lines, group, NULL),
		     "[%s]: '%s' is not an interface name or glob; section skipped",
		     TEXT_QUOTE(group), TEXT_QUOTE(name));
		return;
	}
	if (network && !*name) {
		warn(cfg, file, line_of(lines, group, NULL), "[%s]: a profile needs a name; "
		     "section skipped", TEXT_QUOTE(group));
		return;
	}
	c = section_get(cfg, name, where, network);
	for (size_t i = 0; keys && keys[i]; i++) {
		unsigned int line;
		g_autofree char *v = NULL;
		size_t k;

		line = line_of(lines, group, keys[i]);
		if (network && parse_network_key(cfg, c, kf, group, keys[i], file, line))
			continue;
		v = get_value(kf, group, keys[i]);
		if (parse_adapt_key(cfg, c, keys[i], v, file, line))
			continue;
		if (parse_client_key(cfg, c, keys[i], v, file, line) ||
		    (!network && parse_rate_key(cfg, &c->rate, keys[i], v, file, line)))
			continue;
		for (k = 0; k < G_N_ELEMENTS(iface_keys); k++)
			if (!strcmp(keys[i], iface_keys[k].key))
				break;
		if (k == G_N_ELEMENTS(iface_keys)) {
			warn(cfg, file, line, "unknown key '%s' (= '%s') in [%s]; skipped",
			     TEXT_QUOTE(keys[i]), TEXT_QUOTE(v), TEXT_QUOTE(group));
			continue;
		}
		if (!v) {
			warn(cfg, file, line, "%s: %s; skipped", keys[i],
			     unreadable(kf, group, keys[i]));
			continue;
		}
		if (iface_keys[k].kind == KEY_ENFORCE) {
			bool b;

			if (parse_bool(v, &b) < 0)
				warn(cfg, file, line, "enforce = '%s': not yes or no; skipped",
				     TEXT_QUOTE(v));
			else
				c->enforce = b;
			continue;
		}
		add_key_words(cfg, file, line, k, keys[i], v, c->words);
	}
}

/* A [daemon] key of seconds from lo to hi into *dst; else a warning, and *dst stays. */
static void daemon_seconds(struct config *cfg, const char *file, unsigned int line,
			   const char *key, const char *v, guint64 lo, guint64 hi, unsigned int *dst)
{
	guint64 secs;

	if (!v || !g_ascii_string_to_unsigned(v, 10, lo, hi, &secs, NULL))
		warn(cfg, file, line,
		     "%s = '%s': not a number of seconds from %" G_GUINT64_FORMAT
		     " to %" G_GUINT64_FORMAT "; skipped",
		     key, v ? TEXT_QUOTE(v) : "", lo, hi);
	else
		*dst = (unsigned int)secs;
}

static void parse_daemon_group(struct config *cfg, GKeyFile *kf, const char *file,
			       struct lines *lines, const char *group)
{
	g_auto(GStrv) keys = keys_once(kf, group);

	for (size_t i = 0; keys && keys[i]; i++) {
		unsigned int line;
		g_autofree char *v = NULL;
		bool *dst = NULL, b;

		line = line_of(lines, group, keys[i]);
		v = get_value(kf, group, keys[i]);
		if (!strcmp(keys[i], "rate-port")) {
			guint64 port;

			if (!v || !g_ascii_string_to_unsigned(v, 10, 0, 65535, &port, NULL))
				warn(cfg, file, line, "rate-port = '%s': not a port number (0 to 65535, "
				     "0: no rate channel); skipped", v ? TEXT_QUOTE(v) : "");
			else
				cfg->rate_port = (unsigned int)port;
			continue;
		}
		if (!strcmp(keys[i], "client-lease")) {
			daemon_seconds(cfg, file, line, keys[i], v, 3, 86400, &cfg->client_lease);
			continue;
		}
		if (!strcmp(keys[i], "metrics-file")) {
			if (!v || !g_path_is_absolute(v)) {
				warn(cfg, file, line, "metrics-file = '%s': not an absolute path; "
				     "skipped", v ? TEXT_QUOTE(v) : "");
			} else {
				g_free(cfg->metrics_file);
				cfg->metrics_file = g_strdup(v);
			}
			continue;
		}
		if (!strcmp(keys[i], "metrics-every")) {
			daemon_seconds(cfg, file, line, keys[i], v, 1, 3600, &cfg->metrics_every);
			continue;
		}
		if (!strcmp(keys[i], "enforce"))
			dst = &cfg->enforce;
		else if (!strcmp(keys[i], "clear-on-exit"))
			dst = &cfg->clear_on_exit;
		if (!dst) {
			warn(cfg, file, line, "unknown key '%s' (= '%s') in [daemon]; skipped",
			     TEXT_QUOTE(keys[i]), TEXT_QUOTE(v));
			continue;
		}
		if (!v) {
			warn(cfg, file, line, "%s: %s; skipped", keys[i],
			     unreadable(kf, group, keys[i]));
			continue;
		}
		if (parse_bool(v, &b) < 0) {
			warn(cfg, file, line, "%s = '%s': not yes or no; skipped", keys[i],
			     TEXT_QUOTE(v));
			continue;
		}
		*dst = b;
	}
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

/* A [peer] key that is not a cake option: public-key, interface, download. */
static bool parse_peer_own_key(struct config *cfg, struct conf_peer *p, GKeyFile *kf,
			       const char *group, const char *key, const char *v,
			       const char *file, unsigned int line)
{
	g_auto(GStrv) globs = NULL;

	if (!strcmp(key, "public-key")) {
		if (wg_key_from_base64(v, p->key) < 0)
			warn(cfg, file, line, "public-key = '%s': not a WireGuard key (44 characters "
			     "of base64, as wg shows it); skipped", TEXT_QUOTE(v));
		else
			p->has_key = true;
	} else if (!strcmp(key, "download")) {
		if (parse_rate(v, &p->download) < 0 || !p->download)
			warn(cfg, file, line, "download = '%s': not a rate (e.g. 20mbit); skipped",
			     TEXT_QUOTE(v));
	} else if (!strcmp(key, "interface")) {
		globs = g_key_file_get_string_list(kf, group, key, NULL, NULL);
		if (!globs || !globs[0]) {
			warn(cfg, file, line, "interface: no value; skipped");
			return true;
		}
		for (char **g = globs; g && *g; g++) {
			g_strstrip(*g);
			if (!ifname_is_valid(*g) && !strpbrk(*g, "*?")) {
				warn(cfg, file, line, "interface = '%s': not an interface name or "
				     "glob; skipped", TEXT_QUOTE(*g));
				return true;
			}
		}
		g_strfreev(p->ifaces);
		p->ifaces = g_steal_pointer(&globs);
	} else {
		return false;
	}
	return true;
}

/* Keys of [interface] that are the interface's alone, not a peer's cake. */
static bool interface_only(const char *key)
{
	static const char *const keys[] = { "egress", "ingress", "overhead", "link-overhead",
					    "enforce" };

	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

static void parse_peer_group(struct config *cfg, GKeyFile *kf, const char *file,
			     struct lines *lines, const char *group)
{
	const char *name = group + strlen(PEER_PREFIX);
	g_autofree char *where = g_strdup_printf("%s:%u", file, line_of(lines, group, NULL));
	g_auto(GStrv) keys = keys_once(kf, group);
	struct conf_peer *p;

	if (!*name) {
		warn(cfg, file, line_of(lines, group, NULL), "[%s]: a peer needs a name; section "
		     "skipped", TEXT_QUOTE(group));
		return;
	}
	p = peer_get(cfg, name, where);

	for (size_t i = 0; keys && keys[i]; i++) {
		unsigned int line = line_of(lines, group, keys[i]);
		g_autofree char *v = NULL;
		size_t k;

		v = get_value(kf, group, keys[i]);
		if (!v) {
			warn(cfg, file, line, "%s: %s; skipped", TEXT_QUOTE(keys[i]),
			     unreadable(kf, group, keys[i]));
			continue;
		}
		if (parse_peer_own_key(cfg, p, kf, group, keys[i], v, file, line) ||
		    parse_rate_key(cfg, &p->rate, keys[i], v, file, line))
			continue;
		for (k = 0; k < G_N_ELEMENTS(iface_keys); k++)
			if (!strcmp(keys[i], iface_keys[k].key))
				break;
		if (k == G_N_ELEMENTS(iface_keys) || interface_only(keys[i])) {
			warn(cfg, file, line, "unknown key '%s' (= '%s') in [%s]; skipped (a peer has "
			     "public-key, interface, download, client-download, download-min, "
			     "download-max and cake's options)",
			     TEXT_QUOTE(keys[i]), TEXT_QUOTE(v), TEXT_QUOTE(group));
			continue;
		}
		add_key_words(cfg, file, line, k, keys[i], v, p->words);
	}
}

/*
 * Remove the elements marked in drop, the others keeping their order: one
 * pass, where removing them one by one would be quadratic.
 */
static void remove_marked(GPtrArray *arr, const bool *drop)
{
	g_autoptr(GPtrArray) gone = g_ptr_array_new();
	guint kept = 0;

	for (guint i = 0; i < arr->len; i++) {
		if (drop[i])
			g_ptr_array_add(gone, arr->pdata[i]);
		else
			arr->pdata[kept++] = arr->pdata[i];
	}
	if (gone->len) {
		memcpy(arr->pdata + kept, gone->pdata, gone->len * sizeof(gpointer));
		g_ptr_array_remove_range(arr, kept, gone->len); /* frees them */
	}
}

/* download-min above download-max: neither bound can hold, both go (a warning). */
static void rate_bounds_check(struct config *cfg, const char *where, const char *what,
			      const char *name, struct conf_rate *r)
{
	if (!r->min || !r->max || r->min <= r->max)
		return;
	warn(cfg, where, 0, "[%s %s]: download-min is above download-max; both skipped", what,
	     TEXT_QUOTE(name));
	r->min = r->max = 0;
}

/*
 * One direction's range around its base rate: the defaults filled in (a
 * tenth of the base, the base); false with a warning when it cannot hold.
 */
static bool adapt_range(struct config *cfg, const struct conf_section *c, const char *dir,
			uint64_t base, uint64_t *min, uint64_t *max)
{
	if (!base) {
		if (*min || *max)
			warn(cfg, c->where, 0, "[%s %s]: %s-min/-max without %s = RATE (the base "
			     "rate); adapt skipped", c->network ? "network" : "interface",
			     TEXT_QUOTE(c->name), dir, dir);
		return !*min && !*max;
	}
	if (!*min)
		*min = MIN(base / 10, *max ? *max : base);
	if (!*max)
		*max = MAX(base, *min);
	if (*min <= base && base <= *max)
		return true;
	warn(cfg, c->where, 0, "[%s %s]: %s is not within %s-min .. %s-max; adapt skipped",
	     c->network ? "network" : "interface", TEXT_QUOTE(c->name), dir, dir, dir);
	return false;
}

/* After the words are parsed: adapt = yes needs a base rate and ranges that hold. */
static bool adapt_check(struct config *cfg, struct conf_section *c)
{
	struct conf_adapt *a = &c->adapt;
	uint64_t eg = c->req.egress == DIR_SET ? c->req.egress_rate : 0;
	uint64_t in = c->req.ingress == DIR_SET ? c->req.ingress_rate : 0;
	uint64_t dl = c->net.download;

	if (!adapt_range(cfg, c, "egress", eg, &a->egress_min, &a->egress_max) ||
	    !adapt_range(cfg, c, "ingress", in, &a->ingress_min, &a->ingress_max) ||
	    !adapt_range(cfg, c, "download", dl, &a->download_min, &a->download_max))
		return false;
	if (eg || in || dl)
		return true;
	warn(cfg, c->where, 0, "[%s %s]: adapt = yes but no rate to adapt (egress, ingress or "
	     "download); adapt skipped", c->network ? "network" : "interface", TEXT_QUOTE(c->name));
	return false;
}

/* After all files: a peer needs its key and a rate; its options parse as one line. */
static void finish_peers(struct config *cfg)
{
	g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree bool *drop = g_new0(bool, cfg->peers->len + 1);

	for (guint i = 0; i < cfg->peers->len; i++) {
		struct conf_peer *p = cfg->peers->pdata[i];
		const char *missing = !p->has_key ? "no public-key = KEY" :
				      !p->download && p->rate.client_download < 0 ?
				      "no download = RATE (nor client-download)" : NULL;

		rate_bounds_check(cfg, p->where, "peer", p->name, &p->rate);
		if (!missing && !g_hash_table_add(keys, g_base64_encode(p->key, sizeof(p->key))))
			missing = "the same public-key as another [peer]";
		if (!missing)
			continue;
		warn(cfg, p->where, 0, "[peer %s]: %s; section skipped", TEXT_QUOTE(p->name),
		     missing);
		drop[i] = true;
	}
	remove_marked(cfg->peers, drop);
}

/*
 * An [interface] section with download = is a client's: its download-min/-max
 * are adapt's range, not a server's bounds; with client-download = (a
 * server's key) too, it is both, and download = goes.
 */
static void client_section(struct config *cfg, struct conf_section *c)
{
	if (c->rate.client_download > 0) {
		warn(cfg, c->where, 0, "[interface %s]: download = (a client's) and "
		     "client-download = yes (a server's) in one section; download skipped",
		     TEXT_QUOTE(c->name));
		c->net.download = 0;
		return;
	}
	c->adapt.download_min = c->rate.min;
	c->adapt.download_max = c->rate.max;
	c->rate.min = c->rate.max = 0;
}

/* After all files: each section's words, parsed as one `set` line. */
static void finish_array(struct config *cfg, GPtrArray *arr)
{
	g_autofree bool *drop = g_new0(bool, arr->len + 1);

	for (guint i = 0; i < arr->len; i++) {
		struct conf_section *c = arr->pdata[i];
		char err[256];

		rate_bounds_check(cfg, c->where, c->network ? "network" : "interface", c->name,
				  &c->rate);
		if (!c->network && c->net.download)
			client_section(cfg, c);
		if (shape_words_parse((int)c->words->len, (char **)c->words->pdata, &c->req, err,
				   sizeof(err)) < 0) {
			warn(cfg, c->where, 0, "[%s %s]: %s; section skipped",
			     c->network ? "network" : "interface", TEXT_QUOTE(c->name), err);
			drop[i] = true;
		} else if (c->network && !c->net.tunnels) {
			warn(cfg, c->where, 0, "[network %s]: no interface = TUNNEL; "
			     "section skipped", TEXT_QUOTE(c->name));
			drop[i] = true;
		} else if (c->adapt.on && !adapt_check(cfg, c)) {
			c->adapt.on = false; /* shaped as its rates say, not adapted */
		}
	}
	remove_marked(arr, drop);
}

/* After all files: each section's words, parsed as one `set` line. */
static void finish_sections(struct config *cfg)
{
	g_clear_pointer(&cfg->index, g_hash_table_unref);
	finish_array(cfg, cfg->ifaces);
	finish_array(cfg, cfg->networks);
	finish_peers(cfg);
}

int config_parse_data(struct config *cfg, const char *file, const char *data, size_t len)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(GHashTable) at = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GStringChunk) names = g_string_chunk_new(4096);
	struct lines lines = { .at = at, .names = names };
	g_auto(GStrv) groups = NULL;

	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &err)) {
		char says[160 * 8 + 4]; /* GLib's message quotes the line it stopped at */

		warn(cfg, file, 0, "not an INI file (%s); file skipped",
		     text_quote(says, sizeof(says), err->message, 160));
		return -EBADMSG;
	}
	g_ptr_array_add(cfg->files, g_strdup(file));
	lines_scan(&lines, data, len);
	groups = g_key_file_get_groups(kf, NULL);
	for (size_t i = 0; groups[i]; i++) {
		if (g_str_has_prefix(groups[i], IFACE_PREFIX) ||
		    g_str_has_prefix(groups[i], NETWORK_PREFIX))
			parse_iface_group(cfg, kf, file, &lines, groups[i]);
		else if (!strcmp(groups[i], "daemon"))
			parse_daemon_group(cfg, kf, file, &lines, groups[i]);
		else if (g_str_has_prefix(groups[i], PEER_PREFIX))
			parse_peer_group(cfg, kf, file, &lines, groups[i]);
		else
			warn(cfg, file, line_of(&lines, groups[i], NULL),
			     "unknown section [%s]; skipped (sections: [interface NAME], [network NAME], "
			     "[peer NAME], [daemon])",
			     TEXT_QUOTE(groups[i]));
	}
	return 0;
}

bool config_mode_safe(uid_t uid, gid_t gid, mode_t mode)
{
	return safe_mode(uid, gid, mode);
}

/* Far more than any configuration: a file past this is refused, not read into memory. */
#define CONFIG_MAX_BYTES (32 << 20)

static int errno_why(const char *path, char **why)
{
	int r = -errno;

	*why = g_strdup_printf("%s: %s", path, g_strerror(-r));
	return r;
}

/* safe_stat's, and a file no larger than a configuration needs. */
static int stat_safe(const struct stat *st, const char *path, bool is_dir, char **why)
{
	int r = safe_stat(st, path, is_dir, false, why);

	if (r == 0 && !is_dir && st->st_size > CONFIG_MAX_BYTES) {
		*why = g_strdup_printf("%s: %jd bytes, more than a configuration needs (at most %d "
				       "MiB); refusing it", path, (intmax_t)st->st_size,
				       CONFIG_MAX_BYTES >> 20);
		return -EFBIG;
	}
	return r;
}

/*
 * The open fd, which path names: fit to take orders from (stat_safe), and
 * so is every folder on its resolved path; and that path still leads to it.
 */
static int check_open(int fd, const char *path, bool is_dir, GHashTable *checked, struct stat *st,
		      char **why)
{
	g_autofree char *real = NULL, *parent = NULL;
	struct stat at;
	int r;

	if (fstat(fd, st) < 0)
		return errno_why(path, why);
	r = stat_safe(st, path, is_dir, why);
	if (r < 0)
		return r;
	real = realpath(path, NULL);
	if (!real)
		return errno_why(path, why);
	if (stat(real, &at) < 0 || at.st_dev != st->st_dev || at.st_ino != st->st_ino) {
		*why = g_strdup_printf("%s: replaced while being read; try again", path);
		return -EAGAIN;
	}
	parent = g_path_get_dirname(real);
	return safe_dirs(parent, checked, why);
}

static int read_all(int fd, const char *path, GString *out, char **why)
{
	int r = safe_read(fd, out, CONFIG_MAX_BYTES);

	if (r == -EFBIG)
		*why = g_strdup_printf("%s: grew past %d MiB while being read; refusing it", path,
				       CONFIG_MAX_BYTES >> 20);
	else if (r < 0)
		errno = -r;
	return r == -EFBIG || r == 0 ? r : errno_why(path, why);
}

/*
 * Read name in the folder dirfd (path: how messages name it), opened once:
 * the open file is what is checked and what is read. O_NONBLOCK: opening a
 * FIFO does not wait for a writer (and it is refused, as not regular).
 */
static int load_file(struct config *cfg, int dirfd, const char *name, const char *path,
		     GHashTable *checked, char **why)
{
	g_autoptr(GString) text = NULL;
	struct stat st;
	int fd, r;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno_why(path, why);
	r = check_open(fd, path, false, checked, &st, why);
	if (r == 0) {
		text = g_string_sized_new((size_t)st.st_size + 1);
		r = read_all(fd, path, text, why);
	}
	close(fd);
	if (r < 0)
		return r;
	config_parse_data(cfg, path, text->str, text->len);
	return 0;
}

/* g_ptr_array_sort hands the comparator pointers to the elements. */
static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the *.conf in the open folder fd, in name order. */
static int confd_names(int fd, const char *confd, GPtrArray *names, char **why)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *e;

	if (!d) {
		int r = errno_why(confd, why);

		if (dup_fd >= 0)
			close(dup_fd);
		return r;
	}
	while ((e = readdir(d)))
		if (g_str_has_suffix(e->d_name, ".conf") && strcmp(e->d_name, ".conf"))
			g_ptr_array_add(names, g_strdup(e->d_name));
	closedir(d);
	g_ptr_array_sort(names, cmp_str_ptr);
	return 0;
}

/* conf.d beside the main file, if there is one: checked open, its files read through it. */
static int load_confd(struct config *cfg, const char *dir, GHashTable *checked, char **why)
{
	g_autofree char *confd = g_build_filename(dir, "conf.d", NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	struct stat st;
	int fd, r;

	fd = open(confd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : errno_why(confd, why);
	r = check_open(fd, confd, true, checked, &st, why);
	if (r == 0)
		r = confd_names(fd, confd, names, why);
	for (guint i = 0; r == 0 && i < names->len; i++) {
		g_autofree char *path = g_build_filename(confd, names->pdata[i], NULL);

		r = load_file(cfg, fd, names->pdata[i], path, checked, why);
	}
	close(fd);
	return r;
}

int config_load(const char *path, bool must_exist, struct config **out, char **why)
{
	g_autoptr(config_t) cfg = config_new();
	g_autoptr(GHashTable) checked = NULL;
	g_autofree char *dir = g_path_get_dirname(path);
	int r;

	*why = NULL;
	checked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	r = safe_dirs(dir, checked, why);
	if (r == 0)
		r = load_file(cfg, AT_FDCWD, path, path, checked, why);
	if (r == -ENOENT) {
		g_clear_pointer(why, g_free);
		if (must_exist) {
			*why = g_strdup_printf("%s: no such file", path);
			return r;
		}
		g_ptr_array_add(cfg->warnings, g_strdup_printf("%s: no such file", path));
	} else if (r < 0) {
		return r;
	}
	r = load_confd(cfg, dir, checked, why);
	if (r < 0)
		return r;
	finish_sections(cfg);
	*out = g_steal_pointer(&cfg);
	return 0;
}

/*
 * '*' and '?' over bytes. Not g_pattern_match_simple: that reads UTF-8 and
 * aborts on a pattern or a name that is not (an interface name may be any
 * bytes but '/', ':' and blanks).
 */
static bool glob_match(const char *p, const char *s)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*p == '*') {
			star = p++;
			resume = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else if (star) {
			/* let the last '*' take one byte more and try again */
			p = star + 1;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

const struct conf_section *config_match(const struct config *cfg, const char *ifname)
{
	const struct conf_section *glob = NULL;

	for (guint i = 0; i < cfg->ifaces->len; i++) {
		const struct conf_section *c = cfg->ifaces->pdata[i];

		if (!c->glob && !strcmp(c->name, ifname))
			return c;
		if (c->glob && !glob && glob_match(c->name, ifname))
			glob = c;
	}
	return glob;
}

static bool peer_names(const struct conf_peer *p, const char *ifname, const uint8_t *present,
		       size_t n_present)
{
	if (p->ifaces) {
		for (char **g = p->ifaces; *g; g++)
			if (glob_match(*g, ifname))
				return true;
		return false;
	}
	for (size_t i = 0; i < n_present; i++)
		if (!memcmp(present + i * WG_KEY_LEN, p->key, WG_KEY_LEN))
			return true;
	return false;
}

void config_peers_for(const struct config *cfg, const char *ifname, const uint8_t *present,
		      size_t n_present, GArray *out)
{
	for (guint i = 0; i < cfg->peers->len; i++) {
		const struct conf_peer *p = cfg->peers->pdata[i];
		struct peer_want w = { .rate = p->download };
		g_autofree char *options = NULL;
		struct shape_request req;
		char err[256];

		if (!p->download || !peer_names(p, ifname, present, n_present))
			continue;
		memcpy(w.key, p->key, WG_KEY_LEN);
		g_strlcpy(w.name, p->name, sizeof(w.name));
		snprintf(w.source, sizeof(w.source), "config %s", p->where);
		g_ptr_array_add(p->words, NULL);
		options = g_strjoinv(" ", (char **)p->words->pdata);
		g_ptr_array_remove_index(p->words, p->words->len - 1);
		g_strlcpy(w.options, options, sizeof(w.options));
		/* each word parsed alone when read: together they parse too */
		if (shape_words_parse((int)p->words->len, (char **)p->words->pdata, &req, err,
				      sizeof(err)) == 0)
			w.opts = req.opts;
		g_array_append_val(out, w);
	}
}

/* key's [peer] section for ifname: its key, and no interface = or one that names ifname. */
static const struct conf_peer *peer_of(const struct config *cfg, const char *ifname,
				       const uint8_t *key)
{
	for (guint i = 0; i < cfg->peers->len; i++) {
		const struct conf_peer *p = cfg->peers->pdata[i];

		if (!memcmp(p->key, key, WG_KEY_LEN) && (!p->ifaces || peer_names(p, ifname, NULL, 0)))
			return p;
	}
	return NULL;
}

const char *config_peer_name(const struct config *cfg, const char *ifname, const uint8_t *key)
{
	const struct conf_peer *p = peer_of(cfg, ifname, key);

	return p ? p->name : NULL;
}

void config_rate_policy(const struct config *cfg, const char *ifname, const uint8_t *key,
			struct rate_policy *out)
{
	const struct conf_section *c = config_match(cfg, ifname);
	const struct conf_peer *p = peer_of(cfg, ifname, key);
	struct conf_rate r = c ? c->rate : (struct conf_rate){ .client_download = -1 };

	*out = (struct rate_policy){ 0 };
	if (p) {
		if (p->rate.client_download >= 0)
			r.client_download = p->rate.client_download;
		r.min = p->rate.min ?: r.min;
		r.max = p->rate.max ?: r.max;
		out->fallback = p->download;
	}
	out->allowed = r.client_download == 1;
	out->min = r.min;
	out->max = r.max;
}

bool config_client_download(const struct config *cfg, const char *ifname)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	const struct conf_section *c;

	config_networks_for(cfg, ifname, profs);
	for (guint i = 0; i < profs->len; i++)
		if (((const struct conf_section *)profs->pdata[i])->net.download)
			return true;
	c = profs->len ? NULL : config_match(cfg, ifname);
	return c && c->net.download;
}

void config_networks_for(const struct config *cfg, const char *ifname, GPtrArray *out)
{
	for (guint i = 0; i < cfg->networks->len; i++) {
		struct conf_section *c = cfg->networks->pdata[i];

		for (char **g = c->net.tunnels; g && *g; g++) {
			if (glob_match(*g, ifname)) {
				g_ptr_array_add(out, c);
				break;
			}
		}
	}
}

const struct conf_section *config_network_choose(const GPtrArray *profs,
						 const struct net_view *nets, const char *ifname,
						 char *why, size_t whylen)
{
	g_autofree struct net_match *m = g_new0(struct net_match, profs->len ? profs->len : 1);
	int idx;

	for (guint i = 0; i < profs->len; i++)
		m[i] = ((const struct conf_section *)profs->pdata[i])->net.match;
	idx = profile_choose(m, profs->len, nets->nets, nets->n, ifname, why, whylen);
	return idx < 0 ? NULL : profs->pdata[idx];
}

bool config_mentions(const struct config *cfg, const char *ifname)
{
	g_autoptr(GPtrArray) profs = g_ptr_array_new();

	if (config_match(cfg, ifname))
		return true;
	for (guint i = 0; i < cfg->peers->len; i++) {
		const struct conf_peer *p = cfg->peers->pdata[i];

		for (char **g = p->ifaces; g && *g; g++)
			if (glob_match(*g, ifname))
				return true;
	}
	config_networks_for(cfg, ifname, profs);
	return profs->len > 0;
}

struct config *config_load_logged(const char *path)
{
	struct config *cfg = NULL;
	g_autofree char *why = NULL;
	int r;

	r = config_load(path ? path : CONFIG_DEFAULT_PATH, path != NULL, &cfg, &why);
	if (r < 0) {
		log_err("config: %s", why ? why : strerror(-r));
		return NULL;
	}
	for (guint i = 0; i < cfg->warnings->len; i++)
		log_warn("%s", (const char *)cfg->warnings->pdata[i]);
	return cfg;
}
