// SPDX-License-Identifier: GPL-2.0-or-later
#include "build-config.h"
#include "util/notify.h"

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

void notify_systemd(const char *state)
{
#ifdef HAVE_LIBSYSTEMD
	sd_notify(0, state);
#else
	(void)state;
#endif
}
