// SPDX-License-Identifier: GPL-2.0
/*
 * The policy layers: defaults, merge rules, errors with their JSON path,
 * the deny-list protection, the layer order of policy_load, path expansion
 * and validation. Runs in a scratch directory under /tmp (the cwd of the
 * whole group) and never reads /etc/bpfbox/config.json unless a test says so.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <libgen.h>

#include "policy/policy.h"
#include "json_at.h"
#include "scratch.h"
#include "skip.h"
#include "unit_main.h"

static char tmp[PATH_MAX]; /* the scratch dir, symlinks resolved */
static char oldcwd[PATH_MAX];
static char *old_home;

/* ---- fixtures ---- */

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(name, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* tmp/rel into buf; tmp itself for "" */
static const char *in_tmp(char *buf, size_t size, const char *rel)
{
	int n = snprintf(buf, size, "%s%s%s", tmp, rel[0] ? "/" : "", rel);

	assert_true(n > 0 && (size_t)n < size);
	return buf;
}

static int group_setup(void **state)
{
	char dir[] = "/tmp/bpfbox-policy-test.XXXXXX";
	const char *home = getenv("HOME");

	(void)state;
	if (!getcwd(oldcwd, sizeof(oldcwd)) || !mkdtemp(dir) || !realpath(dir, tmp) ||
	    chdir(tmp) < 0)
		return -1;
	if (mkdir("ws", 0755) < 0 || mkdir("ws/sub", 0755) < 0 || mkdir("ro", 0755) < 0 ||
	    mkdir("rw", 0755) < 0 || mkdir("home", 0755) < 0 || mkdir("d$x", 0755) < 0 ||
	    symlink("ws", "link") < 0)
		return -1;
	write_file("empty.json", "{}\n");
	write_file("file.txt", "not a directory\n");
	old_home = home ? strdup(home) : NULL;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (chdir(oldcwd) < 0)
		return -1;
	scratch_remove(tmp);
	free(old_home);
	return 0;
}

/* After each test: the environment as it was. */
static int reset_env(void **state)
{
	(void)state;
	if (old_home)
		setenv("HOME", old_home, 1);
	else
		unsetenv("HOME");
	unsetenv("BPFBOX_T_DIR");
	unsetenv("BPFBOX_T_EMPTY");
	return 0;
}

static int merge(struct bpfbox_policy *p, const char *json, const char *origin,
		 struct policy_error *err)
{
	struct json_object *o = json_tokener_parse(json);
	int r;

	assert_non_null(o);
	r = policy_merge_layer(p, o, origin, err);
	json_object_put(o);
	return r;
}

/*
 * All limits of p as policy_to_json writes them: the keys and units of the
 * config ("timeout_s"), in one JSON text.
 */
static void assert_limits(const struct bpfbox_policy *p, const char *want)
{
	struct json_object *o = policy_to_json(p);

	assert_non_null(o);
	assert_json(o, "limits", want);
	json_object_put(o);
}

/* A layer that must merge: on an error, fails with its message. */
static void merge_ok(struct bpfbox_policy *p, const char *json, const char *origin)
{
	struct policy_error err = {0};

	if (merge(p, json, origin, &err))
		fail_msg("%s: %s: %s", json, err.path, err.message);
}

struct srcs {
	const char *global; /* NULL: empty.json */
	const char *agent;
	const char *task;
	const char *flags; /* JSON text */
	const char *const *files;
};

static int load(struct bpfbox_policy *p, const struct srcs *s, struct policy_error *err)
{
	struct json_object *flags = NULL;
	struct policy_sources src = {
		.global_file = s->global ? s->global : "empty.json",
		.agent = s->agent,
		.task_file = s->task,
		.files = s->files,
	};
	int r;

	if (s->flags) {
		flags = json_tokener_parse(s->flags);
		assert_non_null(flags);
	}
	src.flags = flags;
	r = policy_load(p, &src, err);
	json_object_put(flags);
	return r;
}

static const char *last_origin(const struct bpfbox_policy *p)
{
	assert_true(p->origins.n > 0);
	return p->origins.v[p->origins.n - 1];
}

#define assert_err(err, want_file, want_path, want_msg)                                \
	do {                                                                           \
		assert_string_equal((err)->file, want_file);                           \
		assert_string_equal((err)->path, want_path);                           \
		if (!strstr((err)->message, want_msg))                                 \
			fail_msg("message '%s' lacks '%s'", (err)->message, want_msg); \
	} while (0)

/* v holds exactly the strings given, in order: assert_strv(&p.env, "A=1", "B=2"). */
#define assert_strv(v, ...) assert_strv_(v, ##__VA_ARGS__, NULL)
static void assert_strv_(const struct strv *v, ...)
{
	const char *want;
	size_t n = 0;
	va_list ap;

	va_start(ap, v);
	while ((want = va_arg(ap, const char *))) {
		if (n >= v->n)
			fail_msg("%zu entries; want '%s' at %zu", v->n, want, n);
		assert_string_equal(v->v[n++], want);
	}
	va_end(ap);
	assert_int_equal(v->n, n);
}

/*
 * load() of case label, which must return rc; an error must name file
 * (unless NULL), JSON path and a message containing msg. Frees nothing.
 */
static int load_expect(struct bpfbox_policy *p, const struct srcs *s, const char *label, int rc,
		       const char *file, const char *path, const char *msg)
{
	struct policy_error err = {0};
	int r = load(p, s, &err);

	if (r != rc)
		fail_msg("%s: rc %d, want %d (%s: %s)", label, r, rc, err.path, err.message);
	if (r < 0 && file)
		assert_err(&err, file, path, msg);
	return r;
}

/* ---- defaults and helpers ---- */

/*
 * docs/config.md of the tree this test was built in: two up from the
 * binary (BUILD/tests/), else from the directory the test started in.
 */
static FILE *open_doc(char *path, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = NULL;

	if (n > 0) {
		exe[n] = '\0';
		snprintf(path, size, "%s/../../docs/config.md", dirname(exe));
		f = fopen(path, "r");
	}
	if (!f) {
		snprintf(path, size, "%s/docs/config.md", oldcwd);
		f = fopen(path, "r");
	}
	if (!f)
		fail_msg("cannot read %s: the test compares the defaults with it", path);
	return f;
}

/* The patterns of the block after "The default list:" in docs/config.md, in order. */
static void documented_deny(struct strv *out)
{
	char path[PATH_MAX + 32], line[512], *save = NULL;
	FILE *f = open_doc(path, sizeof(path));
	int fences = -1; /* -1: before the heading; then the ``` lines passed */

	while (fences < 2 && fgets(line, sizeof(line), f)) {
		if (fences < 0)
			fences = strcmp(line, "The default list:\n") ? -1 : 0;
		else if (!strncmp(line, "```", 3))
			fences++;
		else if (fences == 1)
			for (char *w = strtok_r(line, " \n", &save); w;
			     w = strtok_r(NULL, " \n", &save))
				assert_int_equal(strv_push(out, w), 0);
	}
	fclose(f);
	if (fences < 2 || out->n == 0)
		fail_msg("%s: no default list block", path);
}

static void test_defaults(void **state)
{
	static const char *const required[] = {
		"/etc/shadow",	     "**/.ssh",	  "**/.aws",
		"**/.config/gcloud", "**/.gnupg", "**/.docker/config.json",
	};
	struct strv doc = {0};
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	assert_int_equal(p.mode, MODE_WORKSPACE_WRITE);
	assert_int_equal(p.net, NET_DENY);
	assert_true(p.private_tmp);
	assert_false(p.allow_unconfined);
	assert_null(p.workspace);
	assert_null(p.user);
	assert_limits(&p, "{\"timeout_s\":120,\"output_bytes\":1048576,\"memory_mb\":2048,"
			  "\"pids\":1024,\"cpu_percent\":100,\"disk_mb\":1024,\"file_size_mb\":50,"
			  "\"open_files\":1024,\"pause_timeout_s\":60,\"timeout_counts\":\"wall\","
			  "\"on_oom\":\"pause\",\"on_disk\":\"pause\"}");
	/* The credential patterns are the documented ones, in the documented order. */
	documented_deny(&doc);
	assert_int_equal(p.deny_paths.n, doc.n);
	for (size_t i = 0; i < doc.n; i++)
		assert_string_equal(p.deny_paths.v[i], doc.v[i]);
	assert_null(p.deny_paths.v[p.deny_paths.n]);
	/* Among them the credential files the product requires, whatever the docs say. */
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!strv_contains(&p.deny_paths, required[i]))
			fail_msg("no default deny pattern %s", required[i]);
	strv_clear(&doc);
	assert_int_equal(p.ro_paths.n, 0);
	assert_int_equal(p.rw_paths.n, 0);
	assert_int_equal(p.env.n, 0);
	assert_int_equal(p.origins.n, 1);
	assert_string_equal(p.origins.v[0], "defaults");
	policy_free(&p);
	policy_free(&p); /* harmless twice */
}

/* A module is not a key file: the last extension decides, and only that. */
static void test_source_name(void **state)
{
	(void)state;
	assert_true(policy_source_name("secrets.py"));
	assert_true(policy_source_name("secrets.cpython-311.pyc"));
	assert_true(policy_source_name("credentials.js"));
	assert_true(policy_source_name("credentials.d.ts"));
	assert_false(policy_source_name("secrets.json"));
	assert_false(policy_source_name("secrets.sh"));
	assert_false(policy_source_name("credentials.py.bak"));
	assert_false(policy_source_name(".py"));
	assert_false(policy_source_name("secrets."));
	assert_false(policy_source_name("secrets"));
	assert_false(policy_source_name(NULL));
}

/* The CA bundles packages install: public files, by their last two components only. */
static void test_public_file(void **state)
{
	static const char *const yes[] = {
		"/w/.venv/lib/python3.11/site-packages/pip/_vendor/certifi/cacert.pem",
		"/w/node_modules/x/certifi/cacert.pem",
		"/w/venv/lib/python3.12/site-packages/botocore/cacert.pem",
		"/w/site-packages/grpc/_cython/_credentials/roots.pem",
	};
	static const char *const no[] = {
		"/w/cacert.pem",	  "/w/certifi/key.pem",
		"/w/xcertifi/cacert.pem", "/w/certifi/cacert.pem.bak",
		"certifi/cacert.pem",	  "/w/certifi/cacert.pe",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!policy_public_file(yes[i], strlen(yes[i])))
			fail_msg("%s: not public", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (policy_public_file(no[i], strlen(no[i])))
			fail_msg("%s: taken for public", no[i]);
}

static void test_strv(void **state)
{
	struct strv s = {0};

	(void)state;
	assert_false(strv_contains(&s, "a"));
	assert_int_equal(strv_push(&s, "a"), 0);
	assert_int_equal(strv_push(&s, "b"), 0);
	assert_int_equal(strv_push(&s, NULL), -EINVAL);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[0], "a");
	assert_string_equal(s.v[1], "b");
	assert_null(s.v[2]);
	assert_true(strv_contains(&s, "b"));
	assert_false(strv_contains(&s, "c"));
	strv_clear(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.v);
}

static void test_mode_names(void **state)
{
	static const struct {
		const char *name;
		int rc;
		enum sandbox_mode mode;
	} cases[] = {
		{"workspace-write", 0, MODE_WORKSPACE_WRITE},
		{"read-only", 0, MODE_READ_ONLY},
		{"full-access", 0, MODE_FULL_ACCESS},
		{"Full-Access", -EINVAL, 0},
		{"readonly", -EINVAL, 0},
		{"", -EINVAL, 0},
		{NULL, -EINVAL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum sandbox_mode m = 99;

		assert_int_equal(sandbox_mode_parse(cases[i].name, &m), cases[i].rc);
		if (cases[i].rc == 0) {
			assert_int_equal(m, cases[i].mode);
			assert_string_equal(sandbox_mode_name(m), cases[i].name);
		}
	}
}

static void test_error_format(void **state)
{
	struct policy_error e = {
		.file = "f.json", .path = "agents.a.limits.pids", .message = "must be at least 4"};
	char buf[512];

	(void)state;
	assert_string_equal(policy_error_format(&e, buf, sizeof(buf)),
			    "f.json: at agents.a.limits.pids: must be at least 4");
	e.path[0] = '\0';
	assert_string_equal(policy_error_format(&e, buf, sizeof(buf)),
			    "f.json: must be at least 4");
}

/* ---- one layer ---- */

static void test_merge_scalars(void **state)
{
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	merge_ok(&p,
		 "{\"mode\": \"read-only\", \"workspace\": \"/w\","
		 " \"network\": \"allow\", \"user\": \"nobody\","
		 " \"allow_unconfined\": true,"
		 " \"private_tmp\": false}",
		 "flags");
	assert_int_equal(p.mode, MODE_READ_ONLY);
	assert_string_equal(p.workspace, "/w");
	assert_int_equal(p.net, NET_ALLOW);
	assert_string_equal(p.user, "nobody");
	assert_true(p.allow_unconfined);
	assert_false(p.private_tmp);

	/* absent keys inherit, present ones replace, user null resets */
	merge_ok(&p, "{\"user\": null, \"network\": \"deny\"}", "task:t.json");
	assert_int_equal(p.mode, MODE_READ_ONLY);
	assert_string_equal(p.workspace, "/w");
	assert_int_equal(p.net, NET_DENY);
	assert_null(p.user);
	assert_true(p.allow_unconfined);
	assert_int_equal(p.origins.n, 3);
	assert_string_equal(p.origins.v[1], "flags");
	assert_string_equal(p.origins.v[2], "task:t.json");
	policy_free(&p);
}

static void test_merge_limits(void **state)
{
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	merge_ok(&p,
		 "{\"limits\": {\"timeout_s\": 5, \"output_bytes\": 0,"
		 " \"memory_mb\": 16, \"pids\": 4,"
		 " \"cpu_percent\": 250, \"disk_mb\": 1,"
		 " \"file_size_mb\": 1, \"open_files\": 16}}",
		 "flags");
	assert_limits(&p, "{\"timeout_s\":5,\"output_bytes\":0,\"memory_mb\":16,\"pids\":4,"
			  "\"cpu_percent\":250,\"disk_mb\":1,\"file_size_mb\":1,\"open_files\":16,"
			  "\"pause_timeout_s\":60,\"timeout_counts\":\"wall\",\"on_oom\":\"pause\","
			  "\"on_disk\":\"pause\"}");
	/* only the keys given change */
	merge_ok(&p, "{\"limits\": {\"timeout_s\": 0}}", "flags");
	assert_int_equal(p.limits.timeout_ms, 0);
	assert_int_equal(p.limits.pids, 4);
	policy_free(&p);
}

/* Units in limits (issue 18): durations, sizes, MB sizes, choices. */
static void test_merge_limit_units(void **state)
{
	struct policy_error err;
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	assert_int_equal(p.limits.pause_timeout_ms, POLICY_PAUSE_TIMEOUT_S * 1000);
	assert_int_equal(p.limits.timeout_counts, TIMEOUT_COUNTS_WALL);
	merge_ok(&p,
		 "{\"limits\": {\"timeout_s\": \"5s\", \"output_bytes\": \"64K\","
		 " \"memory_mb\": \"2G\", \"disk_mb\": \"512M\","
		 " \"file_size_mb\": \"1MiB\", \"pause_timeout_s\": \"1500ms\","
		 " \"timeout_counts\": \"running\", \"on_oom\": \"kill\"}}",
		 "flags");
	assert_int_equal(p.limits.timeout_ms, 5000);
	assert_int_equal(p.limits.output_bytes, 65536);
	assert_int_equal(p.limits.memory_mb, 2048);
	assert_int_equal(p.limits.disk_mb, 512);
	assert_int_equal(p.limits.file_size_mb, 1);
	assert_int_equal(p.limits.pause_timeout_ms, 1500);
	assert_int_equal(p.limits.timeout_counts, TIMEOUT_COUNTS_RUNNING);
	assert_int_equal(p.limits.on_oom, ON_LIMIT_KILL);
	assert_int_equal(p.limits.on_disk, ON_LIMIT_PAUSE);
	merge_ok(&p, "{\"limits\": {\"timeout_s\": \"2m\"}}", "flags");
	assert_int_equal(p.limits.timeout_ms, 120000);
	/* Refused: junk units, under the minimum, a unit on a plain count, a bad choice. */
	assert_int_equal(merge(&p, "{\"limits\": {\"timeout_s\": \"5x\"}}", "flags", &err),
			 -EINVAL);
	assert_string_equal(err.path, "limits.timeout_s");
	assert_int_equal(merge(&p, "{\"limits\": {\"memory_mb\": \"1M\"}}", "flags", &err),
			 -EINVAL);
	assert_int_equal(merge(&p, "{\"limits\": {\"pids\": \"5K\"}}", "flags", &err), -EINVAL);
	assert_int_equal(merge(&p, "{\"limits\": {\"on_disk\": \"wait\"}}", "flags", &err),
			 -EINVAL);
	assert_int_equal(merge(&p, "{\"limits\": {\"pause_timeout_s\": 0}}", "flags", &err),
			 -EINVAL);
	assert_int_equal(p.limits.memory_mb, 2048);
	policy_free(&p);
}

static void test_restrictions_then_extra(void **state)
{
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	merge_ok(&p,
		 "{\"extra\": {\"ro\": [\"/a\", \"/b\"],"
		 " \"rw\": [\"/r\"]}}",
		 "g.json:sandbox");
	/* extra appends without duplicates */
	merge_ok(&p, "{\"extra\": {\"ro\": [\"/b\", \"/c\", \"/c\"]}}", "task:t.json");
	assert_strv(&p.ro_paths, "/a", "/b", "/c");
	/* restrictions replaces, and applies before extra whatever the order */
	merge_ok(&p,
		 "{\"extra\": {\"ro\": [\"/y\", \"/x\"]},"
		 " \"restrictions\": {\"ro\": [\"/x\"]}}",
		 "task:t.json");
	assert_strv(&p.ro_paths, "/x", "/y");
	/* other lists untouched; an empty restrictions list empties */
	assert_strv(&p.rw_paths, "/r");
	merge_ok(&p, "{\"restrictions\": {\"rw\": []}}", "flags");
	assert_strv(&p.rw_paths);
	assert_strv(&p.ro_paths, "/x", "/y");
	policy_free(&p);
}

static void test_env(void **state)
{
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	merge_ok(&p,
		 "{\"extra\": {\"env\": {\"A\": \"1\","
		 " \"B\": \"x=y\"}}}",
		 "g.json:sandbox");
	merge_ok(&p,
		 "{\"extra\": {\"env\": {\"A\": \"3\","
		 " \"C\": \"\"}}}",
		 "task:t.json");
	assert_strv(&p.env, "A=3", "B=x=y", "C=");
	merge_ok(&p,
		 "{\"extra\": {\"env\": {\"E\": \"5\"}},"
		 " \"restrictions\": {\"env\": {\"D\": \"4\"}}}",
		 "flags");
	assert_strv(&p.env, "D=4", "E=5");
	policy_free(&p);
}

static void test_deny_list_protection(void **state)
{
	static const struct {
		const char *origin;
		int rc;
		const char *file, *path;
	} cases[] = {
		{"g.json:sandbox", 0, NULL, NULL},
		{"g.json:agents.claude", 0, NULL, NULL},
		{"g.json:modes.read-only", -EINVAL, "g.json", "modes.read-only.restrictions.deny"},
		{"task:/t/task.json", -EINVAL, "/t/task.json", "restrictions.deny"},
		{"file:more.json", -EINVAL, "more.json", "restrictions.deny"},
		{"flags", -EINVAL, "command line", "restrictions.deny"},
		{"something else", -EINVAL, "something else", "restrictions.deny"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy_error err = {0};
		struct bpfbox_policy p;
		int r;

		policy_init(&p);
		r = merge(&p, "{\"restrictions\": {\"deny\": [\"/x\"]}}", cases[i].origin, &err);
		assert_int_equal(r, cases[i].rc);
		if (r == 0) {
			assert_strv(&p.deny_paths, "/x");
		} else {
			assert_err(&err, cases[i].file, cases[i].path,
				   "deny list can only be replaced in the global "
				   "or agent config; use extra.deny");
			/* the credential patterns are still there */
			assert_true(strv_contains(&p.deny_paths, "**/.ssh"));
		}
		policy_free(&p);
	}
}

static void test_extra_deny_appends(void **state)
{
	struct bpfbox_policy p;
	size_t n;

	(void)state;
	policy_init(&p);
	n = p.deny_paths.n;
	merge_ok(&p,
		 "{\"extra\": {\"deny\": [\"**/*.secret\","
		 " \"**/.ssh\"]}}",
		 "task:t.json");
	assert_int_equal(p.deny_paths.n, n + 1);
	assert_string_equal(p.deny_paths.v[n], "**/*.secret");
	/* the agent may drop them all */
	merge_ok(&p, "{\"restrictions\": {\"deny\": []}}", "g.json:agents.x");
	assert_int_equal(p.deny_paths.n, 0);
	policy_free(&p);
}

static void test_deny_patterns(void **state)
{
	static char long_ok[257], long_bad[258];
	static const char *const good[] = {"/etc/shadow",      "/srv/secret.txt", "**/.env",
					   "**/*.pem",	       "**/*.tar.gz",	  "**/.env.*",
					   "**/credentials.*", "**/.kube/config", long_ok};
	static const char *const bad[] = {
		"",	     long_bad,	 "relative/path", ".env",	    "*/x",
		"**/",	     "**/*",	 "**/*.",	  "**/.*",	    "**/a*b",
		"**/*.pem*", "**/a/b/c", "**/a/*.pem",	  "**/..",	    "**/**/x",
		"/",	     "/etc/",	 "/etc//shadow",  "/etc/../shadow", "/etc/./shadow",
		"/home/*/x"};
	const size_t n_good = sizeof(good) / sizeof(good[0]);

	(void)state;
	long_ok[0] = long_bad[0] = '/';
	memset(long_ok + 1, 'a', 254);	/* 255 bytes */
	memset(long_bad + 1, 'a', 255); /* 256 bytes */
	for (size_t i = 0; i < n_good + sizeof(bad) / sizeof(bad[0]); i++) {
		const char *pat = i < n_good ? good[i] : bad[i - n_good];
		struct policy_error err = {0};
		struct bpfbox_policy p;
		char json[512];
		int r;

		snprintf(json, sizeof(json), "{\"extra\": {\"deny\": [\"/ok\", \"%s\"]}}", pat);
		policy_init(&p);
		r = merge(&p, json, "task:t.json", &err);
		if ((i < n_good) != (r == 0))
			fail_msg("pattern '%s': rc %d (%s)", pat, r, err.message);
		if (r == 0) {
			assert_true(strv_contains(&p.deny_paths, pat));
		} else {
			assert_int_equal(r, -EINVAL);
			assert_err(&err, "t.json", "extra.deny[1]",
				   pat[0] ? "invalid deny pattern" : "must not be empty");
		}
		policy_free(&p);
	}
}

/* Every bad layer: -EINVAL, the right file and JSON path, p unchanged. */
/* The rule syntax of net_allow, shared by the policy, embedded mode and the daemon client. */
static void test_net_rules(void **state)
{
	static const struct {
		const char *rule, *cidr;
		int lo, hi;
	} good[] = {
		{"10.0.0.0/8", "10.0.0.0/8", 0, 65535},
		{"127.0.0.1:8080", "127.0.0.1/32", 8080, 8080},
		{"127.0.0.1/32:8000-8100", "127.0.0.1/32", 8000, 8100},
		{"::1", "::1/128", 0, 65535},
		{"fd00::/8:443", "fd00::/8", 443, 443},
	};
	static const char *const bad[] = {
		"",	   "10.0.0.0/33", "1.2.3.4:", "1.2.3.4:70000", "1.2.3.4:9-8",
		"host:80", "300.1.1.1",	  "::1/129",  "1.2.3.4/8x",
	};
	char cidr[64];
	uint16_t lo, hi;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(net_rule_parse(good[i].rule, cidr, sizeof(cidr), &lo, &hi), 0);
		assert_string_equal(cidr, good[i].cidr);
		assert_int_equal(lo, good[i].lo);
		assert_int_equal(hi, good[i].hi);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(net_rule_parse(bad[i], cidr, sizeof(cidr), &lo, &hi), -EINVAL);
}

/* Name rules (egress by name): names, wildcards, ports; whole-label matching. */
static void test_net_name_rules(void **state)
{
	static const struct {
		const char *rule, *host;
		int lo, hi;
	} good[] = {
		{"pypi.org", "pypi.org", 0, 65535},
		{"PyPI.Org:443", "pypi.org", 443, 443},
		{"*.githubusercontent.com:443", "*.githubusercontent.com", 443, 443},
		{"example.com:8000-8100", "example.com", 8000, 8100},
		{"localhost", "localhost", 0, 65535},
		{"a-b_c.example.", "a-b_c.example", 0, 65535},
		{"1a.example", "1a.example", 0, 65535},
	};
	static const char *const bad[] = {
		"",
		"bad..name",
		".example.com",
		"*.",
		"*example.com",
		"a.*.com",
		"ex ample.com",
		"example.com:",
		"example.com:70000",
		"example.com:9-8",
		"10.0.0.1",
		"1.2.3.4:80",
		"::1",
		"x:1:2",
		"exa/mple.com",
	};
	static const struct {
		const char *pattern, *name;
		bool match;
	} m[] = {
		{"pypi.org", "pypi.org", true},
		{"pypi.org", "PYPI.ORG.", true},
		{"pypi.org", "files.pypi.org", false},
		{"pypi.org", "pypi.org.evil", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*.example.com", "A.EXAMPLE.COM", true},
	};
	char host[256];
	uint16_t lo, hi;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(net_name_rule_parse(good[i].rule, host, sizeof(host), &lo, &hi),
				 0);
		assert_string_equal(host, good[i].host);
		assert_int_equal(lo, good[i].lo);
		assert_int_equal(hi, good[i].hi);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (net_name_rule_parse(bad[i], host, sizeof(host), &lo, &hi) != -EINVAL)
			fail_msg("'%s' parsed as a name rule", bad[i]);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (net_name_match(m[i].pattern, m[i].name) != m[i].match)
			fail_msg("%s vs %s: want %d", m[i].pattern, m[i].name, m[i].match);
}

/* A layer with name rules and net_deny loads; a bad one names its path. */
static void test_net_layers(void **state)
{
	struct json_object *ok = json_tokener_parse(
		"{\"net_resolver\": \"10.0.0.2:53\", \"extra\": {\"net_allow\": [\"pypi.org:443\", "
		"\"*.example.com\", \"10.0.0.0/8\"], \"net_deny\": [\"bad.example.com\"]}}");
	struct json_object *bad = json_tokener_parse("{\"extra\": {\"net_deny\": [\"a..b\"]}}");
	struct bpfbox_policy p;
	struct policy_error err;

	(void)state;
	policy_init(&p);
	assert_int_equal(policy_merge_layer(&p, ok, "task", &err), 0);
	assert_int_equal(p.net_allow.n, 3);
	assert_int_equal(p.net_deny.n, 1);
	assert_string_equal(p.net_deny.v[0], "bad.example.com");
	assert_string_equal(p.net_resolver, "10.0.0.2:53");
	assert_int_equal(policy_merge_layer(&p, bad, "task", &err), -EINVAL);
	assert_string_equal(err.path, "extra.net_deny[0]");
	assert_non_null(strstr(err.message, "invalid network rule 'a..b'"));
	policy_free(&p);
	json_object_put(ok);
	json_object_put(bad);
}

/* --secret specs: NAME, the file, the hosts; the policy JSON shows no path. */
static void test_secret_specs(void **state)
{
	static const char *const bad[] = {
		"TOKEN",
		"@api.test",
		"1X@api.test",
		"TO-KEN@api.test",
		"T@*.api.test",
		"T@api.test:443",
		"T@api.test,",
		"T=env:X@api.test",
		"T=file:@api.test",
		"T@10.0.0.1",
		"T@a,b,c,d,e,f,g,h,i",
		"T@+query",
		"T@a.test+quer",
		"T@a.test+query+query",
	};
	struct json_object *layer =
		json_tokener_parse("{\"extra\": {\"secrets\": [\"K=file:/run/k@a.test,B.Test\"]}}");
	struct secret_spec spec;
	struct bpfbox_policy p;
	struct policy_error err;
	struct json_object *o;
	const char *why, *text;

	(void)state;
	assert_int_equal(secret_spec_parse("GH_TOKEN@api.github.com", &spec, &why), 0);
	assert_string_equal(spec.name, "GH_TOKEN");
	assert_string_equal(spec.path, "");
	assert_int_equal(spec.n_hosts, 1);
	assert_string_equal(spec.hosts[0], "api.github.com");
	assert_int_equal(secret_spec_parse("K=file:/a@b/k@x.test,Y.test", &spec, &why), 0);
	assert_string_equal(spec.path, "/a@b/k");
	assert_int_equal(spec.n_hosts, 2);
	assert_string_equal(spec.hosts[1], "y.test");
	assert_false(spec.query);
	assert_int_equal(secret_spec_parse("K@x.test,y.test+query", &spec, &why), 0);
	assert_true(spec.query);
	assert_int_equal(spec.n_hosts, 2);
	assert_string_equal(spec.hosts[1], "y.test");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (secret_spec_parse(bad[i], &spec, &why) != -EINVAL)
			fail_msg("'%s' parsed as a secret", bad[i]);
	policy_init(&p);
	assert_int_equal(policy_merge_layer(&p, layer, "task", &err), 0);
	assert_int_equal(p.secrets.n, 1);
	o = policy_to_json(&p);
	text = json_object_to_json_string(o);
	assert_non_null(strstr(text, "\"name\": \"K\""));
	assert_non_null(strstr(text, "\"b.test\""));
	assert_null(strstr(text, "/run/k"));
	json_object_put(o);
	policy_free(&p);
	json_object_put(layer);
}

static void test_merge_errors(void **state)
{
	static const struct {
		const char *origin, *json, *file, *path, *msg;
	} cases[] = {
		{"task:t.json", "{\"netwrok\": \"allow\"}", "t.json", "netwrok",
		 "unknown key 'netwrok'; valid keys: mode,"},
		{"cfg.json:agents.claude", "{\"limits\": {\"pid\": 5}}", "cfg.json",
		 "agents.claude.limits.pid", "unknown limit 'pid'"},
		{"cfg.json:sandbox", "{\"limits\": {\"pids\": 3}}", "cfg.json",
		 "sandbox.limits.pids", "at least 4"},
		{"flags", "{\"limits\": {\"memory_mb\": 15}}", "command line", "limits.memory_mb",
		 "at least 16"},
		{"flags", "{\"limits\": {\"cpu_percent\": 0}}", "command line",
		 "limits.cpu_percent", "at least 1"},
		{"flags", "{\"limits\": {\"open_files\": 15}}", "command line", "limits.open_files",
		 "at least 16"},
		{"flags", "{\"limits\": {\"disk_mb\": 0}}", "command line", "limits.disk_mb",
		 "at least 1"},
		{"flags", "{\"limits\": {\"file_size_mb\": 0}}", "command line",
		 "limits.file_size_mb", "at least 1"},
		{"flags", "{\"limits\": {\"pids\": \"64\"}}", "command line", "limits.pids",
		 "non-negative integer"},
		{"flags", "{\"limits\": {\"timeout_s\": -1}}", "command line", "limits.timeout_s",
		 "non-negative integer"},
		{"flags", "{\"limits\": {\"timeout_s\": 1.5}}", "command line", "limits.timeout_s",
		 "non-negative integer"},
		{"flags", "{\"limits\": {\"timeout_s\": 2000000000000}}", "command line",
		 "limits.timeout_s", "at most"},
		{"flags", "{\"limits\": [1]}", "command line", "limits", "must be an object"},
		{"flags", "{\"extra\": {\"net_allow\": [\"10.0.0.0/33\"]}}", "command line",
		 "extra.net_allow[0]", "invalid network rule '10.0.0.0/33'"},
		{"flags", "{\"extra\": {\"net_allow\": [\"127.0.0.1:80-79\"]}}", "command line",
		 "extra.net_allow[0]", "invalid network rule"},
		{"flags", "{\"extra\": {\"exec_deny\": [\"bin/sh\"]}}", "command line",
		 "extra.exec_deny[0]", "must be an absolute path"},
		{"flags", "{\"mode\": \"yolo\"}", "command line", "mode", "unknown mode 'yolo'"},
		{"flags", "{\"mode\": 1}", "command line", "mode", "must be a string"},
		{"flags", "{\"workspace\": \"\"}", "command line", "workspace",
		 "must not be empty"},
		{"flags", "{\"workspace\": null}", "command line", "workspace", "must be a string"},
		{"flags", "{\"network\": \"maybe\"}", "command line", "network",
		 "use \"deny\" or \"allow\""},
		{"flags", "{\"user\": \"\"}", "command line", "user", "must not be empty"},
		{"flags", "{\"user\": 0}", "command line", "user", "user name or null"},
		{"flags", "{\"private_tmp\": \"yes\"}", "command line", "private_tmp",
		 "true or false"},
		{"flags", "{\"allow_unconfined\": 1}", "command line", "allow_unconfined",
		 "true or false"},
		{"flags", "{\"restrictions\": {\"ro\": \"/x\"}}", "command line", "restrictions.ro",
		 "array of strings"},
		{"flags", "{\"extra\": {\"ro\": [\"/a\", 1]}}", "command line", "extra.ro[1]",
		 "must be a string"},
		{"flags", "{\"extra\": {\"rw\": [\"\"]}}", "command line", "extra.rw[0]",
		 "must not be empty"},
		{"flags", "{\"extra\": {\"rx\": []}}", "command line", "extra.rx",
		 "unknown key 'rx'; valid keys: ro, rw, devices, deny, net_allow, net_deny, "
		 "secrets, exec_deny, "
		 "deny_commands, commands, env"},
		{"flags", "{\"extra\": []}", "command line", "extra", "must be an object"},
		{"flags", "{\"extra\": {\"env\": {\"1A\": \"x\"}}}", "command line", "extra.env.1A",
		 "invalid variable name"},
		{"flags", "{\"extra\": {\"env\": {\"A-B\": \"x\"}}}", "command line",
		 "extra.env.A-B", "invalid variable name"},
		{"flags", "{\"extra\": {\"env\": {\"A\": 1}}}", "command line", "extra.env.A",
		 "must be a string"},
		{"flags", "{\"extra\": {\"env\": [\"A=1\"]}}", "command line", "extra.env",
		 "must be an object"},
		{"g.json:modes.read-only", "{\"mode\": \"full-access\"}", "g.json",
		 "modes.read-only.mode", "cannot switch"},
		{"flags", "[]", "command line", "", "must be a JSON object"},
		{"flags", "{\"workspace\": \"a\\u0000b\"}", "command line", "workspace", "NUL"},
		/* control characters never reach the one-line error */
		{"flags", "{\"bad\\nkey\": 1}", "command line", "bad?key", "unknown key 'bad?key'"},
		/* nor C1 controls (CSI as UTF-8), which some terminals obey */
		{"flags", "{\"bad\\u009bkey\": 1}", "command line", "bad?key",
		 "unknown key 'bad?key'"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy_error err = {0};
		struct bpfbox_policy p;
		int r;

		policy_init(&p);
		/* a valid key before the bad one must not stick either */
		r = merge(&p, "{\"network\": \"allow\"}", "g.json:sandbox", &err);
		assert_int_equal(r, 0);
		r = merge(&p, cases[i].json, cases[i].origin, &err);
		if (r != -EINVAL)
			fail_msg("case %zu (%s): rc %d", i, cases[i].json, r);
		assert_err(&err, cases[i].file, cases[i].path, cases[i].msg);
		assert_int_equal(p.net, NET_ALLOW);
		assert_int_equal(p.origins.n, 2);
		assert_int_equal(p.limits.pids, POLICY_PIDS_DEFAULT);
		policy_free(&p);
	}
}

static void test_merge_atomic(void **state)
{
	struct policy_error err;
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	assert_int_equal(merge(&p,
			       "{\"network\": \"allow\", \"extra\": "
			       "{\"ro\": [\"/a\"], \"deny\": [\"bad\"]},"
			       " \"limits\": {\"pids\": 9}}",
			       "task:t.json", &err),
			 -EINVAL);
	assert_string_equal(err.path, "extra.deny[0]");
	assert_int_equal(p.net, NET_DENY);
	assert_int_equal(p.ro_paths.n, 0);
	assert_int_equal(p.limits.pids, POLICY_PIDS_DEFAULT);
	assert_int_equal(p.origins.n, 1);
	policy_free(&p);
}

static void test_mode_layer_same_mode(void **state)
{
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	merge_ok(&p, "{\"mode\": \"read-only\"}", "g.json:modes.read-only");
	assert_int_equal(p.mode, MODE_READ_ONLY);
	policy_free(&p);
}

static void test_to_json(void **state)
{
	struct json_object *o;
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	merge_ok(&p,
		 "{\"mode\": \"full-access\", \"network\":"
		 " \"allow\", \"workspace\": \"/w\","
		 " \"limits\": {\"timeout_s\": 7},"
		 " \"extra\": {\"ro\": [\"/r\"],"
		 " \"env\": {\"K\": \"a=b\"}}}",
		 "task:t.json");
	o = policy_to_json(&p);
	assert_non_null(o);
	assert_json(o, "mode", Q("full-access"));
	assert_json(o, "workspace", Q("/w"));
	assert_json(o, "network", Q("allow"));
	assert_json(o, "user", "null");
	assert_json(o, "allow_unconfined", "false");
	assert_json(o, "private_tmp", "true");
	assert_json(o, "ro", "[\"/r\"]");
	assert_json(o, "rw", "[]");
	assert_int_equal(json_object_array_length(json_at(o, "deny")), p.deny_paths.n);
	assert_json(o, "env", "{\"K\":\"a=b\"}");
	assert_json(o, "limits.timeout_s", "7");
	assert_json(o, "limits.open_files", "1024");
	assert_int_equal(json_object_object_length(json_at(o, "limits")), 12);
	assert_json(o, "layers", "[\"defaults\",\"task:t.json\"]");
	json_object_put(o);
	policy_free(&p);
}

/* ---- policy_load: files and layer order ---- */

static void test_load_minimal(void **state)
{
	struct policy_error err;
	struct bpfbox_policy p;
	struct srcs s = {0};

	(void)state;
	assert_int_equal(load(&p, &s, &err), 0);
	assert_string_equal(p.workspace, tmp); /* cwd */
	assert_int_equal(p.origins.n, 1);
	assert_string_equal(p.origins.v[0], "defaults");
	policy_free(&p);
}

static void test_load_default_config(void **state)
{
	struct policy_error err;
	struct bpfbox_policy p;

	(void)state;
	if (access(POLICY_DEFAULT_CONFIG, F_OK) == 0 || errno != ENOENT) {
		/* This host has one: its content is not ours; the VM matrix has none. */
		skip_why("load_default_config: %s exists on this host (the VM has none)",
			 POLICY_DEFAULT_CONFIG);
	}
	assert_int_equal(policy_load(&p, NULL, &err), 0);
	assert_int_equal(p.origins.n, 1);
	policy_free(&p);
}

static const char precedence_global[] =
	"{\"sandbox\": {\"network\": \"allow\", \"limits\": {\"pids\": 100}},"
	" \"agents\": {\"a\": {\"limits\": {\"pids\": 50}},"
	"              \"quiet\": {}}}";

static void test_load_precedence(void **state)
{
	static const struct {
		const char *agent;
		bool task, flags;
		unsigned int pids;
		const char *last;
	} cases[] = {
		{NULL, false, false, 100, "prec.json:sandbox"},
		{"quiet", false, false, 100, "prec.json:agents.quiet"},
		{"a", false, false, 50, "prec.json:agents.a"},
		{"a", true, false, 40, "task:task.json"},
		{NULL, true, false, 40, "task:task.json"},
		{"a", true, true, 30, "flags"},
		{"a", false, true, 30, "flags"},
	};

	(void)state;
	write_file("prec.json", precedence_global);
	write_file("task.json", "{\"limits\": {\"pids\": 40}}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {
			.global = "prec.json",
			.agent = cases[i].agent,
			.task = cases[i].task ? "task.json" : NULL,
			.flags = cases[i].flags ? "{\"limits\": {\"pids\": 30}}" : NULL,
		};
		struct policy_error err;
		struct bpfbox_policy p;

		assert_int_equal(load(&p, &s, &err), 0);
		assert_int_equal(p.limits.pids, cases[i].pids);
		assert_string_equal(last_origin(&p), cases[i].last);
		assert_string_equal(p.origins.v[0], "defaults");
		assert_string_equal(p.origins.v[1], "prec.json:sandbox");
		/* inherited from the global sandbox: nobody overrides it */
		assert_int_equal(p.net, NET_ALLOW);
		policy_free(&p);
	}
}

static void test_load_files_order(void **state)
{
	static const char *const ab[] = {"a.json", "b.json", NULL};
	static const char *const ba[] = {"b.json", "a.json", NULL};
	struct policy_error err;
	struct bpfbox_policy p;
	struct srcs s = {.task = "task.json", .files = ab};

	(void)state;
	write_file("task.json", "{\"limits\": {\"pids\": 40}}");
	write_file("a.json", "{\"limits\": {\"pids\": 10}}");
	write_file("b.json", "{\"limits\": {\"pids\": 20}}");
	assert_int_equal(load(&p, &s, &err), 0);
	assert_int_equal(p.limits.pids, 20);
	assert_strv(&p.origins, "defaults", "task:task.json", "file:a.json", "file:b.json");
	policy_free(&p);
	s.files = ba;
	s.flags = "{\"network\": \"allow\"}";
	assert_int_equal(load(&p, &s, &err), 0);
	assert_int_equal(p.limits.pids, 10);
	assert_string_equal(last_origin(&p), "flags");
	policy_free(&p);
}

static const char modes_global[] =
	"{\"agents\": {\"ro\": {\"mode\": \"read-only\"}, \"plain\": {}},"
	" \"modes\": {\"workspace-write\": {\"limits\": {\"pids\": 7}},"
	"             \"read-only\": {\"limits\": {\"pids\": 8}},"
	"             \"full-access\": {\"limits\": {\"pids\": 9},"
	"                              \"network\": \"allow\"}}}";

/* The mode layer follows the final mode, and sits before the task. */
static void test_load_mode_layer(void **state)
{
	static const struct {
		const char *agent, *task, *flags;
		enum sandbox_mode mode;
		unsigned int pids;
		const char *mode_origin;
	} cases[] = {
		{"plain", NULL, NULL, MODE_WORKSPACE_WRITE, 7, "modes.json:modes.workspace-write"},
		{"ro", NULL, NULL, MODE_READ_ONLY, 8, "modes.json:modes.read-only"},
		{"ro", "{\"mode\": \"full-access\"}", NULL, MODE_FULL_ACCESS, 9,
		 "modes.json:modes.full-access"},
		{"ro", "{\"mode\": \"full-access\"}", "{\"mode\": \"workspace-write\"}",
		 MODE_WORKSPACE_WRITE, 7, "modes.json:modes.workspace-write"},
		{"plain", NULL, "{\"mode\": \"read-only\"}", MODE_READ_ONLY, 8,
		 "modes.json:modes.read-only"},
		{"ro", "{\"mode\": \"full-access\", \"limits\": {\"pids\": 40}}", NULL,
		 MODE_FULL_ACCESS, 40, "modes.json:modes.full-access"},
	};

	(void)state;
	write_file("modes.json", modes_global);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {
			.global = "modes.json", .agent = cases[i].agent, .flags = cases[i].flags};
		struct policy_error err;
		struct bpfbox_policy p;

		if (cases[i].task) {
			write_file("task.json", cases[i].task);
			s.task = "task.json";
		}
		if (load(&p, &s, &err) != 0)
			fail_msg("case %zu: %s: %s", i, err.path, err.message);
		assert_int_equal(p.mode, cases[i].mode);
		assert_int_equal(p.limits.pids, cases[i].pids);
		assert_int_equal(p.net, cases[i].mode == MODE_FULL_ACCESS ? NET_ALLOW : NET_DENY);
		assert_true(strv_contains(&p.origins, cases[i].mode_origin));
		/* only one mode layer */
		for (size_t j = 0; j < p.origins.n; j++)
			if (strstr(p.origins.v[j], ":modes."))
				assert_string_equal(p.origins.v[j], cases[i].mode_origin);
		/* the mode layer comes after the agent, before the task */
		assert_true(p.origins.n >= 3);
		assert_non_null(strstr(p.origins.v[1], ":agents."));
		assert_string_equal(p.origins.v[2], cases[i].mode_origin);
		policy_free(&p);
	}
}

/* Bad files: the right errno, file, JSON path and message. */
static void test_load_errors(void **state)
{
	static const struct {
		const char *global; /* content of g.json, NULL: none */
		const char *task;   /* content of task.json, NULL: none */
		const char *agent;
		const char *flags;
		int rc;
		const char *file, *path, *msg;
	} cases[] = {
		{"{\"sandbox\": {}, \"agent\": {}}", NULL, NULL, NULL, -EINVAL, "g.json", "agent",
		 "unknown key 'agent'; valid keys: sandbox, agents, modes"},
		/* an unused agent is checked too */
		{"{\"agents\": {\"a\": {}, \"b\": {\"limts\": {}}}}", NULL, "a", NULL, -EINVAL,
		 "g.json", "agents.b.limts", "unknown key"},
		{"{\"agents\": {\"a\": {}, \"b\": {}}}", NULL, "c", NULL, -EINVAL, "g.json",
		 "agents", "unknown agent 'c'; known agents: a, b"},
		{"{}", NULL, "c", NULL, -EINVAL, "g.json", "agents", "no agents are defined"},
		{"{\"agents\": []}", NULL, NULL, NULL, -EINVAL, "g.json", "agents",
		 "must be an object"},
		{"{\"modes\": {\"yolo\": {}}}", NULL, NULL, NULL, -EINVAL, "g.json", "modes.yolo",
		 "unknown mode 'yolo'"},
		{"{\"modes\": {\"read-only\": {\"restrictions\": {\"deny\": "
		 "[]}}}}",
		 NULL, NULL, NULL, -EINVAL, "g.json", "modes.read-only.restrictions.deny",
		 "use extra.deny"},
		{"{\"sandbox\": {\"limits\": {\"pids\": 1}}}", NULL, NULL, NULL, -EINVAL, "g.json",
		 "sandbox.limits.pids", "at least 4"},
		{"{\n  \"sandbox\": {\n    \"mode\": \"read-only\",\n  }\n}", NULL, NULL, NULL,
		 -EINVAL, "g.json", "", "invalid JSON at line 4"},
		{"{\"sandbox\": {}", NULL, NULL, NULL, -EINVAL, "g.json", "",
		 "unexpected end of file"},
		{"{} {}", NULL, NULL, NULL, -EINVAL, "g.json", "", "invalid JSON at line 1"},
		{"[]", NULL, NULL, NULL, -EINVAL, "g.json", "", "top level must be a JSON object"},
		{"", NULL, NULL, NULL, -EINVAL, "g.json", "", "unexpected end of file"},
		{NULL, "{\"restrictions\": {\"deny\": [\"/x\"]}}", NULL, NULL, -EINVAL, "task.json",
		 "restrictions.deny",
		 "deny list can only be replaced in the global or agent "
		 "config; use extra.deny"},
		{NULL, NULL, NULL, "{\"restrictions\": {\"deny\": []}}", -EINVAL, "command line",
		 "restrictions.deny", "use extra.deny"},
		{NULL, "{\"limits\": {\"pids\": 2}}", NULL, NULL, -EINVAL, "task.json",
		 "limits.pids", "at least 4"},
		{NULL, "{\"mode\": \"rw\"}", NULL, NULL, -EINVAL, "task.json", "mode",
		 "unknown mode 'rw'"},
		{NULL, "{\"user\": \"no-such-user-bpfbox\"}", NULL, NULL, -EINVAL, "task.json",
		 "user", "unknown user"},
		{NULL, "{\"extra\": {\"rw\": [\"/etc\"]}}", NULL, NULL, -EINVAL, "task.json",
		 "extra.rw[0]", "grant a narrower directory"},
		{NULL, "{\"extra\": {\"rw\": [\"/\"]}}", NULL, NULL, -EINVAL, "task.json",
		 "extra.rw[0]", "grant a narrower directory"},
		{NULL, "{\"extra\": {\"ro\": [\"ro\", \"nope\"]}}", NULL, NULL, -ENOENT,
		 "task.json", "extra.ro[1]", "nope' does not exist"},
		{"{\"agents\": {\"a\": {\"extra\": {\"rw\": [\"nope\"]}}}}", NULL, "a", NULL,
		 -ENOENT, "g.json", "agents.a.extra.rw[0]",
		 "does not exist; create it or remove it from the list"},
		{NULL, "{\"workspace\": \"nope\"}", NULL, NULL, -ENOENT, "task.json", "workspace",
		 "does not exist; create it or choose a project directory "
		 "with -w DIR"},
		{NULL, "{\"workspace\": \"ws\"}", NULL, "{\"workspace\": \"/\"}", -EINVAL,
		 "command line", "workspace", "choose a project directory with -w DIR"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {.agent = cases[i].agent, .flags = cases[i].flags};
		struct bpfbox_policy p;
		char label[32];

		if (cases[i].global) {
			write_file("g.json", cases[i].global);
			s.global = "g.json";
		}
		if (cases[i].task) {
			write_file("task.json", cases[i].task);
			s.task = "task.json";
		}
		snprintf(label, sizeof(label), "case %zu", i);
		load_expect(&p, &s, label, cases[i].rc, cases[i].file, cases[i].path, cases[i].msg);
		/* p is left empty */
		assert_null(p.workspace);
		assert_int_equal(p.deny_paths.n, 0);
		policy_free(&p);
	}
}

static void test_load_missing_files(void **state)
{
	static const char *const files[] = {"empty.json", "nope3.json", NULL};
	static const struct {
		struct srcs s;
		int rc;
		const char *file, *msg;
	} cases[] = {
		{{.global = "nope1.json"}, -ENOENT, "nope1.json", "cannot read"},
		{{.task = "nope2.json"}, -ENOENT, "nope2.json", "cannot read"},
		{{.files = files}, -ENOENT, "nope3.json", "cannot read"},
		{{.task = "ws"}, -EISDIR, "ws", ""}, /* a directory */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bpfbox_policy p;

		load_expect(&p, &cases[i].s, cases[i].file, cases[i].rc, cases[i].file, "",
			    cases[i].msg);
		policy_free(&p);
	}
}

/* The deny list: replaced by global and agent, appended to by the rest. */
static void test_load_deny(void **state)
{
	struct policy_error err;
	struct bpfbox_policy p;
	struct srcs s = {.global = "g.json", .task = "task.json"};

	(void)state;
	write_file("g.json", "{\"sandbox\": {\"restrictions\": {\"deny\": "
			     "[\"/etc/shadow\"]}},"
			     " \"agents\": {\"a\": {\"restrictions\": {\"deny\":"
			     " [\"**/.ssh\"]}}, \"b\": {}}}");
	write_file("task.json", "{\"extra\": {\"deny\": [\"**/*.tok\"]}}");
	s.agent = "b";
	assert_int_equal(load(&p, &s, &err), 0);
	assert_strv(&p.deny_paths, "/etc/shadow", "**/*.tok");
	policy_free(&p);
	s.agent = "a";
	assert_int_equal(load(&p, &s, &err), 0);
	assert_strv(&p.deny_paths, "**/.ssh", "**/*.tok");
	policy_free(&p);
}

/* ro entries through <cwd>, ~, $VAR, ${VAR}, $$ and relative paths. */
static void test_load_expansion(void **state)
{
	static const struct {
		const char *entry;
		const char *want; /* under tmp; NULL: an error */
		int rc;
		const char *msg;
	} cases[] = {
		{"ro", "ro", 0, NULL},
		{"./ro/../rw", "rw", 0, NULL},
		{"<cwd>", "", 0, NULL},
		{"<cwd>/ro", "ro", 0, NULL},
		{"$BPFBOX_T_DIR/ro", "ro", 0, NULL},
		{"${BPFBOX_T_DIR}/ro", "ro", 0, NULL},
		{"${BPFBOX_T_DIR}", "", 0, NULL},
		{"~/ro", "ro", 0, NULL},
		{"~", "", 0, NULL},
		{"d$$x", "d$x", 0, NULL},
		{"link", "ws", 0, NULL},
		{"file.txt", "file.txt", 0, NULL},
		{"ro/<cwd>", NULL, -ENOENT, "does not exist"},
		{"$BPFBOX_T_UNSET/ro", NULL, -EINVAL, "$BPFBOX_T_UNSET is not set"},
		{"${BPFBOX_T_UNSET}", NULL, -EINVAL, "$BPFBOX_T_UNSET is not set"},
		{"$BPFBOX_T_EMPTY/ro", NULL, -EINVAL, "$BPFBOX_T_EMPTY is empty"},
		{"${BPFBOX_T_DIR", NULL, -EINVAL, "must start $NAME or ${NAME}"},
		{"ro$", NULL, -EINVAL, "must start $NAME"},
		{"$1", NULL, -EINVAL, "must start $NAME"},
		{"~root/x", NULL, -EINVAL, "'~user' is not supported"},
		{"<cwd>ro", NULL, -EINVAL, "'<cwd>' must be followed by '/'"},
		{"missing", NULL, -ENOENT, "missing' does not exist"},
	};

	(void)state;
	setenv("BPFBOX_T_DIR", tmp, 1);
	setenv("BPFBOX_T_EMPTY", "", 1);
	setenv("HOME", tmp, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {.task = "task.json", .flags = "{\"workspace\": \"ws\"}"};
		struct bpfbox_policy p;
		char json[256], want[PATH_MAX];

		snprintf(json, sizeof(json), "{\"extra\": {\"ro\": [\"/usr\", \"%s\"]}}",
			 cases[i].entry);
		write_file("task.json", json);
		if (load_expect(&p, &s, cases[i].entry, cases[i].rc, "task.json", "extra.ro[1]",
				cases[i].msg) == 0)
			assert_strv(&p.ro_paths, "/usr", in_tmp(want, sizeof(want), cases[i].want));
		policy_free(&p);
	}
}

/* Expanded duplicates collapse; ~ needs HOME. */
static void test_load_expansion_dedup(void **state)
{
	struct srcs s = {.task = "task.json"};
	struct policy_error err;
	struct bpfbox_policy p;
	char want[PATH_MAX];

	(void)state;
	write_file("task.json", "{\"workspace\": \"ws\", \"extra\": {\"rw\":"
				" [\"rw\", \"<cwd>/rw\", \"./rw/\"]}}");
	assert_int_equal(load(&p, &s, &err), 0);
	assert_strv(&p.rw_paths, in_tmp(want, sizeof(want), "rw"));
	policy_free(&p);

	unsetenv("HOME");
	write_file("task.json", "{\"workspace\": \"ws\", \"extra\": {\"ro\":"
				" [\"~/ro\"]}}");
	assert_int_equal(load(&p, &s, &err), -EINVAL);
	assert_err(&err, "task.json", "extra.ro[0]", "needs $HOME");
	policy_free(&p);
}

static void test_load_workspace(void **state)
{
	static const struct {
		const char *ws;	  /* NULL: the default */
		const char *want; /* under tmp; NULL: an error */
		int rc;
		const char *msg;
	} cases[] = {
		{NULL, "", 0, NULL},
		{"ws", "ws", 0, NULL},
		{"ws/sub/..", "ws", 0, NULL},
		{"link", "ws", 0, NULL},
		{"<cwd>/ws", "ws", 0, NULL},
		{"$BPFBOX_T_DIR/ws/sub", "ws/sub", 0, NULL},
		{"nope", NULL, -ENOENT, "does not exist"},
		{"file.txt", NULL, -ENOTDIR, "is not a directory"},
		{"/", NULL, -EINVAL, "'/' is the whole file system"},
		{"/etc", NULL, -EINVAL, "'/etc' is a system directory"},
		{"/usr", NULL, -EINVAL, "is a system directory"},
		{"/proc", NULL, -EINVAL, "is a system directory"},
		{"/var", NULL, -EINVAL, "is a system directory"},
		{"/usr/../etc", NULL, -EINVAL, "is a system directory"},
		{"$BPFBOX_T_UNSET", NULL, -EINVAL, "is not set"},
	};

	(void)state;
	setenv("BPFBOX_T_DIR", tmp, 1);
	setenv("HOME", "/nonexistent-home", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {0};
		struct bpfbox_policy p;
		char flags[256], want[PATH_MAX];

		if (cases[i].ws) {
			snprintf(flags, sizeof(flags), "{\"workspace\": \"%s\"}", cases[i].ws);
			s.flags = flags;
		}
		if (load_expect(&p, &s, cases[i].ws ? cases[i].ws : "(default)", cases[i].rc,
				cases[i].ws ? "command line" : "current directory", "workspace",
				cases[i].msg) == 0)
			assert_string_equal(p.workspace, in_tmp(want, sizeof(want), cases[i].want));
		policy_free(&p);
	}
}

static void test_load_workspace_home(void **state)
{
	static const struct {
		const char *home, *ws;
		int rc;
		const char *msg;
	} cases[] = {
		{"ws", "ws", -EINVAL,
		 "is your home directory; choose a "
		 "project directory with -w DIR"},
		{"link", "ws", -EINVAL, "is your home directory"},
		{"ws", "link", -EINVAL, "is your home directory"},
		{"ws", "ws/sub", 0, NULL},
		{"ws/sub", "ws", -EINVAL, "contains your home directory"},
		{"ws", "rw", 0, NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {.task = "task.json"};
		struct bpfbox_policy p;
		char buf[PATH_MAX], json[256];

		setenv("HOME", in_tmp(buf, sizeof(buf), cases[i].home), 1);
		snprintf(json, sizeof(json), "{\"workspace\": \"%s\"}", cases[i].ws);
		write_file("task.json", json);
		load_expect(&p, &s, json, cases[i].rc, "task.json", "workspace", cases[i].msg);
		policy_free(&p);
	}
	/* the default workspace is the cwd: the home dir is refused */
	setenv("HOME", tmp, 1);
	{
		struct srcs s = {0};
		struct bpfbox_policy p;

		load_expect(&p, &s, "the cwd as home", -EINVAL, "current directory", "workspace",
			    "is your home directory");
		policy_free(&p);
	}
}

static void test_load_user(void **state)
{
	struct srcs s = {.flags = "{\"user\": \"root\"}"};
	struct bpfbox_policy p;

	(void)state;
	load_expect(&p, &s, s.flags, 0, NULL, NULL, NULL);
	assert_string_equal(p.user, "root");
	policy_free(&p);
	s.flags = "{\"user\": \"no-such-user-bpfbox\"}";
	load_expect(&p, &s, s.flags, -EINVAL, "command line", "user",
		    "unknown user 'no-such-user-bpfbox'");
	policy_free(&p);
}

/* policy_validate on policies built by hand. */
static void test_validate(void **state)
{
	static const struct {
		const char *ws;
		const char *rw;
		const char *ro;
		unsigned int pids;
		const char *user;
		int rc;
		const char *path;
	} cases[] = {
		{"ws", NULL, NULL, 64, NULL, 0, NULL},
		{"ws", "rw", "/usr", 64, "root", 0, NULL},
		{NULL, NULL, NULL, 64, NULL, -EINVAL, "workspace"},
		{"", NULL, NULL, 64, NULL, -EINVAL, "workspace"},
		{"/", NULL, NULL, 64, NULL, -EINVAL, "workspace"},
		{"ws", NULL, NULL, 3, NULL, -EINVAL, "limits.pids"},
		{"ws", "/etc", NULL, 64, NULL, -EINVAL, "rw[0]"},
		{"ws", NULL, "relative", 64, NULL, -EINVAL, "ro[0]"},
		{"ws", NULL, NULL, 64, "no-such-user-bpfbox", -EINVAL, "user"},
	};

	(void)state;
	setenv("HOME", "/nonexistent-home", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy_error err = {0};
		struct bpfbox_policy p;
		char buf[PATH_MAX];
		int r;

		policy_init(&p);
		if (cases[i].ws) {
			if (cases[i].ws[0] == '/' || !cases[i].ws[0])
				p.workspace = strdup(cases[i].ws);
			else
				p.workspace = strdup(in_tmp(buf, sizeof(buf), cases[i].ws));
			assert_non_null(p.workspace);
		}
		if (cases[i].rw && cases[i].rw[0] != '/')
			in_tmp(buf, sizeof(buf), cases[i].rw);
		else if (cases[i].rw)
			snprintf(buf, sizeof(buf), "%s", cases[i].rw);
		if (cases[i].rw)
			assert_int_equal(strv_push(&p.rw_paths, buf), 0);
		if (cases[i].ro)
			assert_int_equal(strv_push(&p.ro_paths, cases[i].ro), 0);
		p.limits.pids = cases[i].pids;
		if (cases[i].user)
			p.user = strdup(cases[i].user);
		r = policy_validate(&p, &err);
		if (r != cases[i].rc)
			fail_msg("case %zu: rc %d (%s)", i, r, err.message);
		if (r < 0)
			assert_string_equal(err.path, cases[i].path);
		policy_free(&p);
	}
}

/*
 * Writable grants and workspaces that would hand the session a kernel
 * interface, bpfbox's state or a shared root: each is refused with one
 * line naming the path and the rule, through the whole loader.
 */
static void test_writable_rules(void **state)
{
	static const struct {
		const char *path; /* relative: under the scratch dir */
		const char *rule; /* NULL: granted */
	} cases[] = {
		{"/sys/fs/cgroup", "a kernel interface (/sys"},
		{"/sys/fs/bpf", "a kernel interface (/sys"},
		{"/sys/kernel", "a kernel interface (/sys"},
		{"/sys", "a kernel interface (/sys"},
		{"/proc/sys", "a kernel interface (/proc"},
		{"/proc/self", "a kernel interface (/proc"},
		{"/proc", "a kernel interface (/proc"},
		{"/dev", "a device node (/dev"},
		{"/dev/pts", "a device node (/dev"},
		{"/dev/shm", "(/dev/shm itself)"},
		{"/dev/null", NULL},
		{"/dev/urandom", NULL},
		{"/tmp", "(/tmp itself)"},
		{"/var/tmp", "(/var/tmp itself)"},
		{"/home", "(/home itself)"},
		{"/etc", "a system directory"},
		{"/usr", "a system directory"},
		{"/", "the whole file system"},
		{"to-sys", "a kernel interface (/sys"},
		{"to-tmp", "(/tmp itself)"},
		{"rw", NULL},
	};

	(void)state;
	setenv("HOME", "/nonexistent-home", 1);
	unlink("to-sys");
	unlink("to-tmp");
	assert_int_equal(symlink("/sys/fs/cgroup", "to-sys"), 0);
	assert_int_equal(symlink("/tmp", "to-tmp"), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {.task = "task.json"};
		struct policy_error err = {0};
		struct bpfbox_policy p;
		char json[512];
		int r;

		if (access(cases[i].path, F_OK) < 0) {
			print_message("skip - %s: absent on this host (the "
				      "VM matrix has it)\n",
				      cases[i].path);
			continue;
		}
		snprintf(json, sizeof(json),
			 "{\"workspace\": \"ws\", \"extra\": {\"rw\":"
			 " [\"%s\"]}}",
			 cases[i].path);
		write_file("task.json", json);
		r = load(&p, &s, &err);
		if (!cases[i].rule) {
			if (r != 0)
				fail_msg("--rw %s refused: %s", cases[i].path, err.message);
			policy_free(&p);
			continue;
		}
		if (r != -EINVAL)
			fail_msg("--rw %s: rc %d, want -EINVAL", cases[i].path, r);
		assert_err(&err, "task.json", "extra.rw[0]", cases[i].rule);
		assert_non_null(strstr(err.message, "it is "));
		assert_non_null(strstr(err.message, "write access to '"));
		assert_null(strchr(err.message, '\n'));
		policy_free(&p);

		/* The same path as a workspace, where it is one. */
		if (cases[i].path[0] != '/' || strlen(cases[i].path) <= 5)
			continue; /* "/sys" and the like: "a system directory" */
		snprintf(json, sizeof(json), "{\"workspace\": \"%s\"}", cases[i].path);
		write_file("task.json", json);
		r = load(&p, &s, &err);
		if (r != -EINVAL)
			fail_msg("-w %s: rc %d, want -EINVAL", cases[i].path, r);
		assert_err(&err, "task.json", "workspace", cases[i].rule);
		policy_free(&p);
	}
	/* policy_validate on a hand-built policy says the same. */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy_error err = {0};
		struct bpfbox_policy p;
		char buf[PATH_MAX];
		int r;

		if (cases[i].path[0] != '/' || access(cases[i].path, F_OK) < 0)
			continue;
		policy_init(&p);
		p.workspace = strdup(in_tmp(buf, sizeof(buf), "ws"));
		assert_non_null(p.workspace);
		assert_int_equal(strv_push(&p.rw_paths, cases[i].path), 0);
		r = policy_validate(&p, &err);
		if ((r == 0) != !cases[i].rule)
			fail_msg("validate --rw %s: rc %d (%s)", cases[i].path, r, err.message);
		if (r < 0) {
			assert_string_equal(err.path, "rw[0]");
			assert_non_null(strstr(err.message, cases[i].rule));
		}
		policy_free(&p);
	}
}

/*
 * --device takes a character device node under /dev, not a block device,
 * a file or a dir; --ro of /dev or a node in it is refused with a pointer
 * to --device (the host's /dev over the session's hid its masks).
 */
static void test_device_rules(void **state)
{
	static const struct {
		const char *key, *path;
		const char *rule; /* NULL: granted */
	} cases[] = {
		{"devices", "/dev/null", NULL},
		{"devices", "/dev/net/tun", NULL},
		{"devices", "/etc/passwd", "it is not under /dev"},
		{"devices", "/dev/shm", "it is not a character device node"},
		{"devices", "/dev/loop0", "it is a block device"},
		{"devices", "/dev/tty1", "a virtual console"},
		{"ro", "/dev", "the host's device tree"},
		{"ro", "/dev/net/tun", "grant it with --device /dev/net/tun"},
		{"ro", "/dev/null", NULL},
		{"rw", "/dev/net/tun", "grant it with --device /dev/net/tun"},
	};

	(void)state;
	setenv("HOME", "/nonexistent-home", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct srcs s = {.task = "task.json"};
		struct policy_error err = {0};
		struct bpfbox_policy p;
		char json[512], at[64];
		int r;

		if (access(cases[i].path, F_OK) < 0) {
			print_message("skip - %s: absent on this host\n", cases[i].path);
			continue;
		}
		snprintf(json, sizeof(json),
			 "{\"workspace\": \"ws\", \"extra\": {\"%s\": [\"%s\"]}}", cases[i].key,
			 cases[i].path);
		write_file("task.json", json);
		r = load(&p, &s, &err);
		if (!cases[i].rule) {
			if (r != 0)
				fail_msg("%s %s refused: %s", cases[i].key, cases[i].path,
					 err.message);
			policy_free(&p);
			continue;
		}
		if (r != -EINVAL)
			fail_msg("%s %s: rc %d, want -EINVAL", cases[i].key, cases[i].path, r);
		snprintf(at, sizeof(at), "extra.%s[0]", cases[i].key);
		assert_err(&err, "task.json", at, cases[i].rule);
		assert_null(strchr(err.message, '\n'));
		policy_free(&p);
	}
}

#define T(f) cmocka_unit_test_teardown(f, reset_env)

UNIT_MAIN_GROUP(group_setup, group_teardown, T(test_defaults), T(test_source_name),
		T(test_public_file), T(test_strv), T(test_mode_names), T(test_error_format),
		T(test_merge_scalars), T(test_merge_limits), T(test_merge_limit_units),
		T(test_restrictions_then_extra), T(test_env), T(test_deny_list_protection),
		T(test_extra_deny_appends), T(test_deny_patterns), T(test_net_rules),
		T(test_net_name_rules), T(test_net_layers), T(test_secret_specs),
		T(test_merge_errors), T(test_merge_atomic), T(test_mode_layer_same_mode),
		T(test_to_json), T(test_load_minimal), T(test_load_default_config),
		T(test_load_precedence), T(test_load_files_order), T(test_load_mode_layer),
		T(test_load_errors), T(test_load_missing_files), T(test_load_deny),
		T(test_load_expansion), T(test_load_expansion_dedup), T(test_load_workspace),
		T(test_load_workspace_home), T(test_load_user), T(test_validate),
		T(test_writable_rules), T(test_device_rules))
