/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wgshape tune, the run of one direction: prove that the path to the far end
 * takes the interface, measure it idle, unshaped and at each rate the search
 * (tune.h) asks for, and put the interface's shaping back exactly as it was,
 * whatever happens. The step table is printed as the steps are taken; the
 * rest of the report (report.h), the chart (plot.h) and the saved result
 * (save.h) read the struct tune_run a run leaves.
 */
#ifndef WGSHAPE_TUNE_RUN_H
#define WGSHAPE_TUNE_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "channel/client.h"
#include "netlink/kernel.h"
#include "tune/tune.h"

/* The directions tune measures. */
enum tune_dir {
	TUNE_EGRESS, /* upload from this host: cake on IFACE */
	TUNE_INGRESS, /* download to this host: cake on IFACE's IFB */
	TUNE_SERVER, /* download to this host, shaped at the server through the rate channel */
	TUNE_DIRS,
};

/* What to tune and against what: the command's words, checked. */
struct tune_opts {
	const char *ifname;
	int ifindex; /* IFACE's when tune began: another one later is not ours */
	const char *statedir;
	bool dirs[TUNE_DIRS]; /* directions to tune */
	const char *rate_server; /* TUNE_SERVER: the server's tunnel address */
	unsigned int rate_port; /* and its rate port */
	bool serve; /* the far end runs wgshape serve: UDP echo probes, its HTTP load */
	const char *host; /* the probe target (serve's host, or the ping host) */
	uint16_t port; /* serve's port */
	const char *download_url, *upload_url; /* the load without serve */
	uint32_t target_us; /* 0: the defaults */
	unsigned int streams;
	int family; /* AF_INET or AF_INET6, forced for every address */
};

/* IFACE's shaping in one direction before tune, to be put back. */
struct tune_before {
	bool shaped; /* wgshape's cake was there */
	bool had_state; /* wgshape shaped IFACE in either direction */
	struct cake_opts opts; /* as the kernel reported it */
	char source[256];
	bool had_record; /* TUNE_SERVER: what this host had asked the server for */
	struct rate_record record;
};

struct tune_run {
	const struct tune_opts *o;
	enum tune_dir dir; /* this run's */
	struct lat_stats idle;
	struct tune_step single, unshaped, rule20, final;
	double single_stream_goodput;
	GArray *steps; /* struct tune_step, in the order taken */
	struct tune_search search;
	double seconds;
	char failure[320]; /* why the run stopped, "" if it did not */

	/* the run's own */
	struct netlink *nl;
	char *url; /* the load's */
	struct tune_before before;
	bool before_read; /* before holds the kernel's view: there is something to restore */
	bool tty;
};

/* Stop a run at SIGINT, SIGTERM or SIGHUP, and restore what it changed. */
void tune_catch_signals(void);

/*
 * Tune one direction of o->ifname into *t (zeroed; tune_run_clear() frees it
 * even after a failure). IFACE's shaping is as it was when this returns. 0,
 * with t->search saying what was found, or -errno: t->failure says why, and
 * it is logged.
 */
int tune_run_direction(struct tune_run *t, struct netlink *nl, const struct tune_opts *o,
		       enum tune_dir dir);
void tune_run_clear(struct tune_run *t);

/* "egress", "ingress" or "download" (at the server): the key save writes */
const char *tune_run_dir(const struct tune_run *t);

#endif
