// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What serve reads from a request's query, without I/O: the client's text
 * (libmicrohttpd has decoded it), so tests/fuzz/fuzz-serve.c fuzzes it.
 */
#include <errno.h>

#include <glib.h>

#include "serve/serve.h"

int serve_parse_seconds(const char *s, double cap, double *out)
{
	char *end;
	double v;

	/* g_ascii_strtod: the C locale's dot whatever the process's locale */
	v = g_ascii_strtod(s, &end);
	if (end == s || *end || !(v > 0))
		return -EINVAL;
	*out = v < cap ? v : cap;
	return 0;
}
