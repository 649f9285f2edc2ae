// SPDX-License-Identifier: GPL-2.0
/*
 * The OCSF form of the events that are no ring record (docs/ocsf.md): the
 * session's lifecycle, the audit log's own failures and the ceilings.
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

/* The end of every event here: observables, the rest of the event in unmapped. */
static void finish(struct jsonw *w, const struct ev *e, const char *hostname)
{
	struct obs_list obs = {0};

	ocsf_obs_common(&obs, e, hostname);
	ocsf_put_observables(w, &obs);
	ocsf_put_unmapped_rest(w, e);
	jsonw_end(w);
}

/*
 * session.start, .end, .paused, .resumed, .killed: Process Activity of the
 * session's process (process.uid is the session id): Launch, Terminate, or
 * Other ("Suspend", "Resume").
 */
void ocsf_enc_session(struct jsonw *w, const struct ev *e, const char *hostname)
{
	struct json_object *cmd;
	int64_t code = 0;
	const char *reason = json_member_str(e->o, "reason");
	char msg[512];
	int activity = 99, sev = SEV_INFORMATIONAL;
	const char *aname = "Other";
	bool have_code = json_member_int(e->o, "exit_code", &code);

	switch (e->kind) {
	case EV_SESSION_START:
		activity = 1;
		aname = "Launch";
		snprintf(msg, sizeof(msg), "session started");
		break;
	case EV_SESSION_END:
		activity = 2;
		aname = "Terminate";
		if (have_code)
			snprintf(msg, sizeof(msg), "session ended, exit code %" PRId64, code);
		else
			snprintf(msg, sizeof(msg), "session ended");
		break;
	case EV_SESSION_KILLED:
		activity = 2;
		aname = "Terminate";
		sev = SEV_MEDIUM;
		snprintf(msg, sizeof(msg), "session killed: %s", reason ? reason : "?");
		break;
	case EV_SESSION_PAUSED:
		aname = "Suspend";
		sev = SEV_MEDIUM;
		snprintf(msg, sizeof(msg), "session paused: %s", reason ? reason : "?");
		break;
	case EV_SESSION_RESUMED:
		aname = "Resume";
		snprintf(msg, sizeof(msg), "session resumed");
		break;
	case EV_SESSION_CHANGES:
		aname = "Other";
		snprintf(msg, sizeof(msg), "session's change set %s",
			 e->session ? e->session : "?");
		break;
	default:
		snprintf(msg, sizeof(msg), "bpfbox event %s", e->type);
		break;
	}
	ocsf_begin_common(w, e, &OCSF_PROCESS, activity, aname, sev, hostname, msg, false);
	jsonw_u64(w, "status_id", 1);
	jsonw_str(w, "status", "Success");
	ocsf_put_lifecycle_actor(w, e);
	jsonw_object_begin(w, "process");
	jsonw_str_opt(w, "uid", e->session);
	if (json_object_object_get_ex(e->o, "command", &cmd) &&
	    json_object_is_type(cmd, json_type_array) && json_object_array_length(cmd)) {
		const char *argv0 = json_object_get_string(json_object_array_get_idx(cmd, 0));

		jsonw_str(w, "name", ocsf_base_name(argv0 ? argv0 : "?"));
		ocsf_put_cmd_line(w, cmd);
	}
	if (e->session) {
		jsonw_object_begin(w, "session");
		jsonw_str(w, "uid", e->session);
		jsonw_end(w);
	}
	jsonw_end(w);
	if (activity == 2 && have_code)
		jsonw_i64(w, "exit_code", code);
	finish(w, e, hostname);
}

/*
 * loss and sink.error: Event Log Activity (1008) of the audit log itself, a
 * failure: events lost (Other, "Drop") or a sink that failed to export
 * (Export).
 */
void ocsf_enc_log(struct jsonw *w, const struct ev *e, const char *hostname)
{
	const char *where = json_member_str(e->o, "where"), *sink = json_member_str(e->o, "sink");
	const char *error = json_member_str(e->o, "error"),
		   *text = json_member_str(e->o, "message");
	bool loss = e->kind == EV_LOSS;
	char msg[512];
	int64_t n = 0;

	if (loss) {
		json_member_int(e->o, "count", &n);
		snprintf(msg, sizeof(msg), "%" PRId64 " events lost: %s", n, where ? where : "?");
	} else {
		snprintf(msg, sizeof(msg), "sink %s: %s", sink ? sink : "?", text ? text : "?");
	}
	ocsf_begin_common(w, e, &OCSF_EVENTLOG, loss ? 99 : 3, loss ? "Drop" : "Export", SEV_HIGH,
			  hostname, msg, false);
	jsonw_u64(w, "status_id", 2);
	jsonw_str(w, "status", "Failure");
	jsonw_str_opt(w, "status_code", error);
	jsonw_str(w, "status_detail", loss ? (where ? where : "events lost") : (text ? text : "?"));
	jsonw_str(w, "log_name", sink ? sink : "bpfbox audit");
	jsonw_str(w, "log_provider", "bpfbox");
	jsonw_u64(w, "log_type_id", 99);
	jsonw_str(w, "log_type", "bpfbox audit stream");
	if (loss && n)
		jsonw_i64(w, "count", n);
	ocsf_put_lifecycle_actor(w, e);
	finish(w, e, hostname);
}

/*
 * ceiling: a session request held to the operator's policy ceiling, as a
 * Process Activity Launch with the security_control outcome: Denied and
 * Blocked (refuse) or Modified and Corrected (clamp).
 */
void ocsf_enc_ceiling(struct jsonw *w, const struct ev *e, const char *hostname)
{
	const char *action = json_member_str(e->o, "action"),
		   *reason = json_member_str(e->o, "reason");
	bool refuse = !action || streq(action, "refuse");
	char msg[600];

	snprintf(msg, sizeof(msg), "session %s: %s", refuse ? "refused" : "clamped",
		 reason ? reason : "?");
	ocsf_begin_common(w, e, &OCSF_PROCESS, 1, "Launch", refuse ? SEV_MEDIUM : SEV_INFORMATIONAL,
			  hostname, msg, true);
	jsonw_u64(w, "action_id", refuse ? 2 : 4);
	jsonw_str(w, "action", refuse ? "Denied" : "Modified");
	jsonw_u64(w, "disposition_id", refuse ? 2 : 11);
	jsonw_str(w, "disposition", refuse ? "Blocked" : "Corrected");
	jsonw_u64(w, "status_id", refuse ? 2 : 1);
	jsonw_str(w, "status", refuse ? "Failure" : "Success");
	jsonw_str_opt(w, "status_detail", reason);
	ocsf_put_lifecycle_actor(w, e);
	jsonw_object_begin(w, "process");
	jsonw_str_opt(w, "uid", e->session);
	jsonw_end(w);
	finish(w, e, hostname);
}
