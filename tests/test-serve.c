// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape serve: the address choice, `listen` clauses and the token bucket
 * (pure), then the server itself on 127.0.0.1 and ::1 with an ephemeral port,
 * spoken to with plain sockets: download, upload, caps, 404, one source's
 * share of connections (from 127.0.0.2), the request head's deadline, the UDP
 * echo (answers to requests only) and its rate limit. Loopback only.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <glib.h>

#include "build-config.h"
#include "serve/serve.h"

/* ---- pure parts -------------------------------------------------------- */

static void test_token_bucket(void)
{
	struct token_bucket b;
	int64_t t = 1000000;
	int got = 0;

	token_bucket_init(&b, 5, t);
	for (int i = 0; i < 20; i++)
		got += token_bucket_take(&b, 10, 5, t);
	g_assert_cmpint(got, ==, 5); /* the burst, then nothing */
	g_assert_false(token_bucket_take(&b, 10, 5, t + 50000)); /* half a token */
	g_assert_true(token_bucket_take(&b, 10, 5, t + 100000)); /* one */
	g_assert_false(token_bucket_take(&b, 10, 5, t + 100000));
	/* a long pause refills to the burst, not beyond */
	got = 0;
	for (int i = 0; i < 20; i++)
		got += token_bucket_take(&b, 10, 5, t + 3600 * (int64_t)1000000);
	g_assert_cmpint(got, ==, 5);
	/* the clock going backwards gives nothing */
	g_assert_false(token_bucket_take(&b, 10, 5, t));
	/* a steady 10/s stream at 10/s all passes */
	token_bucket_init(&b, 1, 0);
	got = 0;
	for (int i = 0; i < 100; i++)
		got += token_bucket_take(&b, 10, 1, (int64_t)i * 100000);
	g_assert_cmpint(got, ==, 100);
}

static void test_addr_parse(void)
{
	static const struct {
		const char *in;
		int r;
		int family;
		unsigned int scope_id;
		const char *ifname;
		const char *shown; /* serve_addr_str after parsing */
	} cases[] = {
		{ "10.0.0.1", 0, AF_INET, 0, "", "10.0.0.1" },
		{ "0.0.0.0", 0, AF_INET, 0, "", "0.0.0.0" },
		{ "::", 0, AF_INET6, 0, "", "::" },
		{ "fd00::1", 0, AF_INET6, 0, "", "fd00::1" },
		{ "FD00:0::1", 0, AF_INET6, 0, "", "fd00::1" },
		{ "fe80::1%wg0", 0, AF_INET6, 0, "wg0", "fe80::1" },
		{ "fe80::1%3", 0, AF_INET6, 3, "", "fe80::1%3" },
		{ "febf::1%wg0", 0, AF_INET6, 0, "wg0", "febf::1" },
		{ "fec0::1%wg0", -EINVAL }, /* not link-local: no scope */
		{ "fd00::1%wg0", -EINVAL },
		{ "10.0.0.1%wg0", -EINVAL },
		{ "fe80::1%", -EINVAL },
		{ "fe80::1%0", -EINVAL },
		{ "fe80::1%wg0123456789abcdef", -EINVAL },
		{ "", -EINVAL },
		{ "wg0", -EINVAL },
		{ "10.0.0.256", -EINVAL },
		{ "10.0.0.1/24", -EINVAL },
		{ "[::1]", -EINVAL },
		{ " 10.0.0.1", -EINVAL },
		{ "localhost", -EINVAL },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct serve_addr a = { .family = -1 };
		char shown[64];
		int r = serve_addr_parse(cases[i].in, &a);

		g_test_message("listen '%s'", cases[i].in);
		g_assert_cmpint(r, ==, cases[i].r);
		if (r < 0) {
			g_assert_cmpint(a.family, ==, -1); /* untouched */
			continue;
		}
		g_assert_cmpint(a.family, ==, cases[i].family);
		g_assert_cmpuint(a.scope_id, ==, cases[i].scope_id);
		g_assert_cmpstr(a.ifname, ==, cases[i].ifname);
		g_assert_false(a.tunnel);
		serve_addr_str(&a, shown, sizeof(shown));
		g_assert_cmpstr(shown, ==, cases[i].shown);
	}
}

/* `listen ADDR [any-source]`: every address of a family only when said so. */
static void test_listen_parse(void)
{
	static const struct {
		const char *addr, *next;
		int r; /* words taken, or -EINVAL */
		bool any_source;
		const char *says; /* in err */
	} cases[] = {
		{ "0.0.0.0", NULL, -EINVAL, false, "'listen 0.0.0.0 any-source'" },
		{ "::", NULL, -EINVAL, false, "'listen :: any-source'" },
		{ "0::0", "port", -EINVAL, false, "not only tunnel peers" },
		{ "0.0.0.0", "listen", -EINVAL, false, "any host" },
		{ "0.0.0.0", "any-source", 2, true },
		{ "::", "any-source", 2, true },
		{ "10.0.0.1", NULL, 1, false },
		{ "10.0.0.1", "port", 1, false },
		{ "192.0.2.1", "any-source", 2, true }, /* said: no warning then */
		{ "fe80::1%wg0", "any-source", 2, true },
		{ "0.0.0.0", "ANY-SOURCE", -EINVAL, false, "any-source" },
		{ "any-source", NULL, -EINVAL, false, "not an IPv4 or IPv6 address" },
		{ "0.0.0.0/0", "any-source", -EINVAL, false, "not an IPv4" },
		{ "10.0.0.1\n", NULL, -EINVAL, false, "'10.0.0.1\\n'" }, /* escaped */
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct serve_addr a = { .family = -1 };
		char err[256] = "";
		int r = serve_listen_parse(cases[i].addr, cases[i].next, &a, err, sizeof(err));

		g_test_message("listen '%s' '%s': %d %s", cases[i].addr,
			       cases[i].next ? cases[i].next : "(end)", r, err);
		g_assert_cmpint(r, ==, cases[i].r);
		if (r < 0) {
			g_assert_cmpint(a.family, ==, -1); /* untouched */
			g_assert_nonnull(strstr(err, cases[i].says));
			g_assert_null(strchr(err, '\n'));
			continue;
		}
		g_assert_cmpint(a.any_source, ==, cases[i].any_source);
	}
}

/* A host: lo, eth0, veth0, wg0 (v4, v6, link-local), wg1 (no address), wg2 (v6). */
static const struct link_info host_links[] = {
	{ .ifindex = 1, .name = "lo" },
	{ .ifindex = 2, .name = "eth0", .kind = "" },
	{ .ifindex = 6, .name = "veth0", .kind = "veth" },
	/* the first three: a host without WireGuard */
	{ .ifindex = 3, .name = "wg0", .kind = "wireguard" },
	{ .ifindex = 4, .name = "wg1", .kind = "wireguard" },
	{ .ifindex = 5, .name = "wg2", .kind = "wireguard" },
};

static struct addr_info mkaddr(int ifindex, const char *s)
{
	struct addr_info a = { .ifindex = ifindex };
	const char *flags = strchr(s, ' ');
	char ip[64];

	g_strlcpy(ip, s, flags ? (size_t)(flags - s) + 1 : sizeof(ip));
	if (inet_pton(AF_INET, ip, a.addr) == 1) {
		a.family = AF_INET;
	} else {
		g_assert_cmpint(inet_pton(AF_INET6, ip, a.addr), ==, 1);
		a.family = AF_INET6;
	}
	if (flags && !strcmp(flags, " dadfailed"))
		a.flags = 0x08 | 0x40; /* IFA_F_DADFAILED | IFA_F_TENTATIVE */
	return a;
}

/* Each expected address as serve_addr_str shows it, then " tunnel" and " @ifname". */
static char *describe(const struct serve_addr *a, size_t n)
{
	GString *s = g_string_new(NULL);

	for (size_t i = 0; i < n; i++) {
		char shown[64];

		serve_addr_str(&a[i], shown, sizeof(shown));
		g_string_append_printf(s, "%s%s%s%s%s", i ? ", " : "", shown,
				       a[i].tunnel ? " tunnel" : "", a[i].ifname[0] ? " @" : "",
				       a[i].ifname);
	}
	return g_string_free(s, FALSE);
}

static void test_pick(void)
{
	static const char *const host[][2] = {
		{ "1", "127.0.0.1" },	 { "1", "::1" },	    { "2", "192.0.2.10" },
		{ "2", "2001:db8::10" }, { "2", "fe80::10" },	    { "3", "10.0.0.1" },
		{ "3", "fd00::1" },	 { "3", "fe80::1" },	    { "5", "fd00:2::1" },
		{ "5", "fd00:2::dead dadfailed" }, { "2", "10.9.9.9" }, { "3", "10.9.9.9" },
		{ "6", "fe80::1" },
	};
	static const struct {
		const char *explicit[3];
		bool no_wireguard; /* only the first three links */
		int r;
		const char *want; /* describe() of the result, or a word of err */
	} cases[] = {
		/* default: every WireGuard address, link-local with its scope; not dadfailed */
		{ { NULL }, false, 0,
		  "10.0.0.1 tunnel @wg0, fd00::1 tunnel @wg0, fe80::1%wg0 tunnel @wg0, "
		  "fd00:2::1 tunnel @wg2, 10.9.9.9 tunnel @wg0" },
		{ { NULL }, true, -ENOENT, "listen ADDR" },
		/* explicit: whatever was asked, marked */
		{ { "0.0.0.0" }, false, 0, "0.0.0.0" },
		{ { "::" }, false, 0, "::" },
		{ { "0.0.0.0", "::" }, false, 0, "0.0.0.0, ::" },
		{ { "10.0.0.1" }, false, 0, "10.0.0.1 tunnel @wg0" },
		{ { "10.0.0.1" }, true, 0, "10.0.0.1" },
		{ { "192.0.2.10" }, false, 0, "192.0.2.10 @eth0" },
		{ { "127.0.0.1", "::1" }, false, 0, "127.0.0.1 @lo, ::1 @lo" },
		{ { "192.0.2.99" }, false, 0, "192.0.2.99" }, /* not here: bind will say */
		{ { "10.9.9.9" }, false, 0, "10.9.9.9 tunnel @wg0" }, /* on eth0 and wg0 */
		{ { "10.0.0.1", "10.0.0.1" }, false, 0, "10.0.0.1 tunnel @wg0" },
		{ { "fd00:2::dead" }, false, 0, "fd00:2::dead" },
		/* link-local: the scope by name, by index, or from the only link that has it */
		{ { "fe80::1%wg0" }, false, 0, "fe80::1%wg0 tunnel @wg0" },
		{ { "fe80::1%3" }, false, 0, "fe80::1%wg0 tunnel @wg0" },
		{ { "fe80::1%veth0" }, false, 0, "fe80::1%veth0 @veth0" },
		{ { "fe80::10" }, false, 0, "fe80::10%eth0 @eth0" },
		{ { "fe80::1%wg1" }, false, 0, "fe80::1%wg1 @wg1" },
		{ { "fe80::99" }, false, -EINVAL, "fe80::99%wg0" },
		{ { "fe80::1%wg9" }, false, -ENODEV, "no interface wg9" },
		{ { "fe80::1%99" }, false, -ENODEV, "index 99" },
	};
	struct addr_info addrs[G_N_ELEMENTS(host)];

	for (size_t i = 0; i < G_N_ELEMENTS(host); i++)
		addrs[i] = mkaddr(atoi(host[i][0]), host[i][1]);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct serve_addr ex[3], *out = NULL;
		size_t n_ex = 0, n_out = 99;
		char err[256] = "";
		int r;

		for (; n_ex < 3 && cases[i].explicit[n_ex]; n_ex++)
			g_assert_cmpint(serve_addr_parse(cases[i].explicit[n_ex], &ex[n_ex]), ==, 0);
		g_test_message("case %zu: %s", i, n_ex ? cases[i].explicit[0] : "(default)");
		r = serve_pick_addresses(host_links, cases[i].no_wireguard ? 3 : 6, addrs,
					 G_N_ELEMENTS(addrs), ex, n_ex, &out, &n_out, err,
					 sizeof(err));
		g_assert_cmpint(r, ==, cases[i].r);
		if (r < 0) {
			g_assert_null(out);
			g_assert_cmpuint(n_out, ==, 99);
			g_assert_nonnull(strstr(err, cases[i].want));
			g_assert_null(strchr(err, '\n'));
		} else {
			g_autofree char *got = describe(out, n_out);

			g_assert_cmpstr(got, ==, cases[i].want);
		}
		g_free(out);
	}

	/* no links at all; a WireGuard link with no address */
	{
		struct serve_addr *out = NULL;
		size_t n = 0;
		char err[256];

		g_assert_cmpint(serve_pick_addresses(NULL, 0, NULL, 0, NULL, 0, &out, &n, err,
						     sizeof(err)),
				==, -ENOENT);
		g_assert_cmpint(serve_pick_addresses(host_links, 6, addrs, 2, NULL, 0, &out, &n,
						     err, sizeof(err)),
				==, -ENOENT);
		g_assert_null(out);
	}
}

/* ---- the server on loopback -------------------------------------------- */

static bool have_ipv6(void)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

static struct server *start(const struct serve_opts *base, bool v6)
{
	struct serve_addr addrs[2];
	struct serve_opts o = *base;
	struct server *srv = NULL;

	g_assert_cmpint(serve_addr_parse("127.0.0.1", &addrs[0]), ==, 0);
	g_assert_cmpint(serve_addr_parse("::1", &addrs[1]), ==, 0);
	o.addrs = addrs;
	o.n_addrs = v6 ? 2 : 1;
	o.port = 0;
	g_assert_cmpint(serve_start(&o, &srv), ==, 0);
	g_assert_nonnull(srv);
	g_assert_cmpuint(serve_port(srv), >, 0);
	return srv;
}

static int sock_to(int family, int type, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	struct timeval tv = { .tv_sec = 20 };
	int fd = socket(family, type | SOCK_CLOEXEC, 0);

	g_assert_cmpint(fd, >=, 0);
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = in6addr_loopback;
		len = sizeof(*sin6);
	}
	/* A hung server fails the test instead of hanging it. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	g_assert_cmpint(connect(fd, (struct sockaddr *)&ss, len), ==, 0);
	return fd;
}

/* A TCP connection to 127.0.0.1:port from another loopback address (src). */
static int sock_from(const char *src, uint16_t port)
{
	struct sockaddr_in from = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 20 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(inet_pton(AF_INET, src, &from.sin_addr), ==, 1);
	to.sin_port = htons(port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	g_assert_cmpint(bind(fd, (struct sockaddr *)&from, sizeof(from)), ==, 0);
	g_assert_cmpint(connect(fd, (struct sockaddr *)&to, sizeof(to)), ==, 0);
	return fd;
}

/* Has the server closed fd (within ms)? Whatever it sent before is read and dropped. */
static bool closed_within(int fd, int ms)
{
	gint64 end = g_get_monotonic_time() + (gint64)ms * 1000;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)((end - g_get_monotonic_time()) / 1000);
		char buf[512];

		if (poll(&p, 1, left > 0 ? left : 0) != 1)
			return false;
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			return true;
	}
}

static void send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		g_assert_cmpint(n, >, 0);
		p += n;
		len -= (size_t)n;
	}
}

/* A buffered reader of one HTTP response. */
struct conn {
	int fd;
	char buf[65536];
	size_t off, len;
};

static bool fill(struct conn *c)
{
	ssize_t n = -1;

	if (c->off == c->len)
		c->off = c->len = 0;
	if (c->len == sizeof(c->buf)) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	if (n <= 0)
		return false;
	c->len += (size_t)n;
	return true;
}

static void getline_crlf(struct conn *c, char *line, size_t max)
{
	for (;;) {
		char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);

		if (nl) {
			size_t n = (size_t)(nl - (c->buf + c->off));

			g_assert_cmpuint(n, <, max);
			memcpy(line, c->buf + c->off, n);
			line[n] = '\0';
			if (n && line[n - 1] == '\r')
				line[n - 1] = '\0';
			c->off += n + 1;
			return;
		}
		g_assert_true(fill(c));
	}
}

struct response {
	int status;
	char type[64];
	bool chunked;
	long long length; /* -1 when none */
	uint64_t body_len;
	bool all_zero;
	char body[1024]; /* the first bytes, NUL-terminated */
};

/* Consume n body bytes (n < 0: until EOF); returns false at EOF. */
static bool body_bytes(struct conn *c, struct response *r, long long n)
{
	while (n != 0) {
		size_t have, take;

		if (c->off == c->len && !fill(c))
			return n < 0;
		have = c->len - c->off;
		take = n < 0 || (long long)have < n ? have : (size_t)n;
		for (size_t i = 0; i < take; i++) {
			if (r->body_len + i < sizeof(r->body) - 1)
				r->body[r->body_len + i] = c->buf[c->off + i];
			if (c->buf[c->off + i])
				r->all_zero = false;
		}
		r->body_len += take;
		c->off += take;
		if (n > 0)
			n -= (long long)take;
	}
	return true;
}

static void read_response(int fd, struct response *r)
{
	struct conn *c = g_new0(struct conn, 1);
	char line[512];

	memset(r, 0, sizeof(*r));
	r->length = -1;
	r->all_zero = true;
	c->fd = fd;
	getline_crlf(c, line, sizeof(line));
	g_assert_true(g_str_has_prefix(line, "HTTP/1.1 "));
	r->status = atoi(line + 9);
	for (;;) {
		getline_crlf(c, line, sizeof(line));
		if (!*line)
			break;
		if (!g_ascii_strncasecmp(line, "Content-Type: ", 14))
			g_strlcpy(r->type, line + 14, sizeof(r->type));
		else if (!g_ascii_strcasecmp(line, "Transfer-Encoding: chunked"))
			r->chunked = true;
		else if (!g_ascii_strncasecmp(line, "Content-Length: ", 16))
			r->length = atoll(line + 16);
	}
	if (r->chunked) {
		for (;;) {
			long long size;

			getline_crlf(c, line, sizeof(line));
			size = strtoll(line, NULL, 16);
			g_assert_cmpint(size, >=, 0);
			if (!size)
				break;
			g_assert_true(body_bytes(c, r, size));
			getline_crlf(c, line, sizeof(line));
			g_assert_cmpstr(line, ==, "");
		}
		getline_crlf(c, line, sizeof(line)); /* no trailers */
		g_assert_cmpstr(line, ==, "");
	} else {
		body_bytes(c, r, r->length);
	}
	g_free(c);
}

static void request(int family, uint16_t port, const char *method, const char *path,
		    struct response *r)
{
	g_autofree char *req = g_strdup_printf("%s %s HTTP/1.1\r\nHost: test\r\n%s\r\n", method,
					       path,
					       !strcmp(method, "POST") ? "Content-Length: 0\r\n" : "");
	int fd = sock_to(family, SOCK_STREAM, port);

	send_all(fd, req, strlen(req));
	read_response(fd, r);
	close(fd);
}

static void test_http_basic(void)
{
	bool v6 = have_ipv6();
	struct server *srv = start(&(struct serve_opts){ 0 }, v6);
	int families[] = { AF_INET, AF_INET6 };
	struct response r;

	for (size_t f = 0; f < (v6 ? 2u : 1u); f++) {
		uint16_t port = serve_port(srv);

		request(families[f], port, "GET", "/", &r);
		g_assert_cmpint(r.status, ==, 200);
		g_assert_true(g_str_has_prefix(r.type, "text/plain"));
		g_assert_cmpstr(r.body, ==, "wgshape serve " WGSHAPE_VERSION "\n");

		static const char *const missing[][2] = {
			{ "GET", "/nope" },	  { "GET", "/download/x" }, { "POST", "/download" },
			{ "GET", "/upload" },	  { "PUT", "/upload" },	    { "DELETE", "/" },
			{ "GET", "//download" }, { "POST", "/" },
		};
		for (size_t i = 0; i < G_N_ELEMENTS(missing); i++) {
			request(families[f], port, missing[i][0], missing[i][1], &r);
			g_assert_cmpint(r.status, ==, 404);
		}
		static const char *const bad[] = {
			"/download?seconds=abc", "/download?seconds=0", "/download?seconds=-1",
			"/download?seconds=", "/download?seconds=nan", "/download?seconds=1x",
		};
		for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
			request(families[f], port, "GET", bad[i], &r);
			g_assert_cmpint(r.status, ==, 400);
		}
		request(families[f], port, "POST", "/upload?seconds=abc", &r);
		g_assert_cmpint(r.status, ==, 400);
	}
	if (!v6)
		g_test_message("no IPv6 on loopback: IPv4 only");
	serve_stop(srv);
}

static void test_download(void)
{
	struct server *srv = start(&(struct serve_opts){ 0 }, false);
	struct response r;
	gint64 t0 = g_get_monotonic_time();
	double took;

	request(AF_INET, serve_port(srv), "GET", "/download?seconds=0.5", &r);
	took = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_assert_cmpint(r.status, ==, 200);
	g_assert_cmpstr(r.type, ==, "application/octet-stream");
	g_assert_true(r.chunked); /* no length: a stream that ends cleanly */
	g_assert_cmpuint(r.body_len, >, 0);
	g_assert_true(r.all_zero);
	g_assert_cmpfloat(took, >=, 0.5);
	g_assert_cmpfloat(took, <, 15); /* generous: valgrind */
	g_test_message("download: %" G_GUINT64_FORMAT " bytes in %.2f s", r.body_len, took);

	/* the server's cap wins over a longer ask */
	serve_stop(srv);
	srv = start(&(struct serve_opts){ .max_seconds = 0.3 }, false);
	t0 = g_get_monotonic_time();
	request(AF_INET, serve_port(srv), "GET", "/download?seconds=100", &r);
	took = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_assert_cmpint(r.status, ==, 200);
	g_assert_true(r.all_zero);
	g_assert_cmpfloat(took, >=, 0.3);
	g_assert_cmpfloat(took, <, 15);
	t0 = g_get_monotonic_time();
	request(AF_INET, serve_port(srv), "GET", "/download", &r);
	took = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_assert_cmpint(r.status, ==, 200);
	g_assert_cmpfloat(took, >=, 0.3);
	g_assert_cmpfloat(took, <, 15);
	serve_stop(srv);
}

static uint64_t json_bytes(const char *body, double *seconds)
{
	const char *b = strstr(body, "\"bytes\":"), *s = strstr(body, "\"seconds\":");

	g_assert_nonnull(b);
	g_assert_nonnull(s);
	g_assert_true(body[0] == '{' && body[strlen(body) - 1] == '}');
	*seconds = g_ascii_strtod(s + 10, NULL);
	return g_ascii_strtoull(b + 8, NULL, 10);
}

static void upload(int family, uint16_t port, uint64_t total, bool chunked, struct response *r)
{
	static char block[100003];
	g_autofree char *length = g_strdup_printf("Content-Length: %" G_GUINT64_FORMAT, total);
	g_autofree char *head = g_strdup_printf(
		"POST /upload HTTP/1.1\r\nHost: test\r\nContent-Type: application/octet-stream\r\n"
		"%s\r\n\r\n",
		chunked ? "Transfer-Encoding: chunked" : length);
	int fd = sock_to(family, SOCK_STREAM, port);
	uint64_t sent = 0;

	memset(block, 'x', sizeof(block));
	send_all(fd, head, strlen(head));
	for (unsigned int i = 0; sent < total; i++) {
		/* odd sizes, so no count is a lucky multiple */
		size_t n = MIN((uint64_t)(i % 7 + 1) * 13331, total - sent);

		if (chunked) {
			char size[32];

			snprintf(size, sizeof(size), "%zx\r\n", n);
			send_all(fd, size, strlen(size));
		}
		send_all(fd, block, n);
		if (chunked)
			send_all(fd, "\r\n", 2);
		sent += n;
	}
	if (chunked)
		send_all(fd, "0\r\n\r\n", 5);
	read_response(fd, r);
	close(fd);
}

static void test_upload(void)
{
	bool v6 = have_ipv6();
	struct server *srv = start(&(struct serve_opts){ 0 }, v6);
	static const uint64_t sizes[] = { 0, 1, 65535, 1000003, 10 * 1000 * 1000 + 7 };
	struct response r;
	double secs;

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
		for (int chunked = 0; chunked < 2; chunked++) {
			int family = v6 && (i % 2) ? AF_INET6 : AF_INET;

			upload(family, serve_port(srv), sizes[i], chunked, &r);
			g_assert_cmpint(r.status, ==, 200);
			g_assert_cmpstr(r.type, ==, "application/json");
			g_assert_cmpuint(json_bytes(r.body, &secs), ==, sizes[i]);
			g_assert_cmpfloat(secs, >=, 0);
			g_assert_cmpfloat(secs, <, 15);
		}
	serve_stop(srv);
}

/*
 * An upload still sending at the cap is cut: libmicrohttpd 0.9 cannot answer
 * before the body is complete, so the connection is closed without an answer.
 */
static void test_upload_cap(void)
{
	struct server *srv = start(&(struct serve_opts){ .max_seconds = 60 }, false);
	static const char head[] = "POST /upload?seconds=0.5 HTTP/1.1\r\nHost: test\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	static char chunk[16384 + 16];
	int fd = sock_to(AF_INET, SOCK_STREAM, serve_port(srv));
	gint64 t0 = g_get_monotonic_time();
	double took;
	char buf[256];
	int len;

	len = snprintf(chunk, sizeof(chunk), "%x\r\n", 16384);
	memset(chunk + len, 'x', 16384);
	memcpy(chunk + len + 16384, "\r\n", 2);
	len += 16384 + 2;
	send_all(fd, head, sizeof(head) - 1);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };

		g_assert_cmpint(poll(&p, 1, 20000), ==, 1);
		if (p.revents & (POLLIN | POLLHUP | POLLERR))
			break;
		/* whole chunks or nothing, so the body stays well-formed */
		if (send(fd, chunk, (size_t)len, MSG_NOSIGNAL) < 0)
			break;
		g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
	}
	took = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_assert_cmpint(recv(fd, buf, sizeof(buf), 0), <=, 0);
	g_assert_cmpfloat(took, >=, 0.5);
	g_assert_cmpfloat(took, <, 15);
	close(fd);
	/* the slot is back */
	{
		struct response r;

		upload(AF_INET, serve_port(srv), 1000, true, &r);
		g_assert_cmpint(r.status, ==, 200);
	}
	serve_stop(srv);
}

/* Past the stream cap: 503, and the slots come back when streams end. */
static void test_stream_cap(void)
{
	struct server *srv = start(&(struct serve_opts){ 0 }, false);
	static const char get[] = "GET /download?seconds=30 HTTP/1.1\r\nHost: test\r\n\r\n";
	static const char post[] = "POST /upload HTTP/1.1\r\nHost: test\r\n"
				   "Content-Length: 1000\r\n\r\n";
	int fds[SERVE_MAX_STREAMS];
	struct conn *c = g_new0(struct conn, 1);
	struct response r;
	char line[256];

	for (int i = 0; i < SERVE_MAX_STREAMS; i++) {
		fds[i] = sock_to(AF_INET, SOCK_STREAM, serve_port(srv));
		/* half downloads, half uploads that never finish their body */
		if (i % 2) {
			send_all(fds[i], post, sizeof(post) - 1);
			continue;
		}
		send_all(fds[i], get, sizeof(get) - 1);
		c->fd = fds[i];
		c->off = c->len = 0;
		getline_crlf(c, line, sizeof(line));
		g_assert_cmpstr(line, ==, "HTTP/1.1 200 OK");
	}
	/* An upload holds its slot once the server has read its headers: wait for that. */
	for (int tries = 0; tries < 1000 && serve_streams(srv) < SERVE_MAX_STREAMS; tries++)
		g_usleep(10000);
	g_assert_cmpuint(serve_streams(srv), ==, SERVE_MAX_STREAMS);
	request(AF_INET, serve_port(srv), "GET", "/download?seconds=0.01", &r);
	g_assert_cmpint(r.status, ==, 503);
	request(AF_INET, serve_port(srv), "POST", "/upload", &r);
	g_assert_cmpint(r.status, ==, 503);
	/* not a load stream: still served */
	request(AF_INET, serve_port(srv), "GET", "/", &r);
	g_assert_cmpint(r.status, ==, 200);

	for (int i = 0; i < SERVE_MAX_STREAMS; i++)
		close(fds[i]);
	/* The server notices a closed download at its next write, an upload at once. */
	for (int tries = 0; tries < 1000 && serve_streams(srv) > 0; tries++)
		g_usleep(10000);
	g_assert_cmpuint(serve_streams(srv), ==, 0);
	request(AF_INET, serve_port(srv), "GET", "/download?seconds=0.01", &r);
	g_assert_cmpint(r.status, ==, 200);
	g_free(c);
	serve_stop(srv);
}

/* A client that sends nothing is dropped after the connection timeout. */
static void test_idle_timeout(void)
{
	struct server *srv = start(&(struct serve_opts){ .conn_timeout = 1 }, false);
	int fd = sock_to(AF_INET, SOCK_STREAM, serve_port(srv));
	gint64 t0 = g_get_monotonic_time();
	char buf[16];
	double took;

	send_all(fd, "GET / HTTP/1.1\r\n", 16); /* and never the rest */
	g_assert_cmpint(recv(fd, buf, sizeof(buf), 0), <=, 0);
	took = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_assert_cmpfloat(took, >=, 0.9);
	g_assert_cmpfloat(took, <, 15);
	close(fd);
	serve_stop(srv);
}

/*
 * Slowloris from one source: more connections than the server has room for,
 * each with a head never finished. The source gets its share and no more (the
 * rest are closed at once); a peer at another address is still served, both
 * GET / and a load stream.
 */
static void test_per_source_cap(void)
{
	/* no head deadline during the test, however slow the machine */
	struct server *srv = start(&(struct serve_opts){ .head_timeout = 600 }, false);
	enum { N = SERVE_CONN_LIMIT(SERVE_MAX_STREAMS) + 12 };
	static const char part[] = "GET / HTTP/1.1\r\nX-Slow: 1\r\n";
	int fds[N], held = 0;
	struct response r;

	for (int i = 0; i < N; i++) {
		fds[i] = sock_from("127.0.0.2", serve_port(srv));
		/* past the cap the server may have closed it already */
		(void)!send(fds[i], part, sizeof(part) - 1, MSG_NOSIGNAL);
	}
	request(AF_INET, serve_port(srv), "GET", "/", &r);
	g_assert_cmpint(r.status, ==, 200);
	request(AF_INET, serve_port(srv), "GET", "/download?seconds=0.1", &r);
	g_assert_cmpint(r.status, ==, 200);
	g_usleep(200000);
	for (int i = 0; i < N; i++) {
		held += !closed_within(fds[i], 0);
		close(fds[i]);
	}
	g_test_message("%d connections from 127.0.0.2: %d held", N, held);
	g_assert_cmpint(held, ==, SERVE_CONN_PER_SOURCE(SERVE_MAX_STREAMS));
	serve_stop(srv);
}

/*
 * Send a request head a line at a time (every 0.2 s: never idle) and never
 * end it. Seconds until the server closed the connection, or limit when it
 * did not.
 */
static double trickle_head(int fd, double limit)
{
	gint64 t0 = g_get_monotonic_time();
	const char *line = "GET / HTTP/1.1\r\n";

	for (;;) {
		double took = (double)(g_get_monotonic_time() - t0) / 1e6;

		if (took >= limit)
			return limit;
		if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0 || closed_within(fd, 200))
			return (double)(g_get_monotonic_time() - t0) / 1e6;
		line = "X-Slow: 1\r\n";
	}
}

/*
 * A head that trickles in is cut at the head deadline, though the connection
 * is never idle; on a kept-alive connection, the deadline of the next head
 * runs from the end of the previous answer.
 */
static void test_head_deadline(void)
{
	struct server *srv = start(&(struct serve_opts){ .head_timeout = 1 }, false);
	/* answered after its (empty) body: libmicrohttpd keeps the connection */
	static const char whole[] = "POST /upload HTTP/1.1\r\nHost: test\r\n"
				    "Content-Length: 0\r\n\r\n";
	int fd = sock_to(AF_INET, SOCK_STREAM, serve_port(srv));
	struct response r;
	double took;

	took = trickle_head(fd, 6);
	g_test_message("first head: closed after %.2f s", took);
	g_assert_cmpfloat(took, >=, 0.9);
	g_assert_cmpfloat(took, <, 3);
	close(fd);

	fd = sock_to(AF_INET, SOCK_STREAM, serve_port(srv));
	g_usleep(700000); /* most of the deadline, before a whole request */
	send_all(fd, whole, sizeof(whole) - 1);
	read_response(fd, &r);
	g_assert_cmpint(r.status, ==, 200);
	took = trickle_head(fd, 6);
	g_test_message("second head on the connection: closed after %.2f s", took);
	g_assert_cmpfloat(took, >=, 0.9);
	g_assert_cmpfloat(took, <, 3);
	close(fd);
	serve_stop(srv);
}

/* The deadline is the head's: an upload body may take longer than it. */
static void test_slow_body(void)
{
	struct server *srv = start(&(struct serve_opts){ .head_timeout = 1 }, false);
	static const char head[] = "POST /upload HTTP/1.1\r\nHost: test\r\n"
				   "Content-Length: 10000\r\n\r\n";
	static char piece[1000];
	int fd = sock_to(AF_INET, SOCK_STREAM, serve_port(srv));
	struct response r;
	double secs;

	memset(piece, 'x', sizeof(piece));
	send_all(fd, head, sizeof(head) - 1);
	for (int i = 0; i < 10; i++) {
		g_usleep(250000);
		send_all(fd, piece, sizeof(piece));
	}
	read_response(fd, &r);
	g_assert_cmpint(r.status, ==, 200);
	g_assert_cmpuint(json_bytes(r.body, &secs), ==, 10000);
	g_assert_cmpfloat(secs, >=, 2);
	close(fd);
	serve_stop(srv);
}

static bool udp_recv(int fd, void *buf, size_t len, int timeout_ms, ssize_t *n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	*n = recv(fd, buf, len, 0);
	return *n >= 0;
}

/* A probe request of len bytes: the probe, then random padding. */
static void make_request(uint8_t *buf, size_t len, uint32_t seq)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)g_random_int();
	g_assert_cmpint(tune_probe_encode(&(struct tune_probe){ .token = 0x5e4e, .seq = seq,
								.sent_ns = 42 },
					  buf, len),
			==, 0);
}

static void test_udp_echo(void)
{
	bool v6 = have_ipv6();
	struct server *srv = start(&(struct serve_opts){ 0 }, v6);
	int families[] = { AF_INET, AF_INET6 };

	for (size_t f = 0; f < (v6 ? 2u : 1u); f++) {
		int fd = sock_to(families[f], SOCK_DGRAM, serve_port(srv));
		uint8_t out[TUNE_UDP_MAX + 1], want[TUNE_UDP_MAX], in[256];
		ssize_t n = -1;

		/* a request, padded up to the limit: its answer, of the same length */
		static const size_t sizes[] = { TUNE_PROBE_SIZE, TUNE_PROBE_SIZE + 1, 63,
						TUNE_UDP_MAX };
		for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
			struct tune_probe p;

			make_request(out, sizes[i], (uint32_t)i);
			memcpy(want, out, sizes[i]);
			g_assert_cmpint(tune_probe_answer(want, sizes[i], 0, 0), ==, 0);
			g_assert_cmpint(send(fd, out, sizes[i], 0), ==, (ssize_t)sizes[i]);
			g_assert_true(udp_recv(fd, in, sizeof(in), 10000, &n));
			g_assert_cmpmem(in, (size_t)n, want, sizes[i]);
			g_assert_cmpint(tune_probe_parse(in, (size_t)n, &p), ==, 0);
			g_assert_cmpint(p.type, ==, TUNE_PROBE_ANSWER);
			g_assert_cmpuint(p.seq, ==, i);
		}
		/* one byte over: dropped; the next one still answered */
		make_request(out, TUNE_UDP_MAX + 1, 9);
		g_assert_cmpint(send(fd, out, TUNE_UDP_MAX + 1, 0), ==, TUNE_UDP_MAX + 1);
		g_assert_false(udp_recv(fd, in, sizeof(in), 300, &n));
		g_assert_cmpint(send(fd, out, TUNE_PROBE_SIZE, 0), ==, TUNE_PROBE_SIZE);
		g_assert_true(udp_recv(fd, in, sizeof(in), 10000, &n));
		g_assert_cmpint(n, ==, TUNE_PROBE_SIZE);
		close(fd);
	}
	serve_stop(srv);
}

/*
 * No loop: an answer is never answered (as when another echo, or a serve,
 * sends one back), nor is anything that is not a probe request; and no
 * answer is larger than its request.
 */
static void test_udp_no_loop(void)
{
	struct server *srv = start(&(struct serve_opts){ 0 }, false);
	int fd = sock_to(AF_INET, SOCK_DGRAM, serve_port(srv));
	uint8_t req[TUNE_PROBE_SIZE], ans[256], junk[TUNE_UDP_MAX];
	struct tune_probe p;
	ssize_t n = -1;

	make_request(req, sizeof(req), 1);
	g_assert_cmpint(send(fd, req, sizeof(req), 0), ==, (ssize_t)sizeof(req));
	g_assert_true(udp_recv(fd, ans, sizeof(ans), 10000, &n));
	g_assert_cmpint(n, <=, (ssize_t)sizeof(req));
	g_assert_false(n == (ssize_t)sizeof(req) && !memcmp(ans, req, sizeof(req)));
	g_assert_cmpint(tune_probe_parse(ans, (size_t)n, &p), ==, 0);
	g_assert_cmpint(p.type, ==, TUNE_PROBE_ANSWER);
	/* the answer sent back, as a verbatim echo would: nothing comes */
	g_assert_cmpint(send(fd, ans, (size_t)n, 0), ==, n);
	g_assert_false(udp_recv(fd, ans, sizeof(ans), 300, &n));
	/* not a probe: an empty datagram, a short one, zeros, a request cut short */
	memset(junk, 0, sizeof(junk));
	static const size_t junk_len[] = { 0, 1, 16, TUNE_UDP_MAX };
	for (size_t i = 0; i < G_N_ELEMENTS(junk_len); i++) {
		g_assert_cmpint(send(fd, junk, junk_len[i], 0), ==, (ssize_t)junk_len[i]);
		g_assert_false(udp_recv(fd, ans, sizeof(ans), 200, &n));
	}
	g_assert_cmpint(send(fd, req, sizeof(req) - 1, 0), ==, (ssize_t)sizeof(req) - 1);
	g_assert_false(udp_recv(fd, ans, sizeof(ans), 200, &n));
	/* and a request still is */
	g_assert_cmpint(send(fd, req, sizeof(req), 0), ==, (ssize_t)sizeof(req));
	g_assert_true(udp_recv(fd, ans, sizeof(ans), 10000, &n));
	close(fd);
	serve_stop(srv);
}

/*
 * A timed probe: serve writes when it came and left, on CLOCK_MONOTONIC (the
 * test's own clock here, as both run on one host): between the test's
 * sending and its reading of the answer, the one no later than the other.
 */
static void test_udp_timed(void)
{
	struct server *srv = start(&(struct serve_opts){ 0 }, false);
	int fd = sock_to(AF_INET, SOCK_DGRAM, serve_port(srv));
	uint8_t req[TUNE_PROBE_TIMED_SIZE], ans[256];
	struct tune_probe p;
	uint64_t before, after;
	ssize_t n = -1;

	g_assert_cmpint(tune_probe_encode(&(struct tune_probe){ .token = 7, .seq = 1, .timed = true },
					  req, sizeof(req)),
			==, 0);
	before = (uint64_t)g_get_monotonic_time() * 1000;
	g_assert_cmpint(send(fd, req, sizeof(req), 0), ==, (ssize_t)sizeof(req));
	g_assert_true(udp_recv(fd, ans, sizeof(ans), 10000, &n));
	after = (uint64_t)g_get_monotonic_time() * 1000;
	g_assert_cmpint(n, ==, (ssize_t)sizeof(req));
	g_assert_cmpint(tune_probe_parse(ans, (size_t)n, &p), ==, 0);
	g_assert_true(p.type == TUNE_PROBE_ANSWER && p.timed && p.seq == 1);
	/* the times are CLOCK_MONOTONIC plus the process's offset: not the uptime */
	g_assert_false(p.rx_ns >= before && p.rx_ns <= after);
	g_assert_cmpuint(tune_stamp_offset_ns(), >=, UINT64_C(1) << 40);
	g_assert_cmpuint(p.rx_ns - tune_stamp_offset_ns(), >=, before);
	g_assert_cmpuint(p.rx_ns, <=, p.tx_ns);
	g_assert_cmpuint(p.tx_ns - tune_stamp_offset_ns(), <=, after);
	close(fd);
	serve_stop(srv);
}

static void test_udp_rate(void)
{
	struct server *srv = start(&(struct serve_opts){ .udp_rate = 10, .udp_burst = 5 }, false);
	int fd = sock_to(AF_INET, SOCK_DGRAM, serve_port(srv));
	gint64 t0 = g_get_monotonic_time();
	uint8_t req[TUNE_PROBE_SIZE], buf[64];
	double took;
	int got = 0;
	ssize_t n = -1;

	make_request(req, sizeof(req), 0);
	for (int i = 0; i < 60; i++)
		g_assert_cmpint(send(fd, req, sizeof(req), 0), ==, (ssize_t)sizeof(req));
	took = (double)(g_get_monotonic_time() - t0) / 1e6;
	while (udp_recv(fd, buf, sizeof(buf), 500, &n))
		got++;
	g_test_message("rate limit: %d of 60 echoed (sent in %.3f s)", got, took);
	g_assert_cmpint(got, >=, 5);
	g_assert_cmpint(got, <=, 5 + (int)(took * 10) + 1);
	/* refilled at 10/s: after 0.2 s there is a token again */
	g_usleep(200000);
	g_assert_cmpint(send(fd, req, sizeof(req), 0), ==, (ssize_t)sizeof(req));
	g_assert_true(udp_recv(fd, buf, sizeof(buf), 10000, &n));
	close(fd);
	serve_stop(srv);
}

/* Two servers cannot share the port; the second start fails and leaves nothing behind. */
static void test_start_fails(void)
{
	struct server *srv = start(&(struct serve_opts){ 0 }, false), *second = NULL;
	struct serve_addr a;
	struct serve_opts o = { .addrs = &a, .n_addrs = 1 };

	g_assert_cmpint(serve_addr_parse("127.0.0.1", &a), ==, 0);
	o.port = serve_port(srv);
	g_assert_cmpint(serve_start(&o, &second), ==, -EADDRINUSE);
	g_assert_null(second);
	/* the first still answers */
	{
		struct response r;

		request(AF_INET, serve_port(srv), "GET", "/", &r);
		g_assert_cmpint(r.status, ==, 200);
	}
	o.n_addrs = 0;
	g_assert_cmpint(serve_start(&o, &second), ==, -EINVAL);
	serve_stop(srv);
	serve_stop(NULL);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/serve/token-bucket", test_token_bucket);
	g_test_add_func("/serve/addr-parse", test_addr_parse);
	g_test_add_func("/serve/listen-parse", test_listen_parse);
	g_test_add_func("/serve/pick", test_pick);
	g_test_add_func("/serve/http-basic", test_http_basic);
	g_test_add_func("/serve/download", test_download);
	g_test_add_func("/serve/upload", test_upload);
	g_test_add_func("/serve/upload-cap", test_upload_cap);
	g_test_add_func("/serve/stream-cap", test_stream_cap);
	g_test_add_func("/serve/idle-timeout", test_idle_timeout);
	g_test_add_func("/serve/per-source-cap", test_per_source_cap);
	g_test_add_func("/serve/head-deadline", test_head_deadline);
	g_test_add_func("/serve/slow-body", test_slow_body);
	g_test_add_func("/serve/udp-echo", test_udp_echo);
	g_test_add_func("/serve/udp-no-loop", test_udp_no_loop);
	g_test_add_func("/serve/udp-timed", test_udp_timed);
	g_test_add_func("/serve/udp-rate", test_udp_rate);
	g_test_add_func("/serve/start-fails", test_start_fails);
	return g_test_run();
}
