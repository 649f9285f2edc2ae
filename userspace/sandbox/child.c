// SPDX-License-Identifier: GPL-2.0
/*
 * The session's child: it joins its cgroups, restricts itself in the order
 * of docs/SECURITY.md and execs; a step that fails is reported to the
 * parent through a close-on-exec pipe (exit 125, nothing ran). And how the
 * parent makes it (spawn) and reads its report.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "session.h"
#include "session_internal.h"
#include "landlock.h"
#include "seccomp.h"
#include "reaper.h"
#include "grants.h"
#include "changes.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../lib/fdpass.h"
#include "../lib/log.h"
#include "../lib/util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *const step_names[] = {
	[STEP_CGROUP] = "join the session cgroup",
	[STEP_SESSION] = "setsid",
	[STEP_RLIMIT] = "setrlimit",
	[STEP_NAMESPACES] = "namespace setup",
	[STEP_CHDIR] = "chdir to the workspace",
	[STEP_USER] = "switch user",
	[STEP_CAPS] = "drop capabilities",
	[STEP_NO_NEW_PRIVS] = "no_new_privs",
	[STEP_LANDLOCK] = "Landlock restrict_self",
	[STEP_SECCOMP] = "seccomp load",
	[STEP_EXEC] = "exec",
};

static void child_fail_detail(const struct child_plan *c, enum child_step step, const char *detail)
{
	struct child_error e = {.step = step, .err = errno};

	if (detail)
		snprintf(e.detail, sizeof(e.detail), "%s", detail);

	if (write(c->report_fd, &e, sizeof(e)) < 0) {
		/* Nothing left to tell: the exit code says setup failed. */
	}
	_exit(step == STEP_EXEC ? (e.err == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE)
				: EXIT_SETUP);
}

static void child_fail(const struct child_plan *c, enum child_step step)
{
	child_fail_detail(c, step, NULL);
}

/*
 * Whether bpfbox is still there. In a new PID namespace getppid() is 0:
 * the error pipe then says it, POLLERR once its reader is gone.
 */
static bool parent_alive(const struct child_plan *c, pid_t parent)
{
	struct pollfd pfd = {.fd = c->report_fd, .events = POLLOUT};

	if (!(c->ns && (c->ns->clone_flags & CLONE_NEWPID)))
		return getppid() == parent;
	return poll(&pfd, 1, 0) >= 0 && !(pfd.revents & POLLERR);
}

static int set_limit(int resource, rlim_t value)
{
	struct rlimit rl = {value, value};

	return setrlimit(resource, &rl);
}

static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2] = {{0}};
	int last = 40;
	char buf[16];

	if (read_file_str("/proc/sys/kernel/cap_last_cap", buf, sizeof(buf)) > 0)
		last = atoi(buf);
	for (int cap = 0; cap <= last; cap++) {
		/* Without CAP_SETPCAP there is nothing in the set to drop. */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM && errno != EINVAL)
			return -1;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	return syscall(SYS_capset, &hdr, data);
}

/*
 * Egress by name without BPF (session_net_by_proxy): the proxy's listener
 * and its resolver's socket, on the loopback of the session's network
 * namespace, made while the child may still bind port 53 there, and sent
 * to bpfbox run, which serves them; none stays in the session.
 */
static int proxy_sockets(int sock, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fds[2] = {socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
		      socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
	int r = 0;

	a.sin_port = htons(port);
	if (fds[0] < 0 || fds[1] < 0 || bind(fds[0], (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fds[0], 1024) < 0)
		r = -errno;
	a.sin_port = htons(53);
	if (!r &&
	    (bind(fds[1], (struct sockaddr *)&a, sizeof(a)) < 0 || send_fds(sock, fds, 2) < 0))
		r = -errno;
	for (size_t i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(sock);
	return r;
}

/* The child's plan with another main filter (its copy: the plan is const). */
static const struct child_plan *with_filter(const struct child_plan *c,
					    const struct sock_fprog *filter)
{
	static struct child_plan copy;

	copy = *c;
	copy.filter = filter;
	return &copy;
}

/* The last step: exec, or report why not. Never returns. */
static void exec_command(void *arg)
{
	const struct child_plan *c = arg;

	if (limits_child_rlimit(c->lim) < 0)
		child_fail(c, STEP_RLIMIT);
	environ = c->envp;
	execvp(c->argv[0], c->argv);
	child_fail(c, STEP_EXEC);
}

/*
 * Into the workspace as the parent checked it (grants.h), never by its path
 * followed again: cwd, the workspace's new mount (ns_child_setup), or the
 * parent's fd; in a mount namespace of our own that fd is of the host's
 * tree, so the same path is opened here and must be the same directory.
 * Then the parent's fds of the grants are closed: none of them reaches the
 * command, nor stays in this process (the PID namespace's init).
 */
static void enter_workspace(const struct child_plan *c, int cwd)
{
	int ws = c->grants ? c->grants->ws : -1;

	if (cwd < 0 && ws >= 0 && c->ns)
		cwd = grant_reopen(c->workspace, ws);
	else if (cwd < 0 && ws >= 0)
		cwd = dup(ws);
	if (ws < 0 ? chdir(c->workspace) < 0 : cwd < 0 || fchdir(cwd) < 0) {
		if (cwd < 0 && ws >= 0)
			errno = -cwd;
		child_fail_detail(c, STEP_CHDIR, cwd < 0 ? grant_changed(c->workspace, cwd) : NULL);
	}
	if (cwd >= 0)
		close(cwd);
	if (c->grants)
		grant_fds_close(c->grants);
}

/* Runs in the child: restrict, then exec. Never returns. */
/*
 * no_new_privs, the Landlock ruleset, then seccomp: the listener's filter
 * first (its fd sent to the parent), then the session's. Returns the plan
 * with the filter that is now installed.
 */
static const struct child_plan *restrict_self(const struct child_plan *c)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(c, STEP_NO_NEW_PRIVS);
	if (c->ruleset_fd >= 0 && landlock_restrict_self(c->ruleset_fd, c->landlock_flags) < 0)
		child_fail(c, STEP_LANDLOCK);
	if (c->filter && c->notify_sock >= 0) {
		int fd = seccomp_install_notify((c->notify_net ? SECCOMP_NOTIFY_NET : 0) |
						(c->notify_inet ? SECCOMP_NOTIFY_INET : 0) |
						(c->notify_connect ? SECCOMP_NOTIFY_CONNECT : 0) |
						(c->notify_files ? SECCOMP_NOTIFY_FILES : 0) |
						(c->notify_bind ? SECCOMP_NOTIFY_BIND : 0));

		/* No listener: the compiled network deny holds, without a record. */
		if (fd >= 0) {
			if (send_fds(c->notify_sock, &fd, 1) < 0)
				child_fail(c, STEP_SECCOMP);
			close(fd);
			c = with_filter(c, c->filter_notified);
		}
		close(c->notify_sock);
	}
	if (c->filter) {
		int r = seccomp_install(c->filter);

		if (r) {
			errno = -r;
			child_fail(c, STEP_SECCOMP);
		}
	}
	return c;
}

void child_exec(const struct child_plan *c, pid_t parent)
{
	const struct policy_limits *lim = c->limits;
	struct ns_init_scrub scrub;
	bool init = c->ns && (c->ns->clone_flags & CLONE_NEWPID);
	int r, cwd = -1;

	if (c->release_fd >= 0) {
		char b;

		/* EOF: the hook failed or bpfbox died; the parent reports. */
		close(c->release_wfd);
		if (read(c->release_fd, &b, 1) != 1)
			_exit(EXIT_SETUP);
		close(c->release_fd);
	}
	sigprocmask(SIG_SETMASK, &c->saved_mask, NULL);
	/* Join the session cgroups before anything else, so they see all. */
	if (limits_child_join(c->lim, c->join_v2) < 0)
		child_fail(c, STEP_CGROUP);
	if (setsid() < 0)
		child_fail(c, STEP_SESSION);
	/* Die with bpfbox; the check closes the race with its exit. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || !parent_alive(c, parent))
		child_fail(c, STEP_SESSION);
	if ((c->out_fd >= 0 && dup2(c->out_fd, STDOUT_FILENO) < 0) ||
	    (c->err_fd >= 0 && dup2(c->err_fd, STDERR_FILENO) < 0) ||
	    (c->in_fd >= 0 && dup2(c->in_fd, STDIN_FILENO) < 0))
		child_fail(c, STEP_SESSION);
	/* A terminal stays a terminal: the session's pty is its controlling tty. */
	if (c->ctty && ioctl(STDOUT_FILENO, TIOCSCTTY, 0) < 0)
		child_fail(c, STEP_SESSION);
	signal(SIGPIPE, SIG_DFL);
	if (set_limit(RLIMIT_CORE, 0) ||
	    (lim->file_size_mb && set_limit(RLIMIT_FSIZE, lim->file_size_mb << 20)) ||
	    (lim->open_files && set_limit(RLIMIT_NOFILE, lim->open_files)))
		child_fail(c, STEP_RLIMIT);
	/* Read while the host's /proc is there: the init wipes what it shows. */
	if (init && (r = ns_init_scrub_read(&scrub)) < 0) {
		errno = -r;
		child_fail_detail(c, STEP_NAMESPACES, "read /proc/self/stat");
	}
	if (c->ns) {
		const char *step = NULL;

		r = ns_child_setup(c->ns, c->policy, c->ruleset_fd, c->rights, c->grants, &cwd,
				   &step);

		if (r < 0) {
			errno = -r;
			child_fail_detail(c, STEP_NAMESPACES, step);
		}
	}
	if (c->ns && c->ns->proxy_port &&
	    (r = proxy_sockets(c->ns->proxy_sock, c->ns->proxy_port)) < 0) {
		errno = -r;
		child_fail_detail(c, STEP_NAMESPACES, "open the egress proxy's sockets");
	}
	enter_workspace(c, cwd);
	/* A change set starts in a tick after the one bpfbox started in: usually passed by now. */
	if (c->changes_start_fd >= 0)
		changes_start_wait(c->changes_after, c->changes_start_fd);
	if (c->switch_user && (setgroups(0, NULL) || setgid(c->gid) || setuid(c->uid)))
		child_fail(c, STEP_USER);
	if (drop_capabilities() < 0)
		child_fail(c, STEP_CAPS);
	c = restrict_self(c);
	/* Every inherited descriptor above stderr closes at exec. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(c, STEP_SESSION);
	/* pid 1 of the session's PID namespace stays its init; the command is vforked. */
	if (init && (r = ns_run_as_init(exec_command, (void *)c, &scrub)) < 0) {
		errno = -r;
		child_fail(c, STEP_NAMESPACES);
	}
	exec_command((void *)c);
}

void report_setup_failure(const struct child_error *e)
{
	if (e->step == STEP_EXEC)
		return;
	if (e->detail[0])
		log_error("could not set up the session: %s failed at %.*s: %s; nothing ran",
			  step_names[e->step], (int)sizeof(e->detail), e->detail, strerror(e->err));
	else
		log_error("could not set up the session: %s failed: %s; nothing ran",
			  step_names[e->step], strerror(e->err));
}

/*
 * fork(), or clone3(CLONE_INTO_CGROUP) straight into the session cgroup:
 * no migration afterwards, which would cost an RCU grace period (~10 ms).
 * *placed tells the child whether it still has to join (old kernels).
 */
pid_t spawn(const struct session_limits *l, uint64_t ns_flags, bool *placed)
{
	*placed = false;
	if (l->cg_fd >= 0) {
		struct bpfbox_clone_args a = {.flags = BPFBOX_CLONE_INTO_CGROUP | ns_flags,
					      .exit_signal = SIGCHLD,
					      .cgroup = l->cg_fd};
		pid_t pid = syscall(SYS_clone3, &a, sizeof(a));

		if (pid >= 0) {
			*placed = true;
			return pid;
		}
	}
	/* clone(2) without a stack is fork(2) with namespaces. */
	if (ns_flags)
		return syscall(SYS_clone, (unsigned long)ns_flags | SIGCHLD, NULL, NULL, NULL,
			       NULL);
	return fork();
}
