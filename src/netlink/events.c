// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Link and tc (qdisc and class) notifications for the daemon.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "internal.h"

struct netlink_events {
	struct nl_sock *sk;
	netlink_event_fn fn;
	void *arg;
};

static int on_event(struct nl_msg *msg, void *arg)
{
	struct netlink_events *e = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct netlink_event ev = { 0 };

	switch (hdr->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK: {
		struct ifinfomsg *ifi = nlmsg_data(hdr);
		struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];

		if (nlmsg_parse(hdr, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
			return NL_SKIP;
		ev.type = hdr->nlmsg_type == RTM_NEWLINK ? NL_EVENT_LINK_NEW : NL_EVENT_LINK_DEL;
		ev.ifindex = ifi->ifi_index;
		if (tb[IFLA_IFNAME])
			nla_strlcpy(ev.ifname, tb[IFLA_IFNAME], sizeof(ev.ifname));
		if (tb[IFLA_LINKINFO] &&
		    nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL) == 0 &&
		    li[IFLA_INFO_KIND])
			nla_strlcpy(ev.kind, li[IFLA_INFO_KIND], sizeof(ev.kind));
		break;
	}
	case RTM_NEWQDISC:
	case RTM_DELQDISC:
	case RTM_NEWTCLASS:
	case RTM_DELTCLASS: {
		struct tcmsg *tcm = nlmsg_data(hdr);
		struct nlattr *tb[TCA_MAX + 1];

		if (nlmsg_parse(hdr, sizeof(*tcm), tb, TCA_MAX, NULL) < 0)
			return NL_SKIP;
		switch (hdr->nlmsg_type) {
		case RTM_NEWQDISC:
			ev.type = NL_EVENT_QDISC_NEW;
			break;
		case RTM_DELQDISC:
			ev.type = NL_EVENT_QDISC_DEL;
			break;
		case RTM_NEWTCLASS:
			ev.type = NL_EVENT_CLASS_NEW;
			break;
		default:
			ev.type = NL_EVENT_CLASS_DEL;
		}
		ev.ifindex = tcm->tcm_ifindex;
		ev.parent = tcm->tcm_parent;
		ev.handle = tcm->tcm_handle;
		if (tb[TCA_KIND])
			nla_strlcpy(ev.kind, tb[TCA_KIND], sizeof(ev.kind));
		break;
	}
	default:
		return NL_SKIP;
	}
	ev.portid = hdr->nlmsg_pid;
	e->fn(&ev, e->arg);
	return NL_OK;
}

/*
 * The receive buffer: 4 MiB (as far as net.core.rmem_max lets), or for tests
 * WGSHAPE_EVENT_RCVBUF bytes, so small that a burst of links overruns it.
 */
static int event_rcvbuf(void)
{
	const char *s = getenv("WGSHAPE_EVENT_RCVBUF");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 4 << 20;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > INT_MAX)
		return 4 << 20;
	return (int)v;
}

int netlink_events_open(struct netlink_events **out)
{
	struct netlink_events *e;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->sk = nl_socket_alloc();
	if (!e->sk) {
		free(e);
		return -ENOMEM;
	}
	/* Notifications carry no sequence numbers of ours. */
	nl_socket_disable_seq_check(e->sk);
	nl_socket_modify_cb(e->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, e);
	r = nl_connect(e->sk, NETLINK_ROUTE);
	if (r == 0)
		r = nl_socket_add_memberships(e->sk, RTNLGRP_LINK, RTNLGRP_TC, 0);
	if (r == 0)
		r = nl_socket_set_nonblocking(e->sk);
	if (r < 0) {
		nl_socket_free(e->sk);
		free(e);
		return r == -NLE_PERM ? -EPERM : -EIO;
	}
	nl_socket_set_buffer_size(e->sk, event_rcvbuf(), 0);
	*out = e;
	return 0;
}

void netlink_events_close(struct netlink_events *e)
{
	if (!e)
		return;
	nl_socket_free(e->sk);
	free(e);
}

int netlink_events_fd(const struct netlink_events *e)
{
	return nl_socket_get_fd(e->sk);
}

int netlink_events_read(struct netlink_events *e, netlink_event_fn fn, void *arg)
{
	struct nl_cb *cb = nl_socket_get_cb(e->sk);
	int r;

	e->fn = fn;
	e->arg = arg;
	/* One datagram per call; 0 messages means the socket is drained. */
	while ((r = nl_recvmsgs_report(e->sk, cb)) != 0) {
		if (r > 0)
			continue;
		if (r == -NLE_AGAIN)
			break;
		/* libnl reports the kernel's ENOBUFS (notifications lost) as NLE_NOMEM. */
		if (r == -NLE_NOMEM) {
			struct netlink_event ev = { .type = NL_EVENT_OVERRUN };

			fn(&ev, arg);
			continue;
		}
		nl_cb_put(cb);
		return -EIO;
	}
	nl_cb_put(cb);
	return 0;
}
