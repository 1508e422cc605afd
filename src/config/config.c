// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "shape/cake.h"
#include "shape/words.h"
#include "util/log.h"
#include "shape/state.h"
#include "util/ifname.h"

#define IFACE_PREFIX "interface "
#define NETWORK_PREFIX "network "

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
	g_free(c);
}

struct config *config_new(void)
{
	struct config *cfg = g_new0(struct config, 1);

	cfg->ifaces = g_ptr_array_new_with_free_func(conf_section_free);
	cfg->networks = g_ptr_array_new_with_free_func(conf_section_free);
	cfg->warnings = g_ptr_array_new_with_free_func(g_free);
	cfg->files = g_ptr_array_new_with_free_func(g_free);
	cfg->enforce = true;
	return cfg;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	g_ptr_array_unref(cfg->ifaces);
	g_ptr_array_unref(cfg->networks);
	g_ptr_array_unref(cfg->warnings);
	g_ptr_array_unref(cfg->files);
	g_free(cfg);
}

static void warn(struct config *cfg, const char *file, unsigned int line, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

static void warn(struct config *cfg, const char *file, unsigned int line, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_ptr_array_add(cfg->warnings, line ? g_strdup_printf("%s:%u: %s", file, line, msg)
					    : g_strdup_printf("%s: %s", file, msg));
}

/*
 * GKeyFile keeps no line numbers: find them in the text. Returns the line of
 * the last "key =" in group, or of the group header when key is NULL; 0 if
 * not found.
 */
static unsigned int line_of(const char *data, size_t len, const char *group, const char *key)
{
	g_autofree char *text = g_strndup(data, len);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	unsigned int found = 0;
	bool in_group = false;

	for (unsigned int i = 0; lines[i]; i++) {
		g_autofree char *l = g_strstrip(g_strdup(lines[i]));
		size_t n = strlen(l);

		if (l[0] == '[' && n >= 2 && l[n - 1] == ']') {
			in_group = n - 2 == strlen(group) && !strncmp(l + 1, group, n - 2);
			if (in_group && !key)
				return i + 1;
			continue;
		}
		/* GKeyFile's only comment is '#': "; x = 1" is a key named "; x" */
		if (!in_group || !key || l[0] == '#')
			continue;
		if (!strncmp(l, key, strlen(key))) {
			const char *p = l + strlen(key);

			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '=')
				found = i + 1;
		}
	}
	return found;
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
 * last value each time): look at each key once.
 */
static bool seen_before(char **keys, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(keys[j], keys[i]))
			return true;
	return false;
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
	KEY_VALUE_IS_WORD, /* the value alone is set's word (diffserv = diffserv4) */
	KEY_BOOL_WORDS, /* yes/no -> one of two words */
	KEY_ACK, /* no/yes/aggressive */
	KEY_ENFORCE,
};

static const struct {
	const char *key;
	enum key_kind kind;
	const char *yes, *no; /* KEY_BOOL_WORDS */
} iface_keys[] = {
	{ "egress", KEY_WORD_VALUE },
	{ "ingress", KEY_WORD_VALUE },
	{ "overhead", KEY_WORD_VALUE },
	{ "link-overhead", KEY_WORD_VALUE },
	{ "mpu", KEY_WORD_VALUE },
	{ "rtt", KEY_WORD_VALUE },
	{ "memlimit", KEY_WORD_VALUE },
	{ "diffserv", KEY_VALUE_IS_WORD },
	{ "nat", KEY_BOOL_WORDS, "nat", "nonat" },
	{ "wash", KEY_BOOL_WORDS, "wash", "nowash" },
	{ "ack-filter", KEY_ACK },
	{ "enforce", KEY_ENFORCE },
};

/* Turn key = value into set's words; NULL words with *err set when bad. */
static int key_words(size_t k, const char *v, const char *words[2], int *n, char *err,
		     size_t errlen)
{
	bool b;

	*n = 0;
	switch (iface_keys[k].kind) {
	case KEY_WORD_VALUE:
		words[0] = iface_keys[k].key;
		words[1] = v;
		*n = 2;
		break;
	case KEY_VALUE_IS_WORD:
		if (cake_diffserv_from_name(v) < 0) {
			char names[96];

			snprintf(err, errlen, "not one of %s",
				 cake_diffserv_choices(", ", names, sizeof(names)));
			return -EINVAL;
		}
		words[(*n)++] = v;
		break;
	case KEY_BOOL_WORDS:
		if (parse_bool(v, &b) < 0) {
			snprintf(err, errlen, "not yes or no");
			return -EINVAL;
		}
		words[(*n)++] = b ? iface_keys[k].yes : iface_keys[k].no;
		break;
	case KEY_ACK:
		if (!strcmp(v, "aggressive"))
			words[(*n)++] = "ack-filter-aggressive";
		else if (parse_bool(v, &b) == 0)
			words[(*n)++] = b ? "ack-filter" : "no-ack-filter";
		else {
			snprintf(err, errlen, "not yes, no or aggressive");
			return -EINVAL;
		}
		break;
	case KEY_ENFORCE:
		break;
	}
	return 0;
}

static struct conf_section *section_get(GPtrArray *arr, const char *name, const char *where,
				      bool network)
{
	struct conf_section *c;

	for (guint i = 0; i < arr->len; i++) {
		c = arr->pdata[i];
		if (!strcmp(c->name, name))
			return c;
	}
	c = g_new0(struct conf_section, 1);
	c->name = g_strdup(name);
	c->glob = !network && strpbrk(name, "*?") != NULL;
	c->network = network;
	c->net.match.any = network && !strcmp(name, "*");
	c->where = g_strdup(where);
	c->words = g_ptr_array_new_with_free_func(g_free);
	c->enforce = -1;
	g_ptr_array_add(arr, c);
	return c;
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
	if (escape_at_end(kf, group, key)) {
		warn(cfg, file, line, "%s: ends in a lone backslash; skipped", key);
		return true;
	}
	values = g_key_file_get_string_list(kf, group, key, NULL, NULL);
	if (!values || !values[0]) {
		warn(cfg, file, line, "%s: no value; skipped", key);
		return true;
	}
	for (char **v = values; *v; v++) {
		g_strstrip(*v);
		if (!strcmp(key, "interface") && !ifname_is_valid(*v) && !strpbrk(*v, "*?")) {
			warn(cfg, file, line, "interface = '%s': not an interface name or glob; "
			     "skipped", *v);
			return true;
		}
	}
	dst = (char ***)((char *)c + network_keys[k].off);
	g_strfreev(*dst);
	*dst = g_steal_pointer(&values);
	return true;
}

static void parse_iface_group(struct config *cfg, GKeyFile *kf, const char *file,
			      const char *data, size_t len, const char *group)
{
	bool network = g_str_has_prefix(group, NETWORK_PREFIX);
	const char *name = group + strlen(network ? NETWORK_PREFIX : IFACE_PREFIX);
	g_autofree char *where = g_strdup_printf("%s:%u", file, line_of(data, len, group, NULL));
	g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);
	struct conf_section *c;
	char err[256];

	if (!network && !ifname_is_valid(name) && !strpbrk(name, "*?")) {
		warn(cfg, file, line_of(data, len, group, NULL),
		     "[%s]: '%s' is not an interface name or glob; section skipped", group, name);
		return;
	}
	if (network && !*name) {
		warn(cfg, file, line_of(data, len, group, NULL), "[%s]: a profile needs a name; "
		     "section skipped", group);
		return;
	}
	c = section_get(network ? cfg->networks : cfg->ifaces, name, where, network);
	for (size_t i = 0; keys && keys[i]; i++) {
		unsigned int line;
		g_autofree char *v = NULL;
		const char *words[2];
		struct shape_request probe;
		size_t k;
		int n;

		if (seen_before(keys, i))
			continue;
		line = line_of(data, len, group, keys[i]);
		if (network && parse_network_key(cfg, c, kf, group, keys[i], file, line))
			continue;
		v = get_value(kf, group, keys[i]);
		for (k = 0; k < G_N_ELEMENTS(iface_keys); k++)
			if (!strcmp(keys[i], iface_keys[k].key))
				break;
		if (k == G_N_ELEMENTS(iface_keys)) {
			warn(cfg, file, line, "unknown key '%s' (= '%s') in [%s]; skipped", keys[i],
			     v ? v : "", group);
			continue;
		}
		if (!v) {
			warn(cfg, file, line, "%s: unreadable value (a lone backslash at its end, "
			     "or an escape GLib does not know); skipped", keys[i]);
			continue;
		}
		if (iface_keys[k].kind == KEY_ENFORCE) {
			bool b;

			if (parse_bool(v, &b) < 0)
				warn(cfg, file, line, "enforce = '%s': not yes or no; skipped", v);
			else
				c->enforce = b;
			continue;
		}
		if (key_words(k, v, words, &n, err, sizeof(err)) < 0 ||
		    shape_words_parse(n, (char **)words, &probe, err, sizeof(err)) < 0) {
			warn(cfg, file, line, "%s = '%s': %s; skipped", keys[i], v, err);
			continue;
		}
		for (int w = 0; w < n; w++)
			g_ptr_array_add(c->words, g_strdup(words[w]));
	}
}

static void parse_daemon_group(struct config *cfg, GKeyFile *kf, const char *file,
			       const char *data, size_t len, const char *group)
{
	g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);

	for (size_t i = 0; keys && keys[i]; i++) {
		unsigned int line;
		g_autofree char *v = NULL;
		bool *dst = NULL, b;

		if (seen_before(keys, i))
			continue;
		line = line_of(data, len, group, keys[i]);
		v = get_value(kf, group, keys[i]);
		if (!strcmp(keys[i], "enforce"))
			dst = &cfg->enforce;
		else if (!strcmp(keys[i], "clear-on-exit"))
			dst = &cfg->clear_on_exit;
		if (!dst) {
			warn(cfg, file, line, "unknown key '%s' (= '%s') in [daemon]; skipped", keys[i],
			     v ? v : "");
			continue;
		}
		if (!v || parse_bool(v, &b) < 0) {
			warn(cfg, file, line, "%s = '%s': not yes or no; skipped", keys[i],
			     v ? v : "");
			continue;
		}
		*dst = b;
	}
}

/* After all files: each section's words, parsed as one `set` line. */
static void finish_array(struct config *cfg, GPtrArray *arr)
{
	for (guint i = 0; i < arr->len; i++) {
		struct conf_section *c = arr->pdata[i];
		char err[256];

		if (shape_words_parse((int)c->words->len, (char **)c->words->pdata, &c->req, err,
				   sizeof(err)) < 0) {
			g_ptr_array_add(cfg->warnings,
					g_strdup_printf("%s: [%s %s]: %s; section skipped", c->where,
							c->network ? "network" : "interface",
							c->name, err));
			g_ptr_array_remove_index(arr, i--);
		} else if (c->network && !c->net.tunnels) {
			g_ptr_array_add(cfg->warnings,
					g_strdup_printf("%s: [network %s]: no interface = TUNNEL; "
							"section skipped", c->where, c->name));
			g_ptr_array_remove_index(arr, i--);
		}
	}
}

/* After all files: each section's words, parsed as one `set` line. */
static void finish_sections(struct config *cfg)
{
	finish_array(cfg, cfg->ifaces);
	finish_array(cfg, cfg->networks);
}

int config_parse_data(struct config *cfg, const char *file, const char *data, size_t len)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) groups = NULL;

	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &err)) {
		warn(cfg, file, 0, "not an INI file (%s); file skipped", err->message);
		return -EBADMSG;
	}
	g_ptr_array_add(cfg->files, g_strdup(file));
	groups = g_key_file_get_groups(kf, NULL);
	for (size_t i = 0; groups[i]; i++) {
		if (g_str_has_prefix(groups[i], IFACE_PREFIX) ||
		    g_str_has_prefix(groups[i], NETWORK_PREFIX))
			parse_iface_group(cfg, kf, file, data, len, groups[i]);
		else if (!strcmp(groups[i], "daemon"))
			parse_daemon_group(cfg, kf, file, data, len, groups[i]);
		else
			warn(cfg, file, line_of(data, len, groups[i], NULL),
			     "unknown section [%s]; skipped (sections: [interface NAME], [network NAME], "
			     "[daemon])",
			     groups[i]);
	}
	return 0;
}

bool config_mode_safe(uid_t uid, gid_t gid, mode_t mode)
{
	if (mode & S_IWOTH)
		return false;
	if ((mode & S_IWGRP) && gid != 0)
		return false;
	if ((mode & S_IWUSR) && uid != 0)
		return false;
	return true;
}

static int check_safe(const char *path, bool is_dir, char **why)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		int r = -errno;

		*why = g_strdup_printf("%s: %s", path, g_strerror(-r));
		return r;
	}
	if (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		*why = g_strdup_printf("%s: not a %s", path, is_dir ? "folder" : "regular file");
		return -EINVAL;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		/* Its owner can chmod it at will, whatever the mode says now. */
		*why = g_strdup_printf("%s: owned by uid %u, who could change it at will; refusing "
				       "to take orders from it (chown root)",
				       path, (unsigned int)st.st_uid);
		return -EPERM;
	}
	if (!config_mode_safe(st.st_uid, st.st_gid, st.st_mode)) {
		*why = g_strdup_printf("%s: writable by someone other than root (owner %u, group "
				       "%u, mode %04o); refusing to take orders from it",
				       path, (unsigned int)st.st_uid, (unsigned int)st.st_gid,
				       (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* g_ptr_array_sort hands the comparator pointers to the elements. */
static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_file(struct config *cfg, const char *path, char **why)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *data = NULL;
	gsize len;
	int r;

	r = check_safe(path, false, why);
	if (r < 0)
		return r;
	if (!g_file_get_contents(path, &data, &len, &err)) {
		*why = g_strdup_printf("%s: %s", path, err->message);
		return -EIO;
	}
	config_parse_data(cfg, path, data, len);
	return 0;
}

int config_load(const char *path, bool must_exist, struct config **out, char **why)
{
	g_autoptr(config_t) cfg = config_new();
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *confd = g_build_filename(dir, "conf.d", NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GDir) d = NULL;
	const char *name;
	int r;

	*why = NULL;
	r = check_safe(dir, true, why);
	if (r == -ENOENT)
		g_clear_pointer(why, g_free);
	else if (r < 0)
		return r;
	r = load_file(cfg, path, why);
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

	d = g_dir_open(confd, 0, NULL);
	if (d) {
		r = check_safe(confd, true, why);
		if (r < 0)
			return r;
		while ((name = g_dir_read_name(d)))
			if (g_str_has_suffix(name, ".conf"))
				g_ptr_array_add(names, g_build_filename(confd, name, NULL));
		g_ptr_array_sort(names, cmp_str_ptr);
	}
	for (guint i = 0; i < names->len; i++) {
		r = load_file(cfg, names->pdata[i], why);
		if (r < 0)
			return r;
	}
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
