// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flower filters that send a packet to its peer's HTB class by its
 * destination address (the download tree on the interface) or its source
 * address (the upload tree on its IFB); layouts follow the kernel's net/sched/cls_flower.c and what
 * tc/f_flower.c sends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <glib.h>

#include "internal.h"

/* What differs between the two families, in one place. */
static const struct family_keys {
	int family;
	uint16_t eth_type;
	int key[2], mask[2]; /* TCA_FLOWER_KEY_*: [0] destination, [1] source */
	unsigned int len; /* address bytes */
} family_keys[] = {
	{ AF_INET, ETH_P_IP, { TCA_FLOWER_KEY_IPV4_DST, TCA_FLOWER_KEY_IPV4_SRC },
	  { TCA_FLOWER_KEY_IPV4_DST_MASK, TCA_FLOWER_KEY_IPV4_SRC_MASK }, 4 },
	{ AF_INET6, ETH_P_IPV6, { TCA_FLOWER_KEY_IPV6_DST, TCA_FLOWER_KEY_IPV6_SRC },
	  { TCA_FLOWER_KEY_IPV6_DST_MASK, TCA_FLOWER_KEY_IPV6_SRC_MASK }, 16 },
};

static const struct family_keys *keys_by_family(int family)
{
	for (size_t i = 0; i < G_N_ELEMENTS(family_keys); i++)
		if (family_keys[i].family == family)
			return &family_keys[i];
	return NULL;
}

static const struct family_keys *keys_by_eth_type(uint16_t eth_type)
{
	for (size_t i = 0; i < G_N_ELEMENTS(family_keys); i++)
		if (family_keys[i].eth_type == eth_type)
			return &family_keys[i];
	return NULL;
}

static void prefix_mask(unsigned int prefixlen, unsigned int len, uint8_t *mask)
{
	for (unsigned int i = 0; i < len; i++) {
		unsigned int bits = prefixlen > 8 * i ? prefixlen - 8 * i : 0;

		mask[i] = bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);
	}
}

/* The length of the mask's leading ones (flower stores any mask; ours are prefixes). */
static unsigned int mask_prefixlen(const uint8_t *mask, unsigned int len)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < len; i++) {
		uint8_t m = mask[i];

		while (m & 0x80) {
			n++;
			m = (uint8_t)(m << 1);
		}
		if (mask[i] != 0xff)
			break;
	}
	return n;
}

static uint32_t filter_info(uint32_t prio, const struct family_keys *k)
{
	return TC_H_MAKE(prio << 16, htons(k->eth_type));
}

static int flower_opts_put(struct nl_msg *msg, const struct family_keys *k,
			   const struct tc_prefix *match, bool src, uint32_t classid)
{
	uint8_t addr[16], mask[16];
	struct nlattr *opts;

	prefix_mask(match->prefixlen, k->len, mask);
	for (unsigned int i = 0; i < k->len; i++)
		addr[i] = match->addr[i] & mask[i];
	if (nla_put_string(msg, TCA_KIND, "flower") < 0 ||
	    !(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    nla_put_u32(msg, TCA_FLOWER_CLASSID, classid) < 0 ||
	    nla_put_u16(msg, TCA_FLOWER_KEY_ETH_TYPE, htons(k->eth_type)) < 0 ||
	    nla_put(msg, k->key[src], (int)k->len, addr) < 0 ||
	    nla_put(msg, k->mask[src], (int)k->len, mask) < 0 ||
	    nla_put_u32(msg, TCA_FLOWER_FLAGS, TCA_CLS_FLAGS_SKIP_HW) < 0)
		return -ENOMEM;
	nla_nest_end(msg, opts);
	return 0;
}

int netlink_flower_add(struct netlink *nl, int ifindex, uint32_t parent, uint32_t prio,
		       uint32_t handle, const struct tc_prefix *match, bool src, uint32_t classid)
{
	const struct family_keys *k = keys_by_family(match->family);
	struct nl_msg *msg;

	if (!k)
		return -EAFNOSUPPORT;
	if (match->prefixlen > 8 * k->len || !prio || prio > 0xffff)
		return -EINVAL;
	msg = netlink_tc_msg(RTM_NEWTFILTER, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
			     ifindex, handle, parent, filter_info(prio, k));
	if (!msg)
		return -ENOMEM;
	if (flower_opts_put(msg, k, match, src, classid) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

int netlink_filter_del(struct netlink *nl, int ifindex, uint32_t parent, uint32_t prio,
		       int family, uint32_t handle)
{
	const struct family_keys *k = keys_by_family(family);
	struct nl_msg *msg;

	if (!k)
		return -EAFNOSUPPORT;
	/* Handle 0 would delete every filter at this priority and protocol. */
	if (!handle || !prio || prio > 0xffff)
		return -EINVAL;
	msg = netlink_tc_msg(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK, ifindex, handle, parent,
			     filter_info(prio, k));
	if (!msg)
		return -ENOMEM;
	return netlink_talk(nl, nl->rt, msg, NULL, NULL);
}

/*
 * 0 and *out filled, or 1 when the filter is not one of ours (no class, or
 * another protocol). It matches a destination, else a source, else every
 * address (a /0 destination).
 */
static int parse_flower_opts(struct nlattr *opts, uint16_t protocol, struct flower_info *out)
{
	struct nlattr *tb[TCA_FLOWER_MAX + 1];
	const struct family_keys *k;
	uint8_t mask[16];

	if (nla_parse_nested(tb, TCA_FLOWER_MAX, opts, NULL) < 0)
		return -EBADMSG;
	if (tb[TCA_FLOWER_KEY_ETH_TYPE] && nla_len(tb[TCA_FLOWER_KEY_ETH_TYPE]) >= 2)
		protocol = nla_get_u16(tb[TCA_FLOWER_KEY_ETH_TYPE]);
	k = keys_by_eth_type(ntohs(protocol));
	if (!k || !tb[TCA_FLOWER_CLASSID])
		return 1;
	out->classid = nla_get_u32(tb[TCA_FLOWER_CLASSID]);
	out->match.family = k->family;
	out->src = !tb[k->key[0]] && tb[k->key[1]];
	/* flower dumps no key whose mask is all zeros: that is a /0. */
	if (!tb[k->key[out->src]] || !tb[k->mask[out->src]])
		return 0;
	if (nla_len(tb[k->key[out->src]]) < (int)k->len ||
	    nla_len(tb[k->mask[out->src]]) < (int)k->len)
		return -EBADMSG;
	memcpy(mask, nla_data(tb[k->mask[out->src]]), k->len);
	out->match.prefixlen = mask_prefixlen(mask, k->len);
	prefix_mask(out->match.prefixlen, k->len, mask);
	memcpy(out->match.addr, nla_data(tb[k->key[out->src]]), k->len);
	for (unsigned int i = 0; i < k->len; i++)
		out->match.addr[i] &= mask[i];
	return 0;
}

struct flower_query {
	int ifindex;
	uint32_t parent;
};

static int collect_flower(struct nl_msg *msg, GArray *arr, const void *match)
{
	const struct flower_query *q = match;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct tcmsg *tcm = nlmsg_data(hdr);
	struct nlattr *tb[TCA_MAX + 1];
	struct flower_info f = { 0 };
	int r;

	if (hdr->nlmsg_type != RTM_NEWTFILTER)
		return 0;
	if (tcm->tcm_ifindex != q->ifindex || tcm->tcm_parent != q->parent)
		return 0;
	/*
	 * Each priority opens with a message for the classifier itself:
	 * handle 0, no options. Then one message per filter.
	 */
	if (!tcm->tcm_handle)
		return 0;
	if (nlmsg_parse(hdr, sizeof(*tcm), tb, TCA_MAX, NULL) < 0 || !tb[TCA_KIND])
		return -EBADMSG;
	if (nla_strcmp(tb[TCA_KIND], "flower") != 0 || !tb[TCA_OPTIONS])
		return 0;
	f.parent = tcm->tcm_parent;
	f.prio = TC_H_MAJ(tcm->tcm_info) >> 16;
	f.handle = tcm->tcm_handle;
	r = parse_flower_opts(tb[TCA_OPTIONS], (uint16_t)TC_H_MIN(tcm->tcm_info), &f);
	if (r != 0)
		return r < 0 ? r : 0;
	g_array_append_val(arr, f);
	return 0;
}

int netlink_flower_list(struct netlink *nl, int ifindex, uint32_t parent, struct flower_info **out,
			size_t *n)
{
	struct flower_query q = { .ifindex = ifindex, .parent = parent };

	return netlink_dump(nl, nl->rt,
			    netlink_tc_msg(RTM_GETTFILTER, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0,
					   parent, 0),
			    sizeof(**out), collect_flower, &q, NULL, (void **)out, n);
}
