/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One output path for text and JSON, in the manner of iproute2's
 * print_uint(PRINT_ANY, ...): a command describes each value once, with its
 * JSON member name and its text format, and the same call writes the text
 * (at once, to stdout) or adds the member to a JSON document (written by
 * print_end). The JSON name is the name in the text too where a label shows.
 *
 *   print_begin(json);
 *   print_open_array(NULL);
 *   print_open_object(NULL);
 *   print_string("ifname", "%s:", name);
 *   print_uint("bytes", " Sent %" PRIu64 " bytes", bytes);
 *   print_close_object();
 *   print_close_array();
 *   print_end();
 *
 * A NULL key writes text only; a NULL format writes JSON only; a value in a
 * JSON array takes PRINT_ELEM as its key. JSON values are
 * in base units (bit/s, bytes, microseconds); formats take the value as shown.
 * One output at a time (a command prints one document): state is global.
 */
#ifndef WGSHAPE_UTIL_PRINT_H
#define WGSHAPE_UTIL_PRINT_H

#include <stdbool.h>
#include <stdint.h>

#define PRINT_ELEM ""

/*
 * Begin one output, text or JSON. JSON loads the wgshape-json.so module the
 * first time: -ENOENT (logged) when it cannot, and then nothing is printed.
 */
int print_begin(bool json);
/* Write the JSON document (pretty, one trailing newline); 0 or -errno. */
int print_end(void);
bool print_is_json(void);

/* key names the member inside an object; NULL (or PRINT_ELEM) inside an array or at the top. */
void print_open_object(const char *key);
void print_close_object(void);
void print_open_array(const char *key);
void print_close_array(void);

void print_string(const char *key, const char *fmt, const char *value);
void print_uint(const char *key, const char *fmt, uint64_t value);
void print_int(const char *key, const char *fmt, int64_t value);
void print_double(const char *key, const char *fmt, double value);
/* text: fmt with "yes"/"no" unless a NULL fmt */
void print_bool(const char *key, const char *fmt, bool value);
void print_null(const char *key, const char *text);
/* JSON: true or false; text: the yes or the no words as they are. */
void print_flag(const char *key, bool value, const char *yes, const char *no);
/* A number for JSON whose text is already spelled out (a rate in tc's units). */
void print_uint_as(const char *key, const char *fmt, uint64_t value, const char *shown);
/* Text only. */
void print_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct json_out;
/* JSON through this table (a program that links util/json.c) instead of the module. */
void print_use_json(const struct json_out *out);

#endif
