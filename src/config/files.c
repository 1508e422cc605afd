// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which files make the configuration (the main one, then the *.conf in conf.d) and
 * reading each safely: only what root alone can write gives wgshape orders.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/internal.h"
#include "util/err.h"
#include "util/log.h"
#include "util/safe.h"

bool config_mode_safe(uid_t uid, gid_t gid, mode_t mode)
{
	return safe_mode(uid, gid, mode);
}

/* Far more than any configuration: a file past this is refused, not read into memory. */
#define CONFIG_MAX_BYTES (32 << 20)

static int errno_err(const char *path, char *err, size_t errlen)
{
	int r = -errno;

	return err_say(err, errlen, r, "%s: %s", path, g_strerror(-r));
}

/* safe_stat's, and a file no larger than a configuration needs. */
static int stat_safe(const struct stat *st, const char *path, bool is_dir, char *err,
		     size_t errlen)
{
	int r = safe_stat(st, path, is_dir, false, err, errlen);

	if (r == 0 && !is_dir && st->st_size > CONFIG_MAX_BYTES)
		return err_say(err, errlen, -EFBIG, "%s: %jd bytes, more than a configuration "
			       "needs (at most %d MiB); refusing it", path, (intmax_t)st->st_size,
			       CONFIG_MAX_BYTES >> 20);
	return r;
}

/*
 * The open fd, which path names: fit to take orders from (stat_safe), and
 * so is every folder on its resolved path; and that path still leads to it.
 */
static int check_open(int fd, const char *path, bool is_dir, GHashTable *checked, struct stat *st,
		      char *err, size_t errlen)
{
	g_autofree char *real = NULL, *parent = NULL;
	struct stat at;
	int r;

	if (fstat(fd, st) < 0)
		return errno_err(path, err, errlen);
	r = stat_safe(st, path, is_dir, err, errlen);
	if (r < 0)
		return r;
	real = realpath(path, NULL);
	if (!real)
		return errno_err(path, err, errlen);
	if (stat(real, &at) < 0 || at.st_dev != st->st_dev || at.st_ino != st->st_ino)
		return err_say(err, errlen, -EAGAIN, "%s: replaced while being read; try again",
			       path);
	parent = g_path_get_dirname(real);
	return safe_dirs(parent, checked, err, errlen);
}

static int read_all(int fd, const char *path, GString *out, char *err, size_t errlen)
{
	int r = safe_read(fd, out, CONFIG_MAX_BYTES);

	if (r == -EFBIG)
		return err_say(err, errlen, r, "%s: grew past %d MiB while being read; refusing it",
			       path, CONFIG_MAX_BYTES >> 20);
	if (r < 0)
		return err_say(err, errlen, r, "%s: %s", path, g_strerror(-r));
	return 0;
}

/*
 * Parse what file says now; when that is not INI at all, what it said in
 * prev, which was (its own warnings were given then and would quote lines
 * that are no longer there: only the one warning why it is kept).
 */
static void parse_or_keep(struct config *cfg, const struct config *prev, const char *file,
			  GBytes *now)
{
	g_autoptr(GError) err = NULL;
	GBytes *old = prev ? g_hash_table_lookup(prev->texts, file) : NULL;
	gsize len;
	const char *data = g_bytes_get_data(now, &len);
	guint n;

	if (conf_parse(cfg, file, data, len, &err) == 0) {
		g_hash_table_replace(cfg->texts, g_strdup(file), now);
		return;
	}
	g_bytes_unref(now);
	if (!old) {
		conf_warn_not_ini(cfg, file, err, "file skipped");
		return;
	}
	conf_warn_not_ini(cfg, file, err,
			  "keeping what it said when it last read well, until it is fixed");
	n = cfg->warnings->len;
	data = g_bytes_get_data(old, &len);
	if (conf_parse(cfg, file, data, len, NULL) == 0)
		g_hash_table_replace(cfg->texts, g_strdup(file), g_bytes_ref(old));
	g_ptr_array_set_size(cfg->warnings, n);
}

/*
 * Read name in the folder dirfd (path: how messages name it), opened once:
 * the open file is what is checked and what is read. O_NONBLOCK: opening a
 * FIFO does not wait for a writer (and it is refused, as not regular).
 */
static int load_file(struct config *cfg, const struct config *prev, int dirfd, const char *name,
		     const char *path, GHashTable *checked, char *err, size_t errlen)
{
	g_autoptr(GString) text = NULL;
	struct stat st;
	int fd, r;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno_err(path, err, errlen);
	r = check_open(fd, path, false, checked, &st, err, errlen);
	if (r == 0) {
		text = g_string_sized_new((size_t)st.st_size + 1);
		r = read_all(fd, path, text, err, errlen);
	}
	close(fd);
	if (r < 0)
		return r;
	parse_or_keep(cfg, prev, path, g_string_free_to_bytes(g_steal_pointer(&text)));
	return 0;
}

/* g_ptr_array_sort hands the comparator pointers to the elements. */
static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the *.conf in the open folder fd, in name order. */
static int confd_names(int fd, const char *confd, GPtrArray *names, char *err, size_t errlen)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *e;

	if (!d) {
		int r = errno_err(confd, err, errlen);

		if (dup_fd >= 0)
			close(dup_fd);
		return r;
	}
	while ((e = readdir(d)))
		if (g_str_has_suffix(e->d_name, ".conf") && strcmp(e->d_name, ".conf"))
			g_ptr_array_add(names, g_strdup(e->d_name));
	closedir(d);
	g_ptr_array_sort(names, cmp_str_ptr);
	return 0;
}

/* conf.d beside the main file, if there is one: checked open, its files read through it. */
static int load_confd(struct config *cfg, const struct config *prev, const char *dir,
		      GHashTable *checked, char *err, size_t errlen)
{
	g_autofree char *confd = g_build_filename(dir, "conf.d", NULL);
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	struct stat st;
	int fd, r;

	fd = open(confd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : errno_err(confd, err, errlen);
	r = check_open(fd, confd, true, checked, &st, err, errlen);
	if (r == 0)
		r = confd_names(fd, confd, names, err, errlen);
	for (guint i = 0; r == 0 && i < names->len; i++) {
		g_autofree char *path = g_build_filename(confd, names->pdata[i], NULL);

		r = load_file(cfg, prev, fd, names->pdata[i], path, checked, err, errlen);
	}
	close(fd);
	return r;
}

int config_reload(const char *path, bool must_exist, const struct config *prev,
		  struct config **out, char *err, size_t errlen)
{
	g_autoptr(config_t) cfg = config_new();
	g_autoptr(GHashTable) checked = NULL;
	g_autofree char *dir = g_path_get_dirname(path);
	int r;

	checked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	r = safe_dirs(dir, checked, err, errlen);
	if (r == 0)
		r = load_file(cfg, prev, AT_FDCWD, path, path, checked, err, errlen);
	if (r == -ENOENT) {
		if (must_exist)
			return err_say(err, errlen, r, "%s: no such file", path);
		if (errlen)
			err[0] = '\0'; /* not a failure: a warning */
		g_ptr_array_add(cfg->warnings, g_strdup_printf("%s: no such file", path));
	} else if (r < 0) {
		return r;
	}
	r = load_confd(cfg, prev, dir, checked, err, errlen);
	if (r < 0)
		return r;
	config_finish(cfg);
	*out = g_steal_pointer(&cfg);
	return 0;
}

int config_load(const char *path, bool must_exist, struct config **out, char *err, size_t errlen)
{
	return config_reload(path, must_exist, NULL, out, err, errlen);
}

struct config *config_reload_logged(const char *path, const struct config *prev)
{
	struct config *cfg = NULL;
	char err[ERR_SIZE] = "";
	int r;

	r = config_reload(path ? path : CONFIG_DEFAULT_PATH, path != NULL, prev, &cfg, err,
			  sizeof(err));
	if (r < 0) {
		log_err("config: %s", err[0] ? err : strerror(-r));
		return NULL;
	}
	for (guint i = 0; i < cfg->warnings->len; i++)
		log_warn("%s", (const char *)cfg->warnings->pdata[i]);
	return cfg;
}

struct config *config_load_logged(const char *path)
{
	return config_reload_logged(path, NULL);
}
