/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Between nm/loader.c (in every wgshape) and nm/nm.c (the wgshape-nm.so module,
 * linked with libnm): the functions of nm.h that need NetworkManager.
 */
#ifndef WGSHAPE_NM_MODULE_H
#define WGSHAPE_NM_MODULE_H

#include "nm/nm.h"

#define NM_MODULE_FILE "wgshape-nm.so"
#define NM_MODULE_SYMBOL "wgshape_nm_module"

struct nm_module {
	int (*nets_get)(struct nm_nets **out);
	int (*watch_new)(nm_changed_fn fn, void *arg, struct nm_watch **out);
	void (*watch_free)(struct nm_watch *w);
	int (*watch_nets)(struct nm_watch *w, struct nm_nets **out);
};

#endif
