/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd's readiness protocol (Type=notify): READY=1, RELOADING=1,
 * STOPPING=1. Does nothing outside systemd.
 */
#ifndef WGSHAPE_UTIL_NOTIFY_H
#define WGSHAPE_UTIL_NOTIFY_H

void notify_systemd(const char *state);

#endif
