// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape serve: the listeners (a TCP and a UDP socket per address, on one
 * port), started and stopped together. HTTP is http.c's, the echo echo.c's.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <glib.h>

#include "serve/internal.h"
#include "util/log.h"

static int open_socket(const struct serve_addr *a, int type, uint16_t port, uint16_t *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = serve_addr_sockaddr(a, port, &ss);
	int one = 1, fd, r;

	fd = socket(a->family, type | SOCK_CLOEXEC | (type == SOCK_DGRAM ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -errno;
	/* `listen ::` means IPv6 only; `listen 0.0.0.0` can then sit beside it. */
	if (a->family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	/* A restart must not wait for the last run's TIME_WAIT connections. */
	if (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		goto fail;
	if (type == SOCK_STREAM && listen(fd, 64) < 0)
		goto fail;
	if (bound) {
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			goto fail;
		*bound = serve_sockaddr_port(&ss);
	}
	return fd;
fail:
	r = -errno;
	close(fd);
	return r;
}

/*
 * l's sockets on srv->port, and HTTP and the echo on them. Port 0: the first
 * socket picks one and the others follow it.
 */
static int listener_open(struct server *srv, struct listener *l)
{
	int r;

	r = open_socket(&l->addr, SOCK_STREAM, srv->port, srv->port ? NULL : &srv->port);
	if (r < 0)
		return r;
	l->tcp = r;
	r = open_socket(&l->addr, SOCK_DGRAM, srv->port, NULL);
	if (r < 0)
		return r;
	l->udp = r;
	r = serve_http_start(l);
	if (r < 0)
		return r;
	serve_echo_add(srv->echo, l);
	return 0;
}

static void listener_close(struct listener *l)
{
	if (l->tcp >= 0)
		close(l->tcp);
	if (l->udp >= 0)
		close(l->udp);
}

static void log_listening(const struct server *srv)
{
	for (size_t i = 0; i < srv->n_ls; i++) {
		const struct listener *l = &srv->ls[i];
		const char *where = l->addr.ifname;

		if (!*where && serve_addr_is_any(&l->addr))
			where = "every address";
		log_info("serve: listening on %s port %u%s%s%s%s: HTTP and UDP echo", l->name,
			 srv->port, *where ? " (" : "", where,
			 l->addr.ifname[0] && !l->addr.tunnel ? ", not a tunnel" : "",
			 *where ? ")" : "");
	}
}

static void fill_defaults(struct serve_opts *o)
{
	if (!o->max_streams)
		o->max_streams = SERVE_MAX_STREAMS;
	if (!(o->max_seconds > 0))
		o->max_seconds = SERVE_MAX_SECONDS;
	if (!o->conn_timeout)
		o->conn_timeout = SERVE_CONN_TIMEOUT;
	if (!o->head_timeout)
		o->head_timeout = SERVE_HEAD_TIMEOUT;
	if (!(o->udp_rate > 0))
		o->udp_rate = SERVE_UDP_RATE;
	if (!(o->udp_burst >= 1))
		o->udp_burst = SERVE_UDP_BURST;
	o->addrs = NULL;
	o->n_addrs = 0;
}

/*
 * One try at opening every listener. With port 0 the first socket picks a
 * free port and the rest follow it; another program may hold that number in
 * the other protocol or family, which is -EADDRINUSE with @quiet_busy set
 * so the caller can try a fresh port without a line in the log.
 */
static int serve_start_once(const struct serve_opts *opts, bool quiet_busy, struct server **out)
{
	struct server *srv;
	int r;

	if (!opts->n_addrs)
		return -EINVAL;
	srv = g_new0(struct server, 1);
	srv->opts = *opts;
	fill_defaults(&srv->opts);
	srv->port = opts->port;
	g_mutex_init(&srv->watch_lock);
	srv->echo = serve_echo_new();
	srv->ls = g_new0(struct listener, opts->n_addrs);
	for (size_t i = 0; i < opts->n_addrs; i++) {
		struct listener *l = &srv->ls[i];

		l->srv = srv;
		l->addr = opts->addrs[i];
		l->tcp = l->udp = -1;
		serve_addr_str(&l->addr, l->name, sizeof(l->name));
		srv->n_ls++;
		r = listener_open(srv, l);
		if (r < 0) {
			if (!(quiet_busy && r == -EADDRINUSE))
				log_err("serve: listen on %s port %u: %s", l->name, srv->port,
					r == -EIO ? "libmicrohttpd could not start" : g_strerror(-r));
			serve_stop(srv);
			return r;
		}
	}
	serve_echo_run(srv->echo);
	log_listening(srv);
	*out = srv;
	return 0;
}

int serve_start(const struct serve_opts *opts, struct server **out)
{
	enum { TRIES = 16 };
	int r;

	if (opts->port)
		return serve_start_once(opts, false, out);
	for (int i = 1;; i++) {
		r = serve_start_once(opts, i < TRIES, out);
		if (r != -EADDRINUSE || i >= TRIES)
			return r;
	}
}

uint16_t serve_port(const struct server *srv)
{
	return srv->port;
}

unsigned int serve_streams(const struct server *srv)
{
	return (unsigned int)g_atomic_int_get(&srv->streams);
}

void serve_stop(struct server *srv)
{
	if (!srv)
		return;
	/* HTTP first: its connections' timers run on the echo's thread. Then the
	 * echo, before the sockets close: that thread reads the UDP ones. */
	for (size_t i = 0; i < srv->n_ls; i++)
		serve_http_stop(&srv->ls[i]);
	serve_echo_free(srv->echo);
	for (size_t i = 0; i < srv->n_ls; i++)
		listener_close(&srv->ls[i]);
	g_mutex_clear(&srv->watch_lock);
	g_free(srv->ls);
	g_free(srv);
}
