// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "util.h"

static enum log_level max_level = LOG_LVL_WARN;
static int journal = -1; /* stderr is the journal's stream: -1 not checked yet */

/*
 * systemd sets $JOURNAL_STREAM to "DEV:INODE" of the stream it gave the
 * service (systemd.exec(5)); when stderr is that stream, each line starts
 * with its syslog priority "<N>" (sd-daemon(3)), which journald strips and
 * keeps, so that `journalctl -p err` finds errors. A redirected stderr is
 * another file and gets no prefix.
 */
static bool stderr_is_journal(void)
{
	const char *env;
	unsigned long long dev, ino;
	struct stat st;

	if (journal >= 0)
		return journal;
	env = getenv("JOURNAL_STREAM");
	journal = env && sscanf(env, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
		  st.st_dev == dev && st.st_ino == ino;
	return journal;
}

/* The syslog priority of a level: err, warning, notice, info, debug. */
static int level_priority(enum log_level level)
{
	switch (level) {
	case LOG_LVL_ERROR:
		return 3;
	case LOG_LVL_WARN:
		return 4;
	case LOG_LVL_NOTICE:
		return 5;
	case LOG_LVL_INFO:
		return 6;
	default:
		return 7;
	}
}

void log_set_level(enum log_level level)
{
	max_level = level;
}

static const char *level_prefix(enum log_level level)
{
	static const char *const prefixes[] = {
		[LOG_LVL_ERROR] = "error: ", [LOG_LVL_WARN] = "warning: "};

	return name_of(prefixes, ARRAY_SIZE(prefixes), level, "");
}

static bool always;

const char *log_prefix(enum log_level level)
{
	static const char *const p[] = {"<3>", "<4>", "<6>", "<7>", "<5>"};

	return stderr_is_journal() && (unsigned int)level < 5 ? p[level] : "";
}

static char last_error[1280];

const char *log_last_error(void)
{
	return last_error;
}

void log_keep_error(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

static void log_vmsg(enum log_level level, int err, const char *fmt, va_list ap)
{
	char buf[1024], prio[8] = "";
	int saved = errno;

	/* Errors are never below the level: each is the last one kept. */
	if (level > max_level && level != LOG_LVL_NOTICE && !(level == LOG_LVL_WARN && always))
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	/*
	 * One line without control bytes, whatever a session chose of what
	 * it holds (a path, a process name, a host): it cannot end our line
	 * and start a "bpfbox: " line of its own, nor drive the terminal.
	 */
	term_clean(buf, sizeof(buf), buf);
	if (level == LOG_LVL_ERROR)
		snprintf(last_error, sizeof(last_error), "%s%s%s", buf, err ? ": " : "",
			 err ? strerror(abs(err)) : "");
	if (stderr_is_journal())
		snprintf(prio, sizeof(prio), "<%d>", level_priority(level));
	/* One write per line so concurrent writers never interleave. */
	if (err)
		fprintf(stderr, "%sbpfbox: %s%s: %s\n", prio, level_prefix(level), buf,
			strerror(abs(err)));
	else
		fprintf(stderr, "%sbpfbox: %s%s\n", prio, level_prefix(level), buf);
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

int log_refusal(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_ERROR, 0, fmt, ap);
	va_end(ap);
	return -abs(err);
}
