/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake's netlink attributes, which libnl has no module for: encode the nested
 * TCA_OPTIONS of an RTM_NEWQDISC, decode TCA_OPTIONS and TCA_STATS2 of a reply.
 * Internal to the netlink module (and its unit test).
 */
#ifndef WGSHAPE_NETLINK_CAKE_ATTR_H
#define WGSHAPE_NETLINK_CAKE_ATTR_H

#include <netlink/msg.h>
#include <netlink/attr.h>

#include "netlink/cake.h"

/* Append TCA_OPTIONS (nested) with exactly the options set in o. 0 or -errno. */
int cake_attr_put(struct nl_msg *msg, const struct cake_opts *o);
/* Decode a TCA_OPTIONS attribute of kind "cake". 0 or -errno. */
int cake_attr_parse_opts(struct nlattr *options, struct cake_opts *out);
/* Decode a TCA_STATS2 attribute (basic, queue and cake's app block). 0 or -errno. */
int cake_attr_parse_stats(struct nlattr *stats2, struct cake_stats *out);

#endif
