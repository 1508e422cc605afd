// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape dispatch IFACE ACTION: NetworkManager's dispatcher hook calls this
 * (dispatcher/90-wgshape). The dispatcher runs its scripts one at a time, so
 * actions that cannot change which network we are on return at once.
 */
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "build-config.h"
#include "cli/cli.h"
#include "config/config.h"
#include "util/log.h"
#include "nm/nm.h"
#include "apply/reconcile.h"

const char dispatch_usage[] =
	"Usage: wgshape dispatch IFACE ACTION\n"
	"\n"
	"For NetworkManager's dispatcher (dispatcher/90-wgshape). On up, down, vpn-up,\n"
	"vpn-down, connectivity-change and reapply, ask NetworkManager which networks are\n"
	"active and shape the tunnels their [network] profiles name, exactly as the\n"
	"daemon would; other actions are ignored. IFACE and ACTION are only compared,\n"
	"never run or used in a path.\n";

/* meson.build's dispatch_actions, which the hook ends every other action by */
static const char *const actions[] = { WGSHAPE_DISPATCH_ACTIONS };

static bool wanted(const char *action)
{
	for (size_t i = 0; i < G_N_ELEMENTS(actions); i++)
		if (!strcmp(action, actions[i]))
			return true;
	return false;
}

int dispatch_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(config_t) cfg = NULL;
	struct nm_nets *nets = NULL;
	struct reconciler rc = { .statedir = cli->statedir };
	gint64 t0 = g_get_monotonic_time(), t_nm = 0;
	int r;

	if (argc != 3) {
		log_err("dispatch: takes IFACE and ACTION (see wgshape dispatch --help)");
		return EXIT_USAGE;
	}
	if (!wanted(argv[2]))
		return EXIT_OK;
	cfg = config_load_logged(cli->config_path);
	if (!cfg)
		return EXIT_FAIL;
	if (!cfg->networks->len && !cfg->ifaces->len)
		return EXIT_OK;
	if (!cli_can_net_admin(NULL))
		return EXIT_FAIL;
	if (cfg->networks->len) {
		/* only profiles need to know the network (and load libnm) */
		t_nm = g_get_monotonic_time();
		nm_nets_get(&nets);
		t_nm = g_get_monotonic_time() - t_nm;
		rc.nets = &nets->view;
	}
	if (cli_netlink_open(&rc.nl) < 0) {
		nm_nets_free(nets);
		return EXIT_FAIL;
	}
	rc.cfg = cfg;
	r = reconcile_all(&rc);
	netlink_close(rc.nl);
	nm_nets_free(nets);
	if (cli->verbose) {
		g_autofree char *ifname = g_strescape(argv[1], NULL);
		g_autofree char *action = g_strescape(argv[2], NULL);

		log_debug("dispatch '%s' %s: %.1f ms (asking NetworkManager: %.1f ms)", ifname,
			  action, (double)(g_get_monotonic_time() - t0) / 1000.0,
			  (double)t_nm / 1000.0);
	}
	return r == 0 ? EXIT_OK : EXIT_FAIL;
}
