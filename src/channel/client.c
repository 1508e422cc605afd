// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <glib.h>

#include "channel/client.h"
#include "channel/lease.h"
#include "channel/policy.h"
#include "shape/peers.h"
#include "shape/state.h"
#include "shape/units.h"
#include "util/ifname.h"

#define GROUP "client"
#define RECORD_MAX 4096 /* more than a record ever is */

static char *record_file(const char *ifname)
{
	return g_strconcat(ifname, RATE_RECORD_SUFFIX, NULL);
}

int rate_record_load(const char *dir, const char *ifname, struct rate_record *out)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GString) text = NULL;
	g_autofree char *file = NULL, *server = NULL, *source = NULL;
	int r;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	file = record_file(ifname);
	r = state_file_read(dir, file, RECORD_MAX, &text);
	if (r < 0)
		return r;
	if (!g_key_file_load_from_data(kf, text->str, text->len, G_KEY_FILE_NONE, NULL))
		return -EBADMSG;
	*out = (struct rate_record){ 0 };
	server = g_key_file_get_string(kf, GROUP, "server", NULL);
	source = g_key_file_get_string(kf, GROUP, "source", NULL);
	g_strlcpy(out->server, server ? server : "", sizeof(out->server));
	g_strlcpy(out->source, source ? source : "", sizeof(out->source));
	out->asked = g_key_file_get_uint64(kf, GROUP, "asked", NULL);
	out->port = (unsigned int)g_key_file_get_uint64(kf, GROUP, "port", NULL);
	out->at = g_key_file_get_int64(kf, GROUP, "at", NULL);
	out->at_boot = g_key_file_get_int64(kf, GROUP, "at-boottime", NULL);
	out->status = (enum rate_status)g_key_file_get_integer(kf, GROUP, "status", NULL);
	if (out->status >= RATE_STATUS_MAX)
		out->status = RATE_NONE;
	out->rate = g_key_file_get_uint64(kf, GROUP, "rate", NULL);
	out->fallback = g_key_file_get_uint64(kf, GROUP, "fallback", NULL);
	out->lease = (uint32_t)g_key_file_get_uint64(kf, GROUP, "lease", NULL);
	return 0;
}

int rate_record_save(const char *dir, const char *ifname, const struct rate_record *r)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *file = NULL, *data = NULL;
	gsize len;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	g_key_file_set_uint64(kf, GROUP, "asked", r->asked);
	g_key_file_set_string(kf, GROUP, "server", r->server);
	g_key_file_set_uint64(kf, GROUP, "port", r->port);
	g_key_file_set_string(kf, GROUP, "source", r->source);
	g_key_file_set_int64(kf, GROUP, "at", r->at);
	g_key_file_set_int64(kf, GROUP, "at-boottime", r->at_boot);
	g_key_file_set_integer(kf, GROUP, "status", (int)r->status);
	g_key_file_set_uint64(kf, GROUP, "rate", r->rate);
	g_key_file_set_uint64(kf, GROUP, "fallback", r->fallback);
	g_key_file_set_uint64(kf, GROUP, "lease", r->lease);
	data = g_key_file_to_data(kf, &len, NULL);
	file = record_file(ifname);
	return state_file_write(dir, file, data, len);
}

int rate_record_remove(const char *dir, const char *ifname)
{
	g_autofree char *file = NULL;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	file = record_file(ifname);
	return state_file_remove(dir, file);
}

bool rate_record_due(const struct rate_record *r, int64_t now_boot)
{
	int64_t every = RATE_RENEW_S;

	if (r->status == RATE_NONE || r->status == RATE_FAILED)
		return now_boot - r->at_boot >= (int64_t)RATE_RENEW_S / 4;
	if (r->status != RATE_APPLIED && r->status != RATE_CLAMPED)
		return false; /* no lease to keep */
	if (r->lease && r->lease / 3 < every)
		every = r->lease / 3 ?: 1;
	return now_boot - r->at_boot >= every;
}

/* addr (family, network order) as text into out. */
static void addr_text(int family, const uint8_t *addr, char out[INET6_ADDRSTRLEN])
{
	if (!inet_ntop(family, addr, out, INET6_ADDRSTRLEN))
		out[0] = '\0';
}

/* Does one of peers hold text (an address), and which family is it? */
static bool peers_hold(const struct wg_peer *peers, size_t n, const char *text)
{
	int family = strchr(text, ':') ? AF_INET6 : AF_INET;
	uint8_t a[16];

	return inet_pton(family, text, a) == 1 && peer_by_source(peers, n, family, a) >= 0;
}

/*
 * The first address of the subnet of one of ifname's addresses (addrs), when
 * peers' only peer holds it though it is not ifname's own: 0 with out (a
 * guess, with what it came from), else -ENOENT.
 */
static int subnet_guess(const char *ifname, const struct wg_peer *peers,
			const struct addr_info *addrs, size_t n_addrs, struct rate_server *out)
{
	for (size_t i = 0; i < n_addrs; i++) {
		const struct addr_info *ai = &addrs[i];
		unsigned int bits = ai->family == AF_INET ? 32 : 128;
		struct tc_prefix first = { .family = ai->family, .prefixlen = bits };
		char own[INET6_ADDRSTRLEN], held[64] = "";

		if ((ai->family != AF_INET && ai->family != AF_INET6) ||
		    ai->prefixlen >= bits - 1 || ai->scope == 253)
			continue;
		memcpy(first.addr, ai->addr, 16);
		for (unsigned int b = ai->prefixlen; b < bits; b++)
			first.addr[b / 8] &= (uint8_t)~(0x80u >> (b % 8));
		first.addr[bits / 8 - 1] |= 1;
		if (!memcmp(first.addr, ai->addr, bits / 8) ||
		    peer_by_source(peers, 1, ai->family, first.addr) != 0)
			continue;
		for (size_t k = 0; k < peers[0].n_allowed; k++)
			if (tc_prefix_contains(&peers[0].allowed[k], &first)) {
				tc_prefix_str(&peers[0].allowed[k], held, sizeof(held));
				break;
			}
		*out = (struct rate_server){ .how = RATE_SERVER_GUESS };
		addr_text(ai->family, first.addr, out->addr);
		addr_text(ai->family, ai->addr, own);
		snprintf(out->from, sizeof(out->from),
			 "the first address of the subnet of %s's address %s/%u, inside the "
			 "peer's AllowedIPs %s",
			 ifname, own, ai->prefixlen, held);
		return 0;
	}
	return -ENOENT;
}

int rate_server_choose(const char *ifname, const struct wg_peer *peers, size_t n,
		       const struct addr_info *addrs, size_t n_addrs, const char *server,
		       const char *answered, struct rate_server *out, char *why, size_t whylen)
{
	uint8_t a[16];

	if (server) {
		if (inet_pton(strchr(server, ':') ? AF_INET6 : AF_INET, server, a) != 1) {
			snprintf(why, whylen, "server '%s' is not an IPv4 or IPv6 address", server);
			return -EINVAL;
		}
		*out = (struct rate_server){ .how = RATE_SERVER_GIVEN };
		g_strlcpy(out->addr, server, sizeof(out->addr));
		return 0;
	}
	for (size_t i = 0; n == 1 && i < peers[0].n_allowed; i++) {
		const struct tc_prefix *p = &peers[0].allowed[i];

		if (p->prefixlen == (p->family == AF_INET ? 32u : 128u)) {
			*out = (struct rate_server){ .how = RATE_SERVER_HOST };
			addr_text(p->family, p->addr, out->addr);
			return 0;
		}
	}
	/* It answered before, and a peer still holds it: known, not guessed. */
	if (answered && *answered && peers_hold(peers, n, answered)) {
		*out = (struct rate_server){ .how = RATE_SERVER_ANSWERED };
		g_strlcpy(out->addr, answered, sizeof(out->addr));
		return 0;
	}
	if (n != 1) {
		snprintf(why, whylen, "%zu peers: name the server's tunnel address (server ADDR)",
			 n);
		return -EINVAL;
	}
	/* A peer that routes a subnet (or everything): guess the subnet's first address. */
	if (subnet_guess(ifname, peers, addrs, n_addrs, out) == 0)
		return 0;
	snprintf(why, whylen, "cannot tell the server's tunnel address from the peer's "
		 "AllowedIPs: name it (server ADDR)");
	return -EINVAL;
}

void rate_server_describe(const struct rate_server *s, char *buf, size_t size)
{
	switch (s->how) {
	case RATE_SERVER_GIVEN:
		snprintf(buf, size, "%s was named as the server", s->addr);
		break;
	case RATE_SERVER_HOST:
		snprintf(buf, size, "%s is the peer's only AllowedIPs entry of one address",
			 s->addr);
		break;
	case RATE_SERVER_ANSWERED:
		snprintf(buf, size, "%s answered the last request", s->addr);
		break;
	case RATE_SERVER_GUESS:
		snprintf(buf, size, "%s was a guess: %s", s->addr, s->from);
		break;
	}
}

int rate_client_find_server(struct netlink *nl, const char *ifname, const char *server,
			    const char *answered, struct rate_server *out, char *why,
			    size_t whylen)
{
	g_autofree struct addr_info *addrs = NULL;
	struct wg_peer *peers = NULL;
	struct link_info link;
	size_t n = 0, n_addrs = 0, own = 0;
	int r;

	if (server)
		return rate_server_choose(ifname, NULL, 0, NULL, 0, server, NULL, out, why,
					  whylen);
	r = netlink_wg_peers(nl, ifname, &peers, &n);
	if (r < 0) {
		snprintf(why, whylen, "%s", r == -ENODEV ? "no such interface" :
				 r == -EOPNOTSUPP ? "not a WireGuard interface" : strerror(-r));
		return r;
	}
	/* ifname's own addresses, for the guess (none when they cannot be read) */
	if (netlink_link_get(nl, ifname, &link) == 0 &&
	    netlink_addr_list(nl, &addrs, &n_addrs) == 0) {
		for (size_t i = 0; i < n_addrs; i++)
			if (addrs[i].ifindex == link.ifindex)
				addrs[own++] = addrs[i];
	}
	r = rate_server_choose(ifname, peers, n, addrs, own, NULL, answered, out, why, whylen);
	wg_peers_free(peers, n);
	return r;
}

int rate_client_server(struct netlink *nl, const char *ifname, const char *server,
		       char out[INET6_ADDRSTRLEN], char *why, size_t whylen)
{
	struct rate_server s;
	int r = rate_client_find_server(nl, ifname, server, NULL, &s, why, whylen);

	if (r == 0)
		g_strlcpy(out, s.addr, INET6_ADDRSTRLEN);
	return r;
}

int rate_client_socket(const char *ifname, const char *server, unsigned int port)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} to = { 0 };
	int family = strchr(server, ':') ? AF_INET6 : AF_INET, fd, r;
	socklen_t len;

	if (family == AF_INET) {
		to.in.sin_family = AF_INET;
		to.in.sin_port = htons((uint16_t)port);
		len = sizeof(to.in);
		r = inet_pton(AF_INET, server, &to.in.sin_addr);
	} else {
		to.in6.sin6_family = AF_INET6;
		to.in6.sin6_port = htons((uint16_t)port);
		len = sizeof(to.in6);
		r = inet_pton(AF_INET6, server, &to.in6.sin6_addr);
	}
	if (r != 1)
		return -EINVAL;
	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Through the tunnel or not at all: the server knows us by our tunnel address. */
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname) + 1) < 0 ||
	    connect(fd, (struct sockaddr *)&to, len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int rate_client_send(int fd, uint64_t rate, uint32_t token)
{
	struct rate_msg req = { .type = RATE_REQUEST, .rate = rate, .token = token };
	uint8_t out[RATE_MSG_SIZE];

	rate_msg_encode(&req, out, sizeof(out));
	if (send(fd, out, sizeof(out), MSG_DONTWAIT) < 0 && errno != ECONNREFUSED)
		return -errno;
	return 0;
}

int rate_client_recv(int fd, uint32_t token, struct rate_msg *answer)
{
	uint8_t in[RATE_MSG_MAX];
	struct rate_msg m;
	ssize_t got = recv(fd, in, sizeof(in), MSG_DONTWAIT);

	if (got < 0)
		return errno == EAGAIN || errno == ECONNREFUSED ? 0 : -errno;
	if (rate_msg_parse(in, (size_t)got, &m) < 0 || m.type != RATE_ANSWER ||
	    (token && m.token != token))
		return 0;
	*answer = m;
	return 1;
}

int rate_client_ask(const char *ifname, const char *server, unsigned int port, uint64_t rate,
		    struct rate_msg *answer)
{
	uint32_t token = g_random_int() | 1; /* 0 would take any answer */
	int fd, r;

	fd = rate_client_socket(ifname, server, port);
	if (fd < 0)
		return fd;
	r = -ETIMEDOUT;
	for (int t = 0; t < RATE_TRIES && r == -ETIMEDOUT; t++) {
		int64_t end = g_get_monotonic_time() + RATE_WAIT_MS * 1000;
		int sent = rate_client_send(fd, rate, token);

		if (sent < 0) {
			r = sent;
			break;
		}
		for (;;) {
			int64_t left = (end - g_get_monotonic_time()) / 1000;
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (left <= 0 || poll(&p, 1, (int)left) <= 0)
				break;
			/* not ours, or ECONNREFUSED (nothing listens yet): wait on */
			if (rate_client_recv(fd, token, answer) == 1) {
				r = 0;
				break;
			}
		}
	}
	close(fd);
	return r;
}

int rate_client_request(const char *dir, const char *ifname, const char *server,
			unsigned int port, uint64_t rate, const char *source,
			struct rate_record *rec)
{
	struct rate_msg ans = { 0 };
	int r;

	*rec = (struct rate_record){ .asked = rate, .port = port, .at = time(NULL),
				     .at_boot = lease_now() };
	g_strlcpy(rec->server, server, sizeof(rec->server));
	g_strlcpy(rec->source, source, sizeof(rec->source));
	r = rate_client_ask(ifname, server, port, rate, &ans);
	if (r == 0) {
		rec->status = ans.status;
		rec->rate = ans.rate;
		rec->fallback = ans.fallback;
		rec->lease = ans.lease;
	} else if (r != -ETIMEDOUT) {
		return r;
	}
	rate_record_save(dir, ifname, rec);
	return r;
}

void rate_record_describe(const struct rate_record *r, char *buf, size_t size)
{
	char rate[32], asked[32];

	format_rate(rate, sizeof(rate), r->rate);
	format_rate(asked, sizeof(asked), r->asked);
	switch (r->status) {
	case RATE_NONE:
		snprintf(buf, size, "no answer from %s port %u", r->server, r->port);
		break;
	case RATE_APPLIED:
		snprintf(buf, size, "applied: %s, for %u s unless asked again", rate, r->lease);
		break;
	case RATE_CLAMPED:
		snprintf(buf, size, "clamped: %s (asked %s; outside the server's download-min/-max), "
			 "for %u s unless asked again", rate, asked, r->lease);
		break;
	case RATE_DEFAULT:
		snprintf(buf, size, "the server's own rate: %s", r->rate ? rate : "none (unshaped "
			 "apart from the interface's)");
		break;
	case RATE_REFUSED:
		snprintf(buf, size, "refused: the server does not let this peer set its rate "
			 "(client-download = yes there)");
		break;
	case RATE_FAILED:
		snprintf(buf, size, "failed: the server could not apply it (its log says why)");
		break;
	case RATE_UNSUPPORTED:
		snprintf(buf, size, "unsupported: the server's wgshape is older than this one");
		break;
	default:
		snprintf(buf, size, "?");
	}
}
