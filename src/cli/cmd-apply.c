// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape apply [IFACE] and wgshape check-config: the configuration, once.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "cli/cli.h"
#include "config/config.h"
#include "util/log.h"
#include "nm/nm.h"
#include "config/reconcile.h"
#include "shape/units.h"

const char apply_usage[] =
	"Usage: wgshape [-c FILE] apply [IFACE]\n"
	"\n"
	"Apply the configuration once: shape every interface a section matches (or only\n"
	"IFACE), and clear interfaces whose shaping came from a section that is gone.\n"
	"Running it again changes nothing. Default FILE: " CONFIG_DEFAULT_PATH "\n";

const char check_config_usage[] =
	"Usage: wgshape [-j] [-c FILE] check-config\n"
	"\n"
	"Validate the configuration (FILE and conf.d/*.conf beside it) and print the\n"
	"effective settings per interface section. Exits 1 if anything was wrong.\n";

int apply_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(config_t) cfg = NULL;
	struct reconciler rc = { .statedir = cli->statedir };
	struct nm_nets *nets = NULL;
	struct link_info link;
	int r;

	if (cli_wants_help(argc, argv)) {
		fputs(apply_usage, stdout);
		return EXIT_OK;
	}
	if (argc > 2) {
		log_err("apply: takes at most one IFACE (see wgshape apply --help)");
		return EXIT_USAGE;
	}
	if (argc == 2 && !ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	rc.only = argc == 2 ? argv[1] : NULL;
	if (!cli_can_net_admin(rc.only))
		return EXIT_FAIL;
	cfg = config_load_logged(cli->config_path);
	if (!cfg)
		return EXIT_FAIL;
	rc.cfg = cfg;
	if (cfg->networks->len) {
		nm_nets_get(&nets);
		rc.nets = nets->nets;
		rc.n_nets = nets->n;
		rc.nets_unknown = !nets->running || nets->settling;
	}
	r = netlink_open(&rc.nl);
	if (r < 0) {
		log_err("netlink: %s", strerror(-r));
		nm_nets_free(nets);
		return EXIT_FAIL;
	}
	if (rc.only) {
		r = netlink_link_get(rc.nl, rc.only, &link);
		if (r < 0)
			log_err("%s: %s", rc.only, r == -ENODEV ? "no such interface" : strerror(-r));
		else if (!config_mentions(cfg, rc.only))
			log_info("%s: no section matches it", rc.only);
		if (r == 0)
			r = reconcile_iface(&rc, rc.only);
	} else {
		r = reconcile_all(&rc);
		if (r > 0)
			r = -EIO;
	}
	netlink_close(rc.nl);
	nm_nets_free(nets);
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}

static const char *dir_name(enum dir_action a)
{
	static const char *const names[] = { [DIR_KEEP] = "keep", [DIR_SET] = "set",
					     [DIR_OFF] = "off" };

	return names[a];
}

int check_config_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(config_t) cfg = NULL;
	g_autoptr(JsonBuilder) j = json_builder_new();
	bool bad;

	if (cli_wants_help(argc, argv)) {
		fputs(check_config_usage, stdout);
		return EXIT_OK;
	}
	if (argc != 1) {
		log_err("check-config: takes no words (see wgshape check-config --help)");
		return EXIT_USAGE;
	}
	cfg = config_load_logged(cli->config_path);
	if (!cfg)
		return EXIT_FAIL;
	bad = cfg->warnings->len > 0;

	json_builder_begin_object(j);
	json_builder_set_member_name(j, "interfaces");
	json_builder_begin_array(j);
	for (guint i = 0; i < cfg->ifaces->len; i++) {
		const struct conf_iface *c = cfg->ifaces->pdata[i];
		g_autofree char *words = NULL;

		g_ptr_array_add(c->words, NULL);
		words = g_strjoinv(" ", (char **)c->words->pdata);
		g_ptr_array_remove_index(c->words, c->words->len - 1);
		if (!cli->json) {
			bool idle = c->req.egress == DIR_KEEP && c->req.ingress == DIR_KEEP;

			printf("[interface %s]  %s%s%s  (%s)%s\n", c->name, words, *words ? " " : "",
			       c->req.opts.has & CAKE_HAS_OVERHEAD ? "" : "overhead auto", c->where,
			       idle ? "  does nothing: no egress or ingress" : "");
			continue;
		}
		json_builder_begin_object(j);
		json_builder_set_member_name(j, "name");
		json_builder_add_string_value(j, c->name);
		json_builder_set_member_name(j, "glob");
		json_builder_add_boolean_value(j, c->glob);
		json_builder_set_member_name(j, "where");
		json_builder_add_string_value(j, c->where);
		json_builder_set_member_name(j, "egress");
		json_builder_add_string_value(j, dir_name(c->req.egress));
		json_builder_set_member_name(j, "egress_rate");
		json_builder_add_int_value(j, (gint64)c->req.egress_rate * 8);
		json_builder_set_member_name(j, "ingress");
		json_builder_add_string_value(j, dir_name(c->req.ingress));
		json_builder_set_member_name(j, "ingress_rate");
		json_builder_add_int_value(j, (gint64)c->req.ingress_rate * 8);
		json_builder_set_member_name(j, "set");
		json_builder_add_string_value(j, words);
		json_builder_set_member_name(j, "enforce");
		json_builder_add_boolean_value(j, c->enforce < 0 ? cfg->enforce : c->enforce);
		json_builder_end_object(j);
	}
	json_builder_end_array(j);
	json_builder_set_member_name(j, "enforce");
	json_builder_add_boolean_value(j, cfg->enforce);
	json_builder_set_member_name(j, "clear_on_exit");
	json_builder_add_boolean_value(j, cfg->clear_on_exit);
	json_builder_set_member_name(j, "warnings");
	json_builder_begin_array(j);
	for (guint i = 0; i < cfg->warnings->len; i++)
		json_builder_add_string_value(j, cfg->warnings->pdata[i]);
	json_builder_end_array(j);
	json_builder_end_object(j);

	if (cli->json) {
		g_autoptr(JsonNode) root = json_builder_get_root(j);
		g_autofree char *out = json_to_string(root, TRUE);

		puts(out);
	} else {
		printf("[daemon]  enforce %s, clear-on-exit %s\n", cfg->enforce ? "yes" : "no",
		       cfg->clear_on_exit ? "yes" : "no");
	}
	return bad ? EXIT_FAIL : EXIT_OK;
}
