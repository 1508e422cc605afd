/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Cake settings and statistics as plain data, as the kernel carries them
 * (src/netlink/cake-attr.c encodes and decodes them; src/shape/cake.h gives
 * them names). Every option starts "not given" (its CAKE_HAS_* bit clear);
 * only given options reach the kernel, so the kernel's defaults stand for the
 * rest and a rate-only change stays one.
 */
#ifndef WGSHAPE_NETLINK_CAKE_H
#define WGSHAPE_NETLINK_CAKE_H

#include <stdbool.h>
#include <stdint.h>

enum cake_has {
	CAKE_HAS_RATE = 1u << 0,
	CAKE_HAS_OVERHEAD = 1u << 1,
	CAKE_HAS_MPU = 1u << 2,
	CAKE_HAS_RTT = 1u << 3,
	CAKE_HAS_DIFFSERV = 1u << 4,
	CAKE_HAS_NAT = 1u << 5,
	CAKE_HAS_WASH = 1u << 6,
	CAKE_HAS_ACK_FILTER = 1u << 7,
	CAKE_HAS_MEMLIMIT = 1u << 8,
	CAKE_HAS_INGRESS = 1u << 9,
	/*
	 * Sent only when raw is true (TCA_CAKE_RAW has no "off": sending an
	 * overhead ends raw mode); decoded only when the kernel reports raw.
	 */
	CAKE_HAS_RAW = 1u << 10,
	CAKE_HAS_FLOW_MODE = 1u << 11,
	CAKE_HAS_ATM = 1u << 12,
	CAKE_HAS_SPLIT_GSO = 1u << 13,
	CAKE_HAS_TARGET = 1u << 14, /* decode only: sent as rtt / 20, with the rtt */
	CAKE_HAS_AUTORATE = 1u << 15, /* decode only */
	CAKE_HAS_FWMARK = 1u << 16,
};

/* Values match linux/pkt_sched.h (CAKE_DIFFSERV_*). */
enum cake_diffserv {
	CAKE_DS_DIFFSERV3 = 0,
	CAKE_DS_DIFFSERV4 = 1,
	CAKE_DS_DIFFSERV8 = 2,
	CAKE_DS_BESTEFFORT = 3,
	CAKE_DS_PRECEDENCE = 4,
	CAKE_DS_MAX,
};

/* Values match linux/pkt_sched.h (CAKE_ACK_*). */
enum cake_ack {
	CAKE_ACKF_NONE = 0,
	CAKE_ACKF_FILTER = 1,
	CAKE_ACKF_AGGRESSIVE = 2,
	CAKE_ACKF_MAX,
};

/* Flow isolation. Values match linux/pkt_sched.h (CAKE_FLOW_*); nat is apart. */
enum cake_flow {
	CAKE_FM_FLOWBLIND = 0,
	CAKE_FM_SRCHOST = 1,
	CAKE_FM_DSTHOST = 2,
	CAKE_FM_HOSTS = 3,
	CAKE_FM_FLOWS = 4,
	CAKE_FM_DUAL_SRCHOST = 5,
	CAKE_FM_DUAL_DSTHOST = 6,
	CAKE_FM_TRIPLE_ISOLATE = 7,
	CAKE_FM_MAX,
};

/* Link-layer cell framing. Values match linux/pkt_sched.h (CAKE_ATM_*). */
enum cake_atm {
	CAKE_ATMC_NONE = 0,
	CAKE_ATMC_ATM = 1,
	CAKE_ATMC_PTM = 2,
	CAKE_ATMC_MAX,
};

struct cake_opts {
	uint32_t has;
	uint64_t rate; /* bytes per second; 0 = unlimited */
	int32_t overhead; /* bytes, -64..256 */
	uint32_t mpu; /* bytes */
	uint32_t rtt; /* microseconds */
	uint32_t target; /* microseconds (decode only) */
	uint32_t diffserv; /* enum cake_diffserv */
	uint32_t ack_filter; /* enum cake_ack */
	uint32_t memlimit; /* bytes */
	uint32_t flow_mode; /* enum cake_flow */
	uint32_t atm; /* enum cake_atm */
	uint32_t fwmark; /* mask of skb->mark that picks the tin; 0 = off */
	bool nat, wash, ingress, raw, split_gso, autorate;
};

#define CAKE_MAX_TINS 8

struct cake_tin_stats {
	uint64_t threshold_rate; /* bytes/s */
	uint64_t sent_bytes, sent_packets;
	uint64_t dropped_bytes, dropped_packets;
	uint64_t ecn_marked_packets, acks_dropped_packets;
	uint32_t backlog_bytes, backlog_packets;
	uint32_t target_us, interval_us;
	uint32_t peak_delay_us, avg_delay_us, base_delay_us;
	uint32_t sparse_flows, bulk_flows, unresponsive_flows;
	uint32_t way_indirect_hits, way_misses, way_collisions;
	uint32_t max_skblen, flow_quantum;
};

struct cake_stats {
	/* From TCA_STATS2's basic and queue blocks. */
	uint64_t bytes, packets;
	uint32_t drops, overlimits, requeues, backlog_bytes, backlog_packets;
	/* From TCA_STATS_APP (cake's own). */
	bool has_app;
	uint64_t capacity_estimate; /* bytes/s */
	uint32_t memory_limit, memory_used;
	uint32_t avg_netoff, min_netlen, max_netlen, min_adjlen, max_adjlen;
	unsigned int tin_count;
	struct cake_tin_stats tins[CAKE_MAX_TINS];
};

#endif
