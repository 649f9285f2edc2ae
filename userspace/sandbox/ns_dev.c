// SPDX-License-Identifier: GPL-2.0
/*
 * The session's /dev (docs/SECURITY.md, "Namespaces"): a read-only tmpfs
 * with the host's null, zero, full, random, urandom and tty bound in, the
 * --device nodes at their own paths (docs/SECURITY.md, "Devices"), a
 * private devpts and /dev/shm, and the empty mode-0 sources of the masks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns_internal.h"
#include "../policy/policy.h"
#include "../lib/util.h"

/* Device nodes of the minimal /dev, bound from the host's. */
static const char *const dev_nodes[] = {
	"null", "zero", "full", "random", "urandom", "tty",
};

/*
 * The --device nodes (policy_grant_problem checked each), cloned before
 * /dev is covered and bound at the same path in the new one; fds[i] -1:
 * not cloned.
 */
static int clone_devices(const struct strv *devices, int *fds, const char **step)
{
	for (size_t i = 0; i < devices->n; i++) {
		*step = devices->v[i];
		fds[i] = sys_open_tree(AT_FDCWD, devices->v[i],
				       NS_OPEN_TREE_CLONE | NS_OPEN_TREE_CLOEXEC);
		if (fds[i] < 0)
			return -errno;
	}
	return 0;
}

static int attach_devices(const struct strv *devices, int *fds, const char **step)
{
	for (size_t i = 0; i < devices->n; i++) {
		int r;

		*step = devices->v[i];
		if ((r = ns_make_mountpoint(devices->v[i], false)) < 0)
			return r;
		if (sys_move_mount(fds[i], "", AT_FDCWD, devices->v[i],
				   NS_MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
	}
	return 0;
}

/*
 * /dev's own entries: the mount points of devpts and /dev/shm, the mask
 * sources (empty, mode 0: EACCES even to a root without capabilities), and
 * with local_dns the session's resolv.conf, bound over /etc/resolv.conf
 * (ns_mask.c): its resolver is in its network namespace.
 */
static int make_sources(bool local_dns, const char **step)
{
	static const char conf[] = "nameserver 127.0.0.1\n";
	int fd;

	*step = "make /dev's masks";
	if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 0755) < 0 ||
	    mkdir("/dev/.bpfbox-mask-d", 0) < 0 || mkdir("/dev/.bpfbox-empty", 0755) < 0 ||
	    (fd = open("/dev/.bpfbox-mask-f", O_WRONLY | O_CREAT | O_CLOEXEC, 0)) < 0 ||
	    close(fd) < 0)
		return -errno;
	if (!local_dns)
		return 0;
	*step = "write the session's resolv.conf";
	fd = open(NS_RESOLV_CONF, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, conf, sizeof(conf) - 1) != sizeof(conf) - 1) {
		close(fd);
		return -EIO;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* The minimal /dev: a few host nodes and the --device ones, a private devpts and /dev/shm, masks. */
int ns_build_dev(const struct strv *devices, uint64_t shm_bytes, uint64_t shm_inodes,
		 bool local_dns, const char **step)
{
	static const char *const links[][2] = {
		{"/proc/self/fd", "/dev/fd"},	    {"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"},
		{"pts/ptmx", "/dev/ptmx"},
	};
	int fds[ARRAY_SIZE(dev_nodes)], dfds[POLICY_MAX_DEVICES];
	char path[64];
	int r = 0, fd;

	for (size_t i = 0; i < ARRAY_SIZE(dfds); i++)
		dfds[i] = -1;
	for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		fds[i] = sys_open_tree(AT_FDCWD, path, NS_OPEN_TREE_CLONE | NS_OPEN_TREE_CLOEXEC);
	}
	if (devices->n > ARRAY_SIZE(dfds)) {
		r = -E2BIG;
		goto out;
	}
	if ((r = clone_devices(devices, dfds, step)) < 0)
		goto out;
	*step = "mount a tmpfs at /dev";
	if ((r = ns_mount_tmpfs("/dev", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64")) <
	    0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++) {
		if (fds[i] < 0)
			continue; /* absent on the host: absent here */
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		*step = "bind a device node into /dev";
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
		if (fd < 0 || close(fd) < 0 ||
		    sys_move_mount(fds[i], "", AT_FDCWD, path, NS_MOVE_MOUNT_F_EMPTY_PATH) < 0) {
			r = -errno;
			goto out;
		}
	}
	if ((r = attach_devices(devices, dfds, step)) < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (symlink(links[i][0], links[i][1]) < 0) {
			*step = "make /dev's symlinks";
			r = -errno;
			goto out;
		}
	if ((r = make_sources(local_dns, step)) < 0)
		goto out;
	/* A private devpts: only the session's own ptys are in it. */
	*step = "mount a private devpts at /dev/pts";
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0) {
		r = -errno;
		goto out;
	}
	*step = "mount a tmpfs at /dev/shm";
	if ((r = ns_mount_shared_tmpfs("/dev/shm", shm_bytes, shm_inodes)) < 0)
		goto out;
	*step = "make /dev read-only";
	r = ns_remount_ro("/dev");
out:
	for (size_t i = 0; i < ARRAY_SIZE(dev_nodes); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (size_t i = 0; i < ARRAY_SIZE(dfds); i++)
		if (dfds[i] >= 0)
			close(dfds[i]);
	return r;
}
