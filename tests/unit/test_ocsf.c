// SPDX-License-Identifier: GPL-2.0
/*
 * The OCSF mapping of docs/ocsf.md, one event type at a time: class,
 * activity, type_uid, category, the security_control outcome, the session
 * as actor context and (session, seq) in metadata; then the text format's
 * escaping of control bytes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "audit/ocsf.h"
#include "audit/sink.h"
#include "lib/jsonw.h"
#include "json_at.h"
#include "unit_main.h"

#define SID "0123456789abcdef0123456789abcdef"
#define HDR                                                                                        \
	"\"schema_version\":4,\"time\":\"2026-01-02T03:04:05.123456789Z\",\"session\":\"" SID "\"" \
	","

/* The OCSF object for one bpfbox line (the caller puts it). */
static struct json_object *ocsf(const char *line)
{
	struct json_object *ev = json_tokener_parse(line), *out;
	struct jsonw w = {0};

	assert_non_null(ev);
	assert_int_equal(ocsf_encode(&w, ev, "host1"), 0);
	assert_false(w.oom);
	assert_true(w.len > 0 && w.buf[w.len - 1] == '\n');
	assert_null(memchr(w.buf, '\n', w.len - 1)); /* one line */
	out = json_tokener_parse(w.buf);
	assert_non_null(out);
	json_object_put(ev);
	jsonw_free(&w);
	return out;
}

/*
 * A bpfbox line of a process event: type, seq, pid, tid, ppid, uid, comm,
 * decision, layer and errno as JSON text (NUL or Q(...)), then the rest of
 * its members (JSON text up to the closing brace).
 */
#define EV(type, seq, pid, tid, ppid, uid, comm, decision, layer, err, rest)                  \
	"{" HDR "\"type\":\"" type "\",\"seq\":" #seq ",\"pid\":" #pid ",\"tid\":" #tid       \
	",\"ppid\":" #ppid ",\"uid\":" #uid ",\"comm\":\"" comm "\",\"decision\":\"" decision \
	"\",\"layer\":" layer ",\"errno\":" err "," rest
#define NUL "null"

/* One member the OCSF object must hold: its path and JSON text (assert_json). */
struct field {
	const char *path, *json;
};

#define MAX_FIELDS 24

/*
 * One bpfbox line, the class, category and activity common() checks (class
 * 0: none) and the members its OCSF object must (or must not) hold.
 */
struct ocsf_case {
	const char *line;
	int common[3]; /* class_uid, category, activity */
	struct field f[MAX_FIELDS];
};

/* What every event has, and what every class event of ours has. */
static void common(struct json_object *o, int class_uid, int category, int activity)
{
	char cls[16], cat[16], act[16], type[16];
	const struct field f[] = {
		{"class_uid", cls},
		{"category_uid", cat},
		{"activity_id", act},
		{"type_uid", type},
		{"time", "1767323045123"}, /* 2026-01-02T03:04:05.123Z */
		{"metadata.version", Q(OCSF_VERSION)},
		{"metadata.product.vendor_name", Q("bpfbox")},
		{"metadata.product.name", Q("bpfbox")},
		{"metadata.original_time", Q("2026-01-02T03:04:05.123456789Z")},
		{"device.type_id", "0"},
		{"device.os.type_id", "200"},
	};

	snprintf(cls, sizeof(cls), "%d", class_uid);
	snprintf(cat, sizeof(cat), "%d", category);
	snprintf(act, sizeof(act), "%d", activity);
	snprintf(type, sizeof(type), "%d", class_uid * 100 + activity);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		assert_json(o, f[i].path, f[i].json);
	assert_non_null(json_at(o, "severity_id"));
	assert_non_null(json_at(o, "metadata.uid")); /* every event, with or without a session */
	assert_non_null(json_at(o, "timezone_offset"));
	assert_non_null(json_at(o, "observables"));
	if (json_at(o, "metadata.correlation_uid")) {
		assert_json(o, "metadata.correlation_uid", Q(SID));
		assert_json(o, "actor.session.uid", Q(SID));
		assert_json(o, "device.hostname", Q("host1"));
	}
}

/*
 * The outcome of an event with a decision, by the rules of docs/ocsf.md:
 * action, disposition, status from decision, layer and errno.
 */
static void outcome(struct json_object *o, const char *line)
{
	struct json_object *in = json_tokener_parse(line);
	const char *decision = json_object_get_string(json_at(in, "decision"));
	const char *layer = json_object_get_string(json_at(in, "layer"));
	const char *err = json_object_get_string(json_at(in, "errno"));
	bool deny = decision && !strcmp(decision, "deny");
	bool pending = !deny && err && !strcmp(err, "EINPROGRESS"); /* under way, not failed */
	char want[128];

	if (!decision) {
		json_object_put(in);
		return;
	}
	assert_json(o, "action_id", deny ? "2" : "1");
	assert_json(o, "action", deny ? Q("Denied") : Q("Allowed"));
	assert_json(o, "disposition_id", deny ? "2" : "1");
	assert_json(o, "disposition", deny ? Q("Blocked") : Q("Allowed"));
	assert_json(o, "status_id", !err ? "1" : pending ? "99" : "2");
	assert_json(o, "status", !err ? Q("Success") : pending ? Q("In Progress") : Q("Failure"));
	if (err) {
		snprintf(want, sizeof(want), "\"%s\"", err);
		assert_json(o, "status_code", want);
	}
	if (deny) {
		snprintf(want, sizeof(want), "\"denied by %s\"", layer);
		assert_json(o, "status_detail", want);
		assert_json(o, "severity_id", "3");
	}
	json_object_put(in);
}

/* One table of cases, ended by {NULL}: the test's state (TABLE). */
static void run_cases(void **state)
{
	const struct ocsf_case *c = *state;

	for (size_t i = 0; c[i].line; i++) {
		struct json_object *o = ocsf(c[i].line);

		if (c[i].common[0])
			common(o, c[i].common[0], c[i].common[1], c[i].common[2]);
		outcome(o, c[i].line);
		for (size_t j = 0; j < MAX_FIELDS && c[i].f[j].path; j++)
			assert_json(o, c[i].f[j].path, c[i].f[j].json);
		json_object_put(o);
	}
}

/* The cmocka test NAME that runs the table cases. */
#define TABLE(name, cases)                                   \
	{                                                    \
		name, run_cases, NULL, NULL, (void *)(cases) \
	}

static const struct ocsf_case exec_cases[] = {
	{EV("exec", 7, 100, 100, 99, 1000, "true", "allow", NUL, NUL,
	    "\"filename\":\"/bin/true\",\"argv\":[\"/bin/true\",\"a "
	    "b\",\"c\"],\"argv_truncated\":false}"),
	 {1007, 1, 1},
	 {
		 {"class_name", Q("Process Activity")},
		 {"type_name", Q("Process Activity: Launch")},
		 {"metadata.uid", Q(SID ":7")},
		 {"metadata.sequence", "7"},
		 {"metadata.event_code", Q("exec")},
		 {"process.pid", "100"},
		 {"process.parent_process.pid", "99"},
		 {"process.cmd_line", Q("/bin/true a b c")},
		 {"process.file.path", Q("/bin/true")},
		 {"process.file.name", Q("true")},
		 {"process.file.type_id", "1"},
		 {"process.user.uid", Q("1000")},
		 {"actor.process.pid", "100"},
		 {"actor.user.uid", Q("1000")},
		 {"severity_id", "1"},
		 {"metadata.profiles.1", Q("security_control")},
		 {"metadata.profiles.2", NULL}, /* two profiles */
	 }},
	{NULL},
};

static const struct ocsf_case exec_denied_cases[] = {
	{EV("exec", 3, 5, 5, 4, 0, "sh", "deny", Q("bpf-lsm"), Q("EPERM"),
	    "\"filename\":\"/usr/bin/"
	    "nc\",\"argv\":[],\"argv_truncated\":false}"),
	 {1007, 1, 1},
	 {
		 {"process.cmd_line", NULL}, /* no argv: a failed exec */
		 {"process.file.type_id", "0"},
	 }},
	{NULL},
};

static const struct ocsf_case file_cases[] = {
	{EV("file", 9, 10, 11, 1, 0, "cat", "deny", Q("landlock"), Q("EACCES"),
	    "\"path\":\"/etc/shadow\",\"flags\":0,\"count\":1}"),
	 {1001, 1, 14},
	 {
		 {"activity_name", Q("Open")},
		 {"file.path", Q("/etc/shadow")},
		 {"file.name", Q("shadow")},
		 {"file.type_id", "0"},
		 {"access_mask", "0"},
		 {"count", "1"},
		 {"actor.process.ptid", "11"}, /* tid: deprecated in OCSF 1.6 */
		 {"actor.process.tid", NULL},
		 {"actor.process.name", Q("cat")},
		 {"unmapped.layer", Q("landlock")},
		 {"message", Q("open /etc/shadow denied by landlock (EACCES)")},
	 }},
	{NULL},
};

static const struct ocsf_case connect_cases[] = {
	{EV("connect", 2, 1, 1, 0, 0, "curl", "deny", Q("cgroup-bpf"), Q("EPERM"),
	    "\"family\":\"inet\",\"address\":\"169.254.169.254\",\"port\":80}"),
	 {4001, 4, 1},
	 {
		 {"dst_endpoint.ip", Q("169.254.169.254")},
		 {"dst_endpoint.port", "80"},
		 {"connection_info.direction_id", "2"},
		 {"connection_info.protocol_ver_id", "4"},
	 }},
	{EV("connect", 2, 1, 1, 0, 0, "x", "allow", NUL, Q("EINPROGRESS"),
	    "\"family\":\"inet6\",\"address\":\"2001:db8::1\",\"port\":"
	    "443}"),
	 {0, 0, 0},
	 {
		 {"connection_info.protocol_ver_id", "6"},
	 }},
	{EV("connect", 2, 1, 1, 0, 0, "x", "allow", NUL, NUL,
	    "\"family\":\"unix\",\"path\":\"/run/x.sock\"}"),
	 {0, 0, 0},
	 {
		 {"dst_endpoint.name", Q("/run/x.sock")},
		 {"dst_endpoint.ip", NULL},
		 {"connection_info.protocol_ver_id", NULL},
	 }},
	{NULL},
};

/* The egress proxy's decisions: DNS Activity for queries, Network Activity else. */
static const struct ocsf_case net_cases[] = {
	{EV("net.deny", 3, 7, 7, 0, 0, "curl", "deny", Q("egress-proxy"), Q("ECONNREFUSED"),
	    "\"protocol\":\"dns\",\"name_from\":\"query\",\"name\":"
	    "\"evil.test\",\"address\":\"127.0.0.1\",\"port\":53,"
	    "\"rule\":\"*.test\",\"reason\":\"rebinding\",\"bytes_out\":"
	    "0,\"bytes_in\":0}"),
	 {0, 0, 0},
	 {
		 {"class_uid", "4003"},
		 {"category_uid", "4"},
		 {"type_uid", "400301"},
		 {"query.hostname", Q("evil.test")},
		 {"answers.0.rdata", Q("127.0.0.1")},
		 {"rcode_id", "5"},
		 {"unmapped.rule", Q("*.test")},
	 }},
	{EV("net.allow", 4, 7, 7, 0, 0, "curl", "allow", NUL, NUL,
	    "\"protocol\":\"tcp\",\"name_from\":\"sni\",\"name\":\"pypi.org\","
	    "\"address\":\"10.0.0.2\",\"port\":443,\"rule\":\"pypi.org:443\",\"bytes_"
	    "out\":10,\"bytes_in\":20}"),
	 {0, 0, 0},
	 {
		 {"class_uid", "4001"},
		 {"activity_id", "2"}, /* Close: counted at close */
		 {"dst_endpoint.hostname", Q("pypi.org")},
		 {"dst_endpoint.ip", Q("10.0.0.2")},
		 {"traffic.bytes_out", "10"},
		 {"traffic.bytes_in", "20"},
		 {"unmapped.name_from", Q("sni")},
	 }},
	{EV("net.deny", 5, 7, 7, 0, 0, "curl", "deny", Q("egress-proxy"), Q("ECONNREFUSED"),
	    "\"protocol\":\"proxy\",\"name_from\":\"connect\",\"name\":"
	    "\"other.test\",\"address\":null,\"port\":443,\"rule\":null,"
	    "\"reason\":\"no net_allow "
	    "rule\",\"bytes_out\":0,\"bytes_in\":0}"),
	 {0, 0, 0},
	 {
		 {"class_uid", "4001"},
		 {"activity_id", "5"}, /* Refuse */
		 {"dst_endpoint.ip", NULL},
	 }},
	{NULL},
};

static const struct ocsf_case fork_exit_cases[] = {
	{EV("fork", 4, 10, 10, 9, 0, "sh", "allow", NUL, NUL, "\"child_pid\":12}"),
	 {1007, 1, 1},
	 {
		 {"process.pid", "12"},
		 {"process.parent_process.pid", "10"},
	 }},
	{EV("exit", 5, 12, 12, 10, 0, "true", "allow", NUL, NUL, "\"exit_code\":3,\"signal\":0}"),
	 {1007, 1, 2},
	 {
		 {"exit_code", "3"},
	 }},
	{EV("exit", 5, 12, 12, 10, 0, "true", "allow", NUL, NUL,
	    "\"exit_code\":null,\"signal\":9}"),
	 {0, 0, 0},
	 {
		 {"exit_code", NULL},
		 {"unmapped.signal", "9"},
	 }},
	{NULL},
};

/* loss and sink.error: Event Log Activity (1008) failures of the audit log. */
static const struct ocsf_case log_events_cases[] = {
	{"{" HDR "\"type\":\"loss\",\"seq\":40,\"count\":12,"
	 "\"where\":\"ring buffer full\"}",
	 {1008, 1, 99},
	 {
		 {"type_uid", "100899"},
		 {"activity_name", Q("Drop")},
		 {"severity_id", "4"},
		 {"status_id", "2"},
		 {"count", "12"},
		 {"message", Q("12 events lost: ring buffer full")},
		 {"metadata.uid", Q(SID ":40")},
	 }},
	{"{\"schema_version\":4,\"type\":\"sink.error\",\"time\":\"2026-01-02T03:04:05."
	 "123456789Z\","
	 "\"host\":\"h\",\"host_id\":\"95cfac43660b474080b2affdc9f95cdc\",\"boot_id\":null,"
	 "\"session\":null,\"sink\":\"file:/x\",\"error\":\"ENOSPC\",\"message\":\"full\"}",
	 {1008, 1, 3},
	 {
		 {"activity_name", Q("Export")},
		 {"status_code", Q("ENOSPC")},
		 {"log_name", Q("file:/x")},
		 /* no session: host id, type and time name the event */
		 {"metadata.uid", Q("95cfac43660b474080b2affdc9f95cdc:sink.error:2026-01-"
				    "02T03:04:05.123456789Z")},
		 {"device.uid", Q("95cfac43660b474080b2affdc9f95cdc")},
		 {"device.hostname", Q("h")},
	 }},
	{NULL},
};

/* The session's lifecycle: Process Activity of the session's process. */
static const struct ocsf_case session_events_cases[] = {
	{"{" HDR "\"type\":\"session.start\",\"seq\":0,\"pid\":77,\"uid\":0,"
	 "\"command\":[\"/usr/bin/make\",\"test\"],\"labels\":{\"agent\":\"a1\"},"
	 "\"policy_hash\":\"sha256:00\"}",
	 {1007, 1, 1},
	 {
		 {"process.uid", Q(SID)},
		 {"process.name", Q("make")},
		 {"process.cmd_line", Q("/usr/bin/make test")},
		 {"actor.process.pid", "77"},
		 {"actor.user.name", Q("root")},
		 {"metadata.labels.0", Q("agent=a1")},
		 {"unmapped.policy_hash", Q("sha256:00")},
		 {"unmapped.labels", NULL},
	 }},
	{"{" HDR "\"type\":\"session.end\",\"seq\":41,\"exit_code\":0,\"records\":3}",
	 {1007, 1, 2},
	 {
		 {"message", Q("session ended, exit code 0")},
		 {"exit_code", "0"},
	 }},
	{"{" HDR "\"type\":\"session.paused\",\"reason\":\"oom\"}",
	 {1007, 1, 99},
	 {
		 {"activity_name", Q("Suspend")},
	 }},
	{NULL},
};

static void test_not_events(void **state)
{
	struct jsonw w = {0};
	struct json_object *a = json_tokener_parse("[1,2]"), *b = json_tokener_parse("{\"x\":1}");

	(void)state;
	assert_int_equal(ocsf_encode(&w, a, "h"), -EINVAL);
	assert_int_equal(ocsf_encode(&w, b, "h"), -EINVAL);
	assert_int_equal(ocsf_encode(&w, NULL, "h"), -EINVAL);
	assert_int_equal(w.len, 0);
	json_object_put(a);
	json_object_put(b);
	jsonw_free(&w);
}

/* Text for a terminal: ESC, other controls and C1 never reach it raw. */
/* A refused change: File System Activity's activity of its op, the op in the message. */
static void test_file_ops(void **state)
{
	static const struct {
		const char *op, *activity;
		int id;
	} ops[] = {
		{"chown", "Set Security", 7},
		{"chmod", "Set Security", 7},
		{"removexattr", "Set Attributes", 6},
		{"unlink", "Delete", 4},
		{"frob", "Other", 99}, /* an op of a newer producer */
	};
	char line[512], want[128];

	(void)state;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct json_object *o;

		snprintf(line, sizeof(line),
			 EV("file", 3, 10, 10, 1, 0, "x", "deny", Q("mount"), Q("EROFS"),
			    "\"path\":\"/etc/x\",\"flags\":0,\"count\":1,\"op\":\"%s\"}"),
			 ops[i].op);
		o = ocsf(line);
		snprintf(want, sizeof(want), "%d", 100100 + ops[i].id);
		assert_json(o, "type_uid", want);
		snprintf(want, sizeof(want), "\"%s\"", ops[i].activity);
		assert_json(o, "activity_name", want);
		snprintf(want, sizeof(want), "\"%s /etc/x denied by mount (EROFS)\"", ops[i].op);
		assert_json(o, "message", want);
		snprintf(want, sizeof(want), "\"%s\"", ops[i].op);
		assert_json(o, "unmapped.op", want);
		json_object_put(o);
	}
}

static void test_text_escapes(void **state)
{
	struct json_object *ev = json_tokener_parse(
		"{" HDR "\"type\":\"file\",\"seq\":1,\"pid\":2,\"tid\":2,\"ppid\":1,\"uid\":0,"
		"\"comm\":\"x\",\"decision\":\"deny\",\"layer\":\"landlock\",\"errno\":\"EACCES\","
		"\"path\":\"/tmp/\\u001b[31mred\\n\\u009b\\\\x\",\"flags\":1,\"count\":1}");
	struct jsonw w = {0};

	(void)state;
	assert_non_null(ev);
	assert_int_equal(sink_format_event(SINK_FMT_TEXT, -1, ev, "h", &w), 0);
	assert_string_equal(w.buf,
			    "2026-01-02T03:04:05.123Z 01234567 #1 file deny(landlock,EACCES) "
			    "pid=2 /tmp/\\x1b[31mred\\x0a\\u009b\\\\x flags=1 count=1\n");
	json_object_put(ev);
	jsonw_free(&w);
}

UNIT_MAIN(TABLE("test_exec", exec_cases), TABLE("test_exec_denied", exec_denied_cases),
	  TABLE("test_file", file_cases), TABLE("test_connect", connect_cases),
	  TABLE("test_net", net_cases), TABLE("test_fork_exit", fork_exit_cases),
	  TABLE("test_log_events", log_events_cases),
	  TABLE("test_session_events", session_events_cases), cmocka_unit_test(test_not_events),
	  cmocka_unit_test(test_file_ops), cmocka_unit_test(test_text_escapes))
