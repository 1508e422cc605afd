/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The protocol between `wgshape tune` (its instruments in measure/) and
 * `wgshape serve` (serve/): HTTP/1.1 load and a UDP echo, both on one port
 * number. Everything both sides must agree on is here; serve.h says what the
 * server caps.
 *
 *   GET /download[?seconds=S]  200 application/octet-stream: zero bytes, chunked,
 *                              until the client closes or S (at most the cap) ran out
 *   POST /upload[?seconds=S]   reads and discards the body (Content-Length or
 *                              chunked); 200 application/json {"bytes":N,"seconds":S}
 *                              when it ends; one still coming after S (at most the
 *                              cap) is cut: the connection is closed, no answer
 *   GET /                      200 text/plain "wgshape serve VERSION\n"
 *   anything else              404; a load stream past the cap 503; bad seconds 400
 *   UDP                        a probe request of at most TUNE_UDP_MAX bytes is
 *                              answered to its sender (tune_echo_accept() and
 *                              tune_probe_answer() say which, and how)
 *
 * The probe is the datagram below. serve answers a request with the same bytes,
 * type set to answer (and, for a timed probe, its own times written in), and
 * never answers an answer nor anything else: a
 * datagram forged to come from another echo (a serve, or any) cannot start an
 * exchange between the two. tune sends requests and takes only answers over
 * UDP; an ICMP echo probe carries a request after its ICMP header, which the
 * host's ICMP echo reply carries back unchanged. All numbers big-endian:
 *
 *   offset  size  field
 *        0     4  magic     0x77677370 ("wgsp")
 *        4     4  token     random per run: echoes of another run or client are ignored
 *        8     4  seq       the probe's number in its run, from 0
 *       12     1  version   TUNE_PROBE_VERSION; 0 from a sender older than the field
 *                           (it sent bytes 12-15 as zero: a request)
 *       13     1  type      0 a request, 1 an answer
 *       14     1  flags     TUNE_PROBE_TIMED, or zero; other bits zero when
 *                           sent, ignored when read
 *       15     1  reserved  zero when sent, ignored when read
 *       16     8  sent_ns   CLOCK_REALTIME at sending, for a reader of a capture;
 *                           the sender does not trust it back
 *   a timed probe (TUNE_PROBE_TIMED, and at least TUNE_PROBE_TIMED_SIZE bytes):
 *       24     8  rx_ns     answer: the answerer's CLOCK_MONOTONIC when the
 *                           request came; request: zero
 *       32     8  tx_ns     answer: ... when the answer left; request: zero
 *
 * A timed probe's answer gives each direction's one-way delay up to the two
 * clocks' offset, which cancels in its changes (continuous adaptation,
 * docs/adaptation.md). An answerer from before the flag leaves both zero (it
 * answers with the same bytes), and so does an ICMP echo: no times, only the
 * round trip. A later version keeps this layout and may add fields after it;
 * a reader refuses a version newer than its own.
 */
#ifndef WGSHAPE_PROTO_TUNE_H
#define WGSHAPE_PROTO_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TUNE_PORT 4780 /* HTTP (TCP) and the echo (UDP) */

#define TUNE_PATH_ROOT "/"
#define TUNE_PATH_DOWNLOAD "/download"
#define TUNE_PATH_UPLOAD "/upload"
#define TUNE_ARG_SECONDS "seconds" /* a positive decimal number of seconds */

/* Probes, not payload: the echo must not be worth using as a flood source. */
#define TUNE_UDP_MAX 64

#define TUNE_PROBE_MAGIC 0x77677370u
#define TUNE_PROBE_VERSION 1
#define TUNE_PROBE_SIZE 24
#define TUNE_PROBE_TIMED 0x01 /* flags: the answerer writes its times */
#define TUNE_PROBE_TIMED_SIZE 40

enum tune_probe_type {
	TUNE_PROBE_REQUEST = 0,
	TUNE_PROBE_ANSWER = 1,
};

struct tune_probe {
	uint32_t token;
	uint32_t seq;
	enum tune_probe_type type;
	uint64_t sent_ns;
	bool timed; /* TUNE_PROBE_TIMED, in a datagram long enough for the times */
	uint64_t rx_ns, tx_ns; /* a timed answer's; 0: not stamped */
};

/*
 * p as TUNE_PROBE_SIZE bytes at the start of buf (TUNE_PROBE_TIMED_SIZE for a
 * timed one), version TUNE_PROBE_VERSION. -ENOBUFS when size is smaller,
 * -EINVAL for a type not in the enum.
 */
int tune_probe_encode(const struct tune_probe *p, void *buf, size_t size);

/*
 * The probe at the start of a datagram of len bytes. Bytes after it are
 * ignored (a sender may pad). -EBADMSG when len is shorter than a probe, the
 * magic is not ours or the type is neither; -EPROTONOSUPPORT for a version
 * newer than TUNE_PROBE_VERSION. *out is written only on success.
 */
int tune_probe_parse(const void *buf, size_t len, struct tune_probe *out);

/*
 * Turn the probe request of len bytes in buf into its answer, in place: the
 * type byte changes, and a timed probe's times become rx_ns and tx_ns (the
 * answerer's tune_stamp_ns()); nothing else (padding and version stay, so an
 * answer is exactly as long as its request). tune_probe_parse()'s errors, or
 * -EBADMSG when it is not a request; buf is unchanged then.
 */
int tune_probe_answer(void *buf, size_t len, uint64_t rx_ns, uint64_t tx_ns);

/*
 * The clock an answerer stamps a timed probe with: CLOCK_MONOTONIC plus an
 * offset drawn at random once a process (tune_stamp_offset_ns(), between
 * 2^40 and 2^50 ns: 18 minutes to 13 days), so that an answer does not tell
 * the answerer's uptime. Nothing is lost: a one-way delay carries the two
 * clocks' offset anyway (only its changes count), and the round trip takes
 * tx - rx. A restart changes the offset, as a reboot would.
 */
uint64_t tune_stamp_ns(void);
uint64_t tune_stamp_offset_ns(void);

/*
 * May the echo on own_port answer a datagram of len bytes from from_port (if
 * it is a request: tune_probe_answer())? Not one larger than TUNE_UDP_MAX, nor
 * one from a well-known port (a service: echo, chargen, DNS) or from own_port
 * (another echo): a second guard against loops with echoes that do not speak
 * this protocol, and the answer never goes to a service.
 */
bool tune_echo_accept(size_t len, uint16_t from_port, uint16_t own_port);

/*
 * The URL of serve's load at host (a name or an address; an IPv6 literal is
 * put in brackets) and port: .../upload when upload, else .../download, with
 * seconds=S unless seconds is 0. -ENOBUFS when buf is too small.
 */
int tune_url(char *buf, size_t size, const char *host, uint16_t port, bool upload,
	     unsigned int seconds);

#endif
