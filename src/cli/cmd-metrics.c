// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape metrics [IFACE]: what show reads back, as Prometheus metrics
 * (daemon/metrics.h has the names).
 */
#include <stdio.h>
#include <glib.h>

#include "cli/cli.h"
#include "daemon/metrics.h"
#include "util/log.h"

const char metrics_usage[] =
	"Usage: wgshape metrics [IFACE]\n"
	"\n"
	"Print what show reads back for each interface wgshape shapes (or IFACE) in\n"
	"Prometheus' text exposition format: each cake's rate, where it came from,\n"
	"and per tin its bytes, packets, drops, ECN marks, backlog and delays; each\n"
	"adapted direction's rate and range; the download asked of the server. The\n"
	"daemon writes the same to a file for node_exporter's textfile collector\n"
	"with metrics-file = in [daemon] (see wgshape.conf(5)).\n";

int metrics_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(GString) out = g_string_new(NULL);
	char *one[] = { argc == 2 ? argv[1] : NULL, NULL };
	struct netlink *nl;
	struct link_info link;
	int r;

	if (argc > 2) {
		log_err("metrics: takes at most one IFACE (see wgshape metrics --help)");
		return EXIT_USAGE;
	}
	if (argc == 2 && !ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	if (argc == 2 && netlink_link_get(nl, argv[1], &link) < 0) {
		log_err("%s: no such interface", argv[1]);
		netlink_close(nl);
		return EXIT_FAIL;
	}
	r = metrics_collect(nl, cli->statedir, one[0] ? one : NULL, out);
	netlink_close(nl);
	fwrite(out->str, 1, out->len, stdout);
	if (fflush(stdout) != 0) {
		log_err("metrics: writing: %m");
		return EXIT_FAIL;
	}
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}
