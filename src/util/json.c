// SPDX-License-Identifier: GPL-2.0-or-later
/* The JSON side of util/print.h, with json-glib: the wgshape-json.so module. */
#include <errno.h>
#include <stdio.h>
#include <json-glib/json-glib.h>

#include "util/json.h"

static JsonBuilder *builder;

/*
 * JSON text is UTF-8, and json-glib writes a string's bytes as they are: a
 * byte that is not UTF-8 (in an interface, file or section name) is written
 * as the text \xNN, as the warnings show it. NULL when s is fine as it is.
 */
static char *utf8_or_escaped(const char *s)
{
	const char *bad;
	GString *out;

	if (!s || g_utf8_validate(s, -1, &bad))
		return NULL;
	out = g_string_new(NULL);
	do {
		g_string_append_len(out, s, bad - s);
		g_string_append_printf(out, "\\x%02x", (unsigned char)*bad);
		s = bad + 1;
	} while (!g_utf8_validate(s, -1, &bad));
	g_string_append(out, s);
	return g_string_free(out, FALSE);
}

static void member(const char *key)
{
	g_autofree char *fixed = utf8_or_escaped(key);

	if (key && *key)
		json_builder_set_member_name(builder, fixed ? fixed : key);
}

static void begin(void)
{
	g_clear_object(&builder);
	builder = json_builder_new();
}

static int end(void)
{
	JsonNode *root = json_builder_get_root(builder);
	int r = 0;

	if (root) {
		char *out = json_to_string(root, TRUE);

		if (puts(out) < 0 || fflush(stdout) != 0)
			r = -errno;
		g_free(out);
		json_node_unref(root);
	}
	g_clear_object(&builder);
	return r;
}

static void open_object(const char *key)
{
	member(key);
	json_builder_begin_object(builder);
}

static void close_object(void)
{
	json_builder_end_object(builder);
}

static void open_array(const char *key)
{
	member(key);
	json_builder_begin_array(builder);
}

static void close_array(void)
{
	json_builder_end_array(builder);
}

static void string(const char *key, const char *value)
{
	g_autofree char *fixed = utf8_or_escaped(value);

	member(key);
	json_builder_add_string_value(builder, fixed ? fixed : value);
}

static void integer(const char *key, int64_t value)
{
	member(key);
	json_builder_add_int_value(builder, value);
}

static void number(const char *key, double value)
{
	member(key);
	json_builder_add_double_value(builder, value);
}

static void boolean(const char *key, bool value)
{
	member(key);
	json_builder_add_boolean_value(builder, value);
}

static void null(const char *key)
{
	member(key);
	json_builder_add_null_value(builder);
}

__attribute__((visibility("default"))) const struct json_out wgshape_json_out = {
	.begin = begin,
	.end = end,
	.open_object = open_object,
	.close_object = close_object,
	.open_array = open_array,
	.close_array = close_array,
	.string = string,
	.integer = integer,
	.number = number,
	.boolean = boolean,
	.null = null,
};
