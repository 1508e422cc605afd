// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sd_notify(3)'s protocol, which systemd documents as stable: one datagram
 * with the state to the AF_UNIX socket named in $NOTIFY_SOCKET (a leading '@'
 * is the abstract namespace). Written here so that wgshape does not load
 * libsystemd and its compression and crypto libraries at every start.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "util/notify.h"

void notify_systemd(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sun.sun_path))
		return;
	memcpy(sun.sun_path, path, len);
	if (sun.sun_path[0] == '@')
		sun.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* Nothing to do if systemd does not listen: it is a courtesy, not a result. */
	(void)sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sun,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	close(fd);
}
