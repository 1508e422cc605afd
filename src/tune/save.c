// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <glib.h>

#include "config/config.h"
#include "apply/reconcile.h"
#include "nm/nm.h"
#include "tune/save.h"
#include "util/err.h"
#include "util/log.h"
#include "util/print.h"

/*
 * The section that decides ifname's shaping: the [network] profile in use
 * now, if profiles name this tunnel, or else its [interface] section.
 * -ENOENT (logged) when profiles decide it but none matches this network.
 */
static int choose_group(const char *conf, const char *ifname, char *group, size_t size)
{
	g_autoptr(config_t) cfg = NULL;
	g_autoptr(GPtrArray) profs = g_ptr_array_new();
	char err[ERR_SIZE];
	const struct conf_section *chosen = NULL;
	struct nm_nets *nets = NULL;
	char why_net[192];

	if (config_load(conf, false, &cfg, err, sizeof(err)) == 0) {
		config_networks_for(cfg, ifname, profs);
		if (profs->len) {
			nm_nets_get(&nets);
			chosen = config_network_choose(profs, &nets->view, ifname, why_net,
						       sizeof(why_net));
			nm_nets_free(nets);
		}
	}
	if (chosen) {
		snprintf(group, size, "network %s", chosen->name);
	} else if (profs->len) {
		/* An [interface] section would be overridden by the profiles. */
		log_err("save: [network] profiles decide %s's shaping but none matches this "
			"network (%s): add a profile for it, then save", ifname, why_net);
		return -ENOENT;
	} else {
		snprintf(group, size, "interface %s", ifname);
	}
	return 0;
}

/*
 * Keep the result in its own file beside the hand-written ones (conf.d
 * /90-tune.conf), in group; sections of the same name merge, so it overrides
 * only the rate.
 */
static int write_tune_conf(const char *conf, const char *group, struct tune_run *const *runs,
			   size_t n)
{
	g_autofree char *dir = g_path_get_dirname(conf);
	g_autofree char *confd = g_build_filename(dir, "conf.d", NULL);
	g_autofree char *path = g_build_filename(confd, "90-tune.conf", NULL);
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autofree char *data = NULL, *when = NULL, *stamp = NULL;
	g_autoptr(GDateTime) now = g_date_time_new_now_local();
	char value[64];

	g_key_file_load_from_file(kf, path, G_KEY_FILE_KEEP_COMMENTS, NULL);
	for (size_t i = 0; i < n; i++) {
		if (runs[i]->search.phase != TUNE_DONE)
			continue;
		if (runs[i]->dir == TUNE_SERVER && g_str_has_prefix(group, "interface ")) {
			/* download = is a [network] profile's: what the client asks its server */
			print_text("not saved: the download at the server is kept in a [network] "
				   "profile, and none decides %s's shaping\n", runs[i]->o->ifname);
			continue;
		}
		snprintf(value, sizeof(value), "%" PRIu64 "kbit",
			 runs[i]->search.result * 8 / 1000);
		g_key_file_set_string(kf, group, tune_run_dir(runs[i]), value);
	}
	when = g_date_time_format(now, "%Y-%m-%d %H:%M");
	stamp = g_strdup_printf(" by wgshape tune, %s", when);
	g_key_file_set_comment(kf, group, NULL, stamp, NULL);
	g_key_file_set_comment(kf, NULL, NULL,
			       " Written by `wgshape tune ... save`; hand-written files stay "
			       "as they are.\n Sections here merge with theirs: the rates win.",
			       NULL);
	data = g_key_file_to_data(kf, NULL, NULL);
	if (g_mkdir_with_parents(confd, 0755) < 0 ||
	    !g_file_set_contents_full(path, data, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &err)) {
		log_err("save: %s: %s", path, err ? err->message : g_strerror(errno));
		return -EIO;
	}
	print_text("saved in %s, [%s]\n", path, group);
	return 0;
}

int tune_save(const char *config_path, const char *network, struct tune_run *const *runs,
	      size_t n)
{
	const char *conf = config_path ? config_path : CONFIG_DEFAULT_PATH;
	char group[300];
	bool found = false;
	int r;

	if (network)
		snprintf(group, sizeof(group), "network %s", network);
	else if ((r = choose_group(conf, runs[0]->o->ifname, group, sizeof(group))) < 0)
		return r;
	for (size_t i = 0; i < n && !found; i++)
		found = runs[i]->search.phase == TUNE_DONE;
	if (!found) {
		print_text("nothing to save: no rate was found\n");
		return 0;
	}
	return write_tune_conf(conf, group, runs, n);
}

int tune_apply_saved(const char *config_path, const char *statedir, struct netlink *nl,
		     const char *ifname)
{
	g_autoptr(config_t) cfg = config_load_logged(config_path);
	struct reconciler rc = { .nl = nl, .statedir = statedir, .only = ifname };
	struct nm_nets *nets = NULL;
	int r;

	if (!cfg)
		return -EINVAL;
	if (cfg->networks->len) {
		nm_nets_get(&nets);
		rc.nets = &nets->view;
	}
	rc.cfg = cfg;
	r = reconcile_iface(&rc, ifname);
	nm_nets_free(nets);
	return r;
}
