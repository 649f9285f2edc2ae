// SPDX-License-Identifier: GPL-2.0
/*
 * The pieces every OCSF event is made of (ocsf_internal.h): the members
 * of a bpfbox event read once, classification, metadata, device, actor,
 * outcome, observables and "unmapped".
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

#include "ocsf_internal.h"
#include "../lib/util.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

const struct ocsf_class OCSF_PROCESS = {1007, 1, "Process Activity", "System Activity"};
const struct ocsf_class OCSF_FILESYS = {1001, 1, "File System Activity", "System Activity"};
const struct ocsf_class OCSF_NETWORK = {4001, 4, "Network Activity", "Network Activity"};
const struct ocsf_class OCSF_DNS = {4003, 4, "DNS Activity", "Network Activity"};
const struct ocsf_class OCSF_EVENTLOG = {1008, 1, "Event Log Activity", "System Activity"};

/* RFC 3339 UTC ("2026-01-02T03:04:05.123456789Z") -> ms since the epoch. */
int64_t ocsf_time_ms(const char *s)
{
	struct tm tm = {0};
	unsigned int ms = 0;
	struct timespec now;
	int n = 0;

	if (s && sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			&tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) == 6) {
		const char *p = s + n;

		if (*p == '.')
			for (int i = 0; i < 3; i++)
				ms = ms * 10 +
				     (p[1 + i] >= '0' && p[1 + i] <= '9' ? p[1 + i] - '0' : 0);
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		return (int64_t)timegm(&tm) * 1000 + ms;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The user name of a uid, from the host's passwd (NSS); the last one kept. */
const char *ocsf_user_name(int64_t uid)
{
	static int64_t last = -1;
	static char name[64];
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (uid == last)
		return name[0] ? name : NULL;
	last = uid;
	name[0] = 0;
	if (uid >= 0 && uid <= UINT32_MAX &&
	    getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(name, sizeof(name), "%s", res->pw_name);
	return name[0] ? name : NULL;
}

void ocsf_put_uid(struct jsonw *w, const char *key, int64_t uid)
{
	const char *name = ocsf_user_name(uid);
	char buf[24];

	/* OCSF user.uid is a string; type_id 1 User, 2 Admin (root), 3 System. */
	snprintf(buf, sizeof(buf), "%" PRId64, uid);
	jsonw_object_begin(w, key);
	jsonw_str(w, "uid", buf);
	jsonw_str_opt(w, "name", name);
	jsonw_u64(w, "type_id", uid == 0 ? 2 : uid < 1000 ? 3 : 1);
	jsonw_str(w, "type", uid == 0 ? "Admin" : uid < 1000 ? "System" : "User");
	jsonw_end(w);
}

void ocsf_put_classification(struct jsonw *w, const struct ocsf_class *c, int activity,
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

void ocsf_put_severity(struct jsonw *w, int sev)
{
	static const char *const names[] = {"Unknown", "Informational", "Low", "Medium", "High"};

	jsonw_u64(w, "severity_id", sev);
	jsonw_str(w, "severity", names[sev]);
}

void ocsf_put_metadata(struct jsonw *w, const struct ev *e, bool control)
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
	jsonw_str_opt(w, "event_code", e->type);
	jsonw_str_opt(w, "original_time", e->time);
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
		json_object_object_foreach (labels, k, v) {
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

void ocsf_put_device(struct jsonw *w, const struct ev *e, const char *hostname)
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
	jsonw_str_opt(w, "uid", e->host_id);
	jsonw_str_opt(w, "boot_uid", e->boot_id);
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
void ocsf_put_timezone(struct jsonw *w, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (localtime_r(&t, &tm))
		jsonw_i64(w, "timezone_offset", tm.tm_gmtoff / 60);
}

/* The security_control profile and the status of a record. */
void ocsf_put_outcome(struct jsonw *w, const struct ev *e)
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
void ocsf_put_process_body(struct jsonw *w, const struct ev *e, bool parent)
{
	if (e->has_pid)
		jsonw_i64(w, "pid", e->pid);
	if (e->has_tid)
		jsonw_i64(w, "ptid", e->tid);
	jsonw_str_opt(w, "name", e->comm);
	if (e->has_uid)
		ocsf_put_uid(w, "user", e->uid);
	if (parent && e->has_ppid) {
		jsonw_object_begin(w, "parent_process");
		jsonw_i64(w, "pid", e->ppid);
		jsonw_end(w);
	}
}

/* The end of every actor: its user, the session as its context, the app. */
static void actor_end(struct jsonw *w, const struct ev *e)
{
	if (e->has_uid)
		ocsf_put_uid(w, "user", e->uid);
	if (e->session) {
		jsonw_object_begin(w, "session");
		jsonw_str(w, "uid", e->session);
		jsonw_end(w);
	}
	jsonw_str(w, "app_name", "bpfbox");
	jsonw_end(w);
}

/* The actor: the acting process, its user and the session as context. */
void ocsf_put_actor(struct jsonw *w, const struct ev *e)
{
	jsonw_object_begin(w, "actor");
	if (e->has_pid) {
		jsonw_object_begin(w, "process");
		ocsf_put_process_body(w, e, true);
		jsonw_end(w);
	}
	actor_end(w, e);
}

const char *ocsf_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

void ocsf_put_file(struct jsonw *w, const char *path, bool regular)
{
	jsonw_object_begin(w, "file");
	jsonw_str(w, "name", ocsf_base_name(path));
	jsonw_str(w, "path", path);
	jsonw_u64(w, "type_id", regular ? 1 : 0);
	jsonw_str(w, "type", regular ? "Regular File" : "Unknown");
	jsonw_end(w);
}

/* What only bpfbox knows: the layer, the errno, the type's own fields. */
void ocsf_put_unmapped(struct jsonw *w, const struct ev *e, const char *const *keys)
{
	jsonw_object_begin(w, "unmapped");
	jsonw_str(w, "type", e->type);
	jsonw_str(w, "decision", e->decision);
	jsonw_str(w, "layer", e->layer);
	jsonw_str(w, "errno", e->err);
	for (; keys && *keys; keys++) {
		struct json_object *v;

		if (json_object_object_get_ex(e->o, *keys, &v))
			jsonw_raw(w, *keys,
				  json_object_to_json_string_ext(
					  v,
					  JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	jsonw_end(w);
}

void ocsf_obs_add(struct obs_list *l, const char *name, int type_id, const char *type,
		  const char *value)
{
	if (value && value[0] && l->n < OBS_MAX)
		l->o[l->n++] = (struct obs){name, type, value, type_id};
}

void ocsf_obs_add_int(struct obs_list *l, const char *name, int type_id, const char *type,
		      int64_t v)
{
	if (l->nums < 3) {
		snprintf(l->num[l->nums], sizeof(l->num[0]), "%" PRId64, v);
		ocsf_obs_add(l, name, type_id, type, l->num[l->nums++]);
	}
}

void ocsf_put_observables(struct jsonw *w, const struct obs_list *l)
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
void ocsf_obs_common(struct obs_list *l, const struct ev *e, const char *hostname)
{
	const char *host = e->host ? e->host : hostname;

	ocsf_obs_add(l, "device.hostname", 1, "Hostname", host);
	if (e->has_pid && e->comm)
		ocsf_obs_add(l, "actor.process.name", 9, "Process Name", e->comm);
	if (e->has_pid)
		ocsf_obs_add_int(l, "actor.process.pid", 15, "Process ID", e->pid);
	if (e->has_uid)
		ocsf_obs_add(l, "actor.user.name", 4, "User Name", ocsf_user_name(e->uid));
}

void ocsf_begin_common(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
		       int activity, const char *activity_name, int sev, const char *hostname,
		       const char *message, bool control)
{
	int64_t ms = ocsf_time_ms(e->time);

	jsonw_begin(w);
	ocsf_put_classification(w, c, activity, activity_name);
	jsonw_i64(w, "time", ms);
	ocsf_put_timezone(w, ms);
	ocsf_put_severity(w, sev);
	jsonw_str(w, "message", message);
	ocsf_put_metadata(w, e, control);
	ocsf_put_device(w, e, hostname);
}

void ocsf_begin_record(struct jsonw *w, const struct ev *e, const struct ocsf_class *c,
		       int activity, const char *activity_name, const char *hostname,
		       const char *message)
{
	ocsf_begin_common(w, e, c, activity, activity_name,
			  e->deny ? SEV_MEDIUM : SEV_INFORMATIONAL, hostname, message, true);
	ocsf_put_outcome(w, e);
	ocsf_put_actor(w, e);
}

void ocsf_message(char *buf, size_t size, const struct ev *e, const char *what)
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
void ocsf_put_cmd_line(struct jsonw *w, struct json_object *argv)
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

/* The whole original event in unmapped, but for what the class already says. */
void ocsf_put_unmapped_rest(struct jsonw *w, const struct ev *e)
{
	static const char *const mapped[] = {"schema_version", "time",	  "session", "seq", "host",
					     "host_id",	       "boot_id", "labels",  NULL};

	jsonw_object_begin(w, "unmapped");
	json_object_object_foreach (e->o, k, v) {
		const char *const *m = mapped;

		while (*m && !streq(*m, k))
			m++;
		if (!*m)
			jsonw_raw(w, k,
				  json_object_to_json_string_ext(
					  v,
					  JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	jsonw_end(w);
}

/* The actor of a lifecycle event: who asked (session.start) or bpfbox itself. */
void ocsf_put_lifecycle_actor(struct jsonw *w, const struct ev *e)
{
	jsonw_object_begin(w, "actor");
	if (e->has_pid) {
		jsonw_object_begin(w, "process");
		jsonw_i64(w, "pid", e->pid);
		if (e->has_uid)
			ocsf_put_uid(w, "user", e->uid);
		jsonw_end(w);
	}
	actor_end(w, e);
}
