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
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"
#include "../monitor/oom.h"
#include "landlock.h"
#include "seccomp.h"
#include "reaper.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Time between SIGTERM and SIGKILL when a session is stopped. */
#define KILL_GRACE_MS 2000
/* How often a paused session's cgroup.freeze is read. */
#define PAUSED_RECHECK_MS 200

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

/* The last step: exec, or report why not. Never returns. */
static void exec_command(void *arg)
{
	const struct child_plan *c = arg;

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
	    (c->err_fd >= 0 && dup2(c->err_fd, STDERR_FILENO) < 0))
		child_fail(c, STEP_SESSION);
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
static int build_env(const struct session *s, struct strv *env)
{
	const struct bpfbox_policy *p = s->policy;
	const char *path = getenv("PATH");
	int r = 0;

	r = env_push(env, "PATH", path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!r)
		r = env_push(env, "HOME", p->workspace);
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

/* Relays one chunk from a command's pipe to ours, under the output cap. */
static bool relay(struct session *s, int from, int to, bool *marker_done)
{
	uint64_t cap = s->policy->limits.output_bytes;
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));
	size_t keep;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	keep = n;
	if (cap && s->result.output_bytes + keep > cap)
		keep = cap > s->result.output_bytes ? cap - s->result.output_bytes : 0;
	for (size_t off = 0; off < keep;) {
		ssize_t w = write(to, buf + off, keep - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* our reader went away; keep draining the command */
		off += w;
	}
	s->result.output_bytes += keep;
	s->result.output_dropped += n - keep;
	if (keep < (size_t)n && !*marker_done) {
		*marker_done = true;
		dprintf(STDERR_FILENO,
			"bpfbox: output limit of %llu bytes reached; further output is discarded\n",
			(unsigned long long)cap);
	}
	return true;
}

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_SETUP;
}

/* Lifecycle state of the supervision loop (docs/limits.md). */
struct life {
	struct monitor *mon; /* NULL: nothing watched */
	pid_t child;
	bool paused;
	bool ending;	/* killed by us: no more lifecycle transitions */
	bool oom_early;	/* frozen when the OOM killer was invoked; its kill not counted yet */
	uint64_t oom_early_until;
	uint64_t paused_at;
	char reason[48];
};

/* How long an early OOM freeze waits for the kill before it thaws again. */
#define OOM_KILL_WAIT_NS (1000ULL * 1000000ULL)

/* Kills the whole session: its cgroup (daemonized descendants too), then every descendant. */
static void kill_session(struct session *s, pid_t leader)
{
	limits_kill(&s->lim);
	reaper_kill_all(leader, SIGKILL);
}

static void emit(struct session *s, const struct session_event *ev)
{
	if (s->hooks.on_event)
		s->hooks.on_event(s->hooks.ctx, ev);
}

static void fill_limits(const struct session *s, const struct life *lf, struct session_event *ev)
{
	int64_t used = lf->mon ? monitor_disk_used(lf->mon) : -1;

	ev->memory_mb = s->lim.memory_mb;
	ev->disk_mb = s->lim.disk_mb;
	ev->disk_used_mb = used < 0 ? -1 : (used + (1 << 20) - 1) >> 20;
}

/*
 * The OOM killer was invoked: the session is frozen now, before the kill, so
 * that none of its processes acts on the kill (a shell going on, a build
 * failing) before the pause. Said once the kill is counted; thawed again if
 * no kill follows (OOM_KILL_WAIT_NS). Where the cgroup is not ours to
 * freeze (daemon mode, not root), the pause comes with the kill instead.
 */
/* bpfbox kill came first: its "killed" state must not become "paused". */
static bool killed_outside(const struct life *lf)
{
	char state[48];

	if (!lf->mon)
		return false;
	monitor_read_state(lf->mon, state, sizeof(state));
	return !strncmp(state, "killed", 6);
}

static void oom_invoked(struct session *s, struct life *lf)
{
	if (lf->paused || !s->lim.cg[0] || !s->lim.pause || killed_outside(lf))
		return;
	session_cgroup_set_state(s->lim.cg, "paused oom");
	if (limits_freeze(&s->lim, true) < 0)
		return;
	lf->paused = lf->oom_early = true;
	lf->paused_at = now_ns();
	lf->oom_early_until = lf->paused_at + OOM_KILL_WAIT_NS;
	snprintf(lf->reason, sizeof(lf->reason), "oom");
}

/* An early OOM freeze that no kill followed: back to running, nothing said. */
static void oom_thaw(struct session *s, struct life *lf, uint64_t *deadline)
{
	lf->oom_early = lf->paused = false;
	session_cgroup_set_state(s->lim.cg, "running");
	limits_freeze(&s->lim, false);
	if (*deadline)
		*deadline += now_ns() - lf->paused_at;
}

/* A monitor asks for a pause: freeze (here or through the daemon) and say so. */
static void pause_for(struct session *s, struct life *lf, const char *reason)
{
	struct session_event ev = { .type = SEV_PAUSED, .reason = reason };
	bool early = lf->oom_early && streq(reason, "oom"), frozen = early;
	char state[48];
	int r = -EOPNOTSUPP;

	if (killed_outside(lf))
		return;
	fill_limits(s, lf, &ev);
	ev.oom_kills = lf->mon->new_kills;
	lf->mon->new_kills = 0;
	lf->oom_early = false;
	if (s->hooks.request_pause) {
		/* Frozen first when we may (root), the daemon's round trip after. */
		if (!frozen && s->lim.cg[0]) {
			snprintf(state, sizeof(state), "paused %s", reason);
			session_cgroup_set_state(s->lim.cg, state);
			frozen = limits_freeze(&s->lim, true) == 0;
		}
		r = s->hooks.request_pause(s->hooks.ctx, &ev);
		/* Paused already (bpfbox pause came first): paused is what we wanted. */
		if (r == -EALREADY)
			r = 0;
	}
	if (r < 0 && s->lim.cg[0] && s->lim.pause) {
		snprintf(state, sizeof(state), "paused %s", reason);
		session_cgroup_set_state(s->lim.cg, state);
		r = frozen ? 0 : limits_freeze(&s->lim, true);
		if (r == 0 && streq(reason, "oom") && !ev.pid)
			oom_find_victim(s->id, &ev.pid, ev.comm, sizeof(ev.comm));
		if (r == 0)
			emit(s, &ev);
	}
	if (r < 0) {
		if (startswith(reason, "disk")) {
			/* Fail closed: what cannot be paused is stopped. */
			log_notice("session %s killed: the workspace grew by %.1f MB, over its disk limit "
			       "of %llu MB, and it cannot be paused here (no cgroup freezer)", s->id,
			       monitor_disk_used(lf->mon) / 1048576.0, (unsigned long long)ev.disk_mb);
			s->result.killed = true;
			lf->ending = true;
			ev.type = SEV_KILLED;
			emit(s, &ev);
			kill_session(s, lf->child);
		} else {
			log_notice("session %s: the kernel killed a process out of memory at the %llu MB "
			       "limit; the session cannot be paused here and goes on", s->id,
			       (unsigned long long)ev.memory_mb);
		}
		return;
	}
	if (!early)
		lf->paused_at = now_ns();
	lf->paused = true;
	snprintf(lf->reason, sizeof(lf->reason), "%s", reason);
	if (streq(reason, "oom"))
		log_notice("session %s paused: out of memory at its %llu MB limit, the kernel killed "
		       "pid %d (%s); resume it with 'bpfbox resume %s [--memory MB]' or end it "
		       "with 'bpfbox kill %s'", s->id, (unsigned long long)ev.memory_mb, ev.pid,
		       ev.comm[0] ? ev.comm : "?", s->id, s->id);
	else if (streq(reason, "disk_unwatched"))
		log_notice("session %s paused: a directory of its workspace cannot be watched (the "
		       "inotify watch limit is reached), so its disk limit cannot be enforced; raise "
		       "fs.inotify.max_user_watches or end it with 'bpfbox kill %s'", s->id, s->id);
	else
		log_notice("session %s paused: the workspace grew by %.1f MB and %lld entries, over "
		       "its disk limit of %llu MB (%llu entries); free space or resume it with "
		       "'bpfbox resume %s --disk MB', or end it with 'bpfbox kill %s'", s->id,
		       monitor_disk_used(lf->mon) / 1048576.0,
		       (long long)monitor_disk_entries(lf->mon), (unsigned long long)ev.disk_mb,
		       (unsigned long long)ev.disk_mb * MONITOR_ENTRIES_PER_MB, s->id, s->id);
}

/* cgroup.events changed: a pause or resume made outside (bpfbox pause/resume, the daemon). */
static void frozen_changed(struct session *s, struct life *lf, uint64_t *deadline)
{
	struct session_event ev = { 0 };
	char state[48];
	uint64_t now = now_ns();

	if (lf->mon->frozen && !lf->paused) {
		monitor_read_state(lf->mon, state, sizeof(state));
		lf->paused = true;
		lf->paused_at = now;
		snprintf(lf->reason, sizeof(lf->reason), "%s",
			 startswith(state, "paused ") ? state + 7 : "manual");
		ev.type = SEV_PAUSED;
		ev.reason = lf->reason;
		fill_limits(s, lf, &ev);
		log_notice("session %s paused (%s); 'bpfbox resume %s' goes on, 'bpfbox kill %s' ends it",
		       s->id, lf->reason, s->id, s->id);
		emit(s, &ev);
	} else if (!lf->mon->frozen && lf->paused) {
		uint64_t paused = now - lf->paused_at;

		monitor_reload_limits(lf->mon);
		lf->paused = false;
		/* The timeout counts running time only. */
		if (*deadline)
			*deadline += paused;
		s->result.paused_ms += paused / 1000000ULL;
		ev.type = SEV_RESUMED;
		ev.paused_ms = paused / 1000000ULL;
		fill_limits(s, lf, &ev);
		log_notice("session %s resumed after %llu ms (memory %llu MB, disk %llu MB)", s->id,
		       (unsigned long long)ev.paused_ms, (unsigned long long)ev.memory_mb,
		       (unsigned long long)ev.disk_mb);
		emit(s, &ev);
	}
}

/* The command ended: was it `bpfbox kill`? Said before the cgroup goes. */
static void check_killed(struct session *s, struct life *lf, int status)
{
	struct session_event ev = { .type = SEV_KILLED, .reason = "manual" };
	char state[48];

	/* 128+9: the PID namespace's init saw the command killed before it was itself. */
	if (!lf->mon || s->result.killed ||
	    !((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
	      (s->layers.ns.clone_flags & CLONE_NEWPID && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 128 + SIGKILL)))
		return;
	monitor_read_state(lf->mon, state, sizeof(state));
	if (!streq(state, "killed manual"))
		return;
	s->result.killed = true;
	ev.was_paused = lf->paused;
	log_notice("session %s killed by 'bpfbox kill'", s->id);
	emit(s, &ev);
}

/*
 * The supervision loop: relay output, watch the child and the deadline,
 * forward SIGINT/SIGTERM/SIGHUP to the session, stop it on timeout, pause
 * it when a monitor says so and wait while it is paused.
 */
static void supervise(struct session *s, pid_t child, int out_r, int err_r, int sig_fd,
		      struct monitor *mon)
{
	const uint64_t timeout_ns = s->policy->limits.timeout_ms * 1000000ULL;
	uint64_t deadline = timeout_ns ? now_ns() + timeout_ns : 0;
	uint64_t kill_at = 0;
	bool marker_done = false, child_done = false;
	struct life lf = { .mon = mon, .child = child };
	struct pollfd pfd[4 + MONITOR_MAX_FDS] = {
		{ .fd = out_r, .events = POLLIN },
		{ .fd = err_r, .events = POLLIN },
		{ .fd = sig_fd, .events = POLLIN },
		{ .fd = s->hooks.poll_fd, .events = POLLIN },
	};

	uint64_t drain_until = 0;

	while (!child_done || pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		uint64_t now = now_ns(), next = kill_at ? kill_at : lf.paused ? 0 : deadline;
		int wait_ms = -1, status = 0, nmon = 0, mt;
		unsigned int trig;

		if (!child_done) {
			reaper_reap(child, &status, &child_done);
			if (child_done) {
				s->result.wait_status = status;
				check_killed(s, &lf, status);
				/* The session ends with its first process. */
				kill_session(s, child);
				drain_until = now + 5000000000ULL;
				kill_at = deadline = 0;
				continue;
			}
		} else {
			/* Output still open: a descendant holds it; kill again. */
			kill_session(s, 0);
			reaper_reap(child, &status, &child_done);
			if (now >= drain_until)
				break;
			next = now + 100000000ULL;
		}
		if (next && now >= next) {
			/*
			 * A pause asked for but not complete (a task in D state holds
			 * off "frozen 1"): not running time, and not ours to kill.
			 */
			if (!kill_at && lf.mon && lf.mon->lim->cg[0] && monitor_freeze_requested(lf.mon)) {
				deadline = now + 200000000ULL;
				continue;
			}
			if (!kill_at) {
				s->result.timed_out = true;
				reaper_kill_all(child, SIGTERM);
				kill_at = now + KILL_GRACE_MS * 1000000ULL;
			} else {
				kill_session(s, child);
				kill_at = deadline = 0;
			}
			continue;
		}
		if (next)
			wait_ms = (next - now) / 1000000ULL + 1;
		if (mon && !child_done) {
			nmon = monitor_pollfds(mon, pfd + 4);
			mt = monitor_timeout(mon);
			/* Paused: cgroup.freeze is read again, a thaw may not show in cgroup.events. */
			if (lf.paused && (mt < 0 || mt > PAUSED_RECHECK_MS))
				mt = PAUSED_RECHECK_MS;
			if (lf.oom_early) {
				int ow = now >= lf.oom_early_until
						 ? 0
						 : (int)((lf.oom_early_until - now) / 1000000) + 1;

				if (mt < 0 || ow < mt)
					mt = ow;
			}
			if (mt >= 0 && (wait_ms < 0 || mt < wait_ms))
				wait_ms = mt;
		}
		/* SIGCHLD arrives through the signalfd; poll it for the child. */
		if (poll(pfd, 4 + nmon, wait_ms) < 0 && errno != EINTR)
			break;
		if (pfd[3].revents & POLLIN)
			s->hooks.on_poll(s->hooks.ctx);
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd >= 0 && pfd[i].revents &&
			    !relay(s, pfd[i].fd, i ? STDERR_FILENO : STDOUT_FILENO, &marker_done)) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
		if (pfd[2].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sig_fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD &&
			    !child_done) {
				if (lf.paused) {
					/* A frozen session cannot handle it: ^C on a paused run ends it. */
					log_notice("session %s killed: %s while paused", s->id,
					       strsignal(si.ssi_signo));
					lf.ending = true;
					kill_session(s, child);
				} else {
					kill(-child, si.ssi_signo);
				}
			}
		}
		if (!mon || child_done || lf.ending)
			continue;
		trig = monitor_dispatch(mon, pfd + 4);
		if ((trig & MON_OOM_INVOKED) && !(trig & MON_OOM))
			oom_invoked(s, &lf);
		if (lf.oom_early && !(trig & MON_OOM) && now_ns() >= lf.oom_early_until)
			oom_thaw(s, &lf, &deadline);
		if (lf.paused && s->lim.cg[0] && !monitor_freeze_requested(mon)) {
			mon->frozen = false;
			trig |= MON_FROZEN;
		}
		if (trig & MON_FROZEN)
			frozen_changed(s, &lf, &deadline);
		if ((trig & MON_OOM) && (!lf.paused || lf.oom_early))
			pause_for(s, &lf, "oom");
		else if (monitor_disk_over(mon) && !lf.paused && !s->result.killed)
			pause_for(s, &lf, monitor_disk_reason(mon));
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	if (lf.paused)
		s->result.paused_ms += (now_ns() - lf.paused_at) / 1000000ULL;
	reaper_reap_all();
	s->result.exit_code = s->result.timed_out ? EXIT_TIMEOUT : exit_code_of(s->result.wait_status);
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
			    s->private_tmp[0] ? s->private_tmp : NULL);
}

int session_run(struct session *s, char *const argv[])
{
	const struct bpfbox_policy *p = s->policy;
	struct child_plan c = { .argv = argv, .workspace = p->workspace, .ruleset_fd = -1,
				.out_fd = -1, .err_fd = -1, .limits = &p->limits,
				.cgroup_procs_fd = s->hooks.cgroup_procs_fd, .lim = &s->lim,
				.release_fd = -1, .release_wfd = -1, .policy = p,
				.rights = &s->layers.rights };
	struct strv env = { 0 };
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int rel[2] = { -1, -1 };
	int sig_fd = -1, r;
	struct child_error ce;
	const char *bad = NULL;
	bool relaying = p->limits.output_bytes > 0, placed, mon_on = false;
	struct monitor mon;
	sigset_t mask;
	pid_t child, self;
	ssize_t n;

	if (p->user && (r = lookup_user(p->user, &c.uid, &c.gid)) < 0)
		return log_error_errno(r, "unknown user '%s' for --user", p->user);
	c.switch_user = p->user != NULL;
	if ((r = make_private_tmp(s)) < 0)
		return r;
	if (s->layers.landlock) {
		c.ruleset_fd = landlock_build_ruleset(p, &s->layers.rights,
						      s->private_tmp[0] ? s->private_tmp : NULL,
						      c.switch_user ? c.uid : getuid(),
						      c.switch_user ? c.gid : getgid(),
						      s->layers.ns.clone_flags != 0, &bad);
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
	if (s->layers.seccomp)
		c.filter = seccomp_program(p->net == NET_DENY && !p->net_allow.n);
	if ((r = build_env(s, &env)) < 0)
		goto out;
	c.envp = env.v;
	if (pipe2(rep, O_CLOEXEC) < 0 ||
	    (relaying && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0))) {
		r = log_error_errno(errno, "cannot create pipes");
		goto out;
	}
	c.report_fd = rep[1];
	c.out_fd = out[1];
	c.err_fd = err[1];
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
	sigprocmask(SIG_BLOCK, &mask, &c.saved_mask);
	sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig_fd < 0) {
		r = log_error_errno(errno, "cannot create a signalfd");
		goto out_mask;
	}
	/* Orphans of the session reparent to us, so none escapes the sweep. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	fflush(NULL);
	self = getpid(); /* the child's getppid() would already be a reaper if we died */
	if (s->layers.ns.clone_flags)
		c.ns = &s->layers.ns;
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
		close(err[1]);
		out[1] = err[1] = -1;
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
	supervise(s, child, out[0], err[0], sig_fd, mon_on ? &mon : NULL);
	out[0] = err[0] = -1; /* closed by supervise */
	if (n == sizeof(ce))
		log_error("cannot execute '%s': %s", argv[0], strerror(ce.err));
	r = 0;
out_mask:
	sigprocmask(SIG_SETMASK, &c.saved_mask, NULL);
out:
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
	return r;
}
