/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The subcommands. Each has one <cmd>_main() that returns the process's exit
 * code: 0 success, 1 runtime failure, 2 usage error.
 */
#ifndef WGSHAPE_CLI_H
#define WGSHAPE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shape/shape.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct cli {
	bool json;
	int verbose;
	const char *statedir;
	const char *config_path; /* -c; NULL: the default, which may be missing */
};

int set_main(int argc, char **argv, const struct cli *cli);
int show_main(int argc, char **argv, const struct cli *cli);
int clear_main(int argc, char **argv, const struct cli *cli);
int apply_main(int argc, char **argv, const struct cli *cli);
int check_config_main(int argc, char **argv, const struct cli *cli);
int daemon_main(int argc, char **argv, const struct cli *cli);
int dispatch_main(int argc, char **argv, const struct cli *cli);
int plot_trace_main(int argc, char **argv, const struct cli *cli);
int metrics_main(int argc, char **argv, const struct cli *cli);
int serve_main(int argc, char **argv, const struct cli *cli);
int tune_main(int argc, char **argv, const struct cli *cli);


void set_help(void);
extern const char show_usage[], clear_usage[], apply_usage[], check_config_usage[],
	daemon_usage[], dispatch_usage[], plot_trace_usage[], metrics_usage[];
extern const char serve_usage[], tune_usage[];

/* tune's words (cmd-tune.c), parsed without I/O. */
struct tune_args {
	bool egress, ingress; /* directions to tune (egress alone by default) */
	bool server_download; /* client download: the download, shaped at the server */
	const char *server; /* HOST[:PORT] running wgshape serve */
	const char *download_url, *upload_url, *ping_host; /* or any HTTP server and ICMP */
	uint32_t target_us; /* 0: the defaults (5 ms median, 15 ms p95) */
	unsigned int streams;
	int family; /* AF_INET (default) or AF_INET6 */
	bool save;
	const char *network; /* save into [network NAME], not the profile in use */
	const char *plot;
};

int tune_args_parse(int argc, char **argv, struct tune_args *out, char *err, size_t errlen);
/* HOST[:PORT], [V6]:PORT or a bare V6 address; *host is g_malloc'd. -EINVAL if malformed. */
int tune_split_server(const char *s, char **host, uint16_t *port);

/*
 * set's form, from its words after "set", without I/O:
 *   IFACE client download ...   SET_CLIENT, ifname IFACE
 *   client download ...         SET_CLIENT, ifname NULL (the one WireGuard interface)
 *   IFACE peer PUBKEY ...       SET_PEER
 *   IFACE WORD ...              SET_SHAPE
 * An interface may be named client: the word is the keyword only where no
 * interface name can be (after IFACE, or before download, which is no option
 * of an interface). at: the index of the form's first word ("client",
 * "peer", the first option). -EINVAL with err when no form fits.
 */
enum set_form { SET_SHAPE, SET_PEER, SET_CLIENT };
struct set_args {
	enum set_form form;
	const char *ifname; /* NULL: left out (SET_CLIENT only) */
	int at;
};

int set_args_parse(int argc, char **argv, struct set_args *out, char *err, size_t errlen);

/* Say why name is no interface name, on one line. */
bool ifname_ok_or_say(const char *name);

/*
 * May this process change the network (CAP_NET_ADMIN)? If not, say so on one
 * line and return false: asked before anything is read, so that an
 * unprivileged `clear` fails instead of finding nothing to do.
 */
bool cli_can_net_admin(const char *ifname);

/*
 * The configuration (-c FILE, else the default) for a command that only
 * reads a setting from it: a missing default file is no matter (an empty
 * configuration, no warning). NULL (logged) when it is not usable.
 */
struct config;
struct config *cli_config_optional(const struct cli *cli);

/* netlink_open(), saying why on one line when it fails. */
int cli_netlink_open(struct netlink **nl);

/* "help" or "-h"/"--help" among argv: print usage and say so. */
bool cli_wants_help(int argc, char **argv);

#endif
