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

struct bpfbox_policy;

/* Exit codes of `bpfbox run` besides the command's own (BRIEF.md). */
#define EXIT_TIMEOUT	    124
#define EXIT_SETUP	    125
#define EXIT_NOT_EXECUTABLE 126
#define EXIT_NOT_FOUND	    127

/* What holds in one session, decided before the child is forked. */
struct session_layers {
	enum bpfbox_level requested;
	enum bpfbox_level enabled;
	int landlock_abi;	/* 0 when Landlock is not used */
	struct landlock_rights rights;
	bool landlock;
	bool seccomp;
	char not_enforced[512]; /* what the policy asks but this host cannot do */
};

struct session_result {
	int exit_code;	      /* what `bpfbox run` exits with */
	int wait_status;      /* the command's raw status, -1 if it never ran */
	bool timed_out;
	uint64_t output_bytes;	/* relayed to stdout and stderr */
	uint64_t output_dropped; /* cut by the output cap */
};

/* Optional ties to the BPF agent, set after session_plan(). */
struct session_hooks {
	int cgroup_procs_fd;	/* the child joins this cgroup first; -1: none */
	int poll_fd;		/* polled with the command's output; -1: none */
	void (*on_poll)(void *ctx); /* called when poll_fd is readable */
	/*
	 * Called in the parent right after fork, while the child waits on a
	 * pipe before its first step (before it joins cgroup_procs_fd or
	 * calls setsid): the daemon moves the child into the session cgroup
	 * here. The child goes on when it returns 0; otherwise the child is
	 * killed, nothing runs and session_run returns its -errno (the hook
	 * prints the error). NULL: the child does not wait.
	 */
	int (*before_release)(void *ctx, pid_t child);
	void *ctx;
};

struct session {
	char id[33];
	const struct bpfbox_policy *policy;
	struct session_layers layers;
	struct session_hooks hooks;
	char private_tmp[4096];
	struct session_result result;
};

/* Decides the layers for p on this host without running anything. */
int session_plan(struct session *s, const struct bpfbox_policy *p);

/*
 * Runs argv in the planned session and fills s->result. Returns 0 when the
 * command ran (whatever its status), or -errno when the session could not
 * be set up; then nothing ran and the error was printed.
 */
int session_run(struct session *s, char *const argv[]);

#endif
