// SPDX-License-Identifier: GPL-2.0-or-later
#include <dlfcn.h>
#include <glib.h>

#include "build-config.h"
#include "util/log.h"
#include "util/module.h"

/* Beside the program first: a build tree runs its own modules, not installed ones. */
static void *open_module(const char *file, char **why)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
	g_autofree char *near = NULL;
	g_autofree char *installed = g_build_filename(WGSHAPE_MODULEDIR, file, NULL);
	void *h;

	if (self) {
		g_autofree char *dir = g_path_get_dirname(self);

		near = g_build_filename(dir, file, NULL);
		if (g_file_test(near, G_FILE_TEST_IS_REGULAR)) {
			h = dlopen(near, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
			if (!h)
				*why = g_strdup(dlerror());
			return h;
		}
	}
	h = dlopen(installed, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h)
		*why = g_strdup(dlerror());
	return h;
}

const void *module_symbol(const char *file, const char *symbol)
{
	g_autofree char *why = NULL;
	void *h = open_module(file, &why);
	void *sym;

	if (!h) {
		log_err("cannot load %s: %s", file, why ? why : "unknown error");
		return NULL;
	}
	sym = dlsym(h, symbol);
	if (!sym)
		log_err("%s: no %s in it (a module of another wgshape version?)", file, symbol);
	return sym;
}
