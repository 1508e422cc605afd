// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape daemon [IFACE]
 */
#include <stdio.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "util/log.h"

const char daemon_usage[] =
	"Usage: wgshape [-c FILE] daemon [IFACE]\n"
	"\n"
	"Keep every configured interface (or only IFACE) shaped: shape interfaces as they\n"
	"appear, put wgshape's qdisc back if someone removes it (enforce = yes), and on\n"
	"SIGHUP reload the configuration and reconcile. An interface `tune` measures is\n"
	"left alone until tune ends; then the configuration is reloaded as on SIGHUP.\n"
	"A tunnel whose section says adapt = yes has its rates follow the line: probes\n"
	"to the server's daemon through the tunnel, a controller per direction (see\n"
	"CONTINUOUS ADAPTATION in wgshape(8)). SIGTERM puts the configured rates back\n"
	"and leaves shaping in place unless clear-on-exit = yes. Logs to stderr with\n"
	"sd-daemon priority prefixes.\n";

int daemon_main(int argc, char **argv, const struct cli *cli)
{
	struct daemon_opts o = { .statedir = cli->statedir, .config_path = cli->config_path };

	if (argc > 2) {
		log_err("daemon: takes at most one IFACE (see wgshape daemon --help)");
		return EXIT_USAGE;
	}
	if (argc == 2 && !ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	o.only = argc == 2 ? argv[1] : NULL;
	log_use_syslog_prefix(true);
	if (!cli_can_net_admin(o.only))
		return EXIT_FAIL;
	return daemon_run(&o) < 0 ? EXIT_FAIL : EXIT_OK;
}
