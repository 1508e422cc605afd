// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <math.h>
#include <glib.h>

#include "tune/plot.h"
#include "util/log.h"
#include "util/svg.h"

static gint cmp_rate(gconstpointer a, gconstpointer b)
{
	uint64_t x = ((const struct tune_step *)a)->rate, y = ((const struct tune_step *)b)->rate;

	return x < y ? -1 : x > y;
}

/* One panel's frame: where it sits and what its axes span. */
struct plot_frame {
	double x0, y0, w, h; /* the plot area, in px */
	double rmin, rmax; /* rate, bytes/s, along x */
	double lmax; /* added latency, ms, up the left axis */
	double gmax; /* goodput, bytes/s, up the right axis */
};

static double plot_x(const struct plot_frame *f, double rate)
{
	return f->x0 + (rate - f->rmin) / (f->rmax - f->rmin) * f->w;
}

/* Latency beyond the axis (or lost: infinite) sits on the top edge. */
static double plot_yl(const struct plot_frame *f, double ms)
{
	return f->y0 + f->h - MIN(isfinite(ms) ? ms : f->lmax, f->lmax) / f->lmax * f->h;
}

static double plot_yg(const struct plot_frame *f, double goodput)
{
	return f->y0 + f->h - goodput / f->gmax * f->h;
}

static void plot_axes(GString *s, const struct plot_frame *f, const struct tune_target *tg)
{
	double st = svg_tick_step((f->rmax - f->rmin) * 8 / 1e6, 6);
	double bottom = f->y0 + f->h;

	svg_frame(s, f->x0, f->y0, f->w, f->h);
	for (double m = ceil(f->rmin * 8 / 1e6 / st) * st; m <= f->rmax * 8 / 1e6; m += st)
		g_string_append_printf(s, "<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' "
				       "stroke='#ddd'/><text x='%.1f' y='%.0f' "
				       "text-anchor='middle'>%g</text>\n", plot_x(f, m * 1e6 / 8),
				       f->y0, plot_x(f, m * 1e6 / 8), bottom,
				       plot_x(f, m * 1e6 / 8), bottom + 16, m);
	g_string_append_printf(s, "<text x='%.0f' y='%.0f' text-anchor='middle'>shaper rate, "
			       "Mbit/s</text>\n", f->x0 + f->w / 2, bottom + 34);
	st = svg_tick_step(f->lmax, 5);
	for (double m = 0; m <= f->lmax; m += st)
		g_string_append_printf(s, "<text x='%.0f' y='%.1f' fill='#c33' "
				       "text-anchor='end'>%g</text>\n", f->x0 - 6,
				       plot_yl(f, m) + 4, m);
	st = svg_tick_step(f->gmax * 8 / 1e6, 5);
	for (double m = 0; m <= f->gmax * 8 / 1e6; m += st)
		g_string_append_printf(s, "<text x='%.0f' y='%.1f' fill='#36c'>%g</text>\n",
				       f->x0 + f->w + 6, plot_yg(f, m * 1e6 / 8) + 4, m);
	/* the target: median added latency at or under it */
	g_string_append_printf(s, "<line x1='%.0f' y1='%.1f' x2='%.0f' y2='%.1f' stroke='#c33' "
			       "stroke-dasharray='2 4'/><text x='%.0f' y='%.1f' fill='#c33' "
			       "font-size='10'>target %g ms</text>\n",
			       f->x0, plot_yl(f, tg->p50_ms), f->x0 + f->w, plot_yl(f, tg->p50_ms),
			       f->x0 + 4, plot_yl(f, tg->p50_ms) - 3, tg->p50_ms);
}

/* One series through the steps (sorted by rate), with a dot at each. */
static void plot_series(GString *s, const struct plot_frame *f, const GArray *st, int which)
{
	static const char *const colour[] = { "#c33", "#c33", "#36c" };
	GString *dots = g_string_new(NULL);

	g_string_append_printf(s, "<polyline fill='none' stroke='%s' %s points='", colour[which],
			       which == 1 ? "stroke-dasharray='4 3'" : "");
	for (guint i = 0; i < st->len; i++) {
		const struct tune_step *p = &g_array_index(st, struct tune_step, i);
		double a50, a95, x = plot_x(f, (double)p->rate), y;

		tune_added(p, &a50, &a95);
		y = which == 2 ? plot_yg(f, p->goodput) : plot_yl(f, which == 0 ? a50 : a95);
		g_string_append_printf(s, "%.1f,%.1f ", x, y);
		if (which != 1)
			g_string_append_printf(dots, "<circle cx='%.1f' cy='%.1f' r='3' "
					       "fill='%s'/>\n", x, y, colour[which]);
	}
	g_string_append(s, "'/>\n");
	g_string_append_len(s, dots->str, (gssize)dots->len);
	g_string_free(dots, TRUE);
}

/* The axes' spans, over the steps and the unshaped goodput. */
static void plot_fit(struct plot_frame *f, const GArray *st, double unshaped_goodput)
{
	for (guint i = 0; i < st->len; i++) {
		const struct tune_step *p = &g_array_index(st, struct tune_step, i);
		double a50, a95;

		tune_added(p, &a50, &a95);
		f->rmin = MIN(f->rmin, (double)p->rate);
		f->rmax = MAX(f->rmax, (double)p->rate);
		f->gmax = MAX(f->gmax, p->goodput);
		if (isfinite(a95))
			f->lmax = MAX(f->lmax, a95);
	}
	if (!isfinite(f->rmin))
		f->rmin = 0;
	/* a little room either side; a flat span still gets an axis */
	f->rmin = MAX(0, f->rmin - MAX((f->rmax - f->rmin) * 0.1, f->rmax * 0.02));
	f->rmax += MAX((f->rmax - f->rmin) * 0.05, f->rmax * 0.01);
	f->gmax = MAX(f->gmax, unshaped_goodput) * 1.1;
	f->lmax *= 1.1;
}

/*
 * An SVG chart, a panel per direction: added latency (left axis, p50 solid,
 * p95 dashed) and goodput (right axis) against the shaper's rate, over the
 * span the search covered; the target and the tuned rate marked.
 */
int tune_plot(const char *path, struct tune_run *const *runs, size_t n)
{
	g_autoptr(GString) s = g_string_new(NULL);
	g_autoptr(GError) err = NULL;
	const double W = 720, H = 420, L = 60, R = 60, T = 44, B = 56;

	svg_begin(s, W, H * n);
	for (size_t k = 0; k < n; k++) {
		struct tune_run *t = runs[k];
		g_autoptr(GArray) st = g_array_copy(t->steps);
		struct plot_frame f = {
			.x0 = L, .y0 = H * (double)k + T, .w = W - L - R, .h = H - T - B,
			.rmin = HUGE_VAL, .rmax = 1, .lmax = 10, .gmax = 1,
		};

		/* the lines go by rate, not in the order the steps were taken */
		g_array_sort(st, cmp_rate);
		plot_fit(&f, st, t->unshaped.goodput);
		g_string_append_printf(s, "<text x='%.0f' y='%.0f' font-size='14'>%s %s: added "
				       "latency (ms, left; p95 dashed) and goodput (Mbit/s, "
				       "right)</text>\n",
				       L, f.y0 - 20, t->o->ifname, tune_run_dir(t));
		plot_axes(s, &f, &t->search.p.target);
		for (int which = 0; which < 3; which++)
			plot_series(s, &f, st, which);
		if (t->search.phase == TUNE_DONE) {
			double x = plot_x(&f, (double)t->search.result);

			g_string_append_printf(s, "<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' "
					       "stroke='#393' stroke-width='2'/><text x='%.1f' "
					       "y='%.0f' fill='#393'>tuned %.2f Mbit/s</text>\n", x,
					       f.y0, x, f.y0 + f.h, x + 4, f.y0 + 14,
					       (double)t->search.result * 8 / 1e6);
		}
	}
	g_string_append(s, "</svg>\n");
	if (!g_file_set_contents(path, s->str, (gssize)s->len, &err)) {
		log_err("plot %s: %s", path, err->message);
		return -EIO;
	}
	return 0;
}
