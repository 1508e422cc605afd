// SPDX-License-Identifier: GPL-2.0-or-later
#include <dlfcn.h>
#include <glib.h>

#include "build-config.h"
#include "util/log.h"
#include "util/module.h"

char *installed_file(const char *file, const char *dir)
{
	g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);

	if (self) {
		g_autofree char *here = g_path_get_dirname(self);
		char *near = g_build_filename(here, file, NULL);

		if (g_file_test(near, G_FILE_TEST_IS_REGULAR))
			return near;
		g_free(near);
	}
	return g_build_filename(dir, file, NULL);
}

const void *module_symbol(const char *file, const char *symbol)
{
	g_autofree char *path = installed_file(file, WGSHAPE_MODULEDIR);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	void *sym;

	if (!h) {
		log_err("cannot load %s: %s", file, dlerror());
		return NULL;
	}
	sym = dlsym(h, symbol);
	if (!sym)
		log_err("%s: no %s in it (a module of another wgshape version?)", file, symbol);
	return sym;
}
