/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pause, resume and kill of a session, done on its cgroup v2 directory:
 * what the daemon's pause/resume/kill ops do, and what `bpfbox pause/
 * resume/kill` does itself for a session no daemon knows (embedded mode,
 * root). The session's supervisor sees the result in cgroup.events and in
 * the user.bpfbox.* xattrs (limits.h) and tells its stream.
 */
#ifndef BPFBOX_CONTROL_H
#define BPFBOX_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Minimums of a raised limit, as the policy has them. */
#define CTL_MIN_MEMORY_MB 16
#define CTL_MIN_DISK_MB	  1

/* Whether cgroup.freeze of cg is set (paused, or being paused). */
bool ctl_paused(const char *cg);

/*
 * Freezes the session with the state "paused REASON" (manual, oom, disk,
 * disk_unwatched). Frozen for a command rule's ask already: paused on top
 * of it (the state only), so it stays frozen after the ask's answer.
 * -EALREADY when already paused (or frozen otherwise: a "killed" state is
 * not overwritten).
 */
int ctl_pause(const char *cg, const char *reason);

/* Processes stopped for one session's asks that a mark names, at most. */
#define CTL_ASK_MAX 16

/*
 * A command rule's ask (agent/ask.h) holds the session frozen: the ask
 * marked open (LIMITS_XATTR_ASK: "HOLDER ASKED...", our pid then the pids
 * stopped for our asks, asked added), the state "ask" unless paused,
 * cgroup.freeze written. 0, or -errno when it could not freeze.
 */
int ctl_ask_hold(const char *cg, pid_t asked);

/* One of our asks answered while others stay open: asked leaves the mark. */
void ctl_ask_answered(const char *cg, pid_t asked);

/*
 * The last open ask answered: the mark removed and the session thawed,
 * state "running", unless a pause came meanwhile (then 1: it stays frozen,
 * paused). 0, 1, or -errno.
 */
int ctl_ask_release(const char *cg);

/* Whether an ask holds the session (its holder still runs). */
bool ctl_ask_open(const char *cg);

/* A process stopped for an ask that was denied because nobody can answer it. */
struct ctl_asked {
	pid_t pid;
	char file[256]; /* its new image (/proc/PID/exe), "" unknown */
};

/*
 * Fail closed (docs/SECURITY.md): an ask whose holder is gone (any holder
 * when any_holder: the daemon re-adopting a session holds none of its
 * asks) is a deny. Each asked process still in cg is killed while frozen
 * (up to max of them said in out), the mark removed, and the session
 * thawed with the state "running" unless paused. The number killed (0 with
 * no stale mark: nothing done, *holder the mark's holder or 0),
 * -EOWNERDEAD for a mark that names no asked process (an older bpfbox's:
 * the mark stays; kill the session), -EAGAIN when the session's lock is
 * held by another for a second.
 */
int ctl_ask_deny_stale(const char *cg, bool any_holder, struct ctl_asked *out, int max,
		       long *holder);

/*
 * Raises (sets) the memory limit when memory_mb, records the disk limit when
 * disk_mb (the supervisor reads it back), then thaws. The limits in force
 * afterwards in *mem and *disk. An ask whose holder is gone is denied
 * first (ctl_ask_deny_stale: its processes in denied, max of them, the
 * holder in *holder); the number denied, 0 with none. -EINVAL when the
 * session is not paused, -EBUSY while an ask is open (a thaw would let a
 * sibling SIGCONT the exec that waits for its answer), -EOWNERDEAD for a
 * stale ask whose process is unknown (nothing thawed: kill the session),
 * -EAGAIN when another bpfbox holds the session's lock (stopped?) for a
 * second.
 */
int ctl_resume(const char *cg, uint64_t memory_mb, uint64_t disk_mb, uint64_t *mem, uint64_t *disk,
	       struct ctl_asked *denied, int max, long *holder);

/* The memory and disk limits recorded on cg (user.bpfbox.limits), 0 unknown. */
void ctl_limits(const char *cg, uint64_t *mem, uint64_t *disk);

/* Kills every process in the session (cgroup.kill), paused or not. */
int ctl_kill(const char *cg);

/* <cgroup parent>/<id> of an embedded session, for the commands without a daemon. */
int ctl_session_cgroup(const char *id, char *buf, size_t size);

#endif
