// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's metrics-file (a timer): the exposition of every interface
 * (daemon/metrics.h) for node_exporter's textfile collector, written now
 * and every metrics-every seconds, and removed when it stops.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

#include "daemon/internal.h"
#include "daemon/metrics.h"
#include "util/log.h"

static gboolean on_metrics(gpointer data)
{
	struct daemon *d = data;
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GError) err = NULL;

	metrics_collect(d->nl, d->opts->statedir, NULL, out);
	if (!g_file_set_contents_full(d->metrics_path, out->str, (gssize)out->len,
				      G_FILE_SET_CONTENTS_CONSISTENT, 0644, &err)) {
		if (!d->metrics_failed)
			log_err("metrics-file %s: %s (tried again every %u s)", d->metrics_path,
				err->message, d->cfg->metrics_every);
		d->metrics_failed = true;
	} else if (d->metrics_failed) {
		log_info("metrics-file %s: written again", d->metrics_path);
		d->metrics_failed = false;
	}
	return G_SOURCE_CONTINUE;
}

/*
 * Stop writing metrics-file; unless keep names it, its file goes too
 * (figures nobody updates would read as current).
 */
void metrics_file_stop(struct daemon *d, const char *keep)
{
	if (d->metrics_timer)
		g_source_remove(d->metrics_timer);
	d->metrics_timer = 0;
	if (d->metrics_path && g_strcmp0(keep, d->metrics_path) != 0 &&
	    unlink(d->metrics_path) < 0 && errno != ENOENT)
		log_warn("metrics-file %s: removing it: %s", d->metrics_path, strerror(errno));
	g_clear_pointer(&d->metrics_path, g_free);
	d->metrics_failed = false;
}

/* As the configuration says: write now, then every metrics-every seconds. */
void metrics_file_start(struct daemon *d)
{
	metrics_file_stop(d, d->cfg->metrics_file);
	if (!d->cfg->metrics_file)
		return;
	d->metrics_path = g_strdup(d->cfg->metrics_file);
	on_metrics(d);
	d->metrics_timer = g_timeout_add_seconds(d->cfg->metrics_every, on_metrics, d);
}
