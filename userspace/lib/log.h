/* SPDX-License-Identifier: GPL-2.0 */
/* One-line diagnostics on stderr, systemd style: -errno in, -errno out. */
#ifndef BPFBOX_LOG_H
#define BPFBOX_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LVL_ERROR,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
	LOG_LVL_NOTICE, /* log_notice(): printed at every level */
};

void log_set_level(enum log_level level);

/*
 * "<N>" (the syslog priority of level) when stderr is the journal's stream
 * ($JOURNAL_STREAM), else "": for lines written without log_msg().
 */
const char *log_prefix(enum log_level level);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * "bpfbox: <msg>" whatever the level (also with -q): why a command stopped
 * or was paused, which the caller of bpfbox must always see.
 */
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A warning printed even with -q (what the policy asks and nothing enforces). */
void log_warn_always(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "bpfbox: <msg>: <strerror(err)>" and returns -abs(err). */
int log_errno(enum log_level level, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Prints "bpfbox: <msg>" at the error level and returns -abs(err): a
 * refusal whose message says why, without an errno's text after it.
 */
int log_refusal(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The last error-level message, as printed after "bpfbox: ": the reason of a status channel's "ended" (docs/runtime.md).
 * "" when none.
 */
const char *log_last_error(void);
/* Keeps msg as the last error, for a message printed another way (a usage line). */
void log_keep_error(const char *msg);

#define log_error(...)		  log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)		  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)		  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)		  log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_error_errno(err, ...) log_errno(LOG_LVL_ERROR, err, __VA_ARGS__)
#define log_warn_errno(err, ...)  log_errno(LOG_LVL_WARN, err, __VA_ARGS__)

#endif
