// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wgshape set IFACE [egress RATE|off] [ingress RATE|off] [overhead BYTES|auto] ...
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "netlink.h"
#include "overhead.h"
#include "units.h"

const char set_usage[] =
	"Usage: wgshape set IFACE [egress RATE|off] [ingress RATE|off]\n"
	"                   [overhead BYTES|auto] [link-overhead BYTES] [mpu BYTES] [rtt TIME]\n"
	"                   [besteffort|diffserv3|diffserv4|diffserv8|precedence]\n"
	"                   [nat|nonat] [wash|nowash]\n"
	"                   [ack-filter|ack-filter-aggressive|no-ack-filter] [memlimit SIZE]\n"
	"\n"
	"  egress RATE    cake as IFACE's root qdisc (upload from this host)\n"
	"  ingress RATE   cake on an IFB fed from IFACE's ingress (download to this host)\n"
	"  off            remove that direction and put back what was there\n"
	"  overhead auto  (default) the tunnel's own overhead: 60 bytes for IPv4 peers,\n"
	"                 80 for IPv6, plus link-overhead for the link under the tunnel\n"
	"RATE as tc: 85mbit, 500kbit, 1gbit, 10mbps (bytes/s). TIME: 100ms, 50us. SIZE: 4m.\n"
	"Only the options given reach the kernel; on a qdisc wgshape already set, a change\n"
	"keeps its handle and counters.\n";

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_direction(const char *word, const char *val, enum dir_action *act,
			   uint64_t *rate, char *err, size_t errlen)
{
	if (!val)
		return bad(err, errlen, "%s: missing RATE or off", word);
	if (!strcmp(val, "off")) {
		*act = DIR_OFF;
		return 0;
	}
	if (parse_rate(val, rate) < 0)
		return bad(err, errlen, "%s: '%s' is not a rate (a number and a unit, e.g. 85mbit)",
			   word, val);
	*act = DIR_SET;
	return 0;
}

/* Words that stand alone and set one option to one value. */
static const struct {
	const char *word;
	uint32_t has;
	int value;
} flags[] = {
	{ "besteffort", CAKE_HAS_DIFFSERV, CAKE_DS_BESTEFFORT },
	{ "diffserv3", CAKE_HAS_DIFFSERV, CAKE_DS_DIFFSERV3 },
	{ "diffserv4", CAKE_HAS_DIFFSERV, CAKE_DS_DIFFSERV4 },
	{ "diffserv8", CAKE_HAS_DIFFSERV, CAKE_DS_DIFFSERV8 },
	{ "precedence", CAKE_HAS_DIFFSERV, CAKE_DS_PRECEDENCE },
	{ "nat", CAKE_HAS_NAT, 1 },
	{ "nonat", CAKE_HAS_NAT, 0 },
	{ "wash", CAKE_HAS_WASH, 1 },
	{ "nowash", CAKE_HAS_WASH, 0 },
	{ "ack-filter", CAKE_HAS_ACK_FILTER, CAKE_ACKF_FILTER },
	{ "ack-filter-aggressive", CAKE_HAS_ACK_FILTER, CAKE_ACKF_AGGRESSIVE },
	{ "no-ack-filter", CAKE_HAS_ACK_FILTER, CAKE_ACKF_NONE },
};

static bool parse_flag(const char *word, struct cake_opts *o)
{
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (strcmp(word, flags[i].word) != 0)
			continue;
		o->has |= flags[i].has;
		switch (flags[i].has) {
		case CAKE_HAS_DIFFSERV:
			o->diffserv = (uint32_t)flags[i].value;
			break;
		case CAKE_HAS_NAT:
			o->nat = flags[i].value;
			break;
		case CAKE_HAS_WASH:
			o->wash = flags[i].value;
			break;
		case CAKE_HAS_ACK_FILTER:
			o->ack_filter = (uint32_t)flags[i].value;
			break;
		}
		return true;
	}
	return false;
}

int set_args_parse(int argc, char **argv, struct shape_request *req, char *err, size_t errlen)
{
	struct shape_request r = { 0 };
	struct cake_opts *o = &r.opts;
	bool link_overhead_given = false;
	long n;

	for (int i = 0; i < argc; i++) {
		const char *w = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int ret;

		if (parse_flag(w, o))
			continue;
		if (!strcmp(w, "egress")) {
			ret = parse_direction(w, v, &r.egress, &r.egress_rate, err, errlen);
		} else if (!strcmp(w, "ingress")) {
			ret = parse_direction(w, v, &r.ingress, &r.ingress_rate, err, errlen);
		} else if (!strcmp(w, "overhead")) {
			if (!v)
				return bad(err, errlen, "overhead: missing BYTES or auto");
			ret = 0;
			if (!strcmp(v, "auto")) {
				o->has &= ~CAKE_HAS_OVERHEAD;
				r.overhead_auto = true;
			} else if (parse_int_range(v, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX, &n) == 0) {
				r.overhead_auto = false;
				o->overhead = (int32_t)n;
				o->has |= CAKE_HAS_OVERHEAD;
			} else {
				ret = bad(err, errlen, "overhead: '%s' is not auto or a whole number of "
					  "bytes from -64 to 256", v);
			}
		} else if (!strcmp(w, "link-overhead")) {
			if (!v || parse_int_range(v, CAKE_OVERHEAD_MIN, CAKE_OVERHEAD_MAX, &n) < 0)
				return bad(err, errlen, "link-overhead: '%s' is not a whole number of "
					   "bytes from -64 to 256", v ? v : "");
			r.link_overhead = (int)n;
			r.overhead_auto = true;
			link_overhead_given = true;
			ret = 0;
		} else if (!strcmp(w, "mpu")) {
			if (!v || parse_int_range(v, 0, 256, &n) < 0)
				return bad(err, errlen, "mpu: '%s' is not a whole number of bytes "
					   "from 0 to 256", v ? v : "");
			o->mpu = (uint32_t)n;
			o->has |= CAKE_HAS_MPU;
			ret = 0;
		} else if (!strcmp(w, "rtt")) {
			if (!v || parse_time(v, &o->rtt) < 0)
				return bad(err, errlen, "rtt: '%s' is not a time (e.g. 100ms)",
					   v ? v : "");
			o->has |= CAKE_HAS_RTT;
			ret = 0;
		} else if (!strcmp(w, "memlimit")) {
			if (!v || parse_size(v, &o->memlimit) < 0)
				return bad(err, errlen, "memlimit: '%s' is not a size (e.g. 4m)",
					   v ? v : "");
			o->has |= CAKE_HAS_MEMLIMIT;
			ret = 0;
		} else {
			return bad(err, errlen, "'%s' is not an option of set (see wgshape set --help)",
				   w);
		}
		if (ret < 0)
			return ret;
		i++; /* the value */
	}
	if (link_overhead_given && (o->has & CAKE_HAS_OVERHEAD))
		return bad(err, errlen, "link-overhead only adds to overhead auto; with overhead "
			   "%d give the whole overhead there", o->overhead);
	if ((o->has || link_overhead_given) && r.egress != DIR_SET && r.ingress != DIR_SET &&
	    (r.egress == DIR_OFF || r.ingress == DIR_OFF))
		return bad(err, errlen, "options apply to a direction being set, and off sets none "
			   "(give egress RATE or ingress RATE, or leave both out)");
	*req = r;
	return 0;
}

int set_main(int argc, char **argv, const struct cli *cli)
{
	struct shape_request req;
	struct netlink *nl;
	char err[256];
	int r;

	if (cli_wants_help(argc, argv)) {
		fputs(set_usage, stdout);
		return EXIT_OK;
	}
	if (argc < 3) {
		log_err("set: needs IFACE and what to set, e.g. egress 85mbit (see wgshape set --help)");
		return EXIT_USAGE;
	}
	if (!ifname_ok_or_say(argv[1]))
		return EXIT_USAGE;
	if (set_args_parse(argc - 2, argv + 2, &req, err, sizeof(err)) < 0) {
		log_err("set %s: %s", argv[1], err);
		return EXIT_USAGE;
	}
	if (!cli_can_net_admin(argv[1]))
		return EXIT_FAIL;
	if (cli_netlink_open(&nl) < 0)
		return EXIT_FAIL;
	r = shape_set(nl, cli->statedir, argv[1], &req);
	netlink_close(nl);
	return r < 0 ? EXIT_FAIL : EXIT_OK;
}
