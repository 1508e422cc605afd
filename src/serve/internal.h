/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of the serve module share; no one outside includes it.
 * serve.c owns the server and its listeners (one per address: a TCP and a
 * UDP socket on the same port); http.c serves HTTP on a listener's TCP socket
 * (the only file that includes <microhttpd.h>); echo.c answers on the UDP
 * ones from a loop and thread of its own, which also runs http.c's head
 * deadlines; addr.c and query.c are the pure address and query work.
 */
#ifndef WGSHAPE_SERVE_INTERNAL_H
#define WGSHAPE_SERVE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <glib.h>

#include "serve/serve.h"

struct MHD_Daemon;
struct echo;

struct listener {
	struct server *srv;
	struct serve_addr addr;
	char name[SERVE_ADDR_STR_SIZE];
	int tcp, udp; /* -1 when closed or handed over */
	struct MHD_Daemon *mhd;
};

struct server {
	struct serve_opts opts; /* defaults filled in; addrs not kept */
	uint16_t port;
	struct listener *ls;
	size_t n_ls;
	gint streams; /* load streams running, all addresses together */
	struct echo *echo;
	GMutex watch_lock; /* http.c's connection watches */
};

/* addr.c */
/* a with port as a socket address; its length. */
socklen_t serve_addr_sockaddr(const struct serve_addr *a, uint16_t port,
			      struct sockaddr_storage *ss);
bool serve_addr_is_any(const struct serve_addr *a); /* 0.0.0.0 or :: */
uint16_t serve_sockaddr_port(const struct sockaddr_storage *ss);

/* http.c: HTTP on l->tcp, which it takes over. -EIO when libmicrohttpd fails. */
int serve_http_start(struct listener *l);
/* Waits for the requests running to end. Before serve_echo_free(): the
 * connections' deadline timers are on the echo's loop. */
void serve_http_stop(struct listener *l);

/* echo.c: the UDP echo of every listener, on a thread started by serve_echo_run(). */
struct echo *serve_echo_new(void);
void serve_echo_add(struct echo *e, struct listener *l);
void serve_echo_run(struct echo *e);
/* The echo's loop, for other timers of the server (they run on its thread). */
GMainContext *serve_echo_context(struct echo *e);
void serve_echo_free(struct echo *e); /* stops the thread first; NULL is fine */

#endif
