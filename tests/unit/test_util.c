// SPDX-License-Identifier: GPL-2.0
/*
 * The small shared helpers of lib/util.h and the JSON writer's raw text
 * (lib/jsonw.h), the cgroup file reader (lib/cgroup.h): name tables, fd_close, mkdir_parents on a real directory,
 * signalfd_block with a real signal, jsonw_printf past the first buffer,
 * SHA-256 and HMAC-SHA256 (lib/sha256.h), the byte queue (lib/buf.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/buf.h"
#include "lib/cgroup.h"
#include "lib/jsonw.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "sandbox/changes.h"
#include "scratch.h"
#include "skip.h"
#include "unit_main.h"

static void names(void **state)
{
	static const char *const tab[] = {[0] = "zero", [2] = "two"};

	(void)state;
	assert_int_equal(name_index(tab, ARRAY_SIZE(tab), "two"), 2);
	assert_int_equal(name_index(tab, ARRAY_SIZE(tab), "one"), -EINVAL);
	assert_int_equal(name_index(tab, 2, "two"), -EINVAL); /* past n */
	assert_string_equal(name_of(tab, ARRAY_SIZE(tab), 0, "?"), "zero");
	assert_string_equal(name_of(tab, ARRAY_SIZE(tab), 1, "?"), "?"); /* a hole */
	assert_string_equal(name_of(tab, ARRAY_SIZE(tab), 3, "?"), "?");
}

static void closes(void **state)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), old = fd;

	(void)state;
	assert_true(fd >= 0);
	fd_close(&fd);
	assert_int_equal(fd, -1);
	assert_int_equal(fcntl(old, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	fd_close(&fd); /* twice: nothing */
	assert_int_equal(fd, -1);
}

static void parents(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], long_path[PATH_MAX + 8];
	struct stat st;

	(void)state;
	assert_int_equal(scratch_make(dir, sizeof(dir), "util"), 0);
	snprintf(path, sizeof(path), "%s/a/b/c/leaf", dir);
	assert_int_equal(mkdir_parents(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/a/b/c", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/a/b/c/leaf", dir);
	assert_int_equal(stat(path, &st), -1);		/* the last component is the caller's */
	assert_int_equal(mkdir_parents(path, 0700), 0); /* again: they exist */
	memset(long_path, 'x', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	assert_int_equal(mkdir_parents(long_path, 0700), -ENAMETOOLONG);
	assert_int_equal(scratch_remove(dir), 0);
}

static void signals(void **state)
{
	static const int sigs[] = {SIGUSR1};
	struct signalfd_siginfo si;
	sigset_t old, now;
	int fd;

	(void)state;
	fd = signalfd_block(sigs, ARRAY_SIZE(sigs), &old);
	assert_true(fd >= 0);
	assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &now), 0);
	assert_true(sigismember(&now, SIGUSR1));
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	/* nothing pending yet: non-blocking */
	assert_int_equal(read(fd, &si, sizeof(si)), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(raise(SIGUSR1), 0);
	assert_int_equal(read(fd, &si, sizeof(si)), sizeof(si));
	assert_int_equal(si.ssi_signo, SIGUSR1);
	close(fd);
	assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
}

/* Flat keyed files: a key is a whole word at the start of a line. */
static void keyed(void **state)
{
	const char *events = "low 0\nhigh 0\nmax 2\noom 3\noom_kill 1\noom_group_kill 0\n";
	char dir[PATH_MAX], path[PATH_MAX + 16], buf[64];
	uint64_t v = 77;
	FILE *f;

	(void)state;
	assert_true(cgroup_key(events, "oom", &v));
	assert_int_equal(v, 3);
	assert_true(cgroup_key(events, "oom_kill", &v));
	assert_int_equal(v, 1);
	assert_true(cgroup_key(events, "low", &v));
	assert_int_equal(v, 0);
	v = 77;
	assert_false(cgroup_key(events, "kill", &v)); /* inside a word */
	assert_false(cgroup_key(events, "oom_", &v));
	assert_int_equal(v, 77);
	assert_int_equal(scratch_make(dir, sizeof(dir), "cgkey"), 0);
	snprintf(path, sizeof(path), "%s/cpu.stat", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("usage_usec 123456\nuser_usec 100000\n", f);
	fclose(f);
	assert_true(cgroup_read(dir, "cpu.stat", buf, sizeof(buf)) > 0);
	assert_true(cgroup_key(buf, "usage_usec", &v));
	assert_int_equal(v, 123456);
	assert_int_equal(cgroup_read(dir, "memory.current", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(scratch_remove(dir), 0);
}

static void raw_text(void **state)
{
	struct jsonw w = {0};
	char want[2048];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 100; i++) {
		jsonw_printf(&w, "line %d\n", i);
		n += snprintf(want + n, sizeof(want) - n, "line %d\n", i);
	}
	jsonw_append(&w, "a\"b", 3);
	n += snprintf(want + n, sizeof(want) - n, "a\"b");
	assert_false(w.oom);
	assert_int_equal(w.len, n);
	assert_true(n > 512); /* past the first buffer */
	assert_string_equal(w.buf, want);
	jsonw_free(&w);
}

/*
 * lib/sha256: the published vectors (FIPS 180-4 examples, RFC 4231), and
 * coreutils' sha256sum on every length from 0 to 300 bytes, which crosses
 * the padding's edges (55, 56, 63, 64 bytes and their multiples).
 */
static void hex(const uint8_t d[SHA256_LEN], char out[2 * SHA256_LEN + 1])
{
	for (int i = 0; i < SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void vectors(void **state)
{
	static const struct {
		const char *in, *want;
	} v[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	uint8_t d[SHA256_LEN];
	char got[2 * SHA256_LEN + 1];
	struct sha256 c;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256(v[i].in, strlen(v[i].in), d);
		hex(d, got);
		assert_string_equal(got, v[i].want);
	}
	/* a million 'a', fed in uneven pieces */
	sha256_init(&c);
	for (size_t left = 1000000, n = 1; left; left -= n, n = n % 97 + 1) {
		char a[97];

		if (n > left)
			n = left;
		memset(a, 'a', n);
		sha256_update(&c, a, n);
	}
	sha256_final(&c, d);
	hex(d, got);
	assert_string_equal(got,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void hmac(void **state)
{
	static const char big[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	uint8_t key[131], d[SHA256_LEN];
	char got[2 * SHA256_LEN + 1];

	(void)state;
	/* RFC 4231 test case 2: a key shorter than the block */
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, got);
	assert_string_equal(got,
			    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* test case 6: a key longer than the block is hashed first */
	memset(key, 0xaa, sizeof(key));
	hmac_sha256(key, sizeof(key), big, strlen(big), d);
	hex(d, got);
	assert_string_equal(got,
			    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void against_sha256sum(void **state)
{
	char path[] = "/tmp/bpfbox-sha256-XXXXXX", cmd[128], line[128], got[2 * SHA256_LEN + 1];
	uint8_t buf[300], d[SHA256_LEN];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof(buf); n++) {
		FILE *p;

		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
		snprintf(cmd, sizeof(cmd), "sha256sum %s", path);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(line, sizeof(line), p));
		assert_int_equal(pclose(p), 0);
		sha256(buf, n, d);
		hex(d, got);
		assert_memory_equal(line, got, 2 * SHA256_LEN);
	}
	close(fd);
	unlink(path);
}

/* path_plain: what the cgroup1 reply check and absolute deny patterns rely on. */
static void plain_paths(void **state)
{
	static const char *const yes[] = {"/a", "/a/b", "/.a/..b/...", "/a b/c"};
	static const char *const no[] = {"",	 "/",	  "a/b",    "//a",    "/a//b",
					 "/a/",	 "/.",	  "/..",    "/a/.",   "/a/..",
					 "/./a", "/../a", "/a/./b", "/a/../b"};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(path_plain(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (path_plain(no[i]))
			fail_msg("path_plain(\"%s\") is true", no[i]);
}

/*
 * In a child confined to a scratch root (its own user namespace, then
 * chroot): rm_tree of "", of a relative name and of "/" by any name, and
 * changes_remove of a set whose directory was never made, touch nothing.
 * The last one once built "" + "/work" and removed the host's /work
 * whole; here "/" and "/work" are the scratch's, so even a regression
 * cannot reach the host. The child's exit: 0, or the check that failed.
 */
static int confined_removals(const char *root)
{
	struct changes_set cs;
	char cwd[64];

	if (geteuid() != 0 && unshare(CLONE_NEWUSER) < 0)
		return 90;
	if (chroot(root) < 0 || chdir("/") < 0)
		return 91;
	if (rm_tree("") != -EINVAL || access("/work/sentinel", F_OK) < 0)
		return 1;
	snprintf(cwd, sizeof(cwd), "/rel");
	if (chdir(cwd) < 0 || rm_tree("victim") != -EINVAL || access("/rel/victim/f", F_OK) < 0)
		return 2;
	if (rm_tree("/") != -EINVAL || rm_tree("//") != -EINVAL || rm_tree("/rel/..") != -EINVAL ||
	    rm_tree("/.") != -EINVAL || access("/work/sentinel", F_OK) < 0)
		return 3;
	memset(&cs, 0, sizeof(cs));
	if (changes_remove(&cs) != -EINVAL || changes_remove_work(&cs) != -EINVAL)
		return 4;
	if (access("/work/sentinel", F_OK) < 0 || access("/work/work/x", F_OK) < 0)
		return 5;
	return 0;
}

static void removals_refused(void **state)
{
	char root[64], p[128];
	int st = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(scratch_make(root, sizeof(root), "rmtree"), 0);
	snprintf(p, sizeof(p), "%s/work/work", root);
	assert_int_equal(mkdir_parents(p, 0755), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/work/sentinel", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/work/work/x", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/rel/victim/f", root);
	assert_int_equal(mkdir_parents(p, 0755), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(confined_removals(root));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) >= 90) {
		scratch_remove(root);
		skip_why("removals_refused: no chroot here (not root, no user namespaces); the "
			 "root runs of CI have it");
	}
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* And seen from outside: every directory is still there. */
	snprintf(p, sizeof(p), "%s/work/work/x", root);
	assert_int_equal(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/rel/victim/f", root);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(scratch_remove(root), 0);
	assert_int_equal(access(root, F_OK), -1);
}

/*
 * A queue that never empties (a peer that reads a little less than it is
 * sent, as an HTTP/2 body's does): 16 MB pass through it, in order, and it
 * holds a small multiple of what is queued at once, not of what passed.
 */
static void queue_bounded(void **state)
{
	static char in[16384];
	struct buf b = {0};
	unsigned char next = 0, want = 0;

	(void)state;
	for (int r = 0; r < 1024; r++) {
		/* After the first round, 100 bytes stay queued. */
		size_t add = r ? sizeof(in) - 100 : sizeof(in);

		for (size_t i = 0; i < add; i++)
			in[i] = (char)next++;
		assert_int_equal(buf_append(&b, in, add), 0);
		for (size_t i = 0; i < sizeof(in) - 100; i++)
			assert_int_equal((unsigned char)b.p[b.off + i], want++);
		buf_consume(&b, sizeof(in) - 100);
		assert_int_equal(buf_used(&b), 100);
	}
	assert_true(b.cap <= 4 * sizeof(in));
	buf_consume(&b, 100);
	assert_int_equal(buf_used(&b), 0);
	buf_free(&b);
	assert_null(b.p);
}

UNIT_MAIN(cmocka_unit_test(names), cmocka_unit_test(closes), cmocka_unit_test(parents),
	  cmocka_unit_test(signals), cmocka_unit_test(keyed), cmocka_unit_test(raw_text),
	  cmocka_unit_test(vectors), cmocka_unit_test(hmac), cmocka_unit_test(against_sha256sum),
	  cmocka_unit_test(plain_paths), cmocka_unit_test(removals_refused),
	  cmocka_unit_test(queue_bounded))
