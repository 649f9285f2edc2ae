/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Daemon mode of a run (run.c chooses it): the daemon holds the programs,
 * the session's cgroup and its audit stream; this side registers the
 * session and its child in one request, copies the session's events to
 * the run's sinks (--audit), relays the command rules' asks between that
 * stream, the status fd and the runtime's answers (--ask-fd, the daemon's
 * answer op), and gets the denials for the summary back when it
 * unregisters.
 */
#ifndef BPFBOX_RUN_VIA_DAEMON_H
#define BPFBOX_RUN_VIA_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "../agent/ask.h"
#include "../daemon/client.h"
#include "../monitor/limits.h"

struct session;
struct sinks;
struct audit_opts;

struct daemon_run {
	struct daemon_client ctl; /* register(+attach), unregister, pause */
	struct daemon_client sub; /* the session's events, for --audit */
	char socket[PATH_MAX];
	bool named;	     /* --daemon-socket or BPFBOX_REQUIRE_DAEMON=1 */
	bool level_given;    /* --level: a session below it must not run */
	bool verbose;	     /* -v: the level and policy once the daemon replied */
	struct sinks *sinks; /* --audit; NULL: no subscription */
	char *line;	     /* the subscription's incomplete last line */
	size_t line_len, line_cap;
	int never_fd[2];       /* a pipe that never turns readable (see sub_done) */
	bool sub_gone;	       /* the event stream ended */
	bool finishing;	       /* its end is expected now */
	bool registered;       /* the daemon holds the session */
	bool ended;	       /* unregistered */
	bool unreg_sent;       /* the unregister is sent, its reply not read yet */
	bool reg_pending;      /* the register is sent, its reply not read yet */
	char cgroup[PATH_MAX]; /* the session's cgroup, from the register reply */
	char *ca_pem;	       /* --secret: the daemon's session CA, from the reply */
	bool v1;	       /* its limits are v1 cgroups (a hybrid host) */
	char cgroup1[RES__COUNT][LIMITS_PATH_MAX]; /* those cgroups, from the reply; "" none */
	bool cgroup1_bad;			   /* one of them did not fit */
	const char *audit_mode;
	char *const *argv;
	struct session *s;
	struct policy_limits *limits; /* the run's: lowered where a ceiling clamped them */
	struct ask ask; /* --ask-fd with --audit: the runtime answers the asks; fd -1 none */
	bool ask_top;	/* the command itself asks: the daemon must take asks */
	struct {
		uint64_t id, until_ms; /* until_ms: then deny (monotonic ms) */
		bool sent;	       /* the answer went to the daemon */
	} asks[8];		       /* asked, not answered yet, first come first */
	unsigned int nasks;
};

/*
 * Connects to the daemon at socket (NULL: daemon_socket_path(NULL)). 1 when
 * one answers, 0 when none does (embedded mode; said unless it is simply
 * absent), -errno when one was required (printed; nothing ran).
 */
int daemon_run_connect(struct daemon_run *r, const char *socket);
/*
 * Prepares s to run through the daemon. As root on a host without cgroup
 * v1 limits, the session is registered now and its child cloned straight
 * into the cgroup the daemon made (CLONE_INTO_CGROUP: no migration, which
 * costs an RCU grace period); with name rules (the proxy's port goes into
 * the command's environment) it is registered now too; else together with
 * its child when that is forked (register with pid, one round trip). 0,
 * or -errno (printed; nothing ran); -EAGAIN, here or from the child's
 * release, when the daemon refuses this client or is busy and none was
 * required: the caller then runs the session in embedded mode.
 */
int daemon_run_prepare(struct daemon_run *r, struct session *s, const struct audit_opts *audit,
		       struct sinks *sinks, char *const argv[]);
/* Unregisters if that was not done at the session's end, drains and closes. */
void daemon_run_finish(struct daemon_run *r);

#endif
