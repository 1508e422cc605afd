/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared plumbing of the netlink module: one request/reply loop that keeps the
 * kernel's errno (libnl would fold it into its own NLE_* codes) and its
 * extended ACK message.
 */
#ifndef WGSHAPE_NETLINK_INTERNAL_H
#define WGSHAPE_NETLINK_INTERNAL_H

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>

#include <glib.h>

#include "netlink/kernel.h"

struct netlink {
	struct nl_sock *rt; /* NETLINK_ROUTE */
	struct nl_sock *genl; /* NETLINK_GENERIC, opened on first use */
	int wg_family; /* 0 until resolved */
	char ext_msg[256];
};

/* Called for each reply message; return 0 or -errno (the loop keeps reading). */
typedef int (*netlink_reply_fn)(struct nl_msg *msg, void *arg);

/*
 * Send msg (consumed) on sk and read replies until the ACK, the end of a
 * dump, or an error. Returns 0, the kernel's -errno, or the first error a
 * reply callback returned.
 */
int netlink_talk(struct netlink *nl, struct nl_sock *sk, struct nl_msg *msg,
		 netlink_reply_fn fn, void *arg);

/* Called for each reply of a dump: append what matches (match: the caller's filter) to arr. */
typedef int (*netlink_collect_fn)(struct nl_msg *msg, GArray *arr, const void *match);

/*
 * A dump and the objects collect keeps, as one array of elem_size each:
 * send msg (consumed; NULL: -ENOMEM), collect every reply. 0 with *out
 * (free() it: g_malloc is malloc) and *n; on failure -errno, with clear (if
 * given) called on each object collected and nothing kept.
 */
int netlink_dump(struct netlink *nl, struct nl_sock *sk, struct nl_msg *msg, size_t elem_size,
		 netlink_collect_fn collect, const void *match, void (*clear)(void *elem), void **out,
		 size_t *n);

/* A NETLINK_ROUTE tc message (qdisc or filter) with its tcmsg header filled. */
struct nl_msg *netlink_tc_msg(int type, int flags, int ifindex, uint32_t handle,
			      uint32_t parent, uint32_t info);

/* Resolve a generic netlink family by name; -EOPNOTSUPP if the kernel has none. */
int netlink_genl_family(struct netlink *nl, const char *name, int *family);

#endif
