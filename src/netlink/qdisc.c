// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Qdiscs: read one back or list an interface's (kind, handle, raw options,
 * cake's settings and statistics), set cake at the root or under a class,
 * put a saved root qdisc back, delete the root.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <glib.h>

#include "internal.h"
#include "cake-attr.h"

void qdisc_info_clear(struct qdisc_info *q)
{
	if (!q)
		return;
	free(q->options);
	memset(q, 0, sizeof(*q));
}

struct root_query {
	int ifindex;
	uint32_t parent;
	bool found;
	struct qdisc_info info;
};

/* Fill out from a qdisc message; out owns a copy of the options. */
static int qdisc_fill(struct nlmsghdr *hdr, struct qdisc_info *out)
{
	struct tcmsg *tcm = nlmsg_data(hdr);
	struct nlattr *tb[TCA_MAX + 1];
	int r;

	if (nlmsg_parse(hdr, sizeof(*tcm), tb, TCA_MAX, NULL) < 0 || !tb[TCA_KIND])
		return -EBADMSG;
	nla_strlcpy(out->kind, tb[TCA_KIND], sizeof(out->kind));
	out->handle = tcm->tcm_handle;
	out->parent = tcm->tcm_parent;
	if (tb[TCA_OPTIONS] && nla_len(tb[TCA_OPTIONS]) > 0) {
		out->options_len = (size_t)nla_len(tb[TCA_OPTIONS]);
		out->options = malloc(out->options_len);
		if (!out->options)
			return -ENOMEM;
		memcpy(out->options, nla_data(tb[TCA_OPTIONS]), out->options_len);
	}
	if (!strcmp(out->kind, "fq_codel") && tb[TCA_OPTIONS]) {
		struct nlattr *fq[TCA_FQ_CODEL_MAX + 1];

		if (nla_parse_nested(fq, TCA_FQ_CODEL_MAX, tb[TCA_OPTIONS], NULL) == 0 &&
		    fq[TCA_FQ_CODEL_FLOWS] && nla_len(fq[TCA_FQ_CODEL_FLOWS]) >= 4)
			out->fq_flows = nla_get_u32(fq[TCA_FQ_CODEL_FLOWS]);
		return 0;
	}
	if (strcmp(out->kind, "cake") != 0)
		return 0;
	if (tb[TCA_OPTIONS]) {
		r = cake_attr_parse_opts(tb[TCA_OPTIONS], &out->cake);
		if (r < 0)
			return r;
	}
	if (tb[TCA_STATS2]) {
		r = cake_attr_parse_stats(tb[TCA_STATS2], &out->stats);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_qdisc(struct nl_msg *msg, void *arg)
{
	struct root_query *q = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct tcmsg *tcm = nlmsg_data(hdr);

	if (hdr->nlmsg_type != RTM_NEWQDISC)
		return 0;
	/* The kernel ignores tcm_ifindex in a dump: filter here. */
	if (tcm->tcm_ifindex != q->ifindex || tcm->tcm_parent != q->parent || q->found)
		return 0;
	q->found = true;
	return qdisc_fill(hdr, &q->info);
}

static int qdisc_find(struct netlink *nl, int ifindex, uint32_t parent, struct qdisc_info *out)
{
	struct root_query q = { .ifindex = ifindex, .parent = parent };
	struct nl_msg *msg;
	int r;

	msg = netlink_tc_msg(RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, 0, 0);
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, parse_qdisc, &q);
	if (r < 0) {
		qdisc_info_clear(&q.info);
		return r;
	}
	if (!q.found)
		return -ENOENT;
	*out = q.info;
	return 0;
}

int netlink_qdisc_root(struct netlink *nl, int ifindex, struct qdisc_info *out)
{
	return qdisc_find(nl, ifindex, TC_H_ROOT, out);
}

int netlink_qdisc_find_parent(struct netlink *nl, int ifindex, uint32_t parent,
			      struct qdisc_info *out)
{
	return qdisc_find(nl, ifindex, parent, out);
}

static void qdisc_clear_one(void *q)
{
	qdisc_info_clear(q);
}

static int collect_qdisc(struct nl_msg *msg, GArray *arr, const void *match)
{
	const int *ifindex = match;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct tcmsg *tcm = nlmsg_data(hdr);
	struct qdisc_info info = { 0 };
	int r;

	if (hdr->nlmsg_type != RTM_NEWQDISC || tcm->tcm_ifindex != *ifindex)
		return 0;
	r = qdisc_fill(hdr, &info);
	if (r < 0) {
		qdisc_info_clear(&info);
		return r;
	}
	g_array_append_val(arr, info);
	return 0;
}

int netlink_qdisc_list(struct netlink *nl, int ifindex, struct qdisc_info **out, size_t *n)
{
	return netlink_dump(nl, nl->rt,
			    netlink_tc_msg(RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, 0, 0),
			    sizeof(**out), collect_qdisc, &ifindex, qdisc_clear_one, (void **)out, n);
}

static const int mode_flags[] = {
	[QDISC_ADD] = NLM_F_CREATE | NLM_F_EXCL,
	[QDISC_CHANGE] = 0,
	[QDISC_REPLACE] = NLM_F_CREATE | NLM_F_REPLACE,
};

int netlink_cake_set_at(struct netlink *nl, int ifindex, uint32_t parent, uint32_t handle,
			const struct cake_opts *opts, enum qdisc_mode mode)
{
	struct nl_msg *msg;
	int r;

	if ((unsigned int)mode > QDISC_REPLACE || TC_H_MIN(handle))
		return -EINVAL;
	msg = netlink_tc_msg(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK | mode_flags[mode], ifindex,
			     handle, parent, 0);
	if (!msg)
		return -ENOMEM;
	r = nla_put_string(msg, TCA_KIND, "cake");
	if (r < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = cake_attr_put(msg, opts);
	if (r < 0) {
		nlmsg_free(msg);
		return r;
	}
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

int netlink_fq_codel_set_at(struct netlink *nl, int ifindex, uint32_t parent, uint32_t flows)
{
	struct nl_msg *msg;
	struct nlattr *opts;

	if (!flows)
		return -EINVAL;
	msg = netlink_tc_msg(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK | mode_flags[QDISC_REPLACE],
			     ifindex, 0, parent, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, "fq_codel") < 0 ||
	    !(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    nla_put_u32(msg, TCA_FQ_CODEL_FLOWS, flows) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nla_nest_end(msg, opts);
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

int netlink_cake_set(struct netlink *nl, int ifindex, uint32_t handle,
		     const struct cake_opts *opts, enum qdisc_mode mode)
{
	return netlink_cake_set_at(nl, ifindex, TC_H_ROOT, mode == QDISC_CHANGE ? handle : 0, opts,
				   mode);
}

int netlink_qdisc_del_root(struct netlink *nl, int ifindex)
{
	struct nl_msg *msg;
	int r;

	msg = netlink_tc_msg(RTM_DELQDISC, NLM_F_REQUEST | NLM_F_ACK, ifindex, 0, TC_H_ROOT, 0);
	if (!msg)
		return -ENOMEM;
	r = netlink_talk(nl, nl->rt, msg, NULL, NULL);
	/* Only the kernel's default (handle 0) is left: that is what we wanted. */
	return r == -ENOENT ? 0 : r;
}

/*
 * The codel family keeps times in 1.024 us units and reports them rounded
 * down to microseconds, so a value read back and sent again comes out 1 us
 * short. Sent with 1 us more, it lands on exactly the same internal value.
 */
static const struct {
	const char *kind;
	int types[3];
} codel_times[] = {
	{ "fq_codel", { TCA_FQ_CODEL_TARGET, TCA_FQ_CODEL_INTERVAL, TCA_FQ_CODEL_CE_THRESHOLD } },
	{ "codel", { TCA_CODEL_TARGET, TCA_CODEL_INTERVAL, TCA_CODEL_CE_THRESHOLD } },
};

static void codel_times_fixup(const char *kind, void *options, size_t len)
{
	struct nlattr *a;
	int rem;

	for (size_t k = 0; k < sizeof(codel_times) / sizeof(codel_times[0]); k++) {
		if (strcmp(kind, codel_times[k].kind) != 0)
			continue;
		nla_for_each_attr(a, (struct nlattr *)options, (int)len, rem) {
			for (size_t t = 0; t < 3; t++) {
				uint32_t v;

				if (nla_type(a) != codel_times[k].types[t] || nla_len(a) != 4)
					continue;
				memcpy(&v, nla_data(a), 4);
				if (v < UINT32_MAX)
					v++;
				memcpy(nla_data(a), &v, 4);
			}
		}
	}
}

int netlink_qdisc_restore(struct netlink *nl, int ifindex, const char *kind, uint32_t handle,
			  const void *options, size_t options_len)
{
	struct nl_msg *msg;
	int r;

	/*
	 * Delete, then add with the saved handle: a replace could collide with
	 * the handle our own qdisc got in the meantime.
	 */
	r = netlink_qdisc_del_root(nl, ifindex);
	if (r < 0)
		return r;
	if (handle == 0)
		return 0; /* it was the kernel's default, which is back now */

	msg = netlink_tc_msg(RTM_NEWQDISC, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
			     ifindex, handle, TC_H_ROOT, 0);
	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, TCA_KIND, kind) < 0 ||
	    (options_len && nla_put(msg, TCA_OPTIONS, (int)options_len, options) < 0)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	if (options_len) {
		struct nlattr *opts = nlmsg_find_attr(nlmsg_hdr(msg), sizeof(struct tcmsg), TCA_OPTIONS);

		if (opts)
			codel_times_fixup(kind, nla_data(opts), (size_t)nla_len(opts));
	}
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}
