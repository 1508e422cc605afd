// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"

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

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if (lvl > max_level)
		return;
	if (syslog_prefix)
		fprintf(stderr, "<%d>", lvl);
	else if (lvl == LOG_LVL_WARN)
		fputs("wgshape: warning: ", stderr);
	else
		fputs("wgshape: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
