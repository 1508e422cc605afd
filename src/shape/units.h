/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rates, times and sizes in tc's language. Pure functions: no I/O, no globals.
 *
 * Parsers return 0 and write *out only on success, or -EINVAL for anything tc
 * would not take (and a few things tc takes that are never meant: see units.c).
 */
#ifndef WGSHAPE_UNITS_H
#define WGSHAPE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The largest rate: the kernel takes u64 bytes/s (cake, HTB's rate64), but
 * rates are shown and given in JSON as bits/s, a signed 64-bit number there:
 * bytes * 8 must fit (about 9.2 Ebit/s).
 */
#define RATE_MAX_BYTES ((uint64_t)INT64_MAX / 8)

/*
 * "85mbit", "500kbit", "1gbit", "10mbps" (bytes!), "2Mibit" -> bytes per
 * second; -ERANGE above RATE_MAX_BYTES.
 */
int parse_rate(const char *s, uint64_t *bytes_per_sec);
/* "5ms", "100us", "1s", bare number = microseconds (as tc) -> microseconds. */
int parse_time(const char *s, uint32_t *usec);
/* "4m", "64k", "1500", "2mb", "32kbit" -> bytes. */
int parse_size(const char *s, uint32_t *bytes);
/* A signed whole number within [min, max], no unit. */
int parse_int_range(const char *s, long min, long max, long *out);

/* Formatting as tc prints: "82Mbit", "100us", "4Mb". Always NUL-terminates. */
void format_rate(char *buf, size_t len, uint64_t bytes_per_sec);
void format_time(char *buf, size_t len, uint32_t usec);
void format_size(char *buf, size_t len, uint64_t bytes);

#define UNITS_BUFSZ 32

#endif
