/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one path of a session (docs/ARCHITECTURE.md): plans the policy,
 * chooses the daemon or embedded mode, makes the one cgroup, applies the
 * one LSM and network policy, opens the one set of sinks, triggers the one
 * session.start and session.end, and prints the one denial summary. The two
 * modes differ only in who holds the BPF programs: the daemon, or this
 * process (embedded.c). cli/run.c parses the command line into a plan.
 */
#ifndef BPFBOX_RUN_H
#define BPFBOX_RUN_H

#include <stdbool.h>

#include "embedded.h"
#include "../policy/policy.h"
#include "../probe/probe.h"
#include "../monitor/limits.h"
#include "../lib/util.h"

struct run_plan {
	struct policy_sources src; /* the layers; src.flags: the command line's */
	struct audit_opts audit;   /* --audit FILE and its mode, ring, rate */
	const char *daemon_socket; /* --daemon-socket, NULL: the default */
	bool no_daemon;		   /* --no-daemon */
	const char *changes_from;  /* --changes-from ID, NULL: none */
	bool verbose;		   /* -v: the effective policy and level */
	enum limits_via via;	   /* --limits-via */
	const struct strv *labels; /* --label KEY=VALUE */
	int status_fd;		   /* --status-fd, -1: none */
	enum bpfbox_level want;	   /* --level or $BPFBOX_LEVEL */
	bool level_given;	   /* an explicit --level: less refuses */
	char *const *argv;	   /* the command */
	uint64_t start_ns;	   /* when bpfbox run started (now_ns): ended's duration_ms */
};

/* The defaults of a plan (the audit ring, aggregate window, level Full, start now). */
void run_plan_init(struct run_plan *p);

/*
 * Runs the command of plan in one session and returns the exit code of
 * `bpfbox run`: the command's own, or 123/124/125/126/127 (session.h).
 */
int run_session(const struct run_plan *plan);

#endif
