// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The UDP echo: a GLib loop on a context and thread of its own, so neither
 * the caller's loop nor a test's blocking sockets have to drive it. What it
 * answers, and with what, is the protocol's rule (tune_echo_accept(),
 * tune_probe_answer(), with tune_stamp_ns(), CLOCK_MONOTONIC plus a random
 * offset, for a timed probe's times); how often, a token bucket per source address.
 */
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <glib.h>
#include <glib-unix.h>

#include "serve/internal.h"

/* Sources the echo remembers; past this, idle ones are forgotten, then new ones refused. */
#define UDP_SOURCES_MAX 4096
/* Datagrams read per wakeup, so one busy socket cannot starve the others. */
#define UDP_BATCH 64

/* Only its thread touches buckets once it runs. */
struct echo {
	GMainContext *ctx;
	GMainLoop *loop;
	GThread *thread;
	GHashTable *buckets; /* struct src_key -> struct src_entry */
};

void token_bucket_init(struct token_bucket *b, double burst, int64_t now_us)
{
	b->tokens = burst;
	b->last_us = now_us;
}

bool token_bucket_take(struct token_bucket *b, double rate, double burst, int64_t now_us)
{
	if (now_us > b->last_us) {
		b->tokens += (double)(now_us - b->last_us) * rate / 1e6;
		if (b->tokens > burst)
			b->tokens = burst;
		b->last_us = now_us;
	}
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

struct src_key {
	uint8_t family;
	uint8_t addr[16];
};

struct src_entry {
	struct src_key key; /* first: the table's key points here */
	struct token_bucket tb;
};

static guint src_hash(gconstpointer p)
{
	const struct src_key *k = p;
	guint h = k->family;

	for (size_t i = 0; i < sizeof(k->addr); i++)
		h = h * 31 + k->addr[i];
	return h;
}

static gboolean src_equal(gconstpointer a, gconstpointer b)
{
	return !memcmp(a, b, sizeof(struct src_key));
}

struct prune {
	const struct server *srv;
	int64_t now;
};

static gboolean src_idle(gpointer key, gpointer value, gpointer data)
{
	const struct src_entry *e = value;
	const struct prune *p = data;

	/* Full again by now: forgetting it changes nothing. */
	return e->tb.tokens + (double)(p->now - e->tb.last_us) * p->srv->opts.udp_rate / 1e6 >=
	       p->srv->opts.udp_burst;
}

static bool udp_allowed(struct server *srv, const struct sockaddr_storage *from, int64_t now)
{
	GHashTable *buckets = srv->echo->buckets;
	struct src_key key = { .family = (uint8_t)from->ss_family };
	struct src_entry *e;

	if (from->ss_family == AF_INET)
		memcpy(key.addr, &((const struct sockaddr_in *)from)->sin_addr, 4);
	else
		memcpy(key.addr, &((const struct sockaddr_in6 *)from)->sin6_addr, 16);
	e = g_hash_table_lookup(buckets, &key);
	if (!e) {
		if (g_hash_table_size(buckets) >= UDP_SOURCES_MAX) {
			struct prune p = { srv, now };

			g_hash_table_foreach_remove(buckets, src_idle, &p);
			if (g_hash_table_size(buckets) >= UDP_SOURCES_MAX)
				return false;
		}
		e = g_new0(struct src_entry, 1);
		e->key = key;
		token_bucket_init(&e->tb, srv->opts.udp_burst, now);
		g_hash_table_insert(buckets, &e->key, e);
	}
	return token_bucket_take(&e->tb, srv->opts.udp_rate, srv->opts.udp_burst, now);
}

static gboolean on_udp(gint fd, GIOCondition cond, gpointer data)
{
	struct listener *l = data;
	struct server *srv = l->srv;
	uint8_t buf[TUNE_UDP_MAX];

	for (int i = 0; i < UDP_BATCH; i++) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n;

		/* MSG_TRUNC: n is the datagram's real length. */
		n = recvfrom(fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&from, &flen);
		if (n < 0)
			break;
		uint64_t now_ns;

		if (!tune_echo_accept((size_t)n, serve_sockaddr_port(&from), srv->port))
			continue;
		/*
		 * A request becomes its answer; anything else (an answer) gets
		 * none. A timed one carries when it came and left: one reading
		 * for both, the few microseconds between are not worth a second.
		 */
		now_ns = tune_stamp_ns();
		if (tune_probe_answer(buf, (size_t)n, now_ns, now_ns) < 0)
			continue;
		if (!udp_allowed(srv, &from, g_get_monotonic_time()))
			continue;
		sendto(fd, buf, (size_t)n, MSG_DONTWAIT, (struct sockaddr *)&from, flen);
	}
	return G_SOURCE_CONTINUE;
}

static gboolean quit_loop(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

static gpointer echo_thread(gpointer data)
{
	struct echo *e = data;

	g_main_context_push_thread_default(e->ctx);
	g_main_loop_run(e->loop);
	g_main_context_pop_thread_default(e->ctx);
	return NULL;
}

struct echo *serve_echo_new(void)
{
	struct echo *e = g_new0(struct echo, 1);

	e->ctx = g_main_context_new();
	e->loop = g_main_loop_new(e->ctx, FALSE);
	e->buckets = g_hash_table_new_full(src_hash, src_equal, NULL, g_free);
	return e;
}

void serve_echo_add(struct echo *e, struct listener *l)
{
	GSource *src = g_unix_fd_source_new(l->udp, G_IO_IN);

	g_source_set_callback(src, (GSourceFunc)(void (*)(void))on_udp, l, NULL);
	g_source_attach(src, e->ctx);
	g_source_unref(src);
}

void serve_echo_run(struct echo *e)
{
	e->thread = g_thread_new("wgshape-echo", echo_thread, e);
}

GMainContext *serve_echo_context(struct echo *e)
{
	return e->ctx;
}

void serve_echo_free(struct echo *e)
{
	if (!e)
		return;
	if (e->thread) {
		/* From inside the loop: a quit before it started running would be lost. */
		GSource *idle = g_idle_source_new();

		g_source_set_callback(idle, quit_loop, e->loop, NULL);
		g_source_attach(idle, e->ctx);
		g_source_unref(idle);
		g_thread_join(e->thread);
	}
	g_hash_table_unref(e->buckets);
	g_main_loop_unref(e->loop);
	g_main_context_unref(e->ctx);
	g_free(e);
}
