// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Text goes to stdout as it comes; JSON goes through the wgshape-json.so
 * module (json-glib), loaded by print_begin(true) only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <glib.h>

#include "util/json.h"
#include "util/module.h"
#include "util/print.h"
#include "util/text.h"

/* NULL: text mode */
static const struct json_out *json;
/* set by print_use_json, else loaded */
static const struct json_out *linked;

void print_use_json(const struct json_out *out)
{
	linked = out;
}

int print_begin(bool as_json)
{
	json = NULL;
	if (!as_json)
		return 0;
	if (!linked)
		linked = module_symbol(JSON_MODULE_FILE, JSON_MODULE_SYMBOL);
	if (!linked)
		return -ENOENT;
	json = linked;
	json->begin();
	return 0;
}

int print_end(void)
{
	int r;

	if (!json)
		return fflush(stdout) == 0 ? 0 : -errno;
	r = json->end();
	json = NULL;
	return r;
}

bool print_is_json(void)
{
	return json != NULL;
}

static void text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void text(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

void print_open_object(const char *key)
{
	if (json)
		json->open_object(key);
}

void print_close_object(void)
{
	if (json)
		json->close_object();
}

void print_open_array(const char *key)
{
	if (json)
		json->open_array(key);
}

void print_close_array(void)
{
	if (json)
		json->close_array();
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

/*
 * Strings come from outside (interface, section and file names): in text
 * they are escaped as log lines escape them, so that a name cannot drive the
 * terminal. Escaping is idempotent (a backslash stays), so text that is
 * already escaped is not changed twice.
 */
void print_string(const char *key, const char *fmt, const char *value)
{
	if (!json) {
		if (fmt) {
			g_autofree char *safe = value ? text_escape(value) : NULL;

			text(fmt, safe);
		}
	} else if (key) {
		json->string(key, value);
	}
}

void print_uint(const char *key, const char *fmt, uint64_t value)
{
	if (!json) {
		if (fmt)
			text(fmt, value);
	} else if (key) {
		/* JSON numbers past 2^63 are not what a reader expects: clamp */
		json->integer(key, value > INT64_MAX ? INT64_MAX : (int64_t)value);
	}
}

void print_int(const char *key, const char *fmt, int64_t value)
{
	if (!json) {
		if (fmt)
			text(fmt, value);
	} else if (key) {
		json->integer(key, value);
	}
}

void print_double(const char *key, const char *fmt, double value)
{
	if (!json) {
		if (fmt)
			text(fmt, value);
	} else if (key) {
		json->number(key, value);
	}
}

void print_bool(const char *key, const char *fmt, bool value)
{
	if (!json) {
		if (fmt)
			text(fmt, value ? "yes" : "no");
	} else if (key) {
		json->boolean(key, value);
	}
}

#pragma GCC diagnostic pop

void print_null(const char *key, const char *fmt)
{
	if (!json) {
		if (fmt)
			fputs(fmt, stdout);
	} else if (key) {
		json->null(key);
	}
}

void print_flag(const char *key, bool value, const char *yes, const char *no)
{
	if (!json)
		fputs(value ? yes : no, stdout);
	else if (key)
		json->boolean(key, value);
}

void print_uint_as(const char *key, const char *fmt, uint64_t value, const char *shown)
{
	if (!json)
		print_string(NULL, fmt, shown);
	else
		print_uint(key, NULL, value);
}

void print_text(const char *fmt, ...)
{
	va_list ap;

	if (json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}
