// SPDX-License-Identifier: GPL-2.0
/*
 * A session's life under its limits (docs/limits.md): the OOM and disk
 * monitors' pauses, --on-limit kill, pauses and resumes made outside
 * (bpfbox pause/resume, the daemon), and bpfbox kill.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "supervise_internal.h"
#include "reaper.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* How long an early OOM freeze waits for the kill before it thaws again. */
#define OOM_KILL_WAIT_NS (1000ULL * 1000000ULL)

/* Kills the whole session: its cgroup (daemonized descendants too), then every descendant. */
void sup_kill_session(struct session *s, pid_t leader)
{
	limits_kill(&s->lim);
	reaper_kill_all(leader, SIGKILL);
}

static void emit(struct session *s, const struct session_event *ev)
{
	if (s->hooks.on_event)
		s->hooks.on_event(s->hooks.ctx, ev);
	status_lifecycle(s, ev);
}

/* Ends the session for a limit: said on stderr, the stream and the status channel. */
void sup_kill_for_limit(struct session *s, struct life *lf, const char *reason,
			enum session_cause cause)
{
	struct session_event ev = {.type = SEV_KILLED, .reason = reason, .was_paused = lf->paused};

	s->result.killed = true;
	s->result.cause = cause;
	lf->ending = true;
	emit(s, &ev);
	sup_kill_session(s, lf->child);
}

/* Whether the session's first process is gone (the session ends with it); how, in si. */
static bool leader_gone(const struct life *lf, siginfo_t *si)
{
	return waitid(P_PID, lf->child, si, WEXITED | WNOHANG | WNOWAIT) == 0 && si->si_pid;
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

void sup_oom_invoked(struct session *s, struct life *lf)
{
	/* Frozen for an ask: that freeze holds, and only its answer lifts it. */
	if (lf->paused || lf->ask_hold || !s->lim.cg[0] || !s->lim.pause || killed_outside(lf))
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
void sup_oom_thaw(struct session *s, struct life *lf, uint64_t *deadline)
{
	lf->oom_early = lf->paused = false;
	if (*deadline && s->policy->limits.timeout_counts == TIMEOUT_COUNTS_RUNNING)
		*deadline += now_ns() - lf->paused_at;
	/*
	 * An ask froze it meanwhile (its mark is on the cgroup, ctl_ask_hold):
	 * the freeze is the ask's now. A thaw would let a sibling SIGCONT the
	 * exec that waits for its answer (docs/SECURITY.md, command rules).
	 */
	if (getxattr(s->lim.cg, LIMITS_XATTR_ASK, NULL, 0) > 0) {
		session_cgroup_set_state(s->lim.cg, "ask");
		lf->ask_hold = true;
		return;
	}
	session_cgroup_set_state(s->lim.cg, "running");
	limits_freeze(&s->lim, false);
}

/* --on-limit kill for this limit: the session ends now instead of a pause. */
static bool kill_on_limit(struct session *s, struct life *lf, const char *reason,
			  const struct session_event *ev)
{
	/* disk_unwatched is a disk limit that cannot hold: --on-limit disk=kill kills too. */
	if (!(streq(reason, "oom") ? s->policy->limits.on_oom == ON_LIMIT_KILL
				   : s->policy->limits.on_disk == ON_LIMIT_KILL))
		return false;
	if (streq(reason, "oom"))
		log_notice("session %s killed: out of memory at its %llu MB limit "
			   "(--on-limit kill); raise it with --memory",
			   s->id, (unsigned long long)ev->memory_mb);
	else if (lf->mon->disk.held_blind)
		log_notice("session %s killed: a process of the session cannot be read, so the "
			   "files it holds unlinked cannot be counted against its disk limit "
			   "(--on-limit kill)",
			   s->id);
	else
		log_notice("session %s killed: the workspace grew by %.1f MB, over its "
			   "disk limit of %llu MB (--on-limit kill); raise it with --disk",
			   s->id, monitor_disk_used(lf->mon) / 1048576.0,
			   (unsigned long long)ev->disk_mb);
	if (lf->oom_early)
		lf->oom_early = false;
	sup_kill_for_limit(s, lf, reason, streq(reason, "oom") ? CAUSE_OOM : CAUSE_DISK);
	return true;
}

/*
 * The first process is gone: the session ends, there is nothing to pause.
 * It was the OOM victim when the kill names it, or it died of SIGKILL (a
 * PID namespace's init says so with 128+9). A first process that exited
 * on its own before the pause came (its child was the victim) ends the
 * session with its own exit status, not as an OOM.
 */
static bool leader_oom(struct session *s, struct life *lf, const struct session_event *ev)
{
	bool named = ev->pid && (ev->pid == lf->child || ev->pid == s->cmd_pid);
	siginfo_t si = {0};

	if (!named && !leader_gone(lf, &si))
		return false;
	if (named || (si.si_code == CLD_KILLED && si.si_status == SIGKILL) ||
	    (s->layers.ns.clone_flags & CLONE_NEWPID && si.si_code == CLD_EXITED &&
	     si.si_status == 128 + SIGKILL)) {
		log_notice("session %s ends: out of memory at its %llu MB limit, the kernel "
			   "killed its first process; raise the limit with --memory",
			   s->id, (unsigned long long)ev->memory_mb);
		s->result.cause = CAUSE_OOM;
	} else {
		char who[32] = "a process";

		if (ev->pid)
			snprintf(who, sizeof(who), "pid %d", (int)ev->pid);
		log_notice("session %s ends: out of memory at its %llu MB limit, the kernel "
			   "killed %s, and the first process ended before the pause; raise "
			   "the limit with --memory",
			   s->id, (unsigned long long)ev->memory_mb, who);
	}
	lf->ending = true;
	if (lf->oom_early) {
		lf->oom_early = lf->paused = false;
		limits_freeze(&s->lim, false);
	}
	return true;
}

/* No pause here (no cgroup freezer): a disk limit kills, fail closed; OOM goes on. */
static void cannot_pause(struct session *s, struct life *lf, const char *reason,
			 const struct session_event *ev)
{
	if (startswith(reason, "disk") && lf->mon->disk.held_blind) {
		log_notice("session %s killed: a process of the session cannot be read, so the "
			   "files it holds unlinked cannot be counted against its disk limit, and "
			   "it cannot be paused here (no cgroup freezer)",
			   s->id);
		sup_kill_for_limit(s, lf, "disk", CAUSE_DISK);
	} else if (startswith(reason, "disk")) {
		/* Fail closed: what cannot be paused is stopped. */
		log_notice("session %s killed: the workspace grew by %.1f MB, over its "
			   "disk limit "
			   "of %llu MB, and it cannot be paused here (no cgroup freezer)",
			   s->id, monitor_disk_used(lf->mon) / 1048576.0,
			   (unsigned long long)ev->disk_mb);
		sup_kill_for_limit(s, lf, "disk", CAUSE_DISK);
	} else {
		log_notice("session %s: the kernel killed a process out of memory at the "
			   "%llu MB "
			   "limit; the session cannot be paused here and goes on",
			   s->id, (unsigned long long)ev->memory_mb);
	}
}

/* The pause on stderr: why, and what resumes it before it is killed. */
static void say_paused(const struct session *s, const struct life *lf, const char *reason,
		       const struct session_event *ev)
{
	if (streq(reason, "oom"))
		log_notice(
			"session %s paused: out of memory at its %llu MB limit, the kernel killed "
			"pid %d (%s); 'bpfbox resume %s --memory MB' within %llu s, else it is "
			"killed (exit %d)",
			s->id, (unsigned long long)ev->memory_mb, ev->pid,
			ev->comm[0] ? ev->comm : "?", s->id,
			(unsigned long long)(s->policy->limits.pause_timeout_ms / 1000),
			EXIT_LIMIT);
	else if (streq(reason, "disk_unwatched") && lf->mon->disk.held_blind)
		log_notice("session %s paused: a process of the session cannot be read, so the "
			   "files it holds unlinked cannot be counted and its disk limit cannot be "
			   "enforced; it is killed in %llu s (exit %d)",
			   s->id, (unsigned long long)(s->policy->limits.pause_timeout_ms / 1000),
			   EXIT_LIMIT);
	else if (streq(reason, "disk_unwatched"))
		log_notice("session %s paused: a directory of its workspace cannot be watched (the "
			   "inotify watch limit is reached), so its disk limit cannot be enforced; "
			   "raise "
			   "fs.inotify.max_user_watches; it is killed in %llu s (exit %d)",
			   s->id, (unsigned long long)(s->policy->limits.pause_timeout_ms / 1000),
			   EXIT_LIMIT);
	else
		log_notice(
			"session %s paused: the workspace grew by %.1f MB and %lld entries, over "
			"its disk limit of %llu MB (%llu entries); free space or 'bpfbox resume %s "
			"--disk MB' within %llu s, else it is killed (exit %d)",
			s->id, monitor_disk_used(lf->mon) / 1048576.0,
			(long long)monitor_disk_entries(lf->mon), (unsigned long long)ev->disk_mb,
			(unsigned long long)ev->disk_mb * MONITOR_ENTRIES_PER_MB, s->id,
			(unsigned long long)(s->policy->limits.pause_timeout_ms / 1000),
			EXIT_LIMIT);
}

/* A monitor asks for a pause: freeze (here or through the daemon) and say so. */
void sup_pause_for(struct session *s, struct life *lf, const char *reason)
{
	struct session_event ev = {.type = SEV_PAUSED, .reason = reason};
	bool early = lf->oom_early && streq(reason, "oom"), frozen = early;
	char state[48];
	int r = -EOPNOTSUPP;

	if (killed_outside(lf))
		return;
	fill_limits(s, lf, &ev);
	ev.oom_kills = lf->mon->new_kills;
	lf->mon->new_kills = 0;
	if (kill_on_limit(s, lf, reason, &ev))
		return;
	if (streq(reason, "oom") && !s->hooks.request_pause)
		oom_find_victim(s->id, &ev.pid, ev.comm, sizeof(ev.comm));
	if (streq(reason, "oom") && leader_oom(s, lf, &ev))
		return;
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
		/*
		 * The daemon names the victim: the first process's OOM ends the
		 * session at once, 137, as in embedded mode (docs/runtime.md).
		 */
		if (r == 0 && streq(reason, "oom") && ev.pid && leader_oom(s, lf, &ev)) {
			sup_kill_session(s, lf->child);
			return;
		}
		/* The daemon wrote session.paused; the status channel is ours. */
		if (r == 0)
			status_lifecycle(s, &ev);
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
		cannot_pause(s, lf, reason, &ev);
		return;
	}
	if (!early)
		lf->paused_at = now_ns();
	lf->paused = true;
	snprintf(lf->reason, sizeof(lf->reason), "%s", reason);
	say_paused(s, lf, reason, &ev);
}

/* cgroup.events changed: a pause or resume made outside (bpfbox pause/resume, the daemon). */
void sup_frozen_changed(struct session *s, struct life *lf, uint64_t *deadline)
{
	struct session_event ev = {0};
	char state[48];
	uint64_t now = now_ns();

	if (!lf->mon->frozen)
		lf->ask_hold = false;
	if (lf->mon->frozen && !lf->paused) {
		monitor_read_state(lf->mon, state, sizeof(state));
		/* The daemon holds it for a command rule's ask (ops_ask.c): no pause. */
		if (streq(state, "ask")) {
			lf->ask_hold = true;
			return;
		}
		/*
		 * Held for an ask, then: a pause on top of it (state "paused
		 * REASON", still frozen), or the ask's thaw under way ("running"
		 * is written after cgroup.freeze 0, before cgroup.events says so).
		 */
		if (lf->ask_hold &&
		    !(startswith(state, "paused ") && monitor_freeze_requested(lf->mon)))
			return;
		lf->ask_hold = false;
		lf->paused = true;
		lf->paused_at = now;
		snprintf(lf->reason, sizeof(lf->reason), "%s",
			 startswith(state, "paused ") ? state + 7 : "manual");
		ev.type = SEV_PAUSED;
		ev.reason = lf->reason;
		fill_limits(s, lf, &ev);
		log_notice("session %s paused (%s); 'bpfbox resume %s' within %llu s goes on, "
			   "else it is killed (exit %d)",
			   s->id, lf->reason, s->id,
			   (unsigned long long)(s->policy->limits.pause_timeout_ms / 1000),
			   EXIT_LIMIT);
		emit(s, &ev);
	} else if (!lf->mon->frozen && lf->paused) {
		uint64_t paused = now - lf->paused_at;

		monitor_reload_limits(lf->mon);
		lf->paused = false;
		/* --timeout-counts running: time paused is not counted. */
		if (*deadline && s->policy->limits.timeout_counts == TIMEOUT_COUNTS_RUNNING)
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
void sup_check_killed(struct session *s, struct life *lf, int status)
{
	struct session_event ev = {.type = SEV_KILLED, .reason = "manual"};
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
	s->result.cause = CAUSE_KILLED;
	ev.was_paused = lf->paused;
	log_notice("session %s killed by 'bpfbox kill'", s->id);
	emit(s, &ev);
}
