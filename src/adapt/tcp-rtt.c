// SPDX-License-Identifier: GPL-2.0-or-later
/* The loader of tcp-rtt.bpf.c, and its map of watched addresses (tcp-rtt.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>
#include <sys/socket.h>

#include "build-config.h"
#include "adapt/tcp-rtt.h"

int64_t adapt_tcp_rtt_pick(uint32_t data_us, uint32_t ack_us, uint64_t queued,
			   uint32_t full_packet, uint64_t rate)
{
	int64_t best = -1;

	if (data_us != UINT32_MAX) {
		int64_t waited = rate ? (int64_t)((double)(queued + full_packet) * 1e6 / (double)rate)
				      : 0;

		best = data_us - waited > (int64_t)data_us / 2 ? data_us - waited
								 : (int64_t)data_us / 2;
	}
	if (ack_us != UINT32_MAX && (best < 0 || (int64_t)ack_us < best))
		best = ack_us;
	return best;
}

int64_t adapt_tcp_rtt_split(int64_t rtt_us, int64_t least_us, int64_t up_us, bool upload)
{
	if (up_us < 0 || least_us <= 0)
		return rtt_us;
	if (upload)
		return least_us + up_us;
	return rtt_us - up_us > least_us ? rtt_us - up_us : least_us;
}

#ifdef WGSHAPE_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tcp-rtt-maps.h"
#include "tcp-rtt.skel.h"

struct adapt_tcp_rtt {
	struct tcp_rtt *skel;
	int peers_fd;
};

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0; /* the daemon says what failed, in one line */
}

int adapt_tcp_rtt_open(struct adapt_tcp_rtt **out)
{
	struct adapt_tcp_rtt *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	libbpf_set_print(quiet);
	t->skel = tcp_rtt__open_and_load();
	if (!t->skel) {
		r = -errno;
		free(t);
		return r ? r : -EINVAL;
	}
	t->peers_fd = bpf_map__fd(t->skel->maps.peers);
	*out = t;
	return 0;
}

void adapt_tcp_rtt_free(struct adapt_tcp_rtt *t)
{
	if (!t)
		return;
	tcp_rtt__destroy(t->skel);
	free(t);
}

int adapt_tcp_rtt_prog_fd(const struct adapt_tcp_rtt *t, bool egress)
{
	return bpf_program__fd(egress ? t->skel->progs.wgshape_rtt_out :
					t->skel->progs.wgshape_rtt_in);
}

static void key_of(struct tcp_rtt_addr *k, int family, const uint8_t *addr)
{
	memset(k, 0, sizeof(*k));
	if (family == AF_INET) {
		k->a[10] = 0xff;
		k->a[11] = 0xff;
		memcpy(&k->a[12], addr, 4);
	} else {
		memcpy(k->a, addr, 16);
	}
}

int adapt_tcp_rtt_watch(struct adapt_tcp_rtt *t, int family, const uint8_t *addr, bool armed)
{
	struct tcp_rtt_peer v = { 0 };
	struct tcp_rtt_addr k;

	key_of(&k, family, addr);
	if (bpf_map_lookup_elem(t->peers_fd, &k, &v) < 0)
		memset(&v, 0, sizeof(v));
	v.armed = armed;
	v.min_us[TCP_RTT_DATA] = v.min_us[TCP_RTT_ACK] = UINT32_MAX;
	v.up_sum_us = 0;
	v.up_n = 0;
	return bpf_map_update_elem(t->peers_fd, &k, &v, BPF_ANY) < 0 ? -errno : 0;
}

void adapt_tcp_rtt_unwatch(struct adapt_tcp_rtt *t, int family, const uint8_t *addr)
{
	struct tcp_rtt_addr k;

	key_of(&k, family, addr);
	bpf_map_delete_elem(t->peers_fd, &k);
}

int adapt_tcp_rtt_take(struct adapt_tcp_rtt *t, int family, const uint8_t *addr,
		       struct adapt_tcp_rtt_take *out)
{
	struct tcp_rtt_peer v;
	struct tcp_rtt_addr k;

	key_of(&k, family, addr);
	if (bpf_map_lookup_elem(t->peers_fd, &k, &v) < 0)
		return -errno;
	/* none since the last take: the window's least is still ~0, its sum empty */
	if (v.min_us[TCP_RTT_DATA] == UINT32_MAX && v.min_us[TCP_RTT_ACK] == UINT32_MAX &&
	    !v.up_n)
		return 0;
	out->data_us = v.min_us[TCP_RTT_DATA];
	out->ack_us = v.min_us[TCP_RTT_ACK];
	out->up_us = v.up_n ? (uint32_t)MIN(v.up_sum_us / v.up_n, UINT32_MAX - 1) : UINT32_MAX;
	/* the next window starts afresh (a sample the program adds meanwhile is lost) */
	v.min_us[TCP_RTT_DATA] = v.min_us[TCP_RTT_ACK] = UINT32_MAX;
	v.up_sum_us = 0;
	v.up_n = 0;
	if (bpf_map_update_elem(t->peers_fd, &k, &v, BPF_EXIST) < 0)
		return -errno;
	return 1;
}

#else /* !WGSHAPE_HAVE_BPF */

int adapt_tcp_rtt_open(struct adapt_tcp_rtt **out)
{
	*out = NULL;
	return -EOPNOTSUPP;
}

void adapt_tcp_rtt_free(struct adapt_tcp_rtt *t)
{
}

int adapt_tcp_rtt_prog_fd(const struct adapt_tcp_rtt *t, bool egress)
{
	return -1;
}

int adapt_tcp_rtt_watch(struct adapt_tcp_rtt *t, int family, const uint8_t *addr, bool armed)
{
	return -EOPNOTSUPP;
}

void adapt_tcp_rtt_unwatch(struct adapt_tcp_rtt *t, int family, const uint8_t *addr)
{
}

int adapt_tcp_rtt_take(struct adapt_tcp_rtt *t, int family, const uint8_t *addr,
		       struct adapt_tcp_rtt_take *out)
{
	return -EOPNOTSUPP;
}

#endif
