// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"
#include "util/safe.h"
#include "util/text.h"

bool safe_mode(uid_t uid, gid_t gid, mode_t mode)
{
	if (mode & S_IWOTH)
		return false;
	if ((mode & S_IWGRP) && gid != 0)
		return false;
	if ((mode & S_IWUSR) && uid != 0)
		return false;
	return true;
}

int safe_stat(const struct stat *st, const char *path, bool is_dir, bool above, char *err,
	      size_t errlen)
{
	g_autofree char *shown = text_escape(path);
	const char *from = above ? "anything below it" : "it";
	mode_t mode = above ? st->st_mode & ~(mode_t)S_IWUSR : st->st_mode;

	if (is_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		return err_say(err, errlen, -EINVAL, "%s: not a %s", shown,
			       is_dir ? "folder" : "regular file");
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		return err_say(err, errlen, -EPERM, "%s: owned by uid %u, who could change it at "
			       "will; refusing to take orders from %s (chown root)",
			       shown, (unsigned int)st->st_uid, from);
	}
	if (!safe_mode(st->st_uid, st->st_gid, mode)) {
		return err_say(err, errlen, -EPERM, "%s: writable by someone other than root "
			       "(owner %u, group %u, mode %04o); refusing to take orders from %s",
			       shown, (unsigned int)st->st_uid, (unsigned int)st->st_gid,
			       (unsigned int)(st->st_mode & 07777), from);
	}
	return 0;
}

static int errno_err(const char *path, char *err, size_t errlen)
{
	g_autofree char *shown = text_escape(path);
	int r = -errno;

	return err_say(err, errlen, r, "%s: %s", shown, g_strerror(-r));
}

int safe_dirs(const char *dir, GHashTable *checked, char *err, size_t errlen)
{
	g_autoptr(GHashTable) own = NULL;
	g_autofree char *real = realpath(dir, NULL);
	int need = 2, r;
	struct stat st;

	if (!checked)
		checked = own = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (!real)
		return errno_err(dir, err, errlen);
	while (GPOINTER_TO_INT(g_hash_table_lookup(checked, real)) < need) {
		char *slash = strrchr(real, '/');

		if (stat(real, &st) < 0)
			return errno_err(real, err, errlen);
		r = safe_stat(&st, real, true, need == 1, err, errlen);
		if (r < 0)
			return r;
		g_hash_table_insert(checked, g_strdup(real), GINT_TO_POINTER(need));
		if (!slash || !strcmp(real, "/"))
			break;
		slash[slash == real] = '\0'; /* "/etc/x" -> "/etc", "/etc" -> "/" */
		need = 1;
	}
	return 0;
}

int safe_read(int fd, GString *out, size_t max)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (out->len + (size_t)n > max)
			return -EFBIG;
		g_string_append_len(out, buf, n);
	}
}
