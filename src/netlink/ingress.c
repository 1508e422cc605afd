// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Download shaping on this host: an ingress qdisc whose match-all filter
 * redirects every packet to an IFB, where cake (ingress mode) shapes it.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>

#include "internal.h"

#define INGRESS_HANDLE TC_H_MAKE(TC_H_INGRESS, 0) /* ffff: */
#define FILTER_PRIO 49152 /* what tc picks for the first filter */

static int ingress_qdisc_add(struct netlink *nl, int ifindex)
{
	struct nl_msg *msg;

	msg = netlink_tc_msg(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
			     ifindex, INGRESS_HANDLE, TC_H_INGRESS, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, "ingress") < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

static int redirect_filter_add(struct netlink *nl, int ifindex, int to_ifindex)
{
	struct tc_mirred parms = {
		.action = TC_ACT_STOLEN,
		.eaction = TCA_EGRESS_REDIR,
		.ifindex = (uint32_t)to_ifindex,
	};
	struct nlattr *opts, *acts, *act, *aopts;
	struct nl_msg *msg;

	msg = netlink_tc_msg(RTM_NEWTFILTER, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
			     ifindex, 0, INGRESS_HANDLE, TC_H_MAKE((uint32_t)FILTER_PRIO << 16,
								   htons(ETH_P_ALL)));
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, "matchall") < 0 ||
	    !(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    !(acts = nla_nest_start(msg, TCA_MATCHALL_ACT)) ||
	    !(act = nla_nest_start(msg, 1)) ||
	    nla_put_string(msg, TCA_ACT_KIND, "mirred") < 0 ||
	    !(aopts = nla_nest_start(msg, TCA_ACT_OPTIONS)) ||
	    nla_put(msg, TCA_MIRRED_PARMS, sizeof(parms), &parms) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nla_nest_end(msg, aopts);
	nla_nest_end(msg, act);
	nla_nest_end(msg, acts);
	nla_nest_end(msg, opts);
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

int netlink_ingress_del(struct netlink *nl, int ifindex)
{
	struct nl_msg *msg;
	int r;

	msg = netlink_tc_msg(RTM_DELQDISC, NLM_F_REQUEST | NLM_F_ACK, ifindex, INGRESS_HANDLE,
			     TC_H_INGRESS, 0);
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	/* Gone already is what we wanted (the kernel says EINVAL or ENOENT). */
	return (r == -ENOENT || r == -EINVAL) ? 0 : r;
}

int netlink_ingress_filter_del(struct netlink *nl, int ifindex)
{
	struct nl_msg *msg;
	int r;

	msg = netlink_tc_msg(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK, ifindex, 0, INGRESS_HANDLE,
			     TC_H_MAKE((uint32_t)FILTER_PRIO << 16, htons(ETH_P_ALL)));
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	return r == -ENOENT ? 0 : r;
}

int netlink_ingress_redirect_add(struct netlink *nl, int ifindex, int to_ifindex, bool have_qdisc)
{
	int r;

	if (!have_qdisc) {
		r = ingress_qdisc_add(nl, ifindex);
		if (r < 0)
			return r;
	}
	r = redirect_filter_add(nl, ifindex, to_ifindex);
	if (r < 0 && !have_qdisc) {
		/* Keep the kernel's reason: the cleanup must not overwrite it. */
		char why[sizeof(nl->ext_msg)];

		memcpy(why, nl->ext_msg, sizeof(why));
		netlink_ingress_del(nl, ifindex);
		memcpy(nl->ext_msg, why, sizeof(why));
		return r;
	}
	return 0;
}

/* What the ingress qdisc's filters are: wgshape's is one matchall that redirects. */
struct filter_query {
	int redirect_ifindex;
	int ours; /* matchall filters at our priority */
	int others; /* filters of any other kind or priority */
};

static void parse_action(struct nlattr *act, struct filter_query *q)
{
	struct nlattr *tb[TCA_ACT_MAX + 1], *mt[TCA_MIRRED_MAX + 1];
	const struct tc_mirred *p;

	if (nla_parse_nested(tb, TCA_ACT_MAX, act, NULL) < 0 || !tb[TCA_ACT_KIND] ||
	    !tb[TCA_ACT_OPTIONS] || nla_strcmp(tb[TCA_ACT_KIND], "mirred") != 0)
		return;
	if (nla_parse_nested(mt, TCA_MIRRED_MAX, tb[TCA_ACT_OPTIONS], NULL) < 0 ||
	    !mt[TCA_MIRRED_PARMS] || nla_len(mt[TCA_MIRRED_PARMS]) < (int)sizeof(*p))
		return;
	p = nla_data(mt[TCA_MIRRED_PARMS]);
	if (p->eaction == TCA_EGRESS_REDIR)
		q->redirect_ifindex = (int)p->ifindex;
}

static int parse_filter(struct nl_msg *msg, void *arg)
{
	struct filter_query *q = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct nlattr *tb[TCA_MAX + 1], *mt[TCA_MATCHALL_MAX + 1], *act;
	int rem;

	const struct tcmsg *tcm = nlmsg_data(hdr);

	if (hdr->nlmsg_type != RTM_NEWTFILTER)
		return 0;
	if (nlmsg_parse(hdr, sizeof(struct tcmsg), tb, TCA_MAX, NULL) < 0 || !tb[TCA_KIND]) {
		q->others++;
		return 0;
	}
	if (nla_strcmp(tb[TCA_KIND], "matchall") != 0 ||
	    TC_H_MAJ(tcm->tcm_info) != ((uint32_t)FILTER_PRIO << 16)) {
		q->others++;
		return 0;
	}
	if (!tb[TCA_OPTIONS])
		return 0; /* the dump's head for the filter kind, before its filters */
	q->ours++;
	if (nla_parse_nested(mt, TCA_MATCHALL_MAX, tb[TCA_OPTIONS], NULL) < 0 ||
	    !mt[TCA_MATCHALL_ACT])
		return 0;
	nla_for_each_nested(act, mt[TCA_MATCHALL_ACT], rem)
		parse_action(act, q);
	return 0;
}

int netlink_ingress_get(struct netlink *nl, int ifindex, bool *present, int *redirect_ifindex,
			bool *theirs)
{
	struct filter_query fq = { 0 };
	struct qdisc_info qi = { 0 };
	struct nl_msg *msg;
	bool clsact;
	int r;

	r = netlink_qdisc_find_parent(nl, ifindex, TC_H_INGRESS, &qi);
	if (r == -ENOENT) {
		*present = false;
		*redirect_ifindex = 0;
		*theirs = false;
		return 0;
	}
	if (r < 0)
		return r;
	/* wgshape makes an ingress qdisc, never a clsact: that is the user's. */
	clsact = strcmp(qi.kind, "ingress") != 0;
	qdisc_info_clear(&qi);

	msg = netlink_tc_msg(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, INGRESS_HANDLE,
			     0);
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, parse_filter, &fq);
	if (r < 0)
		return r;
	*present = true;
	/* Anything beside the one filter wgshape adds: someone else's. */
	*redirect_ifindex = fq.ours == 1 ? fq.redirect_ifindex : 0;
	*theirs = clsact || fq.ours > 1 || fq.others > 0;
	return 0;
}
