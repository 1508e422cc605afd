// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape: cake on WireGuard interfaces. The table below dispatches the
 * subcommands and prints the usage.
 *
 * This file makes two programs. wgshape-measure (built with WGSHAPE_MEASURE)
 * has every command; wgshape runs it, in its own place, for tune and serve.
 * Those two bring libcurl, libmicrohttpd and their TLS stacks, which the
 * dispatcher hook (run on every network change), set and the daemon have no
 * use for and should not pay for at each start.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

#include "build-config.h"
#include "cli/cli.h"
#include "config/config.h"
#include "shape/state.h"
#include "util/log.h"
#include "util/module.h"
#include "util/text.h"

#ifdef WGSHAPE_MEASURE
#define MEASURE(fn) fn
#define MEASURE_TEXT(text) text
#else
#define MEASURE(fn) exec_measure
#define MEASURE_TEXT(text) NULL
static char **argv_as_given;

/*
 * The command line as given, to wgshape-measure: beside this program in a
 * build tree, else where it is installed. exec keeps the PID: signals, a
 * tune's hold and systemd's notify socket are the same process's.
 */
static int exec_measure(int argc, char **argv, const struct cli *cli)
{
	g_autofree char *path = installed_file("wgshape-measure", WGSHAPE_LIBEXECDIR);

	argv_as_given[0] = path;
	execv(path, argv_as_given);
	log_err("%s: cannot run %s: %s", argv[0], path, g_strerror(errno));
	return EXIT_FAIL;
}
#endif

static int help_main(int argc, char **argv, const struct cli *cli);

/*
 * Every command, once: what runs it, its line in the usage, and its own help
 * (a text, or a function where the text comes from a table). A NULL help in
 * wgshape is a command of wgshape-measure, which gives its help itself.
 */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv, const struct cli *cli);
	const char *summary;
	const char *usage;
	void (*help)(void);
} commands[] = {
	{ "set", set_main, "attach or change cake on an interface (egress, ingress via IFB)",
	  NULL, set_help },
	{ "show", show_main, "show shaping as the kernel reports it, with cake's statistics",
	  show_usage },
	{ "clear", clear_main, "remove shaping and put back what was there before", clear_usage },
	{ "apply", apply_main, "apply the configuration once (idempotent)", apply_usage },
	{ "check-config", check_config_main, "validate the configuration and print it",
	  check_config_usage },
	{ "daemon", daemon_main, "keep interfaces shaped as configured (systemd service)",
	  daemon_usage },
	{ "dispatch", dispatch_main, "NetworkManager dispatcher hook: follow the network",
	  dispatch_usage },
	{ "metrics", metrics_main, "shaping as Prometheus metrics (text exposition format)",
	  metrics_usage },
	{ "plot-trace", plot_trace_main, "draw the daemon's adaptation trace (adapt-log) as SVG",
	  plot_trace_usage },
	{ "tune", MEASURE(tune_main), "find the highest rate that keeps latency at the idle level",
	  MEASURE_TEXT(tune_usage) },
	{ "serve", MEASURE(serve_main), "the far end of tune: load and echo for tunnel peers",
	  MEASURE_TEXT(serve_usage) },
	{ "help", help_main, "show this help, or a command's", NULL },
};

static void usage(FILE *f)
{
	fputs("Usage: wgshape [-j|--json] [-v] [-c FILE] COMMAND [ARGS...]\n"
	      "Shape WireGuard tunnels with cake, accounting for the tunnel's overhead.\n\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
		fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
	fputs("\nOptions (before the command; -j may follow it too):\n"
	      "  -j, --json     JSON output (base units: bit/s, bytes, microseconds)\n"
	      "  -v, --verbose  say more\n"
	      "  -c, --config FILE  configuration (default " CONFIG_DEFAULT_PATH ")\n"
	      "  -h, --help     this help; 'wgshape COMMAND --help' for a command's\n"
	      "  -V, --version  print the version\n"
	      "\nEnvironment: WGSHAPE_STATE_DIR (default " WGSHAPE_RUNDIR ")\n",
	      f);
}

static const struct command *command(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* The command's help on stdout; false when this program does not have it. */
static bool command_help(const struct command *c)
{
	if (c->help)
		c->help();
	else if (c->usage)
		fputs(c->usage, stdout);
	else
		return false;
	return true;
}

static int help_main(int argc, char **argv, const struct cli *cli)
{
	const struct command *c;

	if (argc < 2 || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	c = command(argv[1]);
	if (!c) {
		log_err("help: no command '%s' (see wgshape help)", argv[1]);
		return EXIT_USAGE;
	}
	if (command_help(c))
		return EXIT_OK;
	return c->fn(argc, argv, cli); /* wgshape-measure's help */
}

/*
 * An option among a command's words (`check-config -c FILE`): the options
 * are wgshape's and go before the command; say so rather than let the
 * command call it a word it does not take. "-4" is a word (an overhead).
 */
static bool option_after(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-' || (argv[i][1] >= '0' && argv[i][1] <= '9'))
			continue;
		log_err("%s: '%s' is an option: options go before the command "
			"(wgshape [-j] [-v] [-c FILE] %s ...; see wgshape --help)",
			argv[0], TEXT_QUOTE(argv[i]), argv[0]);
		return true;
	}
	return false;
}

/* wgshape's own options, before the command: -1 to go on, else the exit code. */
static int global_options(int argc, char **argv, struct cli *cli)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "config", required_argument, NULL, 'c' },
		{ 0 },
	};
	int opt;

	opterr = 0; /* one line of our own instead */
	/* Stop at the command: its own words (and -h) are its business. */
	while ((opt = getopt_long(argc, argv, "+jvhVc:", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			cli->json = true;
			break;
		case 'v':
			cli->verbose++;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			puts("wgshape " WGSHAPE_VERSION);
			return EXIT_OK;
		case 'c':
			cli->config_path = optarg;
			break;
		default:
			log_err("'%s': unknown option or missing value (see wgshape --help)",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

/* -j after the command too: `wgshape show -j` is what people type. argc without them. */
static int json_after(int argc, char **argv, struct cli *cli)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-j") != 0 && strcmp(argv[i], "--json") != 0)
			continue;
		cli->json = true;
		memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof(*argv));
		argc--;
		i--;
	}
	return argc;
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	g_autofree char *statedir = NULL;
	const struct command *c;
	const char *env;
	int r;

#ifndef WGSHAPE_MEASURE
	argv_as_given = g_memdup2(argv, ((gsize)argc + 1) * sizeof(*argv));
#endif
	r = global_options(argc, argv, &cli);
	if (r >= 0)
		return r;
	if (cli.verbose)
		log_set_level(LOG_LVL_DEBUG);
	env = getenv("WGSHAPE_STATE_DIR");
	statedir = state_dir_for_netns(env && *env ? env : WGSHAPE_RUNDIR);
	cli.statedir = statedir;
	if (optind >= argc) {
		log_err("missing COMMAND (see wgshape --help)");
		return EXIT_USAGE;
	}
	argc = json_after(argc - optind, argv + optind, &cli);
	argv += optind;
	c = command(argv[0]);
	if (!c) {
		log_err("'%s' is not a command (see wgshape help)", argv[0]);
		return EXIT_USAGE;
	}
	if (c->fn != help_main && cli_wants_help(argc, argv) && command_help(c))
		return EXIT_OK;
	if (c->fn != help_main && option_after(argc, argv))
		return EXIT_USAGE;
	return c->fn(argc, argv, &cli);
}
