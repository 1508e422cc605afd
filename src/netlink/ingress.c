// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The interface's ingress/clsact slot (ffff:): download shaping on this
 * host, a match-all filter that redirects every packet to an IFB, where cake
 * (ingress mode) shapes it; and the daemon's tc programs that time a peer's
 * TCP (adapt/tcp-rtt.h), on clsact's two hooks. wgshape makes a clsact
 * (before, an ingress qdisc: still known as its own); either takes filters
 * at ffff:fff2, the ingress hook.
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

#define INGRESS_HANDLE TC_H_MAKE(TC_H_CLSACT, 0) /* ffff: */
#define HOOK_IN TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS) /* ffff:fff2 */
#define HOOK_OUT TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS) /* ffff:fff3 */
#define FILTER_PRIO 49152 /* what tc picks for the first filter */
#define BPF_HANDLE 1

static int ingress_qdisc_add(struct netlink *nl, int ifindex)
{
	struct nl_msg *msg;

	msg = netlink_tc_msg(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
			     ifindex, INGRESS_HANDLE, TC_H_CLSACT, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, "clsact") < 0) {
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
			     ifindex, 0, HOOK_IN, TC_H_MAKE((uint32_t)FILTER_PRIO << 16,
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
			     TC_H_CLSACT, 0);
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	/* Gone already is what we wanted (the kernel says EINVAL or ENOENT). */
	return (r == -ENOENT || r == -EINVAL) ? 0 : r;
}

/* Delete the filters at prio on hook; none there is what was wanted (-ENOENT). */
static int filter_del(struct netlink *nl, int ifindex, uint32_t hook, uint16_t prio)
{
	struct nl_msg *msg;
	int r;

	msg = netlink_tc_msg(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK, ifindex, 0, hook,
			     TC_H_MAKE((uint32_t)prio << 16, htons(ETH_P_ALL)));
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	return r == -ENOENT ? 0 : r;
}

int netlink_ingress_filter_del(struct netlink *nl, int ifindex)
{
	return filter_del(nl, ifindex, HOOK_IN, FILTER_PRIO);
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

/*
 * What the slot's filters are: wgshape's redirect is one matchall that
 * redirects; its tc programs are "bpf" at NETLINK_TC_BPF_PRIO.
 */
struct filter_query {
	int redirect_ifindex;
	int ours; /* matchall filters at our priority */
	int bpf; /* our programs */
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
	if (!nla_strcmp(tb[TCA_KIND], "bpf") &&
	    TC_H_MAJ(tcm->tcm_info) == ((uint32_t)NETLINK_TC_BPF_PRIO << 16)) {
		if (tb[TCA_OPTIONS])
			q->bpf++;
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

/* The filters on one hook of ifindex's slot, counted into q. */
static int hook_filters(struct netlink *nl, int ifindex, uint32_t hook, struct filter_query *q)
{
	struct nl_msg *msg;

	msg = netlink_tc_msg(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, hook, 0);
	if (!msg)
		return -ENOMEM;
	return netlink_talk(nl, nl->rt, msg, parse_filter, q);
}

int netlink_ingress_get(struct netlink *nl, int ifindex, struct ingress_slot *out)
{
	struct filter_query fq = { 0 };
	struct qdisc_info qi = { 0 };
	bool clsact;
	int r;

	*out = (struct ingress_slot){ 0 };
	r = netlink_qdisc_find_parent(nl, ifindex, TC_H_INGRESS, &qi);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	clsact = strcmp(qi.kind, "ingress") != 0;
	qdisc_info_clear(&qi);

	r = hook_filters(nl, ifindex, HOOK_IN, &fq);
	if (r == 0 && clsact)
		r = hook_filters(nl, ifindex, HOOK_OUT, &fq);
	if (r < 0)
		return r;
	out->bpf = fq.bpf > 0;
	out->clsact = clsact;
	/* A clsact that holds only the daemon's programs is no qdisc of anyone's yet. */
	out->present = !(clsact && fq.bpf && !fq.ours && !fq.others);
	/* Anything beside the one filter wgshape adds: someone else's. */
	out->redirect_ifindex = fq.ours == 1 ? fq.redirect_ifindex : 0;
	/* ... and a clsact with nothing of wgshape's on it (it makes one only with them) */
	out->theirs = fq.ours > 1 || fq.others > 0 || (clsact && !fq.ours && !fq.bpf);
	return 0;
}

static int bpf_filter_add(struct netlink *nl, int ifindex, uint32_t hook, int fd, const char *name)
{
	struct nlattr *opts;
	struct nl_msg *msg;

	/* No NLM_F_EXCL: a program of ours there already is replaced. */
	msg = netlink_tc_msg(RTM_NEWTFILTER, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE, ifindex,
			     BPF_HANDLE, hook,
			     TC_H_MAKE((uint32_t)NETLINK_TC_BPF_PRIO << 16, htons(ETH_P_ALL)));
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, "bpf") < 0 || !(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    nla_put_u32(msg, TCA_BPF_FD, (uint32_t)fd) < 0 ||
	    nla_put_string(msg, TCA_BPF_NAME, name) < 0 ||
	    nla_put_u32(msg, TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nla_nest_end(msg, opts);
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

static int bpf_filter_del(struct netlink *nl, int ifindex, uint32_t hook)
{
	int r = filter_del(nl, ifindex, hook, NETLINK_TC_BPF_PRIO);

	/* no such hook (the slot has no clsact any more): gone as well */
	return r == -EINVAL ? 0 : r;
}

int netlink_tc_bpf_attach(struct netlink *nl, int ifindex, int egress_fd, int ingress_fd,
			  const char *name, bool *made)
{
	struct qdisc_info qi = { 0 };
	char hook_name[64];
	int r;

	*made = false;
	r = netlink_qdisc_find_parent(nl, ifindex, TC_H_INGRESS, &qi);
	if (r == 0) {
		bool ingress = !strcmp(qi.kind, "ingress");

		qdisc_info_clear(&qi);
		if (ingress)
			return -EBUSY; /* no egress hook, and it cannot be swapped under its filters */
	} else if (r == -ENOENT) {
		r = ingress_qdisc_add(nl, ifindex);
		if (r < 0)
			return r;
		*made = true;
	} else {
		return r;
	}
	snprintf(hook_name, sizeof(hook_name), "%s_out", name);
	r = bpf_filter_add(nl, ifindex, HOOK_OUT, egress_fd, hook_name);
	if (r == 0) {
		snprintf(hook_name, sizeof(hook_name), "%s_in", name);
		r = bpf_filter_add(nl, ifindex, HOOK_IN, ingress_fd, hook_name);
	}
	if (r < 0) {
		char why[sizeof(nl->ext_msg)];

		memcpy(why, nl->ext_msg, sizeof(why));
		netlink_tc_bpf_detach(nl, ifindex, *made);
		memcpy(nl->ext_msg, why, sizeof(why));
	}
	return r;
}

int netlink_tc_bpf_detach(struct netlink *nl, int ifindex, bool made)
{
	struct filter_query fq = { 0 };
	struct qdisc_info qi = { 0 };
	bool clsact;
	int r;

	r = bpf_filter_del(nl, ifindex, HOOK_OUT);
	if (r == 0)
		r = bpf_filter_del(nl, ifindex, HOOK_IN);
	if (r < 0 || !made)
		return r;
	/* the clsact it made goes when nothing else is on it now */
	r = netlink_qdisc_find_parent(nl, ifindex, TC_H_INGRESS, &qi);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	clsact = !strcmp(qi.kind, "clsact");
	qdisc_info_clear(&qi);
	if (!clsact)
		return 0;
	r = hook_filters(nl, ifindex, HOOK_IN, &fq);
	if (r == 0)
		r = hook_filters(nl, ifindex, HOOK_OUT, &fq);
	if (r == 0 && !fq.ours && !fq.bpf && !fq.others)
		r = netlink_ingress_del(nl, ifindex);
	return r;
}
