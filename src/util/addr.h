/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Socket addresses as text, the one way every message writes them:
 * 192.0.2.1, 2001:db8::1, and with the port 192.0.2.1:4780, [2001:db8::1]:4780.
 */
#ifndef WGSHAPE_UTIL_ADDR_H
#define WGSHAPE_UTIL_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* INET6_ADDRSTRLEN, the brackets, a colon and five digits */
#define ADDR_STR_SIZE 56

/* sa (AF_INET or AF_INET6; "?" for anything else or NULL) into buf; returns buf. */
const char *addr_str(const struct sockaddr *sa, bool with_port, char *buf, size_t size);

/*
 * An IPv4 or IPv6 literal (no port, no scope): a ':' makes it IPv6. Its
 * family (AF_INET, AF_INET6) and address (4 or 16 bytes) into the output
 * parameters; 0, or -EINVAL (nothing written) when s is no such literal.
 */
int addr_parse(const char *s, int *family, uint8_t addr[16]);

#endif
