// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape serve [listen ADDR [any-source]]... [port N]: the far end of
 * `wgshape tune`. Picks the addresses (the WireGuard interfaces' unless told),
 * starts the server (serve.c) and waits on a GLib loop for SIGTERM or SIGINT.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include <glib-unix.h>

#include "cli/cli.h"
#include "util/log.h"
#include "netlink/kernel.h"
#include "proto/tune.h"
#include "serve/serve.h"
#include "util/notify.h"

#define LISTEN_MAX 16

const char serve_usage[] =
	"Usage: wgshape [-v] serve [listen ADDR [any-source]]... [port N]\n"
	"\n"
	"The far end of 'wgshape tune': on port N (default 4780) an HTTP/1.1 download\n"
	"stream (GET /download) and upload sink (POST /upload) for load, and a UDP echo\n"
	"for latency probes. By default it listens only on the addresses of this host's\n"
	"WireGuard interfaces, so only tunnel peers reach it. 'listen ADDR' (repeatable;\n"
	"fe80::1%wg0 for a link-local address) listens there instead. On an address that\n"
	"is not a WireGuard interface's it answers any host that reaches it, with a\n"
	"warning; 'any-source' after ADDR says that is meant, and 0.0.0.0 or :: (every\n"
	"address of that family, the tunnels' and all others) is refused without it.\n"
	"Caps: 16 load streams at once, 60 s per request, 20 connections per source\n"
	"address, 5 s for a request's head, 10 s idle per connection; UDP probe requests\n"
	"of at most 64 bytes, 50 answers per second per source address.\n"
	"-v logs every request. Runs until SIGTERM or SIGINT.\n";

struct serve_args {
	struct serve_addr listen[LISTEN_MAX];
	size_t n_listen;
	uint16_t port;
};

static bool parse_port(const char *s, uint16_t *out)
{
	char *end;
	unsigned long v;

	if (!g_ascii_isdigit(*s))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

/* tc-style words; a bad one is one line and exit 2. */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	bool have_port = false;
	char err[256];
	int r;

	a->port = TUNE_PORT;
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		g_autofree char *shown = NULL;

		if (strcmp(w, "listen") != 0 && strcmp(w, "port") != 0) {
			shown = g_strescape(w, NULL);
			log_err("serve: unknown word '%s' (see wgshape serve --help)", shown);
			return -EINVAL;
		}
		if (!v) {
			log_err("serve: %s needs a value (%s)", w,
				!strcmp(w, "port") ? "port 4780" : "listen 10.0.0.1");
			return -EINVAL;
		}
		if (!strcmp(w, "listen")) {
			if (a->n_listen == LISTEN_MAX) {
				log_err("serve: more than %d listen addresses", LISTEN_MAX);
				return -EINVAL;
			}
			r = serve_listen_parse(v, i + 2 < argc ? argv[i + 2] : NULL,
					       &a->listen[a->n_listen], err, sizeof(err));
			if (r < 0) {
				log_err("serve: %s", err);
				return r;
			}
			a->n_listen++;
			i += r;
			continue;
		}
		i++;
		shown = g_strescape(v, NULL);
		if (have_port) {
			log_err("serve: port given twice");
			return -EINVAL;
		}
		if (!parse_port(v, &a->port)) {
			log_err("serve: port '%s': a number from 1 to 65535", shown);
			return -EINVAL;
		}
		have_port = true;
	}
	return 0;
}

/* The addresses to listen on; 0, or the exit code. */
static int pick(const struct serve_args *a, struct serve_addr **out, size_t *n)
{
	struct netlink *nl = NULL;
	struct link_info *links = NULL;
	struct addr_info *addrs = NULL;
	size_t n_links = 0, n_addrs = 0;
	char err[256];
	int r;

	r = netlink_open(&nl);
	if (r == 0)
		r = netlink_link_list(nl, &links, &n_links);
	if (r == 0)
		r = netlink_addr_list(nl, &addrs, &n_addrs);
	netlink_close(nl);
	if (r < 0) {
		log_err("serve: listing interfaces and addresses: %s", g_strerror(-r));
		free(links);
		free(addrs);
		return EXIT_FAIL;
	}
	r = serve_pick_addresses(links, n_links, addrs, n_addrs, a->listen, a->n_listen, out, n,
				 err, sizeof(err));
	free(links);
	free(addrs);
	if (r < 0) {
		log_err("serve: %s", err);
		/* Nothing to listen on is the host's state; anything else a bad word. */
		return r == -ENOENT ? EXIT_FAIL : EXIT_USAGE;
	}
	return 0;
}

static gboolean on_term(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_CONTINUE;
}

int serve_main(int argc, char **argv, const struct cli *cli)
{
	struct serve_args a = { 0 };
	struct serve_addr *addrs = NULL;
	struct server *srv = NULL;
	GMainLoop *loop;
	size_t n = 0;
	int r;

	if (parse_args(argc, argv, &a) < 0)
		return EXIT_USAGE;
	/* Under systemd, keep the levels in the journal. */
	if (getenv("JOURNAL_STREAM"))
		log_use_syslog_prefix(true);
	r = pick(&a, &addrs, &n);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		char name[SERVE_ADDR_STR_SIZE];

		if (addrs[i].tunnel || addrs[i].any_source)
			continue;
		serve_addr_str(&addrs[i], name, sizeof(name));
		log_warn("serve: %s is not a WireGuard interface's address: reachable from "
			 "outside the tunnel", name);
	}
	r = serve_start(&(struct serve_opts){ .addrs = addrs, .n_addrs = n, .port = a.port,
					      .verbose = cli->verbose > 0 },
			&srv);
	g_free(addrs);
	if (r < 0)
		return EXIT_FAIL;

	loop = g_main_loop_new(NULL, FALSE);
	g_unix_signal_add(SIGTERM, on_term, loop);
	g_unix_signal_add(SIGINT, on_term, loop);
	notify_systemd("READY=1");
	g_main_loop_run(loop);
	notify_systemd("STOPPING=1");
	serve_stop(srv);
	g_main_loop_unref(loop);
	log_info("serve: stopped");
	return EXIT_OK;
}
