/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target for the state directory's files: a state file (which
 * clear, show and apply act on) and a hold file. Beyond not crashing: a
 * state accepted is whole (its IFB a valid name, its peers with a rate and
 * a class id in range), and a hold accepted names a positive PID and start.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "shape/peers.h"
#include "shape/state.h"
#include "util/ifname.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_state(const struct shape_state *st)
{
	require(!st->ingress || ifname_is_valid(st->ifb));
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);

		require(w->rate && w->minor <= TREE_PEER_MINOR_LAST);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shape_state st = { 0 };
	g_autofree char *text = g_strndup((const char *)data, size);
	uint64_t start;
	pid_t pid;

	if (state_parse((const char *)data, size, &st) == 0) {
		check_state(&st);
		shape_state_clear(&st);
	}
	if (hold_parse(text, "wg0", &pid, &start) == 0)
		require(pid > 0 && start);
	return 0;
}
