// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape apply [IFACE] and wgshape check-config: the configuration, once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "cli/cli.h"
#include "config/config.h"
#include "util/log.h"
#include "nm/nm.h"
#include "apply/reconcile.h"
#include "shape/peers.h"
#include "shape/units.h"
#include "util/print.h"

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
	"effective settings per interface, peer and network section. Exits 1 if\n"
	"anything was wrong.\n";

int apply_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(config_t) cfg = NULL;
	struct reconciler rc = { .statedir = cli->statedir };
	struct nm_nets *nets = NULL;
	struct link_info link;
	int r;

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
		rc.nets = &nets->view;
	}
	if (cli_netlink_open(&rc.nl) < 0) {
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

/* The rate channel's policy keys of a section, if it has any. */
static void check_config_rate(const struct conf_rate *r)
{
	char b[UNITS_BUFSZ];

	if (r->client_download < 0 && !r->min && !r->max)
		return;
	print_open_object("client_download");
	if (r->client_download >= 0)
		print_bool("allowed", "  client-download %s", r->client_download);
	format_rate(b, sizeof(b), r->min);
	print_uint_as("min", r->min ? "  client-download-min %s" : NULL, r->min * 8, b);
	format_rate(b, sizeof(b), r->max);
	print_uint_as("max", r->max ? "  client-download-max %s" : NULL, r->max * 8, b);
	print_text("\n");
	print_close_object();
}

/* adapt = yes and each adapted direction's range. */
static void check_config_adapt(const struct conf_section *c)
{
	static const char *const dirs[] = { "egress", "ingress", "download" };
	const struct conf_adapt *a = &c->adapt;
	const uint64_t range[][2] = { { a->egress_min, a->egress_max },
				      { a->ingress_min, a->ingress_max },
				      { a->download_min, a->download_max } };
	char lo[UNITS_BUFSZ], hi[UNITS_BUFSZ];

	if (!a->on)
		return;
	print_open_object("adapt");
	print_text("  adapt");
	for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
		if (!range[i][1])
			continue;
		format_rate(lo, sizeof(lo), range[i][0]);
		format_rate(hi, sizeof(hi), range[i][1]);
		print_open_object(dirs[i]);
		print_text(" %s", dirs[i]);
		print_uint_as("min", " %s", range[i][0] * 8, lo);
		print_uint_as("max", " .. %s", range[i][1] * 8, hi);
		print_close_object();
	}
	if (a->log)
		print_string("log", ", log %s", a->log);
	print_text("\n");
	print_close_object();
}

static void check_config_iface(const struct config *cfg, const struct conf_section *c)
{
	bool idle = c->req.egress == DIR_KEEP && c->req.ingress == DIR_KEEP &&
		    c->rate.client_download != 1;
	g_autofree char *words = NULL;

	g_ptr_array_add(c->words, NULL);
	words = g_strjoinv(" ", (char **)c->words->pdata);
	g_ptr_array_remove_index(c->words, c->words->len - 1);
	print_open_object(NULL);
	print_string("name", "[interface %s]", c->name);
	print_bool("glob", NULL, c->glob);
	print_string("set", "  %s", words);
	print_text("%s%s", *words ? " " : "",
		   c->req.opts.has & CAKE_HAS_OVERHEAD ? "" : "overhead auto");
	print_string("where", "  (%s)", c->where);
	print_text("%s\n", idle ? "  does nothing: no egress or ingress" : "");
	check_config_rate(&c->rate);
	check_config_adapt(c);
	print_string("egress", NULL, dir_name(c->req.egress));
	print_uint("egress_rate", NULL, c->req.egress_rate * 8);
	print_string("ingress", NULL, dir_name(c->req.ingress));
	print_uint("ingress_rate", NULL, c->req.ingress_rate * 8);
	print_bool("enforce", NULL, c->enforce < 0 ? cfg->enforce : c->enforce);
	print_close_object();
}

static void check_config_peer(const struct conf_peer *p)
{
	g_autofree char *words = NULL, *ifaces = NULL;
	char key[45], rate[UNITS_BUFSZ], up[UNITS_BUFSZ];

	g_ptr_array_add(p->words, NULL);
	words = g_strjoinv(" ", (char **)p->words->pdata);
	g_ptr_array_remove_index(p->words, p->words->len - 1);
	ifaces = p->ifaces ? g_strjoinv(", ", p->ifaces) : g_strdup("");
	wg_key_to_base64(p->key, key);
	format_rate(rate, sizeof(rate), p->download);
	format_rate(up, sizeof(up), p->upload);
	print_open_object(NULL);
	print_string("name", "[peer %s]", p->name);
	print_string("public_key", "  %s", key);
	print_string("interface", *ifaces ? " on %s" : " on every WireGuard interface that has it",
		     ifaces);
	print_uint_as("download", p->download ? ": download %s" : ": no download of its own",
		      p->download * 8, rate);
	print_uint_as("upload", p->upload ? ", upload %s" : NULL, p->upload * 8, up);
	print_string("options", *words ? " %s" : NULL, words);
	print_string("where", "  (%s)\n", p->where);
	check_config_rate(&p->rate);
	print_close_object();
}

/* A list key of a [network] profile: "  KEY a, b" in text, an array in JSON; none when empty. */
static void check_config_list(const char *key, const char *text_key, char **v)
{
	if (!v || !*v)
		return;
	print_open_array(key);
	print_text("  %s", text_key);
	for (size_t i = 0; v[i]; i++)
		print_string(PRINT_ELEM, i ? ", %s" : " %s", v[i]);
	print_close_array();
}

static void check_config_network(const struct conf_section *c)
{
	const struct conf_network *n = &c->net;
	g_autofree char *words = NULL;
	char rate[UNITS_BUFSZ];

	g_ptr_array_add(c->words, NULL);
	words = g_strjoinv(" ", (char **)c->words->pdata);
	g_ptr_array_remove_index(c->words, c->words->len - 1);
	format_rate(rate, sizeof(rate), n->download);
	print_open_object(NULL);
	print_string("name", "[network %s]", c->name);
	print_bool("fallback", NULL, n->match.any);
	check_config_list("interface", "interface", n->tunnels);
	check_config_list("connection_id", "connection-id", n->match.ids);
	check_config_list("connection_uuid", "connection-uuid", n->match.uuids);
	check_config_list("ssid", "ssid", n->match.ssids);
	check_config_list("connection_type", "connection-type", n->match.types);
	print_string("set", *words ? "  %s" : NULL, words);
	print_uint_as("download", n->download ? "  download %s" : NULL, n->download * 8, rate);
	if (n->server)
		print_string("server", "  server %s", n->server);
	print_string("where", "  (%s)\n", c->where);
	check_config_adapt(c);
	print_close_object();
}

int check_config_main(int argc, char **argv, const struct cli *cli)
{
	g_autoptr(config_t) cfg = NULL;

	if (argc != 1) {
		log_err("check-config: takes no words; options go before the command "
			"(wgshape -c FILE check-config; see wgshape check-config --help)");
		return EXIT_USAGE;
	}
	cfg = config_load_logged(cli->config_path);
	if (!cfg)
		return EXIT_FAIL;

	if (print_begin(cli->json) < 0)
		return EXIT_FAIL;
	print_open_object(NULL);
	print_open_array("interfaces");
	for (guint i = 0; i < cfg->ifaces->len; i++)
		check_config_iface(cfg, cfg->ifaces->pdata[i]);
	print_close_array();
	print_open_array("peers");
	for (guint i = 0; i < cfg->peers->len; i++)
		check_config_peer(cfg->peers->pdata[i]);
	print_close_array();
	print_open_array("networks");
	for (guint i = 0; i < cfg->networks->len; i++)
		check_config_network(cfg->networks->pdata[i]);
	print_close_array();
	print_bool("enforce", "[daemon]  enforce %s", cfg->enforce);
	print_bool("clear_on_exit", ", clear-on-exit %s", cfg->clear_on_exit);
	print_uint("rate_port", ", rate-port %" PRIu64, cfg->rate_port);
	print_uint("client_lease", ", client-lease %" PRIu64 " s", cfg->client_lease);
	if (cfg->metrics_file) {
		print_string("metrics_file", ", metrics-file %s", cfg->metrics_file);
		print_uint("metrics_every", " every %" PRIu64 " s", cfg->metrics_every);
	}
	print_text("\n");
	print_open_array("warnings");
	for (guint i = 0; i < cfg->warnings->len; i++)
		print_string(PRINT_ELEM, NULL, cfg->warnings->pdata[i]);
	print_close_array();
	print_close_object();
	print_end();
	return cfg->warnings->len > 0 ? EXIT_FAIL : EXIT_OK;
}
