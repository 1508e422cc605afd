// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * nm.h for every wgshape: the snapshot's own memory here, NetworkManager's
 * part in the wgshape-nm.so module, loaded on the first question. A server
 * with no [network] profile never asks, so never loads libnm.
 */
#include <errno.h>
#include <glib.h>

#include "nm/module.h"
#include "nm/nm.h"
#include "util/module.h"

static const struct nm_module *module(void)
{
	static const struct nm_module *m;
	static bool tried;

	if (!tried) {
		tried = true;
		m = module_symbol(NM_MODULE_FILE, NM_MODULE_SYMBOL);
	}
	return m;
}

void nm_nets_free(struct nm_nets *n)
{
	if (!n)
		return;
	if (n->strings)
		g_string_chunk_free(n->strings);
	g_free(n->view.nets);
	g_free(n);
}

/* Without the module nothing is known of the networks: profiles wait. */
static struct nm_nets *unknown(void)
{
	struct nm_nets *n = g_new0(struct nm_nets, 1);

	n->view.unknown = true;
	return n;
}

int nm_nets_get(struct nm_nets **out)
{
	if (!module()) {
		*out = unknown();
		return -ENOENT;
	}
	return module()->nets_get(out);
}

int nm_watch_new(nm_changed_fn fn, void *arg, struct nm_watch **out)
{
	if (!module())
		return -ENOENT;
	return module()->watch_new(fn, arg, out);
}

void nm_watch_free(struct nm_watch *w)
{
	if (w && module())
		module()->watch_free(w);
}

int nm_watch_nets(struct nm_watch *w, struct nm_nets **out)
{
	return module()->watch_nets(w, out);
}
