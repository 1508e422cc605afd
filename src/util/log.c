// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>
#include <glib.h>

#include "util/log.h"
#include "util/text.h"

static enum log_level max_level = LOG_LVL_INFO;
static bool syslog_prefix;

void log_set_level(enum log_level max)
{
	max_level = max;
}

void log_use_syslog_prefix(bool on)
{
	syslog_prefix = on;
}

/*
 * One line each, written at once: a control character or a byte that is not
 * UTF-8 in what a message quotes (a name, a value from a file) is \xNN.
 */
void log_msg(enum log_level lvl, const char *fmt, ...)
{
	g_autofree char *msg = NULL, *shown = NULL;
	const char *prefix = lvl == LOG_LVL_WARN ? "wgshape: warning: " : "wgshape: ";
	char level[8];
	va_list ap;

	if (lvl > max_level)
		return;
	if (syslog_prefix) {
		snprintf(level, sizeof(level), "<%d>", lvl);
		prefix = level;
	}
	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	shown = text_escape(msg);
	fprintf(stderr, "%s%s\n", prefix, shown);
}
