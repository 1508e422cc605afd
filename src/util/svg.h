/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What tune's chart (tune/plot.c) and the adaptation trace's chart
 * (adapt/plot.c) draw alike: the document's start, an area's grey frame,
 * the axes' round tick steps and text from outside made safe for SVG.
 * Each appends to a GString; the look (white, sans-serif 12, a grey
 * frame) is this file's, so the two charts keep one.
 */
#ifndef WGSHAPE_UTIL_SVG_H
#define WGSHAPE_UTIL_SVG_H

#include <glib.h>

/* <svg ...> of width by height px, white, sans-serif 12. */
void svg_begin(GString *s, double width, double height);

/* An area's frame: a grey rectangle, px. */
void svg_frame(GString *s, double x0, double y0, double w, double h);

/* A round step for about n ticks over span: 1, 2 or 5 times a power of ten. */
double svg_tick_step(double span, int n);

/* Text from outside as SVG text: valid UTF-8, markup escaped, control characters as U+FFFD. */
void svg_text(GString *s, const char *text);

#endif
