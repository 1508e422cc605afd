/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging: one line per message on stderr. Log once, where the decision is made.
 * With log_use_syslog_prefix(true) (a daemon under systemd) each line gets an
 * sd-daemon "<N>" priority prefix so the journal keeps the level.
 */
#ifndef WGSHAPE_LOG_H
#define WGSHAPE_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

void log_set_level(enum log_level max);
void log_use_syslog_prefix(bool on);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
