/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text from outside (a file, an interface name, a peer) as a message shows
 * it: control characters (C0, DEL, C1) and bytes that are not UTF-8 become
 * \xNN, so that a message can neither drive the terminal that shows it nor
 * make JSON invalid; and a quoted value is cut short, so that a 5 MB value
 * is not echoed whole.
 */
#ifndef WGSHAPE_UTIL_TEXT_H
#define WGSHAPE_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The characters of a value a message quotes; then "...". */
#define TEXT_QUOTE_MAX 64
/* Room for a quoted value: a character takes at most 8 bytes (\xc2\x9b), then "..." and NUL. */
#define TEXT_QUOTE_SIZE (TEXT_QUOTE_MAX * 8 + 4)

/* s escaped, whole (g_free it). */
char *text_escape(const char *s);

/* s (NULL: "") escaped and cut after max characters, in buf (max * 8 + 4 bytes); returns buf. */
const char *text_quote(char *buf, size_t size, const char *s, size_t max);

/*
 * s (NULL: "") into buf of size bytes, as g_strlcpy but cut between two
 * characters, never inside one: a name cut to fit a fixed field stays UTF-8
 * (GKeyFile gives no value for one that is not, so a state file would lose
 * it). True when s was cut.
 */
bool text_copy(char *buf, size_t size, const char *s);

/* A value as a message quotes it; the text lasts to the end of the enclosing block. */
#define TEXT_QUOTE(s) \
	text_quote((char[TEXT_QUOTE_SIZE]){ 0 }, TEXT_QUOTE_SIZE, (s), TEXT_QUOTE_MAX)

#endif
