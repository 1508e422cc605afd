// SPDX-License-Identifier: GPL-2.0-or-later
#include <string.h>
#include <glib.h>

#include "util/ifname.h"

bool ifname_is_valid(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len >= 16 || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (const char *p = name; *p; p++)
		if (*p == '/' || *p == ':' || g_ascii_isspace(*p))
			return false;
	return true;
}
