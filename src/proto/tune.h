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
 *   UDP                        a datagram of at most TUNE_UDP_MAX bytes goes back
 *                              verbatim to its sender (tune_echo_accept() says which)
 *
 * The echo does not read what it returns, so any UDP echo serves; tune's own
 * probe is the datagram below, and an ICMP echo probe carries the same bytes
 * after its ICMP header. All numbers big-endian:
 *
 *   offset  size  field
 *        0     4  magic     0x77677370 ("wgsp")
 *        4     4  token     random per run: echoes of another run or client are ignored
 *        8     4  seq       the probe's number in its run, from 0
 *       12     4  reserved  zero when sent, ignored when read
 *       16     8  sent_ns   CLOCK_REALTIME at sending, for a reader of a capture;
 *                           the sender does not trust it back
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
#define TUNE_PROBE_SIZE 24

struct tune_probe {
	uint32_t token;
	uint32_t seq;
	uint64_t sent_ns;
};

/* p as TUNE_PROBE_SIZE bytes at the start of buf. -ENOBUFS when size is smaller. */
int tune_probe_encode(const struct tune_probe *p, void *buf, size_t size);

/*
 * The probe at the start of an echo of len bytes. Bytes after it are ignored
 * (an echo may pad). -EBADMSG when len is shorter than a probe or the magic
 * is not ours; *out is written only on success.
 */
int tune_probe_parse(const void *buf, size_t len, struct tune_probe *out);

/*
 * Does the echo on own_port answer a datagram of len bytes from from_port?
 * Not one larger than TUNE_UDP_MAX, nor one from a well-known port (a service:
 * echo, chargen, DNS) or from own_port (another echo): answering those could
 * start an endless loop.
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
