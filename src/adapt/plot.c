// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The trace as SVG, in tune's chart's look (util/svg.h): white, sans-serif
 * 12, a grey frame with light grid lines, rates in blue and delays in red.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "adapt/trace.h"
#include "util/svg.h"

#define W 720.0 /* the chart's width */
#define L 60.0 /* left margin: the axes' numbers */
#define R 20.0
#define TOP 36.0 /* the title */
#define PANEL 390.0 /* a direction's height */
#define RATE_Y 40.0 /* within a panel: the rate's area */
#define RATE_H 170.0
#define DELAY_Y (RATE_Y + RATE_H + 18) /* and the delay's, under it */
#define DELAY_H 110.0

#define RATE_COLOUR "#36c"
#define LOAD_COLOUR "#999"
#define DELAY_COLOUR "#c33"
#define LOST_COLOUR "#333"

/* One area of a panel: where it sits, and the values its edges stand for. */
struct area {
	double x0, y0, w, h;
	double t0, t1; /* s, along x */
	double v0, v1; /* up y: Mbit/s or ms */
};

static double area_x(const struct area *a, double t)
{
	return a->x0 + (t - a->t0) / (a->t1 - a->t0) * a->w;
}

static double area_y(const struct area *a, double v)
{
	return a->y0 + a->h - (v - a->v0) / (a->v1 - a->v0) * a->h;
}

/*
 * A polyline thinned to what a pixel column shows: of each half-pixel
 * column's points, the first, the least, the greatest and the last, in
 * their order. A day's trace (1.7 million samples a direction) stays a
 * few thousand points.
 */
struct pen_point {
	double x, y;
	size_t i; /* the order it came in */
};

struct pen {
	GString *s;
	bool open; /* a column is being gathered */
	long col;
	struct pen_point first, lo, hi, last;
	size_t i;
};

static void pen_flush(struct pen *p)
{
	struct pen_point pts[4] = { p->first, p->lo, p->hi, p->last }, tmp;

	if (!p->open)
		return;
	if (pts[1].i > pts[2].i) {
		tmp = pts[1];
		pts[1] = pts[2];
		pts[2] = tmp;
	}
	for (int k = 0; k < 4; k++)
		if (k == 0 || pts[k].i != pts[k - 1].i)
			g_string_append_printf(p->s, "%.1f,%.1f ", pts[k].x, pts[k].y);
	p->open = false;
}

static void pen_to(struct pen *p, double x, double y)
{
	long col = lround(x * 2);

	if (p->open && col != p->col)
		pen_flush(p);
	p->i++;
	if (!p->open) {
		p->open = true;
		p->col = col;
		p->first.x = p->lo.x = p->hi.x = x;
		p->first.y = p->lo.y = p->hi.y = y;
		p->first.i = p->lo.i = p->hi.i = p->i;
	} else if (y < p->lo.y) {
		p->lo.x = x, p->lo.y = y, p->lo.i = p->i;
	} else if (y > p->hi.y) {
		p->hi.x = x, p->hi.y = y, p->hi.i = p->i;
	}
	p->last.x = x, p->last.y = y, p->last.i = p->i;
}

static void pen_begin(struct pen *p, GString *s, const char *attrs)
{
	*p = (struct pen){ .s = s };
	g_string_append_printf(s, "<polyline fill='none' %s points='", attrs);
}

static void pen_end(struct pen *p)
{
	pen_flush(p);
	g_string_append(p->s, "'/>\n");
}

/* Time in the unit that keeps its numbers short. */
static double time_unit(double span, const char **name)
{
	if (span <= 300) {
		*name = "s";
		return 1;
	}
	if (span <= 3 * 3600) {
		*name = "min";
		return 60;
	}
	*name = "h";
	return 3600;
}

/* The frame, grid and numbers of one area; with_time: the time's numbers under it. */
static void area_axes(GString *s, const struct area *a, const char *label, const char *colour,
		      bool with_time)
{
	const char *unit;
	double div = time_unit(a->t1 - a->t0, &unit);
	double st = svg_tick_step((a->t1 - a->t0) / div, 8), bottom = a->y0 + a->h;
	int k = 0;

	svg_frame(s, a->x0, a->y0, a->w, a->h);
	/* k: a bound, should a step be below the numbers' precision */
	for (double m = ceil(a->t0 / div / st) * st; m <= a->t1 / div + st * 1e-9 && k < 40;
	     m += st, k++) {
		double x = area_x(a, m * div);

		g_string_append_printf(s, "<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' "
				       "stroke='#ddd'/>\n", x, a->y0, x, bottom);
		if (with_time)
			g_string_append_printf(s, "<text x='%.1f' y='%.0f' "
					       "text-anchor='middle'>%g</text>\n", x, bottom + 16,
					       m);
	}
	if (with_time)
		g_string_append_printf(s, "<text x='%.0f' y='%.0f' text-anchor='middle'>time, "
				       "%s</text>\n", a->x0 + a->w / 2, bottom + 34, unit);
	st = svg_tick_step(a->v1 - a->v0, 5);
	for (double m = ceil(a->v0 / st) * st; m <= a->v1 + st * 1e-9 && k < 80; m += st, k++) {
		double y = area_y(a, m);

		if (m > a->v0)
			g_string_append_printf(s, "<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' "
					       "stroke='%s'/>\n", a->x0, y, a->x0 + a->w, y,
					       fabs(m) < st * 1e-9 ? "#888" : "#ddd");
		g_string_append_printf(s, "<text x='%.0f' y='%.1f' fill='%s' "
				       "text-anchor='end'>%g</text>\n", a->x0 - 6, y + 4, colour,
				       fabs(m) < st * 1e-9 ? 0 : m);
	}
	g_string_append_printf(s, "<text x='%.0f' y='%.0f' fill='%s' font-size='10'>%s</text>\n",
			       a->x0, a->y0 - 4, colour, label);
}

/* The panel's key, on its name's line. */
static void legend(GString *s, double x, double y)
{
	static const struct {
		const char *name, *line;
		double w;
	} keys[] = {
		{ "rate", "stroke='" RATE_COLOUR "' stroke-width='1.5'", 70 },
		{ "sent", "stroke='" LOAD_COLOUR "' stroke-width='0.8'", 70 },
		{ "added delay", "stroke='" DELAY_COLOUR "'", 110 },
	};

	for (size_t k = 0; k < G_N_ELEMENTS(keys); x += keys[k].w, k++)
		g_string_append_printf(s, "<line x1='%.0f' y1='%.0f' x2='%.0f' y2='%.0f' %s/>"
				       "<text x='%.0f' y='%.0f' font-size='11'>%s</text>\n", x,
				       y - 4, x + 18, y - 4, keys[k].line, x + 22, y, keys[k].name);
	g_string_append_printf(s, "<circle cx='%.0f' cy='%.0f' r='3' fill='" DELAY_COLOUR "'/>"
			       "<text x='%.0f' y='%.0f' font-size='11'>queue: cut</text>\n"
			       "<circle cx='%.0f' cy='%.0f' r='3' fill='none' stroke='"
			       LOST_COLOUR "'/><text x='%.0f' y='%.0f' font-size='11'>lost: "
			       "base rate</text>\n", x + 6, y - 4, x + 14, y, x + 96, y - 4,
			       x + 104, y);
}

/* The rate's and the delay's spans over dir's rows, with a little room above. */
static void fit(struct area *rate, struct area *delay, const struct adapt_trace_row *rows, size_t n,
		enum adapt_trace_dir dir)
{
	for (size_t i = 0; i < n; i++) {
		if (rows[i].dir != dir)
			continue;
		rate->v1 = MAX(rate->v1, MAX(rows[i].rate_bps, rows[i].load_bps) / 1e6);
		delay->v0 = MIN(delay->v0, rows[i].delay_us / 1e3);
		delay->v1 = MAX(delay->v1, rows[i].delay_us / 1e3);
	}
	rate->v1 *= 1.1;
	delay->v1 += (delay->v1 - delay->v0) * 0.1;
}

/* One direction's panel at y. */
static void panel(GString *s, const struct adapt_trace_row *rows, size_t n,
		  enum adapt_trace_dir dir, double y, double t0, double t1)
{
	struct area rate = { L, y + RATE_Y, W - L - R, RATE_H, t0, t1, 0, 1 };
	struct area delay = { L, y + DELAY_Y, W - L - R, DELAY_H, t0, t1, 0, 1 };
	g_autoptr(GString) marks = g_string_new(NULL);
	long marked[2] = { LONG_MIN, LONG_MIN }; /* the pixel last marked, per kind */
	double prev = NAN;
	struct pen pen;

	fit(&rate, &delay, rows, n, dir);
	g_string_append_printf(s, "<text x='%.0f' y='%.0f' font-size='14'>%s</text>\n", L,
			       y + 20, adapt_trace_dir_name(dir));
	legend(s, L + 90, y + 20);
	area_axes(s, &rate, "rate and sent, Mbit/s", RATE_COLOUR, false);
	area_axes(s, &delay, "one-way delay over the baseline, ms", DELAY_COLOUR, true);

	pen_begin(&pen, s, "stroke='" LOAD_COLOUR "' stroke-width='0.8'");
	for (size_t i = 0; i < n; i++)
		if (rows[i].dir == dir)
			pen_to(&pen, area_x(&rate, rows[i].t), area_y(&rate, rows[i].load_bps / 1e6));
	pen_end(&pen);

	/* the rate holds until it changes: a step at each change */
	pen_begin(&pen, s, "stroke='" RATE_COLOUR "' stroke-width='1.5'");
	for (size_t i = 0; i < n; i++) {
		const struct adapt_trace_row *r = &rows[i];
		double x = area_x(&rate, r->t), yr = area_y(&rate, r->rate_bps / 1e6);
		int kind = r->why == ADAPT_QUEUE ? 0 : r->why == ADAPT_LOST ? 1 : -1;

		if (r->dir != dir)
			continue;
		if (!isnan(prev) && prev != yr)
			pen_to(&pen, x, prev);
		pen_to(&pen, x, yr);
		prev = yr;
		if (kind >= 0 && lround(x) != marked[kind]) {
			marked[kind] = lround(x);
			g_string_append_printf(marks, "<circle cx='%.1f' cy='%.1f' r='3' %s/>\n", x,
					       yr, kind ? "fill='none' stroke='" LOST_COLOUR "'"
							: "fill='" DELAY_COLOUR "'");
		}
	}
	pen_end(&pen);
	g_string_append_len(s, marks->str, (gssize)marks->len);

	pen_begin(&pen, s, "stroke='" DELAY_COLOUR "'");
	for (size_t i = 0; i < n; i++)
		if (rows[i].dir == dir)
			pen_to(&pen, area_x(&delay, rows[i].t),
			       area_y(&delay, rows[i].delay_us / 1e3));
	pen_end(&pen);
}

void adapt_trace_svg(GString *out, const struct adapt_trace_row *rows, size_t n, const char *title)
{
	bool present[ADAPT_TRACE_NDIRS] = { false };
	double t0 = n ? rows[0].t : 0, t1 = n ? rows[n - 1].t : 0, y = TOP;
	size_t panels = 0;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned int)rows[i].dir < ADAPT_TRACE_NDIRS && !present[rows[i].dir]) {
			present[rows[i].dir] = true;
			panels++;
		}
		t0 = MIN(t0, rows[i].t);
		t1 = MAX(t1, rows[i].t);
	}
	if (t1 - t0 < 1)
		t1 = t0 + 1; /* a flat span still gets an axis */
	svg_begin(out, W, TOP + PANEL * (double)MAX(panels, 1));
	g_string_append_printf(out, "<text x='%.0f' y='24' font-size='14'>", L);
	svg_text(out, title ? title : "");
	g_string_append(out, "</text>\n");
	for (int d = 0; d < ADAPT_TRACE_NDIRS; d++) {
		if (!present[d])
			continue;
		panel(out, rows, n, (enum adapt_trace_dir)d, y, t0, t1);
		y += PANEL;
	}
	g_string_append(out, "</svg>\n");
}
