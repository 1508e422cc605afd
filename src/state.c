// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "state.h"

#define SUFFIX ".state"

bool ifname_is_valid(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len >= 16 || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (const char *p = name; *p; p++)
		if (*p == '/' || *p == ':' || g_ascii_isspace(*p))
			return false;
	return true;
}

char *state_dir_for_netns(const char *base)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) < 0 || stat("/proc/1/ns/net", &init) < 0 ||
	    (self.st_ino == init.st_ino && self.st_dev == init.st_dev))
		return g_strdup(base);
	return g_strdup_printf("%s/netns-%llu", base, (unsigned long long)self.st_ino);
}

void shape_state_clear(struct shape_state *st)
{
	if (!st)
		return;
	g_free(st->orig_options);
	memset(st, 0, sizeof(*st));
}

static char *state_path(const char *dir, const char *ifname)
{
	g_autofree char *file = g_strconcat(ifname, SUFFIX, NULL);

	return g_build_filename(dir, file, NULL);
}

static int gerror_to_errno(GError *err)
{
	if (err && err->domain == G_FILE_ERROR)
		switch (err->code) {
		case G_FILE_ERROR_NOENT:
			return -ENOENT;
		case G_FILE_ERROR_ACCES:
		case G_FILE_ERROR_PERM:
			return -EACCES;
		case G_FILE_ERROR_ROFS:
			return -EROFS;
		case G_FILE_ERROR_NOSPC:
			return -ENOSPC;
		default:
			break;
		}
	return -EIO;
}

int state_load(const char *dir, const char *ifname, struct shape_state *out)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autofree char *path = NULL, *s = NULL;
	struct shape_state st = { 0 };

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	path = state_path(dir, ifname);
	if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &err))
		return err->domain == G_FILE_ERROR ? gerror_to_errno(err) : -EBADMSG;

	st.ifindex = g_key_file_get_integer(kf, "interface", "ifindex", NULL);
	st.overhead = g_key_file_get_integer(kf, "interface", "overhead", NULL);
	s = g_key_file_get_string(kf, "interface", "overhead-reason", NULL);
	if (s)
		g_strlcpy(st.overhead_reason, s, sizeof(st.overhead_reason));
	g_clear_pointer(&s, g_free);
	s = g_key_file_get_string(kf, "interface", "source", NULL);
	if (s)
		g_strlcpy(st.source, s, sizeof(st.source));
	g_clear_pointer(&s, g_free);

	st.egress = g_key_file_has_group(kf, "egress");
	if (st.egress) {
		s = g_key_file_get_string(kf, "egress", "original-kind", NULL);
		if (!s) {
			shape_state_clear(&st);
			return -EBADMSG;
		}
		g_strlcpy(st.orig_kind, s, sizeof(st.orig_kind));
		g_clear_pointer(&s, g_free);
		st.orig_handle = (uint32_t)g_key_file_get_uint64(kf, "egress", "original-handle", NULL);
		s = g_key_file_get_string(kf, "egress", "original-options", NULL);
		if (s && *s) {
			gsize len = 0;

			st.orig_options = g_base64_decode(s, &len);
			st.orig_options_len = len;
		}
		g_clear_pointer(&s, g_free);
	}

	st.ingress = g_key_file_has_group(kf, "ingress");
	if (st.ingress) {
		s = g_key_file_get_string(kf, "ingress", "ifb", NULL);
		if (!s || !ifname_is_valid(s)) {
			shape_state_clear(&st);
			return -EBADMSG;
		}
		g_strlcpy(st.ifb, s, sizeof(st.ifb));
	}
	*out = st;
	return 0;
}

int state_save(const char *dir, const char *ifname, const struct shape_state *st)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autofree char *path = NULL, *data = NULL;
	gsize len;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	if (g_mkdir_with_parents(dir, 0755) < 0)
		return -errno;

	g_key_file_set_integer(kf, "interface", "ifindex", st->ifindex);
	g_key_file_set_integer(kf, "interface", "overhead", st->overhead);
	if (st->overhead_reason[0])
		g_key_file_set_string(kf, "interface", "overhead-reason", st->overhead_reason);
	if (st->source[0])
		g_key_file_set_string(kf, "interface", "source", st->source);
	if (st->egress) {
		g_autofree char *b64 = NULL;

		g_key_file_set_string(kf, "egress", "original-kind", st->orig_kind);
		g_key_file_set_uint64(kf, "egress", "original-handle", st->orig_handle);
		if (st->orig_options_len)
			b64 = g_base64_encode(st->orig_options, st->orig_options_len);
		g_key_file_set_string(kf, "egress", "original-options", b64 ? b64 : "");
	}
	if (st->ingress)
		g_key_file_set_string(kf, "ingress", "ifb", st->ifb);

	data = g_key_file_to_data(kf, &len, NULL);
	path = state_path(dir, ifname);
	/* Writes a temporary file and renames it over the old one. */
	if (!g_file_set_contents_full(path, data, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT,
				      0644, &err))
		return gerror_to_errno(err);
	return 0;
}

int state_remove(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;

	if (!ifname_is_valid(ifname))
		return -EINVAL;
	path = state_path(dir, ifname);
	if (g_unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_list(const char *dir, char ***names)
{
	g_autoptr(GPtrArray) arr = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GDir) d = NULL;
	const char *name;

	d = g_dir_open(dir, 0, NULL);
	while (d && (name = g_dir_read_name(d))) {
		g_autofree char *ifname = NULL;

		if (!g_str_has_suffix(name, SUFFIX))
			continue;
		ifname = g_strndup(name, strlen(name) - strlen(SUFFIX));
		if (ifname_is_valid(ifname))
			g_ptr_array_add(arr, g_steal_pointer(&ifname));
	}
	g_ptr_array_sort(arr, cmp_str);
	g_ptr_array_add(arr, NULL);
	*names = (char **)g_ptr_array_free(g_steal_pointer(&arr), FALSE);
	return 0;
}
