/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How an error and its message go up: the one way.
 *
 * A function returns int: 0, or -errno. Its message is one line, logged
 * once (util/log.h) by the function that decides what the failure means;
 * that is most often where it happens, and then nothing more goes up than
 * the -errno.
 *
 * Where the function cannot log (pure code, a parser the fuzzers and the
 * unit tests drive, a check whose caller adds the context or decides that
 * the failure is only a warning), the message goes up in the caller's
 * buffer: the last two parameters are `char *err, size_t errlen`, ERR_SIZE
 * bytes where the caller has no reason for another size; it is written on
 * failure only, one line, naming the offending value, cut short rather
 * than overrun. err_say() writes it and returns the -errno, so a failure is
 * `return err_say(err, errlen, -EINVAL, "...", ...);`.
 *
 * Not ways of their own: a GError, a CURLcode or a -NLE_* is translated to
 * -errno and a message at the module that calls the library; a run that
 * gathers several failures (measure's struct run) keeps the first in the
 * caller's buffer it was handed.
 */
#ifndef WGSHAPE_UTIL_ERR_H
#define WGSHAPE_UTIL_ERR_H

#include <stddef.h>

/* Room for one message: a line naming a path or two and a quoted value. */
#define ERR_SIZE 1024

/* The message, formatted into err (of errlen bytes; none written when 0); returns r. */
int err_say(char *err, size_t errlen, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
