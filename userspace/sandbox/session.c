// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
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
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* clone3(2) with CLONE_INTO_CGROUP (Linux 5.7), without <linux/sched.h>'s clashes. */
#define BPFBOX_CLONE_INTO_CGROUP 0x200000000ULL

struct bpfbox_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

extern char **environ;

/* What the child reports through the error pipe when a step fails. */
struct child_error {
	int step;
	int err;
	char detail[200]; /* the sub-step (namespaces) */
};

enum child_step {
	STEP_CGROUP,
	STEP_SESSION,
	STEP_RLIMIT,
	STEP_NAMESPACES,
	STEP_CHDIR,
	STEP_USER,
	STEP_CAPS,
	STEP_NO_NEW_PRIVS,
	STEP_LANDLOCK,
	STEP_SECCOMP,
	STEP_EXEC,
};

static const char *const step_names[] = {
	[STEP_CGROUP] = "join the session cgroup", [STEP_SESSION] = "setsid", [STEP_RLIMIT] = "setrlimit",
	[STEP_NAMESPACES] = "namespace setup",
	[STEP_CHDIR] = "chdir to the workspace", [STEP_USER] = "switch user",
	[STEP_CAPS] = "drop capabilities", [STEP_NO_NEW_PRIVS] = "no_new_privs",
	[STEP_LANDLOCK] = "Landlock restrict_self", [STEP_SECCOMP] = "seccomp load",
	[STEP_EXEC] = "exec",
};

/* Everything the child needs, prepared by the parent before fork. */
struct child_plan {
	char *const *argv;
	char **envp;
	const char *workspace;
	int ruleset_fd; /* -1: no Landlock */
	uint32_t landlock_flags;
	const struct sock_fprog *filter; /* NULL: no seccomp */
	const struct sock_fprog *filter_notified; /* with notify_sock: the filter beside it */
	int notify_sock;  /* network deny through a listener sent here; -1: none */
	bool notify_net;  /* the listener takes socket() */
	bool notify_files; /* ... and the file changes, for the summary (fileops.c) */
	int in_fd;	  /* the pty for stdin; -1: inherit */
	bool ctty;	  /* out_fd is a pty to make the controlling terminal */
	bool switch_user;
	uid_t uid;
	gid_t gid;
	int out_fd, err_fd; /* -1: inherit */
	int cgroup_procs_fd; /* -1: stay in bpfbox's cgroup */
	const struct session_limits *lim; /* v1 cgroups to join, rlimit fallback */
	bool join_v2;	     /* clone3 could not place the child in its v2 cgroup */
	int release_fd, release_wfd; /* -1: no hooks.before_release to wait for */
	int report_fd;
	const struct policy_limits *limits;
	const struct bpfbox_policy *policy;
	const struct ns_plan *ns; /* NULL: no namespaces */
	const struct landlock_rights *rights;
	sigset_t saved_mask;
};

static void add_not_enforced(struct session_layers *l, const char *what)
{
	size_t len = strlen(l->not_enforced);

	snprintf(l->not_enforced + len, sizeof(l->not_enforced) - len, "%s%s",
		 len ? "; " : "", what);
}

/* The session id is 128 random bits: the name is unique and unguessable. */
static void name_private_tmp(struct session *s)
{
	const char *base = getenv("TMPDIR");

	/* With a mount namespace, /tmp itself is the session's tmpfs (ns.c). */
	if (!s->policy->private_tmp ||
	    (s->layers.ns.clone_flags && s->policy->mode != MODE_FULL_ACCESS))
		return;
	if (!base || base[0] != '/')
		base = "/tmp";
	snprintf(s->private_tmp, sizeof(s->private_tmp), "%s/bpfbox-%s", base, s->id);
}

int session_plan(struct session *s, const struct bpfbox_policy *p)
{
	struct session_layers *l = &s->layers;
	unsigned char rnd[16];
	int abi;

	memset(s, 0, sizeof(*s));
	s->policy = p;
	/* First: it sets the fds session_cleanup() closes. */
	limits_plan(&s->lim, &p->limits, NULL, LIMITS_VIA_AUTO);
	s->hooks.cgroup_procs_fd = -1;
	s->hooks.poll_fd = -1;
	s->result.wait_status = -1;
	s->status_fd = -1;
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return log_error_errno(errno, "cannot generate a session id");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(s->id + 2 * i, 3, "%02x", rnd[i]);

	abi = landlock_abi();
	if (abi > 0) {
		l->landlock = true;
		l->landlock_abi = abi;
		landlock_rights_for_abi(abi, &l->rights);
	} else {
		add_not_enforced(l, abi == -EOPNOTSUPP ?
				 "filesystem isolation (Landlock is not enabled at boot)" :
				 "filesystem isolation (no Landlock in this kernel)");
	}
	/* PR_GET_SECCOMP fails with EINVAL only when seccomp is not built in. */
	l->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	if (!l->seccomp)
		add_not_enforced(l, "syscall filtering and network deny (no seccomp)");
	if (l->landlock && !l->rights.scoped)
		add_not_enforced(l, "abstract unix socket and signal isolation (Landlock ABI < 6)");
	if (l->landlock && p->net == NET_DENY && !l->rights.net && !l->seccomp)
		add_not_enforced(l, "network deny");
	/* What holds of memory, pids, cpu and disk is in s->lim.not_enforced. */
	ns_plan(&l->ns, p->namespaces);
	l->ns.inodes_per_mb = MONITOR_ENTRIES_PER_MB;
	if (l->ns.why_not[0]) {
		char what[256];

		snprintf(what, sizeof(what),
			 "read-only host, private /proc /tmp /dev/shm, process and IPC isolation "
			 "(no namespaces: %s)", l->ns.why_not);
		add_not_enforced(l, what);
	}

	name_private_tmp(s);
	/* Embedded mode without BPF asks for what Landlock and seccomp give. */
	l->requested = LEVEL_STANDARD;
	l->enabled = level_from(false, l->landlock, l->seccomp, false);
	return 0;
}

void session_plan_limits(struct session *s, enum limits_via via)
{
	limits_plan(&s->lim, &s->policy->limits, NULL, via);
}

bool session_limits_by_cgroup(const struct session *s)
{
	for (int r = 0; r < RES__COUNT; r++)
		if (s->lim.how[r] != LIMIT_CGROUP2 && s->lim.how[r] != LIMIT_CGROUP1)
			return false;
	return true;
}

int session_prepare_cgroup(struct session *s)
{
	if (s->lim_made)
		return s->lim.cg[0] ? 0 : -ENOENT;
	s->lim_made = true;
	return limits_create(&s->lim, s->id);
}

void session_cleanup(struct session *s)
{
	limits_destroy(&s->lim);
}

static void child_fail_detail(const struct child_plan *c, enum child_step step, const char *detail)
{
	struct child_error e = { .step = step, .err = errno };

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
	struct pollfd pfd = { .fd = c->report_fd, .events = POLLOUT };

	if (!(c->ns && (c->ns->clone_flags & CLONE_NEWPID)))
		return getppid() == parent;
	return poll(&pfd, 1, 0) >= 0 && !(pfd.revents & POLLERR);
}

static int set_limit(int resource, rlim_t value)
{
	struct rlimit rl = { value, value };

	return setrlimit(resource, &rl);
}

static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	int last = 40;
	char buf[16];

	if (read_file_str("/proc/sys/kernel/cap_last_cap", buf, sizeof(buf)) > 0)
		last = atoi(buf);
	for (int cap = 0; cap <= last; cap++) {
		/* Without CAP_SETPCAP there is nothing in the set to drop. */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM &&
		    errno != EINVAL)
			return -1;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	return syscall(SYS_capset, &hdr, data);
}

/* Passes fd over a unix socket (SCM_RIGHTS). */
static int send_fd(int sock, int fd)
{
	char data = 0, ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &data, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The fd send_fd() passed, or -1 when none came. */
static int recv_fd(int sock)
{
	char data, ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &data, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
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

/* Runs in the child: restrict, then exec. Never returns. */
static void child_exec(const struct child_plan *c, pid_t parent)
{
	const struct policy_limits *lim = c->limits;

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
	if (c->cgroup_procs_fd >= 0 && write(c->cgroup_procs_fd, "0", 1) != 1)
		child_fail(c, STEP_CGROUP);
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
	if (c->ns) {
		const char *step = NULL;
		int r = ns_child_setup(c->ns, c->policy, c->ruleset_fd, c->rights, &step);

		if (r < 0) {
			errno = -r;
			child_fail_detail(c, STEP_NAMESPACES, step);
		}
	}
	if (chdir(c->workspace) < 0)
		child_fail(c, STEP_CHDIR);
	if (c->switch_user && (setgroups(0, NULL) || setgid(c->gid) || setuid(c->uid)))
		child_fail(c, STEP_USER);
	if (drop_capabilities() < 0)
		child_fail(c, STEP_CAPS);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(c, STEP_NO_NEW_PRIVS);
	if (c->ruleset_fd >= 0 && landlock_restrict_self(c->ruleset_fd, c->landlock_flags) < 0)
		child_fail(c, STEP_LANDLOCK);
	if (c->filter && c->notify_sock >= 0) {
		int fd = seccomp_install_notify(c->notify_net, c->notify_files);

		/* No listener: the compiled network deny holds, without a record. */
		if (fd >= 0) {
			if (send_fd(c->notify_sock, fd) < 0)
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
	/* Every inherited descriptor above stderr closes at exec. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(c, STEP_SESSION);
	/* pid 1 of the session's PID namespace stays its init; the command is vforked. */
	if (c->ns && (c->ns->clone_flags & CLONE_NEWPID) &&
	    ns_run_as_init(exec_command, (void *)c) < 0)
		child_fail(c, STEP_NAMESPACES);
	exec_command((void *)c);
}

static int env_push(struct strv *env, const char *name, const char *value)
{
	char *entry;
	int r;

	if (!value)
		return 0;
	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	r = strv_push(env, entry);
	free(entry);
	return r;
}

/* The allowlisted environment: nothing of the caller's leaks otherwise. */
static int build_env(const struct session *s, const char *path_env, struct strv *env)
{
	const struct bpfbox_policy *p = s->policy;
	const char *path = getenv("PATH");
	int r = 0;

	r = env_push(env, "PATH", path_env[0] ? path_env : path ? path
						 : "/usr/local/bin:/usr/bin:/bin");
	/* A private home; the workspace when none could be made. */
	if (!r)
		r = env_push(env, "HOME", s->home[0] ? s->home : p->workspace);
	if (!r)
		r = env_push(env, "LANG", getenv("LANG"));
	if (!r)
		r = env_push(env, "TERM", getenv("TERM"));
	if (!r && s->private_tmp[0])
		r = env_push(env, "TMPDIR", s->private_tmp);
	else if (!r && p->private_tmp && s->layers.ns.clone_flags && p->mode != MODE_FULL_ACCESS)
		r = env_push(env, "TMPDIR", "/tmp");
	for (size_t i = 0; !r && i < p->env.n; i++) {
		const char *e = p->env.v[i];

		/* The session's identity is bpfbox's to say. */
		if (startswith(e, "BPFBOX_SESSION_ID=") || startswith(e, "BPFBOX_WORKSPACE="))
			continue;
		r = strv_push(env, e);
	}
	if (!r)
		r = env_push(env, "BPFBOX_SESSION_ID", s->id);
	if (!r)
		r = env_push(env, "BPFBOX_WORKSPACE", p->workspace);
	/* Egress by name: tools that honour a proxy use ours (docs/network.md). */
	for (size_t i = 0; !r && s->proxy_url[0] && i < 4; i++) {
		static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						     "https_proxy" };

		r = env_push(env, names[i], s->proxy_url);
	}
	return r;
}

static int make_private_tmp(struct session *s)
{
	if (!s->private_tmp[0])
		return 0;
	if (mkdir(s->private_tmp, 0700) < 0) {
		int r = log_error_errno(errno, "cannot create the session's private tmp dir %s",
					s->private_tmp);

		s->private_tmp[0] = '\0';
		return r;
	}
	return 0;
}

static void remove_private_tmp(struct session *s)
{
	/* Any depth: a tree deeper than PATH_MAX is removed too. */
	if (s->private_tmp[0] && rm_tree(s->private_tmp) < 0)
		log_warn("cannot remove all of the session's private tmp %s", s->private_tmp);
}

static int lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return -ENOENT;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

static void report_setup_failure(const struct child_error *e)
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
static pid_t spawn(const struct session_limits *l, uint64_t ns_flags, bool *placed)
{
	*placed = false;
	if (l->cg_fd >= 0) {
		struct bpfbox_clone_args a = { .flags = BPFBOX_CLONE_INTO_CGROUP | ns_flags,
					       .exit_signal = SIGCHLD, .cgroup = l->cg_fd };
		pid_t pid = syscall(SYS_clone3, &a, sizeof(a));

		if (pid >= 0) {
			*placed = true;
			return pid;
		}
	}
	/* clone(2) without a stack is fork(2) with namespaces. */
	if (ns_flags)
		return syscall(SYS_clone, (unsigned long)ns_flags | SIGCHLD, NULL, NULL, NULL, NULL);
	return fork();
}

/* The trees whose growth counts against the disk limit. */
static int start_monitor(struct session *s, struct monitor *mon)
{
	const struct bpfbox_policy *p = s->policy;

	return monitor_open(mon, &s->lim, s->id, p->mode == MODE_READ_ONLY ? NULL : p->workspace,
			    s->private_tmp[0] ? s->private_tmp : NULL, s->home[0] ? s->home : NULL);
}

int session_run(struct session *s, char *const argv[])
{
	const struct bpfbox_policy *p = s->policy;
	struct child_plan c = { .argv = argv, .workspace = p->workspace, .ruleset_fd = -1,
				.out_fd = -1, .err_fd = -1, .limits = &p->limits,
				.cgroup_procs_fd = s->hooks.cgroup_procs_fd, .lim = &s->lim,
				.release_fd = -1, .release_wfd = -1, .notify_sock = -1,
				.in_fd = -1, .policy = p, .rights = &s->layers.rights };
	struct supervise_io io = { .out_r = -1, .err_r = -1, .in_w = -1, .notify_fd = -1 };
	struct landlock_extra lx = { .caller_home = session_caller_home(),
				     .read_host = p->read_host };
	struct strv path_ro = { 0 };
	struct bpfbox_policy view = { 0 };
	char path_env[8192] = "";
	int ntf[2] = { -1, -1 }, pty = -1, pts = -1;
	struct sigaction old_pipe, ign = { .sa_handler = SIG_IGN };
	struct termios saved_tio;
	bool raw = false, notify;
	struct strv env = { 0 };
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int rel[2] = { -1, -1 };
	int sig_fd = -1, r;
	struct child_error ce;
	const char *bad = NULL;
	bool relaying = p->limits.output_bytes > 0, placed, mon_on = false, merged = false;
	struct stat so, se;
	struct monitor mon;
	sigset_t mask;
	pid_t child, self;
	ssize_t n;

	if (p->user && (r = lookup_user(p->user, &c.uid, &c.gid)) < 0)
		return log_error_errno(r, "unknown user '%s' for --user", p->user);
	c.switch_user = p->user != NULL;
	if ((r = make_private_tmp(s)) < 0)
		return r;
	if ((r = session_home_make(s, c.switch_user ? c.uid : getuid(),
				   c.switch_user ? c.gid : getgid())) < 0) {
		remove_private_tmp(s);
		return r;
	}
	if ((r = session_home_path(s, &path_ro, path_env, sizeof(path_env))) < 0)
		goto out;
	lx.private_tmp = s->private_tmp[0] ? s->private_tmp : NULL;
	lx.home = s->home[0] ? s->home : NULL;
	lx.ro = &path_ro;
	if (s->layers.landlock) {
		lx.masked = s->layers.ns.clone_flags != 0;
		c.ruleset_fd = landlock_build_ruleset(p, &s->layers.rights, &lx,
						      c.switch_user ? c.uid : getuid(),
						      c.switch_user ? c.gid : getgid(), &bad);
		if (c.ruleset_fd < 0) {
			r = log_error_errno(c.ruleset_fd, "cannot build the Landlock ruleset at %s",
					    bad ? bad : "?");
			goto out;
		}
		c.landlock_flags = landlock_restrict_flags(&s->layers.rights);
	}
	/*
	 * An allow-list needs inet sockets; the BPF network layer (required
	 * for it, see cmd_run) then decides each connect, and sock_create
	 * refuses raw and packet sockets.
	 */
	notify = s->layers.seccomp && p->net == NET_DENY && !p->net_allow.n;
	if (s->layers.seccomp)
		c.filter = seccomp_program(notify);
	/*
	 * Network deny with a record: socket() goes to our listener, which
	 * refuses it and counts it for the summary (docs/SECURITY.md).
	 */
	/*
	 * Refused file changes with a record where no BPF program reports
	 * them: the listener sees each and counts those bound to fail.
	 */
	c.notify_files = s->layers.seccomp && p->mode != MODE_FULL_ACCESS && s->hooks.poll_fd < 0;
	c.notify_net = notify;
	if ((notify || c.notify_files) &&
	    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, ntf) == 0) {
		c.notify_sock = ntf[1];
		c.filter_notified = seccomp_program(false);
	}
	if ((r = build_env(s, path_env, &env)) < 0)
		goto out;
	c.envp = env.v;
	/* A terminal stays a terminal: a pty between it and the command. */
	if (isatty(STDOUT_FILENO)) {
		pty = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (pty >= 0 && (grantpt(pty) < 0 || unlockpt(pty) < 0 ||
				 (pts = open(ptsname(pty), O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)) {
			close(pty);
			pty = -1;
		}
	}
	if (pty >= 0) {
		struct termios t;
		struct winsize ws;

		if (tcgetattr(STDOUT_FILENO, &t) == 0)
			tcsetattr(pts, TCSANOW, &t);
		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
			ioctl(pts, TIOCSWINSZ, &ws);
		relaying = false;
		c.out_fd = c.err_fd = pts;
		c.ctty = true;
		io.out_r = pty;
		if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
			c.in_fd = pts;
			io.in_w = pty;
		}
	}
	/* stdout and stderr the same file (2>&1): one pipe keeps their order. */
	if (relaying && fstat(STDOUT_FILENO, &so) == 0 && fstat(STDERR_FILENO, &se) == 0 &&
	    so.st_dev == se.st_dev && so.st_ino == se.st_ino)
		merged = true;
	if (pipe2(rep, O_CLOEXEC) < 0 ||
	    (relaying && (pipe2(out, O_CLOEXEC) < 0 || (!merged && pipe2(err, O_CLOEXEC) < 0)))) {
		r = log_error_errno(errno, "cannot create pipes");
		goto out;
	}
	c.report_fd = rep[1];
	if (relaying) {
		c.out_fd = out[1];
		c.err_fd = merged ? out[1] : err[1];
	}
	if (s->hooks.before_release) {
		if (pipe2(rel, O_CLOEXEC) < 0) {
			r = log_error_errno(errno, "cannot create pipes");
			goto out;
		}
		c.release_fd = rel[0];
		c.release_wfd = rel[1];
		/* The daemon makes and limits the session's cgroups (docs/limits.md). */
		for (int i = 0; i < RES__COUNT; i++)
			if (s->lim.how[i] == LIMIT_RLIMIT)
				s->lim.how[i] = LIMIT_NONE;
	} else {
		r = session_prepare_cgroup(s);
		/* --limits-via cgroup fails closed: no cgroup, or one a limit could not be set on. */
		if (s->lim.via == LIMITS_VIA_CGROUP && (r < 0 || !session_limits_by_cgroup(s))) {
			if (r < 0)
				log_error("--limits-via cgroup: cannot make the session's cgroups "
					  "(%s); nothing ran", strerror(-r));
			else
				log_error("--limits-via cgroup: not enforced by cgroup: %s; nothing "
					  "ran", s->lim.not_enforced);
			r = r < 0 ? r : -EPERM;
			goto out;
		}
		mon_on = start_monitor(s, &mon) == 0;
	}

	/* Signals for the session are read from a signalfd, not handlers. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (pty >= 0)
		sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, &c.saved_mask);
	/* A status reader or an output reader that went away is not our end. */
	sigaction(SIGPIPE, &ign, &old_pipe);
	sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig_fd < 0) {
		r = log_error_errno(errno, "cannot create a signalfd");
		goto out_mask;
	}
	/* Orphans of the session reparent to us, so none escapes the sweep. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	fflush(NULL);
	self = getpid(); /* the child's getppid() would already be a reaper if we died */
	if (s->layers.ns.clone_flags) {
		c.ns = &s->layers.ns;
		/* The mount view shows what Landlock grants: the home, PATH under it (home.c). */
		if ((r = session_view_policy(s, &path_ro, &view)) < 0) {
			log_error_errno(r, "cannot prepare the session's mount view");
			goto out_mask;
		}
		c.policy = &view;
	}
	child = spawn(&s->lim, s->layers.ns.clone_flags, &placed);
	if (child < 0 && s->layers.ns.clone_flags) {
		/*
		 * The plan said they could be made (the ruleset relies on the masks):
		 * fail closed rather than run without them.
		 */
		r = log_error_errno(errno, "cannot create the session's namespaces; nothing ran "
				    "(--no-namespaces runs without them, docs/SECURITY.md)");
		goto out_mask;
	}
	if (child < 0) {
		r = log_error_errno(errno, "cannot fork");
		goto out_mask;
	}
	if (child == 0) {
		c.join_v2 = !placed;
		child_exec(&c, self);
	}

	close(rep[1]);
	rep[1] = -1;
	if (s->hooks.before_release) {
		close(rel[0]);
		rel[0] = -1;
		r = s->hooks.before_release(s->hooks.ctx, child);
		/* Where the daemon put it: watched, not owned. */
		if (r == 0 && limits_adopt(&s->lim, child, s->id) == 0)
			mon_on = start_monitor(s, &mon) == 0;
		if (r < 0 || write(rel[1], "", 1) != 1) {
			if (r >= 0)
				r = log_error_errno(errno, "cannot release the session's child");
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			goto out_mask;
		}
		close(rel[1]);
		rel[1] = -1;
	}
	if (relaying) {
		close(out[1]);
		if (err[1] >= 0)
			close(err[1]);
		out[1] = err[1] = -1;
	}
	if (pts >= 0) {
		close(pts);
		pts = -1;
	}
	if (ntf[1] >= 0) {
		close(ntf[1]);
		ntf[1] = -1;
	}
	/* EOF means exec succeeded; a record means a step failed. */
	do
		n = read(rep[0], &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(ce) && ce.step != STEP_EXEC) {
		report_setup_failure(&ce);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		r = -ce.err;
		goto out_mask;
	}
	s->cmd_pid = child;
	/* With a PID namespace the command is the init's child (ns_run_as_init). */
	if (s->layers.ns.clone_flags & CLONE_NEWPID) {
		char path[64], buf[32];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", child, child);
		s->cmd_pid = read_file_str(path, buf, sizeof(buf)) > 0 ? atoi(buf) : 0;
	}
	status_started(s, child);
	if (n == sizeof(ce))
		s->result.cause = CAUSE_NOT_FOUND;
	if (ntf[0] >= 0)
		io.notify_fd = recv_fd(ntf[0]);
	if (relaying) {
		io.out_r = out[0];
		io.err_r = err[0];
	}
	if (io.in_w >= 0) {
		struct termios t = saved_tio;

		/* Keys go to the command's terminal as typed; ^C reaches it there. */
		cfmakeraw(&t);
		raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
	}
	supervise(s, child, &io, sig_fd, mon_on ? &mon : NULL);
	out[0] = err[0] = -1; /* closed by supervise */
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	if (n == sizeof(ce))
		log_error("cannot execute '%s': %s", argv[0], strerror(ce.err));
	/* The last records of the BPF layer, for the summary. */
	if (s->hooks.on_poll)
		s->hooks.on_poll(s->hooks.ctx);
	session_denials_report(s);
	status_ended(s);
	r = 0;
out_mask:
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigprocmask(SIG_SETMASK, &c.saved_mask, NULL);
out:
	if (r < 0) {
		s->result.exit_code = EXIT_SETUP;
		s->result.cause = CAUSE_SETUP;
		status_ended(s);
	}
	for (int i = 0; i < 2; i++)
		if (ntf[i] >= 0)
			close(ntf[i]);
	if (io.notify_fd >= 0)
		close(io.notify_fd);
	if (pty >= 0)
		close(pty);
	if (pts >= 0)
		close(pts);
	strv_clear(&path_ro);
	policy_free(&view);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
		if (rep[i] >= 0)
			close(rep[i]);
		if (rel[i] >= 0)
			close(rel[i]);
	}
	if (sig_fd >= 0)
		close(sig_fd);
	if (c.ruleset_fd >= 0)
		close(c.ruleset_fd);
	strv_clear(&env);
	if (mon_on)
		monitor_close(&mon);
	/* What is left in the cgroups is killed (daemonized descendants too). */
	limits_destroy(&s->lim);
	remove_private_tmp(s);
	session_home_remove(s);
	return r;
}
