/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one cgroup module: one cgroup v2 directory per session, under a
 * parent that holds them all (<cgroup2 mount>/bpfbox by default; on hybrid
 * hosts the v2 mount is /sys/fs/cgroup/unified). Whoever makes a session
 * cgroup (monitor/limits.c for a run, the daemon at register) makes it and
 * removes it here; the BPF programs key their per-session state on its id,
 * and cgroup programs attach once, to the parent.
 */
#ifndef BPFBOX_CGROUP_H
#define BPFBOX_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

struct session_cgroup {
	char path[PATH_MAX];
	uint64_t id;  /* cgroup id: the directory's inode number on cgroup2 */
	int dir_fd;   /* O_DIRECTORY, for clone3's CLONE_INTO_CGROUP */
	int procs_fd; /* cgroup.procs, open for a child to join */
};

/*
 * dir/file into buf (NUL-terminated, trailing newlines cut, at most size -
 * 1 bytes): its length, or -errno.
 */
int cgroup_read(const char *dir, const char *file, char *buf, size_t size);
/*
 * The VALUE of the line "key VALUE" in the text of a flat keyed file
 * (cpu.stat, memory.events, cgroup.events, memory.oom_control) in *out;
 * false, *out untouched, when no line has that key.
 */
bool cgroup_key(const char *text, const char *key, uint64_t *out);
/* Whether dir's cgroup.freeze says frozen (1): asked to pause. */
bool cgroup_freeze_set(const char *dir);

/* The mount point of the cgroup2 file system, from /proc/self/mountinfo. */
int cgroup2_mount_point(char *buf, size_t size);
/* pid's cgroup v2 path relative to the mount ("0::" of /proc/PID/cgroup); 0 or -errno. */
int cgroup_of_pid(pid_t pid, char *buf, size_t size);
/* The same as a path under the mount (the cgroup's directory); 0 or -errno. */
int cgroup_dir_of_pid(pid_t pid, char *out, size_t size);
/*
 * The network namespace (/proc/PID/ns/net, O_RDONLY) of pid, or of the first
 * process of cgroup.procs when pid is 0, once that process is seen in the
 * cgroup dir after the open: an fd, or -errno (-ESRCH: none, or elsewhere).
 */
int cgroup_netns_open(const char *dir, pid_t pid);
/* The parent of session cgroups: $BPFBOX_CGROUP_PARENT or <cgroup2>/bpfbox. */
int cgroup_parent(char *buf, size_t size);
/* Creates the parent if needed; returns an O_DIRECTORY fd for attaching. */
int cgroup_parent_open(const char *parent);

/*
 * Makes <parent>/<name> with its fds open (the parent must exist); 0, or
 * -errno with nothing made (cg->path "").
 */
int session_cgroup_create(const char *parent, const char *name, struct session_cgroup *cg);
/* Closes its fds; the directory stays. */
void session_cgroup_close(struct session_cgroup *cg);

/* A new session id, 128 random bits in hex (buf: SESSION_NAME_LEN + 1 bytes); 0 or -errno. */
#define SESSION_NAME_LEN 32
int session_name_new(char *buf);

/*
 * Session cgroups made ahead (docs/daemon.md "Cgroups made ahead"): empty
 * cgroups, each named by the random id of the session that will take it
 * (cgroup v2 has no rename, so the name is chosen when the directory is
 * made), marked with CGROUP_POOL_XATTR until taken. Bounded.
 */
#define CGROUP_POOL_MAX	  8
#define CGROUP_POOL_XATTR "trusted.bpfbox.pool"
struct cgroup_pool {
	size_t n;
	struct {
		char name[SESSION_NAME_LEN + 1];
		uint64_t id;
		time_t made;
	} v[CGROUP_POOL_MAX];
};
/* Makes cgroups under parent until the pool holds want (at most CGROUP_POOL_MAX); 0 or -errno. */
int cgroup_pool_fill(struct cgroup_pool *p, const char *parent, size_t want);
/* The name of the cgroup cgroup_pool_take(p, parent, NULL, ...) would take next; NULL: none. */
const char *cgroup_pool_next(const struct cgroup_pool *p);
/*
 * Takes the cgroup named name (NULL: any) out of the pool into *cg (path
 * and id, no fds open): 0, or -ENOENT when the pool has none.
 */
int cgroup_pool_take(struct cgroup_pool *p, const char *parent, const char *name,
		     struct session_cgroup *cg);
/*
 * Removes the pool's cgroups made before the time before: an embedded run's
 * sweep (limits_sweep) removes empty session cgroups older than
 * LIMITS_STALE_S, so the pool renews its own first.
 */
void cgroup_pool_expire(struct cgroup_pool *p, const char *parent, time_t before);
/* Removes the pool's cgroups (they are empty). */
void cgroup_pool_drain(struct cgroup_pool *p, const char *parent);
/* Removes the empty pool cgroups under parent that a killed daemon left; how many. */
int cgroup_pool_sweep(const char *parent);

/* SIGKILL to every process of dir: cgroup.kill, else each member (v1, < 5.14). */
int cgroup_kill(const char *dir);
/*
 * Kills what is left in dir and removes it, waiting up to wait_ms for the
 * killed processes to go (rmdir's EBUSY). 0 once it is gone (or was),
 * -EBUSY when it stays, another -errno on a failure.
 */
int cgroup_remove(const char *dir, int wait_ms);
/* 1 while a process is in dir or below (cgroup v2), 0 not or gone, -errno unreadable. */
int cgroup_populated(const char *dir);
/*
 * Kills what is left in dir and waits up to wait_ms until no process is in
 * it or below (cgroup.events "populated 0", cgroup v2), the directory kept:
 * 0 once empty (or gone), -EBUSY when a process stays, another -errno.
 */
int cgroup_empty(const char *dir, int wait_ms);

#endif
