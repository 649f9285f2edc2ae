/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lifecycle events of a session, built in one place for the daemon
 * and the embedded mode: session.start, session.end (and the loss line
 * before it), session.paused, session.resumed, session.killed, session.ask.
 */
#ifndef BPFBOX_LIFECYCLE_H
#define BPFBOX_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "redact.h"
#include "bpfbox/events.h"
#include "../lib/jsonw.h"

/* "sha256:<hex>" of len bytes (the policy hash of session.start). */
int audit_sha256(const void *data, size_t len, char *out, size_t size);

struct session_limits;
struct session_event;

/* What session.start says (docs/events.md); NULL and 0 members are left out. */
struct audit_start_info {
	const char *session;
	uint64_t ts_ns; /* monotonic */
	uint64_t pid;
	bool has_uid;
	uint64_t uid;
	const char *mode; /* "daemon"; NULL: embedded (not said) */
	const char *cgroup;
	const char *level_requested, *level_enabled;
	struct {
		uint64_t landlock_abi;
		bool seccomp, bpf_audit, bpf_network, bpf_unix_connect, bpf_lsm;
		const char *bpf_audit_attach; /* how the audit programs attach; NULL, "": not said */
	} layers;
	const struct session_limits *limits;
	const char *not_enforced[8];
	size_t n_not_enforced;
	char *const *command; /* NULL-terminated */
	bool redact_command;  /* command is argv as run: redact its secrets */
	bool command_truncated;
	const char *labels_json; /* a JSON object text, NULL: {} */
	const char *policy_json; /* the effective policy; NULL: no policy members */
};

struct json_object;

/*
 * A command as a JSON array of strings, redacted as session.start writes
 * it: a new array (the caller's reference), NULL when out of memory. For
 * what keeps a command (the daemon's table, list, its cgroup's record).
 */
struct json_object *audit_redact_command(struct json_object *cmd);

/*
 * The values of a policy object's "env", redacted in place (whole when the
 * variable's name names a secret: redact_is_secret_name).
 */
void audit_redact_env(struct json_object *policy);

/* The session.start line (newline included). */
void audit_session_start(struct jsonw *w, const struct audit_clock *c,
			 const struct audit_start_info *info);

/* What session.end says. */
struct audit_end_info {
	const char *session;
	uint64_t seq, ts_ns;
	bool has_exit;
	int64_t exit_code;
	bool timed_out;
	uint64_t lost;		 /* ring records lost */
	uint64_t exec_not_found; /* failed execs with ENOENT or ENOTDIR, not recorded */
	uint64_t suppressed;	 /* records the rate limit counted instead of writing */
	uint64_t output_bytes, output_dropped;
	const char *reason; /* NULL: not said */
};

/* Hands one finished event to its writer (w is reset after it). */
typedef void (*audit_emit_fn)(void *ctx, const struct audit_event *ev);

/*
 * The session's last lines, each built in w and handed to emit: when
 * records were lost, a "loss" line (number seq), then session.end (the
 * next number). seq is the session's next number: the records 1..seq-1
 * were produced, the lost and suppressed among them ("records" counts the
 * others).
 */
void audit_session_end(struct jsonw *w, const struct audit_clock *c,
		       const struct audit_end_info *end, audit_emit_fn emit, void *ctx);

/* The kind of a lifecycle transition: session.paused, .resumed, .killed. */
enum ev_kind audit_lifecycle_kind(const struct session_event *ev);
/* session.paused, session.resumed or session.killed as one line (c NULL: now). */
void audit_session_lifecycle(struct jsonw *w, const struct audit_clock *c, const char *id,
			     const struct session_event *ev);

/*
 * A command rule's ask (agent/ask.h), as session.ask says it: the stopped
 * exec (its argv redacted) and, once answered, how and by whom.
 */
struct audit_ask {
	uint64_t id;	/* the stopped exec's record number (its seq) */
	uint64_t ts_ns; /* monotonic, of the exec */
	uint64_t pid;
	char rule[BPFBOX_CMD_LABEL_LEN + 1];
	char file[sizeof(((struct bpfbox_exec_event *)0)->filename) + 1];
	char argv[REDACT_MAX(BPFBOX_ARGV_LEN)]; /* NUL separated */
	size_t argv_len;
	uint64_t deny_after_ms; /* the pause timeout: then it is denied */
	bool frozen;		/* the session's cgroup was frozen */
	const char *answer;	/* ask_answer_name(); NULL: asked, not answered yet */
	const char *how; /* "ask_fd", "answer" (op), "timeout", "ended", "nobody", "restarted" */
	bool has_who;	 /* uid and pid of whoever answered */
	uint64_t uid, by_pid;
	uint64_t waited_ms;
	/* --net-ask through a daemon: a destination, not an exec (no pid, rule, argv). */
	bool net;
	char name[254];
	uint16_t port; /* 0: any (a query) */
	void *net_q;   /* the proxy's thread that waits (daemon/ops_ask_net.c) */
};

/* The question of an exec record stopped for an answer (BPFBOX_EXEC_PENDING). */
void audit_ask_from_exec(struct audit_ask *q, const struct bpfbox_exec_event *x);
/* "argv" of q: its NUL separated arguments as an array of strings. */
void audit_ask_argv(struct jsonw *w, const struct audit_ask *q);
/*
 * session.ask as one line: answered, it takes the exec's seq (q->id);
 * asked and not answered yet (the daemon's subscribers may answer), no
 * seq and answer null.
 */
void audit_session_ask(struct jsonw *w, const struct audit_clock *c, const char *session,
		       const struct audit_ask *q);

#endif
