// SPDX-License-Identifier: GPL-2.0
/*
 * The lifecycle events of a session (docs/events.md): session.start,
 * session.end with the loss line before it, session.paused, .resumed and
 * .killed, built here for the daemon and the embedded mode alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "lifecycle.h"
#include "redact.h"
#include "../monitor/monitor.h"
#include "../sandbox/changes.h"
#include "../lib/sha256.h"
#include "../lib/util.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

/* --- session.start ------------------------------------------------------------ */

int audit_sha256(const void *data, size_t len, char *out, size_t size)
{
	uint8_t d[SHA256_LEN];
	size_t n;

	if (size < sizeof("sha256:") + 64)
		return -EINVAL;
	sha256(data, len, d);
	n = (size_t)snprintf(out, size, "sha256:");
	for (int i = 0; i < 32; i++)
		n += (size_t)snprintf(out + n, size - n, "%02x", d[i]);
	return 0;
}

static void add_arg(void *ctx, const char *arg, size_t len)
{
	json_object_array_add(ctx, json_object_new_string_len(arg, len));
}

struct json_object *audit_redact_command(struct json_object *cmd)
{
	size_t n = json_object_array_length(cmd);
	const char **argv = calloc(n + 1, sizeof(*argv));
	struct json_object *out = json_object_new_array();

	for (size_t i = 0; argv && i < n; i++)
		argv[i] = json_object_get_string(json_object_array_get_idx(cmd, i));
	if (!argv || !out || redact_argv((char *const *)argv, add_arg, out, 0) < 0) {
		json_object_put(out);
		out = NULL;
	}
	free(argv);
	return out;
}

void audit_redact_env(struct json_object *pol)
{
	struct json_object *env;

	if (!pol || !json_object_object_get_ex(pol, "env", &env) ||
	    !json_object_is_type(env, json_type_object))
		return;
	json_object_object_foreach (env, name, val) {
		size_t len = json_object_get_string_len(val), n = 0;
		char *out = malloc(REDACT_MAX(len));

		if (out)
			n = redact_value(name, json_object_get_string(val), len, out,
					 REDACT_MAX(len), 0);
		/* Replaces val in place: the walk goes on with the next entry. */
		json_object_object_add(env, name,
				       out ? json_object_new_string_len(out, n)
					   : json_object_new_string(REDACT_MARKER));
		free(out);
	}
}

/*
 * The end of session.start that names what ran it: "labels" (the runtime's
 * labels), "bpfbox_version", "policy_hash" (sha256 of exactly the bytes of
 * "policy") and "policy".
 */
static void put_policy(struct jsonw *w, const char *labels_json, const char *policy_json)
{
	char hash[80];

	jsonw_raw(w, "labels", labels_json ? labels_json : "{}");
	jsonw_str(w, "bpfbox_version", BPFBOX_VERSION);
	if (audit_sha256(policy_json, strlen(policy_json), hash, sizeof(hash)) == 0)
		jsonw_str(w, "policy_hash", hash);
	else
		jsonw_null(w, "policy_hash");
	jsonw_raw(w, "policy", policy_json);
}

static void put_arg(void *ctx, const char *arg, size_t len)
{
	jsonw_array_strn(ctx, arg, len);
}

void audit_session_start(struct jsonw *w, const struct audit_clock *c,
			 const struct audit_start_info *in)
{
	audit_begin(w, c, EV_SESSION_START, in->session, 0, in->ts_ns);
	jsonw_u64(w, "pid", in->pid);
	if (in->has_uid)
		jsonw_u64(w, "uid", in->uid);
	jsonw_str_opt(w, "mode", in->mode);
	jsonw_str_opt(w, "cgroup", in->cgroup);
	jsonw_str_opt(w, "level_requested", in->level_requested);
	jsonw_str_opt(w, "level_enabled", in->level_enabled);
	jsonw_object_begin(w, "layers");
	jsonw_u64(w, "landlock_abi", in->layers.landlock_abi);
	jsonw_bool(w, "seccomp", in->layers.seccomp);
	jsonw_bool(w, "bpf_audit", in->layers.bpf_audit);
	jsonw_bool(w, "bpf_network", in->layers.bpf_network);
	jsonw_bool(w, "bpf_unix_connect", in->layers.bpf_unix_connect);
	jsonw_bool(w, "bpf_lsm", in->layers.bpf_lsm);
	if (in->layers.bpf_audit_attach && in->layers.bpf_audit_attach[0])
		jsonw_str(w, "bpf_audit_attach", in->layers.bpf_audit_attach);
	jsonw_end(w);
	if (in->limits)
		limits_json(in->limits, w, "limits");
	jsonw_array_begin(w, "not_enforced");
	for (size_t i = 0; i < in->n_not_enforced && i < ARRAY_SIZE(in->not_enforced); i++)
		if (in->not_enforced[i] && in->not_enforced[i][0])
			jsonw_array_strn(w, in->not_enforced[i], strlen(in->not_enforced[i]));
	jsonw_array_end(w);
	jsonw_array_begin(w, "command");
	if (in->redact_command) {
		if (redact_argv(in->command, put_arg, w, 0) < 0)
			jsonw_array_strn(w, REDACT_MARKER, REDACT_MARKER_LEN);
	} else {
		for (size_t i = 0; in->command && in->command[i]; i++)
			jsonw_array_strn(w, in->command[i], strlen(in->command[i]));
	}
	jsonw_array_end(w);
	if (in->command_truncated)
		jsonw_bool(w, "command_truncated", true);
	if (in->policy_json)
		put_policy(w, in->labels_json, in->policy_json);
	jsonw_end(w);
	jsonw_newline(w);
}

/* --- session.end -------------------------------------------------------------- */

/* Ends the object in w, hands it to emit as an event of kind, and resets w. */
static void hand_over(struct jsonw *w, enum ev_kind kind, int64_t time_ns, audit_emit_fn emit,
		      void *ctx)
{
	struct audit_event ev = {.kind = kind, .time_ns = time_ns};

	jsonw_end(w);
	jsonw_newline(w);
	ev.line = w->buf;
	ev.len = w->len;
	if (!w->oom)
		emit(ctx, &ev);
	jsonw_reset(w);
}

void audit_session_end(struct jsonw *w, const struct audit_clock *c, const struct audit_end_info *e,
		       audit_emit_fn emit, void *ctx)
{
	uint64_t seq = e->seq, records = seq > e->lost ? seq - 1 - e->lost : 0;
	int64_t time_ns = audit_real_ns(c, e->ts_ns);

	records = records > e->suppressed ? records - e->suppressed : 0;
	jsonw_reset(w);
	if (e->lost) {
		audit_begin(w, c, EV_LOSS, e->session, seq++, e->ts_ns);
		jsonw_u64(w, "count", e->lost);
		jsonw_str(w, "where", "ring buffer full");
		hand_over(w, EV_LOSS, time_ns, emit, ctx);
	}
	audit_begin(w, c, EV_SESSION_END, e->session, seq, e->ts_ns);
	if (e->has_exit)
		jsonw_i64(w, "exit_code", e->exit_code);
	else
		jsonw_null(w, "exit_code");
	jsonw_bool(w, "timed_out", e->timed_out);
	jsonw_u64(w, "records", records);
	jsonw_u64(w, "lost", e->lost);
	jsonw_u64(w, "suppressed", e->suppressed);
	jsonw_u64(w, "exec_not_found", e->exec_not_found);
	jsonw_u64(w, "output_bytes", e->output_bytes);
	jsonw_u64(w, "output_dropped", e->output_dropped);
	jsonw_str_opt(w, "reason", e->reason);
	hand_over(w, EV_SESSION_END, time_ns, emit, ctx);
}

/* --- session.paused, .resumed, .killed ------------------------------------------ */

enum ev_kind audit_lifecycle_kind(const struct session_event *ev)
{
	switch (ev->type) {
	case SEV_PAUSED:
		return EV_SESSION_PAUSED;
	case SEV_RESUMED:
		return EV_SESSION_RESUMED;
	case SEV_CHANGES:
		return EV_SESSION_CHANGES;
	default:
		return EV_SESSION_KILLED;
	}
}

void audit_session_lifecycle(struct jsonw *w, const struct audit_clock *c, const char *id,
			     const struct session_event *ev)
{
	audit_begin(w, c, audit_lifecycle_kind(ev), id, AUDIT_NO_SEQ, now_ns());
	switch (ev->type) {
	case SEV_PAUSED:
		jsonw_str(w, "reason", ev->reason);
		if (ev->pid)
			jsonw_u64(w, "pid", ev->pid);
		else
			jsonw_null(w, "pid");
		if (ev->comm[0])
			jsonw_strn(w, "comm", ev->comm, strnlen(ev->comm, sizeof(ev->comm)));
		else
			jsonw_null(w, "comm");
		jsonw_u64(w, "oom_kills", ev->oom_kills);
		jsonw_u64(w, "memory_mb", ev->memory_mb);
		jsonw_u64(w, "disk_mb", ev->disk_mb);
		if (ev->disk_used_mb >= 0)
			jsonw_i64(w, "disk_used_mb", ev->disk_used_mb);
		else
			jsonw_null(w, "disk_used_mb");
		break;
	case SEV_RESUMED:
		jsonw_u64(w, "paused_ms", ev->paused_ms);
		jsonw_u64(w, "memory_mb", ev->memory_mb);
		jsonw_u64(w, "disk_mb", ev->disk_mb);
		break;
	case SEV_KILLED:
		jsonw_str(w, "reason", ev->reason);
		jsonw_bool(w, "paused", ev->was_paused);
		break;
	case SEV_CHANGES:
		changes_summary_json(ev->changes, w);
		break;
	}
	jsonw_end(w);
	jsonw_newline(w);
}

void audit_ask_from_exec(struct audit_ask *q, const struct bpfbox_exec_event *x)
{
	uint32_t raw = x->argv_len < sizeof(x->argv) ? x->argv_len : sizeof(x->argv);

	memset(q, 0, sizeof(*q));
	q->id = x->hdr.seq;
	q->ts_ns = x->hdr.ts_ns;
	q->pid = x->hdr.pid;
	snprintf(q->rule, sizeof(q->rule), "%.*s", (int)strnlen(x->rule, sizeof(x->rule)), x->rule);
	snprintf(q->file, sizeof(q->file), "%.*s", (int)strnlen(x->filename, sizeof(x->filename)),
		 x->filename);
	q->argv_len = redact(x->argv, raw, q->argv, sizeof(q->argv), 0);
}

void audit_ask_argv(struct jsonw *w, const struct audit_ask *q)
{
	jsonw_array_begin(w, "argv");
	for (size_t i = 0; i < q->argv_len;) {
		size_t n = strnlen(q->argv + i, q->argv_len - i);

		jsonw_array_strn(w, q->argv + i, n);
		i += n + 1;
	}
	jsonw_array_end(w);
}

void audit_session_ask(struct jsonw *w, const struct audit_clock *c, const char *session,
		       const struct audit_ask *q)
{
	/* A destination's question is no record: it has no sequence number. */
	audit_begin(w, c, EV_SESSION_ASK, session, q->answer && !q->net ? q->id : AUDIT_NO_SEQ,
		    q->answer ? q->ts_ns : now_ns());
	jsonw_u64(w, "id", q->id);
	if (q->net) {
		jsonw_str(w, "kind", "net");
		jsonw_str(w, "name", q->name);
		if (q->port)
			jsonw_u64(w, "port", q->port);
		else
			jsonw_null(w, "port");
	} else {
		jsonw_u64(w, "pid", q->pid);
		jsonw_str(w, "rule", q->rule);
		jsonw_str(w, "filename", q->file);
		audit_ask_argv(w, q);
	}
	jsonw_bool(w, "frozen", q->frozen);
	jsonw_str(w, "answer", q->answer);
	if (!q->answer) {
		jsonw_u64(w, "deny_after_ms", q->deny_after_ms);
	} else {
		jsonw_object_begin(w, "answered");
		jsonw_str(w, "how", q->how);
		if (q->has_who) {
			jsonw_u64(w, "uid", q->uid);
			jsonw_u64(w, "pid", q->by_pid);
		}
		jsonw_end(w);
		jsonw_u64(w, "waited_ms", q->waited_ms);
	}
	jsonw_end(w);
	jsonw_newline(w);
}
