/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parts of wgshape that pull in heavy libraries (libnm, json-glib) are
 * modules, loaded the first time they are needed: the dispatcher hook, set
 * and the server's daemon start without them.
 */
#ifndef WGSHAPE_UTIL_MODULE_H
#define WGSHAPE_UTIL_MODULE_H

/*
 * FILE beside the running program when it is there (a build tree runs its
 * own parts, not the installed ones), else in DIR; g_free() it.
 */
char *installed_file(const char *file, const char *dir);

/*
 * The symbol's address in module FILE (wgshape-nm.so), found beside the
 * running program (a build tree) or in the installed module directory;
 * NULL with one line logged naming the file and why. Modules stay loaded.
 */
const void *module_symbol(const char *file, const char *symbol);

#endif
