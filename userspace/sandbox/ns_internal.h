/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the view's sources only (ns_mount.c, ns_dev.c): the new mount
 * API without <linux/mount.h>'s clashes, and the mounts both make.
 */
#ifndef BPFBOX_NS_INTERNAL_H
#define BPFBOX_NS_INTERNAL_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

struct strv;

/* The new mount API (5.2, mount_setattr 5.12), without <linux/mount.h>'s clashes. */
#define NS_OPEN_TREE_CLONE	   1
#define NS_OPEN_TREE_CLOEXEC	   O_CLOEXEC
#define NS_AT_RECURSIVE		   0x8000
#define NS_MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#define NS_MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#define NS_MOUNT_ATTR_RDONLY	   0x00000001

#ifndef __NR_open_tree
#define __NR_open_tree	428
#define __NR_move_mount 429
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif

struct ns_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

static inline int sys_open_tree(int dfd, const char *path, unsigned int flags)
{
	return syscall(__NR_open_tree, dfd, path, flags);
}

static inline int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
				 unsigned int flags)
{
	return syscall(__NR_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int sys_mount_setattr(int dfd, const char *path, unsigned int flags,
				    struct ns_mount_attr *attr)
{
	return syscall(__NR_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

/* ns_mount.c: mkdir -p for a mount point inside a fresh tmpfs; the last one a file if !dir. */
int ns_make_mountpoint(const char *path, bool dir);
/* ns_mount.c: a tmpfs at dir; a private one for everyone (1777) of bytes and inodes (0: unbounded). */
int ns_mount_tmpfs(const char *dir, unsigned long flags, const char *opts);
int ns_mount_shared_tmpfs(const char *dir, uint64_t bytes, uint64_t inodes);
/* ns_mount.c: dir's mount made read-only (nosuid, nodev). */
int ns_remount_ro(const char *dir);

/*
 * ns_dev.c: the minimal /dev (a few host nodes and the --device ones, a
 * private devpts and /dev/shm of shm_bytes and shm_inodes, the mask
 * sources), read-only. 0 or -errno with *step naming what failed.
 */
/* The session's resolv.conf when its resolver is in its namespace (ns_plan.proxy_port). */
#define NS_RESOLV_CONF "/dev/.bpfbox-resolv.conf"

int ns_build_dev(const struct strv *devices, uint64_t shm_bytes, uint64_t shm_inodes,
		 bool local_dns, const char **step);

#endif
