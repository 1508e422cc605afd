// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "measure/cpu.h"

void cpu_sample_free(struct cpu_sample *s)
{
	if (!s)
		return;
	g_free(s->cores);
	g_free(s);
}

/*
 * "cpu  u n s i w irq sirq steal guest guest_nice" or "cpuN ...". Kernels
 * before 2.6.11 had fewer fields; at least the first four are required.
 * guest and guest_nice are already counted in user and nice, so they are not
 * added again.
 */
static bool parse_line(const char *line, struct cpu_times *t)
{
	const char *p = line + 3;
	uint64_t v[8] = { 0 };
	char *end;
	int cpu = -1, n;

	if (g_ascii_isdigit(*p)) {
		long c = strtol(p, &end, 10);

		if (c < 0 || c > INT32_MAX)
			return false;
		cpu = (int)c;
		p = end;
	}
	if (*p != ' ')
		return false;
	for (n = 0; n < 8; n++) {
		while (*p == ' ')
			p++;
		if (!g_ascii_isdigit(*p))
			break;
		errno = 0;
		v[n] = g_ascii_strtoull(p, &end, 10);
		if (errno)
			return false;
		p = end;
	}
	if (n < 4)
		return false;
	t->cpu = cpu;
	t->idle = v[3] + v[4];
	t->total = 0;
	for (int i = 0; i < 8; i++)
		t->total += v[i];
	return true;
}

int cpu_parse(const char *text, struct cpu_sample **out)
{
	struct cpu_sample *s = g_new0(struct cpu_sample, 1);
	GArray *cores = g_array_new(FALSE, FALSE, sizeof(struct cpu_times));
	bool have_all = false;
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		struct cpu_times t;

		if (g_str_has_prefix(line, "cpu") && parse_line(line, &t)) {
			if (t.cpu < 0) {
				s->all = t;
				have_all = true;
			} else {
				g_array_append_val(cores, t);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!have_all) {
		g_array_free(cores, TRUE);
		g_free(s);
		return -EINVAL;
	}
	s->n = cores->len;
	s->cores = (struct cpu_times *)g_array_free(cores, FALSE);
	*out = s;
	return 0;
}

int cpu_read(struct cpu_sample **out)
{
	GString *text;
	char buf[4096];
	ssize_t n;
	int fd, r;

	fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* /proc reports a size of 0: read to the end. */
	text = g_string_sized_new(sizeof(buf));
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		g_string_append_len(text, buf, n);
	}
	r = cpu_parse(text->str, out);
out:
	close(fd);
	g_string_free(text, TRUE);
	return r;
}

static double busy_between(const struct cpu_times *a, const struct cpu_times *b)
{
	uint64_t total = b->total > a->total ? b->total - a->total : 0;
	uint64_t idle = b->idle > a->idle ? b->idle - a->idle : 0;

	if (total == 0)
		return 0;
	if (idle > total)
		return 0;
	return (double)(total - idle) / (double)total;
}

static const struct cpu_times *find_core(const struct cpu_sample *s, int cpu, size_t hint)
{
	if (hint < s->n && s->cores[hint].cpu == cpu)
		return &s->cores[hint];
	for (size_t i = 0; i < s->n; i++)
		if (s->cores[i].cpu == cpu)
			return &s->cores[i];
	return NULL;
}

double cpu_core_busy(const struct cpu_sample *before, const struct cpu_sample *after, int cpu)
{
	const struct cpu_times *a = find_core(before, cpu, 0), *b = find_core(after, cpu, 0);

	return a && b ? busy_between(a, b) : -1;
}

void cpu_busy(const struct cpu_sample *before, const struct cpu_sample *after,
	      struct cpu_busy *out)
{
	struct cpu_busy r = { .busiest_cpu = -1 };

	r.average = busy_between(&before->all, &after->all);
	for (size_t i = 0; i < after->n; i++) {
		const struct cpu_times *a = find_core(before, after->cores[i].cpu, i);
		double f;

		if (!a)
			continue;
		f = busy_between(a, &after->cores[i]);
		r.n++;
		if (r.busiest_cpu < 0 || f > r.busiest) {
			r.busiest = f;
			r.busiest_cpu = after->cores[i].cpu;
		}
	}
	*out = r;
}
