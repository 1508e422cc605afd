// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * WireGuard dumps off the asker's loop (kernel.h's wg_dumper). At 1,000
 * peers one dump takes 15-20 ms in the lab VM; in a loop that answers 300
 * rate requests a second, every request that came in meanwhile waited for
 * it. One worker thread (a GThreadPool of one) with a netlink socket of its
 * own does them, one at a time, and each result comes back as an idle
 * source in the main context the dumper was made in.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <net/if.h>
#include <glib.h>

#include "internal.h"

struct wg_dumper {
	unsigned int refs; /* the owner's, and one per dump under way (loop thread only) */
	bool dead; /* freed by its owner: results are dropped */
	wg_dump_done done;
	void *arg;
	GMainContext *ctx; /* where results are handed over */
	GHashTable *busy; /* ifname -> 1: a dump under way */
};

struct dump_job {
	struct wg_dumper *w;
	char ifname[IF_NAMESIZE];
	int ifindex;
	gint64 at; /* monotonic µs, when the dump began */
	int r;
	struct wg_peer *peers;
	size_t n;
};

static GThreadPool *pool;
/* the worker's socket: touched only in dump_run, which the pool runs one at a time */
static struct netlink *worker_nl;

static void dumper_unref(struct wg_dumper *w)
{
	if (--w->refs)
		return;
	g_hash_table_unref(w->busy);
	g_main_context_unref(w->ctx);
	g_free(w);
}

/* Back in the asker's context: the result to its owner, if it still has one. */
static gboolean dump_deliver(gpointer data)
{
	struct dump_job *j = data;
	struct wg_dumper *w = j->w;

	if (!w->dead) {
		g_hash_table_remove(w->busy, j->ifname);
		w->done(w->arg, j->ifname, j->ifindex, (int64_t)j->at, j->r, j->peers, j->n);
	} else {
		wg_peers_free(j->peers, j->n);
	}
	dumper_unref(w);
	g_free(j);
	return G_SOURCE_REMOVE;
}

static void dump_run(gpointer data, gpointer unused)
{
	struct dump_job *j = data;
	GSource *back;

	(void)unused;
	/* background work: the asker's loop first when the CPUs are busy (nice 10, this thread) */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	j->at = g_get_monotonic_time();
	j->r = worker_nl ? 0 : netlink_open(&worker_nl);
	if (j->r == 0)
		j->r = netlink_wg_peers(worker_nl, j->ifname, &j->peers, &j->n);
	if (j->r < 0) {
		wg_peers_free(j->peers, j->n);
		j->peers = NULL;
		j->n = 0;
	}
	/* an idle source, never g_main_context_invoke: that could run it here, in this thread */
	back = g_idle_source_new();
	g_source_set_callback(back, dump_deliver, j, NULL);
	g_source_attach(back, j->w->ctx);
	g_source_unref(back);
}

struct wg_dumper *wg_dumper_new(wg_dump_done done, void *arg)
{
	struct wg_dumper *w = g_new0(struct wg_dumper, 1);

	w->refs = 1;
	w->done = done;
	w->arg = arg;
	w->ctx = g_main_context_ref_thread_default();
	w->busy = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	return w;
}

int wg_dumper_ask(struct wg_dumper *w, const char *ifname, int ifindex)
{
	struct dump_job *j;
	GError *err = NULL;

	if (strlen(ifname) >= IF_NAMESIZE)
		return -EINVAL;
	if (g_hash_table_contains(w->busy, ifname))
		return 0;
	if (!pool) {
		pool = g_thread_pool_new(dump_run, NULL, 1, FALSE, &err);
		if (!pool) {
			g_error_free(err);
			return -EAGAIN;
		}
	}
	j = g_new0(struct dump_job, 1);
	j->w = w;
	g_strlcpy(j->ifname, ifname, sizeof(j->ifname));
	j->ifindex = ifindex;
	if (!g_thread_pool_push(pool, j, &err)) {
		g_error_free(err);
		g_free(j);
		return -EAGAIN;
	}
	w->refs++;
	g_hash_table_add(w->busy, g_strdup(ifname));
	return 0;
}

bool wg_dumper_busy(const struct wg_dumper *w, const char *ifname)
{
	return g_hash_table_contains(w->busy, ifname);
}

void wg_dumper_free(struct wg_dumper *w)
{
	if (!w)
		return;
	w->dead = true;
	g_hash_table_remove_all(w->busy);
	dumper_unref(w);
}
