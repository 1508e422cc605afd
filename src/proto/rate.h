/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rate channel: a WireGuard client asks the server's `wgshape daemon`,
 * through the tunnel, to shape the client's download at a rate. Requests go
 * by UDP to RATE_PORT on the server's tunnel address; the daemon answers
 * only datagrams that came in on a WireGuard interface, to one of its
 * addresses, from a source inside exactly one peer's AllowedIPs: that peer
 * asks for itself (src/channel/ has the server and the client).
 *
 * A request and its answer have one fixed layout, RATE_MSG_SIZE bytes, all
 * numbers big-endian:
 *
 *   offset  size  field
 *        0     4  magic     0x77677372 ("wgsr")
 *        4     1  version   RATE_VERSION
 *        5     1  type      0 a request, 1 an answer
 *        6     1  status    answer: enum rate_status; request: 0
 *        7     1  reserved  zero when sent, ignored when read
 *        8     4  token     the client's random number; its answer carries it back
 *       12     4  lease     answer: seconds the rate holds unless asked again;
 *                           request: 0
 *       16     8  rate      bytes/s; request: the rate wanted, 0 for the server's
 *                           own (configured) rate; answer: what applies now
 *                           (0: the peer has no rate of its own)
 *       24     8  fallback  answer: the configured rate a lapsed lease returns
 *                           to (0: none, the interface's default class);
 *                           request: 0
 *
 * A later version keeps this layout and may add fields after it. A server
 * answers a request of a newer version with RATE_UNSUPPORTED and its own
 * version. An answer is never longer than its request: a request shorter
 * than RATE_MSG_SIZE is not answered, and the answer is RATE_MSG_SIZE bytes.
 * A server never answers an answer.
 */
#ifndef WGSHAPE_PROTO_RATE_H
#define WGSHAPE_PROTO_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RATE_PORT 4781 /* UDP, on the server's tunnel addresses */
#define RATE_MAGIC 0x77677372u
#define RATE_VERSION 1
#define RATE_MSG_SIZE 32
/* the largest request read: room for a later version's fields, no payload */
#define RATE_MSG_MAX 128

enum rate_type {
	RATE_REQUEST = 0,
	RATE_ANSWER = 1,
};

enum rate_status {
	RATE_NONE = 0, /* a request's */
	RATE_APPLIED = 1, /* the rate asked for applies */
	RATE_CLAMPED = 2, /* outside the server's client-download-min/-max: rate is the bound */
	RATE_DEFAULT = 3, /* asked for the server's rate: the lease is gone, rate = fallback */
	RATE_REFUSED = 4, /* this peer may not set its rate (no client-download = yes) */
	RATE_FAILED = 5, /* allowed, but the server could not apply it (its log says why) */
	RATE_UNSUPPORTED = 6, /* the request's version is newer than the server's */
	RATE_STATUS_MAX,
};

struct rate_msg {
	uint8_t version; /* parse: what the datagram said; encode writes RATE_VERSION */
	enum rate_type type;
	enum rate_status status;
	uint32_t token;
	uint32_t lease; /* seconds */
	uint64_t rate, fallback; /* bytes/s */
};

/*
 * m as RATE_MSG_SIZE bytes at the start of buf (version RATE_VERSION unless
 * m->version is set lower and non-zero). -ENOBUFS when size is smaller;
 * -EINVAL for a type or status not in the enums, a request with a status.
 */
int rate_msg_encode(const struct rate_msg *m, void *buf, size_t size);

/*
 * The message at the start of a datagram of len bytes; bytes after
 * RATE_MSG_SIZE are ignored. -EBADMSG when len is shorter, the magic is not
 * ours, the type is neither (in any version), or the status is not in the
 * enum (or set in a request). -EPROTONOSUPPORT for a version newer than
 * RATE_VERSION: then only out's version, type and token are written, the
 * rest left as it was (enough to answer RATE_UNSUPPORTED). Version 0 is
 * -EBADMSG. *out is not written otherwise.
 */
int rate_msg_parse(const void *buf, size_t len, struct rate_msg *out);

/*
 * May the server on own_port take a datagram of len bytes from from_port at
 * all? Not one shorter than a message or longer than RATE_MSG_MAX, nor one
 * from a well-known port (below 1024: a service) or from own_port (another
 * daemon's answer socket): a guard against loops with anything.
 */
bool rate_accept(size_t len, uint16_t from_port, uint16_t own_port);

/* "applied", "clamped", ... ("?" for a value out of the enum). */
const char *rate_status_str(enum rate_status s);

#endif
