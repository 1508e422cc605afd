/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Interface names as the kernel takes them: checked before one is used in a
 * path (state files) or sent anywhere.
 */
#ifndef WGSHAPE_UTIL_IFNAME_H
#define WGSHAPE_UTIL_IFNAME_H

#include <stdbool.h>

/* A kernel interface name: 1..15 bytes, no '/', ':' or white space, not "." or "..". */
bool ifname_is_valid(const char *name);

#endif
