// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Links: look one up (name, index, kind), create an IFB, delete a link.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include <glib.h>

#include "internal.h"

static int parse_link(struct nl_msg *msg, void *arg)
{
	struct link_info *out = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct ifinfomsg *ifi = nlmsg_data(hdr);
	struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];

	if (hdr->nlmsg_type != RTM_NEWLINK)
		return 0;
	if (nlmsg_parse(hdr, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->ifindex = ifi->ifi_index;
	out->up = ifi->ifi_flags & IFF_UP;
	if (tb[IFLA_IFNAME])
		nla_strlcpy(out->name, tb[IFLA_IFNAME], sizeof(out->name));
	if (tb[IFLA_MTU])
		out->mtu = nla_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_LINKINFO] && nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL) == 0 &&
	    li[IFLA_INFO_KIND])
		nla_strlcpy(out->kind, li[IFLA_INFO_KIND], sizeof(out->kind));
	return 0;
}

static int link_get(struct netlink *nl, int ifindex, const char *name, struct link_info *out)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct link_info info = { 0 };
	struct nl_msg *msg;
	int r;

	msg = nlmsg_alloc_simple(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    (name && nla_put_string(msg, IFLA_IFNAME, name) < 0) ||
	    /* Skip per-VF stats and the like: we only need the kind. */
	    nla_put_u32(msg, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = netlink_talk(nl, nl->rt, msg, parse_link, &info);
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	if (!info.ifindex)
		return -ENODEV;
	*out = info;
	return 0;
}

struct link_bytes {
	bool found;
	uint64_t rx, tx;
};

static int parse_bytes(struct nl_msg *msg, void *arg)
{
	struct link_bytes *out = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nlattr *tb[IFLA_MAX + 1];
	struct rtnl_link_stats64 st;

	if (hdr->nlmsg_type != RTM_NEWLINK ||
	    nlmsg_parse(hdr, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0 ||
	    !tb[IFLA_STATS64] || nla_len(tb[IFLA_STATS64]) < (int)sizeof(st))
		return 0;
	memcpy(&st, nla_data(tb[IFLA_STATS64]), sizeof(st));
	out->found = true;
	out->rx = st.rx_bytes;
	out->tx = st.tx_bytes;
	return 0;
}

int netlink_link_bytes(struct netlink *nl, int ifindex, uint64_t *rx, uint64_t *tx)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct link_bytes b = { 0 };
	struct nl_msg *msg;
	int r;

	msg = nlmsg_alloc_simple(RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = netlink_talk(nl, nl->rt, msg, parse_bytes, &b);
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	if (!b.found)
		return -ENODATA;
	*rx = b.rx;
	*tx = b.tx;
	return 0;
}

int netlink_link_get(struct netlink *nl, const char *name, struct link_info *out)
{
	if (!name || !*name || strlen(name) >= IFNAME_SIZE)
		return -EINVAL;
	return link_get(nl, 0, name, out);
}

int netlink_link_get_index(struct netlink *nl, int ifindex, struct link_info *out)
{
	return link_get(nl, ifindex, NULL, out);
}

int netlink_ifb_add(struct netlink *nl, const char *name, int *ifindex)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		.ifi_flags = IFF_UP,
		.ifi_change = IFF_UP,
	};
	struct link_info info;
	struct nlattr *linkinfo;
	struct nl_msg *msg;
	int r;

	msg = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    nla_put_string(msg, IFLA_IFNAME, name) < 0 ||
	    !(linkinfo = nla_nest_start(msg, IFLA_LINKINFO)) ||
	    nla_put_string(msg, IFLA_INFO_KIND, "ifb") < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nla_nest_end(msg, linkinfo);
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	if (r < 0)
		return r;
	r = netlink_link_get(nl, name, &info);
	if (r < 0)
		return r;
	*ifindex = info.ifindex;
	return 0;
}

int netlink_link_del(struct netlink *nl, int ifindex)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct nl_msg *msg;
	int r;

	msg = nlmsg_alloc_simple(RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	return r == -ENOENT ? -ENODEV : r;
}


static int collect_link(struct nl_msg *msg, GArray *arr, const void *match)
{
	struct link_info info;
	int r;

	r = parse_link(msg, &info);
	if (r < 0 || !info.ifindex)
		return r;
	g_array_append_val(arr, info);
	return 0;
}

int netlink_link_list(struct netlink *nl, struct link_info **out, size_t *n)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct nl_msg *msg;

	msg = nlmsg_alloc_simple(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    nla_put_u32(msg, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return netlink_dump(nl, nl->rt, msg, sizeof(**out), collect_link, NULL, NULL,
			    (void **)out, n);
}
