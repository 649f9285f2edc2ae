// SPDX-License-Identifier: GPL-2.0
/*
 * The disk monitor (monitor/disk.h) on a real tree and real inotify events,
 * in the moments the initial scan has not finished: a write to a file the
 * scan has not read yet is baseline, not growth; a directory renamed while
 * it waits to be read is still read, and what is written below it counts;
 * an event queue overflow restarts the scan, baseline included. And from an
 * attacker's review (issue 17): a tree deeper than PATH_MAX is watched and
 * removed, empty files count as entries, and running out of inotify
 * watches fails closed. Files held unlinked (open, or mapped) count.
 */
#include <fcntl.h>
#include <ftw.h>
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

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "monitor/disk.h"
#include "monitor/monitor.h"
#include "lib/util.h"
#include "scratch.h"
#include "skip.h"
#include "unit_main.h"

#define MiB (1 << 20)

static char root[64];

SCRATCH_FIXTURES(root, "disk")

#define D20   "dddddddddddddddddddd"
#define DEPTH 250 /* 21 * 250 = 5,250 bytes of path, past PATH_MAX */

/* A chain of DEPTH directories under dir; the fd of the deepest. */
static int make_deep(const char *dir)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	for (int i = 0; i < DEPTH; i++) {
		int nfd;

		assert_int_equal(mkdirat(fd, D20, 0755), 0);
		nfd = openat(fd, D20, O_PATH | O_DIRECTORY | O_CLOEXEC);
		assert_true(nfd >= 0);
		close(fd);
		fd = nfd;
	}
	return fd;
}

/*
 * size bytes into name under the directory fd dfd (AT_FDCWD: name is a
 * path), made if need be, synced; how: O_TRUNC or O_APPEND.
 */
static void write_at(int dfd, const char *name, int how, size_t size)
{
	static char buf[MiB];
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | how | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	memset(buf, 'z', sizeof(buf));
	while (size) {
		size_t n = size < sizeof(buf) ? size : sizeof(buf);

		assert_int_equal(write(fd, buf, n), (ssize_t)n);
		size -= n;
	}
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

/* Before, nothing below PATH_MAX was watched: 8 MiB there were never counted. */
static void deep_tree_is_watched_and_removed(void **state)
{
	const char *roots[] = {root};
	struct disk_monitor m;
	char top[128];
	int deep;

	(void)state;
	snprintf(top, sizeof(top), "%s/deep", root);
	assert_int_equal(mkdir(top, 0755), 0);
	assert_int_equal(disk_monitor_open(&m, roots, 1, -1), 0);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	deep = make_deep(top);
	disk_monitor_read(&m);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	write_at(deep, "big", O_TRUNC, 8 * MiB);
	disk_monitor_read(&m);
	assert_true(disk_monitor_growth(&m) >= 8 * MiB);
	assert_true(disk_monitor_entries(&m) >= DEPTH + 1);
	assert_false(disk_monitor_blind(&m));
	disk_monitor_close(&m, -1, NULL, NULL, NULL, NULL);
	close(deep);
	/* The cleanup before (nftw, remove) left it; rm_tree removes it all. */
	assert_int_equal(rm_tree(top), 0);
	assert_int_equal(access(top, F_OK), -1);
}

/* Empty files cost no blocks: they count as entries. */
static void empty_files_count_as_entries(void **state)
{
	const char *roots[] = {root};
	struct disk_monitor m;
	char f[160];

	(void)state;
	for (int i = 0; i < 10; i++) { /* baseline: not growth */
		snprintf(f, sizeof(f), "%s/old%d", root, i);
		close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	}
	assert_int_equal(disk_monitor_open(&m, roots, 1, -1), 0);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	for (int i = 0; i < 2000; i++) {
		snprintf(f, sizeof(f), "%s/n%d", root, i);
		close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
		if (i % 200 == 0)
			disk_monitor_read(&m);
	}
	disk_monitor_read(&m);
	disk_monitor_read(&m);
	assert_true(disk_monitor_growth(&m) < MiB);
	assert_int_equal(disk_monitor_entries(&m), 2000);
	disk_monitor_close(&m, -1, NULL, NULL, NULL, NULL);
}

/*
 * In a user namespace of its own whose inotify watches are capped at
 * limit, watches a tree of 20 directories: whether the monitor says the
 * disk limit is over (the status of the child: 0 over, 1 not, 2 setup).
 */
static int blind_child(long limit)
{
	const char *roots[] = {root};
	struct disk_monitor dm;
	struct monitor mon;
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		FILE *f;

		if (unshare(CLONE_NEWUSER) < 0)
			_exit(2);
		f = fopen("/proc/self/uid_map", "w");
		if (!f || fprintf(f, "0 0 1\n") < 0 || fclose(f) != 0)
			_exit(2);
		f = fopen("/proc/sys/user/max_inotify_watches", "w");
		if (!f || fprintf(f, "%ld\n", limit) < 0 || fclose(f) != 0)
			_exit(2);
		if (disk_monitor_open(&dm, roots, 1, -1) < 0)
			_exit(2);
		while (disk_monitor_scanning(&dm))
			disk_monitor_scan(&dm, SIZE_MAX);
		memset(&mon, 0, sizeof(mon));
		mon.disk = dm;
		mon.disk_on = true;
		mon.disk_limit = 1ULL << 30;
		_exit(monitor_disk_over(&mon) ? 0 : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

/* Before, the watches a uid exhausted turned its sessions' disk limits off. */
static void watch_exhaustion_fails_closed(void **state)
{
	char d[160];
	int r;

	(void)state;
	for (int i = 0; i < 20; i++) {
		snprintf(d, sizeof(d), "%s/d%d", root, i);
		assert_int_equal(mkdir(d, 0755), 0);
	}
	r = blind_child(64);
	if (r == 2) {
		skip_why("inotify exhaustion: no user namespace to cap the watches in; the VM "
			 "matrix runs it");
	}
	assert_int_equal(r, 1);		     /* control: 21 watches fit in 64, not over */
	assert_int_equal(blind_child(8), 0); /* 21 do not fit in 8: over, closed */
}

/* Writes size bytes at the end of path (created if need be), synced. */
static void append(const char *path, size_t size)
{
	write_at(AT_FDCWD, path, O_APPEND, size);
}

static void sub(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", root, rel);
}

static void write_before_scan_is_baseline(void **state)
{
	const char *roots[] = {root};
	struct disk_monitor m;
	char a[128], big[128];

	(void)state;
	sub(a, sizeof(a), "a");
	sub(big, sizeof(big), "a/big");
	assert_int_equal(mkdir(a, 0755), 0);
	append(big, 8 * MiB);
	assert_int_equal(disk_monitor_open(&m, roots, 1, -1), 0);
	/* One directory: the root is read, "a" is watched and waits. */
	disk_monitor_scan(&m, 1);
	assert_true(disk_monitor_scanning(&m));
	append(big, 1);
	disk_monitor_read(&m);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	disk_monitor_read(&m);
	/* One byte (a block or so) of growth, not the file's 8 MiB. */
	assert_true(disk_monitor_growth(&m) < MiB);
	disk_monitor_close(&m, -1, NULL, NULL, NULL, NULL);
}

static void renamed_while_queued_is_read(void **state)
{
	const char *roots[] = {root};
	struct disk_monitor m;
	char a[128], a2[128], s[128], f[128];

	(void)state;
	sub(a, sizeof(a), "a");
	sub(a2, sizeof(a2), "a2");
	sub(s, sizeof(s), "a/sub");
	sub(f, sizeof(f), "a2/sub/new");
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(s, 0755), 0);
	assert_int_equal(disk_monitor_open(&m, roots, 1, -1), 0);
	disk_monitor_scan(&m, 1);
	/* "a" is renamed before its turn: its path is stale until the events are read. */
	assert_int_equal(rename(a, a2), 0);
	disk_monitor_scan(&m, 1);
	disk_monitor_read(&m);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	/* sub was found and watched: a file written there counts. */
	append(f, 4 * MiB);
	disk_monitor_read(&m);
	assert_true(disk_monitor_growth(&m) >= 4 * MiB);
	disk_monitor_close(&m, -1, NULL, NULL, NULL, NULL);
}

/* Sets fs.inotify.max_queued_events; the old value, or -1. */
static long set_max_queued(long v)
{
	const char *path = "/proc/sys/fs/inotify/max_queued_events";
	FILE *f = fopen(path, "r");
	long old = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &old) != 1)
		old = -1;
	fclose(f);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%ld\n", v);
	return fclose(f) == 0 ? old : -1;
}

static void overflow_during_scan_restarts_it(void **state)
{
	const char *roots[] = {root};
	struct disk_monitor m;
	char a[128], big[128], f[160];
	long old;
	int r;

	(void)state;
	sub(a, sizeof(a), "a");
	sub(big, sizeof(big), "a/big");
	assert_int_equal(mkdir(a, 0755), 0);
	append(big, 8 * MiB);
	/* An instance whose queue holds 16 events (the limit is read at its creation). */
	old = set_max_queued(16);
	if (old < 0) {
		skip_why("disk overflow: fs.inotify.max_queued_events is not writable (not "
			 "root); the host suite runs as root");
	}
	r = disk_monitor_open(&m, roots, 1, -1);
	set_max_queued(old);
	assert_int_equal(r, 0);
	disk_monitor_scan(&m, 1); /* the root is read; "a" and its 8 MiB wait */
	for (int i = 0; i < 64; i++) {
		snprintf(f, sizeof(f), "%s/n%d", root, i);
		close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	}
	disk_monitor_read(&m); /* IN_Q_OVERFLOW: a rescan */
	assert_true(m.rescans >= 1);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	/* 64 empty files of growth at most, not the 8 MiB that were there. */
	assert_true(disk_monitor_growth(&m) < MiB);
	disk_monitor_close(&m, -1, NULL, NULL, NULL, NULL);
}

/*
 * A child holds a 2 MiB file unlinked (fd) and a 1 MiB one mapped, its fd
 * closed, unlinked; it says so on ready and waits for the pipe to close.
 */
static pid_t hold_unlinked(int ready[2], int go[2])
{
	char f[128], c = 0;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd, mfd;
		void *p;

		close(ready[0]);
		close(go[1]);
		snprintf(f, sizeof(f), "%s/gone", root);
		fd = open(f, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		unlink(f);
		snprintf(f, sizeof(f), "%s/mapped", root);
		mfd = open(f, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || mfd < 0 || ftruncate(mfd, MiB) < 0)
			_exit(1);
		p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
		close(mfd);
		unlink(f);
		if (p == MAP_FAILED)
			_exit(1);
		memset(p, 'm', MiB);
		for (int i = 0; i < 2; i++) {
			static char buf[MiB];

			if (write(fd, buf, MiB) != MiB)
				_exit(1);
		}
		fsync(fd);
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	return pid;
}

/* Files held with no name count (held scan), once each, and go with their holder. */
static void held_unlinked_files_count(void **state)
{
	const char *roots[] = {root};
	struct disk_monitor m;
	int ready[2], go[2];
	pid_t pid;

	(void)state;
	assert_int_equal(disk_monitor_open(&m, roots, 1, -1), 0);
	while (disk_monitor_scanning(&m))
		disk_monitor_scan(&m, SIZE_MAX);
	pid = hold_unlinked(ready, go);
	disk_monitor_read(&m);
	assert_true(m.held_wanted); /* the unlinks hint at it */
	disk_held_scan(&m, NULL, getpid());
	assert_false(m.held_blind);
	assert_int_equal(m.held_count, 2);
	assert_true(m.held >= 3 * MiB && m.held < 4 * MiB);
	assert_true(disk_monitor_growth(&m) >= 3 * MiB);
	assert_true(disk_monitor_entries(&m) >= 2);
	close(go[1]);
	close(ready[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	disk_held_scan(&m, NULL, getpid());
	assert_int_equal(m.held, 0);
	assert_true(disk_monitor_growth(&m) < MiB);
	disk_monitor_close(&m, -1, NULL, NULL, NULL, NULL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

UNIT_MAIN(T(write_before_scan_is_baseline), T(renamed_while_queued_is_read),
	  T(overflow_during_scan_restarts_it), T(deep_tree_is_watched_and_removed),
	  T(empty_files_count_as_entries), T(watch_exhaustion_fails_closed),
	  T(held_unlinked_files_count))
