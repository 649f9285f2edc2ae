// SPDX-License-Identifier: GPL-2.0
/*
 * What --changes review adds to a session's start, apart from its end
 * (bench/changes.sh, docs/benchmarks.md section 10), and the floor under
 * it: an overlayfs made and torn down with nothing of bpfbox around it.
 *
 *   changes_start stamp [MS]
 *	prints CLOCK_MONOTONIC in ns at its start and, MS ms later, at its
 *	end (one line): the command the sessions run.
 *   changes_start split N BPFBOX WS STAMP [MS]
 *	N rounds, each one session of --changes direct and one of
 *	--changes review (-q --no-daemon -w WS -- STAMP stamp MS), in turn
 *	first, 50 ms of quiet after each; per mode the median and first
 *	quartile, in µs, of the time to the command's start (fork of bpfbox
 *	to the first stamp) and after its end (the second stamp to bpfbox's
 *	exit); then "review-direct": the median, first and third quartiles
 *	of the same round's differences, start then end (a drift of the
 *	host between rounds cancels out of them).
 *   changes_start launch bind|overlay WS CMD...
 *	root: a minimal launcher, the peers' way of a copy-on-write
 *	workspace (sandlock's overlay, bwrap's --overlay where bwrap has
 *	it): a mount namespace of its own; WS bound onto itself (bind) or an
 *	overlay with WS as its lower and a fresh upper and work made under
 *	$TMPDIR for this run (overlay, bpfbox's options) mounted on WS; CMD
 *	forked and waited for; the upper and work removed. Its exit: CMD's.
 *   changes_start overlay N DIR
 *	root: in a mount namespace of its own, N times: a change set's three
 *	directories made in DIR, an overlay of DIR/lower with bpfbox's
 *	options (ns_overlay.c) made and its detached mount closed (its
 *	teardown), the directories removed; the medians in µs.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen   430
#define __NR_fsconfig 431
#define __NR_fsmount  432
#endif

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* The median and the first quartile of v[0..n), in µs. */
static void quartiles(long long *v, int n, double *med, double *q1)
{
	qsort(v, n, sizeof(*v), cmp_ll);
	*med = v[n / 2] / 1e3;
	*q1 = v[n / 4] / 1e3;
}

/* One session: its start and end in ns; -1 when the stamp did not come. */
static int session(const char *bin, const char *mode, const char *ws, const char *stamp,
		   const char *ms, long long *start, long long *end)
{
	char out[96] = {0}, *sp;
	long long t0, t1;
	int p[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	t0 = now_ns();
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(p[1], 1);
		dup2(null, 2);
		close(p[0]);
		execl(bin, bin, "run", "-q", "--no-daemon", "--changes", mode, "-w", ws, "--",
		      stamp, "stamp", ms, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	n = pid < 0 ? -1 : read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	t1 = now_ns();
	if (n <= 0 || !(sp = strchr(out, ' ')))
		return -1;
	*start = atoll(out) - t0;
	*end = t1 - atoll(sp + 1);
	return 0;
}

static int split(int n, const char *bin, const char *ws, const char *stamp, const char *ms)
{
	static const char *const modes[] = {"direct", "review"};
	long long *v = calloc(6 * (size_t)n, sizeof(*v));
	double d[6];

	if (!v)
		return 1;
	for (int r = 0; r < n; r++)
		for (int k = 0; k < 2; k++) {
			int m = (k + r) % 2; /* each mode first in every other round */

			if (session(bin, modes[m], ws, stamp, ms, &v[(2 * m) * n + r],
				    &v[(2 * m + 1) * n + r]) < 0) {
				fprintf(stderr, "changes_start: a %s session printed no stamp\n",
					modes[m]);
				return 1;
			}
			usleep(50000);
		}
	/* The rounds' differences, before the sorts below reorder each mode's. */
	for (int r = 0; r < n; r++) {
		v[4 * n + r] = v[2 * n + r] - v[r];
		v[5 * n + r] = v[3 * n + r] - v[n + r];
	}
	for (int m = 0; m < 2; m++) {
		double sm, sq, em, eq;

		quartiles(&v[(2 * m) * n], n, &sm, &sq);
		quartiles(&v[(2 * m + 1) * n], n, &em, &eq);
		printf("%s\t%.0f\t%.0f\t%.0f\t%.0f\n", modes[m], sm, sq, em, eq);
	}
	quartiles(&v[4 * n], n, &d[0], &d[1]);
	d[2] = v[4 * n + 3 * n / 4] / 1e3;
	quartiles(&v[5 * n], n, &d[3], &d[4]);
	d[5] = v[5 * n + 3 * n / 4] / 1e3;
	printf("review-direct\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", d[0], d[1], d[2], d[3],
	       d[4], d[5]);
	free(v);
	return 0;
}

static int set_str(int fs, const char *key, const char *value)
{
	return syscall(__NR_fsconfig, fs, 1 /* FSCONFIG_SET_STRING */, key, value, 0);
}

/* An overlay of lower with bpfbox's options (ns_overlay.c), detached: its fd, or -1. */
static int make_overlay(const char *lower, const char *upper, const char *work)
{
	int fs = syscall(__NR_fsopen, "overlay", 1 /* FSOPEN_CLOEXEC */), mnt = -1;

	if (fs >= 0 && set_str(fs, "lowerdir", lower) >= 0 && set_str(fs, "upperdir", upper) >= 0 &&
	    set_str(fs, "workdir", work) >= 0 && set_str(fs, "redirect_dir", "nofollow") >= 0 &&
	    set_str(fs, "metacopy", "off") >= 0 && set_str(fs, "index", "off") >= 0 &&
	    syscall(__NR_fsconfig, fs, 0 /* FSCONFIG_SET_FLAG */, "volatile", NULL, 0) >= 0 &&
	    syscall(__NR_fsconfig, fs, 6 /* FSCONFIG_CMD_CREATE */, NULL, NULL, 0) >= 0)
		mnt = syscall(__NR_fsmount, fs, 1 /* FSMOUNT_CLOEXEC */, 0);
	if (fs >= 0)
		close(fs);
	return mnt;
}

static int overlay(int n, const char *dir)
{
	long long *v = calloc(3 * (size_t)n, sizeof(*v));
	char lower[4096], set[4096], upper[4200], work[4200], cmd[4200];
	double med[3], q1[3];

	if (!v || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		perror("changes_start overlay (root only)");
		return 1;
	}
	snprintf(lower, sizeof(lower), "%s/lower", dir);
	mkdir(dir, 0700);
	mkdir(lower, 0755);
	for (int i = 0; i < n; i++) {
		long long t0 = now_ns(), t1, t2, t3;
		int mnt;

		snprintf(set, sizeof(set), "%s/set%d", dir, i);
		snprintf(upper, sizeof(upper), "%s/upper", set);
		snprintf(work, sizeof(work), "%s/work", set);
		if (mkdir(set, 0700) < 0 || mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0) {
			perror("changes_start overlay: mkdir");
			return 1;
		}
		t1 = now_ns();
		if ((mnt = make_overlay(lower, upper, work)) < 0) {
			perror("changes_start overlay: the overlay");
			return 1;
		}
		t2 = now_ns();
		close(mnt); /* its last reference: the overlay torn down here */
		t3 = now_ns();
		v[i] = t1 - t0;
		v[n + i] = t2 - t1;
		v[2 * n + i] = t3 - t2;
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", set);
		if (system(cmd) != 0)
			return 1;
		usleep(20000);
	}
	for (int k = 0; k < 3; k++)
		quartiles(&v[k * n], n, &med[k], &q1[k]);
	printf("dirs\t%.0f\t%.0f\noverlay\t%.0f\t%.0f\nteardown\t%.0f\t%.0f\n", med[0], q1[0],
	       med[1], q1[1], med[2], q1[2]);
	free(v);
	return 0;
}

/* The launcher's copy-on-write workspace (launch overlay): DIR/{upper,work} on WS. */
static int launch_overlay(const char *ws, char *dir)
{
	char upper[4200], work[4200];
	int mnt;

	snprintf(upper, sizeof(upper), "%s/upper", dir);
	snprintf(work, sizeof(work), "%s/work", dir);
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0)
		return -1;
	if ((mnt = make_overlay(ws, upper, work)) < 0)
		return -1;
	/* move_mount(mnt, "", AT_FDCWD, ws, MOVE_MOUNT_F_EMPTY_PATH) */
	return syscall(__NR_move_mount, mnt, "", AT_FDCWD, ws, 0x4) < 0 ? -1 : 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int launch(const char *mode, const char *ws, char **cmd)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], rm[4200];
	int st = 0, ovl = !strcmp(mode, "overlay");
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/changes-launch.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if ((ovl && !mkdtemp(dir)) || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    (ovl ? launch_overlay(ws, dir) : mount(ws, ws, NULL, MS_BIND | MS_REC, NULL)) < 0) {
		perror("changes_start launch");
		return 125;
	}
	pid = fork();
	if (pid == 0) {
		execvp(cmd[0], cmd);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 125;
	if (ovl) {
		/* overlayfs makes its own dirs in work mode 0: searchable first, then all removed. */
		static const char *const own[] = {"work/work", "work/work/incompat",
						  "work/work/incompat/volatile"};

		if (umount2(ws, MNT_DETACH) < 0)
			return 125;
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
			snprintf(rm, sizeof(rm), "%s/%s", dir, own[i]);
			chmod(rm, 0700);
		}
		if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
			return 125;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if ((argc == 2 || argc == 3) && !strcmp(argv[1], "stamp")) {
		long long t0 = now_ns();

		if (argc == 3 && atoi(argv[2]) > 0)
			usleep(1000 * atoi(argv[2]));
		printf("%lld %lld\n", t0, now_ns());
		return 0;
	}
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "split") && atoi(argv[2]) >= 4)
		return split(atoi(argv[2]), argv[3], argv[4], argv[5], argc == 7 ? argv[6] : "0");
	if (argc >= 5 && !strcmp(argv[1], "launch") &&
	    (!strcmp(argv[2], "bind") || !strcmp(argv[2], "overlay")))
		return launch(argv[2], argv[3], argv + 4);
	if (argc == 4 && !strcmp(argv[1], "overlay") && atoi(argv[2]) >= 4)
		return overlay(atoi(argv[2]), argv[3]);
	fprintf(stderr,
		"usage: changes_start stamp [MS] | split N BPFBOX WS STAMP [MS] | overlay N DIR | "
		"launch bind|overlay WS CMD...\n");
	return 2;
}
