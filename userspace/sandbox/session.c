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
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/util.h"

extern char **environ;

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

static bool unix_dir_fits(const char *dir)
{
	return dir[0] == '/' && strlen(dir) < BPFBOX_UNIX_PATH_LEN - 2;
}

size_t session_writable_dirs(const struct session *s, bool for_unix, const char **dirs,
			     size_t max)
{
	const struct bpfbox_policy *p = s->policy;
	size_t n = 0;

	if (for_unix && max > BPFBOX_UNIX_PREFIXES)
		max = BPFBOX_UNIX_PREFIXES;
	if (p->mode != MODE_READ_ONLY && n < max && (!for_unix || unix_dir_fits(p->workspace)))
		dirs[n++] = p->workspace;
	if (s->private_tmp[0] && n < max && (!for_unix || unix_dir_fits(s->private_tmp)))
		dirs[n++] = s->private_tmp;
	/* With namespaces /tmp is the session's own tmpfs; the host's is not in its view. */
	else if (for_unix && !s->private_tmp[0] && p->private_tmp && s->layers.ns.clone_flags &&
		 n < max)
		dirs[n++] = "/tmp";
	for (size_t i = 0; i < p->rw_paths.n && n < max; i++)
		if (!for_unix || unix_dir_fits(p->rw_paths.v[i]))
			dirs[n++] = p->rw_paths.v[i];
	return n;
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
				.lim = &s->lim,
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
	if (notify && socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, ntf) == 0) {
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
	s->child_placed = placed;

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
	if (s->hooks.on_end)
		s->hooks.on_end(s->hooks.ctx, s);
	session_denials_report(s);
	status_ended(s);
	r = 0;
out_mask:
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigprocmask(SIG_SETMASK, &c.saved_mask, NULL);
out:
	/* -EAGAIN from before_release: nothing ran, nothing said; the caller tries again. */
	if (r < 0) {
		s->result.exit_code = EXIT_SETUP;
		s->result.cause = CAUSE_SETUP;
		if (r != -EAGAIN)
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
