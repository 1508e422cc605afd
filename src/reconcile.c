// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "reconcile.h"
#include "shape.h"
#include "state.h"

bool reconcile_skips(const struct link_info *link)
{
	return !strcmp(link->kind, "ifb") && !strncmp(link->name, "ifb4", 4);
}

int reconcile_iface(const struct reconciler *rc, const char *ifname)
{
	const struct conf_iface *c;
	struct shape_state st = { 0 };
	bool from_config;

	if (rc->only && strcmp(rc->only, ifname) != 0)
		return 0;
	c = config_match(rc->cfg, ifname);
	if (c) {
		struct shape_request req = c->req;
		char source[64];

		if (req.egress == DIR_KEEP && req.ingress == DIR_KEEP)
			return 0; /* a section with neither direction: nothing to do */
		/* The section is all that is wanted: what it leaves out is off or default. */
		if (req.egress == DIR_KEEP)
			req.egress = DIR_OFF;
		if (req.ingress == DIR_KEEP)
			req.ingress = DIR_OFF;
		cake_opts_fill_defaults(&req.opts);
		snprintf(source, sizeof(source), SOURCE_CONFIG " %s", c->where);
		req.source = source;
		return shape_set(rc->nl, rc->statedir, ifname, &req);
	}
	if (state_load(rc->statedir, ifname, &st) < 0)
		return 0;
	from_config = !strncmp(st.source, SOURCE_CONFIG, strlen(SOURCE_CONFIG));
	shape_state_clear(&st);
	if (!from_config)
		return 0; /* set by hand: not ours to undo */
	log_info("%s: no section matches any more: clearing", ifname);
	return shape_clear(rc->nl, rc->statedir, ifname);
}

int reconcile_all(const struct reconciler *rc)
{
	struct link_info *links = NULL;
	size_t n = 0;
	int failed = 0, r;

	r = netlink_link_list(rc->nl, &links, &n);
	if (r < 0) {
		log_err("list interfaces: %s", strerror(-r));
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		if (reconcile_skips(&links[i]))
			continue;
		if (reconcile_iface(rc, links[i].name) < 0)
			failed++;
	}
	free(links);
	return failed;
}
