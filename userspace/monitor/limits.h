/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Resource limits of one session (docs/limits.md): memory (no swap), pids
 * and cpu through the cgroup v2 controllers of the session cgroup, or on
 * hybrid hosts through cgroup v1 controllers nested under bpfbox's own v1
 * cgroups, or else an rlimit fallback. The v2 session cgroup, when there is
 * one, also gives pausing (cgroup.freeze) and killing (cgroup.kill).
 */
#ifndef BPFBOX_LIMITS_H
#define BPFBOX_LIMITS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct policy_limits;
struct jsonw;

enum limit_res {
	RES_MEMORY,
	RES_PIDS,
	RES_CPU,
	RES__COUNT,
};

/* How one limit holds. */
enum limit_how {
	LIMIT_NONE,    /* not enforced */
	LIMIT_CGROUP2, /* v2 controller of the session cgroup */
	LIMIT_CGROUP1, /* v1 controller, nested under bpfbox's own v1 cgroup */
	LIMIT_RLIMIT,  /* memory only: RLIMIT_DATA, per process */
};

/* --limits-via: which mechanisms may be used. */
enum limits_via {
	LIMITS_VIA_AUTO,   /* cgroup v2, else v1 (root), else rlimit */
	LIMITS_VIA_CGROUP, /* cgroup controllers or refuse to run */
	LIMITS_VIA_RLIMIT, /* no controllers (no v1 migration cost) */
};

#define LIMITS_PATH_MAX 512

/* User xattrs on the v2 session cgroup, read by `bpfbox resume` and the supervisor. */
#define LIMITS_XATTR_LIMITS "user.bpfbox.limits" /* "memory_mb=N disk_mb=N" */
#define LIMITS_XATTR_V1	    "user.bpfbox.v1"	 /* "memory PATH\npids PATH\ncpu PATH" */
#define LIMITS_XATTR_STATE  "user.bpfbox.state"	 /* "paused oom", "killed manual", ... */
#define LIMITS_XATTR_ASK    "user.bpfbox.ask"	 /* pid of who holds an open ask (control.h) */

struct session_limits {
	uint64_t memory_mb, pids, cpu_percent, disk_mb;
	enum limits_via via;
	enum limit_how how[RES__COUNT];
	bool cgroup; /* a v2 session cgroup is (to be) made or was adopted */
	bool pause;  /* cgroup.freeze of that cgroup can pause the session */
	bool disk;   /* the disk monitor runs */
	/* Its inotify instance, reserved when the session is planned (monitor_disk_reserve). */
	bool disk_watch_held;
	int disk_watch_fd;
	int disk_unwatched; /* errno: no inotify instance, the disk limit not enforced */
	char why_no_cgroup[96];
	char not_enforced[512]; /* one sentence, "" when every limit holds */
	char v2_mount[LIMITS_PATH_MAX];
	char v2_parent[LIMITS_PATH_MAX];
	char v1_mount[RES__COUNT][LIMITS_PATH_MAX];
	/* Made by limits_create() or limits_apply(), or found by limits_adopt(). */
	char cg[LIMITS_PATH_MAX]; /* the v2 session cgroup, "" none */
	uint64_t cg_id;
	bool cg_own;	 /* made here: killed and removed by limits_destroy() */
	int cg_fd;	 /* O_DIRECTORY, for clone3(CLONE_INTO_CGROUP) */
	int cg_procs_fd; /* cgroup.procs, when clone3 is missing */
	char cg1[RES__COUNT][LIMITS_PATH_MAX]; /* v1 session cgroups, "" none */
	int cg1_procs_fd[RES__COUNT];
	char v1_memory[LIMITS_PATH_MAX]; /* the v1 memory cgroup (adopted or made) */
};

/* Names for events and status: "cgroup2", "cgroup1", "rlimit", "none". */
const char *limit_how_name(enum limit_how how);
const char *limit_res_name(enum limit_res res);
int limits_via_parse(const char *s, enum limits_via *out);

/*
 * Decides how each limit of pl holds on this host, without making anything
 * (a read of /proc/self/mountinfo and of cgroup.controllers). v2_parent is
 * where session cgroups live; NULL: $BPFBOX_CGROUP_PARENT or <cgroup2>/bpfbox.
 */
void limits_plan(struct session_limits *l, const struct policy_limits *pl, const char *v2_parent,
		 enum limits_via via);
/*
 * The values of pl into a plan (how each limit holds does not depend on
 * them): a plan made once for other values serves another session alike.
 */
void limits_plan_values(struct session_limits *l, const struct policy_limits *pl);

/*
 * Makes the v2 session cgroup <parent>/<id> (when l->cgroup) and applies the
 * limits (limits_apply). 0, or -errno when the cgroup could not be made
 * (printed; l->cgroup is then false and the plan degraded to rlimits).
 */
int limits_create(struct session_limits *l, const char *id);

/*
 * Applies the limits to the existing session cgroup l->cg (the daemon makes
 * its own): enables the v2 controllers, writes memory.max, memory.swap.max,
 * pids.max, cpu.max, makes the v1 cgroups. A limit that cannot be applied
 * is degraded (l->how, l->not_enforced) with a warning; returns 0 then.
 */
int limits_apply(struct session_limits *l, const char *id);

/*
 * In the child, before anything runs: joins the v1 cgroups (and the v2 one
 * when join_v2, i.e. when clone3 could not place it). 0 or -1 with errno
 * (async-signal-safe).
 */
int limits_child_join(const struct session_limits *l, bool join_v2);

/*
 * In the process that execs the command, just before exec: RLIMIT_DATA for
 * the rlimit fallback (not earlier: the PID namespace's init stays bpfbox
 * and keeps allocating). 0 or -1 with errno (async-signal-safe).
 */
int limits_child_rlimit(const struct session_limits *l);

/* Moves pid into the v1 cgroups (the daemon's attach). */
int limits_attach_pid(const struct session_limits *l, pid_t pid);
/* Closes the fds kept for the child (the daemon holds none per session). */
void limits_close_fds(struct session_limits *l);
/*
 * The v1 cgroups of an existing session cgroup, from its LIMITS_XATTR_V1
 * (a daemon re-adopting a session removes them at its end). 0 or -errno;
 * path NULL for all, or the one of res in path.
 */
int limits_v1_read(const char *cg, struct session_limits *l);

/*
 * Daemon mode in the client: finds the session cgroups pid was placed in
 * (/proc/PID/cgroup) so that they can be watched. Not owned.
 */
int limits_adopt(struct session_limits *l, pid_t pid, const char *id);

/* cgroup.kill of the v2 session cgroup; -ENOENT without one. */
int limits_kill(const struct session_limits *l);
/* Writes cgroup.freeze; -ENOENT without a v2 session cgroup. */
int limits_freeze(const struct session_limits *l, bool frozen);

/*
 * Kills what is left and removes the cgroups made here (v2 only when
 * cg_own; the v1 ones always), waiting up to 2 s for them to empty.
 */
void limits_destroy(struct session_limits *l);

/*
 * Removes empty session cgroups (32 hex digits) older than LIMITS_STALE_S
 * under the v2 parent and under the v1 "bpfbox" levels of this process:
 * those of sessions whose bpfbox was killed (SIGKILL) before it could remove
 * them, or that a daemon left. rmdir fails on a cgroup that holds a process,
 * so a live session stays; the age spares one being set up
 * ($BPFBOX_CGROUP_STALE_S overrides it, never below LIMITS_STALE_MIN_S: an
 * age of 0 swept another run's cgroup made a moment before, still empty
 * until its child joined it, which then failed with ENODEV).
 */
#define LIMITS_STALE_S	   600
#define LIMITS_STALE_MIN_S 5
void limits_sweep(const struct session_limits *l);

/* "limits": {...} of session.start and status: how each limit holds. */
void limits_json(const struct session_limits *l, struct jsonw *w, const char *key);

/* Host-level answer for `bpfbox status`: what a session of this user gets. */
void limits_describe_host(char *buf, size_t size, bool *cgroup, struct session_limits *l);

#endif
