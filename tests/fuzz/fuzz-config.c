/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for wgshape.conf. The bytes are one file or, split in two,
 * two files merged as config_load merges conf.d. Beyond not crashing: every
 * warning names its file and is one line of UTF-8 text with no control
 * character (a terminal shows it, JSON carries it), each section is found by
 * its own name, and what a section kept is set's words, which set's parser
 * reads as config_load does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "config/config.h"
#include "shape/words.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* GLib's criticals are misuse of GLib by us: crash on them. */
	g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
	return 0;
}

static const char *const names[] = {
	"wg0", "wg1", "wg10", "eth0", "w", "*", "?", "123456789012345", "", "wg\xff", "\xc3\xa9",
	"wg0\xe0",
};

/* The plain recursive glob, to check config.c's loop against. */
static bool ref_match(const char *p, const char *s)
{
	if (!*p)
		return !*s;
	if (*p == '*') {
		while (p[1] == '*') /* "**" is "*", and not exponential */
			p++;
		return ref_match(p + 1, s) || (*s && ref_match(p, s + 1));
	}
	return *s && (*p == '?' || *p == *s) && ref_match(p + 1, s + 1);
}

static void check(const struct config *cfg)
{
	for (guint i = 0; i < cfg->warnings->len; i++) {
		const char *w = cfg->warnings->pdata[i];

		require(g_str_has_prefix(w, "a.conf") || g_str_has_prefix(w, "b.conf"));
		require(g_utf8_validate(w, -1, NULL));
		for (const char *p = w; *p; p++)
			require((unsigned char)*p >= 0x20 && *p != 0x7f);
	}
	for (guint i = 0; i < cfg->ifaces->len; i++) {
		const struct conf_section *c = cfg->ifaces->pdata[i];
		struct shape_request req;
		char err[256];

		require(c->name && c->where && c->words);
		require(c->glob == (strpbrk(c->name, "*?") != NULL));
		require(c->enforce >= -1 && c->enforce <= 1);
		/* one section per name, and an exact name finds its own */
		for (guint j = 0; j < i; j++)
			require(strcmp(c->name, ((struct conf_section *)cfg->ifaces->pdata[j])->name));
		if (!c->glob)
			require(config_match(cfg, c->name) == c);
		else
			require(config_match(cfg, c->name) != NULL);
		/* as finish_sections does; a clash of keys is allowed, a crash not */
		err[0] = '\0';
		if (shape_words_parse((int)c->words->len, (char **)c->words->pdata, &req, err,
				   sizeof(err)) < 0)
			require(err[0] != '\0');
	}
	for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
		const struct conf_section *c = config_match(cfg, names[i]), *want = NULL;

		/* an exact name first, else the first glob that matches */
		for (guint j = 0; j < cfg->ifaces->len && !want; j++) {
			const struct conf_section *e = cfg->ifaces->pdata[j];

			if (!e->glob && !strcmp(e->name, names[i]))
				want = e;
		}
		for (guint j = 0; j < cfg->ifaces->len && !want; j++) {
			const struct conf_section *e = cfg->ifaces->pdata[j];

			if (e->glob && ref_match(e->name, names[i]))
				want = e;
		}
		require(c == want);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(config_t) one = config_new();
	g_autoptr(config_t) two = config_new();
	size_t cut;

	config_parse_data(one, "a.conf", (const char *)data, size);
	check(one);

	/* A form feed, unlikely in a config, marks where the second file begins. */
	cut = size;
	for (size_t i = 0; i < size; i++) {
		if (data[i] == '\f') {
			cut = i;
			break;
		}
	}
	if (cut < size) {
		config_parse_data(two, "a.conf", (const char *)data, cut);
		config_parse_data(two, "b.conf", (const char *)data + cut + 1, size - cut - 1);
		check(two);
	}
	return 0;
}
