// SPDX-License-Identifier: GPL-2.0
/*
 * The closer (lib/closer.h), by what the kernel says about pipes: an fd it
 * holds stays open after our close (the reader sees no EOF) until
 * closer_end(); every other fd is not held by it (our close is the last
 * one: EOF at once); closer_bpf_fds() finds BPF objects only; a tree
 * given to closer_remove() is still there until closer_end() and gone
 * after it, its mode-0 directories too, a symlink in it removed but never
 * followed; one closer runs one helper at a time, and a use's jobs are not
 * the next one's; a prepared directory lands whole in the first free slot;
 * jobs and fds gathered from several callers go with one helper.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <linux/bpf.h>

#include "lib/closer.h"
#include "scratch.h"
#include "skip.h"
#include "unit_main.h"

/* Whether the read end sees EOF (every write end closed) within ms. */
static int eof_within(int rfd, int ms)
{
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	char b;

	if (poll(&p, 1, ms) != 1)
		return 0;
	return read(rfd, &b, 1) == 0;
}

static struct closer c;

static void held_until_end(void **state)
{
	int held[2], other[2];

	(void)state;
	assert_int_equal(pipe2(held, O_CLOEXEC), 0);
	assert_int_equal(pipe2(other, O_CLOEXEC), 0);
	assert_int_equal(closer_begin(&c, &held[1], 1), 0);
	close(held[1]);
	close(other[1]);
	/* Not held: ours was the last write end. */
	assert_true(eof_within(other[0], 2000));
	/* Held by the helper: no EOF while it runs... */
	assert_false(eof_within(held[0], 200));
	closer_end(&c);
	/* ...and EOF once it has gone. */
	assert_true(eof_within(held[0], 5000));
	close(held[0]);
	close(other[0]);
}

static void nothing_to_hold(void **state)
{
	int p[2] = {-1, -1};

	(void)state;
	/* Only its own pipes: it still starts and ends. */
	assert_int_equal(closer_begin(&c, NULL, 0), 0);
	closer_end(&c);
	assert_int_equal(closer_begin(&c, p, CLOSER_MAX_FDS + 1), -E2BIG);
}

static void finds_bpf_fds(void **state)
{
	union bpf_attr attr = {0};
	int fds[CLOSER_MAX_FDS], map, pipefd[2];
	size_t n;
	int found = 0;

	(void)state;
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	map = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (map < 0) {
		/* The daemon and audit suites cover the BPF side where it runs. */
		skip_why("closer_bpf_fds: cannot create a BPF map here (%s)",
			 errno == EPERM ? "not root" : "no bpf(2)");
	}
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	n = closer_bpf_fds(fds, CLOSER_MAX_FDS);
	for (size_t i = 0; i < n; i++) {
		assert_int_not_equal(fds[i], pipefd[0]);
		assert_int_not_equal(fds[i], pipefd[1]);
		found |= fds[i] == map;
	}
	assert_true(found);
	close(map);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Whether path is gone within ms. */
static int gone_within(const char *path, int ms)
{
	struct timespec t = {.tv_nsec = 10 * 1000 * 1000};
	struct stat st;

	for (int i = 0; i < ms / 10; i++) {
		if (lstat(path, &st) < 0 && errno == ENOENT)
			return 1;
		nanosleep(&t, NULL);
	}
	return 0;
}

static struct closer rc; /* its own: c's helper may still be on its way out */

static void removes_once_let_go(void **state)
{
	char dir[64], t[128], p[160], keep[128];
	struct stat st;
	int dfd, fd;

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer"), 0);
	snprintf(t, sizeof(t), "%s/t", dir);
	snprintf(keep, sizeof(keep), "%s/keep", dir);
	fd = open(keep, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	const char *dirs[] = {"", "/a", "/a/b", "/a/b/c", "/work", "/work/work"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", t, dirs[i]);
		assert_int_equal(mkdir(p, 0700), 0);
	}
	snprintf(p, sizeof(p), "%s/a/f", t);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	/* A link out of the tree, to the directory holding keep: removed, never followed. */
	snprintf(p, sizeof(p), "%s/a/b/out", t);
	assert_int_equal(symlink(dir, p), 0);
	/* overlayfs's work dirs: mode 0, nobody may search them. */
	snprintf(p, sizeof(p), "%s/work/work", t);
	assert_int_equal(chmod(p, 0), 0);
	snprintf(p, sizeof(p), "%s/work", t);
	assert_int_equal(chmod(p, 0), 0);
	assert_int_equal(closer_remove(&rc, 0, "a/b"), -EINVAL);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(closer_remove(&rc, dfd, "t"), 0);
	assert_int_equal(closer_begin(&rc, NULL, 0), 0);
	close(dfd); /* the helper holds its own */
	assert_false(gone_within(t, 200));
	closer_end(&rc);
	assert_true(gone_within(t, 5000));
	assert_int_equal(stat(keep, &st), 0);
	assert_int_equal(scratch_remove(dir), 0);
}

static struct closer nc;

/* nowait: the tree goes without closer_end(); what it holds is dropped by the helper. */
static void nowait_removes_at_once(void **state)
{
	char dir[64], t[128];
	int dfd, held[2];

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-nowait"), 0);
	snprintf(t, sizeof(t), "%s/t", dir);
	assert_int_equal(mkdir(t, 0700), 0);
	assert_int_equal(pipe2(held, O_CLOEXEC), 0);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	nc.nowait = true;
	assert_int_equal(closer_remove(&nc, dfd, "t"), 0);
	assert_int_equal(closer_begin(&nc, &held[1], 1), 0);
	close(dfd);
	close(held[1]);
	assert_true(gone_within(t, 5000));
	/* The helper has exited: its copy of the write end is gone too. */
	assert_true(eof_within(held[0], 5000));
	closer_end(&nc); /* nothing to do */
	close(held[0]);
	assert_int_equal(scratch_remove(dir), 0);
}

static struct closer mc;

/* A file system mounted in the tree is left alone, as rm_tree leaves it (root: a tmpfs). */
static void leaves_other_file_systems(void **state)
{
	char dir[64], p[160], m[128], x[160];
	int dfd, fd;

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-mnt"), 0);
	snprintf(p, sizeof(p), "%s/t", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/t/a", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(m, sizeof(m), "%s/t/m", dir);
	assert_int_equal(mkdir(m, 0700), 0);
	if (mount("tmpfs", m, "tmpfs", 0, "size=64k") < 0) {
		scratch_remove(dir);
		/* test_changes removes real sets as root in the host suite. */
		skip_why("closer_remove across a mount: cannot mount a tmpfs here (%s)",
			 strerror(errno));
	}
	snprintf(x, sizeof(x), "%s/x", m);
	fd = open(x, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(closer_remove(&mc, dfd, "t"), 0);
	assert_int_equal(closer_begin(&mc, NULL, 0), 0);
	close(dfd);
	closer_end(&mc);
	snprintf(p, sizeof(p), "%s/t/a", dir);
	assert_true(gone_within(p, 5000));
	nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
	assert_int_equal(access(x, F_OK), 0);
	assert_int_equal(umount(m), 0);
	assert_int_equal(scratch_remove(dir), 0);
}

/* Whether the closer's helper has left our memory (closer.h, busy) within ms. */
static int idle_within(const struct closer *k, int ms)
{
	struct timespec t = {.tv_nsec = 10 * 1000 * 1000};

	for (int i = 0; i < ms / 10; i++) {
		if (!__atomic_load_n(&k->busy, __ATOMIC_ACQUIRE))
			return 1;
		nanosleep(&t, NULL);
	}
	return 0;
}

static struct closer bc;

/*
 * One closer, one helper at a time: while its helper runs (here it waits
 * for closer_end), a second use is refused and changes nothing, where it
 * used to start a second helper on the same stack. Once the kernel says
 * the helper has exited (the word it clears), the closer serves again.
 */
static void busy_until_exit(void **state)
{
	int held[2], dfd;
	char dir[64];

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-busy"), 0);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(pipe2(held, O_CLOEXEC), 0);
	assert_int_equal(closer_begin(&bc, &held[1], 1), 0);
	close(held[1]);
	assert_int_equal(closer_begin(&bc, NULL, 0), -EBUSY);
	assert_int_equal(closer_remove(&bc, dfd, "t"), -EBUSY);
	assert_int_equal(closer_sweep(&bc, dfd, "p", "s"), -EBUSY);
	/* The refused calls changed nothing: the helper still holds its fd, and only it. */
	assert_false(eof_within(held[0], 200));
	closer_end(&bc);
	assert_true(eof_within(held[0], 5000));
	assert_true(idle_within(&bc, 5000));
	assert_int_equal(closer_begin(&bc, NULL, 0), 0);
	closer_end(&bc);
	assert_true(idle_within(&bc, 5000));
	close(held[0]);
	close(dfd);
	assert_int_equal(scratch_remove(dir), 0);
}

/* Makes dir/name a directory last modified two minutes ago (older than CLOSER_SWEEP_AGE). */
static void old_dir(const char *dir, const char *name)
{
	struct timespec ts[2];
	char p[192];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(mkdir(p, 0700), 0);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 2 * CLOSER_SWEEP_AGE;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static struct closer jc;

/* A use's sweep is its own: the closer's next use, which asks for none, removes nothing. */
static void jobs_not_inherited(void **state)
{
	const char *a = "h0123456789abcdef0123456789abcdefx",
		   *b = "h00000000000000000000000000000000x";
	char dir[64], p[192];
	int dfd, held[2];

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-jobs"), 0);
	old_dir(dir, a);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	jc.nowait = true;
	assert_int_equal(closer_sweep(&jc, dfd, "h", "x"), 0);
	assert_int_equal(closer_begin(&jc, NULL, 0), 0);
	snprintf(p, sizeof(p), "%s/%s", dir, a);
	assert_true(gone_within(p, 5000));
	assert_true(idle_within(&jc, 5000));
	old_dir(dir, b);
	/* Its end known by EOF on the pipe it holds: its fds go after everything it did. */
	assert_int_equal(pipe2(held, O_CLOEXEC), 0);
	assert_int_equal(closer_begin(&jc, &held[1], 1), 0);
	close(held[1]);
	assert_true(eof_within(held[0], 5000));
	close(held[0]);
	snprintf(p, sizeof(p), "%s/%s", dir, b);
	assert_int_equal(access(p, F_OK), 0);
	close(dfd);
	assert_int_equal(scratch_remove(dir), 0);
}

static struct closer hc;

/*
 * A name hidden by a dot for its removal (home.c session_home_hide), whose
 * helper was killed, is swept as the name itself; two dots are not one.
 */
static void sweeps_hidden_names(void **state)
{
	const char *hidden = ".h0123456789abcdef0123456789abcdefx",
		   *twice = "..h0123456789abcdef0123456789abcdefx";
	char dir[64], p[192];
	int dfd;

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-hidden"), 0);
	old_dir(dir, hidden);
	old_dir(dir, twice);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	hc.nowait = true;
	assert_int_equal(closer_sweep(&hc, dfd, "h", "x"), 0);
	assert_int_equal(closer_begin(&hc, NULL, 0), 0);
	snprintf(p, sizeof(p), "%s/%s", dir, hidden);
	assert_true(gone_within(p, 5000));
	assert_true(idle_within(&hc, 5000));
	snprintf(p, sizeof(p), "%s/%s", dir, twice);
	assert_int_equal(access(p, F_OK), 0);
	close(dfd);
	assert_int_equal(scratch_remove(dir), 0);
}

static struct closer pc;

/* One prepare's directory with its subs, renamed in whole to the first free slot. */
static void prepares_into_free_slots(void **state)
{
	static const char *const subs[] = {"upper", "work"};
	char dir[64], p[192];
	struct stat st;
	int dfd;

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-prep"), 0);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	/* Names that are not one entry are refused. */
	assert_int_equal(closer_prepare(&pc, dfd, "a/b", "s.", 2, subs, 2), -EINVAL);
	assert_int_equal(closer_prepare(&pc, dfd, "t", "s.", 0, subs, 2), -EINVAL);
	/* Slot 0 taken by a file: the next one; the first sub's mode as asked. */
	snprintf(p, sizeof(p), "%s/s.0", dir);
	close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	for (int i = 1; i <= 3; i++) {
		pc.nowait = true;
		assert_int_equal(closer_prepare(&pc, dfd, "t", "s.", 3, subs, 2), 0);
		closer_prepare_owner(&pc, 0751, -1, -1);
		assert_int_equal(closer_begin(&pc, NULL, 0), 0);
		assert_true(idle_within(&pc, 5000));
		snprintf(p, sizeof(p), "%s/s.%d/upper", dir, i < 3 ? i : 2);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0751);
		snprintf(p, sizeof(p), "%s/s.%d/work", dir, i < 3 ? i : 2);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
		/* Its temporary name never left behind; every slot taken: nothing made. */
		snprintf(p, sizeof(p), "%s/t", dir);
		assert_int_equal(access(p, F_OK), -1);
	}
	snprintf(p, sizeof(p), "%s/s.3", dir);
	assert_int_equal(access(p, F_OK), -1);
	close(dfd);
	assert_int_equal(scratch_remove(dir), 0);
}

static struct closer gc;

/*
 * Jobs and fds gathered over several calls, their directories' fds and
 * the held fd closed by the callers at once, one helper started by the
 * last caller (closer_flush): both trees go, the held pipe end is the
 * helper's until it exits; a third removal is refused.
 */
static void gathers_for_one_helper(void **state)
{
	char dir[64], a[128], b[128];
	int dfd, dfd2, held[2];

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-gather"), 0);
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	assert_int_equal(mkdir(a, 0700), 0);
	assert_int_equal(mkdir(b, 0700), 0);
	assert_int_equal(pipe2(held, O_CLOEXEC), 0);
	assert_false(closer_pending(&gc));
	assert_int_equal(closer_flush(&gc), 0); /* nothing gathered: no helper */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	dfd2 = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0 && dfd2 >= 0);
	assert_int_equal(closer_remove(&gc, dfd, "a"), 0);
	assert_int_equal(closer_hold(&gc, &held[1], 1), 0);
	close(dfd);
	close(held[1]);
	/* Our copy holds the write end: no EOF before any helper. */
	assert_false(eof_within(held[0], 100));
	assert_int_equal(closer_remove(&gc, dfd2, "b"), 0);
	assert_int_equal(closer_remove(&gc, dfd2, "c"), -E2BIG);
	close(dfd2);
	assert_true(closer_pending(&gc));
	assert_int_equal(closer_flush(&gc), 0);
	assert_true(gone_within(a, 5000));
	assert_true(gone_within(b, 5000));
	/* The helper has exited (nowait): the last copy of the write end with it. */
	assert_true(eof_within(held[0], 5000));
	close(held[0]);
	/* Nothing of this use is the next one's: no job, no fd of ours to close again. */
	for (int i = 0; i < 500 && __atomic_load_n(&gc.busy, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	assert_false(closer_pending(&gc));
	assert_int_equal(scratch_remove(dir), 0);
}

/*
 * closer_exec's program (this binary, by /proc/self/exe): before main, an
 * argv[1] of "__closer-exec-test" makes it report on the fd argv[2] names
 * its open fds, its environment's size and its argv, then exit.
 */
__attribute__((constructor)) static void exec_probe(void)
{
	char args[256], line[512], path[64];
	int fd = -1, nfd = 0, n, len;
	extern char **environ;
	ssize_t r;

	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	r = fd >= 0 ? read(fd, args, sizeof(args) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (r <= 0)
		return;
	args[r] = '\0';
	len = (int)strlen(args) + 1;
	if (len >= r || strcmp(args + len, "__closer-exec-test"))
		return;
	fd = atoi(args + len + strlen(args + len) + 1);
	for (int i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", i);
		nfd += access(path, F_OK) == 0;
	}
	for (n = 0; environ && environ[n]; n++)
		;
	len = snprintf(line, sizeof(line), "argv0=%s fds=%d env=%d", args, nfd, n);
	if (write(fd, line, (size_t)len) < 0)
		_exit(1);
	_exit(0);
}

static struct closer ec;

/*
 * closer_exec: once its jobs are done the helper becomes the program, with
 * the fd given (its number on the command line) and nothing else open, an
 * empty environment; the closer is free again (the exec cleared busy).
 */
static void execs_when_done(void **state)
{
	const char *const argv[] = {"probe-name", "__closer-exec-test"};
	char dir[64], got[256] = "";
	int p[2], n = 0;
	ssize_t r;

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "closer-exec"), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(closer_exec(&ec, argv, 2, p, 9), -EINVAL);
	assert_int_equal(closer_exec(&ec, argv, 2, &p[1], 1), 0);
	ec.nowait = true;
	assert_int_equal(closer_begin(&ec, NULL, 0), 0);
	close(p[1]); /* the program's copy is the last write end */
	while (n < (int)sizeof(got) - 1 && (r = read(p[0], got + n, sizeof(got) - 1 - n)) > 0)
		n += (int)r;
	got[n] = '\0';
	close(p[0]);
	assert_string_equal(got, "argv0=probe-name fds=1 env=0");
	assert_true(idle_within(&ec, 5000));
	/* A use without closer_exec: the helper exits, no program. */
	assert_int_equal(closer_begin(&ec, NULL, 0), 0);
	assert_true(idle_within(&ec, 5000));
	assert_int_equal(scratch_remove(dir), 0);
}

UNIT_MAIN(cmocka_unit_test(held_until_end), cmocka_unit_test(nothing_to_hold),
	  cmocka_unit_test(finds_bpf_fds), cmocka_unit_test(removes_once_let_go),
	  cmocka_unit_test(leaves_other_file_systems), cmocka_unit_test(nowait_removes_at_once),
	  cmocka_unit_test(busy_until_exit), cmocka_unit_test(jobs_not_inherited),
	  cmocka_unit_test(sweeps_hidden_names), cmocka_unit_test(prepares_into_free_slots),
	  cmocka_unit_test(gathers_for_one_helper), cmocka_unit_test(execs_when_done))
