// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Addresses: every IPv4 and IPv6 address of every link (RTM_GETADDR dump).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <glib.h>

#include "internal.h"


static int collect_addr(struct nl_msg *msg, GArray *arr, const void *match)
{
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct ifaddrmsg *ifa = nlmsg_data(hdr);
	struct nlattr *tb[IFA_MAX + 1], *a;
	struct addr_info info = { 0 };
	size_t len;

	if (hdr->nlmsg_type != RTM_NEWADDR)
		return 0;
	if (nlmsg_parse(hdr, sizeof(*ifa), tb, IFA_MAX, NULL) < 0)
		return -EBADMSG;
	if (ifa->ifa_family == AF_INET)
		len = 4;
	else if (ifa->ifa_family == AF_INET6)
		len = 16;
	else
		return 0;
	/* On a point-to-point link (WireGuard is one) IFA_ADDRESS is the peer's. */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!a || nla_len(a) < (int)len)
		return 0;
	info.ifindex = (int)ifa->ifa_index;
	info.family = ifa->ifa_family;
	memcpy(info.addr, nla_data(a), len);
	info.prefixlen = ifa->ifa_prefixlen;
	info.scope = ifa->ifa_scope;
	info.flags = tb[IFA_FLAGS] ? nla_get_u32(tb[IFA_FLAGS]) : ifa->ifa_flags;

	g_array_append_val(arr, info);
	return 0;
}

int netlink_addr_list(struct netlink *nl, struct addr_info **out, size_t *n)
{
	struct ifaddrmsg ifa = { .ifa_family = AF_UNSPEC };
	struct nl_msg *msg;

	msg = nlmsg_alloc_simple(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return netlink_dump(nl, nl->rt, msg, sizeof(**out), collect_addr, NULL, NULL,
			    (void **)out, n);
}
