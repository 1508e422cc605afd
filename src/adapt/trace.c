// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapt/trace.h"

#define HEADER_PREFIX "# wgshape adapt trace "
#define LINE_MAX_LEN 256 /* a record is under 100 bytes */

static const char *const dir_names[] = {
	[ADAPT_TRACE_EGRESS] = "egress",
	[ADAPT_TRACE_DOWNLOAD] = "download",
	[ADAPT_TRACE_INGRESS] = "ingress",
};

const char *adapt_trace_dir_name(enum adapt_trace_dir dir)
{
	if ((unsigned int)dir >= G_N_ELEMENTS(dir_names))
		return "?";
	return dir_names[dir];
}

struct adapt_trace {
	int fd;
	uint64_t start_us;
	char *path;
	dev_t dev; /* the open file's: is it still the one path names? */
	ino_t ino;
	uint64_t checked_us; /* when that was last looked at */
};

/* How often a write looks whether the file was moved away (logrotate). */
#define TRACE_CHECK_US 1000000

/* The whole of buf, or -errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Does the file end in the middle of a line (a write cut short before)? */
static bool ends_mid_line(int fd, off_t size)
{
	char c;

	return size > 0 && pread(fd, &c, 1, size - 1) == 1 && c != '\n';
}

/* path opened for appending, checked and headed (adapt_trace_open's rules): fd or -errno. */
static int open_headed(const char *path, struct stat *st)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree char *when = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
	g_autofree char *head = NULL;
	int fd, r;

	/* O_NONBLOCK: a FIFO must not hold the open; O_RDWR: to read the last byte */
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		r = -EINVAL;
		goto fail;
	}
	head = g_strdup_printf("%s%s\n# opened %s\n", ends_mid_line(fd, st->st_size) ? "\n" : "",
			       ADAPT_TRACE_HEADER, when);
	r = write_all(fd, head, strlen(head));
	if (r < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return r;
}

int adapt_trace_open(const char *path, uint64_t now_us, struct adapt_trace **out)
{
	struct adapt_trace *t;
	struct stat st;
	int fd = open_headed(path, &st);

	if (fd < 0)
		return fd;
	t = g_new0(struct adapt_trace, 1);
	t->fd = fd;
	t->start_us = now_us;
	t->path = g_strdup(path);
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->checked_us = now_us;
	*out = t;
	return 0;
}

/*
 * Once a second: when path no longer names the open file (logrotate moved
 * it away, or someone removed it), start a new one there, with its header
 * (so T starts from 0 in it). Until that works, lines go on to the old one.
 */
static void follow_path(struct adapt_trace *t, uint64_t now_us)
{
	struct stat st;
	int fd;

	if (now_us >= t->checked_us && now_us - t->checked_us < TRACE_CHECK_US)
		return;
	t->checked_us = now_us;
	if (lstat(t->path, &st) == 0 && st.st_dev == t->dev && st.st_ino == t->ino)
		return;
	fd = open_headed(t->path, &st);
	if (fd < 0)
		return;
	close(t->fd);
	t->fd = fd;
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->start_us = now_us;
}

int adapt_trace_write(struct adapt_trace *t, uint64_t now_us, const struct adapt_trace_row *row)
{
	uint64_t ms;
	char line[LINE_MAX_LEN];
	int n;

	follow_path(t, now_us);
	ms = now_us > t->start_us ? (now_us - t->start_us) / 1000 : 0;
	/* T from integers: the same text whatever the locale */
	n = snprintf(line, sizeof(line),
		     "%" PRIu64 ".%03u %s %" PRIu64 " %" PRId64 " %" PRIu32 " %" PRIu64 " %s\n",
		     ms / 1000, (unsigned int)(ms % 1000), adapt_trace_dir_name(row->dir),
		     row->rate_bps, row->delay_us, row->rtt_us, row->load_bps,
		     adapt_why_name(row->why));
	if (n < 0 || (size_t)n >= sizeof(line))
		return -EOVERFLOW;
	return write_all(t->fd, line, (size_t)n);
}

void adapt_trace_close(struct adapt_trace *t)
{
	if (!t)
		return;
	close(t->fd);
	g_free(t->path);
	g_free(t);
}

/* The reader. */

struct reader {
	unsigned int line; /* 1-based, of the line being read */
	char *err;
	size_t errlen;
};

static int refuse(const struct reader *rd, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static int refuse(const struct reader *rd, const char *fmt, ...)
{
	g_autofree char *why = NULL;
	va_list ap;

	va_start(ap, fmt);
	why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (rd->errlen)
		snprintf(rd->err, rd->errlen, "line %u: %s", rd->line, why);
	return -EINVAL;
}

/* At most 32 bytes of s, then "..." when there was more. */
#define QUOTE_MAX 32
#define QUOTE(s) (int)MIN(strlen(s), QUOTE_MAX), (s), strlen(s) > QUOTE_MAX ? "..." : ""

static int field_u64(const struct reader *rd, const char *name, const char *s, uint64_t max,
		     uint64_t *out)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(s, 10, 0, max, &v, NULL))
		return refuse(rd, "%s: '%.*s%s' is not a whole number from 0 to %" PRIu64, name,
			      QUOTE(s), max);
	*out = v;
	return 0;
}

static int field_t(const struct reader *rd, const char *s, double *out)
{
	char *end;
	double v;

	/* digits, a point, digits: what the writer writes, no exponent, sign or "inf" */
	if (!g_ascii_isdigit(s[0]) || strspn(s, "0123456789.") != strlen(s))
		goto bad;
	v = g_ascii_strtod(s, &end);
	if (*end || !(v < 1e15))
		goto bad;
	*out = v;
	return 0;
bad:
	return refuse(rd, "t: '%.*s%s' is not seconds (like 12.345)", QUOTE(s));
}

static int field_why(const struct reader *rd, const char *s, enum adapt_why *out)
{
	g_autoptr(GString) names = g_string_new(NULL);

	/* adapt_why_name() is the one list of the names; "?" past its end */
	for (int w = 0; w < 64; w++) {
		const char *name = adapt_why_name((enum adapt_why)w);

		if (!strcmp(name, "?"))
			break;
		if (!strcmp(s, name)) {
			*out = (enum adapt_why)w;
			return 0;
		}
		g_string_append_printf(names, " %s", name);
	}
	return refuse(rd, "why: '%.*s%s' is none of%s", QUOTE(s), names->str);
}

/* One record, a NUL-terminated line of at most LINE_MAX_LEN bytes. */
static int parse_record(const struct reader *rd, char *line, struct adapt_trace_row *row)
{
	char *f[8];
	unsigned int n = 0;
	uint64_t v;
	guint64 u;
	gint64 d;
	int r;

	for (char *p = line;; p++) {
		if (n < G_N_ELEMENTS(f))
			f[n] = p;
		n++;
		p = strchr(p, ' ');
		if (!p)
			break;
		*p = '\0';
	}
	if (n != 7)
		return refuse(rd, "not a trace record: %u fields, not 7 (t dir rate delay rtt "
				  "load why, one space apart)",
			      n);
	for (unsigned int i = 0; i < 7; i++)
		if (!*f[i])
			return refuse(rd, "not a trace record: field %u is empty (one space "
					  "between fields)",
				      i + 1);
	r = field_t(rd, f[0], &row->t);
	if (r < 0)
		return r;
	for (row->dir = 0; row->dir < ADAPT_TRACE_NDIRS; row->dir++)
		if (!strcmp(f[1], adapt_trace_dir_name(row->dir)))
			break;
	if (row->dir == ADAPT_TRACE_NDIRS)
		return refuse(rd, "dir: '%.*s%s' is none of egress download ingress", QUOTE(f[1]));
	r = field_u64(rd, "rate", f[2], UINT64_MAX, &row->rate_bps);
	if (r < 0)
		return r;
	if (!g_ascii_string_to_signed(f[3], 10, INT64_MIN, INT64_MAX, &d, NULL))
		return refuse(rd, "delay: '%.*s%s' is not a whole number (us)", QUOTE(f[3]));
	row->delay_us = d;
	r = field_u64(rd, "rtt", f[4], UINT32_MAX, &v);
	if (r < 0)
		return r;
	row->rtt_us = (uint32_t)v;
	r = field_u64(rd, "load", f[5], UINT64_MAX, &u);
	if (r < 0)
		return r;
	row->load_bps = u;
	return field_why(rd, f[6], &row->why);
}

/* A header: the version this reader knows, or -EINVAL. */
static int parse_header(const struct reader *rd, const char *line, size_t len)
{
	size_t k = strlen(HEADER_PREFIX);
	unsigned long version = 0;
	size_t i;

	for (i = k; i < len && g_ascii_isdigit(line[i]) && i < k + 6; i++)
		version = version * 10 + (unsigned long)(line[i] - '0');
	if (i == k || i >= len || line[i] != ':')
		return refuse(rd, "a trace header without a version (%s)", ADAPT_TRACE_HEADER);
	if (version != ADAPT_TRACE_VERSION)
		return refuse(rd, "a trace of version %lu; this wgshape reads version %d", version,
			      ADAPT_TRACE_VERSION);
	return 0;
}

int adapt_trace_parse(const char *text, size_t len, GArray *rows, char *err, size_t errlen)
{
	struct reader rd = { .err = err, .errlen = errlen };
	guint had = rows->len;
	double base = 0, last = 0; /* the segment's offset; the last record's T, offset */
	double seg_last = -1; /* the last T within this segment, as written; -1: none yet */
	size_t pos = 0;
	int r;

	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		char buf[LINE_MAX_LEN + 1];
		struct adapt_trace_row row;

		pos += n + (nl ? 1 : 0);
		rd.line++;
		if (n && line[n - 1] == '\r')
			n--;
		if (!n)
			continue;
		if (line[0] == '#') {
			if (n < strlen(HEADER_PREFIX) ||
			    memcmp(line, HEADER_PREFIX, strlen(HEADER_PREFIX)) != 0)
				continue;
			r = parse_header(&rd, line, n);
			if (r < 0)
				goto fail;
			base = last; /* T starts again: run on from here */
			seg_last = -1;
			continue;
		}
		if (n > LINE_MAX_LEN) {
			r = refuse(&rd, "not a trace record: %zu bytes long", n);
			goto fail;
		}
		if (memchr(line, '\0', n)) {
			r = refuse(&rd, "not a trace record: a NUL byte in it");
			goto fail;
		}
		memcpy(buf, line, n);
		buf[n] = '\0';
		r = parse_record(&rd, buf, &row);
		if (r < 0)
			goto fail;
		if (row.t < seg_last) {
			r = refuse(&rd, "t %.3f is before the line above's %.3f (a restart starts with "
					"a header)",
				   row.t, seg_last);
			goto fail;
		}
		seg_last = row.t;
		row.t += base;
		last = row.t;
		g_array_append_val(rows, row);
	}
	return 0;
fail:
	g_array_set_size(rows, had);
	return r;
}
