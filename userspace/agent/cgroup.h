/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One cgroup v2 directory per session, under a parent that holds them all
 * (<cgroup2 mount>/bpfbox by default; on hybrid hosts the v2 mount is
 * /sys/fs/cgroup/unified). The BPF programs key their per-session state on
 * the cgroup's id; cgroup programs attach once, to the parent.
 */
#ifndef BPFBOX_CGROUP_H
#define BPFBOX_CGROUP_H

#include <limits.h>
#include <stdint.h>

struct session_cgroup {
	char path[PATH_MAX];
	uint64_t id;	/* cgroup id: the directory's inode number on cgroup2 */
	int procs_fd;	/* cgroup.procs, open for the child to join */
};

/* The parent of session cgroups: $BPFBOX_CGROUP_PARENT or <cgroup2>/bpfbox. */
int cgroup_parent(char *buf, size_t size);
/* Creates the parent if needed; returns an O_DIRECTORY fd for attaching. */
int cgroup_parent_open(const char *parent);

int session_cgroup_create(const char *parent, const char *name, struct session_cgroup *cg);
/* Kills every process in it (cgroup.kill) and removes it, waiting up to 2 s. */
int session_cgroup_destroy(struct session_cgroup *cg);

#endif
