// SPDX-License-Identifier: GPL-2.0
/*
 * The event model's one list (audit/event.h, lib/names.h) against itself
 * and against schema/events.schema.json: every kind's name parses back to
 * it, every type of the schema is a kind and every kind a schema type, the
 * layer and file-op names are the schema's; the encoder's kinds and the
 * lifecycle builders' lines and numbering; the one RFC 3339 formatter.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "audit/encode.h"
#include "audit/event.h"
#include "audit/lifecycle.h"
#include "bpfbox/events.h"
#include "lib/jsonw.h"
#include "lib/names.h"
#include "lib/util.h"
#include "unit_main.h"

#define SID "0123456789abcdef0123456789abcdef"

/*
 * The schema: $BPFBOX_SCHEMA, else schema/ of the tree this test was built
 * from (the source path, from the tree's root; else two up from the binary,
 * BUILD/tests/).
 */
static struct json_object *schema(void)
{
	const char *env = getenv("BPFBOX_SCHEMA"), *me = __FILE__, *cut = strstr(me, "tests/unit/");
	char path[4096], exe[4000];
	struct json_object *s;
	ssize_t n;

	if (env)
		snprintf(path, sizeof(path), "%s", env);
	else
		snprintf(path, sizeof(path), "%.*sschema/events.schema.json",
			 cut ? (int)(cut - me) : 0, me);
	if (!env && access(path, R_OK) < 0 &&
	    (n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = 0;
		snprintf(path, sizeof(path), "%s/../../schema/events.schema.json", dirname(exe));
	}
	s = json_object_from_file(path);
	if (!s)
		fail_msg(
			"cannot read the schema %s (run from the source tree or set BPFBOX_SCHEMA)",
			path);
	return s;
}

static struct json_object *at(struct json_object *o, const char *const *keys)
{
	for (; *keys; keys++)
		if (!json_object_object_get_ex(o, *keys, &o))
			fail_msg("the schema has no %s", *keys);
	return o;
}

static bool in_array(struct json_object *a, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(a, i));

		if (v &&
		    json_object_get_type(json_object_array_get_idx(a, i)) == json_type_string &&
		    streq(v, name))
			return true;
	}
	return false;
}

static void test_kind_names_round_trip(void **state)
{
	const char *list = ev_kind_list();

	(void)state;
	for (int k = 0; k < EV_KINDS; k++) {
		const char *name = ev_kind_name(k);

		assert_non_null(name);
		assert_int_equal(ev_kind_parse(name), k);
		assert_non_null(strstr(list, name));
		for (int j = 0; j < k; j++)
			assert_string_not_equal(ev_kind_name(j), name);
	}
	assert_null(ev_kind_name(-1));
	assert_null(ev_kind_name(EV_KINDS));
	assert_int_equal(ev_kind_parse("session"), -EINVAL);
	assert_int_equal(ev_kind_parse("exec "), -EINVAL);
	assert_int_equal(ev_kind_parse(NULL), -EINVAL);
	/* The bit order of the filters people have configured stays put. */
	assert_int_equal(EV_SESSION_START, 0);
	assert_int_equal(EV_NET_DENY, 15);
	assert_true(EV_KINDS <= 32);
}

static void test_schema_types_are_kinds(void **state)
{
	static const char *const type_enum[] = {"properties", "type", "enum", NULL};
	struct json_object *s = schema(), *types = at(s, type_enum), *defs, *oneof;
	static const char *const defs_path[] = {"$defs", NULL};
	static const char *const oneof_path[] = {"oneOf", NULL};

	(void)state;
	for (size_t i = 0; i < json_object_array_length(types); i++) {
		const char *t = json_object_get_string(json_object_array_get_idx(types, i));

		if (ev_kind_parse(t) < 0)
			fail_msg("the schema's type %s is no kind of audit/event.h", t);
	}
	for (int k = 0; k < EV_KINDS; k++)
		if (!in_array(types, ev_kind_name(k)))
			fail_msg("the kind %s is no type of the schema", ev_kind_name(k));
	/* Each type has its definition, referenced by oneOf ("net" holds both net.*). */
	defs = at(s, defs_path);
	oneof = at(s, oneof_path);
	for (int k = 0; k < EV_KINDS; k++) {
		const char *name = startswith(ev_kind_name(k), "net.") ? "net" : ev_kind_name(k);
		char ref[64];
		bool found = false;

		assert_true(json_object_object_get_ex(defs, name, NULL));
		snprintf(ref, sizeof(ref), "#/$defs/%s", name);
		for (size_t i = 0; i < json_object_array_length(oneof); i++) {
			struct json_object *r;

			if (json_object_object_get_ex(json_object_array_get_idx(oneof, i), "$ref",
						      &r) &&
			    streq(json_object_get_string(r), ref))
				found = true;
		}
		if (!found)
			fail_msg("oneOf has no %s", ref);
	}
	json_object_put(s);
}

static void test_layer_and_op_names(void **state)
{
	static const char *const layer_enum[] = {"$defs", "layer", "enum", NULL};
	static const char *const op_enum[] = {"$defs", "file", "properties", "op", "enum", NULL};
	struct json_object *s = schema(), *layers = at(s, layer_enum), *ops = at(s, op_enum);
	int named = 0;

	(void)state;
	assert_null(bpfbox_layer_name(BPFBOX_LAYER_NONE));
	for (unsigned int l = 0; l < 64; l++) {
		const char *name = bpfbox_layer_name(l);

		if (!name)
			continue;
		named++;
		assert_int_equal(bpfbox_layer_parse(name), (int)l);
		if (!in_array(layers, name))
			fail_msg("the layer %s is not in the schema's layer enum", name);
	}
	/* Every non-null layer of the schema has its name, spelled one way. */
	assert_int_equal(named, (int)json_object_array_length(layers) - 1);
	assert_string_equal(bpfbox_layer_name(BPFBOX_LAYER_BPF_LSM), "bpf-lsm");
	assert_string_equal(bpfbox_layer_name(BPFBOX_LAYER_CGROUP_BPF), "cgroup-bpf");
	assert_int_equal(bpfbox_layer_parse("bpf_lsm"), -1);
	for (unsigned int op = BPFBOX_FILE_UNLINK; bpfbox_file_op_name(op); op++)
		if (!in_array(ops, bpfbox_file_op_name(op)))
			fail_msg("the file op %s is not in the schema", bpfbox_file_op_name(op));
	assert_string_equal(bpfbox_file_op_name(BPFBOX_FILE_OPEN), "open");
	json_object_put(s);
}

/* The "type" of the one JSON line in w. */
static void assert_type(const struct jsonw *w, const char *want)
{
	struct json_object *o = json_tokener_parse(w->buf), *t;

	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "type", &t));
	assert_string_equal(json_object_get_string(t), want);
	json_object_put(o);
}

static void test_records_get_their_kind(void **state)
{
	struct audit_clock c = {0};
	struct bpfbox_net_event net = {.hdr = {.type = BPFBOX_EV_NET, .ts_ns = 1}};
	struct bpfbox_file_event file = {.hdr = {.type = BPFBOX_EV_FILE,
						 .ts_ns = 7000000000ULL,
						 .decision = BPFBOX_DENY,
						 .layer = BPFBOX_LAYER_BPF_LSM,
						 .err = -13}};
	struct audit_event ev = {0};
	struct jsonw w = {0};

	(void)state;
	audit_clock_init(&c);
	assert_int_equal(audit_encode_record(&w, &c, &file, sizeof(file), SID, &ev), EV_FILE);
	assert_int_equal(ev.kind, EV_FILE);
	assert_int_equal(ev.decision, AUDIT_DECISION_DENY);
	assert_int_equal(ev.time_ns, 7000000000LL + c.mono_to_real_ns);
	assert_type(&w, "file");
	assert_non_null(strstr(w.buf, "\"layer\":\"bpf-lsm\""));
	jsonw_reset(&w);
	assert_int_equal(audit_encode_record(&w, &c, &net, sizeof(net), SID, NULL), EV_NET_ALLOW);
	assert_type(&w, "net.allow");
	jsonw_reset(&w);
	net.hdr.decision = BPFBOX_DENY;
	assert_int_equal(audit_encode_record(&w, &c, &net, sizeof(net), SID, NULL), EV_NET_DENY);
	assert_type(&w, "net.deny");
	jsonw_reset(&w);
	assert_int_equal(audit_encode_record(&w, &c, &net, sizeof(net) - 1, SID, NULL), -EINVAL);
	net.hdr.type = 99;
	assert_int_equal(audit_encode_record(&w, &c, &net, sizeof(net), SID, NULL), -EINVAL);
	assert_int_equal(w.len, 0);
	jsonw_free(&w);
}

struct got {
	int n;
	enum ev_kind kind[4];
	struct json_object *line[4];
};

static void collect(void *ctx, const struct audit_event *ev)
{
	struct got *g = ctx;

	assert_true(g->n < 4);
	assert_true(ev->len > 0 && ev->line[ev->len - 1] == '\n');
	assert_null(memchr(ev->line, '\n', ev->len - 1));
	g->kind[g->n] = ev->kind;
	g->line[g->n++] = json_tokener_parse(ev->line);
}

static int64_t member(struct json_object *o, const char *key)
{
	struct json_object *v;

	assert_true(json_object_object_get_ex(o, key, &v));
	return json_object_get_int64(v);
}

static void test_session_end_lines(void **state)
{
	struct audit_end_info end = {.session = SID,
				     .seq = 11,
				     .ts_ns = now_ns(),
				     .has_exit = true,
				     .exit_code = 3,
				     .lost = 2,
				     .suppressed = 4,
				     .exec_not_found = 7,
				     .reason = "processes exited"};
	struct audit_clock c;
	struct got g = {0};
	struct jsonw w = {0};

	(void)state;
	audit_clock_init(&c);
	audit_session_end(&w, &c, &end, collect, &g);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.kind[0], EV_LOSS);
	assert_int_equal(g.kind[1], EV_SESSION_END);
	/* Records 1..10: 2 lost and 4 suppressed, 4 written; the loss line takes 11. */
	assert_int_equal(member(g.line[0], "seq"), 11);
	assert_int_equal(member(g.line[0], "count"), 2);
	assert_int_equal(member(g.line[1], "seq"), 12);
	assert_int_equal(member(g.line[1], "records"), 4);
	assert_int_equal(member(g.line[1], "exit_code"), 3);
	/* Execs not found along PATH: a count of their own, no seq, not in records. */
	assert_int_equal(member(g.line[1], "exec_not_found"), 7);
	for (int i = 0; i < g.n; i++)
		json_object_put(g.line[i]);

	/* Nothing lost: session.end alone, with the number it was given, no reason. */
	memset(&g, 0, sizeof(g));
	end.lost = 0;
	end.reason = NULL;
	audit_session_end(&w, &c, &end, collect, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.kind[0], EV_SESSION_END);
	assert_int_equal(member(g.line[0], "seq"), 11);
	assert_int_equal(member(g.line[0], "records"), 6);
	assert_false(json_object_object_get_ex(g.line[0], "reason", NULL));
	json_object_put(g.line[0]);
	jsonw_free(&w);
}

static void test_session_start_line(void **state)
{
	char *argv[] = {"curl", "-H", "Authorization: Bearer abcdefghijklmnop", NULL};
	struct audit_start_info in = {
		.session = SID,
		.ts_ns = now_ns(),
		.pid = 42,
		.mode = "daemon",
		.level_requested = "Full",
		.level_enabled = "Standard",
		.layers = {.landlock_abi = 6, .seccomp = true},
		.not_enforced = {"", "bpf_lsm: not loaded"},
		.n_not_enforced = 2,
		.command = argv,
		.redact_command = true,
		.labels_json = "{\"tool\":\"x\"}",
		.policy_json = "{\"mode\":\"read-only\"}",
	};
	struct audit_clock c;
	struct jsonw w = {0};
	struct json_object *o, *v;

	(void)state;
	audit_clock_init(&c);
	audit_session_start(&w, &c, &in);
	assert_false(w.oom);
	assert_type(&w, "session.start");
	o = json_tokener_parse(w.buf);
	assert_non_null(o);
	assert_int_equal(member(o, "seq"), 0);
	assert_false(json_object_object_get_ex(o, "uid", NULL));
	assert_true(json_object_object_get_ex(o, "not_enforced", &v));
	assert_int_equal(json_object_array_length(v), 1); /* the empty one is left out */
	assert_true(json_object_object_get_ex(o, "command", &v));
	assert_null(strstr(json_object_to_json_string(v), "abcdefghijklmnop"));
	assert_true(json_object_object_get_ex(o, "policy_hash", &v));
	assert_true(startswith(json_object_get_string(v), "sha256:"));
	json_object_put(o);
	jsonw_free(&w);
}

static void test_rfc3339(void **state)
{
	/* 2026-01-02T03:04:05.123456789Z */
	int64_t t = 1767323045LL * 1000000000LL + 123456789;
	char buf[RFC3339_MAX];

	(void)state;
	assert_int_equal(rfc3339(buf, sizeof(buf), t, 9), 30);
	assert_string_equal(buf, "2026-01-02T03:04:05.123456789Z");
	rfc3339(buf, sizeof(buf), t, 6);
	assert_string_equal(buf, "2026-01-02T03:04:05.123456Z");
	rfc3339(buf, sizeof(buf), t, 3);
	assert_string_equal(buf, "2026-01-02T03:04:05.123Z");
	rfc3339(buf, sizeof(buf), t, 0);
	assert_string_equal(buf, "2026-01-02T03:04:05Z");
	rfc3339(buf, 8, t, 9); /* cut, still a string */
	assert_int_equal(strlen(buf), 7);
}

static void test_rfc3339_parse(void **state)
{
	int64_t t = 1767323045LL * 1000000000LL + 123456789, got = 0;
	char buf[RFC3339_MAX];

	(void)state;
	for (unsigned int d = 0; d <= 9; d += 3) {
		size_t n = rfc3339(buf, sizeof(buf), t, d);

		assert_int_equal(rfc3339_parse(buf, n, &got), 0);
		assert_int_equal(got / 1000000000LL, t / 1000000000LL);
		assert_true(got <= t && t - got < 1000000000LL);
	}
	assert_int_equal(got, t);
	assert_int_equal(rfc3339_parse("2026-01-02T03:04:05", 19, &got), -EINVAL);
	assert_int_equal(rfc3339_parse("2026-01-02 03:04:05Z", 20, &got), -EINVAL);
	assert_int_equal(rfc3339_parse("2026-01-02T03:04:05.1x3Z", 24, &got), -EINVAL);
}

/* A line that came as text (a relayed subscription) gets its kind from its type. */
static void test_event_parse(void **state)
{
	static const char deny[] = "{\"schema_version\":2,\"type\":\"connect\",\"time\":\"2026-01-"
				   "02T03:04:05.000000007Z\","
				   "\"decision\":\"deny\"}\n";
	static const char start[] = "{\"type\":\"session.start\",\"time\":\"bad\"}";
	static const char allow[] = "{\"type\":\"file\",\"decision\":\"allow\"}";
	struct audit_event ev;

	(void)state;
	assert_int_equal(audit_event_parse(&ev, deny, strlen(deny)), 0);
	assert_int_equal(ev.kind, EV_CONNECT);
	assert_int_equal(ev.decision, AUDIT_DECISION_DENY);
	assert_int_equal(ev.time_ns, 1767323045LL * 1000000000LL + 7);
	assert_ptr_equal(ev.line, deny);
	assert_int_equal(audit_event_parse(&ev, allow, strlen(allow)), 0);
	assert_int_equal(ev.decision, AUDIT_DECISION_ALLOW);
	assert_int_equal(audit_event_parse(&ev, start, strlen(start)), 0);
	assert_int_equal(ev.kind, EV_SESSION_START);
	assert_int_equal(ev.decision, AUDIT_DECISION_NONE);
	assert_int_equal(ev.time_ns, 0); /* unreadable: now */
	assert_int_equal(audit_event_parse(&ev, "{\"type\":\"nope\"}", 15), -EINVAL);
	assert_int_equal(audit_event_parse(&ev, "{\"type\":", 8), -EINVAL);
	assert_int_equal(audit_event_parse(&ev, "", 0), -EINVAL);
}

UNIT_MAIN(cmocka_unit_test(test_kind_names_round_trip),
	  cmocka_unit_test(test_schema_types_are_kinds), cmocka_unit_test(test_layer_and_op_names),
	  cmocka_unit_test(test_records_get_their_kind), cmocka_unit_test(test_session_end_lines),
	  cmocka_unit_test(test_session_start_line), cmocka_unit_test(test_rfc3339),
	  cmocka_unit_test(test_rfc3339_parse), cmocka_unit_test(test_event_parse))
