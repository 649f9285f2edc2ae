/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One sandboxed session: the command runs in a forked child that restricts
 * itself (setsid, rlimits, capabilities, no_new_privs, Landlock, seccomp)
 * and then execs. The parent relays output under a cap, enforces the
 * timeout and kills every descendant when the session ends.
 */
#ifndef BPFBOX_SESSION_H
#define BPFBOX_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../probe/probe.h"
#include "../monitor/limits.h"
#include "../monitor/monitor.h"
#include "ns.h"
#include "../lib/denial.h"

struct bpfbox_policy;
struct strv;
struct session;
struct changes_set;
struct grant_fds;
struct egress_secrets;

/* Exit codes of `bpfbox run` besides the command's own (docs/runtime.md). */
#define EXIT_LIMIT	    123 /* killed by a limit: paused too long, or --on-limit kill */
#define EXIT_TIMEOUT	    124
#define EXIT_SETUP	    125
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND	    127

/* What holds in one session, decided before the child is forked. */
struct session_layers {
	enum bpfbox_level requested;
	enum bpfbox_level enabled;
	int landlock_abi; /* 0 when Landlock is not used */
	struct landlock_rights rights;
	bool landlock;
	bool seccomp;
	struct ns_plan ns;	 /* the namespace layer; ns.clone_flags 0: none */
	char not_enforced[1024]; /* what the policy asks but this host cannot do */
};

/*
 * Why a session ended, as the status channel says it ("cause",
 * docs/runtime.md): the enum and its names from one list. X(ID, name)
 */
#define SESSION_CAUSES(X)                                                                        \
	X(CAUSE_EXIT, "exit")			/* the command exited */                         \
	X(CAUSE_SIGNAL, "signal")		/* the command was killed by a signal */         \
	X(CAUSE_TIMEOUT, "timeout")		/* --timeout */                                  \
	X(CAUSE_PAUSE_TIMEOUT, "pause_timeout") /* paused longer than --pause-timeout */         \
	X(CAUSE_OOM, "oom")   /* --on-limit kill, or the OOM victim was the first process */     \
	X(CAUSE_DISK, "disk") /* --on-limit kill, or over the disk limit where nothing pauses */ \
	X(CAUSE_KILLED, "killed")	    /* bpfbox kill */                                    \
	X(CAUSE_INTERRUPTED, "interrupted") /* a signal to bpfbox while paused */                \
	X(CAUSE_SETUP, "setup")		    /* nothing ran */                                    \
	X(CAUSE_NOT_FOUND, "exec_failed")   /* exec failed */                                    \
	X(CAUSE_USAGE, "usage")		    /* a bad command line (exit 2), nothing ran */

#define SESSION_CAUSE_ENUM(id, name) id,
enum session_cause { SESSION_CAUSES(SESSION_CAUSE_ENUM) };
#undef SESSION_CAUSE_ENUM

const char *session_cause_name(enum session_cause c);

struct session_result {
	int exit_code;	 /* what `bpfbox run` exits with */
	int wait_status; /* the command's raw status, -1 if it never ran */
	enum session_cause cause;
	bool timed_out;
	bool started;		 /* the command exec'd: a set-up that never ended did not */
	bool killed;		 /* by `bpfbox kill`, or over its disk limit when it cannot pause */
	uint64_t paused_ms;	 /* time spent paused (not counted by the timeout) */
	uint64_t output_bytes;	 /* relayed to stdout and stderr */
	uint64_t output_dropped; /* cut by the output cap */
};

/* Optional ties to the BPF agent, set after session_plan(). */
struct session_hooks {
	int poll_fd;		    /* polled with the command's output; -1: none */
	void (*on_poll)(void *ctx); /* called when poll_fd is readable */
	/*
	 * Called in the parent right after fork, while the child waits on a
	 * pipe before its first step (before it calls setsid): the daemon moves the child into the session cgroup
	 * here. The child goes on when it returns 0; otherwise the child is
	 * killed, nothing runs and session_run returns its -errno (the hook
	 * prints the error; -EAGAIN: the caller runs the session another way,
	 * and no status line says it ended). NULL: the child does not wait.
	 */
	int (*before_release)(void *ctx, pid_t child);
	/*
	 * Called in the parent before the fork, once the restrictions are
	 * built: the daemon's reply to a register sent ahead is read here (it
	 * names the session's cgroup the child is cloned into). 0, or -errno
	 * as for before_release (-EAGAIN: run another way). NULL: none.
	 */
	int (*before_fork)(void *ctx);
	/*
	 * Daemon mode: asks the daemon to pause the session for a monitor (it
	 * freezes the cgroup, finds the OOM victim, writes session.paused) and
	 * fills ev->pid and ev->comm from its reply. 0, or -errno: then the
	 * session is frozen here if it can be. NULL: frozen here.
	 */
	int (*request_pause)(void *ctx, struct session_event *ev);
	/*
	 * Called once the command has ended, before on_end: the daemon is
	 * asked to end the session, and on_end reads its answer. 0 when it
	 * was asked: the session's private tmp and home are removed in
	 * between when no process of the session can be left (its PID
	 * namespace's init reaped). NULL: none.
	 */
	int (*end_begin)(void *ctx, struct session *s);
	/*
	 * Called once the command has ended, before the denial summary is
	 * printed: the daemon's end of the session, whose reply carries the
	 * denials its BPF records showed (s->denials). NULL: none.
	 */
	void (*on_end)(void *ctx, struct session *s);
	/* Each lifecycle transition made or seen here (embedded: the audit stream). */
	void (*on_event)(void *ctx, const struct session_event *ev);
	void *ctx;
};

struct session {
	char id[33];
	const struct bpfbox_policy *policy;
	struct session_layers layers;
	struct session_hooks hooks;
	char private_tmp[4096];
	char proxy_url[64]; /* HTTP_PROXY for the command, "" none (egress by name) */
	struct denials_shared *side_denials; /* the proxy's, merged at the end; NULL: none */
	const struct strv *secret_env;	     /* --secret: NAME=placeholder entries, NULL: none */
	const char *ca_pem; /* --secret: the session CA (PEM) to trust, NULL: none */
	const struct egress_secrets *secrets; /* --secret: the values, for a daemon's proxy */
	char ca_bundle[4096 + 32];	      /* where the session reads it (its private home) */
	struct session_limits lim;	      /* memory, pids, cpu, disk (docs/limits.md) */
	bool lim_made;			      /* limits_create() ran */
	struct session_result result;
	int status_fd;		   /* --status-fd: one JSON line per event; -1: none */
	pid_t cmd_pid;		   /* the command (the PID namespace's init's child), 0: unknown */
	bool asked;		   /* a hook saw a command rule's ask: the command has exec'd */
	bool exec_rules;	   /* a daemon checks the command rules on every exec */
	bool child_placed;	   /* cloned into the v2 cgroup of lim.cg_fd (CLONE_INTO_CGROUP) */
	const struct strv *labels; /* --label KEY=VALUE, NULL: none */
	char home[4096];	   /* the private HOME, "" when none */
	int home_lock;		   /* its flock while the session lives, -1: none (home.c) */
	struct strv *cred_masks;   /* the credential entries the view masks (cred_scan.c) */
	uint64_t (*cred_ids)[2];   /* their st_dev and st_ino, checked before each mask */
	char cred_unchecked[512];  /* what the scan's bounds left unchecked, or hard links */
	struct denials denials;	   /* for the end-of-run summary (lib/denial.h) */
	uint64_t start_ns;	   /* bpfbox run's start (now_ns): ended's duration_ms */
	const char *setup_step;	   /* the step that failed (cause setup), NULL: the session's */
	bool ended_said;	   /* the status channel has its "ended" */
	char clamped[256];	   /* a daemon's ceiling lowered the limits: what, "" none */
	char ssh_agent[4096];	   /* --ssh-agent: the caller's agent socket, resolved; "" none */
	bool env_said;		   /* the variables left out of the environment were said */
	struct changes_set *changes; /* --changes review|apply (changes.h), NULL: direct */
	const char *changes_from;    /* --changes-from ID: the set it continues, NULL: none */
	char changes_upper[4096 + 16], changes_work[4096 + 16];
	/*
	 * The change sets' directory (changes_root) when the session asks for
	 * one, from the plan on: in the BPF LSM's writable set, for the
	 * overlay's own work at its mount (docs/SECURITY.md). "" none.
	 */
	char changes_root[4096];
};

/*
 * Decides the layers for p on this host without running anything; the
 * limits with --limits-via auto (session_plan_limits() for another, or
 * again: it closes the fds of the plan before).
 */
int session_plan(struct session *s, const struct bpfbox_policy *p);
void session_plan_limits(struct session *s, enum limits_via via);
/*
 * The session takes id (a daemon's session whose cgroup was made ahead),
 * before anything named after the old one exists: only before the fork.
 */
void session_take_id(struct session *s, const char *id);

/* Whether every limit holds through cgroup controllers (--limits-via cgroup). */
bool session_limits_by_cgroup(const struct session *s);

/*
 * session_changes.c: --changes review|apply. Before the fork: the change
 * set made, its upper and work dirs into gf (refused, printed, when the
 * session has no mount namespace, is not workspace-write or has a --rw
 * inside the workspace), and into the child's plan c the pipe it writes
 * the set's start into (changes_start_wait). At the end: scanned, removed
 * when empty, applied with --changes apply on exit 0. 0 or -errno.
 */
struct child_plan;
int session_changes_start(struct session *s, struct grant_fds *gf, struct child_plan *c);
/*
 * Just after the fork (and its release): without a user namespace, the
 * set's overlay made and sent to the child, which waits for it at its
 * workspace's mount. 0, or -errno said in one line, the child killed.
 */
int session_changes_forked(struct session *s, struct grant_fds *gf, pid_t child);
/* The child is running: BPFBOX_FAULT_TOUCH_AT_START's write (changes.h). */
void session_changes_started(const struct session *s);
/*
 * Its set-up has ended or been handed to supervise(): the set locked and
 * its manifest written (a chain's were before the fork), beside the
 * command instead of before it.
 */
void session_changes_running(struct session *s);
/*
 * s->changes_root when s asks for a change set (--changes review|apply or
 * --changes-from): session_plan() calls it, and again whoever sets
 * s->changes_from after the plan.
 */
void session_changes_plan(struct session *s);
/*
 * Without a mount namespace, the change sets' directory under a writable
 * grant named in what is not enforced: session_plan() calls it, once.
 */
void session_changes_note(struct session *s);
/*
 * gf: the run's grants, whose fds of the set's directories the removal of
 * an empty set holds; end: the helper of the session's end (lib/closer.h),
 * which the caller starts.
 */
struct closer;
void session_changes_end(struct session *s, const struct grant_fds *gf, struct closer *end);
void session_changes_free(struct session *s);

/*
 * Makes the session cgroup and applies the limits now (embedded mode needs
 * the cgroup's id before the command runs); session_run() does it else.
 * 0, or -errno when no session cgroup could be made (printed).
 */
int session_prepare_cgroup(struct session *s);

/* Kills and removes what the session made, if session_run() did not. */
void session_cleanup(struct session *s);

/*
 * Runs argv in the planned session and fills s->result (from a clean one:
 * it may be called again). Returns 0 when the command ran (whatever its
 * status), or -errno when the session could not be set up; then nothing
 * ran and the error was printed. -EAGAIN only when a hook refused
 * (session_hooks): then no status line was written either.
 */
int session_run(struct session *s, char *const argv[]);

/*
 * Names in s->layers.not_enforced the rules only BPF LSM enforces when it
 * is not loaded (lsm false): credential files the masks do not cover (made
 * during the session, past the start scan's bounds; all of the workspace's
 * without namespaces), --exec-deny.
 */
void session_note_bpf_lsm(struct session *s, bool lsm);
/* Those rules in words, in buf; the length (0: none, full access). */
size_t session_lsm_only_rules(const struct session *s, char *buf, size_t size);

/*
 * The status channel's "ask" (a command rule stopped an exec for an
 * answer; argv NUL-separated, argv_len bytes, redacted by the caller) and
 * "answered" (approve, always, deny, timeout). docs/runtime.md.
 */
void status_ask(const struct session *s, uint64_t id, pid_t pid, const char *rule,
		const char *filename, const char *argv, size_t argv_len, uint64_t timeout_ms);
void status_answered(const struct session *s, uint64_t id, const char *answer);
/* The status channel's "ask" for a destination (--net-ask): name, port (0: any). */
void status_ask_net(const struct session *s, uint64_t id, const char *name, uint16_t port,
		    uint64_t timeout_ms);

/*
 * The status channel's "ended" of a run that stops before or without its
 * session (exit_code 125 and cause setup, or 2 and cause usage), with
 * step and the last error as its reason; nothing when the session said
 * it already or status_fd < 0. s may be unplanned (zeroed): then it takes
 * an id of its own. docs/runtime.md.
 */
void session_ended_early(struct session *s, int status_fd, uint64_t start_ns, int exit_code,
			 const char *step);

/*
 * Embedded mode: says in s->layers.not_enforced that the session sees no
 * cgroup limits at /sys/fs/cgroup when it gets no cgroup of its own
 * (ns_cgroup.c; the daemon always makes one).
 */
void session_note_cgroup_view(struct session *s);

/*
 * Where the session reaches the caller's SSH agent (--ssh-agent): the
 * view's SSH_AGENT_VIEW_PATH with a mount namespace, else the socket's own
 * path; NULL: no --ssh-agent.
 */
const char *session_ssh_agent_sock(const struct session *s);

/* Appends what to s->layers.not_enforced ("; "-separated). */
void session_not_enforced(struct session *s, const char *what);

/*
 * Egress by name without the BPF network layer (docs/network.md): the
 * session in a network namespace of its own whose only way out is the
 * proxy at 127.0.0.1:port in it (HTTP_PROXY, HTTPS_PROXY set; NO_PROXY its
 * loopback) and its resolver at 127.0.0.1:53; the two sockets go to sock
 * (netops.c). -EOPNOTSUPP without the namespace layer (nothing changed).
 */
int session_net_by_proxy(struct session *s, int sock, uint16_t port);
/* Whether the session is in a network namespace of its own (loopback, or the proxy's). */
bool session_own_netns(const struct session *s);

/*
 * The directories the session may write (its workspace unless read-only,
 * its private tmp, every rw path) and the --ssh-agent socket, in dirs (at
 * most max: rw paths + 3); for_unix: those
 * where it may also reach unix sockets (a name short enough for a socket
 * path, and /tmp when it is the session's own tmpfs). Both modes write
 * these into the BPF maps (docs/lsm.md). Returns the count.
 */
size_t session_writable_dirs(const struct session *s, bool for_unix, const char **dirs, size_t max);

#endif
