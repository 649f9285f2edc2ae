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

/* Minimums of a raised limit, as the policy has them. */
#define CTL_MIN_MEMORY_MB 16
#define CTL_MIN_DISK_MB	  1

/* Whether cgroup.freeze of cg is set (paused, or being paused). */
bool ctl_paused(const char *cg);

/* -EALREADY when already paused; reason: manual, oom, disk. */
int ctl_pause(const char *cg, const char *reason);

/*
 * Raises (sets) the memory limit when memory_mb, records the disk limit when
 * disk_mb (the supervisor reads it back), then thaws. The limits in force
 * afterwards in *mem and *disk. -EINVAL when the session is not paused.
 */
int ctl_resume(const char *cg, uint64_t memory_mb, uint64_t disk_mb, uint64_t *mem, uint64_t *disk);

/* The memory and disk limits recorded on cg (user.bpfbox.limits), 0 unknown. */
void ctl_limits(const char *cg, uint64_t *mem, uint64_t *disk);

/* Kills every process in the session (cgroup.kill), paused or not. */
int ctl_kill(const char *cg);

/* <cgroup parent>/<id> of an embedded session, for the commands without a daemon. */
int ctl_session_cgroup(const char *id, char *buf, size_t size);

#endif
