// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which interface the kernel would send a packet to an address through: the
 * proof `tune` needs that its traffic takes the tunnel.
 */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/rtnetlink.h>

#include "internal.h"

struct route_answer {
	int oif;
};

static int parse_route(struct nl_msg *msg, void *arg)
{
	struct route_answer *a = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nlattr *tb[RTA_MAX + 1];

	if (hdr->nlmsg_type != RTM_NEWROUTE)
		return 0;
	if (nlmsg_parse(hdr, sizeof(struct rtmsg), tb, RTA_MAX, NULL) < 0)
		return -EBADMSG;
	if (tb[RTA_OIF])
		a->oif = (int)nla_get_u32(tb[RTA_OIF]);
	return 0;
}

int netlink_route_oif(struct netlink *nl, int family, const void *addr, int *oif)
{
	struct rtmsg rtm = {
		.rtm_family = (unsigned char)family,
		.rtm_dst_len = family == AF_INET ? 32 : 128,
	};
	struct route_answer a = { 0 };
	struct nl_msg *msg;
	int r;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	msg = nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, RTA_DST, family == AF_INET ? 4 : 16, addr) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = netlink_talk(nl, nl->rt, msg, parse_route, &a);
	if (r < 0)
		return r;
	if (!a.oif)
		return -ENETUNREACH;
	*oif = a.oif;
	return 0;
}
