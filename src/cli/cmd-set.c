// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape set IFACE [egress RATE|off] [ingress RATE|off] [overhead BYTES|auto] ...
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/log.h"
#include "netlink/kernel.h"
#include "shape/overhead.h"
#include "shape/cake.h"
#include "shape/words.h"

void set_help(void)
{
	char ds[96], ack[96];

	printf("Usage: wgshape set IFACE [egress RATE|off] [ingress RATE|off]\n"
	       "                   [overhead BYTES|auto] [link-overhead BYTES] [mpu BYTES] [rtt TIME]\n"
	       "                   [%s]\n"
	       "                   [nat|nonat] [wash|nowash]\n"
	       "                   [%s] [memlimit SIZE]\n"
	       "\n"
	       "  egress RATE    cake as IFACE's root qdisc (upload from this host)\n"
	       "  ingress RATE   cake on an IFB fed from IFACE's ingress (download to this host)\n"
	       "  off            remove that direction and put back what was there\n"
	       "  overhead auto  (default) the tunnel's own overhead: 60 bytes for IPv4 peers,\n"
	       "                 80 for IPv6, plus link-overhead for the link under the tunnel\n"
	       "RATE as tc: 85mbit, 500kbit, 1gbit, 10mbps (bytes/s). TIME: 100ms, 50us. SIZE: 4m.\n"
	       "Only the options given reach the kernel; on a qdisc wgshape already set, a change\n"
	       "keeps its handle and counters.\n",
	       cake_diffserv_choices("|", ds, sizeof(ds)), cake_ack_choices("|", ack, sizeof(ack)));
}

int set_main(int argc, char **argv, const struct cli *cli)
{
	struct shape_request req;
	struct netlink *nl;
	char err[256];
	int r;

	if (argc < 3) {
		log_err("set: needs IFACE and what to set, e.g. egress 85mbit (see wgshape set --help)");
		return EXIT_USAGE;
	}
	if (!ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (shape_words_parse(argc - 2, argv + 2, &req, err, sizeof(err)) < 0) {
		log_err("set %s: %s", argv[1], err);
		return EXIT_USAGE;
	}
	if (!cli_can_net_admin(argv[1]))
		return EXIT_FAIL;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	r = shape_set(nl, cli->statedir, argv[1], &req);
	netlink_close(nl);
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}
