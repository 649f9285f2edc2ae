// SPDX-License-Identifier: GPL-2.0
/*
 * The workspace and grants opened once (sandbox/grants.c): a symlink
 * anywhere on the checked path is refused by both ways of opening it, and
 * an open again must be the same file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox/grants.h"
#include "policy/policy.h"
#include "lib/util.h"
#include "scratch.h"
#include "unit_main.h"

static char dir[256]; /* /tmp/bpfbox-grants.XXXXXX */
SCRATCH_FIXTURES(dir, "grants")

static void at(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

/* dir/real/sub, dir/file, dir/link -> real. */
static void tree(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int fd;

	at(p, "real");
	assert_int_equal(mkdir(p, 0755), 0);
	at(p, "real/sub");
	assert_int_equal(mkdir(p, 0755), 0);
	at(p, "file");
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	at(p, "real");
	at(q, "link");
	assert_int_equal(symlink(p, q), 0);
}

static bool same(int a, const char *path)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && stat(path, &sb) == 0 && sa.st_ino == sb.st_ino &&
	       sa.st_dev == sb.st_dev;
}

static void test_symlink_refused(void **state)
{
	int (*const way[])(const char *, int) = {path_open_exact, path_open_by_names};
	char p[PATH_MAX];

	(void)state;
	tree();
	for (size_t i = 0; i < ARRAY_SIZE(way); i++) {
		int fd;

		at(p, "real/sub");
		fd = way[i](p, O_DIRECTORY);
		assert_true(fd >= 0);
		assert_true(same(fd, p));
		close(fd);
		/* The link as the last name, and on the way. */
		at(p, "link");
		assert_int_equal(way[i](p, 0), -ELOOP);
		at(p, "link/sub");
		assert_int_equal(way[i](p, O_DIRECTORY), -ELOOP);
		at(p, "file");
		assert_int_equal(way[i](p, O_DIRECTORY), -ENOTDIR);
		fd = way[i](p, 0);
		assert_true(fd >= 0);
		close(fd);
		at(p, "missing");
		assert_int_equal(way[i](p, 0), -ENOENT);
		assert_int_equal(way[i]("relative", 0), i == 0 ? -EINVAL : -ENOENT);
	}
	at(p, "real/../real");
	assert_int_equal(path_open_by_names(p, 0), -EINVAL);
}

/* Open again: the same directory, a symlink swapped in, another directory. */
static void test_reopen(void **state)
{
	char real[PATH_MAX], link[PATH_MAX], moved[PATH_MAX];
	int fd, again;

	(void)state;
	tree();
	at(real, "real");
	at(link, "link");
	at(moved, "moved");
	fd = path_open_exact(real, O_DIRECTORY);
	assert_true(fd >= 0);
	again = grant_reopen(real, fd);
	assert_true(again >= 0);
	close(again);
	/* The swap of the attack: real is now the symlink. */
	assert_int_equal(rename(real, moved), 0);
	assert_int_equal(rename(link, real), 0);
	assert_int_equal(grant_reopen(real, fd), -ELOOP);
	/* Another directory at the name. */
	assert_int_equal(unlink(real), 0);
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(grant_reopen(real, fd), -ESTALE);
	close(fd);
}

/* The set of a policy: one fd each, found by path; a symlink fails with its message. */
static void test_fds_open(void **state)
{
	struct bpfbox_policy p = {0};
	struct grant_fds g;
	char ws[PATH_MAX], rw[PATH_MAX], link[PATH_MAX];

	(void)state;
	tree();
	at(ws, "real");
	at(rw, "file");
	at(link, "link");
	p.workspace = ws;
	assert_int_equal(strv_push(&p.rw_paths, rw), 0);
	assert_int_equal(grant_fds_open(&g, &p, NULL), 0);
	assert_true(same(grant_fd_of(&g, ws), ws));
	assert_true(same(grant_fd_of(&g, rw), rw));
	assert_int_equal(grant_fd_of(&g, link), -1);
	assert_int_equal(grant_fd_of(NULL, ws), -1);
	grant_fds_close(&g);
	assert_int_equal(g.ws, -1);

	assert_int_equal(strv_push(&p.ro_paths, link), 0);
	assert_int_equal(grant_fds_open(&g, &p, NULL), -ELOOP);
	assert_non_null(strstr(g.bad, link));
	assert_non_null(strstr(g.bad, "a symlink is there now"));
	grant_fds_close(&g);
	strv_clear(&p.rw_paths);
	strv_clear(&p.ro_paths);
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_fds_open, setup, teardown))
