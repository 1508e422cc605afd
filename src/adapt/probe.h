/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Timed probes for continuous adaptation: one UDP socket, bound to the
 * tunnel and connected to the far end (the server daemon's rate port, or
 * `wgshape serve`), that sends timed probes (proto/tune.h) and turns their
 * answers into each direction's one-way delay. The far end's clock is not
 * ours: a one-way delay here carries the two clocks' offset, which cancels
 * in its changes (adapt/controller.h wants only those).
 */
#ifndef WGSHAPE_ADAPT_PROBE_H
#define WGSHAPE_ADAPT_PROBE_H

#include <stdbool.h>
#include <stdint.h>

/* One probe's times and what they say. */
struct adapt_owd {
	uint32_t seq;
	uint64_t sent_ns, back_ns; /* ours, CLOCK_MONOTONIC: sent, answer read */
	uint64_t rx_ns, tx_ns; /* the far end's: request came, answer left; 0: not stamped */
	bool stamped; /* the far end gave its times (else only rtt_ns is known) */
	int64_t up_ns; /* rx - sent: the way there, the clocks' offset included */
	int64_t down_ns; /* back - tx: the way back, less the offset */
	int64_t rtt_ns; /* back - sent, less the far end's time between rx and tx */
};

/* Fill in stamped, up_ns, down_ns and rtt_ns from the four times. Pure. */
void adapt_owd_compute(struct adapt_owd *o);

struct adapt_probe;

/*
 * A prober toward addr (a numeric IPv4 or IPv6 address) and port, its
 * socket bound to ifname (NULL: none). -EINVAL for an address that is not
 * one; -errno.
 */
int adapt_probe_open(const char *ifname, const char *addr, unsigned int port,
		     struct adapt_probe **out);
void adapt_probe_free(struct adapt_probe *p);
/* The socket, to watch for input. */
int adapt_probe_fd(const struct adapt_probe *p);
/* Send the next timed probe. 0, or -errno (the socket's: the tunnel down...). */
int adapt_probe_send(struct adapt_probe *p);
/*
 * Read one answer: 1 with *out; 0 when none waits; -errno. Datagrams that
 * are not an answer to a probe of this prober still remembered (its token,
 * one of the last ADAPT_PROBE_KEPT sent, not answered yet) are read and
 * skipped.
 */
#define ADAPT_PROBE_KEPT 64
int adapt_probe_read(struct adapt_probe *p, struct adapt_owd *out);

#endif
