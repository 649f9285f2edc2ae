// SPDX-License-Identifier: GPL-2.0
/*
 * The session's namespaces (ns.h, docs/SECURITY.md): the plan (which
 * namespaces this host gives), the tmpfs limits, and the PID namespace's
 * init. The view of the host built inside them is ns_mount.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns.h"
#include "../probe/probe.h"
#include "../lib/util.h"

/* ---- plan ---- */

static char probe_stack[16384] __attribute__((aligned(16)));

static int probe_child(void *arg)
{
	(void)arg;
	return 0;
}

void ns_tmp_limits(uint64_t disk_mb, uint64_t inodes_per_mb, uint64_t *bytes, uint64_t *inodes)
{
	/* No disk limit: tmpfs's own default (half of RAM) still bounds it. */
	*bytes = disk_mb << 20;
	/* Entries count as the disk monitor counts them: empty files too. */
	*inodes = disk_mb * (inodes_per_mb ? inodes_per_mb : 1024);
	if (*inodes && *inodes < 4096)
		*inodes = 4096;
}

int ns_plan(struct ns_plan *n, bool want)
{
	uint64_t flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC;
	pid_t pid;
	int status;

	memset(n, 0, sizeof(*n));
	n->uid = geteuid();
	n->gid = getegid();
	if (!want) {
		snprintf(n->why_not, sizeof(n->why_not),
			 "turned off by --no-namespaces or the namespaces key");
		return 0;
	}
	/*
	 * The view is built by flags on the mount at "/": a caller chrooted
	 * into a plain directory has none (mount_setattr needs a mount root).
	 */
	if (!probe_root_is_mount()) {
		snprintf(n->why_not, sizeof(n->why_not),
			 "the root directory is not a mount point (a chroot)");
		return 0;
	}
	n->clone_flags = flags;
	/*
	 * Root may make them (a container that forbids it is caught when the
	 * child is cloned, ns_spawn_failed). Another user needs a user
	 * namespace: sysctls, an AppArmor restriction and a chroot all answer
	 * this probe. CLONE_VM|CLONE_VFORK: no copy of our memory, the child
	 * exits at once.
	 */
	if (n->uid == 0 && probe_has_sys_admin())
		return 0;
	n->clone_flags |= CLONE_NEWUSER;
	n->user = true;
	pid = clone(probe_child, probe_stack + sizeof(probe_stack),
		    CLONE_NEWUSER | CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	if (pid < 0) {
		ns_spawn_failed(n, errno);
		return 0;
	}
	waitpid(pid, &status, __WALL);
	return 0;
}

void ns_spawn_failed(struct ns_plan *n, int err)
{
	snprintf(n->why_not, sizeof(n->why_not), "%s: %s",
		 n->user			   ? "unshare(CLONE_NEWUSER)"
		 : (n->clone_flags & CLONE_NEWNET) ? "clone(CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWIPC|"
						     "CLONE_NEWNET)"
						   : "clone(CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWIPC)",
		 strerror(err));
	n->clone_flags = 0;
	n->user = false;
}

int ns_init_scrub_read(struct ns_init_scrub *s)
{
	unsigned long v[4];
	char buf[1024];
	const char *p = proc_stat_fields(0, buf, sizeof(buf));

	/* Fields 48..51 (proc(5)); p is at the space before field 3. */
	for (int field = 3; p && field < 48; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4 || v[1] < v[0] ||
	    v[3] < v[2])
		return -EIO;
	*s = (struct ns_init_scrub){v[0], v[1], v[2], v[3]};
	return 0;
}

/*
 * What the init keeps of bpfbox must not reach the session: the kernel
 * refuses /proc/1/{environ,mem,maps,exe} of a process that is not
 * dumpable to one without CAP_SYS_PTRACE, and /proc/1/cmdline, which it
 * shows to anyone, reads the argv area wiped here.
 */
static void init_scrub(const struct ns_init_scrub *s)
{
	static const char name[] = "bpfbox-init";
	size_t len = s->arg_end - s->arg_start;

	explicit_bzero((void *)s->arg_start, len);
	explicit_bzero((void *)s->env_start, s->env_end - s->env_start);
	/* What ps shows for pid 1; never more than bpfbox's own argv held. */
	if (len > sizeof(name))
		memcpy((void *)s->arg_start, name, sizeof(name));
}

int ns_run_as_init(void (*exec_fn)(void *), void *arg, const struct ns_init_scrub *scrub)
{
	int status = 0;
	pid_t pid;

	/* Before the fork: the child shares this memory until it execs. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	/* The parent waits until the command has exec'd (or _exit'ed): no copy of memory. */
	pid = vfork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		exec_fn(arg);
		_exit(EXIT_FAILURE);
	}
	init_scrub(scrub);
	/* Hold nothing of the session's: its output pipes end with the command. */
	syscall(SYS_close_range, 0U, ~0U, 0U);
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, 0);

		if (w == pid) {
			status = st;
			break;
		}
		if (w < 0 && errno != EINTR)
			_exit(EXIT_FAILURE);
	}
	/* A PID namespace's init cannot die of its own signal: 128+N says the same. */
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
