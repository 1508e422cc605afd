// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Small helpers the subcommands share.
 */
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <glib.h>

#include "cli/cli.h"
#include "config/config.h"
#include "netlink/kernel.h"
#include "util/log.h"
#include "shape/state.h"
#include "util/ifname.h"

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

bool ifname_ok_or_say(const char *name)
{
	g_autofree char *shown = NULL;

	if (ifname_is_valid(name))
		return true;
	shown = g_strescape(name, NULL);
	if (strlen(name) >= 16)
		log_err("'%s': interface name too long (%zu characters; the kernel allows 15)",
			shown, strlen(name));
	else
		log_err("'%s': not a valid interface name (1 to 15 characters, no '/', ':' or "
			"spaces)", shown);
	return false;
}

bool cli_can_net_admin(const char *ifname)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	if (syscall(SYS_capget, &hdr, data) < 0)
		return true; /* cannot tell: let the kernel say */
	if (data[CAP_TO_INDEX(CAP_NET_ADMIN)].effective & CAP_TO_MASK(CAP_NET_ADMIN))
		return true;
	log_err("%s%snot permitted: needs root or CAP_NET_ADMIN", ifname ? ifname : "",
		ifname ? ": " : "");
	return false;
}

struct config *cli_config_optional(const struct cli *cli)
{
	if (!cli->config_path && access(CONFIG_DEFAULT_PATH, F_OK) < 0)
		return config_new();
	return config_load_logged(cli->config_path);
}

int cli_netlink_open(struct netlink **nl)
{
	int r = netlink_open(nl);

	if (r < 0)
		log_err("netlink: %s", strerror(-r));
	return r;
}
