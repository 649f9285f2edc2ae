// SPDX-License-Identifier: GPL-2.0
/*
 * The credential entries of the grants (userspace/sandbox/cred_scan.c):
 * the default patterns matched on absolute paths whichever component a
 * grant starts at, the walk's bounds and what it says of them, hard links.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sandbox/cred_scan.h"
#include "sandbox/cred_match.h"
#include "policy/policy.h"
#include "lib/util.h"
#include "scratch.h"
#include "unit_main.h"

static char dir[PATH_MAX];
SCRATCH_FIXTURES(dir, "credscan")

/* dir/rel (dir itself for ""), in one of two buffers used in turn. */
static const char *at(const char *rel)
{
	static char buf[2][PATH_MAX];
	static int i;
	char *b = buf[i++ & 1];

	if (snprintf(b, PATH_MAX, "%s%s%s", dir, rel[0] ? "/" : "", rel) >= PATH_MAX)
		fail_msg("path too long");
	return b;
}

/* Makes dir/rel (and its parents), a file unless rel ends in '/'. */
static void make(const char *rel)
{
	const char *path = at(rel);
	size_t n = strlen(path);
	int fd;

	assert_int_equal(mkdir_parents(path, 0755), 0);
	if (path[n - 1] == '/') {
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* Whether out holds dir/rel. */
static bool holds(const struct strv *out, const char *rel)
{
	return strv_contains(out, at(rel));
}

static void test_denied(void **state)
{
	static const char *const yes[] = {
		"/h/.env",	   "/h/a/.env.local",	     "/h/k.pem",
		"/h/.kube/config", "/h/.kube/config/x",	     "/h/.ssh",
		"/h/.ssh/known",   "/h/.config/gcloud/c.db", "/h/.docker/config.json",
	};
	static const char *const no[] = {
		"/h/.envrc",
		"/h/k.pem.txt",
		"/h/.kube",
		"/h/.kube/cache",
		"/h/config",
		"/h/.config",
		"/h/.docker/daemon.json",
		"/",
		"/h",
	};
	struct bpfbox_policy p;

	(void)state;
	policy_init(&p);
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
		if (!cred_path_denied(&p, yes[i]))
			fail_msg("%s: not denied", yes[i]);
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		if (cred_path_denied(&p, no[i]))
			fail_msg("%s: denied", no[i]);
	policy_free(&p);
}

/* A grant that starts inside a two-component pattern still finds its end. */
static void test_top_from_any_component(void **state)
{
	struct bpfbox_policy p;
	struct strv out = {0};

	(void)state;
	policy_init(&p);
	make(".kube/config");
	make(".kube/cache");
	make(".config/gcloud/credentials.db");
	make(".config/other");
	make(".docker/config.json");
	make("deep/sub/.env");
	assert_int_equal(cred_top_paths(&p, at(".kube"), &out), 0);
	assert_true(holds(&out, ".kube/config"));
	assert_int_equal(out.n, 1);
	strv_clear(&out);
	assert_int_equal(cred_top_paths(&p, at(".config"), &out), 0);
	assert_true(holds(&out, ".config/gcloud"));
	assert_int_equal(out.n, 1);
	strv_clear(&out);
	/* The grant itself inside a match: all of it. */
	assert_int_equal(cred_top_paths(&p, at(".config/gcloud"), &out), 0);
	assert_true(holds(&out, ".config/gcloud"));
	strv_clear(&out);
	/* From the home: the top and the two-component ends; not deep/sub/.env. */
	assert_int_equal(cred_top_paths(&p, dir, &out), 0);
	assert_true(holds(&out, ".kube/config") && holds(&out, ".config/gcloud") &&
		    holds(&out, ".docker/config.json"));
	assert_false(holds(&out, "deep/sub/.env"));
	strv_clear(&out);
	policy_free(&p);
}

/* The walk: every depth, hard links found, the entries bound said. */
static void test_scan(void **state)
{
	struct bpfbox_policy p;
	struct strv out = {0};
	struct cred_scan sc;

	(void)state;
	policy_init(&p);
	make("a/b/c/.env");
	make("a/b/k.pem");
	make("a/plain");
	make("z/notes");
	assert_int_equal(link(at("a/b/c/.env"), at("z/notes-link")), 0);
	cred_scan_init(&sc);
	assert_int_equal(cred_scan_tree(&p, dir, &sc, &out), 0);
	assert_true(holds(&out, "a/b/c/.env") && holds(&out, "a/b/k.pem"));
	assert_false(holds(&out, "z/notes-link"));
	assert_true(cred_scan_relink(&sc));
	assert_int_equal(cred_scan_tree(&p, dir, &sc, &out), 0);
	assert_true(holds(&out, "z/notes-link"));
	assert_int_equal(out.n, 3);
	cred_scan_links(&sc, &out);
	assert_string_equal(sc.unchecked, "");
	free(sc.ids);
	strv_clear(&out);

	/* Two entries allowed: the rest unchecked, and where it stopped said. */
	cred_scan_init(&sc);
	sc.max_entries = 2;
	assert_int_equal(cred_scan_tree(&p, dir, &sc, &out), 0);
	if (!strstr(sc.unchecked, "not masked past 2 entries, from "))
		fail_msg("unchecked: '%s'", sc.unchecked);
	free(sc.ids);
	strv_clear(&out);

	/* One level allowed: a directory below is masked whole, and said. */
	cred_scan_init(&sc);
	sc.max_depth = 1;
	assert_int_equal(cred_scan_tree(&p, dir, &sc, &out), 0);
	assert_true(holds(&out, "a/b"));
	assert_false(holds(&out, "a/b/c/.env"));
	if (!strstr(sc.unchecked, "hidden whole past the depth bound, from "))
		fail_msg("unchecked: '%s'", sc.unchecked);
	free(sc.ids);
	strv_clear(&out);
	policy_free(&p);
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_denied, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_top_from_any_component, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_scan, setup, teardown))
