// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <glib.h>

#include "channel/gate.h"
#include "channel/policy.h"
#include "channel/server.h"
#include "proto/tune.h"
#include "shape/peers.h"
#include "shape/units.h"
#include "util/addr.h"
#include "util/log.h"

/* Interfaces remembered as WireGuard or not; past it, the table starts again. */
#define KINDS_MAX 4096

struct rate_server {
	struct netlink *nl;
	int fd[2]; /* AF_INET, AF_INET6 */
	unsigned int port;
	rate_decide_fn decide;
	void *ud;
	struct gate *gate; /* each datagram's peer, and its budgets (channel/gate.h) */
	GHashTable *kinds; /* ifindex -> struct link_kind: is it WireGuard, as last looked */
	struct addr_info *addrs; /* this host's addresses, as dumped at addrs_at (now_s) */
	size_t n_addrs;
	double addrs_at;
	struct wg_dumper *dumper; /* the index dumped again in the background (GATE_REFRESH_AGE) */
};

/* What an interface was when last looked at (at most a second ago). */
struct link_kind {
	bool wireguard;
	char name[IF_NAMESIZE]; /* its name then, when WireGuard */
	gint64 at; /* monotonic, µs */
};

/*
 * Datagrams the host sends to itself arrive on the loopback device, but
 * IP_PKTINFO names the interface that holds the address they were sent to:
 * a local process could pass for a peer (an IPv6 socket with IP_FREEBIND
 * sends from any address, no privilege needed). This filter, run by the
 * kernel on the device the packet really came in on, drops them.
 */
static int drop_loopback(int fd)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_IFINDEX)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0),
		BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),
	};
	struct sock_fprog prog = { .len = G_N_ELEMENTS(code), .filter = code };
	unsigned int lo = if_nametoindex("lo");

	if (!lo)
		return -ENODEV;
	code[1].k = lo;
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

static int open_one(int family, unsigned int port)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} a = { 0 };
	int one = 1, fd;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	one = drop_loopback(fd);
	if (one < 0) {
		close(fd);
		return one;
	}
	one = 1;
	if (family == AF_INET) {
		a.in.sin_family = AF_INET;
		a.in.sin_port = htons((uint16_t)port);
		if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0)
			goto fail;
	} else {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons((uint16_t)port);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) < 0)
			goto fail;
	}
	/* when each datagram arrived, for the log's "after it arrived" */
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&a,
		 family == AF_INET ? sizeof(a.in) : sizeof(a.in6)) < 0)
		goto fail;
	return fd;
fail:
	one = -errno;
	close(fd);
	return one;
}

void rate_server_peers(struct rate_server *s, int ifindex, const struct wg_peer *peers, size_t n,
		       int64_t at)
{
	double when = (double)at / G_USEC_PER_SEC;

	/* an index dumped after this one (a request's own dump meanwhile) stays */
	if (s && when >= gate_index_at(s->gate, ifindex))
		gate_index(s->gate, ifindex, peers, n, when);
}

/* The background dump (GATE_REFRESH_AGE); one that failed leaves the index to age. */
static void index_dumped(void *arg, const char *ifname, int ifindex, int64_t at, int r,
			 struct wg_peer *peers, size_t n)
{
	(void)ifname;
	if (r == 0)
		rate_server_peers(arg, ifindex, peers, n, at);
	wg_peers_free(peers, n);
}

int rate_server_open(struct netlink *nl, unsigned int port, rate_decide_fn decide, void *ud,
		     struct rate_server **out)
{
	struct rate_server *s = g_new0(struct rate_server, 1);
	int r4, r6;

	s->nl = nl;
	s->port = port;
	s->decide = decide;
	s->ud = ud;
	r4 = s->fd[0] = open_one(AF_INET, port);
	r6 = s->fd[1] = open_one(AF_INET6, port);
	if (r4 < 0 && r6 < 0) {
		g_free(s);
		return r4;
	}
	if (r4 < 0)
		log_warn("rate channel: IPv4 port %u: %s; IPv6 only", port, strerror(-r4));
	if (r6 < 0 && r6 != -EAFNOSUPPORT)
		log_warn("rate channel: IPv6 port %u: %s; IPv4 only", port, strerror(-r6));
	s->gate = gate_new();
	s->dumper = wg_dumper_new(index_dumped, s);
	s->kinds = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	*out = s;
	return 0;
}

void rate_server_fds(const struct rate_server *s, int fds[2])
{
	fds[0] = s->fd[0] >= 0 ? s->fd[0] : -1;
	fds[1] = s->fd[1] >= 0 ? s->fd[1] : -1;
}

void rate_server_close(struct rate_server *s)
{
	if (!s)
		return;
	for (int i = 0; i < 2; i++)
		if (s->fd[i] >= 0)
			close(s->fd[i]);
	wg_dumper_free(s->dumper);
	gate_free(s->gate);
	g_hash_table_unref(s->kinds);
	g_free(s->addrs);
	g_free(s);
}

/* One datagram as it came in. */
struct dgram {
	uint8_t buf[RATE_MSG_MAX + 1];
	size_t len;
	int family;
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} from;
	int ifindex; /* where it came in */
	uint8_t to[16]; /* the address it was sent to */
	uint64_t rx_ns; /* tune_stamp_ns() when it was read */
	struct timespec arrived; /* the kernel's stamp (CLOCK_REALTIME); 0 if none */
};

static int receive(int fd, struct dgram *d)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo)) +
			 CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { .iov_base = d->buf, .iov_len = sizeof(d->buf) };
	struct msghdr msg = {
		.msg_name = &d->from,
		.msg_namelen = sizeof(d->from),
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n = recvmsg(fd, &msg, MSG_TRUNC);

	if (n < 0)
		return -errno;
	d->rx_ns = tune_stamp_ns();
	d->len = (size_t)n; /* MSG_TRUNC: the real length, even of one cut short */
	d->family = d->from.in.sin_family;
	d->ifindex = 0;
	memset(&d->arrived, 0, sizeof(d->arrived));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			memcpy(&d->arrived, CMSG_DATA(c), sizeof(d->arrived));
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			d->ifindex = pi.ipi_ifindex;
			memcpy(d->to, &pi.ipi_addr, 4);
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			d->ifindex = (int)pi.ipi6_ifindex;
			memcpy(d->to, &pi.ipi6_addr, 16);
		}
	}
	return 0;
}

/* Milliseconds from t (CLOCK_REALTIME, as SO_TIMESTAMPNS stamps) to now; 0 when t is none. */
static double since_ms(const struct timespec *t)
{
	struct timespec now;

	if (!t->tv_sec || clock_gettime(CLOCK_REALTIME, &now) < 0)
		return 0;
	return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

static double now_s(void)
{
	return (double)g_get_monotonic_time() / G_USEC_PER_SEC;
}

/*
 * Was d sent to one of its interface's own addresses, from an address that
 * is none of this host's (a peer's, not the host talking to itself)? The
 * addresses as dumped at most GATE_DECIDE_AGE before.
 */
static bool addresses_ok(struct rate_server *s, const struct dgram *d, const uint8_t *from)
{
	size_t len = d->family == AF_INET ? 4 : 16;
	const struct addr_info *addrs;
	double now = now_s();
	bool to_ok = false;

	if (!s->addrs_at || now < s->addrs_at || now - s->addrs_at >= GATE_DECIDE_AGE) {
		g_clear_pointer(&s->addrs, g_free);
		s->n_addrs = 0;
		s->addrs_at = 0;
		if (netlink_addr_list(s->nl, &s->addrs, &s->n_addrs) < 0)
			return false;
		s->addrs_at = now;
	}
	addrs = s->addrs;
	for (size_t i = 0; i < s->n_addrs; i++) {
		if (addrs[i].family != d->family)
			continue;
		if (!memcmp(addrs[i].addr, from, len))
			return false;
		to_ok |= addrs[i].ifindex == d->ifindex && !memcmp(addrs[i].addr, d->to, len);
	}
	return to_ok;
}

/*
 * ifindex's name when it is a WireGuard interface, else NULL; looked up at
 * most once a second (no socket and ioctl per datagram, as if_indextoname).
 */
static const char *wireguard_link(struct rate_server *s, int ifindex)
{
	struct link_kind *k = g_hash_table_lookup(s->kinds, GINT_TO_POINTER(ifindex));
	gint64 now = g_get_monotonic_time();
	struct link_info link;

	if (k && now - k->at < G_USEC_PER_SEC)
		return k->wireguard ? k->name : NULL;
	if (!k) {
		if (g_hash_table_size(s->kinds) >= KINDS_MAX)
			g_hash_table_remove_all(s->kinds);
		k = g_new0(struct link_kind, 1);
		g_hash_table_insert(s->kinds, GINT_TO_POINTER(ifindex), k);
	}
	k->wireguard = netlink_link_get_index(s->nl, ifindex, &link) == 0 &&
		       !strcmp(link.kind, "wireguard");
	g_strlcpy(k->name, k->wireguard ? link.name : "", sizeof(k->name));
	k->at = now;
	return k->wireguard ? k->name : NULL;
}

/*
 * Put ifindex's peers in the gate's index from one dump (none when the dump
 * fails: it is not tried again for every datagram). peers and n, when not
 * NULL, get the dump for the caller to use and free.
 */
static void gate_dump(struct rate_server *s, int ifindex, struct wg_peer **peers, size_t *n)
{
	char ifname[IF_NAMESIZE];
	struct wg_peer *p = NULL;
	size_t np = 0;

	if (!if_indextoname((unsigned int)ifindex, ifname) ||
	    netlink_wg_peers(s->nl, ifname, &p, &np) < 0) {
		wg_peers_free(p, np);
		p = NULL;
		np = 0;
	}
	gate_index(s->gate, ifindex, p, np, now_s());
	if (peers) {
		*peers = p;
		*n = np;
	} else {
		wg_peers_free(p, np);
	}
}

/*
 * The peer d came from (its key in key), and one datagram of kind charged to
 * it: 0, or -errno when d goes no further (no or no one peer holds its
 * source, -EDQUOT: the peer's own budget is spent, -EBUSY: everyone's). Costs
 * at most one dump of the interface's peers, when the index is stale.
 */
static int charge(struct rate_server *s, const struct dgram *d, const uint8_t *src,
		  enum gate_kind kind, uint8_t key[WG_KEY_LEN])
{
	int r = gate_peer(s->gate, d->ifindex, d->family, src, now_s(), key);

	if (r == -ESTALE) {
		gate_dump(s, d->ifindex, NULL, NULL);
		r = gate_peer(s->gate, d->ifindex, d->family, src, now_s(), key);
	}
	return r < 0 ? r : gate_take(s->gate, d->ifindex, key, kind, now_s());
}

/* One control message of len bytes at c: the room it takes. */
static size_t cmsg_put(struct cmsghdr *c, int level, int type, const void *data, size_t len)
{
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	return CMSG_SPACE(len);
}

/* The answer goes back from the address the request was sent to, out of the tunnel. */
static void reply(int fd, const struct dgram *d, const uint8_t *out, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} control = { 0 };
	struct iovec iov = { .iov_base = (void *)out, .iov_len = len };
	struct msghdr msg = {
		.msg_name = (void *)&d->from,
		.msg_namelen = d->family == AF_INET ? sizeof(d->from.in) : sizeof(d->from.in6),
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
	};
	struct cmsghdr *c = (struct cmsghdr *)control.buf;

	if (d->family == AF_INET) {
		struct in_pktinfo pi = { .ipi_ifindex = d->ifindex };

		memcpy(&pi.ipi_spec_dst, d->to, 4);
		msg.msg_controllen = cmsg_put(c, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
	} else {
		struct in6_pktinfo pi = { .ipi6_ifindex = (unsigned int)d->ifindex };

		memcpy(&pi.ipi6_addr, d->to, 16);
		msg.msg_controllen = cmsg_put(c, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
	}
	if (sendmsg(fd, &msg, MSG_DONTWAIT) < 0)
		log_debug("rate channel: answer: %s", strerror(errno));
}

/*
 * A timed probe (proto/tune.h), for a client's continuous adaptation: the
 * request becomes its answer in place, with when it came and when it left.
 * WireGuard has already checked that its source is in the sending peer's
 * AllowedIPs and the socket filter dropped the host's own, so a probe needs
 * only to have come in on a WireGuard interface and to be within its peer's
 * budget (named by the gate's index: no dump of its own, as a client probes
 * up to 20 times a second). Plain probes and answers get nothing (the daemon
 * is no general echo).
 */
static void answer_probe(struct rate_server *s, int fd, struct dgram *d,
			 const struct tune_probe *p, const uint8_t *src)
{
	uint8_t key[WG_KEY_LEN];

	if (p->type != TUNE_PROBE_REQUEST || !p->timed)
		return;
	if (!wireguard_link(s, d->ifindex) || charge(s, d, src, GATE_PROBE, key) < 0)
		return;
	if (tune_probe_answer(d->buf, d->len, d->rx_ns, tune_stamp_ns()) == 0)
		reply(fd, d, d->buf, d->len);
}

/*
 * A request for this server, in req (r: rate_msg_parse's, 0 or
 * -EPROTONOSUPPORT)? A probe is answered here, anything else dropped.
 */
static bool is_request(struct rate_server *s, int fd, struct dgram *d, const uint8_t *src,
		       struct rate_msg *req, int *r)
{
	uint16_t port = ntohs(d->family == AF_INET ? d->from.in.sin_port : d->from.in6.sin6_port);
	struct tune_probe probe;

	/* Cheap checks first: a datagram no client sends costs nothing more. */
	if (!d->ifindex || !rate_accept(d->len, port, (uint16_t)s->port))
		return false;
	*r = tune_probe_parse(d->buf, d->len, &probe);
	if (*r != -EBADMSG) { /* a probe (of a version of ours or not) */
		if (*r == 0)
			answer_probe(s, fd, d, &probe, src);
		return false;
	}
	*r = rate_msg_parse(d->buf, d->len, req);
	/* never answer an answer: no loops between two daemons */
	return !((*r < 0 && *r != -EPROTONOSUPPORT) || req->type != RATE_REQUEST);
}

/* The peer key on ifname asked (req; r as is_request's): its answer, logged and sent. */
static void answer_request(struct rate_server *s, int fd, const struct dgram *d,
			   const struct rate_msg *req, int r, const char *ifname, const char *from,
			   const uint8_t *key)
{
	char keytext[45], want[32], got[32];
	struct rate_msg ans = { 0 };
	uint8_t out[RATE_MSG_SIZE];

	wg_key_to_base64(key, keytext);
	ans.type = RATE_ANSWER;
	ans.token = req->token;
	if (r == -EPROTONOSUPPORT) {
		ans.status = RATE_UNSUPPORTED;
	} else {
		s->decide(s->ud, ifname, key, req->rate, &ans);
		ans.type = RATE_ANSWER;
		ans.token = req->token;
	}
	format_rate(want, sizeof(want), req->rate);
	format_rate(got, sizeof(got), ans.rate);
	log_info("%s: peer %s (%s) asks for %s: %s%s%s (%.1f ms after it arrived)", ifname,
		 keytext, from, r < 0 ? "a newer protocol" : req->rate ? want : "the server's rate",
		 rate_status_str(ans.status), ans.status == RATE_REFUSED ? "" : ", now ",
		 ans.status == RATE_REFUSED ? "" : ans.rate ? got : "no rate of its own",
		 since_ms(&d->arrived));
	if (rate_msg_encode(&ans, out, sizeof(out)) == 0)
		reply(fd, d, out, sizeof(out)); /* RATE_MSG_SIZE <= d->len: rate_accept */
}

static void handle(struct rate_server *s, int fd, struct dgram *d)
{
	char from[ADDR_STR_SIZE];
	const char *ifname;
	const uint8_t *src = d->family == AF_INET ? (const uint8_t *)&d->from.in.sin_addr :
						    (const uint8_t *)&d->from.in6.sin6_addr;
	struct rate_msg req = { 0 };
	struct wg_peer *peers = NULL;
	size_t n = 0;
	uint8_t key[WG_KEY_LEN];
	int r = 0, who;

	if (!is_request(s, fd, d, src, &req, &r))
		return;
	/*
	 * Only then the budgets, so that nothing from outside the tunnels
	 * spends them; the peer's own first, before any dump of ours, so that
	 * a client asking from many of its addresses spends only its own.
	 */
	ifname = wireguard_link(s, d->ifindex);
	if (!ifname)
		return;
	addr_str((const struct sockaddr *)&d->from, true, from, sizeof(from));
	who = charge(s, d, src, GATE_RATE, key);
	if (who < 0) {
		log_debug("rate channel: ifindex %d: request from %s: %s; dropped", d->ifindex,
			  from, who == -EDQUOT ? "its peer asks too often" :
			  who == -EBUSY ? "the server's budget for this second is spent" :
			  who == -ENOTUNIQ ? "in more than one peer's AllowedIPs" :
					     "in no peer's AllowedIPs");
		return;
	}
	/* The index decides while it is young (GATE_DECIDE_AGE); else a dump, also the index's next. */
	if (gate_fresh(s->gate, d->ifindex, now_s(), GATE_DECIDE_AGE)) {
		/* and, getting old, is dumped again meanwhile in the background */
		if (!gate_fresh(s->gate, d->ifindex, now_s(), GATE_REFRESH_AGE))
			wg_dumper_ask(s->dumper, ifname, d->ifindex);
		if (addresses_ok(s, d, src))
			answer_request(s, fd, d, &req, r, ifname, from, key);
		else
			log_debug("rate channel: %s: request from %s: not to the interface's own "
				  "address, or from this host; dropped", ifname, from);
		return;
	}
	gate_dump(s, d->ifindex, &peers, &n);
	if (!n) {
		wg_peers_free(peers, n);
		return;
	}
	who = peer_by_source(peers, n, d->family, src);
	/* its AllowedIPs moved between the index and now: charged to another peer */
	if (who >= 0 && memcmp(peers[who].key, key, WG_KEY_LEN))
		who = -ESTALE;
	if (who >= 0 && !addresses_ok(s, d, src))
		who = -EADDRNOTAVAIL;
	if (who < 0)
		log_debug("rate channel: %s: request from %s: %s; dropped", ifname, from,
			  who == -ENOTUNIQ ? "in more than one peer's AllowedIPs" :
			  who == -EADDRNOTAVAIL ? "not to the interface's own address, or from "
						  "this host" :
			  who == -ESTALE ? "its peer changed since the last look" :
						  "in no peer's AllowedIPs");
	else
		answer_request(s, fd, d, &req, r, ifname, from, peers[who].key);
	wg_peers_free(peers, n);
}

void rate_server_read(struct rate_server *s, int fd)
{
	struct dgram d;

	/* A bounded batch: a flood cannot keep the loop here. */
	for (int i = 0; i < 64; i++) {
		if (receive(fd, &d) < 0)
			return;
		handle(s, fd, &d);
	}
}
