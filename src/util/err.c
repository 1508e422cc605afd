// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>

#include "util/err.h"

int err_say(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	if (!errlen)
		return r;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}
