// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * WireGuard over generic netlink: which address families the peers'
 * endpoints use, which decides the tunnel's own per-packet overhead.
 */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/wireguard.h>

#include <netlink/genl/genl.h>

#include "internal.h"

static void count_peer(struct nlattr *peer, struct wg_endpoints *out)
{
	struct nlattr *tb[WGPEER_A_MAX + 1];
	const struct sockaddr *sa;

	if (nla_parse_nested(tb, WGPEER_A_MAX, peer, NULL) < 0)
		return;
	/*
	 * A peer with many allowed IPs continues in the next message, repeating
	 * only its key: count a peer where its statistics are, once.
	 */
	if (!tb[WGPEER_A_RX_BYTES])
		return;
	if (!tb[WGPEER_A_ENDPOINT] || nla_len(tb[WGPEER_A_ENDPOINT]) < (int)sizeof(sa_family_t)) {
		out->none++;
		return;
	}
	sa = nla_data(tb[WGPEER_A_ENDPOINT]);
	if (sa->sa_family == AF_INET && nla_len(tb[WGPEER_A_ENDPOINT]) >= (int)sizeof(struct sockaddr_in))
		out->v4++;
	else if (sa->sa_family == AF_INET6 &&
		 nla_len(tb[WGPEER_A_ENDPOINT]) >= (int)sizeof(struct sockaddr_in6))
		out->v6++;
	else
		out->none++;
}

static int parse_device(struct nl_msg *msg, void *arg)
{
	struct wg_endpoints *out = arg;
	struct nlattr *tb[WGDEVICE_A_MAX + 1], *peer;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, WGDEVICE_A_MAX, NULL) < 0)
		return -EBADMSG;
	if (!tb[WGDEVICE_A_PEERS])
		return 0;
	nla_for_each_nested(peer, tb[WGDEVICE_A_PEERS], rem)
		count_peer(peer, out);
	return 0;
}

int netlink_wg_endpoints(struct netlink *nl, const char *ifname, struct wg_endpoints *out)
{
	struct wg_endpoints ep = { 0 };
	struct nl_msg *msg;
	int r;

	if (!nl->wg_family) {
		r = netlink_genl_family(nl, WG_GENL_NAME, &nl->wg_family);
		if (r < 0)
			return r;
	}
	msg = nlmsg_alloc();
	if (!msg)
		return -ENOMEM;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->wg_family, 0,
			 NLM_F_REQUEST | NLM_F_DUMP, WG_CMD_GET_DEVICE, WG_GENL_VERSION) ||
	    nla_put_string(msg, WGDEVICE_A_IFNAME, ifname) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = netlink_talk(nl, nl->genl, msg, parse_device, &ep);
	if (r < 0)
		return r;
	*out = ep;
	return 0;
}
