// SPDX-License-Identifier: GPL-2.0
/*
 * session_run: the restrictions prepared, the output pipes or pty, the
 * cgroups, the child started and its exec confirmed, then supervised
 * (supervise.c) and everything undone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "session.h"
#include "session_internal.h"
#include "landlock.h"
#include "seccomp.h"
#include "grants.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../lib/cgroup.h"
#include "../lib/closer.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* What one session_run holds, for its steps below. */
struct run_state {
	struct session *s;
	char *const *argv;
	struct child_plan c;
	struct supervise_io io;
	struct landlock_extra lx;
	struct strv path_ro, env;
	struct bpfbox_policy view;
	char path_env[8192];
	int ntf[2], out[2], err[2], rep[2], rel[2];
	int pty, pts, sig_fd;
	struct sigaction old_pipe;
	struct termios saved_tio;
	bool relaying, merged, raw, mon_on, masked, dirs_gone;
	bool refused; /* a hook's -EAGAIN: the daemon refused, the caller runs again */
	struct monitor mon;
	struct grant_fds gf; /* the workspace and grants, each opened once (grants.h) */
	struct child_error ce;
	ssize_t n; /* of the child's report: sizeof(ce) when a step failed */
	pid_t child;
};

/* The end's one helper (lib/closer.h): the change set's jobs and the disk monitor's. */
static struct closer end_helper;

/* The trees whose growth counts against the disk limit. */
static int start_monitor(struct run_state *t)
{
	struct session *s = t->s;
	const struct bpfbox_policy *p = s->policy;
	struct monitor *mon = &t->mon;
	bool cs = t->gf.upper >= 0; /* a change set: the session's writes are its upper */

	return monitor_open(mon, &s->lim, s->id,
			    p->mode == MODE_READ_ONLY ? NULL
			    : cs		      ? s->changes_upper
						      : p->workspace,
			    cs ? t->gf.upper : t->gf.ws, s->private_tmp[0] ? s->private_tmp : NULL,
			    s->home[0] ? s->home : NULL);
}

/* The seccomp filters of the child, and what its listener holds. */
static void prepare_seccomp(struct run_state *t, bool netns)
{
	struct session *s = t->s;
	const struct bpfbox_policy *p = s->policy;
	struct child_plan *c = &t->c;
	enum seccomp_net net;
	bool notify, nobpf = s->hooks.poll_fd < 0 && !s->hooks.on_end;

	/*
	 * An allow-list needs inet sockets; the BPF network layer (required
	 * for it, see run/run.c) then decides each connect, and sock_create
	 * refuses raw and packet sockets. In a network namespace of its own
	 * (network deny; with an allow-list, the proxy's: session_net_by_proxy)
	 * inet sockets are allowed too: its loopback is their only way.
	 */
	net = p->net == NET_ALLOW	? SECCOMP_NET_OPEN
	      : p->net_allow.n || netns ? SECCOMP_NET_INET
					: SECCOMP_NET_DENY;
	notify = s->layers.seccomp && p->net == NET_DENY && (!p->net_allow.n || netns);
	if (s->layers.seccomp)
		c->filter = seccomp_program(net);
	/*
	 * Records where no BPF program gives them (docs/SECURITY.md): network
	 * deny's socket() and the refused file changes go to our listener,
	 * which counts them; in a namespace of its own, so does a connect out
	 * of it (ENETUNREACH would say nothing of the policy, netops.c).
	 */
	c->notify_files = s->layers.seccomp && p->mode != MODE_FULL_ACCESS && nobpf;
	c->notify_net = notify;
	c->notify_inet = netns;
	c->notify_connect = notify && netns && nobpf;
	c->notify_bind = session_binds_refused(s, netns);
	if ((notify || c->notify_files || c->notify_bind) &&
	    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, t->ntf) == 0) {
		c->notify_sock = t->ntf[1];
		/* The listener holds socket() for network deny; else the same families. */
		c->filter_notified = seccomp_program(notify ? SECCOMP_NET_OPEN : net);
	}
}

/* The restrictions the child applies: user, private tmp and home, Landlock, seccomp, env. */
static int prepare_restrictions(struct run_state *t)
{
	struct session *s = t->s;
	const struct bpfbox_policy *p = s->policy;
	struct child_plan *c = &t->c;
	const char *bad = NULL;
	bool netns = s->layers.ns.clone_flags & CLONE_NEWNET;
	int r;

	if (p->user && (r = session_lookup_user(p->user, &c->uid, &c->gid)) < 0)
		return log_error_errno(r, "unknown user '%s' for --user", p->user);
	/* From here on, the workspace and grants are these fds, not their paths. */
	if ((r = grant_fds_open(&t->gf, p, s->ssh_agent)) < 0) {
		log_error("%s; nothing ran", t->gf.bad);
		return r;
	}
	if ((r = session_changes_start(s, &t->gf, c)) < 0)
		return r;
	t->lx.grants = &t->gf;
	c->grants = &t->gf;
	c->switch_user = p->user != NULL;
	if ((r = session_make_private_tmp(s)) < 0)
		return r;
	if ((r = session_home_make(s, c->switch_user ? c->uid : getuid(),
				   c->switch_user ? c->gid : getgid())) < 0)
		return r;
	/* The caller's certificates and indexes (env_pass.h) first: their files are grants. */
	if ((r = session_home_path(s, &t->path_ro, t->path_env, sizeof(t->path_env))) < 0 ||
	    (r = session_env_pass(s, &t->env, &t->path_ro)) < 0)
		return r;
	t->lx.private_tmp = s->private_tmp[0] ? s->private_tmp : NULL;
	t->lx.home = s->home[0] ? s->home : NULL;
	t->lx.ro = &t->path_ro;
	if (s->layers.landlock) {
		t->lx.masked = s->layers.ns.clone_flags != 0;
		t->lx.private_net = netns;
		c->ruleset_fd = landlock_build_ruleset(p, &s->layers.rights, &t->lx,
						       c->switch_user ? c->uid : getuid(),
						       c->switch_user ? c->gid : getgid(), &bad);
		if (c->ruleset_fd < 0)
			return log_error_errno(c->ruleset_fd,
					       "cannot build the Landlock ruleset at %s",
					       bad ? bad : "?");
		c->landlock_flags = landlock_restrict_flags(&s->layers.rights);
	}
	prepare_seccomp(t, netns);
	if ((r = session_build_env(s, t->path_env, &t->env)) < 0)
		return r;
	c->envp = t->env.v;
	return 0;
}

/* A terminal stays a terminal: a pty between it and the command. */
static void prepare_pty(struct run_state *t)
{
	struct termios tio;
	struct winsize ws;

	if (!isatty(STDOUT_FILENO))
		return;
	t->pty = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->pty >= 0 && (grantpt(t->pty) < 0 || unlockpt(t->pty) < 0 ||
			    (t->pts = open(ptsname(t->pty), O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)) {
		close(t->pty);
		t->pty = -1;
	}
	if (t->pty < 0)
		return;
	if (tcgetattr(STDOUT_FILENO, &tio) == 0)
		tcsetattr(t->pts, TCSANOW, &tio);
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		ioctl(t->pts, TIOCSWINSZ, &ws);
	t->relaying = false;
	t->c.out_fd = t->c.err_fd = t->pts;
	t->c.ctty = true;
	t->io.out_r = t->pty;
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved_tio) == 0) {
		t->c.in_fd = t->pts;
		t->io.in_w = t->pty;
	}
}

/* The pty, the output relay's pipes, the child's report pipe and its release pipe. */
static int prepare_pipes(struct run_state *t)
{
	struct stat so, se;

	prepare_pty(t); /* a terminal stays a terminal */
	/* stdout and stderr the same file (2>&1): one pipe keeps their order. */
	if (t->relaying && fstat(STDOUT_FILENO, &so) == 0 && fstat(STDERR_FILENO, &se) == 0 &&
	    so.st_dev == se.st_dev && so.st_ino == se.st_ino)
		t->merged = true;
	if (pipe2(t->rep, O_CLOEXEC) < 0 ||
	    (t->relaying &&
	     (pipe2(t->out, O_CLOEXEC) < 0 || (!t->merged && pipe2(t->err, O_CLOEXEC) < 0))) ||
	    (t->s->hooks.before_release && pipe2(t->rel, O_CLOEXEC) < 0))
		return log_error_errno(errno, "cannot create pipes");
	t->c.report_fd = t->rep[1];
	if (t->relaying) {
		t->c.out_fd = t->out[1];
		t->c.err_fd = t->merged ? t->out[1] : t->err[1];
	}
	t->c.release_fd = t->rel[0];
	t->c.release_wfd = t->rel[1];
	return 0;
}

/* The session's cgroups and limits: made here, or by the daemon. */
static int prepare_cgroups(struct run_state *t)
{
	struct session *s = t->s;
	int r;

	if (s->hooks.before_release) {
		/* The daemon makes and limits the session's cgroups (docs/limits.md). */
		for (int i = 0; i < RES__COUNT; i++)
			if (s->lim.how[i] == LIMIT_RLIMIT)
				s->lim.how[i] = LIMIT_NONE;
		r = s->hooks.before_fork ? s->hooks.before_fork(s->hooks.ctx) : 0;
		t->refused = r == -EAGAIN;
		return r;
	}
	r = session_prepare_cgroup(s);
	/* --limits-via cgroup fails closed: no cgroup, or one a limit could not be set on. */
	if (s->lim.via == LIMITS_VIA_CGROUP && (r < 0 || !session_limits_by_cgroup(s))) {
		if (r < 0)
			log_error("--limits-via cgroup: cannot make the session's cgroups (%s); "
				  "nothing ran",
				  strerror(-r));
		else
			log_error("--limits-via cgroup: not enforced by cgroup: %s; nothing ran",
				  s->lim.not_enforced);
		return r < 0 ? r : -EPERM;
	}
	t->mon_on = start_monitor(t) == 0;
	return 0;
}

/* Signals for the session are read from a signalfd, not handlers. */
static int take_signals(struct run_state *t)
{
	static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGWINCH /* last */};
	struct sigaction ign = {.sa_handler = SIG_IGN};

	/* A status reader or an output reader that went away is not our end. */
	sigaction(SIGPIPE, &ign, &t->old_pipe);
	t->masked = true;
	/* SIGWINCH only with a pty to resize. */
	t->sig_fd = signalfd_block(sigs, ARRAY_SIZE(sigs) - (t->pty < 0), &t->c.saved_mask);
	if (t->sig_fd < 0)
		return log_error_errno(-t->sig_fd, "cannot create a signalfd");
	/* Orphans of the session reparent to us, so none escapes the sweep. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	return 0;
}

/* The child, made and, when a hook holds it, released. */
static int start_child(struct run_state *t)
{
	struct session *s = t->s;
	bool placed;
	pid_t self;
	int r;

	fflush(NULL);
	self = getpid(); /* the child's getppid() would already be a reaper if we died */
	if (s->layers.ns.clone_flags) {
		t->c.ns = &s->layers.ns;
		/* The mount view shows what Landlock grants: the home, PATH under it (home.c). */
		if ((r = session_view_policy(s, &t->path_ro, &t->view)) < 0)
			return r; /* said there */
		t->c.policy = &t->view;
	}
	t->io.forked_ns = now_ns();
	t->child = spawn(&s->lim, s->layers.ns.clone_flags, &placed);
	/* The plan said they could be made (the ruleset relies on the masks): fail closed. */
	if (t->child < 0 && s->layers.ns.clone_flags)
		return log_error_errno(errno,
				       "cannot create the session's namespaces; nothing ran "
				       "(--no-namespaces runs without them, docs/SECURITY.md)");
	if (t->child < 0)
		return log_error_errno(errno, "cannot fork");
	if (t->child == 0) {
		t->c.join_v2 = !placed;
		child_exec(&t->c, self);
	}
	s->child_placed = placed;
	/*
	 * Without a PID namespace the session sees this process: not dumpable,
	 * its environment and memory are not the session's to read (the init
	 * does the same inside one, ns_run_as_init).
	 */
	if (!(s->layers.ns.clone_flags & CLONE_NEWPID))
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	close(t->rep[1]);
	t->rep[1] = -1;
	if (!s->hooks.before_release)
		return session_changes_forked(s, &t->gf, t->child);
	close(t->rel[0]);
	t->rel[0] = -1;
	r = s->hooks.before_release(s->hooks.ctx, t->child);
	t->refused = r == -EAGAIN;
	/* Where the daemon put it: watched, not owned. */
	if (r == 0 && limits_adopt(&s->lim, t->child, s->id) == 0)
		t->mon_on = start_monitor(t) == 0;
	if (r == 0 && write(t->rel[1], "", 1) != 1)
		r = log_error_errno(errno, "cannot release the session's child");
	if (r < 0) {
		kill(t->child, SIGKILL);
		waitpid(t->child, NULL, 0);
	}
	return r < 0 ? r : session_changes_forked(s, &t->gf, t->child);
}

/*
 * A set-up step's failure as session_run returns it: its -errno, but never
 * -EAGAIN, which session_run's caller takes as "refused by a busy daemon:
 * run again without it" (run.c); nothing ran, nothing is run twice.
 */
static int setup_err(const struct child_error *ce)
{
	return ce->err > 0 && ce->err != EAGAIN ? -ce->err : -EIO;
}

/* How often the wait for the exec looks whether the set-up is frozen. */
#define SETUP_CHECK_MS 100
/* A set-up that lasts longer (stopped, stuck) is handed over too: --timeout bounds it. */
#define SETUP_HANDOFF_NS (1000ULL * 1000000ULL)

/*
 * Whether the wait for the exec goes on in supervise(): the session's
 * cgroup is frozen (bpfbox pause, the daemon's op_pause) before the
 * command exec'd, so the report's EOF will not come until a resume, or
 * the set-up has lasted a second, or --timeout (counted from the fork)
 * is due. Waiting here would be without bound: the pause timeout and
 * --timeout are supervise()'s.
 */
static bool setup_held(const struct run_state *t, uint64_t since)
{
	const struct session *s = t->s;
	uint64_t timeout_ns = s->policy->limits.timeout_ms * 1000000ULL, now = now_ns();

	return (s->lim.cg[0] && cgroup_freeze_set(s->lim.cg)) || now - since >= SETUP_HANDOFF_NS ||
	       (timeout_ns && now - t->io.forked_ns >= timeout_ns);
}

/*
 * Our copies of the child's ends closed, its report read: 0 once it execs
 * (or not), or once its set-up is held (t->io.report_fd: supervise reads).
 */
static int wait_exec(struct run_state *t)
{
	struct session *s = t->s;
	uint64_t since = now_ns();
	int *ours[] = {&t->out[1], &t->err[1], &t->pts, &t->ntf[1], &t->rel[1]};

	session_changes_started(s);
	for (size_t i = 0; i < ARRAY_SIZE(ours); i++) {
		if (*ours[i] >= 0)
			close(*ours[i]);
		*ours[i] = -1;
	}
	/*
	 * EOF means exec succeeded; a record means a step failed. The hook's
	 * fd is served meanwhile: a command rule's ask may freeze the session
	 * before the PID namespace's init closed its end of this pipe, and the
	 * answer comes through the hook (embedded.c, via_daemon.c). An ask
	 * says the command has exec'd: no record can come any more, and a
	 * pause on top of the ask keeps that init frozen, so its EOF is not
	 * waited for (supervise bounds the pause). A pause before the exec
	 * (no ask) is handed to supervise with the report still to read.
	 */
	for (;;) {
		struct pollfd p[2] = {{.fd = t->rep[0], .events = POLLIN},
				      {.fd = s->hooks.poll_fd, .events = POLLIN}};
		int np = poll(p, s->hooks.poll_fd >= 0 ? 2 : 1, SETUP_CHECK_MS);

		if (np < 0 && errno == EINTR)
			continue;
		if (np <= 0) {
			if (np == 0 && !setup_held(t, since))
				continue;
			t->io.report_fd = t->rep[0];
			return 0;
		}
		if (s->hooks.poll_fd >= 0 && (p[1].revents & POLLIN)) {
			s->hooks.on_poll(s->hooks.ctx);
			if (s->asked && !(poll(p, 1, 0) == 1 && (p[0].revents & POLLIN))) {
				t->n = 0;
				break;
			}
			if (!p[0].revents)
				continue;
		}
		t->n = read(t->rep[0], &t->ce, sizeof(t->ce));
		if (!(t->n < 0 && errno == EINTR))
			break;
	}
	if (t->n == sizeof(t->ce) && t->ce.step != STEP_EXEC) {
		report_setup_failure(&t->ce);
		kill(t->child, SIGKILL);
		waitpid(t->child, NULL, 0);
		return setup_err(&t->ce);
	}
	session_exec_confirmed(s, t->child, t->n == sizeof(t->ce));
	return 0;
}

/*
 * The command's life: the change set's lock and manifest, relay, watch, end;
 * then the summary. A set-up that failed after a resume: that step's -errno.
 */
static int run_command(struct run_state *t)
{
	struct session *s = t->s;

	session_changes_running(s);
	t->io.notify_sock = t->ntf[0]; /* the listener comes through it (supervise) */
	if (t->relaying) {
		t->io.out_r = t->out[0];
		t->io.err_r = t->err[0];
	}
	if (t->io.in_w >= 0) {
		struct termios tio = t->saved_tio;

		/* Keys go to the command's terminal as typed; ^C reaches it there. */
		cfmakeraw(&tio);
		t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &tio) == 0;
	}
	supervise(s, t->child, &t->io, t->sig_fd, t->mon_on ? &t->mon : NULL);
	t->out[0] = t->err[0] = -1; /* closed by supervise */
	if (t->io.report_fd >= 0) {
		t->n = t->io.report_n;
		t->ce = t->io.report;
	}
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved_tio);
	/*
	 * Reported by supervise, the child reaped: nothing ran, as before a
	 * pause. Not -EAGAIN, which session_run's caller takes as "run again".
	 */
	if (t->n == sizeof(t->ce) && t->ce.step != STEP_EXEC)
		return setup_err(&t->ce);
	if (t->n == sizeof(t->ce))
		log_error("cannot execute '%s': %s", t->argv[0], strerror(t->ce.err));
	/* The last records of the BPF layer, for the summary. */
	if (s->hooks.on_poll)
		s->hooks.on_poll(s->hooks.ctx);
	session_changes_end(s, &t->gf,
			    &end_helper); /* every process gone; before the daemon's end */
	/*
	 * The daemon ends the session while its private tmp and home go:
	 * once the init of its PID namespace is reaped, the kernel has killed
	 * and reaped every other process of it, so nothing writes there.
	 */
	if (s->hooks.end_begin && s->hooks.end_begin(s->hooks.ctx, s) == 0 &&
	    (s->layers.ns.clone_flags & CLONE_NEWPID) && s->result.wait_status >= 0) {
		session_remove_private_tmp(s);
		session_home_remove(s);
		t->dirs_gone = true;
	}
	if (s->hooks.on_end)
		s->hooks.on_end(s->hooks.ctx, s);
	session_denials_report(s);
	status_ended(s);
	return 0;
}

static void close_pair(int fds[2])
{
	fd_close(&fds[0]);
	fd_close(&fds[1]);
}

/* Everything the run opened or made, closed or removed. */
static void run_cleanup(struct run_state *t)
{
	struct session *s = t->s;
	int fds[] = {t->io.notify_fd, t->pty, t->pts, t->sig_fd, t->c.ruleset_fd};
	int *pairs[] = {t->ntf, t->out, t->err, t->rep, t->rel};

	if (t->masked) {
		sigaction(SIGPIPE, &t->old_pipe, NULL);
		sigprocmask(SIG_SETMASK, &t->c.saved_mask, NULL);
	}
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++)
		close_pair(pairs[i]);
	grant_fds_close(&t->gf);
	strv_clear(&t->path_ro);
	policy_free(&t->view);
	strv_clear(&t->env);
	/*
	 * Its helper also removes the homes killed runs left (home.c), and
	 * this one's, hidden first: off the end's path (0.4 ms here).
	 */
	if (t->mon_on) {
		char gone[NAME_MAX + 1] = "";

		if (!t->dirs_gone)
			session_home_hide(s, gone, sizeof(gone));
		monitor_close(&t->mon, session_home_sweep_dir(), HOME_PREFIX, HOME_SUFFIX, gone,
			      &end_helper);
	} else {
		closer_flush(&end_helper);
	}
	/* What is left in the cgroups is killed (daemonized descendants too). */
	limits_destroy(&s->lim);
	if (!t->dirs_gone) {
		session_remove_private_tmp(s);
		session_home_remove(s);
	}
}

/* The steps before the command runs, in order; the first that fails ends the run. */
static int (*const run_steps[])(struct run_state *t) = {
	prepare_restrictions, prepare_pipes, prepare_cgroups, take_signals, start_child, wait_exec,
};

int session_run(struct session *s, char *const argv[])
{
	const struct bpfbox_policy *p = s->policy;
	struct run_state *t = calloc(1, sizeof(*t));
	int r = 0;

	if (!t)
		return log_error_errno(ENOMEM, "cannot run the session");
	*t = (struct run_state){
		.s = s,
		.argv = argv,
		.pty = -1,
		.pts = -1,
		.sig_fd = -1,
		.ntf = {-1, -1},
		.out = {-1, -1},
		.err = {-1, -1},
		.rep = {-1, -1},
		.rel = {-1, -1},
		.relaying = p->limits.output_bytes > 0,
		.c = {.argv = argv,
		      .workspace = p->workspace,
		      .ruleset_fd = -1,
		      .out_fd = -1,
		      .err_fd = -1,
		      .limits = &p->limits,
		      .lim = &s->lim,
		      .release_fd = -1,
		      .release_wfd = -1,
		      .notify_sock = -1,
		      .in_fd = -1,
		      .changes_start_fd = -1,
		      .policy = p,
		      .rights = &s->layers.rights},
		.io = {.out_r = -1, .err_r = -1, .in_w = -1, .notify_fd = -1, .report_fd = -1},
		.lx = {.caller_home = session_caller_home(), .read_host = p->read_host},
	};
	grant_fds_init(&t->gf); /* every fd -1: closed at the end whatever step failed */
	/* Each run fills a result of its own: one after a hook's -EAGAIN (run.c) starts anew. */
	s->result = (struct session_result){.wait_status = -1};
	for (size_t i = 0; !r && i < ARRAY_SIZE(run_steps); i++)
		r = run_steps[i](t);
	if (!r)
		r = run_command(t);
	/*
	 * Only a hook's -EAGAIN (the daemon refused) means "nothing ran,
	 * nothing said; the caller tries again". A step's own EAGAIN (fork at
	 * RLIMIT_NPROC) is a set-up failure like any other: said, never run
	 * again another way.
	 */
	if (r == -EAGAIN && !t->refused)
		r = -EIO;
	if (r < 0 && r != -EAGAIN) {
		s->result.exit_code = EXIT_SETUP;
		s->result.cause = CAUSE_SETUP;
		status_ended(s);
	}
	run_cleanup(t);
	free(t);
	return r;
}
