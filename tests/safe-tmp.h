/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fresh folder for a test's state files, below none that others can write
 * (util/safe.h refuses those, /tmp among them): in the user's runtime folder,
 * /run or the build folder, whichever is fit. g_free it; rm_rf() it after.
 */
#ifndef WGSHAPE_TESTS_SAFE_TMP_H
#define WGSHAPE_TESTS_SAFE_TMP_H

#include <stdlib.h>
#include <sys/stat.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "util/err.h"
#include "util/safe.h"

static inline char *safe_tmp_dir(const char *prefix)
{
	const char *candidates[] = { g_get_user_runtime_dir(), "/run",
				     g_test_get_dir(G_TEST_BUILT) };

	for (size_t i = 0; i < G_N_ELEMENTS(candidates); i++) {
		g_autofree char *real = realpath(candidates[i], NULL);
		char why[ERR_SIZE] = "";
		char *dir;

		if (!real)
			continue;
		dir = g_strdup_printf("%s/%s-XXXXXX", real, prefix);
		if (g_mkdtemp_full(dir, 0755) && safe_dirs(dir, NULL, why, sizeof(why)) == 0)
			return dir;
		g_test_message("not below %s: %s", real, why[0] ? why : "unwritable");
		g_rmdir(dir);
		g_free(dir);
	}
	g_error("no folder for state files that util/safe.h accepts");
}

static inline void safe_tmp_rm(const char *path)
{
	struct stat st;
	GDir *d;
	const char *name;

	if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		g_remove(path);
		return;
	}
	g_chmod(path, 0700);
	d = g_dir_open(path, 0, NULL);
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *p = g_build_filename(path, name, NULL);

		safe_tmp_rm(p);
	}
	if (d)
		g_dir_close(d);
	g_remove(path);
}

#endif
