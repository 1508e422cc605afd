/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Keeping what tune found: the rates go into conf.d/90-tune.conf beside the
 * configuration, in the section that decides the interface's shaping on the
 * network in use now (NetworkManager's answer), and that is then applied.
 */
#ifndef WGSHAPE_TUNE_SAVE_H
#define WGSHAPE_TUNE_SAVE_H

#include <stddef.h>

#include "netlink/kernel.h"
#include "tune/run.h"

/*
 * The rates the runs found (all for one interface), under config_path's
 * directory (NULL: the default configuration), in [network NETWORK] when it
 * is given (the caller checked that the profile names the tunnel), else in
 * the section in use. 0, also when no run found one (it says so), or
 * -errno (logged).
 */
int tune_save(const char *config_path, const char *network, struct tune_run *const *runs,
	      size_t n);

/* Shape ifname as the configuration now says, as apply would. 0 or -errno (logged). */
int tune_apply_saved(const char *config_path, const char *statedir, struct netlink *nl,
		     const char *ifname);

#endif
