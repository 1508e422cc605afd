// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * serve's addresses, without I/O: a `listen` clause, its text, which
 * addresses to listen on given the links and addresses the kernel reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <glib.h>

#include "serve/internal.h"
#include "util/addr.h"

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static bool is_link_local6(const struct serve_addr *a)
{
	return a->family == AF_INET6 && a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80;
}

int serve_addr_parse(const char *s, struct serve_addr *out)
{
	struct serve_addr a = { 0 };
	char buf[INET6_ADDRSTRLEN];
	const char *pct = strchr(s, '%');
	size_t len = pct ? (size_t)(pct - s) : strlen(s);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!pct && inet_pton(AF_INET, buf, a.addr) == 1) {
		a.family = AF_INET;
	} else if (inet_pton(AF_INET6, buf, a.addr) == 1) {
		a.family = AF_INET6;
	} else {
		return -EINVAL;
	}
	if (pct) {
		const char *scope = pct + 1;
		char *end;
		unsigned long idx;

		if (!*scope || strlen(scope) >= IFNAME_SIZE || !is_link_local6(&a))
			return -EINVAL;
		idx = strtoul(scope, &end, 10);
		if (!*end && g_ascii_isdigit(*scope)) {
			if (idx == 0 || idx > INT32_MAX)
				return -EINVAL;
			a.scope_id = (unsigned int)idx;
		} else {
			g_strlcpy(a.ifname, scope, sizeof(a.ifname));
		}
	}
	*out = a;
	return 0;
}

int serve_listen_parse(const char *addr, const char *next, struct serve_addr *out, char *err,
		       size_t errlen)
{
	g_autofree char *shown = g_strescape(addr, NULL);
	bool any_source = next && !strcmp(next, "any-source");
	struct serve_addr a;

	if (serve_addr_parse(addr, &a) < 0) {
		snprintf(err, errlen,
			 "listen '%s': not an IPv4 or IPv6 address (IPv6 link-local: fe80::1%%wg0)",
			 shown);
		return -EINVAL;
	}
	/* Every address, the tunnels' and all others: only when said so. */
	if (serve_addr_is_any(&a) && !any_source) {
		snprintf(err, errlen,
			 "listen %s would answer any host that can reach this one, not only "
			 "tunnel peers: say 'listen %s any-source' if that is meant",
			 shown, shown);
		return -EINVAL;
	}
	a.any_source = any_source;
	*out = a;
	return any_source ? 2 : 1;
}

socklen_t serve_addr_sockaddr(const struct serve_addr *a, uint16_t port,
			      struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a->addr, 4);
		return sizeof(*sin);
	} else if (a->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a->addr, 16);
		sin6->sin6_scope_id = a->scope_id;
		return sizeof(*sin6);
	}
	return 0;
}

uint16_t serve_sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

bool serve_addr_is_any(const struct serve_addr *a)
{
	static const uint8_t any[16];

	return !memcmp(a->addr, any, addr_len(a->family));
}

void serve_addr_str(const struct serve_addr *a, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	char ip[ADDR_STR_SIZE];

	serve_addr_sockaddr(a, 0, &ss);
	addr_str((const struct sockaddr *)&ss, false, ip, sizeof(ip));
	if (a->scope_id && a->ifname[0])
		snprintf(buf, len, "%s%%%s", ip, a->ifname);
	else if (a->scope_id)
		snprintf(buf, len, "%s%%%u", ip, a->scope_id);
	else
		snprintf(buf, len, "%s", ip);
}

static const struct link_info *link_by_index(const struct link_info *links, size_t n, int ifindex)
{
	for (size_t i = 0; i < n; i++)
		if (links[i].ifindex == ifindex)
			return &links[i];
	return NULL;
}

static const struct link_info *link_by_name(const struct link_info *links, size_t n,
					    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(links[i].name, name))
			return &links[i];
	return NULL;
}

static bool is_wireguard(const struct link_info *l)
{
	return l && !strcmp(l->kind, "wireguard");
}

static bool same_addr(const struct serve_addr *a, const struct addr_info *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, addr_len(a->family));
}

static bool usable(const struct addr_info *a)
{
	/* IFA_F_DADFAILED: the kernel will not let anyone bind it. */
	return (a->family == AF_INET || a->family == AF_INET6) && !(a->flags & 0x08);
}

static void add_unique(GArray *out, const struct serve_addr *a)
{
	for (guint i = 0; i < out->len; i++) {
		const struct serve_addr *b = &g_array_index(out, struct serve_addr, i);

		if (a->family == b->family && a->scope_id == b->scope_id &&
		    !memcmp(a->addr, b->addr, addr_len(a->family)))
			return;
	}
	g_array_append_val(out, *a);
}

/* Where an explicit address is, and whether a WireGuard link has it. */
static int place_explicit(const struct link_info *links, size_t n_links,
			  const struct addr_info *addrs, size_t n_addrs, struct serve_addr *a,
			  char *err, size_t errlen)
{
	char shown[SERVE_ADDR_STR_SIZE];
	const struct link_info *l;

	serve_addr_str(a, shown, sizeof(shown));
	if (a->ifname[0]) { /* %IFNAME */
		l = link_by_name(links, n_links, a->ifname);
		if (!l) {
			snprintf(err, errlen, "listen '%s%%%s': no interface %s", shown, a->ifname,
				 a->ifname);
			return -ENODEV;
		}
		a->scope_id = (unsigned int)l->ifindex;
	} else if (a->scope_id) {
		l = link_by_index(links, n_links, (int)a->scope_id);
		if (!l) {
			snprintf(err, errlen, "listen '%s': no interface with index %u", shown,
				 a->scope_id);
			return -ENODEV;
		}
		g_strlcpy(a->ifname, l->name, sizeof(a->ifname));
	}
	for (size_t i = 0; i < n_addrs; i++) {
		if (!usable(&addrs[i]) || !same_addr(a, &addrs[i]))
			continue;
		if (a->scope_id && addrs[i].ifindex != (int)a->scope_id)
			continue;
		l = link_by_index(links, n_links, addrs[i].ifindex);
		if (!l)
			continue;
		/* The same address on two links: prefer the WireGuard one. */
		if (a->ifname[0] && a->tunnel)
			continue;
		g_strlcpy(a->ifname, l->name, sizeof(a->ifname));
		a->tunnel = is_wireguard(l);
		if (is_link_local6(a) && !a->scope_id)
			a->scope_id = (unsigned int)l->ifindex;
	}
	if (is_link_local6(a) && !a->scope_id) {
		snprintf(err, errlen,
			 "listen '%s': a link-local address needs its interface, as in %s%%wg0",
			 shown, shown);
		return -EINVAL;
	}
	return 0;
}

int serve_pick_addresses(const struct link_info *links, size_t n_links,
			 const struct addr_info *addrs, size_t n_addrs,
			 const struct serve_addr *explicit, size_t n_explicit,
			 struct serve_addr **out, size_t *n_out, char *err, size_t errlen)
{
	GArray *picked = g_array_new(FALSE, TRUE, sizeof(struct serve_addr));
	int r;

	for (size_t i = 0; i < n_explicit; i++) {
		struct serve_addr a = explicit[i];

		a.tunnel = false;
		r = place_explicit(links, n_links, addrs, n_addrs, &a, err, errlen);
		if (r < 0) {
			g_array_free(picked, TRUE);
			return r;
		}
		add_unique(picked, &a);
	}
	for (size_t i = 0; !n_explicit && i < n_addrs; i++) {
		const struct link_info *l = link_by_index(links, n_links, addrs[i].ifindex);
		struct serve_addr a = { .family = addrs[i].family, .tunnel = true };

		if (!is_wireguard(l) || !usable(&addrs[i]))
			continue;
		memcpy(a.addr, addrs[i].addr, addr_len(a.family));
		g_strlcpy(a.ifname, l->name, sizeof(a.ifname));
		if (is_link_local6(&a))
			a.scope_id = (unsigned int)l->ifindex;
		add_unique(picked, &a);
	}
	if (!picked->len) {
		snprintf(err, errlen,
			 "no WireGuard interface has an address to listen on (or say where: "
			 "listen ADDR)");
		g_array_free(picked, TRUE);
		return -ENOENT;
	}
	*n_out = picked->len;
	*out = (struct serve_addr *)(void *)g_array_free(picked, FALSE);
	return 0;
}
