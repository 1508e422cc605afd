/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Is a file fit to take orders from? wgshape runs as root and acts on what
 * its configuration and its state files say: a file, or a folder on the way
 * to it, that someone other than root (or the caller) can write would let
 * them give those orders. The same checks as sshd's StrictModes.
 */
#ifndef WGSHAPE_UTIL_SAFE_H
#define WGSHAPE_UTIL_SAFE_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <glib.h>

/* Do mode and group leave a file writable only by its owner and root? */
bool safe_mode(uid_t uid, gid_t gid, mode_t mode);

/*
 * st (of path): a folder or a regular file as is_dir says, owned by root or
 * the caller, writable by nobody else. above: a folder further up the way,
 * which its owner may write. -EINVAL (not that type), -EPERM; err says so
 * (util/err.h).
 */
int safe_stat(const struct stat *st, const char *path, bool is_dir, bool above, char *err,
	      size_t errlen);

/*
 * dir, resolved, and every folder above it up to /: safe_stat's, since
 * whoever can write one of them can swap what is below it (a sticky /tmp is
 * no exception). checked: NULL, or folders already found safe (2: a file's
 * own folder, 1: further up), each looked at once. -errno and err.
 */
int safe_dirs(const char *dir, GHashTable *checked, char *err, size_t errlen);

/* Append what fd holds, to its end, to out: -EFBIG past max bytes in all, or -errno. */
int safe_read(int fd, GString *out, size_t max);

#endif
