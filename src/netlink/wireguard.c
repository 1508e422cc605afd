// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * WireGuard over generic netlink: which address families the peers'
 * endpoints use, which decides the tunnel's own per-packet overhead; the
 * peers with their AllowedIPs, which per-peer shaping classifies by.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/time_types.h>
#include <linux/wireguard.h>

#include <glib.h>
#include <netlink/genl/genl.h>

#include "internal.h"

static struct nl_msg *wg_dump_msg(struct netlink *nl, const char *ifname)
{
	struct nl_msg *msg;

	msg = nlmsg_alloc();
	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->wg_family, 0,
			 NLM_F_REQUEST | NLM_F_DUMP, WG_CMD_GET_DEVICE, WG_GENL_VERSION) ||
	    nla_put_string(msg, WGDEVICE_A_IFNAME, ifname) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int wg_family(struct netlink *nl)
{
	if (nl->wg_family)
		return 0;
	return netlink_genl_family(nl, WG_GENL_NAME, &nl->wg_family);
}

void wg_peers_free(struct wg_peer *peers, size_t n)
{
	if (!peers)
		return;
	for (size_t i = 0; i < n; i++)
		free(peers[i].allowed);
	free(peers);
}

static int parse_allowedip(struct nlattr *a, struct tc_prefix *out)
{
	struct nlattr *tb[WGALLOWEDIP_A_MAX + 1];
	unsigned int len;

	if (nla_parse_nested(tb, WGALLOWEDIP_A_MAX, a, NULL) < 0 || !tb[WGALLOWEDIP_A_FAMILY] ||
	    !tb[WGALLOWEDIP_A_IPADDR] || !tb[WGALLOWEDIP_A_CIDR_MASK])
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->family = nla_get_u16(tb[WGALLOWEDIP_A_FAMILY]);
	len = out->family == AF_INET ? 4 : out->family == AF_INET6 ? 16 : 0;
	if (!len || nla_len(tb[WGALLOWEDIP_A_IPADDR]) < (int)len)
		return -EBADMSG;
	memcpy(out->addr, nla_data(tb[WGALLOWEDIP_A_IPADDR]), len);
	out->prefixlen = nla_get_u8(tb[WGALLOWEDIP_A_CIDR_MASK]);
	return out->prefixlen <= 8 * len ? 0 : -EBADMSG;
}

/* Append a nest of AllowedIPs to p->allowed: one realloc per message. */
static int add_allowedips(struct nlattr *nest, struct wg_peer *p)
{
	struct tc_prefix *grown;
	struct nlattr *a;
	size_t count = 0;
	int rem, r;

	nla_for_each_nested(a, nest, rem)
		count++;
	if (!count)
		return 0;
	grown = realloc(p->allowed, (p->n_allowed + count) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->allowed = grown;
	nla_for_each_nested(a, nest, rem) {
		r = parse_allowedip(a, &p->allowed[p->n_allowed]);
		if (r < 0)
			return r;
		p->n_allowed++;
	}
	return 0;
}

static void peer_fill(struct nlattr **tb, struct wg_peer *p)
{
	const struct sockaddr *sa;

	if (tb[WGPEER_A_RX_BYTES])
		p->rx_bytes = nla_get_u64(tb[WGPEER_A_RX_BYTES]);
	if (tb[WGPEER_A_TX_BYTES])
		p->tx_bytes = nla_get_u64(tb[WGPEER_A_TX_BYTES]);
	if (tb[WGPEER_A_LAST_HANDSHAKE_TIME] &&
	    nla_len(tb[WGPEER_A_LAST_HANDSHAKE_TIME]) >= (int)sizeof(struct __kernel_timespec)) {
		struct __kernel_timespec ts;

		memcpy(&ts, nla_data(tb[WGPEER_A_LAST_HANDSHAKE_TIME]), sizeof(ts));
		p->last_handshake = ts.tv_sec;
	}
	if (tb[WGPEER_A_ENDPOINT] && nla_len(tb[WGPEER_A_ENDPOINT]) >= (int)sizeof(sa_family_t)) {
		sa = nla_data(tb[WGPEER_A_ENDPOINT]);
		if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
			p->endpoint_family = sa->sa_family;
	}
}

static int collect_peer(struct nlattr *peer, GArray *arr)
{
	struct nlattr *tb[WGPEER_A_MAX + 1];
	struct wg_peer *last = arr->len ? &g_array_index(arr, struct wg_peer, arr->len - 1) : NULL;
	struct wg_peer p = { 0 };

	if (nla_parse_nested(tb, WGPEER_A_MAX, peer, NULL) < 0 || !tb[WGPEER_A_PUBLIC_KEY] ||
	    nla_len(tb[WGPEER_A_PUBLIC_KEY]) != WG_KEY_LEN)
		return -EBADMSG;
	/*
	 * A peer whose AllowedIPs do not fit in one message goes on in the
	 * next, repeating only its key: the same peer as the one before.
	 */
	if (last && memcmp(last->key, nla_data(tb[WGPEER_A_PUBLIC_KEY]), WG_KEY_LEN) == 0)
		return tb[WGPEER_A_ALLOWEDIPS] ? add_allowedips(tb[WGPEER_A_ALLOWEDIPS], last) : 0;
	memcpy(p.key, nla_data(tb[WGPEER_A_PUBLIC_KEY]), WG_KEY_LEN);
	peer_fill(tb, &p);
	/* In the array first, so that the caller frees what add_allowedips allocates. */
	g_array_append_val(arr, p);
	if (!tb[WGPEER_A_ALLOWEDIPS])
		return 0;
	return add_allowedips(tb[WGPEER_A_ALLOWEDIPS],
			      &g_array_index(arr, struct wg_peer, arr->len - 1));
}

static void peer_clear_one(void *p)
{
	free(((struct wg_peer *)p)->allowed);
}

static int parse_peers(struct nl_msg *msg, GArray *arr, const void *match)
{
	struct nlattr *tb[WGDEVICE_A_MAX + 1], *peer;
	int rem, r;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, WGDEVICE_A_MAX, NULL) < 0)
		return -EBADMSG;
	if (!tb[WGDEVICE_A_PEERS])
		return 0;
	nla_for_each_nested(peer, tb[WGDEVICE_A_PEERS], rem) {
		r = collect_peer(peer, arr);
		if (r < 0)
			return r;
	}
	return 0;
}

int netlink_wg_peers(struct netlink *nl, const char *ifname, struct wg_peer **out, size_t *n)
{
	int r;

	r = wg_family(nl);
	if (r < 0)
		return r;
	return netlink_dump(nl, nl->genl, wg_dump_msg(nl, ifname), sizeof(**out), parse_peers, NULL,
			    peer_clear_one, (void **)out, n);
}
