// SPDX-License-Identifier: GPL-2.0-or-later
/* The daemon's signals: SIGHUP reloads the configuration, SIGTERM and SIGINT end the loop. */
#include <glib.h>
#include <glib-unix.h>

#include "daemon/internal.h"
#include "util/log.h"
#include "util/notify.h"

static gboolean on_hup(gpointer data)
{
	struct daemon *d = data;

	notify_systemd("RELOADING=1");
	log_info("reloading the configuration");
	if (daemon_reload(d))
		daemon_resync(d);
	else
		log_err("keeping the configuration that was loaded before");
	notify_systemd("READY=1");
	return G_SOURCE_CONTINUE;
}

static gboolean on_term(gpointer data)
{
	struct daemon *d = data;

	g_main_loop_quit(d->loop);
	return G_SOURCE_CONTINUE;
}

void signals_watch(struct daemon *d)
{
	g_unix_signal_add(SIGHUP, on_hup, d);
	g_unix_signal_add(SIGTERM, on_term, d);
	g_unix_signal_add(SIGINT, on_term, d);
}
