// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every key of wgshape.conf, one row each: the sections it is a key of, its
 * typed parser and where the value goes (as networkd's .gperf rows). A
 * parser says what it expected in one wording; parse.c writes the warning.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config/internal.h"
#include "shape/cake.h"
#include "shape/peers.h"
#include "shape/units.h"
#include "shape/words.h"
#include "util/addr.h"
#include "util/ifname.h"

/* yes/no as GKeyFile's booleans and systemd's: yes, no, true, false, on, off, 1, 0. */
static int bool_of(const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
		if (!g_ascii_strcasecmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!g_ascii_strcasecmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* The one "not yes or no" (or "not yes, no or ptm" where a key takes one word more). */
static int not_bool(const struct conf_key *k, struct conf_value *v)
{
	if (k->more)
		snprintf(v->why, sizeof(v->why), "not yes, no or %s", k->more);
	else
		snprintf(v->why, sizeof(v->why), "not yes or no");
	return -EINVAL;
}

static int expected(const struct conf_key *k, struct conf_value *v, const char *what)
{
	g_strlcpy(v->why, k->expect ? k->expect : what, sizeof(v->why));
	return -EINVAL;
}

static int parse_bool(const struct conf_key *k, struct conf_value *v, void *dst)
{
	bool b;

	if (bool_of(v->text, &b) < 0)
		return not_bool(k, v);
	*(bool *)dst = b;
	return 0;
}

/* yes/no into an int that is -1 while not given. */
static int parse_tristate(const struct conf_key *k, struct conf_value *v, void *dst)
{
	bool b;

	if (bool_of(v->text, &b) < 0)
		return not_bool(k, v);
	*(int *)dst = b;
	return 0;
}

/* A positive rate in tc's units, into bytes/s. */
static int parse_rate_key(const struct conf_key *k, struct conf_value *v, void *dst)
{
	uint64_t rate;

	if (parse_rate(v->text, &rate) < 0 || !rate)
		return expected(k, v, "not a rate (e.g. 20mbit)");
	*(uint64_t *)dst = rate;
	return 0;
}

/* A decimal number from lo to hi, into an unsigned int. */
static int parse_uint(const struct conf_key *k, struct conf_value *v, void *dst)
{
	guint64 n;

	if (!g_ascii_string_to_unsigned(v->text, 10, k->lo, k->hi, &n, NULL)) {
		if (k->expect)
			return expected(k, v, NULL);
		snprintf(v->why, sizeof(v->why),
			 "not a number of seconds from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT,
			 (guint64)k->lo, (guint64)k->hi);
		return -EINVAL;
	}
	*(unsigned int *)dst = (unsigned int)n;
	return 0;
}

static int parse_abs_path(const struct conf_key *k, struct conf_value *v, void *dst)
{
	char **s = dst;

	if (!g_path_is_absolute(v->text))
		return expected(k, v, "not an absolute path");
	g_free(*s);
	*s = g_strdup(v->text);
	return 0;
}

/* An IPv4 or IPv6 literal, kept as inet_ntop writes it. */
static int parse_addr(const struct conf_key *k, struct conf_value *v, void *dst)
{
	char canon[INET6_ADDRSTRLEN];
	char **s = dst;
	uint8_t a[16];
	int family;

	if (addr_parse(v->text, &family, a) < 0 || !inet_ntop(family, a, canon, sizeof(canon)))
		return expected(k, v, "not an IPv4 or IPv6 address");
	g_free(*s);
	*s = g_strdup(canon);
	return 0;
}

/* A [peer]'s public-key: dst is the struct conf_peer (its key and that it has one). */
static int parse_peer_key(const struct conf_key *k, struct conf_value *v, void *dst)
{
	struct conf_peer *p = dst;

	if (wg_key_from_base64(v->text, p->key) < 0)
		return expected(k, v, "not a WireGuard key (44 characters of base64, as wg shows it)");
	p->has_key = true;
	return 0;
}

/* a;b, any of which matches (GKeyFile's list syntax: \; for a ';'), blanks around each dropped. */
static int read_list(const struct conf_key *k, struct conf_value *v, char ***out)
{
	g_auto(GStrv) values = NULL;

	(void)k;
	if (!v->lone_backslash)
		values = g_key_file_get_string_list(v->kf, v->group, v->key, NULL, NULL);
	if (!values || !values[0]) {
		if (values)
			g_strlcpy(v->why, "no value", sizeof(v->why));
		return -ENODATA; /* parse.c says why GKeyFile gave no list */
	}
	for (char **s = values; *s; s++)
		g_strstrip(*s);
	*out = g_steal_pointer(&values);
	return 0;
}

static int parse_list(const struct conf_key *k, struct conf_value *v, void *dst)
{
	char **values = NULL, ***list = dst;
	int r = read_list(k, v, &values);

	if (r < 0)
		return r;
	g_strfreev(*list);
	*list = values;
	return 0;
}

/* A list of interface names and globs (wg*). */
static int parse_globs(const struct conf_key *k, struct conf_value *v, void *dst)
{
	g_auto(GStrv) values = NULL;
	char ***list = dst;
	int r = read_list(k, v, &values);

	if (r < 0)
		return r;
	for (char **s = values; *s; s++) {
		if (!ifname_is_valid(*s) && !strpbrk(*s, "*?")) {
			snprintf(v->why, sizeof(v->why), "not an interface name or glob");
			v->bad = g_strdup(*s);
			return -EINVAL;
		}
	}
	g_strfreev(*list);
	*list = g_steal_pointer(&values);
	return 0;
}

/* Words for set's parser, checked alone as set checks them, then added to the section's. */
static int add_words(struct conf_value *v, const char *w0, const char *w1)
{
	const char *w[2] = { w0, w1 };
	struct shape_request probe;
	int n = w1 ? 2 : 1;

	if (shape_words_parse(n, (char **)w, &probe, v->why, sizeof(v->why)) < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		g_ptr_array_add(v->words, g_strdup(w[i]));
	return 0;
}

/* key = value is set's "key value" (egress = 20mbit). */
static int parse_option(const struct conf_key *k, struct conf_value *v, void *dst)
{
	(void)dst;
	return add_words(v, k->key, v->text);
}

/* The value is set's word, one of a family (diffserv = diffserv4). */
static int parse_choice(const struct conf_key *k, struct conf_value *v, void *dst)
{
	char names[160];

	(void)dst;
	if (cake_word_value(k->family, v->text) < 0) {
		snprintf(v->why, sizeof(v->why), "not one of %s",
			 cake_word_choices(k->family, ", ", names, sizeof(names)));
		return -EINVAL;
	}
	return add_words(v, v->text, NULL);
}

/* yes/no (or the row's one word more) as set's word of a family (nat = yes: nat). */
static int parse_switch(const struct conf_key *k, struct conf_value *v, void *dst)
{
	bool b;

	(void)dst;
	if (k->more && !strcmp(v->text, k->more))
		return add_words(v, cake_word(k->family, k->more_value), NULL);
	if (bool_of(v->text, &b) < 0)
		return not_bool(k, v);
	return add_words(v, cake_word(k->family, b), NULL);
}

#define SHAPE_AT(field) offsetof(struct conf_section, field)
#define PEER_AT(field) offsetof(struct conf_peer, field)
#define DAEMON_AT(field) offsetof(struct config, field)

/* The first row for a key and a kind of section wins; man/wgshape.conf.5 explains each. */
static const struct conf_key keys[] = {
	/* how to shape: set's words */
	{ "egress", SEC_SHAPE, parse_option },
	{ "ingress", SEC_SHAPE, parse_option },
	{ "overhead", SEC_SHAPE, parse_option },
	{ "link-overhead", SEC_SHAPE, parse_option },
	/* cake's options, a peer's too */
	{ "mpu", SEC_SHAPE | SEC_PEER, parse_option },
	{ "rtt", SEC_SHAPE | SEC_PEER, parse_option },
	{ "memlimit", SEC_SHAPE | SEC_PEER, parse_option },
	{ "fwmark", SEC_SHAPE | SEC_PEER, parse_option },
	/* what a per-peer class holds */
	{ "leaf", SEC_SHAPE | SEC_PEER, parse_option },
	{ "diffserv", SEC_SHAPE | SEC_PEER, parse_choice, .family = CAKE_WORDS_DIFFSERV },
	{ "flow-isolation", SEC_SHAPE | SEC_PEER, parse_choice, .family = CAKE_WORDS_FLOW },
	{ "nat", SEC_SHAPE | SEC_PEER, parse_switch, .family = CAKE_WORDS_NAT },
	{ "wash", SEC_SHAPE | SEC_PEER, parse_switch, .family = CAKE_WORDS_WASH },
	{ "split-gso", SEC_SHAPE | SEC_PEER, parse_switch, .family = CAKE_WORDS_SPLIT_GSO },
	{ "ack-filter", SEC_SHAPE | SEC_PEER, parse_switch, .family = CAKE_WORDS_ACK,
	  .more = "aggressive", .more_value = CAKE_ACKF_AGGRESSIVE },
	{ "atm", SEC_SHAPE | SEC_PEER, parse_switch, .family = CAKE_WORDS_ATM, .more = "ptm",
	  .more_value = CAKE_ATMC_PTM },
	{ "enforce", SEC_SHAPE, parse_tristate, SHAPE_AT(enforce) },

	/* continuous adaptation */
	{ "adapt", SEC_SHAPE, parse_bool, SHAPE_AT(adapt.on) },
	{ "adapt-log", SEC_SHAPE, parse_abs_path, SHAPE_AT(adapt.log) },
	{ "egress-min", SEC_SHAPE, parse_rate_key, SHAPE_AT(adapt.egress_min) },
	{ "egress-max", SEC_SHAPE, parse_rate_key, SHAPE_AT(adapt.egress_max) },
	{ "ingress-min", SEC_SHAPE, parse_rate_key, SHAPE_AT(adapt.ingress_min) },
	{ "ingress-max", SEC_SHAPE, parse_rate_key, SHAPE_AT(adapt.ingress_max) },
	/* in an [interface] without download =, the old spelling of client-download-min/-max */
	{ "download-min", SEC_SHAPE, parse_rate_key, SHAPE_AT(adapt.download_min) },
	{ "download-max", SEC_SHAPE, parse_rate_key, SHAPE_AT(adapt.download_max) },

	/* a client: the rate to ask its server for, and where the server is */
	{ "download", SEC_SHAPE, parse_rate_key, SHAPE_AT(net.download) },
	{ "server", SEC_SHAPE, parse_addr, SHAPE_AT(net.server),
	  .expect = "not an IPv4 or IPv6 address (the server's address inside the tunnel)" },

	/* a server: its policy for what its clients ask */
	{ "client-download", SEC_IFACE, parse_tristate, SHAPE_AT(rate.client_download) },
	{ "client-download-min", SEC_IFACE, parse_rate_key, SHAPE_AT(rate.min) },
	{ "client-download-max", SEC_IFACE, parse_rate_key, SHAPE_AT(rate.max) },

	/* when and where a [network] profile applies */
	{ "connection-id", SEC_NETWORK, parse_list, SHAPE_AT(net.match.ids), .list = true },
	{ "connection-uuid", SEC_NETWORK, parse_list, SHAPE_AT(net.match.uuids), .list = true },
	{ "ssid", SEC_NETWORK, parse_list, SHAPE_AT(net.match.ssids), .list = true },
	{ "connection-type", SEC_NETWORK, parse_list, SHAPE_AT(net.match.types), .list = true },
	{ "interface", SEC_NETWORK, parse_globs, SHAPE_AT(net.tunnels), .list = true },

	/* a [peer]: which, where, its download and upload and its policy (over its interface's) */
	{ "public-key", SEC_PEER, parse_peer_key, 0 },
	{ "interface", SEC_PEER, parse_globs, PEER_AT(ifaces), .list = true },
	{ "download", SEC_PEER, parse_rate_key, PEER_AT(download) },
	{ "upload", SEC_PEER, parse_rate_key, PEER_AT(upload) },
	{ "adapt", SEC_PEER, parse_bool, PEER_AT(adapt) },
	{ "adapt-min", SEC_PEER, parse_rate_key, PEER_AT(adapt_min) },
	{ "adapt-max", SEC_PEER, parse_rate_key, PEER_AT(adapt_max) },
	{ "probe", SEC_PEER, parse_addr, PEER_AT(probe),
	  .expect = "not an IPv4 or IPv6 address (the peer's address inside the tunnel)" },
	{ "client-download", SEC_PEER, parse_tristate, PEER_AT(rate.client_download) },
	{ "client-download-min", SEC_PEER, parse_rate_key, PEER_AT(rate.min) },
	{ "client-download-max", SEC_PEER, parse_rate_key, PEER_AT(rate.max) },
	{ "download-min", SEC_PEER, parse_rate_key, PEER_AT(rate.min),
	  .renamed = "client-download-min" },
	{ "download-max", SEC_PEER, parse_rate_key, PEER_AT(rate.max),
	  .renamed = "client-download-max" },

	/* [daemon] */
	{ "enforce", SEC_DAEMON, parse_bool, DAEMON_AT(enforce) },
	{ "clear-on-exit", SEC_DAEMON, parse_bool, DAEMON_AT(clear_on_exit) },
	{ "rate-port", SEC_DAEMON, parse_uint, DAEMON_AT(rate_port), 0, 65535,
	  .expect = "not a port number (0 to 65535, 0: no rate channel)" },
	{ "client-lease", SEC_DAEMON, parse_uint, DAEMON_AT(client_lease), 3, 86400 },
	{ "metrics-file", SEC_DAEMON, parse_abs_path, DAEMON_AT(metrics_file) },
	{ "metrics-every", SEC_DAEMON, parse_uint, DAEMON_AT(metrics_every), 1, 3600 },
	{ "leaf-idle", SEC_DAEMON, parse_uint, DAEMON_AT(leaf_idle), 1, 86400 },
};

const struct conf_key *conf_key_find(unsigned int sec, const char *key)
{
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
		if ((keys[i].sections & sec) && !strcmp(keys[i].key, key))
			return &keys[i];
	return NULL;
}

static bool is_cake_word(const struct conf_key *k)
{
	return k->parse == parse_option || k->parse == parse_choice || k->parse == parse_switch;
}

char *conf_keys_named(unsigned int sec)
{
	GString *s = g_string_new(NULL);
	const char *last = NULL;

	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		if (!(keys[i].sections & sec) || is_cake_word(&keys[i]))
			continue;
		if (last)
			g_string_append_printf(s, "%s, ", last);
		last = keys[i].key;
	}
	if (last)
		g_string_append(s, last);
	return g_string_free(s, false);
}
