// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <json-glib/json-glib.h>

#include "util/print.h"

/* NULL: text mode */
static JsonBuilder *builder;

void print_begin(bool json)
{
	g_clear_object(&builder);
	if (json)
		builder = json_builder_new();
}

int print_end(void)
{
	JsonNode *root;
	char *out;
	int r = 0;

	if (!builder)
		return fflush(stdout) == 0 ? 0 : -errno;
	root = json_builder_get_root(builder);
	if (root) {
		out = json_to_string(root, TRUE);
		if (puts(out) < 0 || fflush(stdout) != 0)
			r = -errno;
		g_free(out);
		json_node_unref(root);
	}
	g_clear_object(&builder);
	return r;
}

bool print_is_json(void)
{
	return builder != NULL;
}

/* JSON: name the member (not for PRINT_ELEM or a NULL container key); true. */
static bool member(const char *key)
{
	if (key && *key)
		json_builder_set_member_name(builder, key);
	return true;
}

static void text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void text(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

void print_open_object(const char *key)
{
	if (builder && member(key))
		json_builder_begin_object(builder);
}

void print_close_object(void)
{
	if (builder)
		json_builder_end_object(builder);
}

void print_open_array(const char *key)
{
	if (builder && member(key))
		json_builder_begin_array(builder);
}

void print_close_array(void)
{
	if (builder)
		json_builder_end_array(builder);
}

void print_string(const char *key, const char *fmt, const char *value)
{
	if (!builder) {
		if (fmt)
			text(fmt, value);
	} else if (key && member(key)) {
		json_builder_add_string_value(builder, value);
	}
}

void print_uint(const char *key, const char *fmt, uint64_t value)
{
	if (!builder) {
		if (fmt)
			text(fmt, value);
	} else if (key && member(key)) {
		/* JSON numbers past 2^63 are not what a reader expects: clamp */
		json_builder_add_int_value(builder, value > INT64_MAX ? INT64_MAX : (gint64)value);
	}
}

void print_int(const char *key, const char *fmt, int64_t value)
{
	if (!builder) {
		if (fmt)
			text(fmt, value);
	} else if (key && member(key)) {
		json_builder_add_int_value(builder, value);
	}
}

void print_double(const char *key, const char *fmt, double value)
{
	if (!builder) {
		if (fmt)
			text(fmt, value);
	} else if (key && member(key)) {
		json_builder_add_double_value(builder, value);
	}
}

void print_bool(const char *key, const char *fmt, bool value)
{
	if (!builder) {
		if (fmt)
			text(fmt, value ? "yes" : "no");
	} else if (key && member(key)) {
		json_builder_add_boolean_value(builder, value);
	}
}

void print_null(const char *key, const char *fmt)
{
	if (!builder) {
		if (fmt)
			text("%s", fmt);
	} else if (key && member(key)) {
		json_builder_add_null_value(builder);
	}
}

void print_flag(const char *key, bool value, const char *yes, const char *no)
{
	if (!builder)
		fputs(value ? yes : no, stdout);
	else if (key && member(key))
		json_builder_add_boolean_value(builder, value);
}

void print_uint_as(const char *key, const char *fmt, uint64_t value, const char *shown)
{
	if (!builder)
		print_string(NULL, fmt, shown);
	else
		print_uint(key, NULL, value);
}

#pragma GCC diagnostic pop

void print_text(const char *fmt, ...)
{
	va_list ap;

	if (builder)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}
