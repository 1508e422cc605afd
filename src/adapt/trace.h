/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The adaptation trace: what the rate controllers did, one line a sample,
 * appended by the daemon to the file `adapt-log = PATH` names, and read
 * back by `wgshape plot-trace`. Text, so that grep, awk and a spreadsheet
 * read it too:
 *
 *   # wgshape adapt trace 1: t dir rate delay rtt load why
 *   T DIR RATE DELAY RTT LOAD WHY
 *
 * one space between fields, one record a line, where
 *   T      seconds since the trace was opened, 3 decimals (12.345)
 *   DIR    egress, download (the client's download, shaped at the server)
 *          or ingress
 *   RATE   the shaper's rate, bit/s
 *   DELAY  the one-way delay added over the baseline, us (signed)
 *   RTT    the probe's round trip, us; 0: unknown
 *   LOAD   what the shaper sent in the last interval, bit/s
 *   WHY    adapt_why_name(): none queue settle raise idle lost
 * A line starting with '#' is a comment. Each time the daemon opens the
 * trace it appends the header again (and a "# opened" comment with the
 * wall-clock time), and T starts again from 0 there. The header's number
 * is the format's version: a reader refuses one it does not know.
 */
#ifndef WGSHAPE_ADAPT_TRACE_H
#define WGSHAPE_ADAPT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "adapt/controller.h"

#define ADAPT_TRACE_VERSION 1
#define ADAPT_TRACE_HEADER "# wgshape adapt trace 1: t dir rate delay rtt load why"

enum adapt_trace_dir {
	ADAPT_TRACE_EGRESS,
	ADAPT_TRACE_DOWNLOAD, /* the client's download, shaped at the server */
	ADAPT_TRACE_INGRESS,
	ADAPT_TRACE_NDIRS,
};
/* "egress", "download", "ingress"; "?" for anything else. */
const char *adapt_trace_dir_name(enum adapt_trace_dir dir);

struct adapt_trace_row {
	double t; /* s; adapt_trace_write() ignores it and writes now_us's */
	enum adapt_trace_dir dir;
	uint64_t rate_bps; /* the shaper's rate, bit/s (the controller's bytes/s * 8) */
	int64_t delay_us; /* added over the baseline: adapt_added_us() */
	uint32_t rtt_us; /* 0: unknown */
	uint64_t load_bps; /* what the shaper sent in the last interval, bit/s */
	enum adapt_why why;
};

/* The writer: the file, and the time T counts from. */
struct adapt_trace;

/*
 * Open path for appending (O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW, mode 0644
 * less the umask; a regular file only, so that a FIFO or a device there
 * cannot hold the daemon) and append the header; T counts from now_us (any
 * monotonic clock, the same as adapt_trace_write()'s). A file whose last
 * line was cut short gets its newline first. 0 and *out, or -errno
 * (-ELOOP: path is a symbolic link; -EINVAL: not a regular file).
 */
int adapt_trace_open(const char *path, uint64_t now_us, struct adapt_trace **out);

/*
 * Append one record at now_us: one write(2) a line, no buffer kept, so it
 * blocks only as long as a write to the file does (a line is under 100
 * bytes). 0, or -errno; a failed write loses only its line, and the next
 * one tries again (say so once, not each time). At most once a second it
 * looks whether path still names the open file: when it was moved away or
 * removed (logrotate), a new file is opened there, as adapt_trace_open()
 * opens one, and T starts from 0 in it; so rotating needs neither a signal
 * nor copytruncate.
 */
int adapt_trace_write(struct adapt_trace *t, uint64_t now_us, const struct adapt_trace_row *row);

/* Close the file; NULL is fine. */
void adapt_trace_close(struct adapt_trace *t);

/*
 * Read a trace (len bytes of text, NUL not needed) into rows (a GArray of
 * struct adapt_trace_row), in the file's order. T is made monotonic over
 * the whole file: each header after the first starts a segment whose T
 * runs on from the previous segment's last T (the time the daemon was
 * down is not in the file, so it is not in T either). Records before any
 * header are read as a segment of their own (a trace cut with tail).
 * Comments and empty lines are skipped. A line that is not a record, a
 * header of another version, or a T that goes back within a segment fails
 * the whole read: -EINVAL, rows as they were, and err says which line and
 * why on one line (quoting at most 32 bytes of the line, unescaped: the
 * caller escapes it for its output).
 */
int adapt_trace_parse(const char *text, size_t len, GArray *rows, char *err, size_t errlen);

/*
 * The rows as an SVG chart, appended to out: title (escaped) on top, then
 * a panel per direction present (egress, download, ingress), each with
 * the rate (a step line) and the load (thin) in Mbit/s above the added
 * delay in ms, against the same time axis in every panel; cuts for a
 * queue and falls back for a lost far end marked on the rate. Three
 * <polyline>s a panel. Long traces are thinned to what a pixel column
 * shows (its first, least, greatest and last point), so the chart stays
 * small. rows sorted by t, as adapt_trace_parse() gives them.
 */
void adapt_trace_svg(GString *out, const struct adapt_trace_row *rows, size_t n, const char *title);

#endif
