// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape set IFACE [egress RATE|off] [ingress RATE|off] [overhead BYTES|auto] ...
 * wgshape set IFACE peer PUBKEY [download RATE|off] [upload RATE|off] ...
 * wgshape set [IFACE] client download RATE|default [server ADDR]
 * (set_args_parse() tells the forms apart; an interface may be named client)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/client.h"
#include "cli/cli.h"
#include "config/config.h"
#include "util/addr.h"
#include "util/log.h"
#include "util/text.h"
#include "netlink/kernel.h"
#include "shape/overhead.h"
#include "shape/cake.h"
#include "shape/peers.h"
#include "shape/units.h"
#include "shape/words.h"

/* "  LABEL          word|word|...", folded after a | so that no line passes column 79. */
static void put_words(const char *label, const char *words)
{
	int col = printf("  %-15s", label);

	while (*words) {
		size_t n = strcspn(words, "|");
		bool last = !words[n];

		if (col + (int)n + !last > 79)
			col = printf("\n%17s", "");
		col += printf("%.*s%s", (int)n, words, last ? "" : "|");
		words += n + !last;
	}
	putchar('\n');
}

/* The words come from the tables that parse them. */
void set_help(void)
{
	static const struct {
		const char *label;
		enum cake_family family;
	} families[] = {
		{ "cell framing", CAKE_WORDS_ATM }, { "tins", CAKE_WORDS_DIFFSERV },
		{ "flow isolation", CAKE_WORDS_FLOW }, { "NAT lookup", CAKE_WORDS_NAT },
		{ "DSCP", CAKE_WORDS_WASH }, { "GSO", CAKE_WORDS_SPLIT_GSO },
		{ "ACK filter", CAKE_WORDS_ACK },
	};
	const struct shape_framing *f;
	char b[160];

	fputs("Usage: wgshape set IFACE [egress RATE|off] [ingress RATE|off] [OPTION]...\n"
	      "       wgshape set IFACE peer PUBKEY [download RATE|off] [upload RATE|off]\n"
	      "                   [OPTION]...\n"
	      "       wgshape set [IFACE] client download RATE|default [server ADDR]\n"
	      "\n"
	      "  egress RATE    cake as IFACE's root qdisc (upload from this host); with\n"
	      "                 peers shaped on their own, the cap for all of them together\n"
	      "  ingress RATE   cake on an IFB fed from IFACE's ingress (download to this host)\n"
	      "  off            remove that direction and put back what was there\n"
	      "  peer PUBKEY download RATE\n"
	      "                 on a server: this WireGuard peer's download, in a class of its\n"
	      "                 own with its own cake or fq_codel (leaf), by destination in\n"
	      "                 its AllowedIPs;\n"
	      "                 peers without one share a class with cake's dual-dsthost\n"
	      "  peer PUBKEY upload RATE\n"
	      "                 on a server: this peer's upload, in a class of its own on\n"
	      "                 IFACE's IFB, by source in its AllowedIPs (cake in ingress\n"
	      "                 mode); ingress RATE is then the cap for all of them together.\n"
	      "                 It works after the peer's line: set it 85-90% of that line's\n"
	      "                 upload. A direction not named stays as it is\n"
	      "  client download RATE|default\n"
	      "                 on a client: ask the server, through the tunnel, to shape this\n"
	      "                 host's download at RATE (or at the server's own rate); prints\n"
	      "                 its answer. A lease: it lapses in minutes unless renewed (the\n"
	      "                 daemon renews it). IFACE may be left out when there is one\n"
	      "                 WireGuard interface. server ADDR: the server's tunnel address\n"
	      "                 (else server = in the configuration, the peer's /32 or /128,\n"
	      "                 the last to answer, or a guess: no answer says which).\n"
	      "                 An interface named client is named as any other: set client\n"
	      "                 egress 85mbit, set client client download 20mbit\n"
	      "\n"
	      "OPTIONs, as tc-cake(8) spells them (of two of a kind, the last counts):\n"
	      "  overhead auto  (default) the tunnel's own overhead: 60 bytes for IPv4 peers,\n"
	      "                 80 for IPv6, plus link-overhead for the link under the tunnel\n"
	      "  overhead BYTES the whole overhead instead; later sets keep it until auto\n"
	      "  raw            no compensation at all, kept as overhead 0 (or: overhead raw)\n"
	      "  link-overhead BYTES\n"
	      "                 what the link under the tunnel adds, on top of overhead auto\n",
	      stdout);
	for (size_t i = 0; (f = shape_framing(i)); i++) {
		int n = snprintf(b, sizeof(b), "link-overhead %d", f->link_overhead);

		if (f->mpu && n > 0 && (size_t)n < sizeof(b))
			n += snprintf(b + n, sizeof(b) - (size_t)n, ", mpu %u", f->mpu);
		printf("  %-15s%s, %s (or: link-overhead %s)\n", f->word, b,
		       cake_word(CAKE_WORDS_ATM, f->atm), f->word);
	}
	fputs("  mpu BYTES      count each packet as at least BYTES\n", stdout);
	put_words("rtt TIME, or", cake_rtt_preset_choices("|", b, sizeof(b)));
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		put_words(families[i].label, cake_word_choices(families[i].family, "|", b, sizeof(b)));
	fputs("  memlimit SIZE  the most memory cake may use\n"
	      "  fwmark MASK    the tin from the packet's mark & MASK (0x hex, or decimal)\n"
	      "  leaf lazy|cake|fq_codel\n"
	      "                 per peer: what a peer's class holds (default lazy: cake while\n"
	      "                 the peer moves traffic, a small fq_codel while it is idle)\n"
	      "RATE as tc: 85mbit, 500kbit, 1gbit, 10mbps (bytes/s). TIME: 100ms, 50us. SIZE: 4m.\n"
	      "Only the options given reach the kernel; on a qdisc wgshape already set, a change\n"
	      "keeps its handle and counters.\n",
	      stdout);
}

/*
 * A peer's rate in one direction: RATE, or off (0). -EINVAL (logged) when
 * it is neither.
 */
static int peer_rate_word(const char *ifname, const char *key, const char *dir, const char *word,
			  uint64_t *rate)
{
	if (!strcmp(word, "off")) {
		*rate = 0;
		return 0;
	}
	if (parse_rate(word, rate) < 0 || !*rate || *rate == PEER_RATE_KEEP) {
		log_err("set %s peer %.8s...: %s: '%s' is not a rate (a number and a unit, "
			"e.g. 20mbit) or off", ifname, key, dir, word);
		return -EINVAL;
	}
	return 0;
}

/*
 * peer PUBKEY [download RATE|off] [upload RATE|off] [cake options]: one
 * peer's download, shaped on IFACE's egress in a class of its own, and its
 * upload, in a class of its own on IFACE's IFB; a direction not named stays
 * as it is. argv starts at "peer".
 */
static int peer_words(const char *ifname, int argc, char **argv, struct shape_request *req,
		      struct peer_want *w)
{
	char err[256];
	int first = 2;

	memset(w, 0, sizeof(*w));
	if (argc < 2 || wg_key_from_base64(argv[1], w->key) < 0) {
		log_err("set %s peer: '%s' is not a WireGuard public key (44 characters of base64, "
			"as wg shows it)", ifname, argc < 2 ? "" : argv[1]);
		return -EINVAL;
	}
	w->rate = PEER_RATE_KEEP;
	w->upload = PEER_RATE_KEEP;
	while (first + 1 < argc &&
	       (!strcmp(argv[first], "download") || !strcmp(argv[first], "upload"))) {
		uint64_t *to = !strcmp(argv[first], "download") ? &w->rate : &w->upload;

		if (*to != PEER_RATE_KEEP) {
			log_err("set %s peer %.8s...: %s given twice", ifname, argv[1], argv[first]);
			return -EINVAL;
		}
		if (peer_rate_word(ifname, argv[1], argv[first], argv[first + 1], to) < 0)
			return -EINVAL;
		first += 2;
	}
	if (first == 2) {
		log_err("set %s peer %.8s...: needs download RATE|off or upload RATE|off", ifname,
			argv[1]);
		return -EINVAL;
	}
	if (shape_words_parse(argc - first, argv + first, req, err, sizeof(err)) < 0) {
		log_err("set %s peer %.8s...: %s", ifname, argv[1], err);
		return -EINVAL;
	}
	if (req->egress != DIR_KEEP || req->ingress != DIR_KEEP || req->overhead_auto ||
	    (req->opts.has & CAKE_HAS_OVERHEAD)) {
		log_err("set %s peer %.8s...: egress, ingress and the overhead are the interface's, "
			"not a peer's: set them on their own", ifname, argv[1]);
		return -EINVAL;
	}
	if ((!w->rate || w->rate == PEER_RATE_KEEP) && (!w->upload || w->upload == PEER_RATE_KEEP) &&
	    argc > first) {
		log_err("set %s peer %.8s...: off takes no options", ifname, argv[1]);
		return -EINVAL;
	}
	w->opts = req->opts;
	memset(&req->opts, 0, sizeof(req->opts));
	snprintf(w->source, sizeof(w->source), "set");
	for (int i = first, used = 0; i < argc && used < (int)sizeof(w->options); i++)
		used += snprintf(w->options + used, sizeof(w->options) - (size_t)used, "%s%s",
				 i > first ? " " : "", argv[i]);
	req->peers_action = PEERS_ONE;
	req->peers = w;
	req->n_peers = 1;
	return 0;
}

/* The one WireGuard interface there is, for `set client download` without IFACE. */
static int only_wireguard(struct netlink *nl, char *out, size_t size)
{
	struct link_info *links = NULL;
	size_t n = 0, found = 0;
	char names[160] = "";
	int used = 0;

	if (netlink_link_list(nl, &links, &n) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(links[i].kind, "wireguard") != 0)
			continue;
		if (found++ == 0)
			snprintf(out, size, "%s", links[i].name);
		if (used >= 0 && (size_t)used < sizeof(names))
			used += snprintf(names + used, sizeof(names) - (size_t)used, "%s%s",
					 found > 1 ? ", " : "", TEXT_QUOTE(links[i].name));
	}
	free(links);
	if (found == 1)
		return 0;
	if (found)
		log_err("set client download: several WireGuard interfaces (%s): name one, e.g. "
			"wgshape set IFACE client download RATE", names);
	else
		log_err("set client download: no WireGuard interface: name one (wgshape set IFACE "
			"client download RATE)");
	return -ENODEV;
}

/*
 * [IFACE] client download RATE|default [server ADDR]: ask the server for this
 * host's download rate and print its answer. argv starts at "client".
 */
/* client download RATE|default [server ADDR]: -EINVAL (logged) when the words are wrong. */
static int client_words(int argc, char **argv, uint64_t *rate, const char **server)
{
	if (argc < 3 || strcmp(argv[1], "download") != 0) {
		log_err("set client: needs download RATE|default");
		return -EINVAL;
	}
	if (strcmp(argv[2], "default") != 0 && (parse_rate(argv[2], rate) < 0 || !*rate)) {
		log_err("set client download: '%s' is not a rate (a number and a unit, e.g. 20mbit) "
			"or default", TEXT_QUOTE(argv[2]));
		return -EINVAL;
	}
	for (int i = 3; i < argc; i += 2) {
		uint8_t a[16];
		int family;

		if (strcmp(argv[i], "server") != 0 || i + 1 >= argc) {
			log_err("set client download: '%s': expected server ADDR", TEXT_QUOTE(argv[i]));
			return -EINVAL;
		}
		*server = argv[i + 1];
		if (addr_parse(*server, &family, a) < 0) {
			log_err("set client download: server '%s' is not an IPv4 or IPv6 address (the "
				"server's address inside the tunnel)", TEXT_QUOTE(*server));
			return -EINVAL;
		}
	}
	return 0;
}

static int set_client(const char *ifname, int argc, char **argv, const struct cli *cli)
{
	g_autoptr(config_t) cfg = NULL;
	const char *server = NULL, *answered = NULL, *addr, *where = NULL;
	char iface[IFNAME_SIZE], why[192], said[256], want[32], from[320];
	struct rate_record old, rec;
	struct rate_server srv;
	struct netlink *nl;
	uint64_t rate = 0;
	int r;

	if (client_words(argc, argv, &rate, &server) < 0)
		return EXIT_USAGE;
	cfg = cli_config_optional(cli); /* for the port */
	if (!cfg)
		return EXIT_FAIL;
	if (!cfg->rate_port) {
		log_err("set client: the configuration turns the rate channel off ([daemon] "
			"rate-port = 0)");
		return EXIT_FAIL;
	}
	if (!cli_can_net_admin(ifname ? ifname : "the tunnel") || cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	r = ifname ? (snprintf(iface, sizeof(iface), "%s", ifname), 0) :
		     only_wireguard(nl, iface, sizeof(iface));
	if (r == 0) {
		if (!server)
			server = config_client_server(cfg, iface, &where);
		/* an address that answered is known (still a peer's: checked below) */
		if (rate_record_load(cli->statedir, iface, &old) == 0 && old.status != RATE_NONE)
			answered = old.server;
		r = rate_client_find_server(nl, iface, server, answered, &srv, why, sizeof(why));
		if (r < 0)
			log_err("set %s client: %s", iface, why);
	}
	netlink_close(nl);
	if (r < 0)
		return EXIT_FAIL;
	addr = srv.addr;
	r = rate_client_request(cli->statedir, iface, addr, cfg->rate_port, rate, RATE_SOURCE_SET,
				&rec);
	if (r < 0 && r != -ETIMEDOUT) {
		log_err("set %s client: asking %s: %s", iface, addr,
			r == -ENOKEY ? "no peer of the tunnel has that address in its AllowedIPs" :
				       strerror(-r));
		return EXIT_FAIL;
	}
	format_rate(want, sizeof(want), rate);
	rate_record_describe(&rec, said, sizeof(said));
	printf("%s: asked %s for download %s: %s%s\n", iface, addr,
	       rate ? want : "at the server's rate", said,
	       r < 0 ? " (is wgshape daemon running there, with the rate port open on the "
		       "tunnel?)" : "");
	/* No answer: say where the address came from, and how to name another. */
	if (r < 0) {
		rate_server_describe(&srv, from, sizeof(from));
		if (where)
			log_err("set %s client: %s (server = at %s)", iface, from, where);
		else if (srv.how == RATE_SERVER_GIVEN)
			log_err("set %s client: %s", iface, from);
		else
			log_err("set %s client: %s; if the server is elsewhere, name its tunnel "
				"address: wgshape set %s client download %s server ADDR, or "
				"server = ADDR in [interface %s]",
				iface, from, iface, TEXT_QUOTE(argv[2]), iface);
	}
	return r < 0 || rec.status == RATE_REFUSED || rec.status == RATE_FAILED ||
			       rec.status == RATE_UNSUPPORTED ?
		       EXIT_FAIL :
		       EXIT_OK;
}

int set_args_parse(int argc, char **argv, struct set_args *out, char *err, size_t errlen)
{
	if (argc >= 2 && !strcmp(argv[0], "client") && !strcmp(argv[1], "download")) {
		*out = (struct set_args){ .form = SET_CLIENT, .ifname = NULL, .at = 0 };
		return 0;
	}
	if (argc == 1 && !strcmp(argv[0], "client")) {
		snprintf(err, errlen, "'client' alone: ask the server with IFACE client download "
			 "RATE, or shape an interface named client with client egress RATE (see "
			 "wgshape set --help)");
		return -EINVAL;
	}
	if (argc < 2) {
		snprintf(err, errlen, "needs IFACE and what to set, e.g. egress 85mbit (see wgshape "
			 "set --help)");
		return -EINVAL;
	}
	*out = (struct set_args){
		.form = !strcmp(argv[1], "client") ? SET_CLIENT :
			!strcmp(argv[1], "peer")   ? SET_PEER :
						     SET_SHAPE,
		.ifname = argv[0],
		.at = 1,
	};
	return 0;
}

int set_main(int argc, char **argv, const struct cli *cli)
{
	struct shape_request req;
	struct peer_want peer;
	struct set_args a;
	struct netlink *nl;
	char err[256];
	int r;

	if (set_args_parse(argc - 1, argv + 1, &a, err, sizeof(err)) < 0) {
		log_err("set: %s", err);
		return EXIT_USAGE;
	}
	argc -= 1 + a.at;
	argv += 1 + a.at;
	if (a.ifname && !ifname_ok_or_say(a.ifname))
		return EXIT_USAGE;
	if (a.form == SET_CLIENT)
		return set_client(a.ifname, argc, argv, cli);
	if (a.form == SET_PEER) {
		if (peer_words(a.ifname, argc, argv, &req, &peer) < 0)
			return EXIT_USAGE;
	} else if (shape_words_parse(argc, argv, &req, err, sizeof(err)) < 0) {
		log_err("set %s: %s", a.ifname, err);
		return EXIT_USAGE;
	}
	if (!cli_can_net_admin(a.ifname))
		return EXIT_FAIL;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	r = shape_set(nl, cli->statedir, a.ifname, &req);
	netlink_close(nl);
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}
