// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox event -> OCSF event (OCSF_VERSION). The table of docs/ocsf.md,
 * field by field; what OCSF has no place for goes in "unmapped". Checked
 * against the schema's own class definitions by tools/validate-ocsf.py
 * (tests/fixtures/ocsf-<version>.json).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
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
static const struct ocsf_class DNS = { 4003, 4, "DNS Activity", "Network Activity" };
static const struct ocsf_class EVENTLOG = { 1008, 1, "Event Log Activity", "System Activity" };

/* The event's members, read once. */
struct ev {
	struct json_object *o;
	const char *type, *time, *session, *comm, *decision, *layer, *err;
	const char *host, *host_id, *boot_id;
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

/* The user name of a uid, from the host's passwd (NSS); the last one kept. */
static const char *user_name(int64_t uid)
{
	static int64_t last = -1;
	static char name[64];
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (uid == last)
		return name[0] ? name : NULL;
	last = uid;
	name[0] = 0;
	if (uid >= 0 && uid <= UINT32_MAX && getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) == 0 &&
	    res)
		snprintf(name, sizeof(name), "%s", res->pw_name);
	return name[0] ? name : NULL;
}

static void put_uid(struct jsonw *w, const char *key, int64_t uid)
{
	const char *name = user_name(uid);
	char buf[24];

	/* OCSF user.uid is a string; type_id 1 User, 2 Admin (root), 3 System. */
	snprintf(buf, sizeof(buf), "%" PRId64, uid);
	jsonw_object_begin(w, key);
	jsonw_str(w, "uid", buf);
	if (name)
		jsonw_str(w, "name", name);
	jsonw_u64(w, "type_id", uid == 0 ? 2 : uid < 1000 ? 3 : 1);
	jsonw_str(w, "type", uid == 0 ? "Admin" : uid < 1000 ? "System" : "User");
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

static void put_metadata(struct jsonw *w, const struct ev *e, bool control)
{
	struct json_object *labels;
	char uid[160];

	jsonw_object_begin(w, "metadata");
	jsonw_str(w, "version", OCSF_VERSION);
	jsonw_object_begin(w, "product");
	jsonw_str(w, "name", "bpfbox");
	jsonw_str(w, "vendor_name", "bpfbox");
	jsonw_str(w, "version", BPFBOX_VERSION);
	jsonw_end(w);
	jsonw_array_begin(w, "profiles");
	jsonw_array_strn(w, "host", 4);
	if (control)
		jsonw_array_strn(w, "security_control", 16);
	jsonw_array_end(w);
	jsonw_str(w, "log_name", "bpfbox audit");
	jsonw_str(w, "log_provider", "bpfbox");
	if (e->type)
		jsonw_str(w, "event_code", e->type);
	if (e->time)
		jsonw_str(w, "original_time", e->time);
	/*
	 * (session, seq) names an event: a receiver drops duplicates by it.
	 * The daemon's own lines (a sink's loss, sink.error) have no session:
	 * host id, type and time name them.
	 */
	if (e->session && e->has_seq)
		snprintf(uid, sizeof(uid), "%s:%" PRId64, e->session, e->seq);
	else
		snprintf(uid, sizeof(uid), "%s:%s:%s", e->host_id ? e->host_id : "-",
			 e->type ? e->type : "-", e->time ? e->time : "-");
	jsonw_str(w, "uid", uid);
	if (e->session) {
		jsonw_str(w, "correlation_uid", e->session);
		if (e->has_seq)
			jsonw_i64(w, "sequence", e->seq);
	}
	/* session.start's labels, "name=value" (metadata.labels is a string array). */
	if (json_object_object_get_ex(e->o, "labels", &labels) &&
	    json_object_is_type(labels, json_type_object) && json_object_object_length(labels)) {
		jsonw_array_begin(w, "labels");
		json_object_object_foreach(labels, k, v)
		{
			char *kv = NULL;

			if (json_object_is_type(v, json_type_string) &&
			    asprintf(&kv, "%s=%s", k, json_object_get_string(v)) >= 0) {
				jsonw_array_strn(w, kv, strlen(kv));
				free(kv);
			}
		}
		jsonw_array_end(w);
	}
	jsonw_end(w);
}

static void put_device(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static struct utsname uts;
	const char *name = e->host ? e->host : hostname;

	if (!uts.sysname[0] && uname(&uts) < 0)
		snprintf(uts.sysname, sizeof(uts.sysname), "Linux");
	jsonw_object_begin(w, "device");
	if (name) {
		jsonw_str(w, "hostname", name);
		jsonw_str(w, "name", name);
	}
	if (e->host_id)
		jsonw_str(w, "uid", e->host_id);
	if (e->boot_id)
		jsonw_str(w, "boot_uid", e->boot_id);
	jsonw_u64(w, "type_id", 0);
	jsonw_str(w, "type", "Unknown");
	jsonw_object_begin(w, "os");
	jsonw_str(w, "name", uts.sysname);
	jsonw_u64(w, "type_id", 200);
	jsonw_str(w, "type", "Linux");
	if (uts.release[0])
		jsonw_str(w, "version", uts.release);
	jsonw_end(w);
	jsonw_end(w);
}

/* Minutes the host's local time is ahead of UTC (time itself is UTC). */
static void put_timezone(struct jsonw *w, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (localtime_r(&t, &tm))
		jsonw_i64(w, "timezone_offset", tm.tm_gmtoff / 60);
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
	/* A non-blocking connect that was allowed and is under way: not a failure. */
	if (!e->deny && streq(e->err, "EINPROGRESS")) {
		jsonw_u64(w, "status_id", 99);
		jsonw_str(w, "status", "In Progress");
		jsonw_str(w, "status_code", e->err);
		jsonw_str(w, "status_detail", "non-blocking connect under way");
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
		jsonw_i64(w, "ptid", e->tid);
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

/* observables: the values a SIEM indexes for search, each naming its attribute. */
struct obs {
	const char *name, *type, *value;
	int type_id;
};

#define OBS_MAX 10

struct obs_list {
	struct obs o[OBS_MAX];
	char num[3][24];
	int n, nums;
};

static void obs_add(struct obs_list *l, const char *name, int type_id, const char *type,
		    const char *value)
{
	if (value && value[0] && l->n < OBS_MAX)
		l->o[l->n++] = (struct obs){ name, type, value, type_id };
}

static void obs_add_int(struct obs_list *l, const char *name, int type_id, const char *type,
			int64_t v)
{
	if (l->nums < 3) {
		snprintf(l->num[l->nums], sizeof(l->num[0]), "%" PRId64, v);
		obs_add(l, name, type_id, type, l->num[l->nums++]);
	}
}

static void put_observables(struct jsonw *w, const struct obs_list *l)
{
	jsonw_array_begin(w, "observables");
	for (int i = 0; i < l->n; i++) {
		jsonw_begin(w); /* an element */
		jsonw_str(w, "name", l->o[i].name);
		jsonw_u64(w, "type_id", l->o[i].type_id);
		jsonw_str(w, "type", l->o[i].type);
		jsonw_str(w, "value", l->o[i].value);
		jsonw_end(w);
	}
	jsonw_array_end(w);
}

/* The observables every record has: the host, the acting process and user. */
static void obs_common(struct obs_list *l, const struct ev *e, const char *hostname)
{
	const char *host = e->host ? e->host : hostname;

	obs_add(l, "device.hostname", 1, "Hostname", host);
	if (e->has_pid && e->comm)
		obs_add(l, "actor.process.name", 9, "Process Name", e->comm);
	if (e->has_pid)
		obs_add_int(l, "actor.process.pid", 15, "Process ID", e->pid);
	if (e->has_uid)
		obs_add(l, "actor.user.name", 4, "User Name", user_name(e->uid));
}

static void begin_common(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
			 int activity, const char *activity_name, int sev, const char *hostname,
			 const char *message, bool control)
{
	int64_t ms = time_ms(e->time);

	jsonw_begin(w);
	put_classification(w, c, activity, activity_name);
	jsonw_i64(w, "time", ms);
	put_timezone(w, ms);
	put_severity(w, sev);
	jsonw_str(w, "message", message);
	put_metadata(w, e, control);
	put_device(w, e, hostname);
}

static void begin_record(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
			 int activity, const char *activity_name, const char *hostname,
			 const char *message)
{
	begin_common(w, e, c, activity, activity_name, e->deny ? SEV_MEDIUM : SEV_INFORMATIONAL,
		     hostname, message, true);
	put_outcome(w, e);
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
	struct obs_list obs = { 0 };
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
	obs_common(&obs, e, hostname);
	obs_add(&obs, "process.file.path", 45, "File Path", filename);
	put_observables(w, &obs);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

static void enc_fork(struct jsonw *w, const struct ev *e, const char *hostname)
{
	struct obs_list obs = { 0 };
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
	put_process_body(w, e, true);
	jsonw_end(w);
	jsonw_end(w);
	obs_common(&obs, e, hostname);
	obs_add_int(&obs, "process.pid", 15, "Process ID", child);
	put_observables(w, &obs);
	put_unmapped(w, e, NULL);
	jsonw_end(w);
}

static void enc_exit(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "signal", NULL };
	int64_t code = 0, sig = 0;
	bool have_code = get_int(e->o, "exit_code", &code);
	struct obs_list obs = { 0 };
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
	obs_common(&obs, e, hostname);
	put_observables(w, &obs);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

static void enc_file(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "flags", "op", NULL };
	const char *path = get_str(e->o, "path");
	char what[PATH_MAX + 16], msg[PATH_MAX + 64];
	struct obs_list obs = { 0 };
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
	obs_common(&obs, e, hostname);
	obs_add(&obs, "file.path", 45, "File Path", path);
	obs_add(&obs, "file.name", 7, "File Name", path ? base_name(path) : NULL);
	put_observables(w, &obs);
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
	struct obs_list obs = { 0 };
	int64_t port = 0;

	get_int(e->o, "port", &port);
	if (unix_)
		snprintf(what, sizeof(what), "connect to unix %s", path ? path : "?");
	else
		snprintf(what, sizeof(what), "connect to %s port %" PRId64, addr ? addr : "?", port);
	message(msg, sizeof(msg), e, what);
	if (!e->deny && e->err && streq(e->err, "EINPROGRESS"))
		snprintf(msg, sizeof(msg), "%s (in progress)", what);
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
	obs_common(&obs, e, hostname);
	if (!unix_) {
		obs_add(&obs, "dst_endpoint.ip", 2, "IP Address", addr);
		obs_add_int(&obs, "dst_endpoint.port", 11, "Port", port);
	}
	put_observables(w, &obs);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

/*
 * net.allow / net.deny of the egress proxy: a query is DNS Activity (4003)
 * Query with its rcode; a connection is Network Activity (4001), Close with
 * its traffic when allowed (counted at close), Refuse when denied.
 */
static void enc_net(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = { "protocol", "name_from", "rule", "reason", NULL };
	const char *proto = get_str(e->o, "protocol"), *name = get_str(e->o, "name");
	const char *addr = get_str(e->o, "address"), *reason = get_str(e->o, "reason");
	const char *rule = get_str(e->o, "rule");
	struct obs_list obs = { 0 };
	char what[512], msg[640];
	int64_t port = 0, out = 0, in = 0;

	get_int(e->o, "port", &port);
	get_int(e->o, "bytes_out", &out);
	get_int(e->o, "bytes_in", &in);
	if (proto && streq(proto, "dns")) {
		snprintf(what, sizeof(what), "DNS query %s %s%s%s", name ? name : "?",
			 e->deny ? "refused" : "answered", reason && *reason ? ": " : "",
			 reason ? reason : "");
		begin_record(w, e, &DNS, 1, "Query", hostname, what);
		jsonw_object_begin(w, "query");
		jsonw_str(w, "hostname", name ? name : "");
		jsonw_end(w);
		/* An address is hex digits, dots and colons: safe to splice in. */
		if (addr && *addr && strlen(addr) < 64 &&
		    strspn(addr, "0123456789abcdefABCDEF.:") == strlen(addr)) {
			char answers[96];

			snprintf(answers, sizeof(answers), "[{\"rdata\":\"%s\"}]", addr);
			jsonw_raw(w, "answers", answers);
		}
		jsonw_u64(w, "rcode_id", e->deny ? 5 : 0);
		jsonw_str(w, "rcode", e->deny ? "Refused" : "NoError");
	} else {
		snprintf(what, sizeof(what), "egress to %s (%s) port %" PRId64 " %s%s%s",
			 name && *name ? name : "?", addr ? addr : "?", port,
			 e->deny ? "refused" : "by ", e->deny ? (reason ? reason : "") : "",
			 e->deny ? "" : (rule ? rule : "?"));
		message(msg, sizeof(msg), e, what);
		begin_record(w, e, &NETWORK, e->deny ? 5 : 2, e->deny ? "Refuse" : "Close", hostname,
			     msg);
		jsonw_object_begin(w, "dst_endpoint");
		if (name && *name)
			jsonw_str(w, "hostname", name);
		if (addr)
			jsonw_str(w, "ip", addr);
		jsonw_i64(w, "port", port);
		jsonw_end(w);
		jsonw_object_begin(w, "connection_info");
		jsonw_u64(w, "direction_id", 2);
		jsonw_str(w, "direction", "Outbound");
		jsonw_end(w);
		jsonw_object_begin(w, "traffic");
		jsonw_i64(w, "bytes_out", out);
		jsonw_i64(w, "bytes_in", in);
		jsonw_end(w);
	}
	obs_common(&obs, e, hostname);
	if (name && *name)
		obs_add(&obs, proto && streq(proto, "dns") ? "query.hostname" : "dst_endpoint.hostname",
			1, "Hostname", name);
	if (addr && !(proto && streq(proto, "dns"))) {
		obs_add(&obs, "dst_endpoint.ip", 2, "IP Address", addr);
		obs_add_int(&obs, "dst_endpoint.port", 11, "Port", port);
	}
	put_observables(w, &obs);
	put_unmapped(w, e, extra);
	jsonw_end(w);
}

/* The whole original event in unmapped, but for what the class already says. */
static void put_unmapped_rest(struct jsonw *w, const struct ev *e)
{
	static const char *const mapped[] = { "schema_version", "time", "session", "seq",
					      "host", "host_id", "boot_id", "labels", NULL };

	jsonw_object_begin(w, "unmapped");
	json_object_object_foreach(e->o, k, v)
	{
		const char *const *m = mapped;

		while (*m && !streq(*m, k))
			m++;
		if (!*m)
			jsonw_raw(w, k, json_object_to_json_string_ext(
						v, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	jsonw_end(w);
}

/* The actor of a lifecycle event: who asked (session.start) or bpfbox itself. */
static void put_lifecycle_actor(struct jsonw *w, const struct ev *e)
{
	jsonw_object_begin(w, "actor");
	if (e->has_pid) {
		jsonw_object_begin(w, "process");
		jsonw_i64(w, "pid", e->pid);
		if (e->has_uid)
			put_uid(w, "user", e->uid);
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

/*
 * session.start, .end, .paused, .resumed, .killed: Process Activity of the
 * session's process (process.uid is the session id): Launch, Terminate, or
 * Other ("Suspend", "Resume").
 */
static void enc_session(struct jsonw *w, const struct ev *e, const char *hostname)
{
	struct json_object *cmd;
	struct obs_list obs = { 0 };
	int64_t code = 0;
	const char *reason = get_str(e->o, "reason");
	char msg[512];
	int activity = 99, sev = SEV_INFORMATIONAL;
	const char *aname = "Other";
	bool have_code = get_int(e->o, "exit_code", &code);

	if (streq(e->type, "session.start")) {
		activity = 1;
		aname = "Launch";
		snprintf(msg, sizeof(msg), "session started");
	} else if (streq(e->type, "session.end")) {
		activity = 2;
		aname = "Terminate";
		if (have_code)
			snprintf(msg, sizeof(msg), "session ended, exit code %" PRId64, code);
		else
			snprintf(msg, sizeof(msg), "session ended");
	} else if (streq(e->type, "session.killed")) {
		activity = 2;
		aname = "Terminate";
		sev = SEV_MEDIUM;
		snprintf(msg, sizeof(msg), "session killed: %s", reason ? reason : "?");
	} else if (streq(e->type, "session.paused")) {
		aname = "Suspend";
		sev = SEV_MEDIUM;
		snprintf(msg, sizeof(msg), "session paused: %s", reason ? reason : "?");
	} else if (streq(e->type, "session.resumed")) {
		aname = "Resume";
		snprintf(msg, sizeof(msg), "session resumed");
	} else {
		snprintf(msg, sizeof(msg), "bpfbox event %s", e->type);
	}
	begin_common(w, e, &PROCESS, activity, aname, sev, hostname, msg, false);
	jsonw_u64(w, "status_id", 1);
	jsonw_str(w, "status", "Success");
	put_lifecycle_actor(w, e);
	jsonw_object_begin(w, "process");
	if (e->session)
		jsonw_str(w, "uid", e->session);
	if (json_object_object_get_ex(e->o, "command", &cmd) &&
	    json_object_is_type(cmd, json_type_array) && json_object_array_length(cmd)) {
		const char *argv0 = json_object_get_string(json_object_array_get_idx(cmd, 0));

		jsonw_str(w, "name", base_name(argv0 ? argv0 : "?"));
		put_cmd_line(w, cmd);
	}
	if (e->session) {
		jsonw_object_begin(w, "session");
		jsonw_str(w, "uid", e->session);
		jsonw_end(w);
	}
	jsonw_end(w);
	if (activity == 2 && have_code)
		jsonw_i64(w, "exit_code", code);
	obs_common(&obs, e, hostname);
	put_observables(w, &obs);
	put_unmapped_rest(w, e);
	jsonw_end(w);
}

/*
 * loss and sink.error: Event Log Activity (1008) of the audit log itself, a
 * failure: events lost (Other, "Drop") or a sink that failed to export
 * (Export).
 */
static void enc_log(struct jsonw *w, const struct ev *e, const char *hostname)
{
	const char *where = get_str(e->o, "where"), *sink = get_str(e->o, "sink");
	const char *error = get_str(e->o, "error"), *text = get_str(e->o, "message");
	struct obs_list obs = { 0 };
	bool loss = streq(e->type, "loss");
	char msg[512];
	int64_t n = 0;

	if (loss) {
		get_int(e->o, "count", &n);
		snprintf(msg, sizeof(msg), "%" PRId64 " events lost: %s", n, where ? where : "?");
	} else {
		snprintf(msg, sizeof(msg), "sink %s: %s", sink ? sink : "?", text ? text : "?");
	}
	begin_common(w, e, &EVENTLOG, loss ? 99 : 3, loss ? "Drop" : "Export", SEV_HIGH, hostname,
		     msg, false);
	jsonw_u64(w, "status_id", 2);
	jsonw_str(w, "status", "Failure");
	if (error)
		jsonw_str(w, "status_code", error);
	jsonw_str(w, "status_detail", loss ? (where ? where : "events lost") : (text ? text : "?"));
	jsonw_str(w, "log_name", sink ? sink : "bpfbox audit");
	jsonw_str(w, "log_provider", "bpfbox");
	jsonw_u64(w, "log_type_id", 99);
	jsonw_str(w, "log_type", "bpfbox audit stream");
	if (loss && n)
		jsonw_i64(w, "count", n);
	put_lifecycle_actor(w, e);
	obs_common(&obs, e, hostname);
	put_observables(w, &obs);
	put_unmapped_rest(w, e);
	jsonw_end(w);
}

/*
 * ceiling: a session request held to the operator's policy ceiling, as a
 * Process Activity Launch with the security_control outcome: Denied and
 * Blocked (refuse) or Modified and Corrected (clamp).
 */
static void enc_ceiling(struct jsonw *w, const struct ev *e, const char *hostname)
{
	const char *action = get_str(e->o, "action"), *reason = get_str(e->o, "reason");
	bool refuse = !action || streq(action, "refuse");
	struct obs_list obs = { 0 };
	char msg[600];

	snprintf(msg, sizeof(msg), "session %s: %s", refuse ? "refused" : "clamped",
		 reason ? reason : "?");
	begin_common(w, e, &PROCESS, 1, "Launch", refuse ? SEV_MEDIUM : SEV_INFORMATIONAL,
		     hostname, msg, true);
	jsonw_u64(w, "action_id", refuse ? 2 : 4);
	jsonw_str(w, "action", refuse ? "Denied" : "Modified");
	jsonw_u64(w, "disposition_id", refuse ? 2 : 11);
	jsonw_str(w, "disposition", refuse ? "Blocked" : "Corrected");
	jsonw_u64(w, "status_id", refuse ? 2 : 1);
	jsonw_str(w, "status", refuse ? "Failure" : "Success");
	if (reason)
		jsonw_str(w, "status_detail", reason);
	put_lifecycle_actor(w, e);
	jsonw_object_begin(w, "process");
	if (e->session)
		jsonw_str(w, "uid", e->session);
	jsonw_end(w);
	obs_common(&obs, e, hostname);
	put_observables(w, &obs);
	put_unmapped_rest(w, e);
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
	e.host = get_str(o, "host");
	e.host_id = get_str(o, "host_id");
	e.boot_id = get_str(o, "boot_id");
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
	else if (streq(e.type, "loss") || streq(e.type, "sink.error"))
		enc_log(w, &e, hostname);
	else if (streq(e.type, "ceiling"))
		enc_ceiling(w, &e, hostname);
	else if (streq(e.type, "net.allow") || streq(e.type, "net.deny"))
		enc_net(w, &e, hostname);
	else
		enc_session(w, &e, hostname);
	jsonw_newline(w);
	return 0;
}
