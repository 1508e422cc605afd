// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int safe_stat(const struct stat *st, const char *path, bool is_dir, bool above, char **why)
{
	g_autofree char *shown = text_escape(path);
	const char *from = above ? "anything below it" : "it";
	mode_t mode = above ? st->st_mode & ~(mode_t)S_IWUSR : st->st_mode;

	if (is_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		*why = g_strdup_printf("%s: not a %s", shown,
				       is_dir ? "folder" : "regular file");
		return -EINVAL;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		*why = g_strdup_printf("%s: owned by uid %u, who could change it at will; refusing "
				       "to take orders from %s (chown root)",
				       shown, (unsigned int)st->st_uid, from);
		return -EPERM;
	}
	if (!safe_mode(st->st_uid, st->st_gid, mode)) {
		*why = g_strdup_printf("%s: writable by someone other than root (owner %u, group "
				       "%u, mode %04o); refusing to take orders from %s",
				       shown, (unsigned int)st->st_uid,
				       (unsigned int)st->st_gid, (unsigned int)(st->st_mode & 07777),
				       from);
		return -EPERM;
	}
	return 0;
}

static int errno_why(const char *path, char **why)
{
	g_autofree char *shown = text_escape(path);
	int r = -errno;

	*why = g_strdup_printf("%s: %s", shown, g_strerror(-r));
	return r;
}

int safe_dirs(const char *dir, GHashTable *checked, char **why)
{
	g_autoptr(GHashTable) own = NULL;
	g_autofree char *real = realpath(dir, NULL);
	int need = 2, r;
	struct stat st;

	if (!checked)
		checked = own = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	if (!real)
		return errno_why(dir, why);
	while (GPOINTER_TO_INT(g_hash_table_lookup(checked, real)) < need) {
		char *slash = strrchr(real, '/');

		if (stat(real, &st) < 0)
			return errno_why(real, why);
		r = safe_stat(&st, real, true, need == 1, why);
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
