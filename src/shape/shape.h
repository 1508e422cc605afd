/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shaping engine: what `set`, `clear` and `show` do to one interface,
 * built on the netlink module and the state files. A failed `set` undoes
 * whatever it had done, so nothing is left half-configured.
 *
 * These functions log their one error line themselves (they know the
 * interface, the operation and the kernel's reason) and return -errno.
 */
#ifndef WGSHAPE_SHAPE_H
#define WGSHAPE_SHAPE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "shape/cake.h"
#include "shape/peers.h"
#include "netlink/kernel.h"

enum dir_action {
	DIR_KEEP, /* not named: left as it is (options still apply if shaped) */
	DIR_SET,
	DIR_OFF,
};

struct shape_request {
	enum dir_action egress, ingress;
	uint64_t egress_rate, ingress_rate; /* bytes/s, with DIR_SET */
	/* Options for every direction set; rate and the ingress flag are ours to add. */
	struct cake_opts opts;
	/* overhead not in opts: "auto", from the tunnel's endpoints + link_overhead */
	int link_overhead;
	/* "overhead auto" or link-overhead was said: a hand-set overhead gives way */
	bool overhead_auto;
	/* leaf KIND: what a per-peer class holds (enum peer_leaf); UNSET: as it is */
	uint8_t leaf;
	/* who asks, kept for show: "set" when NULL, "config FILE:LINE", ... */
	const char *source;
	/*
	 * Per-peer download shaping on egress (src/shape/peers.h). PEERS_ALL:
	 * peers are every peer the configuration shapes (those set by hand
	 * stay); PEERS_ONE: peers[0] alone is set, or with rate 0 taken off.
	 * With peers, egress's rate is the cap for them all.
	 */
	enum { PEERS_KEEP, PEERS_ALL, PEERS_ONE } peers_action;
	const struct peer_want *peers;
	size_t n_peers;
};

/*
 * The IFB wgshape uses for ifname's download: "ifb4" + ifname when that fits
 * in 15 characters; else "ifb4", ifname's first 3, '~' and 7 hex digits of
 * the SHA-256 of the whole name, so that long names do not share one.
 */
void shape_ifb_name(const char *ifname, char out[IFNAME_SIZE]);

int shape_set(struct netlink *nl, const char *statedir, const char *ifname,
	      const struct shape_request *req);
/*
 * One peer's rate in ifname's tree, and nothing else: one HTB class change
 * and the state (the peer's entry takes source; the interface's own source
 * stays). 0 done; 1 when it is not that case (the peer has no class, the
 * tree has a cap, the kernel refused the change): nothing changed, plan the
 * tree instead; < 0 an error (said). When the state is kept (state_borrow)
 * it is written behind, else through: the daemon's rate requests are its
 * only caller.
 */
int shape_peer_rate(struct netlink *nl, const char *statedir, const char *ifname,
		    const uint8_t key[WG_KEY_LEN], uint64_t rate, const char *source);
/*
 * shape_peer_rate for a peer's upload: one change of its class on ifname's
 * IFB (the upload tree) and the state, when the daemon keeps the state and
 * the tree has no cap. 0 done; 1 when it is not that case (nothing changed:
 * plan the trees instead); < 0 an error (said).
 */
int shape_peer_upload_rate(struct netlink *nl, const char *statedir, const char *ifname,
			   const uint8_t key[WG_KEY_LEN], uint64_t rate, const char *source);
/* What the daemon saw of one peer: has it moved traffic within the idle time? */
struct peer_seen {
	uint8_t key[WG_KEY_LEN];
	bool active;
};

/*
 * The peers' activity into ifname's state, and each lazy leaf after it:
 * cake for an active peer, a small fq_codel for an idle one. Peers not in
 * seen keep theirs. peers: ifname's WireGuard peers, as the caller just
 * dumped them. How many changed, or < 0 (said).
 */
int shape_peers_activity(struct netlink *nl, const char *statedir, const char *ifname,
			 const struct peer_seen *seen, size_t n, const struct wg_peer *peers,
			 size_t n_peers);
/*
 * Remove both directions and put back what was there. Idempotent. For an
 * interface that is gone, removes its IFB and state.
 */
int shape_clear(struct netlink *nl, const char *statedir, const char *ifname);

struct shape_dir_view {
	bool shaped; /* cake is in place */
	bool managed; /* wgshape put it there (state agrees with the kernel) */
	char dev[IFNAME_SIZE]; /* where cake sits: IFACE or its IFB */
	struct qdisc_info qdisc; /* as the kernel reports it */
};

/* A class of the per-peer tree: the default class, or one peer's. */
struct shape_peer_view {
	char name[64]; /* "default" for the default class */
	char key[45]; /* base64; "" for the default class */
	char source[128];
	uint64_t rate; /* the download (upload tree: upload) asked for, bytes/s; 0: the default class */
	uint16_t minor;
	bool present; /* WireGuard has this peer now (always, for the default class) */
	char **allowed; /* its AllowedIPs ("10.0.0.2/32"), NULL-terminated; NULL if not present */
	bool has_class;
	struct tc_class_info cls;
	bool has_leaf;
	struct qdisc_info leaf;
	uint8_t leaf_setting; /* enum peer_leaf, resolved (lazy, cake, fq_codel); 0: the default class */
	bool leaf_active; /* lazy: the peer moved traffic lately, or its client holds a lease */
};

struct shape_view {
	struct link_info link;
	bool tree; /* egress is per peer: the root is wgshape's HTB */
	uint64_t cap; /* bytes/s, 0: none */
	GArray *peers; /* struct shape_peer_view, the default class first; NULL if not tree */
	bool in_tree; /* ingress is per peer: the IFB's root is wgshape's HTB (peers' upload) */
	uint64_t in_cap; /* bytes/s, 0: none */
	GArray *upload_peers; /* as peers, of the upload tree; NULL if not in_tree */
	bool has_state;
	char source[256];
	char overhead_reason[192];
	char orig_kind[32]; /* what clear puts back on egress */
	struct shape_dir_view egress, ingress;
};

/*
 * Read everything back from the kernel (nothing is taken from memory but the
 * reasons). -ENODEV, without a message, when ifname does not exist.
 */
int shape_view(struct netlink *nl, const char *statedir, const char *ifname,
	       struct shape_view *out);
void shape_view_clear(struct shape_view *v);

#endif
