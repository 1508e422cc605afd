// SPDX-License-Identifier: GPL-2.0-or-later
/* IFNAME.adapt (adapter-state.h): the keys and their order are the file's format. */
#include <errno.h>
#include <glib.h>

#include "daemon/adapter-state.h"
#include "shape/state.h"

/* show reads a few hundred bytes; anything larger is not ours */
#define ADAPT_STATE_MAX 16384

const char *const adapter_dir_names[ADAPTER_NDIRS] = {"egress", "ingress", "download"};

static char *file_name(const char *ifname)
{
	return g_strconcat(ifname, ADAPT_STATE_SUFFIX, NULL);
}

int adapter_state_save(const char *statedir, const char *ifname, const struct adapter_state *st)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autofree char *data = NULL, *name = file_name(ifname);
	gsize len;

	g_key_file_set_string(kf, "adapt", "server", st->server);
	g_key_file_set_boolean(kf, "adapt", "lost", st->lost);
	g_key_file_set_boolean(kf, "adapt", "stamped", st->stamped);
	for (int i = 0; i < ADAPTER_NDIRS; i++) {
		const struct adapter_state_dir *d = &st->dir[i];
		const char *g = adapter_dir_names[i];

		if (!d->on)
			continue;
		g_key_file_set_uint64(kf, g, "rate", d->rate);
		g_key_file_set_uint64(kf, g, "applied", d->applied);
		g_key_file_set_uint64(kf, g, "min", d->min);
		g_key_file_set_uint64(kf, g, "base", d->base);
		g_key_file_set_uint64(kf, g, "max", d->max);
		g_key_file_set_int64(kf, g, "baseline_us", d->baseline_us);
		g_key_file_set_int64(kf, g, "delay_us", d->delay_us);
		g_key_file_set_uint64(kf, g, "rtt_us", d->rtt_us);
		g_key_file_set_uint64(kf, g, "load", d->load);
		g_key_file_set_int64(kf, g, "changed", d->changed);
		g_key_file_set_string(kf, g, "why", d->why);
	}
	data = g_key_file_to_data(kf, &len, NULL);
	return state_file_write(statedir, name, data, len);
}

static void copy_string(GKeyFile *kf, const char *group, const char *key, char *out, size_t size)
{
	g_autofree char *s = g_key_file_get_string(kf, group, key, NULL);

	g_strlcpy(out, s ? s : "", size);
}

int adapter_state_parse(const char *data, size_t len, struct adapter_state *out)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	struct adapter_state st = {0};

	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, NULL))
		return -EINVAL;
	copy_string(kf, "adapt", "server", st.server, sizeof(st.server));
	st.lost = g_key_file_get_boolean(kf, "adapt", "lost", NULL);
	st.stamped = g_key_file_get_boolean(kf, "adapt", "stamped", NULL);
	for (int i = 0; i < ADAPTER_NDIRS; i++) {
		struct adapter_state_dir *d = &st.dir[i];
		const char *g = adapter_dir_names[i];

		d->on = g_key_file_has_group(kf, g);
		if (!d->on)
			continue;
		d->rate = g_key_file_get_uint64(kf, g, "rate", NULL);
		d->applied = g_key_file_get_uint64(kf, g, "applied", NULL);
		d->min = g_key_file_get_uint64(kf, g, "min", NULL);
		d->base = g_key_file_get_uint64(kf, g, "base", NULL);
		d->max = g_key_file_get_uint64(kf, g, "max", NULL);
		d->baseline_us = g_key_file_get_int64(kf, g, "baseline_us", NULL);
		d->delay_us = g_key_file_get_int64(kf, g, "delay_us", NULL);
		d->rtt_us = g_key_file_get_uint64(kf, g, "rtt_us", NULL);
		d->load = g_key_file_get_uint64(kf, g, "load", NULL);
		d->changed = g_key_file_get_int64(kf, g, "changed", NULL);
		copy_string(kf, g, "why", d->why, sizeof(d->why));
	}
	*out = st;
	return 0;
}

int adapter_state_load(const char *statedir, const char *ifname, struct adapter_state *out)
{
	g_autofree char *name = file_name(ifname);
	g_autoptr(GString) data = NULL;
	int r = state_file_read(statedir, name, ADAPT_STATE_MAX, &data);

	if (r < 0)
		return r;
	return adapter_state_parse(data->str, data->len, out);
}

void adapter_state_remove(const char *statedir, const char *ifname)
{
	g_autofree char *name = file_name(ifname);

	state_file_remove(statedir, name);
}
