// SPDX-License-Identifier: GPL-2.0
/*
 * Command rules (userspace/policy/rules.c): layering, parsing errors, the
 * decision for one exec and the table compiled for bpf/cmd.bpf.c. The
 * kernel side is exercised by tests/host/test_cmdrules.sh.
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
#include <cmocka.h>
#include <json-c/json.h>

#include "policy/policy.h"
#include "policy/rules.h"
#include "agent/ask.h"
#include "unit_main.h"

static int merge(struct bpfbox_policy *p, const char *json, const char *origin,
		 struct policy_error *err)
{
	struct json_object *o = json_tokener_parse(json);
	int r;

	assert_non_null(o);
	memset(err, 0, sizeof(*err));
	r = policy_merge_layer(p, o, origin, err);
	json_object_put(o);
	return r;
}

static struct rules_verdict check(const struct bpfbox_policy *p, const char *path, ...)
{
	char *argv[16];
	struct rules_verdict v;
	va_list ap;
	size_t n = 0;

	va_start(ap, path);
	while (n < 15 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	rules_check(p, path, argv, &v);
	return v;
}

static void test_defaults(void **state)
{
	struct bpfbox_policy p;
	struct rules_verdict v;

	(void)state;
	policy_init(&p);
	assert_int_equal(p.deny_commands.n, rules_n_default_deny);
	assert_true(strv_contains(&p.deny_commands, "rm -rf /"));
	assert_true(strv_contains(&p.deny_commands, ":(){:|:&};:"));
	assert_true(strv_contains(&p.deny_commands, "curl | sh"));
	assert_true(rules_any(&p));
	v = check(&p, "/bin/sh", "sh", "-c", "dd if=/dev/zero of=x", NULL);
	assert_int_equal(v.action, CMD_DENY);
	assert_string_equal(v.rule, "deny_commands: dd if=");
	/* argv is joined with single spaces: the pattern spans arguments */
	v = check(&p, "/bin/rm", "rm", "-rf", "/", NULL);
	assert_int_equal(v.action, CMD_DENY);
	v = check(&p, "/bin/ls", "ls", "-l", NULL);
	assert_int_equal(v.action, CMD_ALLOW);
	assert_false(v.matched);
	policy_free(&p);
}

static void test_layers(void **state)
{
	struct bpfbox_policy p;
	struct policy_error err;

	(void)state;
	policy_init(&p);
	assert_int_equal(merge(&p,
			       "{\"extra\": {\"commands\": [{\"exe\": \"git\", "
			       "\"argv\": "
			       "\"push\", \"action\": \"ask\"}]}}",
			       "g.json:sandbox", &err),
			 0);
	assert_int_equal(merge(&p,
			       "{\"extra\": {\"commands\": [{\"exe\": \"git\", "
			       "\"action\": "
			       "\"allow\"}], \"deny_commands\": [\"npm publish\"]}}",
			       "task:t.json", &err),
			 0);
	/* extra appends: the lower layer's rule stays first */
	assert_int_equal(p.cmd_rules.n, 2);
	assert_string_equal(p.cmd_rules.v[0].argv, "push");
	assert_int_equal(p.cmd_rules.v[0].action, CMD_ASK);
	assert_string_equal(p.cmd_rules.v[0].origin, "g.json:sandbox");
	assert_int_equal(p.cmd_rules.v[1].action, CMD_ALLOW);
	assert_int_equal(p.deny_commands.n, rules_n_default_deny + 1);
	/* a task, a mode layer or the flags cannot replace either list */
	assert_int_equal(merge(&p, "{\"restrictions\": {\"commands\": []}}", "flags", &err),
			 -EINVAL);
	assert_string_equal(err.path, "restrictions.commands");
	assert_int_equal(merge(&p, "{\"restrictions\": {\"deny_commands\": []}}",
			       "g.json:modes.read-only", &err),
			 -EINVAL);
	assert_int_equal(p.cmd_rules.n, 2);
	/* the operator can */
	assert_int_equal(merge(&p,
			       "{\"restrictions\": {\"commands\": [], "
			       "\"deny_commands\": []}}",
			       "g.json:agents.a", &err),
			 0);
	assert_int_equal(p.cmd_rules.n, 0);
	assert_false(rules_any(&p));
	policy_free(&p);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *json, *path, *msg;
	} cases[] = {
		{"[{\"exe\": \"git\"}]", "extra.commands[0].action", "missing"},
		{"[{\"exe\": \"git\", \"action\": \"maybe\"}]", "extra.commands[0].action",
		 "unknown action"},
		{"[{\"action\": \"deny\"}]", "extra.commands[0]", "matches nothing"},
		{"[{\"exe\": \"g*t\", \"action\": \"deny\"}]", "extra.commands[0].exe",
		 "'*' may only end"},
		{"[{\"exe\": \"bin/git\", \"action\": \"deny\"}]", "extra.commands[0].exe",
		 "absolute path"},
		{"[{\"exe\": \"git\", \"action\": \"deny\", \"name\": \"x\"}]",
		 "extra.commands[0].name", "unknown key"},
		{"[{\"argv\": \"\", \"action\": \"deny\"}]", "extra.commands[0].argv", "empty"},
		{"[\"git\"]", "extra.commands[0]", "must be an object"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bpfbox_policy p;
		struct policy_error err;
		char json[512];

		snprintf(json, sizeof(json), "{\"extra\": {\"commands\": %s}}", cases[i].json);
		policy_init(&p);
		assert_int_equal(merge(&p, json, "task:t.json", &err), -EINVAL);
		assert_string_equal(err.path, cases[i].path);
		assert_non_null(strstr(err.message, cases[i].msg));
		assert_int_equal(p.cmd_rules.n, 0);
		policy_free(&p);
	}
}

static void test_first_match(void **state)
{
	struct bpfbox_policy p;
	struct policy_error err;
	struct rules_verdict v;

	(void)state;
	policy_init(&p);
	assert_int_equal(merge(&p,
			       "{\"extra\": {\"commands\": ["
			       "{\"exe\": \"git\", \"argv\": \"push --force\", "
			       "\"action\": \"deny\"},"
			       "{\"exe\": \"git\", \"argv\": \"push\", \"action\": "
			       "\"ask\"},"
			       "{\"exe\": \"/usr/bin/py*\", \"action\": \"deny\"},"
			       "{\"exe\": \"*\", \"argv\": \"--allow-me\", \"action\": "
			       "\"allow\"},"
			       "{\"exe\": \"node*\", \"action\": \"deny\"}]}}",
			       "task:t.json", &err),
			 0);
	v = check(&p, "/usr/bin/git", "git", "push", "--force", "origin", NULL);
	assert_int_equal(v.action, CMD_DENY);
	assert_string_equal(v.rule, "commands[0] exe=git argv=push --force");
	v = check(&p, "/usr/bin/git", "git", "push", "origin", NULL);
	assert_int_equal(v.action, CMD_ASK);
	assert_string_equal(v.rule, "commands[1] exe=git argv=push");
	v = check(&p, "/usr/bin/git", "git", "status", NULL);
	assert_int_equal(v.action, CMD_ALLOW);
	assert_false(v.matched);
	/* a path prefix: the path the exec named */
	v = check(&p, "/usr/bin/python3", "python3", NULL);
	assert_int_equal(v.action, CMD_DENY);
	v = check(&p, "/opt/python3", "python3", NULL);
	assert_int_equal(v.action, CMD_ALLOW);
	/* an allow that matches first wins over a later deny */
	v = check(&p, "/opt/node", "node", "--allow-me", NULL);
	assert_int_equal(v.action, CMD_ALLOW);
	assert_true(v.matched);
	v = check(&p, "/opt/nodejs", "nodejs", NULL);
	assert_int_equal(v.action, CMD_DENY);
	policy_free(&p);
}

static void test_compile(void **state)
{
	struct bpfbox_policy p;
	struct policy_error err;
	struct bpfbox_cmd_table *t = calloc(1, sizeof(*t));
	char json[8192];
	size_t len;

	(void)state;
	assert_non_null(t);
	policy_init(&p);
	assert_int_equal(merge(&p,
			       "{\"extra\": {\"commands\": ["
			       "{\"exe\": \"git\", \"argv\": \"push\", \"action\": "
			       "\"ask\"},"
			       "{\"exe\": \"/usr/bin/*\", \"action\": \"allow\"},"
			       "{\"exe\": \"/bin/sh\", \"action\": \"deny\"}]}}",
			       "task:t.json", &err),
			 0);
	assert_int_equal(rules_compile(&p, t), 0);
	assert_int_equal(t->n, rules_n_default_deny + 3);
	/* the patterns first, in order, then the rules */
	assert_int_equal(t->r[0].exe_kind, BPFBOX_CMD_EXE_ANY);
	assert_int_equal(t->r[0].pat_len, strlen(rules_default_deny[0]));
	assert_memory_equal(t->r[0].pat, rules_default_deny[0], t->r[0].pat_len);
	assert_int_equal(t->r[0].action, BPFBOX_CMD_DENY);
	len = rules_n_default_deny;
	assert_int_equal(t->r[len].exe_kind, BPFBOX_CMD_EXE_NAME);
	assert_true(t->r[len].exe_hash == rules_hash("git", 3));
	assert_int_equal(t->r[len].action, BPFBOX_CMD_ASK);
	assert_string_equal(t->r[len].label, "commands[0] exe=git argv=push");
	assert_int_equal(t->r[len + 1].exe_kind, BPFBOX_CMD_EXE_PATH_PREFIX);
	assert_int_equal(t->r[len + 1].exe_len, strlen("/usr/bin/"));
	assert_int_equal(t->r[len + 2].exe_kind, BPFBOX_CMD_EXE_PATH);
	assert_true(t->r[len + 2].exe_hash == rules_hash("/bin/sh", 7));
	/* more rules than the kernel's table holds: refused, not cut */
	len = snprintf(json, sizeof(json), "{\"extra\": {\"deny_commands\": [");
	for (int i = 0; i < BPFBOX_CMD_RULES_MAX; i++)
		len += snprintf(json + len, sizeof(json) - len, "%s\"p%d\"", i ? "," : "", i);
	snprintf(json + len, sizeof(json) - len, "]}}");
	assert_int_equal(merge(&p, json, "task:t.json", &err), 0);
	assert_int_equal(rules_compile(&p, t), -E2BIG);
	policy_free(&p);
	free(t);
}

/* The top-level lookup: a bare name is found on PATH as execvp would. */
static void test_command_lookup(void **state)
{
	struct bpfbox_policy p;
	struct policy_error err;
	struct rules_verdict v;
	char *argv[] = {"sh", "-c", "true", NULL};

	(void)state;
	policy_init(&p);
	assert_int_equal(merge(&p,
			       "{\"extra\": {\"commands\": [{\"exe\": "
			       "\"/nonexistent/sh\", "
			       "\"action\": \"deny\"}]}}",
			       "task:t.json", &err),
			 0);
	setenv("PATH", "/nonexistent-dir:/bin", 1);
	rules_check_command(&p, argv, &v);
	assert_int_equal(v.action, CMD_ALLOW);
	cmd_rules_clear(&p.cmd_rules);
	assert_int_equal(merge(&p,
			       "{\"extra\": {\"commands\": [{\"exe\": \"/bin/sh\", "
			       "\"action\": \"deny\"}]}}",
			       "task:t.json", &err),
			 0);
	rules_check_command(&p, argv, &v);
	assert_int_equal(v.action, CMD_DENY);
	policy_free(&p);
}

/* The runtime's answers (agent/ask.c), over a real pipe. */
static void test_ask_answers(void **state)
{
	struct ask a = {.fd = -1};
	enum ask_answer ans = ASK_TIMEOUT;
	int p[2];

	(void)state;
	assert_int_equal(ask_parse("12 approve", 12, &ans), 0);
	assert_int_equal(ans, ASK_APPROVE);
	assert_int_equal(ask_parse("always", 12, &ans), 0);
	assert_int_equal(ans, ASK_ALWAYS);
	assert_int_equal(ask_parse(" 12 deny ", 12, &ans), 0);
	assert_int_equal(ans, ASK_DENY);
	assert_int_equal(ask_parse("11 approve", 12, &ans), -ESTALE);
	assert_int_equal(ask_parse("12 maybe", 12, &ans), -EINVAL);
	assert_int_equal(ask_parse("12 approve now", 12, &ans), -EINVAL);
	assert_int_equal(ask_parse("", 12, &ans), -EINVAL);

	assert_int_equal(pipe(p), 0);
	a.fd = p[0];
	/* an answer to an earlier question is skipped */
	assert_int_equal(write(p[1], "5 deny\n3 approve\n", 17), 17);
	assert_int_equal(ask_wait(&a, 3, 1000), ASK_APPROVE);
	/* nothing written: the bound holds */
	assert_int_equal(ask_wait(&a, 4, 50), ASK_TIMEOUT);
	/* a line split over two writes */
	assert_int_equal(write(p[1], "4 alw", 5), 5);
	assert_int_equal(write(p[1], "ays\n", 4), 4);
	assert_int_equal(ask_wait(&a, 4, 1000), ASK_ALWAYS);
	/* the runtime went away: nobody will answer */
	close(p[1]);
	assert_int_equal(ask_wait(&a, 6, 1000), ASK_DENY);
	close(p[0]);
	assert_string_equal(ask_answer_name(ASK_TIMEOUT), "timeout");
}

UNIT_MAIN(cmocka_unit_test(test_defaults), cmocka_unit_test(test_layers),
	  cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_first_match),
	  cmocka_unit_test(test_compile), cmocka_unit_test(test_command_lookup),
	  cmocka_unit_test(test_ask_answers))
