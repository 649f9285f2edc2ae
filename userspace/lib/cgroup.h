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

/* SIGKILL to every process of dir: cgroup.kill, else each member (v1, < 5.14). */
int cgroup_kill(const char *dir);
/*
 * Kills what is left in dir and removes it, waiting up to wait_ms for the
 * killed processes to go (rmdir's EBUSY). 0 once it is gone (or was),
 * -EBUSY when it stays, another -errno on a failure.
 */
int cgroup_remove(const char *dir, int wait_ms);

#endif
