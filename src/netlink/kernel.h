/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The netlink module: everything wgshape asks of the kernel goes through here
 * (src/netlink/). No libnl type crosses this header.
 *
 * Every function returns 0 or a negative errno. When the kernel said why a
 * request failed (extended ACK), netlink_ext_msg() has its words until the
 * next request; callers put them in their one error line.
 */
#ifndef WGSHAPE_NETLINK_KERNEL_H
#define WGSHAPE_NETLINK_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netlink/cake.h"

#define IFNAME_SIZE 16 /* IFNAMSIZ: 15 characters and the NUL */

struct netlink;

int netlink_open(struct netlink **out);
void netlink_close(struct netlink *nl);
/* The kernel's extended ACK text for the last failed request, or "". */
const char *netlink_ext_msg(const struct netlink *nl);
/* The port of nl's requests: notifications they cause carry it (our own echo). */
uint32_t netlink_port(const struct netlink *nl);

struct link_info {
	int ifindex;
	char name[IFNAME_SIZE];
	char kind[32]; /* IFLA_INFO_KIND: "wireguard", "ifb", "veth", "" for none */
	bool up;
	unsigned int mtu;
};

/* -ENODEV when there is no such interface. */
int netlink_link_get(struct netlink *nl, const char *name, struct link_info *out);
int netlink_link_get_index(struct netlink *nl, int ifindex, struct link_info *out);
/* The bytes ifindex received and sent (IFLA_STATS64). */
int netlink_link_bytes(struct netlink *nl, int ifindex, uint64_t *rx, uint64_t *tx);
/* Every link; *out is malloc'd, free() it. */
int netlink_link_list(struct netlink *nl, struct link_info **out, size_t *n);

struct qdisc_info {
	char kind[32];
	uint32_t handle, parent;
	void *options; /* raw TCA_OPTIONS payload, owned; NULL when none */
	size_t options_len;
	struct cake_opts cake; /* kind "cake" only */
	struct cake_stats stats; /* kind "cake" only */
	uint32_t fq_flows; /* kind "fq_codel" only: its flows (0 when not said) */
};

void qdisc_info_clear(struct qdisc_info *q);
/* The root qdisc of ifindex (a default one has handle 0). -ENOENT if none. */
int netlink_qdisc_root(struct netlink *nl, int ifindex, struct qdisc_info *out);
/* The qdisc of ifindex attached at parent (e.g. TC_H_INGRESS). -ENOENT if none. */
int netlink_qdisc_find_parent(struct netlink *nl, int ifindex, uint32_t parent,
			      struct qdisc_info *out);

enum qdisc_mode {
	QDISC_ADD, /* create; fails if a non-default root exists */
	QDISC_CHANGE, /* change cake in place: handle, queues and counters survive */
	QDISC_REPLACE, /* create or replace the root */
};

/* Send only the options set in opts. handle is used by QDISC_CHANGE. */
int netlink_cake_set(struct netlink *nl, int ifindex, uint32_t handle,
		     const struct cake_opts *opts, enum qdisc_mode mode);
/* Put back a root qdisc as it was read: kind, handle and raw options. */
int netlink_qdisc_restore(struct netlink *nl, int ifindex, const char *kind, uint32_t handle,
			  const void *options, size_t options_len);
/* Delete the root qdisc: the kernel puts its default back. */
int netlink_qdisc_del_root(struct netlink *nl, int ifindex);

/* Create an ifb link and bring it up. -EEXIST if the name is taken. */
int netlink_ifb_add(struct netlink *nl, const char *name, int *ifindex);
int netlink_link_del(struct netlink *nl, int ifindex);

/*
 * A clsact (ffff:) on ifindex with a match-all filter on its ingress hook
 * redirecting to to_ifindex; with have_qdisc, the filter alone on the
 * clsact or ingress qdisc there.
 */
int netlink_ingress_redirect_add(struct netlink *nl, int ifindex, int to_ifindex, bool have_qdisc);
/* What is in ifindex's ingress slot (ffff:), as wgshape sees it. */
struct ingress_slot {
	/* an ingress qdisc or clsact, unless a clsact with only wgshape's tc programs */
	bool present;
	/* it is a clsact (tc qdisc del dev IFACE clsact), not an ingress qdisc */
	bool clsact;
	/* where wgshape's filter (the one matchall at its priority) sends; else 0 */
	int redirect_ifindex;
	/* filters beside wgshape's (the user's), or a clsact with nothing of wgshape's */
	bool theirs;
	/* the daemon's tc programs (netlink_tc_bpf_attach) are on it: it stays with them */
	bool bpf;
};
int netlink_ingress_get(struct netlink *nl, int ifindex, struct ingress_slot *out);
int netlink_ingress_del(struct netlink *nl, int ifindex);
/* Delete wgshape's filter (its priority) alone, leaving the qdisc and other filters. */
int netlink_ingress_filter_del(struct netlink *nl, int ifindex);

/*
 * The daemon's tc programs (direct action, returning TC_ACT_UNSPEC: they
 * only watch) on both hooks of ifindex's clsact, "NAME_out" and "NAME_in",
 * at a priority before wgshape's redirect: replaced when there. The clsact
 * is made when the slot is empty (*made); -EBUSY when an ingress qdisc holds
 * it (no egress hook). On failure nothing of it is left.
 */
#define NETLINK_TC_BPF_PRIO 49151
int netlink_tc_bpf_attach(struct netlink *nl, int ifindex, int egress_fd, int ingress_fd,
			  const char *name, bool *made);
/* Take them away; and the clsact, when it is wgshape's (made) and nothing else is on it. */
int netlink_tc_bpf_detach(struct netlink *nl, int ifindex, bool made);

/*
 * Per-peer shaping: an HTB root on an interface, a class per peer with a
 * cake leaf, and flower filters that send a packet to its peer's class by
 * destination address (src/netlink/htb.c, src/netlink/filter.c).
 * Class ids and handles are tc's major:minor in one u32 (TC_H_MAKE).
 */
struct tc_prefix {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order; host bits zero */
	unsigned int prefixlen;
};

struct tc_class_info {
	uint32_t classid, parent;
	char kind[16]; /* "htb" */
	uint64_t rate, ceil; /* bytes/s (htb) */
	uint32_t leaf; /* handle of the qdisc attached to it; 0 if none or HTB's default pfifo */
	uint64_t bytes, packets; /* TCA_STATS2 basic */
	uint32_t drops, overlimits, backlog_bytes, backlog_packets; /* TCA_STATS2 queue */
};

/*
 * Every class of ifindex; *out is malloc'd, free() it. Not only HTB's:
 * cake lists a class per active flow (kind "cake", under the cake's handle).
 */
int netlink_class_list(struct netlink *nl, int ifindex, struct tc_class_info **out, size_t *n);
/*
 * HTB as the root qdisc, handle (major:0), packets to no class go to
 * defcls (a minor id). A size table adds overhead bytes to every packet so
 * that HTB counts what the line carries (the tunnel's own overhead).
 * QDISC_ADD, QDISC_REPLACE, or QDISC_CHANGE: the size table only (defcls is
 * ignored; the kernel's HTB cannot change itself). QDISC_REPLACE onto an HTB
 * root of the same handle is a change to the kernel: -EINVAL "Change
 * operation not supported by specified qdisc"; delete the root first.
 */
int netlink_htb_root_set(struct netlink *nl, int ifindex, uint32_t handle, uint16_t defcls,
			 int overhead, enum qdisc_mode mode);
/*
 * An HTB class classid under parent (the root's handle or another class):
 * guaranteed rate, ceil (bytes/s, both > 0, else -EINVAL). QDISC_ADD creates
 * it (-EEXIST if there), QDISC_CHANGE changes it in place (-ENOENT if
 * none; its leaf, queue and counters survive), QDISC_REPLACE does either.
 * A change cannot move a class: the kernel ignores parent then (0 is fine).
 * Burst: 1600 bytes + 1 ms at the rate; quantum: rate / 10 in 1500..200000.
 */
int netlink_htb_class_set(struct netlink *nl, int ifindex, uint32_t classid, uint32_t parent,
			  uint64_t rate, uint64_t ceil, enum qdisc_mode mode);
/*
 * Delete a class (and its leaf qdisc). -ENOENT if none; -EBUSY while it has
 * child classes or a filter sends to it (delete those first).
 */
int netlink_class_del(struct netlink *nl, int ifindex, uint32_t classid);

/*
 * Cake as the qdisc attached at parent (a class id); like netlink_cake_set.
 * handle 0: on add or replace the kernel picks one (8001:, 8002: ...); on
 * change, whatever qdisc is at parent.
 */
int netlink_cake_set_at(struct netlink *nl, int ifindex, uint32_t parent, uint32_t handle,
			const struct cake_opts *opts, enum qdisc_mode mode);
/*
 * fq_codel with flows queues, the kernel's defaults for the rest, as the
 * qdisc at parent (a class id): made, or put in place of what is there.
 */
int netlink_fq_codel_set_at(struct netlink *nl, int ifindex, uint32_t parent, uint32_t flows);
/* Every qdisc of ifindex (cake's options and statistics parsed); free each with
 * qdisc_info_clear, then free(*out). */
int netlink_qdisc_list(struct netlink *nl, int ifindex, struct qdisc_info **out, size_t *n);

struct flower_info {
	uint32_t parent, prio, handle;
	struct tc_prefix match; /* the address it matches */
	bool src; /* match is the packet's source (else its destination) */
	uint32_t classid; /* where it sends a match */
};

/*
 * A flower filter on parent (the root's handle) matching the packet's
 * destination (or, with src, its source) in match, and sending it to
 * classid. IPv4 and IPv6 live at different priorities (prio is the caller's,
 * 1..65535): a prio that holds the other family is -EINVAL. handle 0 lets
 * the kernel choose (the lowest free one of that prio, from 1). -EEXIST when
 * that prio already matches the same address. Linux 6.1 leaks a
 * filter reference on classid when an add fails that way: the class then
 * stays -EBUSY to netlink_class_del until the root goes. Do not send adds
 * that can collide.
 */
int netlink_flower_add(struct netlink *nl, int ifindex, uint32_t parent, uint32_t prio,
		       uint32_t handle, const struct tc_prefix *match, bool src, uint32_t classid);
/*
 * Delete one filter (family picks the protocol; handle 0, which would
 * delete the whole prio, is -EINVAL). -ENOENT if no such filter or prio;
 * -EINVAL if prio holds the other family.
 */
int netlink_filter_del(struct netlink *nl, int ifindex, uint32_t parent, uint32_t prio,
		       int family, uint32_t handle);
/* Every flower filter on parent; *out is malloc'd, free() it. Other kinds are skipped. */
int netlink_flower_list(struct netlink *nl, int ifindex, uint32_t parent, struct flower_info **out,
			size_t *n);

#define WG_KEY_LEN 32

struct wg_peer {
	uint8_t key[WG_KEY_LEN]; /* public key */
	int endpoint_family; /* AF_INET, AF_INET6, 0 for none */
	struct tc_prefix *allowed; /* malloc'd */
	size_t n_allowed;
	uint64_t rx_bytes, tx_bytes;
	int64_t last_handshake; /* seconds since the epoch; 0 never */
};

/*
 * Every peer of a WireGuard interface, with its AllowedIPs (one dump).
 * -EOPNOTSUPP when the kernel has no WireGuard, or ifname is not WireGuard;
 * -ENODEV when there is no such interface.
 */
int netlink_wg_peers(struct netlink *nl, const char *ifname, struct wg_peer **out, size_t *n);
void wg_peers_free(struct wg_peer *peers, size_t n);

/*
 * The same dump off the caller's loop (a busy daemon's): a worker thread
 * with a netlink socket of its own dumps ifname's peers, and done gets them
 * in the GMainContext that was the thread default when the dumper was made
 * (an idle source there): r as netlink_wg_peers's, at when the dump began
 * (monotonic µs), ifindex as asked; done owns peers (wg_peers_free). One
 * dump per interface at a time: asking again while one is under way is
 * that one. After wg_dumper_free, done is not called again.
 */
struct wg_dumper;
typedef void (*wg_dump_done)(void *arg, const char *ifname, int ifindex, int64_t at, int r,
			     struct wg_peer *peers, size_t n);
struct wg_dumper *wg_dumper_new(wg_dump_done done, void *arg);
/* 0 asked (or under way already); -EINVAL a name too long; -EAGAIN no thread. */
int wg_dumper_ask(struct wg_dumper *w, const char *ifname, int ifindex);
bool wg_dumper_busy(const struct wg_dumper *w, const char *ifname);
void wg_dumper_free(struct wg_dumper *w);

/*
 * Kernel notifications: links coming and going, qdiscs and classes changing. The socket
 * is non-blocking; put its fd in an event loop and call netlink_events_read
 * when it is readable.
 */
struct netlink_events;

enum netlink_event_type {
	NL_EVENT_LINK_NEW, /* appeared or changed */
	NL_EVENT_LINK_DEL,
	NL_EVENT_QDISC_NEW,
	NL_EVENT_QDISC_DEL,
	NL_EVENT_CLASS_NEW, /* a tc class made or changed */
	NL_EVENT_CLASS_DEL,
	NL_EVENT_OVERRUN, /* the kernel dropped notifications (ENOBUFS): resync */
};

struct netlink_event {
	enum netlink_event_type type;
	int ifindex;
	char ifname[IFNAME_SIZE]; /* link events */
	char kind[32]; /* qdisc or class kind; link kind */
	uint32_t parent; /* qdisc and class events */
	uint32_t handle; /* qdisc and class events: the qdisc's handle, the class's id */
	uint32_t portid; /* the netlink port whose request caused it (0: the kernel's own) */
};

typedef void (*netlink_event_fn)(const struct netlink_event *ev, void *arg);

int netlink_events_open(struct netlink_events **out);
void netlink_events_close(struct netlink_events *ev);
int netlink_events_fd(const struct netlink_events *ev);
/* Deliver every pending notification to fn. 0 or -errno. */
int netlink_events_read(struct netlink_events *ev, netlink_event_fn fn, void *arg);

/*
 * Addresses. addr is in network byte order: 4 bytes for AF_INET, 16 for
 * AF_INET6; the local address (IFA_LOCAL) on point-to-point links.
 */
struct addr_info {
	int ifindex;
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned int prefixlen;
	unsigned int scope; /* RT_SCOPE_*: 253 link, 254 host */
	uint32_t flags; /* IFA_F_*: tentative, dadfailed, ... */
};

/* Every IPv4 and IPv6 address of every link; *out is malloc'd, free() it. */
int netlink_addr_list(struct netlink *nl, struct addr_info **out, size_t *n);

/*
 * The interface the kernel would send a packet to addr (AF_INET: 4 bytes,
 * AF_INET6: 16) through. -ENETUNREACH when there is no route.
 */
int netlink_route_oif(struct netlink *nl, int family, const void *addr, int *oif);

#endif
