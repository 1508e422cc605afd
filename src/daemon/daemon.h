/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon: keeps interfaces shaped as configured, following the kernel's
 * link and tc notifications, NetworkManager and signals (SIGHUP reloads,
 * SIGTERM/SIGINT end it).
 */
#ifndef WGSHAPE_DAEMON_H
#define WGSHAPE_DAEMON_H

struct daemon_opts {
	const char *statedir;
	const char *config_path; /* NULL: the default, which may be missing */
	const char *only; /* one interface, or NULL for every configured one */
};

/* Runs until SIGTERM or SIGINT. 0, or -errno when it could not start (logged). */
int daemon_run(const struct daemon_opts *opts);

#endif
