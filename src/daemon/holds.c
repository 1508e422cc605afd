// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's input from `wgshape tune`: a tune holding an interface
 * (state_hold()) is left alone, and its end (a pidfd) reloads the
 * configuration, as `tune ... save` may have written a new rate.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <glib.h>
#include <glib-unix.h>

#include "daemon/internal.h"
#include "shape/state.h"
#include "util/log.h"

struct hold_watch {
	struct daemon *d;
	char *ifname;
	pid_t pid;
	int pidfd;
	guint source;
};

static void hold_watch_free(gpointer p)
{
	struct hold_watch *w = p;

	if (w->source)
		g_source_remove(w->source);
	close(w->pidfd);
	g_free(w->ifname);
	g_free(w);
}

static gboolean on_holder_gone(gint fd, GIOCondition cond, gpointer data)
{
	struct hold_watch *w = data;
	struct daemon *d = w->d;

	/* `tune ... save` may have written a new rate: read the configuration again. */
	log_info("%s: wgshape tune (pid %d) ended: reloading the configuration", w->ifname,
		 (int)w->pid);
	w->source = 0; /* removed by returning G_SOURCE_REMOVE */
	g_hash_table_remove(d->holds, w->ifname); /* frees w */
	if (!daemon_reload(d))
		log_err("keeping the configuration that was loaded before");
	daemon_resync(d);
	return G_SOURCE_REMOVE;
}

void holds_init(struct daemon *d)
{
	d->holds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, hold_watch_free);
}

/* Is ifname held by a tune? Then watch for its end (once) and leave ifname alone. */
bool holds_check(struct daemon *d, const char *ifname)
{
	struct hold_watch *w;
	pid_t pid = state_holder(d->opts->statedir, ifname);
	int fd;

	if (pid <= 0)
		return false;
	w = g_hash_table_lookup(d->holds, ifname);
	if (w && w->pid == pid)
		return true;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		if (errno != ESRCH) /* ESRCH: it ended just now */
			log_warn("%s: pidfd_open(%d): %s; enforcing it anyway", ifname, (int)pid,
				 strerror(errno));
		return false;
	}
	w = g_new0(struct hold_watch, 1);
	w->d = d;
	w->ifname = g_strdup(ifname);
	w->pid = pid;
	w->pidfd = fd;
	w->source = g_unix_fd_add(fd, G_IO_IN, on_holder_gone, w);
	g_hash_table_replace(d->holds, g_strdup(ifname), w);
	log_info("%s: wgshape tune (pid %d) is measuring it: not enforced until tune ends",
		 ifname, (int)pid);
	return true;
}

/* Watch every tune holding a link we know (reconcile_all() leaves those alone). */
void holds_watch_all(struct daemon *d)
{
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, d->names);
	while (g_hash_table_iter_next(&it, &key, &val))
		holds_check(d, val);
}

void holds_exit(struct daemon *d)
{
	g_clear_pointer(&d->holds, g_hash_table_unref);
}
