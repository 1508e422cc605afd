// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape clear IFACE
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/log.h"
#include "netlink/kernel.h"

const char clear_usage[] =
	"Usage: wgshape clear IFACE\n"
	"\n"
	"Remove egress and ingress shaping from IFACE, delete its IFB, and put back the\n"
	"root qdisc IFACE had before wgshape first touched it. Clearing twice is fine.\n";

int clear_main(int argc, char **argv, const struct cli *cli)
{
	struct netlink *nl;
	int r;

	if (argc != 2) {
		log_err("clear: takes exactly one IFACE (see wgshape clear --help)");
		return EXIT_USAGE;
	}
	if (!ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (!cli_can_net_admin(argv[1]))
		return EXIT_FAIL;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	r = shape_clear(nl, cli->statedir, argv[1]);
	netlink_close(nl);
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}
