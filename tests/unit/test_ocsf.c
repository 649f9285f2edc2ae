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
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "audit/ocsf.h"
#include "audit/sink.h"
#include "lib/jsonw.h"

#define SID "0123456789abcdef0123456789abcdef"
#define HDR                                                                                        \
	"\"schema_version\":2,\"time\":\"2026-01-02T03:04:05.123456789Z\",\"session\":\"" SID "\"" \
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

/* A member by dotted path ("actor.session.uid"). */
static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(o, k, &o))
			return NULL;
	return o;
}

static int64_t num(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	if (!v)
		fail_msg("no %s in %s", path, json_object_to_json_string(o));
	assert_true(json_object_is_type(v, json_type_int));
	return json_object_get_int64(v);
}

static const char *str(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	if (!v)
		fail_msg("no %s in %s", path, json_object_to_json_string(o));
	assert_true(json_object_is_type(v, json_type_string));
	return json_object_get_string(v);
}

/* What every event has, and what every class event of ours has. */
static void common(struct json_object *o, int class_uid, int category, int activity)
{
	assert_int_equal(num(o, "class_uid"), class_uid);
	assert_int_equal(num(o, "category_uid"), category);
	assert_int_equal(num(o, "activity_id"), activity);
	assert_int_equal(num(o, "type_uid"), class_uid * 100 + activity);
	assert_int_equal(num(o, "time"), 1767323045123LL); /* 2026-01-02T03:04:05.123Z */
	assert_string_equal(str(o, "metadata.version"), OCSF_VERSION);
	assert_string_equal(str(o, "metadata.product.vendor_name"), "bpfbox");
	assert_string_equal(str(o, "metadata.product.name"), "bpfbox");
	assert_string_equal(str(o, "metadata.original_time"), "2026-01-02T03:04:05.123456789Z");
	assert_non_null(at(o, "severity_id"));
	assert_non_null(at(o, "metadata.uid")); /* every event, with or without a session */
	assert_int_equal(num(o, "device.type_id"), 0);
	assert_int_equal(num(o, "device.os.type_id"), 200);
	assert_non_null(at(o, "timezone_offset"));
	assert_non_null(at(o, "observables"));
	if (at(o, "metadata.correlation_uid")) {
		assert_string_equal(str(o, "metadata.correlation_uid"), SID);
		assert_string_equal(str(o, "actor.session.uid"), SID);
		assert_string_equal(str(o, "device.hostname"), "host1");
	}
}

static void test_exec(void **state)
{
	struct json_object *o =
		ocsf("{" HDR
		     "\"type\":\"exec\",\"seq\":7,\"pid\":100,\"tid\":100,\"ppid\":99,\"uid\":1000,"
		     "\"comm\":\"true\",\"decision\":\"allow\",\"layer\":null,\"errno\":null,"
		     "\"filename\":\"/bin/true\",\"argv\":[\"/bin/true\",\"a "
		     "b\",\"c\"],\"argv_truncated\":false}");

	(void)state;
	common(o, 1007, 1, 1);
	assert_string_equal(str(o, "class_name"), "Process Activity");
	assert_string_equal(str(o, "type_name"), "Process Activity: Launch");
	assert_string_equal(str(o, "metadata.uid"), SID ":7");
	assert_int_equal(num(o, "metadata.sequence"), 7);
	assert_string_equal(str(o, "metadata.event_code"), "exec");
	assert_int_equal(num(o, "process.pid"), 100);
	assert_int_equal(num(o, "process.parent_process.pid"), 99);
	assert_string_equal(str(o, "process.cmd_line"), "/bin/true a b c");
	assert_string_equal(str(o, "process.file.path"), "/bin/true");
	assert_string_equal(str(o, "process.file.name"), "true");
	assert_int_equal(num(o, "process.file.type_id"), 1);
	assert_string_equal(str(o, "process.user.uid"), "1000");
	assert_int_equal(num(o, "actor.process.pid"), 100);
	assert_string_equal(str(o, "actor.user.uid"), "1000");
	assert_int_equal(num(o, "action_id"), 1);
	assert_int_equal(num(o, "disposition_id"), 1);
	assert_int_equal(num(o, "status_id"), 1);
	assert_int_equal(num(o, "severity_id"), 1);
	assert_int_equal(json_object_array_length(at(o, "metadata.profiles")), 2);
	assert_string_equal(
		json_object_get_string(json_object_array_get_idx(at(o, "metadata.profiles"), 1)),
		"security_control");
	json_object_put(o);
}

static void test_exec_denied(void **state)
{
	struct json_object *o = ocsf(
		"{" HDR "\"type\":\"exec\",\"seq\":3,\"pid\":5,\"tid\":5,\"ppid\":4,\"uid\":0,"
		"\"comm\":\"sh\",\"decision\":\"deny\",\"layer\":\"bpf-lsm\",\"errno\":\"EPERM\","
		"\"filename\":\"/usr/bin/nc\",\"argv\":[],\"argv_truncated\":false}");

	(void)state;
	common(o, 1007, 1, 1);
	assert_int_equal(num(o, "action_id"), 2);
	assert_string_equal(str(o, "action"), "Denied");
	assert_int_equal(num(o, "disposition_id"), 2);
	assert_string_equal(str(o, "disposition"), "Blocked");
	assert_int_equal(num(o, "status_id"), 2);
	assert_string_equal(str(o, "status_code"), "EPERM");
	assert_string_equal(str(o, "status_detail"), "denied by bpf-lsm");
	assert_int_equal(num(o, "severity_id"), 3);
	assert_null(at(o, "process.cmd_line")); /* no argv: a failed exec */
	assert_int_equal(num(o, "process.file.type_id"), 0);
	json_object_put(o);
}

static void test_file(void **state)
{
	struct json_object *o = ocsf(
		"{" HDR "\"type\":\"file\",\"seq\":9,\"pid\":10,\"tid\":11,\"ppid\":1,\"uid\":0,"
		"\"comm\":\"cat\",\"decision\":\"deny\",\"layer\":\"landlock\",\"errno\":"
		"\"EACCES\","
		"\"path\":\"/etc/shadow\",\"flags\":0,\"count\":1}");

	(void)state;
	common(o, 1001, 1, 14);
	assert_string_equal(str(o, "activity_name"), "Open");
	assert_string_equal(str(o, "file.path"), "/etc/shadow");
	assert_string_equal(str(o, "file.name"), "shadow");
	assert_int_equal(num(o, "file.type_id"), 0);
	assert_int_equal(num(o, "access_mask"), 0);
	assert_int_equal(num(o, "count"), 1);
	assert_int_equal(num(o, "disposition_id"), 2);
	assert_int_equal(num(o, "actor.process.ptid"), 11); /* tid: deprecated in OCSF 1.6 */
	assert_null(at(o, "actor.process.tid"));
	assert_string_equal(str(o, "actor.process.name"), "cat");
	assert_string_equal(str(o, "unmapped.layer"), "landlock");
	assert_string_equal(str(o, "message"), "open /etc/shadow denied by landlock (EACCES)");
	json_object_put(o);
}

static void test_connect(void **state)
{
	struct json_object *o = ocsf(
		"{" HDR "\"type\":\"connect\",\"seq\":2,\"pid\":1,\"tid\":1,\"ppid\":0,\"uid\":0,"
		"\"comm\":\"curl\",\"decision\":\"deny\",\"layer\":\"cgroup-bpf\",\"errno\":"
		"\"EPERM\","
		"\"family\":\"inet\",\"address\":\"169.254.169.254\",\"port\":80}");

	(void)state;
	common(o, 4001, 4, 1);
	assert_string_equal(str(o, "dst_endpoint.ip"), "169.254.169.254");
	assert_int_equal(num(o, "dst_endpoint.port"), 80);
	assert_int_equal(num(o, "connection_info.direction_id"), 2);
	assert_int_equal(num(o, "connection_info.protocol_ver_id"), 4);
	assert_int_equal(num(o, "disposition_id"), 2);
	json_object_put(o);

	o = ocsf("{" HDR "\"type\":\"connect\",\"seq\":2,\"pid\":1,\"tid\":1,\"ppid\":0,\"uid\":0,"
		 "\"comm\":\"x\",\"decision\":\"allow\",\"layer\":null,\"errno\":\"EINPROGRESS\","
		 "\"family\":\"inet6\",\"address\":\"2001:db8::1\",\"port\":443}");
	assert_int_equal(num(o, "connection_info.protocol_ver_id"), 6);
	assert_int_equal(num(o, "disposition_id"), 1);
	assert_int_equal(num(o, "status_id"), 99); /* EINPROGRESS: under way, not a failure */
	assert_string_equal(str(o, "status"), "In Progress");
	json_object_put(o);

	o = ocsf("{" HDR "\"type\":\"connect\",\"seq\":2,\"pid\":1,\"tid\":1,\"ppid\":0,\"uid\":0,"
		 "\"comm\":\"x\",\"decision\":\"allow\",\"layer\":null,\"errno\":null,"
		 "\"family\":\"unix\",\"path\":\"/run/x.sock\"}");
	assert_string_equal(str(o, "dst_endpoint.name"), "/run/x.sock");
	assert_null(at(o, "dst_endpoint.ip"));
	assert_null(at(o, "connection_info.protocol_ver_id"));
	json_object_put(o);
}

/* The egress proxy's decisions: DNS Activity for queries, Network Activity else. */
static void test_net(void **state)
{
	struct json_object *o = ocsf(
		"{" HDR "\"type\":\"net.deny\",\"seq\":3,\"pid\":7,\"tid\":7,\"ppid\":0,\"uid\":0,"
		"\"comm\":\"curl\",\"decision\":\"deny\",\"layer\":\"egress-proxy\","
		"\"errno\":\"ECONNREFUSED\",\"protocol\":\"dns\",\"name_from\":\"query\","
		"\"name\":\"evil.test\",\"address\":\"127.0.0.1\",\"port\":53,\"rule\":\"*.test\","
		"\"reason\":\"rebinding\",\"bytes_out\":0,\"bytes_in\":0}");

	(void)state;
	assert_int_equal(num(o, "class_uid"), 4003);
	assert_int_equal(num(o, "category_uid"), 4);
	assert_int_equal(num(o, "type_uid"), 400301);
	assert_string_equal(str(o, "query.hostname"), "evil.test");
	assert_string_equal(json_object_get_string(json_object_object_get(
				    json_object_array_get_idx(at(o, "answers"), 0), "rdata")),
			    "127.0.0.1");
	assert_int_equal(num(o, "rcode_id"), 5);
	assert_int_equal(num(o, "disposition_id"), 2);
	assert_string_equal(str(o, "unmapped.rule"), "*.test");
	json_object_put(o);

	o = ocsf("{" HDR "\"type\":\"net.allow\",\"seq\":4,\"pid\":7,\"tid\":7,\"ppid\":0,"
		 "\"uid\":0,\"comm\":\"curl\",\"decision\":\"allow\",\"layer\":null,\"errno\":null,"
		 "\"protocol\":\"tcp\",\"name_from\":\"sni\",\"name\":\"pypi.org\","
		 "\"address\":\"10.0.0.2\",\"port\":443,\"rule\":\"pypi.org:443\",\"bytes_out\":10,"
		 "\"bytes_in\":20}");
	assert_int_equal(num(o, "class_uid"), 4001);
	assert_int_equal(num(o, "activity_id"), 2); /* Close: counted at close */
	assert_string_equal(str(o, "dst_endpoint.hostname"), "pypi.org");
	assert_string_equal(str(o, "dst_endpoint.ip"), "10.0.0.2");
	assert_int_equal(num(o, "traffic.bytes_out"), 10);
	assert_int_equal(num(o, "traffic.bytes_in"), 20);
	assert_int_equal(num(o, "disposition_id"), 1);
	assert_string_equal(str(o, "unmapped.name_from"), "sni");
	json_object_put(o);

	o = ocsf("{" HDR "\"type\":\"net.deny\",\"seq\":5,\"pid\":7,\"tid\":7,\"ppid\":0,"
		 "\"uid\":0,\"comm\":\"curl\",\"decision\":\"deny\",\"layer\":\"egress-proxy\","
		 "\"errno\":\"ECONNREFUSED\",\"protocol\":\"proxy\",\"name_from\":\"connect\","
		 "\"name\":\"other.test\",\"address\":null,\"port\":443,\"rule\":null,"
		 "\"reason\":\"no net_allow rule\",\"bytes_out\":0,\"bytes_in\":0}");
	assert_int_equal(num(o, "class_uid"), 4001);
	assert_int_equal(num(o, "activity_id"), 5); /* Refuse */
	assert_null(at(o, "dst_endpoint.ip"));
	json_object_put(o);
}

static void test_fork_exit(void **state)
{
	struct json_object *o = ocsf(
		"{" HDR "\"type\":\"fork\",\"seq\":4,\"pid\":10,\"tid\":10,\"ppid\":9,\"uid\":0,"
		"\"comm\":\"sh\",\"decision\":\"allow\",\"layer\":null,\"errno\":null,\"child_"
		"pid\":12}");

	(void)state;
	common(o, 1007, 1, 1);
	assert_int_equal(num(o, "process.pid"), 12);
	assert_int_equal(num(o, "process.parent_process.pid"), 10);
	json_object_put(o);
	o = ocsf("{" HDR "\"type\":\"exit\",\"seq\":5,\"pid\":12,\"tid\":12,\"ppid\":10,\"uid\":0,"
		 "\"comm\":\"true\",\"decision\":\"allow\",\"layer\":null,\"errno\":null,"
		 "\"exit_code\":3,\"signal\":0}");
	common(o, 1007, 1, 2);
	assert_int_equal(num(o, "exit_code"), 3);
	json_object_put(o);
	o = ocsf("{" HDR "\"type\":\"exit\",\"seq\":5,\"pid\":12,\"tid\":12,\"ppid\":10,\"uid\":0,"
		 "\"comm\":\"true\",\"decision\":\"allow\",\"layer\":null,\"errno\":null,"
		 "\"exit_code\":null,\"signal\":9}");
	assert_null(at(o, "exit_code"));
	assert_int_equal(num(o, "unmapped.signal"), 9);
	json_object_put(o);
}

/* loss and sink.error: Event Log Activity (1008) failures of the audit log. */
static void test_log_events(void **state)
{
	struct json_object *o = ocsf("{" HDR "\"type\":\"loss\",\"seq\":40,\"count\":12,"
				     "\"where\":\"ring buffer full\"}");

	(void)state;
	common(o, 1008, 1, 99);
	assert_int_equal(num(o, "type_uid"), 100899);
	assert_string_equal(str(o, "activity_name"), "Drop");
	assert_int_equal(num(o, "severity_id"), 4);
	assert_int_equal(num(o, "status_id"), 2);
	assert_int_equal(num(o, "count"), 12);
	assert_string_equal(str(o, "message"), "12 events lost: ring buffer full");
	assert_string_equal(str(o, "metadata.uid"), SID ":40");
	json_object_put(o);
	o = ocsf(
		"{\"schema_version\":2,\"type\":\"sink.error\",\"time\":\"2026-01-02T03:04:05."
		"123456789Z\","
		"\"host\":\"h\",\"host_id\":\"95cfac43660b474080b2affdc9f95cdc\",\"boot_id\":null,"
		"\"session\":null,\"sink\":\"file:/x\",\"error\":\"ENOSPC\",\"message\":\"full\"}");
	common(o, 1008, 1, 3);
	assert_string_equal(str(o, "activity_name"), "Export");
	assert_string_equal(str(o, "status_code"), "ENOSPC");
	assert_string_equal(str(o, "log_name"), "file:/x");
	/* no session: host id, type and time name the event */
	assert_string_equal(
		str(o, "metadata.uid"),
		"95cfac43660b474080b2affdc9f95cdc:sink.error:2026-01-02T03:04:05.123456789Z");
	assert_string_equal(str(o, "device.uid"), "95cfac43660b474080b2affdc9f95cdc");
	assert_string_equal(str(o, "device.hostname"), "h");
	json_object_put(o);
}

/* The session's lifecycle: Process Activity of the session's process. */
static void test_session_events(void **state)
{
	struct json_object *o =
		ocsf("{" HDR "\"type\":\"session.start\",\"seq\":0,\"pid\":77,\"uid\":0,"
		     "\"command\":[\"/usr/bin/make\",\"test\"],\"labels\":{\"agent\":\"a1\"},"
		     "\"policy_hash\":\"sha256:00\"}");

	(void)state;
	common(o, 1007, 1, 1);
	assert_string_equal(str(o, "process.uid"), SID);
	assert_string_equal(str(o, "process.name"), "make");
	assert_string_equal(str(o, "process.cmd_line"), "/usr/bin/make test");
	assert_int_equal(num(o, "actor.process.pid"), 77);
	assert_string_equal(str(o, "actor.user.name"), "root");
	assert_string_equal(
		json_object_get_string(json_object_array_get_idx(at(o, "metadata.labels"), 0)),
		"agent=a1");
	assert_string_equal(str(o, "unmapped.policy_hash"), "sha256:00");
	assert_null(at(o, "unmapped.labels"));
	json_object_put(o);
	o = ocsf("{" HDR "\"type\":\"session.end\",\"seq\":41,\"exit_code\":0,\"records\":3}");
	common(o, 1007, 1, 2);
	assert_string_equal(str(o, "message"), "session ended, exit code 0");
	assert_int_equal(num(o, "exit_code"), 0);
	json_object_put(o);
	o = ocsf("{" HDR "\"type\":\"session.paused\",\"reason\":\"oom\"}");
	common(o, 1007, 1, 99);
	assert_string_equal(str(o, "activity_name"), "Suspend");
	json_object_put(o);
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec),	   cmocka_unit_test(test_exec_denied),
		cmocka_unit_test(test_file),	   cmocka_unit_test(test_connect),
		cmocka_unit_test(test_net),	   cmocka_unit_test(test_fork_exit),
		cmocka_unit_test(test_log_events), cmocka_unit_test(test_session_events),
		cmocka_unit_test(test_not_events), cmocka_unit_test(test_text_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
