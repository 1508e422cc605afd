/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Between util/print.c (in every wgshape) and util/json.c (the
 * wgshape-json.so module, linked with json-glib): one JSON document, built
 * as print's calls come and written to stdout at the end. A NULL or empty
 * key adds to an array (or is the top).
 */
#ifndef WGSHAPE_UTIL_JSON_H
#define WGSHAPE_UTIL_JSON_H

#include <stdbool.h>
#include <stdint.h>

#define JSON_MODULE_FILE "wgshape-json.so"
#define JSON_MODULE_SYMBOL "wgshape_json_out"

struct json_out {
	void (*begin)(void);
	int (*end)(void); /* 0 or -errno */
	void (*open_object)(const char *key);
	void (*close_object)(void);
	void (*open_array)(const char *key);
	void (*close_array)(void);
	void (*string)(const char *key, const char *value);
	void (*integer)(const char *key, int64_t value);
	void (*number)(const char *key, double value);
	void (*boolean)(const char *key, bool value);
	void (*null)(const char *key);
};

/* The module's table, for a program (a test) that links util/json.c itself. */
extern const struct json_out wgshape_json_out;

#endif
