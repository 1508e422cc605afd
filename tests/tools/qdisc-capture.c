/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qdisc-capture: keep what the kernel says about an interface's qdiscs, byte
 * for byte, so unit tests can parse real kernel output on machines whose
 * kernel lacks the qdisc (tests/data/, see its README).
 *
 *   qdisc-capture IFNAME|IFINDEX OUTDIR
 *
 * Sends one RTM_GETQDISC dump and writes every reply for the interface to
 * OUTDIR/<ifname>-<kind>-<parent>.nlmsg: the whole message, nlmsghdr first.
 * A dump needs no privilege. Not installed; built for the VM lab.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct capture {
	int ifindex;
	char ifname[IF_NAMESIZE];
	const char *outdir;
	unsigned int written;
	int err;
};

static const struct {
	uint32_t parent;
	const char *name;
} parent_names[] = {
	{ TC_H_ROOT, "root" },
	{ TC_H_INGRESS, "ingress" }, /* clsact sits at the same parent */
};

/* "root", "ingress", or major-minor in hex (a ':' is awkward in file names). */
static void parent_name(uint32_t parent, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(parent_names); i++) {
		if (parent_names[i].parent == parent) {
			snprintf(buf, len, "%s", parent_names[i].name);
			return;
		}
	}
	snprintf(buf, len, "%x-%x", TC_H_MAJ(parent) >> 16, TC_H_MIN(parent));
}

/* The kind comes from the kernel; keep only what is safe in a file name. */
static void kind_name(struct nlmsghdr *nlh, char *buf, size_t len)
{
	struct nlattr *kind = nlmsg_find_attr(nlh, sizeof(struct tcmsg), TCA_KIND);
	size_t i;

	if (!kind) {
		snprintf(buf, len, "none");
		return;
	}
	nla_strlcpy(buf, kind, len);
	for (i = 0; buf[i]; i++)
		if (!(buf[i] == '_' || buf[i] == '-' || (buf[i] >= 'a' && buf[i] <= 'z') ||
		      (buf[i] >= 'A' && buf[i] <= 'Z') || (buf[i] >= '0' && buf[i] <= '9')))
			buf[i] = '_';
}

static int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int err = 0;

	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int on_qdisc(struct nl_msg *msg, void *arg)
{
	struct capture *c = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	char kind[32], parent[32], path[PATH_MAX];
	struct tcmsg *tcm;
	int err;

	if (nlh->nlmsg_type != RTM_NEWQDISC || !nlmsg_valid_hdr(nlh, sizeof(*tcm)))
		return NL_OK;
	tcm = nlmsg_data(nlh);
	/* A dump ignores tcm_ifindex: every interface answers. */
	if (tcm->tcm_ifindex != c->ifindex)
		return NL_OK;

	kind_name(nlh, kind, sizeof(kind));
	parent_name(tcm->tcm_parent, parent, sizeof(parent));
	if (snprintf(path, sizeof(path), "%s/%s-%s-%s.nlmsg", c->outdir, c->ifname, kind,
		     parent) >= (int)sizeof(path)) {
		c->err = -ENAMETOOLONG;
		return NL_STOP;
	}
	err = write_file(path, nlh, nlh->nlmsg_len);
	if (err) {
		fprintf(stderr, "qdisc-capture: writing %s: %s\n", path, strerror(-err));
		c->err = err;
		return NL_STOP;
	}
	printf("%s\t%u bytes\thandle %x:%x\n", path, nlh->nlmsg_len,
	       TC_H_MAJ(tcm->tcm_handle) >> 16, TC_H_MIN(tcm->tcm_handle));
	c->written++;
	return NL_OK;
}

static int usage(void)
{
	fprintf(stderr, "Usage: qdisc-capture IFNAME|IFINDEX OUTDIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct capture c = { 0 };
	struct tcmsg tcm = { .tcm_family = AF_UNSPEC };
	struct nl_sock *sk;
	char *end;
	int err;

	if (argc != 3)
		return usage();
	c.outdir = argv[2];
	c.ifindex = (int)if_nametoindex(argv[1]);
	if (!c.ifindex) {
		long n = strtol(argv[1], &end, 10);

		if (*argv[1] && !*end && n > 0 && n <= INT_MAX)
			c.ifindex = (int)n;
	}
	if (!c.ifindex || !if_indextoname((unsigned int)c.ifindex, c.ifname)) {
		fprintf(stderr, "qdisc-capture: no interface %s\n", argv[1]);
		return 1;
	}

	sk = nl_socket_alloc();
	if (!sk) {
		fprintf(stderr, "qdisc-capture: out of memory\n");
		return 1;
	}
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err < 0)
		goto fail;
	/* Replies with cake's statistics can outgrow libnl's default buffer. */
	nl_socket_enable_msg_peek(sk);
	err = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_qdisc, &c);
	if (err < 0)
		goto fail;
	tcm.tcm_ifindex = c.ifindex;
	err = nl_send_simple(sk, RTM_GETQDISC, NLM_F_DUMP, &tcm, sizeof(tcm));
	if (err < 0)
		goto fail;
	err = nl_recvmsgs_default(sk);
	if (err < 0)
		goto fail;
	nl_socket_free(sk);

	if (c.err)
		return 1;
	if (!c.written) {
		fprintf(stderr, "qdisc-capture: %s has no qdisc in the dump\n", c.ifname);
		return 1;
	}
	return 0;

fail:
	fprintf(stderr, "qdisc-capture: RTM_GETQDISC dump: %s\n", nl_geterror(err));
	nl_socket_free(sk);
	return 1;
}
