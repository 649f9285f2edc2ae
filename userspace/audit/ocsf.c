// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox event -> OCSF 1.3.0 event. The table of docs/ocsf.md, field by
 * field; what OCSF has no place for goes in "unmapped".
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>

#include "ocsf.h"
#include "../lib/util.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

enum {
	SEV_INFORMATIONAL = 1,
	SEV_MEDIUM = 3,
	SEV_HIGH = 4,
};

struct ocsf_class {
	int class_uid, category_uid;
	const char *class_name, *category_name;
};

static const struct ocsf_class PROCESS = { 1007, 1, "Process Activity", "System Activity" };
static const struct ocsf_class FILESYS = { 1001, 1, "File System Activity", "System Activity" };
static const struct ocsf_class NETWORK = { 4001, 4, "Network Activity", "Network Activity" };
static const struct ocsf_class BASE = { 0, 0, "Base Event", "Uncategorized" };

/* The event's members, read once. */
struct ev {
	struct json_object *o;
	const char *type, *time, *session, *comm, *decision, *layer, *err;
	int64_t seq, pid, tid, ppid, uid;
	bool has_seq, has_pid, has_tid, has_ppid, has_uid;
	bool deny;
};

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool get_int(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return true;
}

/* RFC 3339 UTC ("2026-01-02T03:04:05.123456789Z") -> ms since the epoch. */
static int64_t time_ms(const char *s)
{
	struct tm tm = { 0 };
	unsigned int ms = 0;
	struct timespec now;
	int n = 0;

	if (s && sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			&tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) == 6) {
		const char *p = s + n;

		if (*p == '.')
			for (int i = 0; i < 3; i++)
				ms = ms * 10 + (p[1 + i] >= '0' && p[1 + i] <= '9' ? p[1 + i] - '0' : 0);
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		return (int64_t)timegm(&tm) * 1000 + ms;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void put_uid(struct jsonw *w, const char *key, int64_t uid)
{
	char buf[24];

	/* OCSF user.uid is a string. */
	snprintf(buf, sizeof(buf), "%" PRId64, uid);
	jsonw_object_begin(w, key);
	jsonw_str(w, "uid", buf);
	jsonw_end(w);
}

static void put_classification(struct jsonw *w, const struct ocsf_class *c, int activity,
			       const char *activity_name)
{
	char type_name[96];

	snprintf(type_name, sizeof(type_name), "%s: %s", c->class_name, activity_name);
	jsonw_u64(w, "class_uid", c->class_uid);
	jsonw_str(w, "class_name", c->class_name);
	jsonw_u64(w, "category_uid", c->category_uid);
	jsonw_str(w, "category_name", c->category_name);
	jsonw_u64(w, "activity_id", activity);
	jsonw_str(w, "activity_name", activity_name);
	jsonw_u64(w, "type_uid", (uint64_t)c->class_uid * 100 + activity);
	jsonw_str(w, "type_name", type_name);
}

static void put_severity(struct jsonw *w, int sev)
{
	static const char *const names[] = { "Unknown", "Informational", "Low", "Medium", "High" };

	jsonw_u64(w, "severity_id", sev);
	jsonw_str(w, "severity", names[sev]);
}

static void put_metadata(struct jsonw *w, const struct ev *e, bool profiles)
{
	struct json_object *labels;

	jsonw_object_begin(w, "metadata");
	jsonw_str(w, "version", OCSF_VERSION);
	jsonw_object_begin(w, "product");
	jsonw_str(w, "name", "bpfbox");
	jsonw_str(w, "vendor_name", "bpfbox");
	jsonw_str(w, "version", BPFBOX_VERSION);
	jsonw_end(w);
	if (profiles) {
		jsonw_array_begin(w, "profiles");
		jsonw_array_strn(w, "host", 4);
		jsonw_array_strn(w, "security_control", 16);
		jsonw_array_end(w);
	}
	if (e->type)
		jsonw_str(w, "event_code", e->type);
	/* --label KEY=VALUE of session.start: OCSF's metadata.labels, "KEY=VALUE" each. */
	if (json_object_object_get_ex(e->o, "labels", &labels) &&
	    json_object_is_type(labels, json_type_object) && json_object_object_length(labels)) {
		jsonw_array_begin(w, "labels");
		json_object_object_foreach(labels, key, val) {
			char kv[512];
			int n = snprintf(kv, sizeof(kv), "%s=%s", key,
					 json_object_get_string(val) ?: "");

			jsonw_array_strn(w, kv, n < (int)sizeof(kv) ? (size_t)n : sizeof(kv) - 1);
		}
		jsonw_array_end(w);
	}
	if (e->time)
		jsonw_str(w, "original_time", e->time);
	if (e->session) {
		/* (session, seq) names an event: a receiver drops duplicates by it. */
		jsonw_str(w, "correlation_uid", e->session);
		if (e->has_seq) {
			char uid[64];

			snprintf(uid, sizeof(uid), "%s:%" PRId64, e->session, e->seq);
			jsonw_str(w, "uid", uid);
			jsonw_i64(w, "sequence", e->seq);
		}
	}
	jsonw_end(w);
}

static void put_device(struct jsonw *w, const char *hostname)
{
	jsonw_object_begin(w, "device");
	jsonw_str(w, "hostname", hostname);
	jsonw_u64(w, "type_id", 0);
	jsonw_str(w, "type", "Unknown");
	jsonw_end(w);
}

/* The security_control profile and the status of a record. */
static void put_outcome(struct jsonw *w, const struct ev *e)
{
	char detail[96];

	jsonw_u64(w, "action_id", e->deny ? 2 : 1);
	jsonw_str(w, "action", e->deny ? "Denied" : "Allowed");
	jsonw_u64(w, "disposition_id", e->deny ? 2 : 1);
	jsonw_str(w, "disposition", e->deny ? "Blocked" : "Allowed");
	if (!e->err) {
		jsonw_u64(w, "status_id", 1);
		jsonw_str(w, "status", "Success");
		return;
	}
	jsonw_u64(w, "status_id", 2);
	jsonw_str(w, "status", "Failure");
	jsonw_str(w, "status_code", e->err);
	if (e->deny && e->layer)
		snprintf(detail, sizeof(detail), "denied by %s", e->layer);
	else
		snprintf(detail, sizeof(detail), "failed with %s", e->err);
	jsonw_str(w, "status_detail", detail);
}

/* A process: pid, tid, comm as name, uid; parent pid when known. */
static void put_process_body(struct jsonw *w, const struct ev *e, bool parent)
{
	if (e->has_pid)
		jsonw_i64(w, "pid", e->pid);
	if (e->has_tid)
		jsonw_i64(w, "tid", e->tid);
	if (e->comm)
		jsonw_str(w, "name", e->comm);
	if (e->has_uid)
		put_uid(w, "user", e->uid);
	if (parent && e->has_ppid) {
		jsonw_object_begin(w, "parent_process");
		jsonw_i64(w, "pid", e->ppid);
		jsonw_end(w);
	}
}

/* The actor: the acting process, its user and the session as context. */
static void put_actor(struct jsonw *w, const struct ev *e)
{
	jsonw_object_begin(w, "actor");
	if (e->has_pid) {
		jsonw_object_begin(w, "process");
		put_process_body(w, e, true);
		jsonw_end(w);
	}
	if (e->has_uid)
		put_uid(w, "user", e->uid);
	if (e->session) {
		jsonw_object_begin(w, "session");
		jsonw_str(w, "uid", e->session);
		jsonw_end(w);
	}
	jsonw_str(w, "app_name", "bpfbox");
	jsonw_end(w);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static void put_file(struct jsonw *w, const char *path, bool regular)
{
	jsonw_object_begin(w, "file");
	jsonw_str(w, "name", base_name(path));
	jsonw_str(w, "path", path);
	jsonw_u64(w, "type_id", regular ? 1 : 0);
	jsonw_str(w, "type", regular ? "Regular File" : "Unknown");
	jsonw_end(w);
}

/* What only bpfbox knows: the layer, the errno, the type's own fields. */
static void put_unmapped(struct jsonw *w, const struct ev *e, const char *const *keys)
{
	jsonw_object_begin(w, "unmapped");
	jsonw_str(w, "type", e->type);
	jsonw_str(w, "decision", e->decision);
	jsonw_str(w, "layer", e->layer);
	jsonw_str(w, "errno", e->err);
	for (; keys && *keys; keys++) {
		struct json_object *v;

		if (json_object_object_get_ex(e->o, *keys, &v))
			jsonw_raw(w, *keys, json_object_to_json_string_ext(
						    v, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	jsonw_end(w);
}

static void begin_record(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
			 int activity, const char *activity_name, const char *hostname,
			 const char *message)
{
	jsonw_begin(w);
	put_classification(w, c, activity, activity_name);
	jsonw_i64(w, "time", time_ms(e->time));
	put_severity(w, e->deny ? SEV_MEDIUM : SEV_INFORMATIONAL);
	put_outcome(w, e);
	jsonw_str(w, "message", message);
	put_metadata(w, e, true);
	put_device(w, hostname);
	put_actor(w, e);
}

static void message(char *buf, size_t size, const struct ev *e, const char *what)
{
	if (e->deny)
		snprintf(buf, size, "%s denied by %s (%s)", what, e->layer ? e->layer : "?",
			 e->err ? e->err : "?");
	else if (e->err)
		snprintf(buf, size, "%s failed (%s)", what, e->err);
	else
		snprintf(buf, size, "%s", what);
}

/* cmd_line: the arguments joined by spaces, as ps shows them. */
static void put_cmd_line(struct jsonw *w, struct json_object *argv)
{
	size_t n = json_object_array_length(argv), len = 0, off = 0;
	char *buf;

	for (size_t i = 0; i < n; i++)
		len += json_object_get_string_len(json_object_array_get_idx(argv, i)) + 1;
	buf = malloc(len + 1);
	if (!buf)
		return;
	for (size_t i = 0; i < n; i++) {
		struct json_object *a = json_object_array_get_idx(argv, i);
		size_t alen = json_object_get_string_len(a);

		if (i)
			buf[off++] = ' ';
		memcpy(buf + off, json_object_get_string(a), alen);
		off += alen;
	}
	jsonw_strn(w, "cmd_line", buf, off);
	free(buf);
}

static void enc_exec(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "argv", "argv_truncated", NULL };
	const char *filename = get_str(e->o, "filename");
	char what[PATH_MAX + 16], msg[PATH_MAX + 64];
	struct json_object *argv;

	snprintf(what, sizeof(what), "exec %s", filename ? filename : "?");
	message(msg, sizeof(msg), e, what);
	begin_record(w, e, &PROCESS, 1, "Launch", hostname, msg);
	jsonw_object_begin(w, "process");
	put_process_body(w, e, true);
	if (json_object_object_get_ex(e->o, "argv", &argv) &&
	    json_object_is_type(argv, json_type_array) && json_object_array_length(argv))
		put_cmd_line(w, argv);
	if (filename)
		put_file(w, filename, !e->err);
	jsonw_end(w);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

static void enc_fork(struct jsonw *w, const struct ev *e, const char *hostname)
{
	int64_t child = 0;
	char msg[96];

	get_int(e->o, "child_pid", &child);
	snprintf(msg, sizeof(msg), "fork of pid %" PRId64 ": child %" PRId64, e->pid, child);
	begin_record(w, e, &PROCESS, 1, "Launch", hostname, msg);
	jsonw_object_begin(w, "process");
	jsonw_i64(w, "pid", child);
	if (e->comm)
		jsonw_str(w, "name", e->comm);
	if (e->has_uid)
		put_uid(w, "user", e->uid);
	jsonw_object_begin(w, "parent_process");
	jsonw_i64(w, "pid", e->pid);
	jsonw_end(w);
	jsonw_end(w);
	put_unmapped(w, e, NULL);
	jsonw_end(w);
}

static void enc_exit(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "signal", NULL };
	int64_t code = 0, sig = 0;
	bool have_code = get_int(e->o, "exit_code", &code);
	char msg[96];

	get_int(e->o, "signal", &sig);
	if (have_code)
		snprintf(msg, sizeof(msg), "exit of pid %" PRId64 " with code %" PRId64, e->pid,
			 code);
	else
		snprintf(msg, sizeof(msg), "pid %" PRId64 " killed by signal %" PRId64, e->pid,
			 sig);
	begin_record(w, e, &PROCESS, 2, "Terminate", hostname, msg);
	jsonw_object_begin(w, "process");
	put_process_body(w, e, true);
	jsonw_end(w);
	if (have_code)
		jsonw_i64(w, "exit_code", code);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

static void enc_file(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "flags", "op", NULL };
	const char *path = get_str(e->o, "path");
	char what[PATH_MAX + 16], msg[PATH_MAX + 64];
	int64_t flags = 0, count = 0;

	snprintf(what, sizeof(what), "open %s", path ? path : "?");
	message(msg, sizeof(msg), e, what);
	begin_record(w, e, &FILESYS, 14, "Open", hostname, msg);
	put_file(w, path ? path : "", false);
	if (get_int(e->o, "flags", &flags))
		jsonw_i64(w, "access_mask", flags);
	/* Identical allowed opens folded into this one (aggregate mode). */
	if (get_int(e->o, "count", &count))
		jsonw_i64(w, "count", count);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

static void enc_connect(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "family", NULL };
	const char *family = get_str(e->o, "family");
	const char *addr = get_str(e->o, "address"), *path = get_str(e->o, "path");
	bool unix_ = family && streq(family, "unix");
	char what[PATH_MAX + 64], msg[PATH_MAX + 128];
	int64_t port = 0;

	get_int(e->o, "port", &port);
	if (unix_)
		snprintf(what, sizeof(what), "connect to unix %s", path ? path : "?");
	else
		snprintf(what, sizeof(what), "connect to %s port %" PRId64, addr ? addr : "?", port);
	message(msg, sizeof(msg), e, what);
	begin_record(w, e, &NETWORK, 1, "Open", hostname, msg);
	jsonw_object_begin(w, "dst_endpoint");
	if (unix_) {
		jsonw_str(w, "name", path ? path : "");
	} else {
		jsonw_str(w, "ip", addr ? addr : "");
		jsonw_i64(w, "port", port);
	}
	jsonw_end(w);
	jsonw_object_begin(w, "connection_info");
	jsonw_u64(w, "direction_id", 2);
	jsonw_str(w, "direction", "Outbound");
	if (!unix_) {
		bool v6 = family && streq(family, "inet6") && addr && strchr(addr, ':');

		jsonw_u64(w, "protocol_ver_id", v6 ? 6 : 4);
		jsonw_str(w, "protocol_ver", v6 ? "Internet Protocol version 6 (IPv6)"
						: "Internet Protocol version 4 (IPv4)");
	}
	jsonw_end(w);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

/* session.start, session.end, loss, sink.error: no OCSF class fits; the
 * original event rides along whole. */
static void enc_base(struct jsonw *w, const struct ev *e)
{
	char msg[512];
	int64_t n = 0, code = 0;
	int sev = SEV_INFORMATIONAL;

	if (streq(e->type, "loss")) {
		get_int(e->o, "count", &n);
		snprintf(msg, sizeof(msg), "%" PRId64 " events lost: %s", n,
			 get_str(e->o, "where") ? get_str(e->o, "where") : "?");
		sev = SEV_HIGH;
	} else if (streq(e->type, "sink.error")) {
		snprintf(msg, sizeof(msg), "sink %s: %s",
			 get_str(e->o, "sink") ? get_str(e->o, "sink") : "?",
			 get_str(e->o, "message") ? get_str(e->o, "message") : "?");
		sev = SEV_HIGH;
	} else if (streq(e->type, "session.end")) {
		if (get_int(e->o, "exit_code", &code))
			snprintf(msg, sizeof(msg), "session ended, exit code %" PRId64, code);
		else
			snprintf(msg, sizeof(msg), "session ended");
	} else if (streq(e->type, "session.start")) {
		snprintf(msg, sizeof(msg), "session started");
	} else {
		snprintf(msg, sizeof(msg), "bpfbox event %s", e->type);
	}
	jsonw_begin(w);
	put_classification(w, &BASE, 99, "Other");
	jsonw_i64(w, "time", time_ms(e->time));
	put_severity(w, sev);
	jsonw_str(w, "message", msg);
	put_metadata(w, e, false);
	jsonw_raw(w, "unmapped", json_object_to_json_string_ext(
					 e->o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	jsonw_end(w);
}

int ocsf_encode(struct jsonw *w, struct json_object *o, const char *hostname)
{
	struct ev e = { .o = o };

	if (!o || !json_object_is_type(o, json_type_object))
		return -EINVAL;
	e.type = get_str(o, "type");
	if (!e.type)
		return -EINVAL;
	e.time = get_str(o, "time");
	e.session = get_str(o, "session");
	e.comm = get_str(o, "comm");
	e.decision = get_str(o, "decision");
	e.layer = get_str(o, "layer");
	e.err = get_str(o, "errno");
	e.has_seq = get_int(o, "seq", &e.seq);
	e.has_pid = get_int(o, "pid", &e.pid);
	e.has_tid = get_int(o, "tid", &e.tid);
	e.has_ppid = get_int(o, "ppid", &e.ppid);
	e.has_uid = get_int(o, "uid", &e.uid);
	e.deny = e.decision && streq(e.decision, "deny");
	if (streq(e.type, "exec"))
		enc_exec(w, &e, hostname);
	else if (streq(e.type, "fork"))
		enc_fork(w, &e, hostname);
	else if (streq(e.type, "exit"))
		enc_exit(w, &e, hostname);
	else if (streq(e.type, "file"))
		enc_file(w, &e, hostname);
	else if (streq(e.type, "connect"))
		enc_connect(w, &e, hostname);
	else
		enc_base(w, &e);
	jsonw_newline(w);
	return 0;
}
