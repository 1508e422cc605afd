/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The adaptation prober (adapt/probe.h) on loopback: against a real `serve`
 * (its UDP echo stamps timed probes), and against a far end this test plays
 * itself, to send what no real one sends: answers of another token, of a
 * probe never sent or answered twice, plain answers with no times, times
 * that go backwards. And the arithmetic of the four times, without a socket.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <glib.h>

#include "adapt/probe.h"
#include "adapt/tcp-rtt.h"
#include "proto/tune.h"
#include "serve/serve.h"

static void wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	g_assert_cmpint(poll(&p, 1, 10000), ==, 1);
}

/* The next answer the prober takes, skipping what it skips. */
static void read_one(struct adapt_probe *p, struct adapt_owd *o)
{
	int r;

	do {
		wait_readable(adapt_probe_fd(p));
		r = adapt_probe_read(p, o);
		g_assert_cmpint(r, >=, 0);
	} while (r == 0);
}

/* The four times, by hand: offset in, offset out. */
static void test_owd_compute(void)
{
	/* the far end's clock is 1000 s ahead; 3 ms there, 2 ms held, 5 ms back */
	const uint64_t off = UINT64_C(1000000000000);
	struct adapt_owd o = {
		.sent_ns = 10000000,
		.rx_ns = off + 13000000,
		.tx_ns = off + 15000000,
		.back_ns = 20000000,
	};

	adapt_owd_compute(&o);
	g_assert_true(o.stamped);
	g_assert_cmpint(o.rtt_ns, ==, 8000000);
	g_assert_cmpint(o.up_ns, ==, (int64_t)off + 3000000);
	g_assert_cmpint(o.down_ns, ==, 5000000 - (int64_t)off);
	/* the changes of up and down are what the delays did */
	g_assert_cmpint(o.up_ns + o.down_ns, ==, o.rtt_ns);

	/* no times: the round trip only */
	o = (struct adapt_owd){ .sent_ns = 100, .back_ns = 350 };
	adapt_owd_compute(&o);
	g_assert_false(o.stamped);
	g_assert_cmpint(o.rtt_ns, ==, 250);
	g_assert_cmpint(o.up_ns, ==, 0);
	g_assert_cmpint(o.down_ns, ==, 0);

	/* times that go backwards are no times */
	o = (struct adapt_owd){ .sent_ns = 100, .back_ns = 350, .rx_ns = 9, .tx_ns = 8 };
	adapt_owd_compute(&o);
	g_assert_false(o.stamped);
	g_assert_cmpint(o.rtt_ns, ==, 250);
}

/*
 * Issue 28: a far end whose tx - rx exceeds 2^63 overflowed a signed
 * subtraction (UBSan) and gave garbage delays. A far end that says it held
 * a probe longer than the whole round trip took gave no times; the round
 * trip is ours alone. A far end's clock near its wrap is only an offset.
 */
static void test_owd_far_end_garbage(void)
{
	static const struct {
		const char *what;
		uint64_t sent, rx, tx, back;
		bool stamped;
		int64_t rtt, up, down;
	} cases[] = {
		{ "held 2^64 - 2 ns", 100, 1, UINT64_MAX, 350, false, 250, 0, 0 },
		{ "held 2^63 + 1 ns", 100, 5, (UINT64_C(1) << 63) + 6, 350, false, 250, 0, 0 },
		{ "held longer than the round trip", 100, 1000, 1251, 350, false, 250, 0, 0 },
		{ "held as long as the round trip", 100, 1000, 1250, 350, true, 0, 900, -900 },
		/* the far end's clock 5 ns before its wrap: held 2 ns; up + down = rtt */
		{ "a far clock at its wrap", 100, UINT64_MAX - 5, UINT64_MAX - 3, 350, true, 248,
		  -106, 354 },
		/* the far end's times at the very top and bottom of a signed delay */
		{ "an offset of 2^63", 0, UINT64_C(1) << 63, (UINT64_C(1) << 63) + 10, 100, true,
		  90, INT64_MIN, (int64_t)(UINT64_C(90) - (UINT64_C(1) << 63)) },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct adapt_owd o = {
			.sent_ns = cases[i].sent,
			.rx_ns = cases[i].rx,
			.tx_ns = cases[i].tx,
			.back_ns = cases[i].back,
		};

		adapt_owd_compute(&o);
		if (o.stamped != cases[i].stamped || o.rtt_ns != cases[i].rtt ||
		    o.up_ns != cases[i].up || o.down_ns != cases[i].down)
			g_test_fail_printf("%s: stamped %d rtt %" G_GINT64_FORMAT " up %" G_GINT64_FORMAT
					   " down %" G_GINT64_FORMAT, cases[i].what, o.stamped,
					   o.rtt_ns, o.up_ns, o.down_ns);
	}
}

static void test_open_bad(void)
{
	struct adapt_probe *p = NULL;

	g_assert_cmpint(adapt_probe_open(NULL, "not-an-address", 4781, &p), ==, -EINVAL);
	g_assert_cmpint(adapt_probe_open(NULL, "10.0.0.1", 0, &p), ==, -EINVAL);
	g_assert_cmpint(adapt_probe_open(NULL, "10.0.0.1", 65536, &p), ==, -EINVAL);
	g_assert_null(p);
}

/* Against serve on 127.0.0.1: every probe answered, stamped, in order. */
static void test_serve(void)
{
	struct serve_addr addr;
	struct server *srv = NULL;
	struct adapt_probe *p = NULL;
	struct adapt_owd o;

	g_assert_cmpint(serve_addr_parse("127.0.0.1", &addr), ==, 0);
	g_assert_cmpint(serve_start(&(struct serve_opts){ .addrs = &addr, .n_addrs = 1 }, &srv), ==,
			0);
	g_assert_cmpint(adapt_probe_open(NULL, "127.0.0.1", serve_port(srv), &p), ==, 0);
	for (uint32_t i = 0; i < 10; i++) {
		g_assert_cmpint(adapt_probe_send(p), ==, 0);
		read_one(p, &o);
		g_assert_cmpuint(o.seq, ==, i);
		g_assert_true(o.stamped);
		/*
		 * one host, one clock, the answerer's offset (tune_stamp_ns())
		 * aside: each way takes no less than nothing
		 */
		g_assert_cmpint(o.up_ns, >=, (int64_t)tune_stamp_offset_ns());
		g_assert_cmpint(o.down_ns + (int64_t)tune_stamp_offset_ns(), >=, 0);
		g_assert_cmpint(o.rtt_ns, >=, 0);
		g_assert_cmpint(o.rtt_ns, <, 5000000000);
		g_assert_cmpint(adapt_probe_read(p, &o), ==, 0);
	}
	adapt_probe_free(p);
	serve_stop(srv);
}

/* A far end of the test's own on an IPv4 loopback port. */
static int far_end(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	g_assert_cmpint(fd, >=, 0);
	g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
	g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &len), ==, 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* The next request at the far end: its bytes, and where it came from. */
static size_t take_request(int fd, uint8_t *buf, struct sockaddr_in *from)
{
	socklen_t len = sizeof(*from);
	ssize_t n;

	wait_readable(fd);
	n = recvfrom(fd, buf, TUNE_UDP_MAX, 0, (struct sockaddr *)from, &len);
	g_assert_cmpint(n, ==, TUNE_PROBE_TIMED_SIZE);
	return (size_t)n;
}

static void send_to(int fd, const void *buf, size_t len, const struct sockaddr_in *to)
{
	g_assert_cmpint(sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)), ==,
			(ssize_t)len);
}

static void test_far_end(void)
{
	uint8_t req[TUNE_UDP_MAX], copy[TUNE_UDP_MAX];
	struct sockaddr_in from;
	struct adapt_probe *p = NULL;
	struct adapt_owd o;
	struct tune_probe t;
	uint16_t port;
	int fd = far_end(&port);
	size_t n;

	g_assert_cmpint(adapt_probe_open(NULL, "127.0.0.1", port, &p), ==, 0);
	g_assert_cmpint(adapt_probe_send(p), ==, 0);
	n = take_request(fd, req, &from);
	g_assert_cmpint(tune_probe_parse(req, n, &t), ==, 0);
	g_assert_true(t.timed && t.type == TUNE_PROBE_REQUEST && t.seq == 0 && !t.rx_ns);

	/* another token's answer, a request sent back, a plain answer of another seq: skipped */
	memcpy(copy, req, n);
	copy[4] ^= 0xff;
	g_assert_cmpint(tune_probe_answer(copy, n, 7, 8), ==, 0);
	send_to(fd, copy, n, &from);
	send_to(fd, req, n, &from);
	memcpy(copy, req, n);
	copy[11] = 7; /* seq 7: never sent */
	g_assert_cmpint(tune_probe_answer(copy, n, 5, 6), ==, 0);
	send_to(fd, copy, n, &from);
	/* then the answer, twice: taken once */
	memcpy(copy, req, n);
	g_assert_cmpint(tune_probe_answer(copy, n, 5, 6), ==, 0);
	send_to(fd, copy, n, &from);
	send_to(fd, copy, n, &from);
	read_one(p, &o);
	g_assert_cmpuint(o.seq, ==, 0);
	g_assert_true(o.stamped);
	g_assert_cmpuint(o.rx_ns, ==, 5);
	g_assert_cmpuint(o.tx_ns, ==, 6);

	/*
	 * An answerer from before the flag: the same bytes back, type set: no
	 * times. Its answer comes after the duplicate above on the same socket,
	 * so taking it shows the duplicate was skipped.
	 */
	g_assert_cmpint(adapt_probe_send(p), ==, 0);
	n = take_request(fd, req, &from);
	req[13] = TUNE_PROBE_ANSWER;
	send_to(fd, req, n, &from);
	read_one(p, &o);
	g_assert_cmpuint(o.seq, ==, 1);
	g_assert_false(o.stamped);
	g_assert_cmpint(o.rtt_ns, >=, 0);

	/* past the kept window: an old seq is no longer matched, the newest is */
	for (unsigned int i = 0; i < ADAPT_PROBE_KEPT + 1; i++) {
		g_assert_cmpint(adapt_probe_send(p), ==, 0);
		n = take_request(fd, i == 0 ? copy : req, &from);
	}
	g_assert_cmpint(tune_probe_answer(copy, n, 5, 6), ==, 0);
	send_to(fd, copy, n, &from);
	g_assert_cmpint(tune_probe_answer(req, n, 5, 6), ==, 0);
	send_to(fd, req, n, &from);
	read_one(p, &o);
	g_assert_cmpuint(o.seq, ==, 2 + ADAPT_PROBE_KEPT);

	adapt_probe_free(p);
	close(fd);
}

/* The passive round trip of a tick: what the daemon feeds the controller. */
static void test_tcp_rtt_pick(void)
{
	/* none timed: none */
	g_assert_cmpint(adapt_tcp_rtt_pick(UINT32_MAX, UINT32_MAX, 0, 1500, 125000), ==, -1);
	/* an answer to an acknowledgement: as it is */
	g_assert_cmpint(adapt_tcp_rtt_pick(UINT32_MAX, 43000, 30000, 1500, 125000), ==, 43000);
	/*
	 * an answer to data at 1 Mbit/s (125,000 bytes/s), 3,500 bytes queued in
	 * the class: 5,000 bytes' wait (40 ms) off 100 ms
	 */
	g_assert_cmpint(adapt_tcp_rtt_pick(100000, UINT32_MAX, 3500, 1500, 125000), ==, 60000);
	/* ... no more than half of it, when the class says more than the line took */
	g_assert_cmpint(adapt_tcp_rtt_pick(50000, UINT32_MAX, 60000, 1500, 125000), ==, 25000);
	/* the least of both */
	g_assert_cmpint(adapt_tcp_rtt_pick(100000, 50000, 3500, 1500, 125000), ==, 50000);
	g_assert_cmpint(adapt_tcp_rtt_pick(100000, 70000, 3500, 1500, 125000), ==, 60000);
	/* a rate of 0 (unknown): nothing taken off */
	g_assert_cmpint(adapt_tcp_rtt_pick(100000, UINT32_MAX, 3500, 1500, 0), ==, 100000);
}

/* Each direction's delay from a round trip and the upload's own queue. */
static void test_tcp_rtt_split(void)
{
	/* the upload's queue unknown, or no least round trip yet: the round trip for both */
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 40000, -1, true), ==, 90000);
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 40000, -1, false), ==, 90000);
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 0, 30000, true), ==, 90000);
	/* 90 ms round trip, 40 ms least, 30 ms of it in the upload: 20 ms in the download */
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 40000, 30000, true), ==, 70000);
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 40000, 30000, false), ==, 60000);
	/* the upload's queue all of it (a mean over a tick: more than the least's): the least */
	g_assert_cmpint(adapt_tcp_rtt_split(60000, 40000, 30000, false), ==, 40000);
	/* no upload queue: the download has the round trip's whole rise */
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 40000, 0, false), ==, 90000);
	g_assert_cmpint(adapt_tcp_rtt_split(90000, 40000, 0, true), ==, 40000);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/adapt/tcp-rtt/pick", test_tcp_rtt_pick);
	g_test_add_func("/adapt/tcp-rtt/split", test_tcp_rtt_split);
	g_test_add_func("/adapt/probe/owd", test_owd_compute);
	g_test_add_func("/adapt/probe/owd-far-end-garbage", test_owd_far_end_garbage);
	g_test_add_func("/adapt/probe/open-bad", test_open_bad);
	g_test_add_func("/adapt/probe/serve", test_serve);
	g_test_add_func("/adapt/probe/far-end", test_far_end);
	return g_test_run();
}
