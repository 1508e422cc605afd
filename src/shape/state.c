// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "shape/peers.h"
#include "shape/state.h"
#include "shape/words.h"
#include "util/ifname.h"

#define SUFFIX ".state"
#define HOLD_SUFFIX ".hold" /* never SUFFIX's end: a hold is not an interface's state */

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
	if (st->peers)
		g_array_free(st->peers, true);
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

#define PEER_GROUP "peer "

/* One [peer KEY] group: its class, rate, options (set's words), name and source. */
static int peer_load(GKeyFile *kf, const char *group, struct peer_want *w)
{
	g_autofree char *name = NULL, *options = NULL, *source = NULL;
	g_auto(GStrv) words = NULL;
	struct shape_request req;
	char err[128];
	guint64 minor;

	memset(w, 0, sizeof(*w));
	if (wg_key_from_base64(group + strlen(PEER_GROUP), w->key) < 0)
		return -EBADMSG;
	minor = g_key_file_get_uint64(kf, group, "class", NULL);
	w->minor = minor <= TREE_PEER_MINOR_LAST ? (uint16_t)minor : 0;
	w->rate = g_key_file_get_uint64(kf, group, "rate", NULL);
	name = g_key_file_get_string(kf, group, "name", NULL);
	source = g_key_file_get_string(kf, group, "source", NULL);
	options = g_key_file_get_string(kf, group, "options", NULL);
	if (!w->rate)
		return -EBADMSG;
	g_strlcpy(w->name, name ? name : "", sizeof(w->name));
	g_strlcpy(w->source, source ? source : "set", sizeof(w->source));
	g_strlcpy(w->options, options ? options : "", sizeof(w->options));
	words = g_strsplit_set(w->options, " ", -1);
	if (w->options[0] &&
	    shape_words_parse((int)g_strv_length(words), words, &req, err, sizeof(err)) < 0)
		return -EBADMSG;
	if (w->options[0])
		w->opts = req.opts;
	return 0;
}

static int peers_load(GKeyFile *kf, struct shape_state *st)
{
	g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);

	for (size_t i = 0; groups[i]; i++) {
		struct peer_want w;

		if (!g_str_has_prefix(groups[i], PEER_GROUP))
			continue;
		if (peer_load(kf, groups[i], &w) < 0)
			return -EBADMSG;
		if (!st->peers)
			st->peers = g_array_new(false, true, sizeof(struct peer_want));
		g_array_append_val(st->peers, w);
	}
	return 0;
}

static void peers_save(GKeyFile *kf, const struct shape_state *st)
{
	for (guint i = 0; st->peers && i < st->peers->len; i++) {
		const struct peer_want *w = &g_array_index(st->peers, struct peer_want, i);
		char key[45];
		g_autofree char *group = NULL;

		wg_key_to_base64(w->key, key);
		group = g_strconcat(PEER_GROUP, key, NULL);
		g_key_file_set_uint64(kf, group, "class", w->minor);
		g_key_file_set_uint64(kf, group, "rate", w->rate);
		if (w->name[0])
			g_key_file_set_string(kf, group, "name", w->name);
		g_key_file_set_string(kf, group, "source", w->source);
		if (w->options[0])
			g_key_file_set_string(kf, group, "options", w->options);
	}
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

	st.tree = st.egress && g_key_file_get_boolean(kf, "egress", "per-peer", NULL);
	st.cap = st.tree ? g_key_file_get_uint64(kf, "egress", "cap", NULL) : 0;
	if (peers_load(kf, &st) < 0) {
		shape_state_clear(&st);
		return -EBADMSG;
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
	if (st->egress && st->tree) {
		g_key_file_set_boolean(kf, "egress", "per-peer", true);
		g_key_file_set_uint64(kf, "egress", "cap", st->cap);
	}
	if (st->ingress)
		g_key_file_set_string(kf, "ingress", "ifb", st->ifb);
	peers_save(kf, st);

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

/* ---- holds ----------------------------------------------------------------- */

static char *hold_path(const char *dir, const char *ifname)
{
	g_autofree char *file = g_strconcat(ifname, HOLD_SUFFIX, NULL);

	return g_build_filename(dir, file, NULL);
}

/* The command name of pid (/proc/PID/comm), or NULL when it is gone. */
static char *proc_comm(pid_t pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int)pid);
	char *comm = NULL;

	if (!g_file_get_contents(path, &comm, NULL, NULL))
		return NULL;
	g_strchomp(comm);
	return comm;
}

/*
 * Whether two command names are the same program: wgshape runs tune in
 * wgshape-measure (src/main.c), which the daemon, a wgshape, must know.
 */
static bool same_program(const char *a, const char *b)
{
	static const char *const ours[] = { "wgshape", "wgshape-measure" };
	bool a_ours = false, b_ours = false;

	if (!strcmp(a, b))
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(ours); i++) {
		a_ours |= !strcmp(a, ours[i]);
		b_ours |= !strcmp(b, ours[i]);
	}
	return a_ours && b_ours;
}

/* The PID in a hold file, if that process lives and is a wgshape like us. */
static pid_t live_holder(const char *path)
{
	g_autofree char *data = NULL, *theirs = NULL, *ours = NULL;
	char *end;
	long pid;

	if (!g_file_get_contents(path, &data, NULL, NULL))
		return 0;
	errno = 0;
	pid = strtol(data, &end, 10);
	if (errno || end == data || (*end && *end != '\n') || pid <= 0 || pid > INT32_MAX)
		return 0;
	if (kill((pid_t)pid, 0) < 0 && errno != EPERM)
		return 0;
	/* A PID used again by another program is no hold. */
	theirs = proc_comm((pid_t)pid);
	ours = proc_comm(getpid());
	if (!theirs || !ours || !same_program(theirs, ours))
		return 0;
	return (pid_t)pid;
}

pid_t state_holder(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;

	if (!ifname_is_valid(ifname))
		return 0;
	path = hold_path(dir, ifname);
	return live_holder(path);
}

int state_hold(const char *dir, const char *ifname, pid_t *holder)
{
	g_autofree char *path = NULL, *tmp = NULL;
	char pid[32];
	pid_t h;
	int fd, r = 0;

	*holder = 0;
	if (!ifname_is_valid(ifname))
		return -EINVAL;
	if (g_mkdir_with_parents(dir, 0755) < 0)
		return -errno;
	path = hold_path(dir, ifname);
	tmp = g_strconcat(path, ".XXXXXX", NULL);
	fd = g_mkstemp_full(tmp, O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (write(fd, pid, strlen(pid)) != (ssize_t)strlen(pid))
		r = errno ? -errno : -EIO;
	close(fd);
	/* link() makes the hold only where there is none: two tunes cannot both win. */
	if (r == 0 && link(tmp, path) < 0) {
		if (errno != EEXIST) {
			r = -errno;
		} else if ((h = live_holder(path)) > 0 && h != getpid()) {
			*holder = h;
			r = -EBUSY;
		} else if (rename(tmp, path) < 0) {
			r = -errno; /* a stale hold, left by a process that is gone: ours now */
		} else if ((h = live_holder(path)) != getpid()) {
			*holder = h; /* another tune replaced the same stale hold first */
			r = -EBUSY;
		}
	}
	g_unlink(tmp);
	return r;
}

void state_release(const char *dir, const char *ifname)
{
	g_autofree char *path = NULL;

	if (!ifname_is_valid(ifname))
		return;
	path = hold_path(dir, ifname);
	if (live_holder(path) == getpid())
		g_unlink(path);
}
