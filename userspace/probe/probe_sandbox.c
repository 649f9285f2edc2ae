// SPDX-License-Identifier: GPL-2.0
/*
 * The in-process restrictions, each tried for real in a forked child:
 * a Landlock ruleset, the session's seccomp filter, an unprivileged user
 * namespace, and the namespaces a session of this caller gets.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_internal.h"
#include "../lib/util.h"
#include "../sandbox/seccomp.h"

/* Runs fn in a forked child so that what it restricts dies with it. */
static int run_in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

/*
 * Child: a ruleset that handles file reads with no rule must make reading
 * "/" fail with EACCES once the process restricts itself.
 */
static int landlock_child(void *arg)
{
	struct bpfbox_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_READ_DIR,
	};
	int fd, dir;

	(void)arg;
	fd = landlock_create_ruleset(&attr, 0);
	if (fd < 0)
		return errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || landlock_restrict_self(fd, 0))
		return errno;
	dir = open("/", O_RDONLY | O_DIRECTORY);
	if (dir >= 0)
		return EPROTO;
	return errno == EACCES ? 0 : errno;
}

void probe_landlock(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_LANDLOCK];
	char rights[256];
	int abi, r;

	abi = landlock_abi();
	if (abi == -EOPNOTSUPP) {
		probe_set_feat(f, FEAT_NO, -abi,
			       "built in but not enabled at boot (add landlock to lsm=)");
		return;
	}
	if (abi < 0) {
		probe_set_feat(f, FEAT_NO, -abi, "not supported by this kernel (%s)",
			       strerror(-abi));
		return;
	}
	caps->landlock_kernel_abi = abi;
	landlock_rights_for_abi(abi, &caps->landlock);
	r = run_in_child(landlock_child, NULL);
	if (r) {
		probe_set_feat(f, FEAT_NO, r, "ABI %d but a test ruleset did not enforce (%s)", abi,
			       strerror(-r));
		return;
	}
	landlock_rights_describe(&caps->landlock, rights, sizeof(rights));
	if (abi > BPFBOX_LANDLOCK_ABI_MAX)
		probe_set_feat(f, FEAT_YES, 0, "ABI %d (used as %d): %s", abi,
			       BPFBOX_LANDLOCK_ABI_MAX, rights);
	else
		probe_set_feat(f, FEAT_YES, 0, "ABI %d: %s", abi, rights);
}

/* Child: the sessions' own filter must turn personality(PER_LINUX32) away. */
static int seccomp_child(void *arg)
{
	int r;

	(void)arg;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return errno;
	r = seccomp_install(seccomp_program(SECCOMP_NET_DENY));
	if (r)
		return -r;
	if (syscall(SYS_personality, 0x0008) != -1 || errno != EPERM)
		return EPROTO;
	return 0;
}

/* Feature f: yes when child(NULL) returns 0 in a child, else no (no_fmt: its %s the error). */
static void probe_child(struct feature *f, int (*child)(void *), const char *no_fmt,
			const char *yes)
{
	int r = run_in_child(child, NULL);

	if (r)
		probe_set_feat(f, FEAT_NO, r, no_fmt, strerror(-r));
	else
		probe_set_feat(f, FEAT_YES, 0, "%s", yes);
}

void probe_seccomp(struct host_caps *caps)
{
	probe_child(&caps->feat[FEAT_SECCOMP], seccomp_child,
		    "a test filter could not be installed (%s)",
		    "the session filter installed and enforced in a child");
}

static int userns_child(void *arg)
{
	(void)arg;
	/* Root can always create one; the question is about other users. */
	if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
		return errno;
	return unshare(CLONE_NEWUSER) ? errno : 0;
}

void probe_userns(struct host_caps *caps)
{
	probe_child(&caps->feat[FEAT_USERNS], userns_child,
		    "unshare(CLONE_NEWUSER) as an unprivileged user: %s",
		    "unprivileged users can create user namespaces");
}

bool probe_has_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32));
}

bool probe_root_is_mount(void)
{
	struct statx stx;

	if (statx(AT_FDCWD, "/", 0, 0, &stx) < 0 ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return true; /* cannot tell (before 5.8): let the clone say */
	return stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
}

/*
 * Child of probe_namespaces: makes the namespaces a session of this caller
 * gets (sandbox/ns.c: mount, PID, IPC, network under network deny, and
 * user when not root), the user
 * namespace's id maps, a private mount tree with a tmpfs, and a /proc of
 * the PID namespace from its pid 1. Exits with the failed step (1-6).
 */
static int namespaces_child(void *arg)
{
	bool user = geteuid() != 0 || !probe_has_sys_admin();
	int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET |
		    (user ? CLONE_NEWUSER : 0);
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char line[64];
	int status;
	pid_t pid;

	(void)arg;
	if (unshare(flags) < 0)
		return 1;
	if (user) {
		snprintf(line, sizeof(line), "%u %u 1\n", uid, uid);
		if (write_file_str("/proc/self/uid_map", line) ||
		    write_file_str("/proc/self/setgroups", "deny"))
			return 2;
		snprintf(line, sizeof(line), "%u %u 1\n", gid, gid);
		if (write_file_str("/proc/self/gid_map", line))
			return 2;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k") < 0)
		return 3;
	pid = fork();
	if (pid < 0)
		return 4;
	if (pid == 0)
		_exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? 5
		      : getpid() == 1								 ? 0
				      : 6);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return 4;
	return WEXITSTATUS(status);
}

void probe_namespaces(struct host_caps *caps)
{
	static const char *const steps[] = {
		"",
		"unshare",
		"the user namespace's id maps",
		"a private mount tree and a tmpfs",
		"a fork into the PID namespace",
		"a /proc of the PID namespace",
		"pid 1 in the PID namespace",
	};
	struct feature *f = &caps->feat[FEAT_NAMESPACES];
	bool user = geteuid() != 0 || !probe_has_sys_admin();
	int r;

	if (!probe_root_is_mount()) {
		probe_set_feat(f, FEAT_NO, EPERM,
			       "the root directory is not a mount point (a chroot)");
		return;
	}
	r = -run_in_child(namespaces_child, NULL);
	if (r > 0 && r < (int)ARRAY_SIZE(steps))
		probe_set_feat(f, FEAT_NO, EPERM, "%s namespaces: %s failed",
			       user ? "user, mount, PID, IPC and network"
				    : "mount, PID, IPC and network",
			       steps[r]);
	else if (r)
		probe_set_feat(f, FEAT_NO, -r, "the probe failed (%s)", strerror(-r));
	else
		probe_set_feat(
			f, FEAT_YES, 0,
			"%s namespaces, a read-only host view, /proc, /tmp, /dev/shm and (network "
			"deny) a loopback of its own",
			user ? "user, mount, PID, IPC and network" : "mount, PID, IPC and network");
}
