/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shaping as Prometheus metrics: the text exposition format (version 0.0.4)
 * of what `show` reads back, for `wgshape metrics` and for the daemon's
 * node_exporter textfile (metrics-file = in [daemon]).
 *
 * The families are named wgshape_*, in base units (bytes, seconds, bytes a
 * second), counters ending in _total. Labels: interface; direction, egress
 * or ingress (the IFB's cake), and for an adapted direction also download
 * (the client's download, shaped at the server); peer, "" for a cake on the
 * whole interface, else the [peer] name or, for a class set by hand, the
 * peer's public key; tin, cake's name for it (Bulk, Best Effort, Voice...).
 *   per cake (interface, direction, peer):
 *     wgshape_rate_bytes_per_second            the shaper's rate (a peer's
 *                                              class: its ceil); 0 unlimited
 *     wgshape_shaper_info                      1, with source (what set it)
 *                                              and device (IFACE or its IFB)
 *     wgshape_capacity_estimate_bytes_per_second, wgshape_memory_used_bytes
 *   per tin (interface, direction, peer, tin):
 *     wgshape_sent_bytes_total, wgshape_sent_packets_total,
 *     wgshape_dropped_bytes_total, wgshape_dropped_packets_total,
 *     wgshape_ecn_marked_packets_total, wgshape_ack_dropped_packets_total,
 *     wgshape_backlog_bytes, wgshape_backlog_packets,
 *     wgshape_peak_delay_seconds, wgshape_average_delay_seconds,
 *     wgshape_base_delay_seconds, wgshape_target_delay_seconds,
 *     wgshape_tin_rate_bytes_per_second, wgshape_sparse_flows,
 *     wgshape_bulk_flows, wgshape_unresponsive_flows
 *   per adapted direction (interface, direction):
 *     wgshape_adapt_rate_bytes_per_second, wgshape_adapt_base_bytes_per_second,
 *     wgshape_adapt_min_bytes_per_second, wgshape_adapt_max_bytes_per_second,
 *     wgshape_adapt_delay_seconds (added over the baseline),
 *     wgshape_adapt_far_end_lost (1: the server stopped answering)
 *   per client download request (interface, server, status, source):
 *     wgshape_client_download_bytes_per_second (what the server applied)
 *   per interface wgshape shapes (interface):
 *     wgshape_interface_present (0: gone since it was shaped)
 *   once:
 *     wgshape_metrics_updated_timestamp_seconds (when read: a metrics-file
 *                                              not written again shows its age)
 * A label value that is not valid UTF-8 (an interface name is any bytes)
 * has each stray byte as the text \xNN.
 */
#ifndef WGSHAPE_DAEMON_METRICS_H
#define WGSHAPE_DAEMON_METRICS_H

#include <glib.h>

#include "channel/client.h"
#include "daemon/adapter-state.h"
#include "netlink/kernel.h"
#include "shape/shape.h"

/* The families being filled; the exposition comes out in one piece at the end. */
struct metrics;

struct metrics *metrics_new(void);
/* An interface as shape_view() read it: each cake, its tins, the peers' classes. */
void metrics_add_view(struct metrics *m, const struct shape_view *v);
/* An interface wgshape shaped that is gone. */
void metrics_add_gone(struct metrics *m, const char *ifname);
/* The adapter's state of ifname (daemon/adapter-state.h). */
void metrics_add_adapt(struct metrics *m, const char *ifname, const struct adapter_state *st);
/* What this host asked its server for (the rate channel's record). */
void metrics_add_client(struct metrics *m, const char *ifname, const struct rate_record *r);
/* When the figures were read, now in seconds since the epoch (metrics_collect adds it). */
void metrics_add_time(struct metrics *m, double now);
/* Append the exposition to out, and free m. */
void metrics_finish(struct metrics *m, GString *out);

/*
 * The exposition of each of names (NULL-terminated; the interfaces
 * statedir knows when NULL), as show reads them. 0, or -errno when an
 * interface could not be read (the others are in out all the same).
 */
int metrics_collect(struct netlink *nl, const char *statedir, char **names, GString *out);

#endif
