// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Netlink sockets and the one request/reply loop every request goes through.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>

#include "internal.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct talk {
	struct netlink *nl;
	netlink_reply_fn fn;
	void *arg;
	int err;
	bool done;
};

static int nle_to_errno(int nle)
{
	switch (-nle) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_NOADDR:
		return -EADDRNOTAVAIL;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_NODEV:
		return -ENODEV;
	default:
		return -EIO;
	}
}

static void keep_ext_msg(struct netlink *nl, struct nlmsgerr *e)
{
	struct nlmsghdr *hdr = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off, total;

	if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	/* Without NETLINK_CAP_ACK the kernel echoes our request before the TLVs. */
	off = sizeof(*e);
	if (!(hdr->nlmsg_flags & NLM_F_CAPPED))
		off = NLMSG_ALIGN(sizeof(int) + e->msg.nlmsg_len);
	total = hdr->nlmsg_len - NLMSG_HDRLEN;
	if (off >= total)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)e + off), (int)(total - off),
		      NULL) < 0)
		return;
	if (tb[NLMSGERR_ATTR_MSG])
		nla_strlcpy(nl->ext_msg, tb[NLMSGERR_ATTR_MSG], sizeof(nl->ext_msg));
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct talk *t = arg;

	t->err = e->error;
	t->done = true;
	if (e->error)
		keep_ext_msg(t->nl, e);
	return NL_STOP;
}

static int on_done(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;

	t->done = true;
	return NL_STOP;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;
	int r;

	if (!t->fn)
		return NL_OK;
	r = t->fn(msg, t->arg);
	if (r < 0 && !t->err)
		t->err = r;
	return NL_OK;
}

int netlink_talk(struct netlink *nl, struct nl_sock *sk, struct nl_msg *msg,
		 netlink_reply_fn fn, void *arg)
{
	struct talk t = { .nl = nl, .fn = fn, .arg = arg };
	struct nl_cb *cb, *sk_cb;
	int r;

	nl->ext_msg[0] = '\0';
	/* nl_socket_get_cb() takes a reference: put it, or each call leaks the socket's cb */
	sk_cb = nl_socket_get_cb(sk);
	cb = sk_cb ? nl_cb_clone(sk_cb) : NULL;
	if (sk_cb)
		nl_cb_put(sk_cb);
	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &t);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &t);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_done, &t);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &t);

	r = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (r < 0) {
		nl_cb_put(cb);
		return nle_to_errno(r);
	}
	while (!t.done) {
		r = nl_recvmsgs(sk, cb);
		if (r < 0 && !t.done) {
			/* e.g. NLE_DUMP_INTR: the caller may retry */
			t.err = t.err ? t.err : nle_to_errno(r);
			break;
		}
	}
	nl_cb_put(cb);
	return t.err;
}

struct dump {
	GArray *arr;
	netlink_collect_fn collect;
	const void *match;
};

static int dump_one(struct nl_msg *msg, void *arg)
{
	struct dump *d = arg;

	return d->collect(msg, d->arr, d->match);
}

int netlink_dump(struct netlink *nl, struct nl_sock *sk, struct nl_msg *msg, size_t elem_size,
		 netlink_collect_fn collect, const void *match, void (*clear)(void *elem), void **out,
		 size_t *n)
{
	struct dump d = { .collect = collect, .match = match };
	int r;

	if (!msg)
		return -ENOMEM;
	d.arr = g_array_new(FALSE, FALSE, (guint)elem_size);
	r = netlink_talk(nl, sk, msg, dump_one, &d);
	if (r < 0) {
		for (guint i = 0; clear && i < d.arr->len; i++)
			clear(d.arr->data + (size_t)i * elem_size);
		g_array_free(d.arr, TRUE);
		return r;
	}
	*n = d.arr->len;
	*out = g_array_free(d.arr, FALSE);
	return 0;
}

struct nl_msg *netlink_tc_msg(int type, int flags, int ifindex, uint32_t handle,
			      uint32_t parent, uint32_t info)
{
	struct tcmsg tcm = {
		.tcm_family = AF_UNSPEC,
		.tcm_ifindex = ifindex,
		.tcm_handle = handle,
		.tcm_parent = parent,
		.tcm_info = info,
	};
	struct nl_msg *msg;

	msg = nlmsg_alloc_simple(type, flags);
	if (!msg)
		return NULL;
	if (nlmsg_append(msg, &tcm, sizeof(tcm), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int socket_open(int protocol, struct nl_sock **out)
{
	struct nl_sock *sk;
	int one = 1, r;

	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, protocol);
	if (r < 0) {
		nl_socket_free(sk);
		return nle_to_errno(r);
	}
	/* We ask for ACKs where we want them; dumps end with NLMSG_DONE. */
	nl_socket_disable_auto_ack(sk);
	/* Best effort: older kernels lack these and still work, only less clearly. */
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	nl_socket_set_buffer_size(sk, 1 << 20, 1 << 20);
	*out = sk;
	return 0;
}

int netlink_open(struct netlink **out)
{
	struct netlink *nl;
	int r;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	r = socket_open(NETLINK_ROUTE, &nl->rt);
	if (r < 0) {
		free(nl);
		return r;
	}
	*out = nl;
	return 0;
}

void netlink_close(struct netlink *nl)
{
	if (!nl)
		return;
	if (nl->genl)
		nl_socket_free(nl->genl);
	nl_socket_free(nl->rt);
	free(nl);
}

const char *netlink_ext_msg(const struct netlink *nl)
{
	return nl->ext_msg;
}

uint32_t netlink_port(const struct netlink *nl)
{
	return nl_socket_get_local_port(nl->rt);
}

int netlink_genl_family(struct netlink *nl, const char *name, int *family)
{
	int r;

	if (!nl->genl) {
		r = socket_open(NETLINK_GENERIC, &nl->genl);
		if (r < 0)
			return r;
	}
	r = genl_ctrl_resolve(nl->genl, name);
	if (r < 0)
		return r == -NLE_OBJ_NOTFOUND ? -EOPNOTSUPP : nle_to_errno(r);
	*family = r;
	return 0;
}
