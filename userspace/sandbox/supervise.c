// SPDX-License-Identifier: GPL-2.0
/*
 * The supervision loop of a session (docs/limits.md, docs/runtime.md):
 * output relay under a cap that keeps the head and the tail, a pty when
 * bpfbox's own stdout is a terminal, the wall-clock timeout, pauses bounded
 * by --pause-timeout, --on-limit, signal forwarding, the network denials
 * seccomp sends here, and the exit code and its cause.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "session_internal.h"
#include "seccomp.h"
#include "reaper.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/names.h"
#include "../lib/util.h"

/* Time between SIGTERM and SIGKILL when a session is stopped. */
#define KILL_GRACE_MS 2000
/* How often a paused session's cgroup.freeze is read. */
#define PAUSED_RECHECK_MS 200

/*
 * One relayed stream. The first half of the output cap passes at once; past
 * it, each stream keeps its last bytes in a ring, written at the end after
 * a marker line that says how much was cut (docs/runtime.md).
 */
struct stream {
	int from, to;
	char *ring;
	size_t ring_cap, ring_len, ring_start;
	uint64_t cut; /* bytes dropped from the middle */
	char last;    /* the last byte written to `to` */
};

static void write_all(int fd, const char *buf, size_t len, char *last)
{
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* our reader went away; keep draining the command */
		off += w;
	}
	if (len && last)
		*last = buf[len - 1];
}

static void ring_put(struct stream *st, const char *buf, size_t n)
{
	if (!st->ring_cap) {
		st->cut += n;
		return;
	}
	if (n >= st->ring_cap) {
		st->cut += st->ring_len + n - st->ring_cap;
		memcpy(st->ring, buf + n - st->ring_cap, st->ring_cap);
		st->ring_start = 0;
		st->ring_len = st->ring_cap;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (st->ring_len == st->ring_cap) {
			st->ring_start = (st->ring_start + 1) % st->ring_cap;
			st->ring_len--;
			st->cut++;
		}
		st->ring[(st->ring_start + st->ring_len++) % st->ring_cap] = buf[i];
	}
}

/* Relays one chunk from a command's pipe to ours, under the output cap. */
static bool relay(struct session *s, struct stream *st, uint64_t *head_left)
{
	char buf[65536];
	ssize_t n = read(st->from, buf, sizeof(buf));
	size_t keep;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false; /* EOF; EIO from a pty master whose slave is closed */
	keep = n;
	if (s->policy->limits.output_bytes && keep > *head_left)
		keep = *head_left;
	write_all(st->to, buf, keep, &st->last);
	s->result.output_bytes += keep;
	if (s->policy->limits.output_bytes)
		*head_left -= keep;
	if (keep < (size_t)n)
		ring_put(st, buf + keep, n - keep);
	return true;
}

/* The tail of a stream, after a marker line when something was cut. */
static void flush_tail(struct session *s, struct stream *st)
{
	char marker[160];
	int len;

	/* The tail starts at a line: the partial line before it counts as cut. */
	for (size_t i = 0; st->cut && i < st->ring_len && i < 4096; i++) {
		if (st->ring[(st->ring_start + i) % st->ring_cap] != '\n')
			continue;
		if (i + 1 < st->ring_len) {
			st->ring_start = (st->ring_start + i + 1) % st->ring_cap;
			st->ring_len -= i + 1;
			st->cut += i + 1;
		}
		break;
	}
	if (st->cut) {
		len = snprintf(
			marker, sizeof(marker),
			"%s[bpfbox: %llu bytes cut here by the output limit of %llu bytes]\n",
			st->last && st->last != '\n' ? "\n" : "", (unsigned long long)st->cut,
			(unsigned long long)s->policy->limits.output_bytes);
		write_all(st->to, marker, len, NULL);
		s->result.output_dropped += st->cut;
	}
	if (st->ring_len) {
		size_t first = st->ring_cap - st->ring_start;

		if (first > st->ring_len)
			first = st->ring_len;
		write_all(st->to, st->ring + st->ring_start, first, NULL);
		write_all(st->to, st->ring, st->ring_len - first, NULL);
		s->result.output_bytes += st->ring_len;
	}
	free(st->ring);
	st->ring = NULL;
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
	bool oom_early; /* frozen when the OOM killer was invoked; its kill not counted yet */
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
	status_lifecycle(s, ev);
}

/* Ends the session for a limit: said on stderr, the stream and the status channel. */
static void kill_for_limit(struct session *s, struct life *lf, const char *reason,
			   enum session_cause cause)
{
	struct session_event ev = {.type = SEV_KILLED, .reason = reason, .was_paused = lf->paused};

	s->result.killed = true;
	s->result.cause = cause;
	lf->ending = true;
	emit(s, &ev);
	kill_session(s, lf->child);
}

/* Whether the session's first process is gone (the session ends with it). */
static bool leader_gone(const struct life *lf)
{
	siginfo_t si = {0};

	return waitid(P_PID, lf->child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid;
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
	if (*deadline && s->policy->limits.timeout_counts == TIMEOUT_COUNTS_RUNNING)
		*deadline += now_ns() - lf->paused_at;
}

/* A monitor asks for a pause: freeze (here or through the daemon) and say so. */
static void pause_for(struct session *s, struct life *lf, const char *reason)
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
	/* disk_unwatched is a disk limit that cannot hold: --on-limit disk=kill kills too. */
	if (streq(reason, "oom") ? s->policy->limits.on_oom == ON_LIMIT_KILL
				 : s->policy->limits.on_disk == ON_LIMIT_KILL) {
		if (streq(reason, "oom"))
			log_notice("session %s killed: out of memory at its %llu MB limit "
				   "(--on-limit kill); raise it with --memory",
				   s->id, (unsigned long long)ev.memory_mb);
		else
			log_notice("session %s killed: the workspace grew by %.1f MB, over its "
				   "disk limit of %llu MB (--on-limit kill); raise it with --disk",
				   s->id, monitor_disk_used(lf->mon) / 1048576.0,
				   (unsigned long long)ev.disk_mb);
		if (lf->oom_early)
			lf->oom_early = false;
		kill_for_limit(s, lf, reason, streq(reason, "oom") ? CAUSE_OOM : CAUSE_DISK);
		return;
	}
	if (streq(reason, "oom") && !s->hooks.request_pause)
		oom_find_victim(s->id, &ev.pid, ev.comm, sizeof(ev.comm));
	/* The first process was the victim: the session ends, there is nothing to resume. */
	if (streq(reason, "oom") &&
	    ((ev.pid && (ev.pid == lf->child || ev.pid == s->cmd_pid)) || leader_gone(lf))) {
		log_notice("session %s ends: out of memory at its %llu MB limit, the kernel killed "
			   "its first process; raise the limit with --memory",
			   s->id, (unsigned long long)ev.memory_mb);
		s->result.cause = CAUSE_OOM;
		lf->ending = true;
		if (lf->oom_early) {
			lf->oom_early = lf->paused = false;
			limits_freeze(&s->lim, false);
		}
		return;
	}
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
		if (startswith(reason, "disk")) {
			/* Fail closed: what cannot be paused is stopped. */
			log_notice("session %s killed: the workspace grew by %.1f MB, over its "
				   "disk limit "
				   "of %llu MB, and it cannot be paused here (no cgroup freezer)",
				   s->id, monitor_disk_used(lf->mon) / 1048576.0,
				   (unsigned long long)ev.disk_mb);
			kill_for_limit(s, lf, "disk", CAUSE_DISK);
		} else {
			log_notice("session %s: the kernel killed a process out of memory at the "
				   "%llu MB "
				   "limit; the session cannot be paused here and goes on",
				   s->id, (unsigned long long)ev.memory_mb);
		}
		return;
	}
	if (!early)
		lf->paused_at = now_ns();
	lf->paused = true;
	snprintf(lf->reason, sizeof(lf->reason), "%s", reason);
	if (streq(reason, "oom"))
		log_notice(
			"session %s paused: out of memory at its %llu MB limit, the kernel killed "
			"pid %d (%s); 'bpfbox resume %s --memory MB' within %llu s, else it is "
			"killed (exit %d)",
			s->id, (unsigned long long)ev.memory_mb, ev.pid, ev.comm[0] ? ev.comm : "?",
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
			(long long)monitor_disk_entries(lf->mon), (unsigned long long)ev.disk_mb,
			(unsigned long long)ev.disk_mb * MONITOR_ENTRIES_PER_MB, s->id,
			(unsigned long long)(s->policy->limits.pause_timeout_ms / 1000),
			EXIT_LIMIT);
}

/* cgroup.events changed: a pause or resume made outside (bpfbox pause/resume, the daemon). */
static void frozen_changed(struct session *s, struct life *lf, uint64_t *deadline)
{
	struct session_event ev = {0};
	char state[48];
	uint64_t now = now_ns();

	if (lf->mon->frozen && !lf->paused) {
		monitor_read_state(lf->mon, state, sizeof(state));
		/* The daemon holds it for a command rule's ask (ops_ask.c): no pause. */
		if (streq(state, "ask"))
			return;
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
static void check_killed(struct session *s, struct life *lf, int status)
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

/*
 * A call the seccomp listener holds: socket() refused with EPERM and
 * counted; a file change passed on (fileops.c).
 */
static void network_denied(struct session *s, int fd)
{
	static const char *const families[] = {[AF_INET] = "AF_INET",
					       [AF_INET6] = "AF_INET6",
					       [AF_NETLINK] = "AF_NETLINK",
					       [AF_PACKET] = "AF_PACKET"};
	struct seccomp_denied d;
	char what[64];
	int fam, type;

	if (seccomp_notify_recv(fd, &d) < 0)
		return;
	if (d.nr != __NR_socket) {
		session_file_op_notified(s, fd, &d);
		return;
	}
	seccomp_notify_answer(fd, d.id, EPERM);
	fam = (int)d.args[0];
	type = (int)d.args[1] & 0xf;
	if (fam >= 0 && (size_t)fam < ARRAY_SIZE(families) && families[fam])
		snprintf(what, sizeof(what), "%s", families[fam]);
	else
		snprintf(what, sizeof(what), "family %d", fam);
	snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s",
		 type == SOCK_STREAM  ? "stream"
		 : type == SOCK_DGRAM ? "datagram"
		 : type == SOCK_RAW   ? "raw"
				      : "other");
	denials_add(&s->denials, bpfbox_layer_name(BPFBOX_LAYER_SECCOMP), "socket", what, EPERM, 1);
}

enum { P_OUT, P_ERR, P_SIG, P_HOOK, P_IN, P_NOTIFY, P_MON };

/*
 * The supervision loop: relay output, watch the child and the deadlines,
 * forward SIGINT/SIGTERM/SIGHUP to the session, stop it on timeout, pause
 * it when a monitor says so, and kill it when a pause lasts too long.
 */
void supervise(struct session *s, pid_t child, struct supervise_io *io, int sig_fd,
	       struct monitor *mon)
{
	const struct policy_limits *pl = &s->policy->limits;
	const uint64_t timeout_ns = pl->timeout_ms * 1000000ULL;
	const bool wall = pl->timeout_counts == TIMEOUT_COUNTS_WALL;
	uint64_t deadline = timeout_ns ? now_ns() + timeout_ns : 0;
	uint64_t kill_at = 0, head_left = pl->output_bytes - pl->output_bytes / 2;
	bool child_done = false;
	struct life lf = {.mon = mon, .child = child};
	struct stream st[2] = {{.from = io->out_r, .to = STDOUT_FILENO},
			       {.from = io->err_r, .to = STDERR_FILENO}};
	struct pollfd pfd[P_MON + MONITOR_MAX_FDS] = {
		[P_OUT] = {.fd = io->out_r, .events = POLLIN},
		[P_ERR] = {.fd = io->err_r, .events = POLLIN},
		[P_SIG] = {.fd = sig_fd, .events = POLLIN},
		[P_HOOK] = {.fd = s->hooks.poll_fd, .events = POLLIN},
		[P_IN] = {.fd = io->in_w >= 0 ? STDIN_FILENO : -1, .events = POLLIN},
		[P_NOTIFY] = {.fd = io->notify_fd, .events = POLLIN},
	};
	uint64_t drain_until = 0;
	int nstreams = (io->out_r >= 0) + (io->err_r >= 0);

	/* The tail half of the cap, shared by the streams relayed. */
	for (int i = 0; i < 2 && pl->output_bytes; i++) {
		if (st[i].from < 0)
			continue;
		st[i].ring_cap = (pl->output_bytes / 2) / (nstreams ? nstreams : 1);
		st[i].ring = st[i].ring_cap ? malloc(st[i].ring_cap) : NULL;
		if (!st[i].ring)
			st[i].ring_cap = 0;
	}
	/* Without a cap, head_left is never read. */
	while (!child_done || pfd[P_OUT].fd >= 0 || pfd[P_ERR].fd >= 0) {
		uint64_t now = now_ns(), next, pause_kill = 0;
		int wait_ms = -1, status = 0, nmon = 0, mt;
		unsigned int trig;

		if (lf.paused && !lf.oom_early && !lf.ending)
			pause_kill = lf.paused_at + pl->pause_timeout_ms * 1000000ULL;
		next = kill_at ? kill_at : (lf.paused && !wall) ? 0 : deadline;
		if (!kill_at && pause_kill && (!next || pause_kill < next))
			next = pause_kill;
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
		if (!child_done && pause_kill && !kill_at && now >= pause_kill) {
			log_notice(
				"session %s killed: paused for %llu ms (%s), longer than its pause "
				"timeout; exit %d",
				s->id, (unsigned long long)((now - lf.paused_at) / 1000000ULL),
				lf.reason, EXIT_LIMIT);
			kill_for_limit(s, &lf, "pause_timeout", CAUSE_PAUSE_TIMEOUT);
			continue;
		}
		if (next && now >= next) {
			/*
			 * --timeout-counts running: a pause asked for but not complete
			 * (a task in D state holds off "frozen 1") is not running time.
			 */
			if (!wall && !kill_at && lf.mon && lf.mon->lim->cg[0] &&
			    monitor_freeze_requested(lf.mon)) {
				deadline = now + 200000000ULL;
				continue;
			}
			if (!kill_at && !lf.paused) {
				s->result.timed_out = true;
				s->result.cause = CAUSE_TIMEOUT;
				reaper_kill_all(child, SIGTERM);
				kill_at = now + KILL_GRACE_MS * 1000000ULL;
			} else {
				/* Frozen processes cannot handle SIGTERM: killed at once. */
				if (!kill_at) {
					s->result.timed_out = true;
					s->result.cause = CAUSE_TIMEOUT;
					lf.ending = true;
				}
				kill_session(s, child);
				kill_at = deadline = 0;
			}
			continue;
		}
		if (next)
			wait_ms = (next - now) / 1000000ULL + 1;
		if (mon && !child_done) {
			nmon = monitor_pollfds(mon, pfd + P_MON);
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
		if (poll(pfd, P_MON + nmon, wait_ms) < 0 && errno != EINTR)
			break;
		if (pfd[P_HOOK].revents & POLLIN)
			s->hooks.on_poll(s->hooks.ctx);
		if (pfd[P_NOTIFY].fd >= 0 && pfd[P_NOTIFY].revents) {
			if (pfd[P_NOTIFY].revents & POLLIN)
				network_denied(s, pfd[P_NOTIFY].fd);
			else
				pfd[P_NOTIFY].fd = -1; /* no process left under the filter */
		}
		if (pfd[P_IN].fd >= 0 && pfd[P_IN].revents) {
			char buf[4096];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

			if (n > 0)
				write_all(io->in_w, buf, n, NULL);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				pfd[P_IN].fd = -1;
		}
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd >= 0 && pfd[i].revents && !relay(s, &st[i], &head_left)) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
		if (pfd[P_SIG].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sig_fd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo == SIGWINCH) {
				struct winsize ws;

				if (io->in_w >= 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
					ioctl(io->out_r, TIOCSWINSZ, &ws);
			} else if (si.ssi_signo != SIGCHLD && !child_done) {
				if (lf.paused) {
					/* A frozen session cannot handle it: ^C on a paused run ends it. */
					log_notice("session %s killed: %s while paused", s->id,
						   strsignal(si.ssi_signo));
					lf.ending = true;
					s->result.cause = CAUSE_INTERRUPTED;
					kill_session(s, child);
				} else {
					kill(-child, si.ssi_signo);
				}
			}
		}
		if (!mon || child_done || lf.ending)
			continue;
		trig = monitor_dispatch(mon, pfd + P_MON);
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
	for (int i = 0; i < 2; i++) {
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
		if (st[i].from >= 0)
			flush_tail(s, &st[i]);
	}
	/* socket() calls still held (the session is gone): answered, not counted twice. */
	while (io->notify_fd >= 0) {
		struct pollfd p = {.fd = io->notify_fd, .events = POLLIN};

		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			break;
		network_denied(s, io->notify_fd);
	}
	if (s->result.output_dropped)
		log_notice("output limit of %llu bytes reached: %llu bytes cut from the middle of "
			   "the output (head and tail kept)",
			   (unsigned long long)pl->output_bytes,
			   (unsigned long long)s->result.output_dropped);
	if (lf.paused)
		s->result.paused_ms += (now_ns() - lf.paused_at) / 1000000ULL;
	reaper_reap_all();
	if (s->result.killed && (s->result.cause == CAUSE_PAUSE_TIMEOUT ||
				 s->result.cause == CAUSE_OOM || s->result.cause == CAUSE_DISK))
		s->result.exit_code = EXIT_LIMIT;
	else
		s->result.exit_code = s->result.timed_out ? EXIT_TIMEOUT
							  : exit_code_of(s->result.wait_status);
	if (s->result.cause == CAUSE_EXIT && s->result.wait_status >= 0 &&
	    WIFSIGNALED(s->result.wait_status))
		s->result.cause = CAUSE_SIGNAL;
}
