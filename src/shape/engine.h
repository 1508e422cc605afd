/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shaping engine's parts, private to src/shape/: shape.c orchestrates
 * set and clear (ingress first, the part most likely to fail, then egress,
 * then the state file); root.c puts cake at a device's root and keeps what
 * a later failure takes back; egress.c and ingress.c are the two
 * directions; view.c reads back for show.
 */
#ifndef WGSHAPE_SHAPE_ENGINE_H
#define WGSHAPE_SHAPE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netlink/kernel.h"
#include "shape/shape.h"
#include "shape/state.h"

/* What was being done, for the hint on a failure. */
enum op {
	OP_LINK,
	OP_CAKE,
	OP_INGRESS,
	OP_IFB,
	OP_STATE,
	OP_WG,
};

/* Log "ifname: what: the kernel's reason (a hint)" once; returns r. */
int shape_fail(struct netlink *nl, const char *ifname, enum op op, int r, const char *what);

/* The interface, with the one line on failure. */
int shape_link_for(struct netlink *nl, const char *ifname, struct link_info *link);
/*
 * Load our state for link. A state saved for another ifindex belongs to an
 * interface that was deleted (and its qdiscs with it); only its IFB may
 * remain, which *stale_ifb names so it can be reused or removed.
 */
int shape_state_for(const char *statedir, const char *ifname, const struct link_info *link,
		    struct shape_state *st, char stale_ifb[IFNAME_SIZE]);

/* Does any of st's peers want its download shaped (the egress tree)? */
static inline bool shape_peers_wanted(const struct shape_state *st)
{
	for (guint i = 0; st->peers && i < st->peers->len; i++)
		if (g_array_index(st->peers, struct peer_want, i).rate)
			return true;
	return false;
}

/* WireGuard's peers, read once for a whole set: the overhead and the tree both need them. */
struct wg_dump {
	bool read;
	struct wg_peer *peers;
	size_t n;
};

int wg_dump_get(struct netlink *nl, const char *ifname, struct wg_dump *d);

/* What a step did, so that a later failure can take it back. */
struct undo {
	enum { UNDO_NONE, UNDO_CHANGE_BACK, UNDO_RESTORE_ROOT, UNDO_REMOVE_INGRESS } what;
	int ifindex; /* where cake sits */
	uint32_t handle;
	struct cake_opts prev; /* UNDO_CHANGE_BACK: the values we overwrote */
	int ifb_ifindex; /* UNDO_REMOVE_INGRESS: the IFB to delete, 0 if we kept one */
	bool keep_qdisc; /* UNDO_REMOVE_INGRESS: the user's filters are on it: our filter alone */
};

/* root.c */
void undo_run(struct netlink *nl, const struct undo *u, const struct shape_state *st,
	      int link_ifindex);
/* First touch of the root: remember what to put back on clear (root NULL: the default). */
int remember_root(struct shape_state *st, const struct qdisc_info *root);
/*
 * Put cake with opts as the root of ifindex (dev names it). If our cake is
 * there already (ours), change it in place (handle, queues and counters
 * survive); otherwise replace whatever is there, saving it first into
 * *orig if orig is given.
 */
int cake_root_set(struct netlink *nl, const char *ifname, const char *dev, int ifindex, bool ours,
		  const struct cake_opts *o, struct shape_state *orig, struct undo *u);

/* ingress.c */
/*
 * Is ifb a name wgshape gives ifname's IFB: today's, or the one cut to 15
 * of wgshape before hashed names? Only such an IFB is ever deleted.
 */
bool ifb_name_ours(const char *ifname, const char *ifb);
/*
 * in: DIR_SET puts ingress in place (o, the rate asked), DIR_OFF takes it
 * away. When st's peers have upload rates, the IFB holds the upload tree
 * whatever in says: the rate asked is its cap, DIR_OFF leaves it none.
 */
int ingress_apply(struct netlink *nl, const char *ifname, const struct link_info *link,
		  struct shape_state *st, const char *stale_ifb, const struct shape_request *req,
		  enum dir_action in, const struct cake_opts *o, struct wg_dump *wg,
		  struct undo *u);
/* Does any of st's peers want its upload shaped (the upload tree)? */
bool shape_upload_wanted(const struct shape_state *st);
/* The upload tree (st->in_tree) as st says, against what the IFB has; 0 when there is none. */
int ingress_tree_resync(struct netlink *nl, const struct link_info *link, struct shape_state *st,
			struct wg_dump *wg);
int ingress_off(struct netlink *nl, const char *ifname, const struct link_info *link,
		struct shape_state *st);
/* Take away our redirect and IFB named ifb, and nothing of anyone else's. */
int ingress_remove(struct netlink *nl, const char *ifname, const struct link_info *link,
		   const char *ifb);

/* egress.c */
/*
 * A per-peer tree on on (link itself, or its IFB) as st's peers and in (cap,
 * options, leaf, direction) say, against what the kernel has: link's
 * WireGuard peers read once (wg), new peers' activity judged.
 */
struct tree_input;
int shape_tree_sync(struct netlink *nl, const struct link_info *link,
		    const struct link_info *on, struct shape_state *st, struct tree_input *in,
		    bool fresh, struct wg_dump *wg);
/*
 * Judge the activity of wants not judged yet (new ones) from WireGuard's
 * handshakes and leases, for their lazy leaves.
 */
void shape_peers_judge(GArray *wants, const struct wg_dump *wg);
/* Egress as egress_decide says (src/shape/decide.h) for st, req and eg. */
int egress_apply(struct netlink *nl, const char *ifname, const struct link_info *link,
		 struct shape_state *st, const struct shape_request *req, enum dir_action eg,
		 const struct cake_opts *o, struct wg_dump *wg, struct undo *u);
int egress_off(struct netlink *nl, const char *ifname, const struct link_info *link,
	       struct shape_state *st);
/*
 * The per-peer tree as st says (its wants' leaves and activity), against what
 * the kernel has: for a tree in place (0 when there is none), with nothing
 * asked of it.
 */
int egress_tree_resync(struct netlink *nl, const struct link_info *link, struct shape_state *st,
		       struct wg_dump *wg);

/*
 * The peers wanted after req, into st->peers (shape.c; pure). PEERS_ALL
 * replaces every peer that did not come from `set` by hand; PEERS_ONE sets
 * or takes out one. A peer keeps its class.
 */
void shape_peers_update(struct shape_state *st, const struct shape_request *req);

#endif
