// SPDX-License-Identifier: GPL-2.0
/*
 * The supervision loop of a session (docs/limits.md, docs/runtime.md):
 * output relay under a cap that keeps the head and the tail
 * (supervise_relay.c), a pty when bpfbox's own stdout is a terminal, the
 * wall-clock timeout, pauses bounded by --pause-timeout and --on-limit
 * (supervise_pause.c), signal forwarding, the network denials seccomp
 * sends here, and the exit code and its cause.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#include "supervise_internal.h"
#include "seccomp.h"
#include "reaper.h"
#include "../policy/policy.h"
#include "../lib/fdpass.h"
#include "../lib/log.h"
#include "../lib/names.h"
#include "../lib/util.h"

/* Time between SIGTERM and SIGKILL when a session is stopped. */
#define KILL_GRACE_MS 2000

/* How often a paused session's cgroup.freeze is read. */
#define PAUSED_RECHECK_MS 200

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_SETUP;
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
	if (d.nr == __NR_connect) {
		session_connect_notified(s, fd, &d);
		return;
	}
	if (d.nr == __NR_bind) {
		session_bind_notified(s, fd, &d);
		return;
	}
	if (d.nr != __NR_socket) {
		session_file_op_notified(s, fd, &d);
		return;
	}
	seccomp_notify_answer(fd, d.id, EPERM);
	fam = (int)d.args[0];
	type = (int)d.args[1] & 0xf;
	/*
	 * NETLINK_ROUTE: getaddrinfo's AI_ADDRCONFIG and if_nameindex ask the
	 * interfaces and fall back when refused; counted, never listed.
	 */
	if (fam == AF_NETLINK && (int)d.args[2] == 0 /* NETLINK_ROUTE */) {
		s->denials.fallbacks++;
		return;
	}
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

enum { P_OUT, P_ERR, P_SIG, P_HOOK, P_IN, P_NOTIFY, P_NOTIFY_SOCK, P_REPORT, P_MON };

/* The tail half of the cap, shared by the streams relayed. */
static void streams_init(struct stream st[2], const struct policy_limits *pl)
{
	int nstreams = (st[0].from >= 0) + (st[1].from >= 0);

	for (int i = 0; i < 2 && pl->output_bytes; i++) {
		if (st[i].from < 0)
			continue;
		st[i].ring_cap = (pl->output_bytes / 2) / (nstreams ? nstreams : 1);
		st[i].ring = st[i].ring_cap ? malloc(st[i].ring_cap) : NULL;
		if (!st[i].ring)
			st[i].ring_cap = 0;
	}
}

/* Paused longer than --pause-timeout: the session is killed. */
static void pause_timed_out(struct session *s, struct life *lf, uint64_t now)
{
	log_notice("session %s killed: paused for %llu ms (%s), longer than its pause "
		   "timeout; exit %d",
		   s->id, (unsigned long long)((now - lf->paused_at) / 1000000ULL), lf->reason,
		   EXIT_LIMIT);
	sup_kill_for_limit(s, lf, "pause_timeout", CAUSE_PAUSE_TIMEOUT);
}

/*
 * The deadline passed: SIGTERM, then SIGKILL at kill_at; frozen processes
 * cannot handle SIGTERM, so a paused session is killed at once, and so is
 * a set-up not done yet (stopped or stuck, session_run.c wait_exec): the
 * grace is for the command, which has not started.
 */
static void on_deadline(struct session *s, struct life *lf, uint64_t now, bool wall,
			uint64_t *kill_at, uint64_t *deadline)
{
	/*
	 * --timeout-counts running: a pause asked for but not complete
	 * (a task in D state holds off "frozen 1") is not running time.
	 */
	if (!wall && !*kill_at && lf->mon && lf->mon->lim->cg[0] &&
	    monitor_freeze_requested(lf->mon)) {
		*deadline = now + 200000000ULL;
		return;
	}
	if (!*kill_at && !lf->paused && !lf->setup) {
		s->result.timed_out = true;
		s->result.cause = CAUSE_TIMEOUT;
		reaper_kill_all(lf->child, SIGTERM);
		*kill_at = now + KILL_GRACE_MS * 1000000ULL;
	} else {
		if (!*kill_at) {
			s->result.timed_out = true;
			s->result.cause = CAUSE_TIMEOUT;
			lf->ending = true;
		}
		sup_kill_session(s, lf->child);
		*kill_at = *deadline = 0;
	}
}

/* How long poll may wait for the monitors; -1: no bound of theirs. */
static int monitor_wait_ms(const struct life *lf, uint64_t now)
{
	int mt = monitor_timeout(lf->mon);

	/*
	 * Paused: cgroup.freeze is read again, a thaw may not show in
	 * cgroup.events. Frozen for an ask: its state is read again, a pause
	 * on top of it changes no freeze.
	 */
	if ((lf->paused || lf->ask_hold) && (mt < 0 || mt > PAUSED_RECHECK_MS))
		mt = PAUSED_RECHECK_MS;
	if (lf->oom_early) {
		int ow = now >= lf->oom_early_until
				 ? 0
				 : (int)((lf->oom_early_until - now) / 1000000) + 1;

		if (mt < 0 || ow < mt)
			mt = ow;
	}
	return mt;
}

/* Our stdin to the command's pty; closed for good at EOF or an error. */
static void forward_stdin(const struct supervise_io *io, struct pollfd *p)
{
	char buf[4096];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n > 0)
		sup_write_all(io->in_w, buf, n, NULL);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		p->fd = -1;
}

/* A signal to bpfbox: the pty follows our window, the rest goes to the session. */
static void forward_signal(struct session *s, struct life *lf, const struct supervise_io *io,
			   int sig_fd, bool child_done)
{
	struct signalfd_siginfo si;

	if (read(sig_fd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGWINCH) {
		struct winsize ws;

		if (io->in_w >= 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
			ioctl(io->out_r, TIOCSWINSZ, &ws);
	} else if (si.ssi_signo != SIGCHLD && !child_done) {
		if (lf->paused) {
			/* A frozen session cannot handle it: ^C on a paused run ends it. */
			log_notice("session %s killed: %s while paused", s->id,
				   strsignal(si.ssi_signo));
			lf->ending = true;
			s->result.cause = CAUSE_INTERRUPTED;
			sup_kill_session(s, lf->child);
		} else {
			kill(-lf->child, si.ssi_signo);
		}
	}
}

/* Whether the session's first process is gone, killed by SIGKILL (not yet reaped, or reaped). */
static bool leader_killed(const struct session *s, pid_t child)
{
	siginfo_t si = {0};
	int st = s->result.wait_status;

	if (st >= 0)
		return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	return waitid(P_PID, child, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid &&
	       si.si_code == CLD_KILLED && si.si_status == SIGKILL;
}

/*
 * The child's report, for a set-up handed over before its exec (frozen or
 * slow, session_run.c wait_exec). A record: that step failed, nothing
 * ran, the session ends as that failure (EXIT_SETUP). EOF: the command
 * exec'd, unless the session was ended first (the pause timeout, the
 * deadline, a signal while paused, bpfbox kill): its pipe closed with its
 * death, and it is not said to have started.
 */
static void on_report(struct session *s, struct life *lf, struct supervise_io *io, struct pollfd *p,
		      uint64_t *deadline)
{
	ssize_t n = read(io->report_fd, &io->report, sizeof(io->report));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	p->fd = -1;
	lf->setup = false;
	io->report_n = n;
	if (n == sizeof(io->report) && io->report.step != STEP_EXEC) {
		report_setup_failure(&io->report);
		s->result.cause = CAUSE_SETUP;
		lf->ending = true;
		sup_kill_session(s, lf->child);
		return;
	}
	if (n != sizeof(io->report) && (lf->ending || s->result.killed || s->result.timed_out ||
					leader_killed(s, lf->child))) {
		io->report_n = -1;
		return;
	}
	/*
	 * It exec'd, so it was thawed: the resume is said before "started"
	 * (cgroup.freeze reads 0 before the thaw lets anything run; the
	 * monitor's cgroup.events may come after the report's EOF).
	 */
	if (lf->paused && lf->mon && !monitor_freeze_requested(lf->mon)) {
		lf->mon->frozen = false;
		sup_frozen_changed(s, lf, deadline);
	}
	session_exec_confirmed(s, lf->child, n == sizeof(io->report));
}

/* A poll's events but the monitors': the hook, held calls, stdin, output, signals. */
static void on_events(struct session *s, struct life *lf, struct pollfd *pfd, struct stream st[2],
		      uint64_t *head_left, struct supervise_io *io, int sig_fd, bool child_done,
		      uint64_t *deadline)
{
	if (pfd[P_REPORT].fd >= 0 && pfd[P_REPORT].revents)
		on_report(s, lf, io, &pfd[P_REPORT], deadline);
	if (pfd[P_HOOK].revents & POLLIN)
		s->hooks.on_poll(s->hooks.ctx);
	/* An ask says the command exec'd: its init, frozen, may not close the report yet. */
	if (pfd[P_REPORT].fd >= 0 && s->asked) {
		pfd[P_REPORT].fd = -1;
		lf->setup = false;
		io->report_n = 0;
		session_exec_confirmed(s, lf->child, false);
	}
	/*
	 * The listener: sent before the exec, or later by a set-up handed over
	 * (session_run.c wait_exec); from now on its held calls are answered.
	 */
	if (pfd[P_NOTIFY_SOCK].fd >= 0 && pfd[P_NOTIFY_SOCK].revents) {
		if (pfd[P_NOTIFY_SOCK].revents & POLLIN)
			io->notify_fd = recv_fd(pfd[P_NOTIFY_SOCK].fd);
		pfd[P_NOTIFY].fd = io->notify_fd;
		/* Taken, or never to come (an error: no spin on it): polled no more. */
		if (io->notify_fd >= 0 || !(pfd[P_NOTIFY_SOCK].revents & POLLIN))
			pfd[P_NOTIFY_SOCK].fd = -1;
	}
	if (pfd[P_NOTIFY].fd >= 0 && pfd[P_NOTIFY].revents) {
		if (pfd[P_NOTIFY].revents & POLLIN)
			network_denied(s, pfd[P_NOTIFY].fd);
		else
			pfd[P_NOTIFY].fd = -1; /* no process left under the filter */
	}
	if (pfd[P_IN].fd >= 0 && pfd[P_IN].revents)
		forward_stdin(io, &pfd[P_IN]);
	for (int i = 0; i < 2; i++) {
		if (pfd[i].fd >= 0 && pfd[i].revents && !sup_relay(s, &st[i], head_left)) {
			close(pfd[i].fd);
			pfd[i].fd = -1;
		}
	}
	if (pfd[P_SIG].revents & POLLIN)
		forward_signal(s, lf, io, sig_fd, child_done);
}

/* What the monitors report: the OOM killer, the disk, pauses and resumes made outside. */
static void on_monitors(struct session *s, struct life *lf, struct pollfd *mfds, uint64_t *deadline)
{
	struct monitor *mon = lf->mon;
	unsigned int trig = monitor_dispatch(mon, mfds);

	if ((trig & MON_OOM_INVOKED) && !(trig & MON_OOM))
		sup_oom_invoked(s, lf);
	if (lf->oom_early && !(trig & MON_OOM) && now_ns() >= lf->oom_early_until)
		sup_oom_thaw(s, lf, deadline);
	if (lf->paused && s->lim.cg[0] && !monitor_freeze_requested(mon)) {
		mon->frozen = false;
		trig |= MON_FROZEN;
	}
	if ((trig & MON_FROZEN) || lf->ask_hold)
		sup_frozen_changed(s, lf, deadline);
	if ((trig & MON_OOM) && (!lf->paused || lf->oom_early))
		sup_pause_for(s, lf, "oom");
	else if (monitor_disk_over(mon) && !lf->paused && !s->result.killed)
		sup_pause_for(s, lf, monitor_disk_reason(mon));
}

/* The session is over: the tails written, held calls answered, the exit code and its cause. */
static void supervise_end(struct session *s, struct life *lf, struct stream st[2],
			  struct pollfd *pfd, struct supervise_io *io)
{
	const struct policy_limits *pl = &s->policy->limits;
	struct pollfd *rp = &pfd[P_REPORT];
	uint64_t no_deadline = 0; /* the session is over: nothing left to bound */

	/* The child is reaped and its session killed: the report is whole, or never comes. */
	if (rp->fd >= 0 && poll(rp, 1, 0) == 1)
		on_report(s, lf, io, rp, &no_deadline);
	if (rp->fd >= 0)
		io->report_n = -1;

	for (int i = 0; i < 2; i++) {
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
		if (st[i].from >= 0)
			sup_flush_tail(s, &st[i]);
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
	if (lf->paused)
		s->result.paused_ms += (now_ns() - lf->paused_at) / 1000000ULL;
	reaper_reap_all();
	/* A set-up step's record says nothing ran, whatever ended the session after it. */
	if (io->report_n == sizeof(io->report) && io->report.step != STEP_EXEC)
		s->result.exit_code = EXIT_SETUP;
	else if (s->result.killed &&
		 (s->result.cause == CAUSE_PAUSE_TIMEOUT || s->result.cause == CAUSE_OOM ||
		  s->result.cause == CAUSE_DISK))
		s->result.exit_code = EXIT_LIMIT;
	else
		s->result.exit_code = s->result.timed_out ? EXIT_TIMEOUT
							  : exit_code_of(s->result.wait_status);
	if (s->result.cause == CAUSE_EXIT && s->result.wait_status >= 0 &&
	    WIFSIGNALED(s->result.wait_status))
		s->result.cause = CAUSE_SIGNAL;
}

/*
 * A set-up handed over frozen (session_run.c wait_exec): the freeze may
 * predate the monitor (through the daemon, a pause between the register
 * and the fork), so no change of cgroup.events would say it.
 */
static void handed_over(struct session *s, struct life *lf, uint64_t *deadline)
{
	if (!lf->mon)
		return;
	monitor_read_frozen(lf->mon);
	if (lf->mon->frozen)
		sup_frozen_changed(s, lf, deadline);
}

/* The next deadline: the SIGKILL after a SIGTERM, the pause timeout (*pause_kill), the timeout. */
static uint64_t next_deadline(const struct life *lf, const struct policy_limits *pl, bool wall,
			      uint64_t kill_at, uint64_t deadline, uint64_t *pause_kill)
{
	uint64_t next = kill_at ? kill_at : (lf->paused && !wall) ? 0 : deadline;

	if (lf->paused && !lf->oom_early && !lf->ending)
		*pause_kill = lf->paused_at + pl->pause_timeout_ms * 1000000ULL;
	if (!kill_at && *pause_kill && (!next || *pause_kill < next))
		next = *pause_kill;
	return next;
}

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
	/* From the fork, not from here: a slow or held set-up counts (docs/runtime.md). */
	uint64_t deadline = timeout_ns ? (io->forked_ns ? io->forked_ns : now_ns()) + timeout_ns
				       : 0;
	uint64_t kill_at = 0, head_left = pl->output_bytes - pl->output_bytes / 2;
	bool child_done = false;
	struct life lf = {.mon = mon, .child = child, .setup = io->report_fd >= 0};
	struct stream st[2] = {{.from = io->out_r, .to = STDOUT_FILENO},
			       {.from = io->err_r, .to = STDERR_FILENO}};
	struct pollfd pfd[P_MON + MONITOR_MAX_FDS] = {
		[P_OUT] = {.fd = io->out_r, .events = POLLIN},
		[P_ERR] = {.fd = io->err_r, .events = POLLIN},
		[P_SIG] = {.fd = sig_fd, .events = POLLIN},
		[P_HOOK] = {.fd = s->hooks.poll_fd, .events = POLLIN},
		[P_IN] = {.fd = io->in_w >= 0 ? STDIN_FILENO : -1, .events = POLLIN},
		[P_NOTIFY] = {.fd = io->notify_fd, .events = POLLIN},
		[P_NOTIFY_SOCK] = {.fd = io->notify_sock, .events = POLLIN},
		[P_REPORT] = {.fd = io->report_fd, .events = POLLIN},
	};
	uint64_t drain_until = 0;

	streams_init(st, pl);
	if (io->report_fd >= 0)
		handed_over(s, &lf, &deadline);
	/* Without a cap, head_left is never read. */
	while (!child_done || pfd[P_OUT].fd >= 0 || pfd[P_ERR].fd >= 0) {
		uint64_t now = now_ns(), next, pause_kill = 0;
		int wait_ms = -1, status = 0, nmon = 0, mt;

		next = next_deadline(&lf, pl, wall, kill_at, deadline, &pause_kill);
		if (!child_done) {
			reaper_reap(child, &status, &child_done);
			if (child_done) {
				s->result.wait_status = status;
				sup_check_killed(s, &lf, status);
				/* The session ends with its first process. */
				sup_kill_session(s, child);
				drain_until = now + 5000000000ULL;
				kill_at = deadline = 0;
				continue;
			}
		} else {
			/* Output still open: a descendant holds it; kill again. */
			sup_kill_session(s, 0);
			reaper_reap(child, &status, &child_done);
			if (now >= drain_until)
				break;
			next = now + 100000000ULL;
		}
		if (!child_done && pause_kill && !kill_at && now >= pause_kill) {
			pause_timed_out(s, &lf, now);
			continue;
		}
		if (next && now >= next) {
			on_deadline(s, &lf, now, wall, &kill_at, &deadline);
			continue;
		}
		if (next)
			wait_ms = (next - now) / 1000000ULL + 1;
		if (mon && !child_done) {
			nmon = monitor_pollfds(mon, pfd + P_MON);
			mt = monitor_wait_ms(&lf, now);
			if (mt >= 0 && (wait_ms < 0 || mt < wait_ms))
				wait_ms = mt;
		}
		/* SIGCHLD arrives through the signalfd; poll it for the child. */
		if (poll(pfd, P_MON + nmon, wait_ms) < 0 && errno != EINTR)
			break;
		on_events(s, &lf, pfd, st, &head_left, io, sig_fd, child_done, &deadline);
		if (!mon || child_done || lf.ending)
			continue;
		on_monitors(s, &lf, pfd + P_MON, &deadline);
	}
	supervise_end(s, &lf, st, pfd, io);
}
