/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the supervision loop watches besides the command's output: the OOM
 * kills of the session (oom.h), its disk growth (disk.h) and the frozen
 * state of its cgroup (cgroup.events: a pause or resume made by `bpfbox
 * pause/resume` or the daemon). It reports triggers; supervise_pause.c decides.
 */
#ifndef BPFBOX_MONITOR_H
#define BPFBOX_MONITOR_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "disk.h"
#include "limits.h"
#include "oom.h"

struct changes_set;

/*
 * A lifecycle transition (docs/limits.md); its event is built by
 * audit_session_lifecycle() (audit/event.h).
 */
enum session_event_type {
	SEV_PAUSED,
	SEV_RESUMED,
	SEV_KILLED,
	SEV_CHANGES, /* --changes review|apply: what the session changed (changes.h) */
};

struct session_event {
	enum session_event_type type;
	const char *reason; /* paused: oom, disk, manual; killed: manual, disk */
	pid_t pid;	    /* the OOM victim, 0 when unknown */
	char comm[16];
	uint64_t memory_mb, disk_mb;
	int64_t disk_used_mb; /* growth of the workspace; < 0: unknown */
	uint64_t oom_kills;
	uint64_t paused_ms;		   /* resumed: time spent paused */
	bool was_paused;		   /* killed: while paused */
	const struct changes_set *changes; /* changes: the session's change set */
};

#define MONITOR_MAX_FDS 4

/* Triggers returned by monitor_dispatch(). */
#define MON_OOM		(1U << 0) /* the OOM killer killed in the session */
#define MON_DISK	(1U << 1) /* the disk growth passed the limit */
#define MON_FROZEN	(1U << 2) /* cgroup.events changed its frozen state */
#define MON_OOM_INVOKED (1U << 3) /* the OOM killer was invoked: it kills a moment later */

struct monitor {
	struct session_limits *lim;
	const char *id;
	struct oom_watch oom;
	int events_fd; /* the v2 session cgroup's cgroup.events */
	bool frozen;   /* as cgroup.events said last */
	bool disk_on;
	struct disk_monitor disk;
	uint64_t disk_limit; /* bytes */
	uint64_t scan_after; /* the initial disk scan starts then (CLOCK_MONOTONIC ns) */
	bool looped;	     /* monitor_pollfds called: the command's loop began */
	/*
	 * Held scans (disk_held.c) run on a thread of their own, one at a
	 * time: a read of /proc/PID/maps can wait as long as a fork bomb
	 * keeps that process's memory map lock, and the loop that enforces
	 * the timeout must not wait with it. held_fd (an eventfd) says a
	 * scan ended; the fields below the lock are the thread's.
	 */
	pthread_t held_thread;
	bool held_thread_on;
	pthread_mutex_t held_lock;
	pthread_cond_t held_cond;
	bool held_asked, held_busy, held_quit; /* under held_lock */
	int held_fd;
	uint64_t held_last;	  /* the last held scan ended then (atomic) */
	uint64_t held_cost;	  /* and took this long (ns, atomic) */
	uint64_t held_total;	  /* every held scan's time (ns, atomic) */
	const char *roots[3];	  /* workspace, private tmp, private home */
	uint64_t new_kills;	  /* since the last MON_OOM */
	int idx[MONITOR_MAX_FDS]; /* which pollfd slot is which (-1: none) */
};

/*
 * Starts watching the session of l (its cgroup must exist and hold the
 * command, or be about to) and the disk growth of workspace, tmp and the
 * private home (any may be NULL). workspace_fd: the workspace as it was
 * checked (O_PATH), watched and read through it rather than its path; -1:
 * by path. What cannot be watched is said on stderr (a disk monitor with
 * no inotify instance: also in l->not_enforced); 0 always.
 */
int monitor_open(struct monitor *m, struct session_limits *l, const char *id, const char *workspace,
		 int workspace_fd, const char *tmp, const char *home);
/*
 * Reserves the disk monitor's inotify instance while the session is
 * planned, so that a user out of instances is known before anything is
 * said of the session: the disk limit is then in l->not_enforced (the
 * start's warning, session.start, the status channel) and l->disk off.
 * monitor_open takes the instance; limits_close_fds closes one not taken.
 */
void monitor_disk_reserve(struct session_limits *l);
/*
 * The helper that closes the disk monitor's inotify instance also removes
 * remove, an entry of sweep_dirfd (taken: closed here; -1 none), and sweeps
 * that directory for what killed sessions left there, prefix<id>suffix
 * (closer_remove, closer_sweep, lib/closer.h). Without a disk monitor (no
 * inotify instance) a helper of its own does both (disk_sweep). end: the
 * helper of the session's end, with what other layers gave it, started
 * here (NULL: one of the monitor's own).
 */
struct closer;
void monitor_close(struct monitor *m, int sweep_dirfd, const char *prefix, const char *suffix,
		   const char *remove, struct closer *end);

/*
 * Fills up to MONITOR_MAX_FDS pollfds; returns how many. The first call is
 * the supervising loop's first turn, once the command exec'd: the initial
 * disk scan starts SCAN_DELAY_NS from then, not from the monitor's open
 * (the set-up between, a large workspace's credential scan included, is
 * not the command's time).
 */
int monitor_pollfds(struct monitor *m, struct pollfd *p);
/* The poll timeout the monitor needs (0 while scanning), -1: none. */
int monitor_timeout(const struct monitor *m);

/* Handles readiness of the slots monitor_pollfds() filled; MON_* bits. */
unsigned int monitor_dispatch(struct monitor *m, const struct pollfd *p);

/* Whether the disk growth is over the limit now (after a resume raised it, not). */
bool monitor_disk_over(const struct monitor *m);

/*
 * Entries (inodes) a session may add per MB of its disk limit: empty files
 * cost no blocks, and 600,000 of them never reached --disk 50 in bytes.
 */
#define MONITOR_ENTRIES_PER_MB 1024

/* Why monitor_disk_over: "disk" (bytes or entries), "disk_unwatched" (blind). */
const char *monitor_disk_reason(const struct monitor *m);

/* Entries the session added, -1 without a disk monitor. */
int64_t monitor_disk_entries(const struct monitor *m);

/* Bytes the workspace and private tmp grew by, -1 when not watched. */
int64_t monitor_disk_used(const struct monitor *m);

/*
 * Reads what `bpfbox resume` changed (LIMITS_XATTR_LIMITS): the memory and
 * disk limits. Updates l and the disk limit.
 */
void monitor_reload_limits(struct monitor *m);

/*
 * m->frozen as cgroup.events says now: a freeze that came before the
 * monitor was opened (or read) changes nothing it could report.
 */
void monitor_read_frozen(struct monitor *m);

/* Whether cgroup.freeze is set (a pause asked for, frozen yet or not). */
bool monitor_freeze_requested(const struct monitor *m);

/* LIMITS_XATTR_STATE of the session cgroup, "" when unset. */
void monitor_read_state(const struct monitor *m, char *buf, size_t size);
/* Sets LIMITS_XATTR_STATE ("paused oom", "running", "killed manual"). */
int session_cgroup_set_state(const char *cg, const char *state);

#endif
