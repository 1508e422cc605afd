/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the configuration's files share among themselves: keys.c (the table
 * of keys and their typed parsers), parse.c (a file's text into sections),
 * check.c (what holds only once every file is read), files.c (which files,
 * read safely) and match.c (the questions the rest of wgshape asks).
 */
#ifndef WGSHAPE_CONFIG_INTERNAL_H
#define WGSHAPE_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "config/config.h"

/* The kinds of section, as bits: a key's row says in which it is a key. */
enum {
	SEC_IFACE = 1 << 0, /* [interface NAME] */
	SEC_NETWORK = 1 << 1, /* [network NAME] */
	SEC_PEER = 1 << 2, /* [peer NAME] */
	SEC_DAEMON = 1 << 3, /* [daemon] */
	SEC_SHAPE = SEC_IFACE | SEC_NETWORK, /* both are struct conf_section */
};

/* One assignment, as a parser sees it. */
struct conf_value {
	GKeyFile *kf;
	const char *group, *key;
	const char *text; /* the value, trailing blanks dropped; NULL: GKeyFile gives none */
	bool lone_backslash; /* the value ends in one: not for GLib to parse (parse.c) */
	GPtrArray *words; /* the section's cake options as set's words (not in [daemon]) */
	char *bad; /* set by a parser (parse.c frees it): the part of the value to quote */
	char why[256]; /* set by a parser: what was expected ("not yes or no") */
};

struct conf_key;

/*
 * Parse v into dst (the row's field of the section's struct): 0; -EINVAL when
 * the value is not what the key takes, -ENODATA when there is no value to
 * read; either way v->why says why and dst is untouched.
 */
typedef int conf_parser(const struct conf_key *k, struct conf_value *v, void *dst);

/* One key of one or more kinds of section: the configuration is these rows. */
struct conf_key {
	const char *key;
	unsigned int sections; /* SEC_* */
	conf_parser *parse;
	size_t offset; /* of dst in struct conf_section, conf_peer or config */
	uint64_t lo, hi; /* numbers: the range */
	const char *expect; /* instead of the parser's own "not ..." */
	bool list; /* GKeyFile's a;b list: the parser reads the value itself */
	int family; /* cake's words: the family of the value's word (enum cake_family) */
	const char *more; /* yes/no words: a value besides yes and no ... */
	uint32_t more_value; /* ... and the family's value it stands for */
	const char *renamed; /* an old spelling: the key's name now (read, with a warning) */
};

/* The row for key in a section of kind sec (SEC_*), or NULL: an unknown key. */
const struct conf_key *conf_key_find(unsigned int sec, const char *key);

/* What a section of kind sec takes besides cake's options, for a warning ("a, b and c"). */
char *conf_keys_named(unsigned int sec);

/* A warning with file:line (none when line is 0), escaped to one line of text. */
void conf_warn(struct config *cfg, const char *file, unsigned int line, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

/*
 * config_parse_data without its warning: -EBADMSG, *err set, when the text is
 * not INI at all (nothing of it added to cfg).
 */
int conf_parse(struct config *cfg, const char *file, const char *data, size_t len, GError **err);

/* The warning for a file that is not INI (err: GKeyFile's), then what became of it. */
void conf_warn_not_ini(struct config *cfg, const char *file, const GError *err, const char *then);

/* After every file: what holds only for the whole (check.c). */
void config_finish(struct config *cfg);

#endif
