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

#include "ocsf_internal.h"
#include "../lib/names.h"
#include "../lib/util.h"

/* A record's last members: observables, unmapped (the extra members of its type). */
static void end_record(struct jsonw *w, const struct ev *e, const struct obs_list *obs,
		       const char *const *extra)
{
	ocsf_put_observables(w, obs);
	ocsf_put_unmapped(w, e, extra);
	jsonw_end(w);
}

static void enc_exec(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = {"argv", "argv_truncated", NULL};
	const char *filename = json_member_str(e->o, "filename");
	char what[PATH_MAX + 16], msg[PATH_MAX + 64];
	struct obs_list obs = {0};
	struct json_object *argv;

	snprintf(what, sizeof(what), "exec %s", filename ? filename : "?");
	ocsf_message(msg, sizeof(msg), e, what);
	ocsf_begin_record(w, e, &OCSF_PROCESS, 1, "Launch", hostname, msg);
	jsonw_object_begin(w, "process");
	ocsf_put_process_body(w, e, true);
	if (json_object_object_get_ex(e->o, "argv", &argv) &&
	    json_object_is_type(argv, json_type_array) && json_object_array_length(argv))
		ocsf_put_cmd_line(w, argv);
	if (filename)
		ocsf_put_file(w, filename, !e->err);
	jsonw_end(w);
	ocsf_obs_common(&obs, e, hostname);
	ocsf_obs_add(&obs, "process.file.path", 45, "File Path", filename);
	end_record(w, e, &obs, extra);
}

static void enc_fork(struct jsonw *w, const struct ev *e, const char *hostname)
{
	struct obs_list obs = {0};
	int64_t child = 0;
	char msg[96];

	json_member_int(e->o, "child_pid", &child);
	snprintf(msg, sizeof(msg), "fork of pid %" PRId64 ": child %" PRId64, e->pid, child);
	ocsf_begin_record(w, e, &OCSF_PROCESS, 1, "Launch", hostname, msg);
	jsonw_object_begin(w, "process");
	jsonw_i64(w, "pid", child);
	jsonw_str_opt(w, "name", e->comm);
	if (e->has_uid)
		ocsf_put_uid(w, "user", e->uid);
	jsonw_object_begin(w, "parent_process");
	ocsf_put_process_body(w, e, true);
	jsonw_end(w);
	jsonw_end(w);
	ocsf_obs_common(&obs, e, hostname);
	ocsf_obs_add_int(&obs, "process.pid", 15, "Process ID", child);
	end_record(w, e, &obs, NULL);
}

static void enc_exit(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = {"signal", NULL};
	int64_t code = 0, sig = 0;
	bool have_code = json_member_int(e->o, "exit_code", &code);
	struct obs_list obs = {0};
	char msg[96];

	json_member_int(e->o, "signal", &sig);
	if (have_code)
		snprintf(msg, sizeof(msg), "exit of pid %" PRId64 " with code %" PRId64, e->pid,
			 code);
	else
		snprintf(msg, sizeof(msg), "pid %" PRId64 " killed by signal %" PRId64, e->pid,
			 sig);
	ocsf_begin_record(w, e, &OCSF_PROCESS, 2, "Terminate", hostname, msg);
	jsonw_object_begin(w, "process");
	ocsf_put_process_body(w, e, true);
	jsonw_end(w);
	if (have_code)
		jsonw_i64(w, "exit_code", code);
	ocsf_obs_common(&obs, e, hostname);
	end_record(w, e, &obs, extra);
}

/*
 * File System Activity's activity for each file op (docs/ocsf.md): the
 * mode and the owner are the file's security, times and extended
 * attributes its attributes.
 */
static const unsigned char file_activity[] = {
	[BPFBOX_FILE_OPEN] = 14,   [BPFBOX_FILE_UNLINK] = 4,   [BPFBOX_FILE_RMDIR] = 4,
	[BPFBOX_FILE_RENAME] = 5,  [BPFBOX_FILE_MKDIR] = 1,    [BPFBOX_FILE_LINK] = 1,
	[BPFBOX_FILE_SYMLINK] = 1, [BPFBOX_FILE_CHMOD] = 7,    [BPFBOX_FILE_UTIMES] = 6,
	[BPFBOX_FILE_CHOWN] = 7,   [BPFBOX_FILE_SETXATTR] = 6, [BPFBOX_FILE_REMOVEXATTR] = 6,
};
_Static_assert(ARRAY_SIZE(file_activity) == BPFBOX_FILE_OP_COUNT, "an activity for every file op");
static const char *const file_activity_names[] = {
	[1] = "Create",		[4] = "Delete",	      [5] = "Rename",
	[6] = "Set Attributes", [7] = "Set Security", [14] = "Open",
};

static void enc_file(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = {"flags", "op", NULL};
	const char *path = json_member_str(e->o, "path"), *opname = json_member_str(e->o, "op");
	char what[PATH_MAX + 16], msg[PATH_MAX + 64];
	struct obs_list obs = {0};
	int64_t flags = 0, count = 0;
	int op = opname ? bpfbox_file_op_parse(opname) : BPFBOX_FILE_OPEN;

	snprintf(what, sizeof(what), "%s %s", op < 0 ? opname : bpfbox_file_op_name(op),
		 path ? path : "?");
	ocsf_message(msg, sizeof(msg), e, what);
	/* An op this build does not know (a newer producer): Other, named by the op. */
	ocsf_begin_record(w, e, &OCSF_FILESYS, op < 0 ? 99 : file_activity[op],
			  op < 0 ? "Other" : file_activity_names[file_activity[op]], hostname, msg);
	ocsf_put_file(w, path ? path : "", false);
	if (json_member_int(e->o, "flags", &flags))
		jsonw_i64(w, "access_mask", flags);
	/* Identical allowed opens folded into this one (aggregate mode). */
	if (json_member_int(e->o, "count", &count))
		jsonw_i64(w, "count", count);
	ocsf_obs_common(&obs, e, hostname);
	ocsf_obs_add(&obs, "file.path", 45, "File Path", path);
	ocsf_obs_add(&obs, "file.name", 7, "File Name", path ? ocsf_base_name(path) : NULL);
	end_record(w, e, &obs, extra);
}

static void enc_connect(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = {"family", NULL};
	const char *family = json_member_str(e->o, "family");
	const char *addr = json_member_str(e->o, "address"), *path = json_member_str(e->o, "path");
	bool unix_ = family && streq(family, "unix");
	char what[PATH_MAX + 64], msg[PATH_MAX + 128];
	struct obs_list obs = {0};
	int64_t port = 0;

	json_member_int(e->o, "port", &port);
	if (unix_)
		snprintf(what, sizeof(what), "connect to unix %s", path ? path : "?");
	else
		snprintf(what, sizeof(what), "connect to %s port %" PRId64, addr ? addr : "?",
			 port);
	ocsf_message(msg, sizeof(msg), e, what);
	if (!e->deny && e->err && streq(e->err, "EINPROGRESS"))
		snprintf(msg, sizeof(msg), "%s (in progress)", what);
	ocsf_begin_record(w, e, &OCSF_NETWORK, 1, "Open", hostname, msg);
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
		jsonw_str(w, "protocol_ver",
			  v6 ? "Internet Protocol version 6 (IPv6)"
			     : "Internet Protocol version 4 (IPv4)");
	}
	jsonw_end(w);
	ocsf_obs_common(&obs, e, hostname);
	if (!unix_) {
		ocsf_obs_add(&obs, "dst_endpoint.ip", 2, "IP Address", addr);
		ocsf_obs_add_int(&obs, "dst_endpoint.port", 11, "Port", port);
	}
	end_record(w, e, &obs, extra);
}

/*
 * net.allow / net.deny of the egress proxy: a query is DNS Activity (4003)
 * Query with its rcode; a connection is Network Activity (4001), Close with
 * its traffic when allowed (counted at close), Refuse when denied.
 */
static void enc_net(struct jsonw *w, const struct ev *e, const char *hostname)
{
	static const char *const extra[] = {"protocol", "name_from", "rule",   "reason",
					    "method",	"path",	     "status", NULL};
	const char *proto = json_member_str(e->o, "protocol"),
		   *name = json_member_str(e->o, "name");
	const char *addr = json_member_str(e->o, "address"),
		   *reason = json_member_str(e->o, "reason");
	const char *rule = json_member_str(e->o, "rule");
	struct obs_list obs = {0};
	char what[512], msg[640];
	int64_t port = 0, out = 0, in = 0;

	json_member_int(e->o, "port", &port);
	json_member_int(e->o, "bytes_out", &out);
	json_member_int(e->o, "bytes_in", &in);
	if (proto && streq(proto, "dns")) {
		snprintf(what, sizeof(what), "DNS query %s %s%s%s", name ? name : "?",
			 e->deny ? "refused" : "answered", reason && *reason ? ": " : "",
			 reason ? reason : "");
		ocsf_begin_record(w, e, &OCSF_DNS, 1, "Query", hostname, what);
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
		ocsf_message(msg, sizeof(msg), e, what);
		ocsf_begin_record(w, e, &OCSF_NETWORK, e->deny ? 5 : 2,
				  e->deny ? "Refuse" : "Close", hostname, msg);
		jsonw_object_begin(w, "dst_endpoint");
		if (name && *name)
			jsonw_str(w, "hostname", name);
		jsonw_str_opt(w, "ip", addr);
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
	ocsf_obs_common(&obs, e, hostname);
	if (name && *name)
		ocsf_obs_add(&obs,
			     proto && streq(proto, "dns") ? "query.hostname"
							  : "dst_endpoint.hostname",
			     1, "Hostname", name);
	if (addr && !(proto && streq(proto, "dns"))) {
		ocsf_obs_add(&obs, "dst_endpoint.ip", 2, "IP Address", addr);
		ocsf_obs_add_int(&obs, "dst_endpoint.port", 11, "Port", port);
	}
	end_record(w, e, &obs, extra);
}

typedef void (*ocsf_encoder)(struct jsonw *w, const struct ev *e, const char *hostname);

/* The class of each kind; the session's lifecycle, rename and kinds new to us: ocsf_enc_session. */
static const ocsf_encoder encoders[EV_KINDS] = {
	[EV_EXEC] = enc_exec,		[EV_FORK] = enc_fork,
	[EV_EXIT] = enc_exit,		[EV_FILE] = enc_file,
	[EV_CONNECT] = enc_connect,	[EV_LOSS] = ocsf_enc_log,
	[EV_SINK_ERROR] = ocsf_enc_log, [EV_CEILING] = ocsf_enc_ceiling,
	[EV_NET_ALLOW] = enc_net,	[EV_NET_DENY] = enc_net,
	[EV_NET_REQUEST] = enc_net,
};

int ocsf_encode_kind(struct jsonw *w, int kind, struct json_object *o, const char *hostname)
{
	struct ev e = {.o = o, .kind = kind};

	if (!o || !json_object_is_type(o, json_type_object))
		return -EINVAL;
	e.type = json_member_str(o, "type");
	if (!e.type)
		return -EINVAL;
	e.time = json_member_str(o, "time");
	e.session = json_member_str(o, "session");
	e.comm = json_member_str(o, "comm");
	e.decision = json_member_str(o, "decision");
	e.layer = json_member_str(o, "layer");
	e.err = json_member_str(o, "errno");
	e.host = json_member_str(o, "host");
	e.host_id = json_member_str(o, "host_id");
	e.boot_id = json_member_str(o, "boot_id");
	e.has_seq = json_member_int(o, "seq", &e.seq);
	e.has_pid = json_member_int(o, "pid", &e.pid);
	e.has_tid = json_member_int(o, "tid", &e.tid);
	e.has_ppid = json_member_int(o, "ppid", &e.ppid);
	e.has_uid = json_member_int(o, "uid", &e.uid);
	e.deny = e.decision && streq(e.decision, "deny");
	if (kind >= 0 && kind < EV_KINDS && encoders[kind])
		encoders[kind](w, &e, hostname);
	else
		ocsf_enc_session(w, &e, hostname);
	jsonw_newline(w);
	return 0;
}

int ocsf_encode(struct jsonw *w, struct json_object *o, const char *hostname)
{
	struct json_object *t;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "type", &t) || !json_object_is_type(t, json_type_string))
		return -EINVAL;
	return ocsf_encode_kind(w, ev_kind_parse(json_object_get_string(t)), o, hostname);
}
