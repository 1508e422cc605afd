// SPDX-License-Identifier: GPL-2.0-or-later
#include <math.h>

#include "util/svg.h"

void svg_begin(GString *s, double width, double height)
{
	g_string_append_printf(s, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
			       "height='%.0f' font-family='sans-serif' font-size='12'>\n"
			       "<rect width='100%%' height='100%%' fill='white'/>\n", width, height);
}

void svg_frame(GString *s, double x0, double y0, double w, double h)
{
	g_string_append_printf(s, "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' "
			       "fill='none' stroke='#888'/>\n", x0, y0, w, h);
}

double svg_tick_step(double span, int n)
{
	double raw = span / n, mag = pow(10, floor(log10(raw)));

	return raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
}

void svg_text(GString *s, const char *text)
{
	g_autofree char *valid = g_utf8_make_valid(text, -1);

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);

		switch (c) {
		case '<':
			g_string_append(s, "&lt;");
			break;
		case '>':
			g_string_append(s, "&gt;");
			break;
		case '&':
			g_string_append(s, "&amp;");
			break;
		case '\'':
			g_string_append(s, "&apos;");
			break;
		case '"':
			g_string_append(s, "&quot;");
			break;
		default:
			g_string_append_unichar(s, g_unichar_iscntrl(c) ? 0xfffd : c);
		}
	}
}
