// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape tune IFACE ...: find the highest rate that keeps latency under load
 * at the idle level, by measuring. This file reads the words and holds IFACE;
 * tune/ runs each direction (run.c), reports (report.c), draws (plot.c) and
 * saves (save.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <glib.h>

#include "channel/client.h"
#include "cli/cli.h"
#include "config/config.h"
#include "measure/measure.h"
#include "proto/tune.h"
#include "netlink/kernel.h"
#include "shape/state.h"
#include "shape/units.h"
#include "tune/plot.h"
#include "tune/report.h"
#include "tune/run.h"
#include "tune/save.h"
#include "util/addr.h"
#include "util/log.h"
#include "util/text.h"
#include "util/print.h"

const char tune_usage[] =
	"Usage: wgshape [-j] tune IFACE [egress|ingress|both|client download]\n"
	"                   [server HOST[:PORT]]\n"
	"                   [download URL] [upload URL] [ping HOST] [target TIME]\n"
	"                   [streams N] [ipv4|ipv6] [save [network NAME]] [plot FILE]\n"
	"\n"
	"Find the highest rate whose latency under load stays at the idle level.\n"
	"  egress      upload from this host, shaped by cake on IFACE (the default)\n"
	"  ingress     download to this host, shaped through IFACE's IFB\n"
	"  client download   download to this host, shaped at the VPN server for this\n"
	"              peer: each step asks the server's wgshape daemon for the rate\n"
	"              (the rate channel; it needs client-download = yes there)\n"
	"  server      the far end runs `wgshape serve` (HTTP load and a UDP echo, port 4780)\n"
	"  download, upload, ping   or any HTTP server (a large file, a POST sink) and ICMP\n"
	"  target      added latency allowed: median TIME, 95th percentile 3 x TIME (5ms)\n"
	"  streams     parallel load streams (4)     ipv4|ipv6  the address family (ipv4)\n"
	"  save        keep the result for IFACE and this network, and apply it\n"
	"  network NAME  with save: keep it in the profile [network NAME] instead\n"
	"  plot FILE   an SVG chart of added latency and goodput against the rate\n"
	"The route to the far end must go through IFACE. Interrupted, the far end\n"
	"gone or IFACE set down, IFACE's shaping is put back exactly as it was. While\n"
	"tune runs, the daemon and apply leave IFACE alone; when it ends, the daemon\n"
	"reloads.\n";

/* ---- words ------------------------------------------------------------- */

/* Where the value of a word that takes a string goes; NULL: not such a word. */
static const char **string_word(struct tune_args *a, const char *w)
{
	if (!strcmp(w, "server"))
		return &a->server;
	if (!strcmp(w, "download"))
		return &a->download_url;
	if (!strcmp(w, "upload"))
		return &a->upload_url;
	if (!strcmp(w, "ping"))
		return &a->ping_host;
	if (!strcmp(w, "plot"))
		return &a->plot;
	if (!strcmp(w, "network"))
		return &a->network;
	return NULL;
}

/* A host name or an address: letters, digits and ".-_:%" (no spaces, no controls). */
static bool host_ok(const char *h)
{
	if (!*h)
		return false;
	for (; *h; h++)
		if (!g_ascii_isalnum(*h) && !strchr(".-_:%", *h))
			return false;
	return true;
}

/* http:// or https://, a host, and nothing a terminal or a shell line would break on. */
static bool url_ok(const char *u)
{
	size_t scheme = g_ascii_strncasecmp(u, "http://", 7) == 0	 ? 7 :
			g_ascii_strncasecmp(u, "https://", 8) == 0 ? 8 :
								     0;

	if (!scheme || !u[scheme] || u[scheme] == '/')
		return false;
	for (; *u; u++)
		if ((unsigned char)*u <= ' ' || *u == 0x7f)
			return false;
	return true;
}

/* The far end: wgshape serve, or a ping host with a URL for each direction. */
static int far_end_check(const struct tune_args *a, char *err, size_t errlen)
{
	g_autofree char *host = NULL;
	uint16_t port;

	if (a->server && (tune_split_server(a->server, &host, &port) < 0 || !host_ok(host))) {
		snprintf(err, errlen, "server: '%s' is not HOST, HOST:PORT (1 to 65535) or [IPv6]:PORT",
			 TEXT_QUOTE(a->server));
		return -EINVAL;
	}
	if (a->ping_host && !host_ok(a->ping_host)) {
		snprintf(err, errlen, "ping: '%s' is not a host name or address",
			 TEXT_QUOTE(a->ping_host));
		return -EINVAL;
	}
	for (size_t i = 0; i < 2; i++) {
		const char *u = i ? a->upload_url : a->download_url;

		if (u && !url_ok(u)) {
			snprintf(err, errlen, "%s: '%s' is not an http:// or https:// URL",
				 i ? "upload" : "download", TEXT_QUOTE(u));
			return -EINVAL;
		}
	}
	if (a->server && (a->download_url || a->upload_url || a->ping_host)) {
		snprintf(err, errlen, "server, or download/upload with ping: not both");
		return -EINVAL;
	}
	if (!a->server && !a->ping_host) {
		snprintf(err, errlen, "give server HOST (running wgshape serve), or ping HOST with "
				      "download URL / upload URL");
		return -EINVAL;
	}
	if (!a->server && ((a->egress && !a->upload_url) ||
			   ((a->ingress || a->server_download) && !a->download_url))) {
		snprintf(err, errlen, "%s needs %s URL",
			 a->egress && !a->upload_url ? "egress" :
			 a->ingress		     ? "ingress" :
						       "client download",
			 a->egress && !a->upload_url ? "upload" : "download");
		return -EINVAL;
	}
	return 0;
}

/*
 * The words egress, ingress, both and client download (v: the word after w):
 * 0 when w is none of them, else the words taken, or -EINVAL.
 */
static int dir_word(struct tune_args *a, bool *dir_given, const char *w, const char *v, char *err,
		    size_t errlen)
{
	if (strcmp(w, "egress") && strcmp(w, "ingress") && strcmp(w, "both") && strcmp(w, "client"))
		return 0;
	if (!strcmp(w, "client") && (!v || strcmp(v, "download") != 0)) {
		snprintf(err, errlen, "client: expected client download (the download, "
			 "shaped at the server)");
		return -EINVAL;
	}
	if (!*dir_given)
		a->egress = a->ingress = false;
	*dir_given = true;
	if (!strcmp(w, "client")) {
		a->server_download = true;
		return 2;
	}
	a->egress |= strcmp(w, "ingress") != 0;
	a->ingress |= strcmp(w, "egress") != 0;
	return 1;
}

/* A word with a value (v): 0 when w is none of them, else the words taken, or -EINVAL. */
static int value_word(struct tune_args *a, const char *w, const char *v, char *err, size_t errlen)
{
	const char **dst = string_word(a, w);
	uint32_t us;
	long n;

	if (dst) {
		if (!v || !*v) {
			snprintf(err, errlen, "%s: missing its value", w);
			return -EINVAL;
		}
		*dst = v;
		return 2;
	}
	if (!strcmp(w, "target")) {
		if (!v || parse_time(v, &us) < 0 || us > 1000000) {
			snprintf(err, errlen, "target: '%s' is not a time up to 1s (e.g. 5ms)",
				 v ? v : "");
			return -EINVAL;
		}
		a->target_us = us;
		return 2;
	}
	if (!strcmp(w, "streams")) {
		if (!v || parse_int_range(v, 1, 16, &n) < 0) {
			snprintf(err, errlen, "streams: '%s' is not a number from 1 to 16",
				 v ? v : "");
			return -EINVAL;
		}
		a->streams = (unsigned int)n;
		return 2;
	}
	return 0;
}

int tune_args_parse(int argc, char **argv, struct tune_args *out, char *err, size_t errlen)
{
	struct tune_args a = { .streams = 4, .family = AF_INET, .egress = true };
	bool dir_given = false;

	for (int i = 0; i < argc; i++) {
		const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int took = dir_word(&a, &dir_given, w, v, err, errlen);

		if (!took && (!strcmp(w, "ipv4") || !strcmp(w, "ipv6"))) {
			a.family = w[3] == '4' ? AF_INET : AF_INET6;
			took = 1;
		} else if (!took && !strcmp(w, "save")) {
			a.save = true;
			took = 1;
		} else if (!took) {
			took = value_word(&a, w, v, err, errlen);
		}
		if (!took) {
			snprintf(err, errlen, "'%s' is not an option of tune (see wgshape tune --help)",
				 w);
			return -EINVAL;
		}
		if (took < 0)
			return took;
		i += took - 1;
	}
	if (far_end_check(&a, err, errlen) < 0)
		return -EINVAL;
	if (a.network && !a.save) {
		snprintf(err, errlen, "network NAME says where save keeps the result: give save too");
		return -EINVAL;
	}
	*out = a;
	return 0;
}

/* HOST[:PORT], [V6]:PORT or V6 -> host (owned) and port. */
int tune_split_server(const char *s, char **host, uint16_t *port)
{
	const char *colon;
	long n = TUNE_PORT;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end == s + 1 || (end[1] && end[1] != ':'))
			return -EINVAL;
		if (end[1] == ':' && parse_int_range(end + 2, 1, 65535, &n) < 0)
			return -EINVAL;
		*host = g_strndup(s + 1, (gsize)(end - s - 1));
		*port = (uint16_t)n;
		return 0;
	}
	colon = strrchr(s, ':');
	if (colon && strchr(s, ':') == colon) {
		if (colon == s || parse_int_range(colon + 1, 1, 65535, &n) < 0)
			return -EINVAL;
		*host = g_strndup(s, (gsize)(colon - s));
	} else {
		*host = g_strdup(s); /* a name, an IPv4 address, or a bare IPv6 one */
	}
	if (!**host) {
		g_free(*host);
		return -EINVAL;
	}
	*port = (uint16_t)n;
	return 0;
}

/* ---- the command ------------------------------------------------------- */

/* IFACE and the words after it: EXIT_OK, or EXIT_USAGE (said). */
static int parse_words(int argc, char **argv, struct tune_args *a)
{
	char err[256];

	if (argc < 2) {
		log_err("tune: needs IFACE and a far end, e.g. server HOST "
			"(see wgshape tune --help)");
		return EXIT_USAGE;
	}
	if (!ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (tune_args_parse(argc - 2, argv + 2, a, err, sizeof(err)) < 0) {
		log_err("tune %s: %s", argv[1], err);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/*
 * Open netlink, find IFACE (its ifindex tells it from one made again while
 * tune runs) and hold it: the daemon, apply and the dispatcher hook leave it
 * alone until we end. 0, or -errno (said) with nothing left open.
 */
static int hold_iface(const struct cli *cli, const char *ifname, struct netlink **nl, int *ifindex)
{
	struct link_info link;
	pid_t holder;
	int r;

	r = cli_netlink_open(nl);
	if (r < 0)
		return r;
	r = netlink_link_get(*nl, ifname, &link);
	if (r < 0) {
		log_err("%s: %s", ifname, r == -ENODEV ? "no such interface" : strerror(-r));
		goto fail;
	}
	r = state_hold(cli->statedir, ifname, &holder);
	if (r == -EBUSY) {
		log_err("%s: another wgshape tune (pid %d) is measuring it", ifname, (int)holder);
		goto fail;
	} else if (r < 0) {
		log_err("%s: tune: cannot hold it in %s: %s", ifname, cli->statedir, strerror(-r));
		goto fail;
	}
	*ifindex = link.ifindex;
	return 0;
fail:
	netlink_close(*nl);
	*nl = NULL;
	return r;
}

/* The words as tune/ takes them; the server's host goes into *host (owned). */
static int opts_from_args(const struct tune_args *a, const struct cli *cli, const char *ifname,
			  int ifindex, struct tune_opts *o, char **host)
{
	*o = (struct tune_opts){
		.ifname = ifname,
		.ifindex = ifindex,
		.statedir = cli->statedir,
		.dirs = { a->egress, a->ingress, a->server_download },
		.serve = a->server != NULL,
		.host = a->ping_host,
		.download_url = a->download_url,
		.upload_url = a->upload_url,
		.target_us = a->target_us,
		.streams = a->streams,
		.family = a->family,
	};
	if (!a->server)
		return 0;
	if (tune_split_server(a->server, host, &o->port) < 0) {
		log_err("tune %s: server: '%s' is not HOST or HOST:PORT", ifname, a->server);
		return -EINVAL;
	}
	o->host = *host;
	return 0;
}

/*
 * The rate channel's server for client download: the rate server the
 * configuration's profiles name, else tune's own server when it is an
 * address, else the tunnel's only peer (rate_client_server()).
 */
static int rate_server_for(const struct cli *cli, struct netlink *nl, struct tune_opts *o,
			   char addr[INET6_ADDRSTRLEN])
{
	g_autoptr(config_t) cfg = NULL;
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	const char *server = NULL;
	char why[192];
	uint8_t a[16];
	int family;

	cfg = cli_config_optional(cli);
	if (!cfg)
		return -EINVAL;
	config_networks_for(cfg, o->ifname, profs);
	for (guint i = 0; i < profs->len && !server; i++)
		server = ((const struct conf_section *)profs->pdata[i])->net.server;
	if (!server && o->serve && addr_parse(o->host, &family, a) == 0)
		server = o->host;
	o->rate_port = cfg->rate_port ? cfg->rate_port : RATE_PORT;
	if (rate_client_server(nl, o->ifname, server, addr, why, sizeof(why)) < 0) {
		log_err("tune %s client download: %s", o->ifname, why);
		return -EINVAL;
	}
	o->rate_server = addr;
	return 0;
}

/* Egress, ingress, then the server's, as asked, each reported as it ends; into done[]. */
static int run_directions(struct netlink *nl, const struct tune_opts *o, struct tune_run *runs,
			  struct tune_run **done, size_t *n)
{
	int status = EXIT_OK, r = 0;

	for (int d = 0; d < TUNE_DIRS && r == 0; d++) {
		struct tune_run *t = &runs[d];

		if (!o->dirs[d])
			continue;
		r = tune_run_direction(t, nl, o, (enum tune_dir)d);
		done[(*n)++] = t;
		if (r < 0 || t->search.phase == TUNE_FAILED)
			status = EXIT_FAIL;
		/* A failed run said why on stderr already; JSON has it as an object too. */
		if (r == 0 || print_is_json())
			tune_report(t);
	}
	return status;
}

/*
 * save with network NAME: a [network NAME] profile must name the tunnel, or
 * there is nowhere to keep the result (said before anything is measured).
 */
static bool network_ok_or_say(const struct cli *cli, const char *ifname, const char *name)
{
	g_autoptr(config_t) cfg = cli_config_optional(cli);
	g_autoptr(GPtrArray) profs = g_ptr_array_new();

	if (!cfg)
		return false;
	config_networks_for(cfg, ifname, profs);
	for (guint i = 0; i < profs->len; i++)
		if (!strcmp(((const struct conf_section *)profs->pdata[i])->name, name))
			return true;
	log_err("tune %s: network '%s': no [network %s] profile names %s in the configuration",
		ifname, TEXT_QUOTE(name), TEXT_QUOTE(name), ifname);
	return false;
}

/* The chart and the saved rate, as asked. */
static int keep_result(const struct tune_args *a, const struct cli *cli, struct netlink *nl,
		       const char *ifname, struct tune_run *const *done, size_t n)
{
	if (!n)
		return EXIT_OK;
	if (a->plot && tune_plot(a->plot, done, n) < 0)
		return EXIT_FAIL;
	if (a->save && (tune_save(cli->config_path, a->network, done, n) < 0 ||
			tune_apply_saved(cli->config_path, cli->statedir, nl, ifname) < 0))
		return EXIT_FAIL;
	return EXIT_OK;
}

int tune_main(int argc, char **argv, const struct cli *cli)
{
	struct tune_args a;
	struct tune_opts o;
	struct tune_run runs[TUNE_DIRS] = { 0 }, *done[TUNE_DIRS];
	char rate_server[INET6_ADDRSTRLEN];
	struct netlink *nl = NULL;
	g_autofree char *host = NULL;
	size_t n = 0;
	int ifindex, status;

	status = parse_words(argc, argv, &a);
	if (status != EXIT_OK)
		return status;
	if (a.network && !network_ok_or_say(cli, argv[1], a.network))
		return EXIT_USAGE;
	if (!cli_can_net_admin(argv[1]) || print_begin(cli->json) < 0)
		return EXIT_FAIL;
	if (hold_iface(cli, argv[1], &nl, &ifindex) < 0)
		return EXIT_FAIL;

	tune_catch_signals();
	print_open_array(NULL);
	if (opts_from_args(&a, cli, argv[1], ifindex, &o, &host) < 0)
		status = EXIT_USAGE;
	else if (a.server_download && rate_server_for(cli, nl, &o, rate_server) < 0)
		status = EXIT_FAIL;
	else
		status = run_directions(nl, &o, runs, done, &n);
	print_close_array();
	if (status == EXIT_OK)
		status = keep_result(&a, cli, nl, argv[1], done, n);
	print_end();

	for (int d = 0; d < TUNE_DIRS; d++)
		tune_run_clear(&runs[d]);
	state_release(cli->statedir, argv[1]);
	netlink_close(nl);
	return status;
}
