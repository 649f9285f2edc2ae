// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static enum log_level max_level = LOG_LVL_WARN;

void log_set_level(enum log_level level)
{
	max_level = level;
}

enum log_level log_get_level(void)
{
	return max_level;
}

static const char *level_prefix(enum log_level level)
{
	switch (level) {
	case LOG_LVL_ERROR:
		return "error: ";
	case LOG_LVL_WARN:
		return "warning: ";
	default:
		return "";
	}
}

static bool always;

static void log_vmsg(enum log_level level, int err, const char *fmt,
		     va_list ap)
{
	char buf[1024];
	int saved = errno;

	if (level > max_level && level != LOG_LVL_NOTICE && !(level == LOG_LVL_WARN && always))
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* One write per line so concurrent writers never interleave. */
	if (err)
		fprintf(stderr, "bpfbox: %s%s: %s\n", level_prefix(level), buf,
			strerror(abs(err)));
	else
		fprintf(stderr, "bpfbox: %s%s\n", level_prefix(level), buf);
	errno = saved;
}

void log_warn_always(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	always = true;
	log_vmsg(LOG_LVL_WARN, 0, fmt, ap);
	always = false;
	va_end(ap);
}

void log_notice(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_NOTICE, 0, fmt, ap);
	va_end(ap);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, 0, fmt, ap);
	va_end(ap);
}

int log_errno(enum log_level level, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, err, fmt, ap);
	va_end(ap);
	return -abs(err);
}
