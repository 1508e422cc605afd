// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cake at the root of a device (the interface's egress, or its IFB), put in
 * place or changed, with what was there before remembered; and the steps
 * that a later failure in `set` takes back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "engine.h"

/* Keep only the options we are about to change, with their current values. */
static struct cake_opts opts_prev(const struct cake_opts *now, const struct cake_opts *next)
{
	struct cake_opts prev = *now;

	prev.has &= next->has;
	return prev;
}

void undo_run(struct netlink *nl, const struct undo *u, const struct shape_state *st,
	      int link_ifindex)
{
	switch (u->what) {
	case UNDO_NONE:
		break;
	case UNDO_CHANGE_BACK:
		netlink_cake_set(nl, u->ifindex, u->handle, &u->prev, QDISC_CHANGE);
		break;
	case UNDO_RESTORE_ROOT:
		netlink_qdisc_restore(nl, u->ifindex, st->orig_kind, st->orig_handle,
				      st->orig_options, st->orig_options_len);
		break;
	case UNDO_REMOVE_INGRESS:
		if (u->keep_qdisc)
			netlink_ingress_filter_del(nl, link_ifindex);
		else
			netlink_ingress_del(nl, link_ifindex);
		if (u->ifb_ifindex)
			netlink_link_del(nl, u->ifb_ifindex);
		break;
	}
}

/* First touch of the root: remember what to put back on clear (root NULL: the default). */
int remember_root(struct shape_state *st, const struct qdisc_info *root)
{
	snprintf(st->orig_kind, sizeof(st->orig_kind), "%s", root ? root->kind : "default");
	st->orig_handle = root ? root->handle : 0;
	free(st->orig_options);
	st->orig_options = NULL;
	st->orig_options_len = 0;
	if (root && root->options_len) {
		st->orig_options = malloc(root->options_len);
		if (!st->orig_options)
			return -ENOMEM;
		memcpy(st->orig_options, root->options, root->options_len);
		st->orig_options_len = root->options_len;
	}
	return 0;
}

/* Ours is there: change it in place (handle, queues and counters survive). */
static int cake_root_change(struct netlink *nl, const char *ifname, const char *dev, int ifindex,
			    const struct qdisc_info *root, const struct cake_opts *o,
			    struct undo *u)
{
	char what[64];
	int r;

	log_debug("%s: change cake on %s in place (handle %x:)", ifname, dev, root->handle >> 16);
	snprintf(what, sizeof(what), "change cake on %s", dev);
	u->prev = opts_prev(&root->cake, o);
	u->handle = root->handle;
	r = netlink_cake_set(nl, ifindex, root->handle, o, QDISC_CHANGE);
	if (r < 0)
		return shape_fail(nl, ifname, OP_CAKE, r, what);
	u->what = UNDO_CHANGE_BACK;
	u->ifindex = ifindex;
	return 0;
}

/* A fresh cake in place of root (NULL: the default), whatever it is. */
static int cake_root_replace(struct netlink *nl, const char *ifname, const char *dev, int ifindex,
			     const struct qdisc_info *root, const struct cake_opts *o)
{
	char what[64];
	int r;

	snprintf(what, sizeof(what), "add cake on %s", dev);
	if (!root || !root->handle || strcmp(root->kind, "cake") != 0) {
		r = netlink_cake_set(nl, ifindex, 0, o, QDISC_REPLACE);
		return r < 0 ? shape_fail(nl, ifname, OP_CAKE, r, what) : 0;
	}
	/*
	 * A replace of cake by cake is a change in the kernel, which would
	 * keep a hand-set cake's other options: start from a fresh one.
	 */
	r = netlink_qdisc_del_root(nl, ifindex);
	if (r < 0)
		return shape_fail(nl, ifname, OP_CAKE, r, what);
	r = netlink_cake_set(nl, ifindex, 0, o, QDISC_ADD);
	if (r < 0) {
		shape_fail(nl, ifname, OP_CAKE, r, what);
		netlink_qdisc_restore(nl, ifindex, root->kind, root->handle, root->options,
				      root->options_len);
	}
	return r;
}

int cake_root_set(struct netlink *nl, const char *ifname, const char *dev, int ifindex, bool ours,
		  const struct cake_opts *o, struct shape_state *orig, struct undo *u)
{
	struct qdisc_info root = { 0 };
	int r;

	r = netlink_qdisc_root(nl, ifindex, &root);
	if (r < 0 && r != -ENOENT)
		return shape_fail(nl, ifname, OP_CAKE, r, "read root qdisc");

	if (ours && r == 0 && !strcmp(root.kind, "cake") && cake_opts_hold(&root.cake, o)) {
		/* Already so: touch nothing, so that applying twice changes nothing. */
		log_debug("%s: cake on %s already as asked", ifname, dev);
		qdisc_info_clear(&root);
		return 0;
	}
	if (ours && r == 0 && !strcmp(root.kind, "cake")) {
		r = cake_root_change(nl, ifname, dev, ifindex, &root, o, u);
		qdisc_info_clear(&root);
		return r;
	}

	if (ours)
		/* Ours was there and is not: someone removed or replaced it. */
		log_info("%s: root qdisc of %s is %s, not wgshape's cake: putting cake back",
			 ifname, dev, r == 0 ? root.kind : "the default");
	if (orig && !orig->egress && remember_root(orig, r == 0 ? &root : NULL) < 0) {
		qdisc_info_clear(&root);
		return shape_fail(NULL, ifname, OP_STATE, -ENOMEM, "save root qdisc");
	}
	r = cake_root_replace(nl, ifname, dev, ifindex, r == 0 ? &root : NULL, o);
	qdisc_info_clear(&root);
	if (r < 0)
		return r;
	u->what = UNDO_RESTORE_ROOT;
	u->ifindex = ifindex;
	return 0;
}
