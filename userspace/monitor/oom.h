/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The OOM watch of a session: cgroup v2 memory.events (polled for POLLPRI,
 * its oom_kill counter read on each change), or on cgroup v1 an eventfd
 * registered for memory.oom_control (cgroup.event_control), which fires
 * when the OOM killer is invoked, a little before it kills; its oom_kill
 * counter is then read again until it moves.
 */
#ifndef BPFBOX_OOM_H
#define BPFBOX_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct session_limits;

struct oom_watch {
	int fd;	    /* polled: memory.events (POLLPRI) or an eventfd (POLLIN) */
	int ctl_fd; /* v1: memory.oom_control */
	bool v1;
	uint64_t ooms;		/* v2: oom (the OOM killer invoked) when last read */
	uint64_t kills;		/* oom_kill when last read */
	uint64_t recheck_until; /* v1: read again until then (ns), 0: no */
};

/* -ENOENT when the session has no memory cgroup to watch. */
int oom_watch_open(struct oom_watch *w, const struct session_limits *l);
void oom_watch_close(struct oom_watch *w);
/* The events poll() must ask for on w->fd. */
short oom_watch_events(const struct oom_watch *w);
/*
 * After w->fd polled ready, or when a recheck is due: the number of new OOM
 * kills (0 when none yet). *invoked tells that the OOM killer was invoked
 * since the last call (it kills a moment later: v2 "oom", the v1 eventfd).
 */
uint64_t oom_watch_check(struct oom_watch *w, bool fd_ready, bool *invoked);
/* Milliseconds until the next recheck, -1 for none. */
int oom_watch_timeout(const struct oom_watch *w);

/*
 * The last process of session id the OOM killer chose, from the kernel log
 * (/dev/kmsg; needs root or dmesg_restrict=0): its "oom-kill:" summary line
 * names the victim's memory cgroup, which holds the session id. 0, or
 * -ENOENT when no line names it (the summary is rate limited), -errno.
 */
int oom_find_victim(const char *id, pid_t *pid, char *comm, size_t size);

/*
 * Checks a victim pid reported by the agent (oom/mark_victim) against
 * session id while /proc/PID is still there (a zombie whose parent is
 * frozen): -EXDEV when it is in another cgroup, else 0, with comm filled
 * from /proc/PID/comm if it was empty and can still be read.
 */
int oom_victim_check(const char *id, pid_t pid, char *comm, size_t size);

#endif
