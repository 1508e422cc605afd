// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's input from NetworkManager (through nm/nm.h): any change may
 * change which [network] profile applies, so every interface is looked at
 * again. libnm is loaded only once a profile needs it: a server's daemon
 * never does.
 */
#include "daemon/internal.h"

static void on_nm(void *arg)
{
	daemon_resync(arg);
}

/* Follow NetworkManager once [network] profiles need it; true while it is followed. */
bool networks_follow(struct daemon *d)
{
	if (!d->nm && d->cfg->networks->len)
		nm_watch_new(on_nm, d, &d->nm);
	return d->nm != NULL;
}

/* NetworkManager's networks as they are now; NULL when it is not followed. */
void networks_now(struct daemon *d, struct nm_nets **nets)
{
	*nets = NULL;
	if (d->nm)
		nm_watch_nets(d->nm, nets);
}

void networks_close(struct daemon *d)
{
	g_clear_pointer(&d->nm, nm_watch_free);
}
