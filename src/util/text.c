// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdbool.h>
#include <string.h>
#include <glib.h>

#include "util/text.h"

static bool is_control(gunichar c)
{
	return c < 0x20 || (c >= 0x7f && c < 0xa0);
}

/* s escaped onto out; past max characters (0: no limit), "..." instead of the rest. */
static void escape(GString *out, const char *s, size_t max)
{
	for (size_t n = 0; *s; n++) {
		gunichar c = g_utf8_get_char_validated(s, -1);
		const char *next = c < (gunichar)-2 ? g_utf8_next_char(s) : s + 1;

		if (max && n == max) {
			g_string_append(out, "...");
			return;
		}
		if (c >= (gunichar)-2 || is_control(c)) {
			for (; s < next; s++)
				g_string_append_printf(out, "\\x%02x", (unsigned char)*s);
		} else {
			g_string_append_len(out, s, next - s);
			s = next;
		}
	}
}

char *text_escape(const char *s)
{
	GString *out = g_string_new(NULL);

	escape(out, s, 0);
	return g_string_free(out, FALSE);
}

const char *text_quote(char *buf, size_t size, const char *s, size_t max)
{
	g_autoptr(GString) out = g_string_new(NULL);

	escape(out, s ? s : "", max);
	g_strlcpy(buf, out->str, size);
	return buf;
}

bool text_copy(char *buf, size_t size, const char *s)
{
	size_t n;

	s = s ? s : "";
	n = strlen(s);
	if (!size)
		return n > 0;
	if (n < size) {
		memcpy(buf, s, n + 1);
		return false;
	}
	n = size - 1;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80) /* s[n] continues a character */
		n--;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return true;
}
