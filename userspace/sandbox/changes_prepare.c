// SPDX-License-Identifier: GPL-2.0
/*
 * `bpfbox prepare` (docs/runtime.md, "Change sets"): the keeper of a
 * workspace's next review session (changes_warm.c) started before any
 * session, as a review session's end starts one, so that a runtime's
 * first tool call in a workspace also takes an overlay made ahead; and
 * with --release every keeper of a workspace told to go and waited for,
 * so that its file system can be unmounted once the runtime is done.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "changes.h"
#include "changes_internal.h"
#include "grants.h"
#include "../probe/probe.h"
#include "../lib/util.h"

/* What may run as a keeper's program: this binary, as closer_exec runs it. */
#define KEEPER_ARGV0 "bpfbox"
#define KEEPER_CMD   "__changes-keep"

/* Yama's ptrace_scope, or 0 without Yama. */
static int yama_scope(void)
{
	char buf[8] = "";
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = '\0';
	close(fd);
	return atoi(buf);
}

/*
 * The keeper: `bpfbox __changes-keep u|r SECS ROOTFD WSFD [PIDFD]`, this
 * binary with an empty environment, /dev/null for its standard fds, the
 * three fds its only others, in a session of its own (no terminal's
 * signals). Its pid, or -errno.
 */
static pid_t spawn_keeper(bool userns, int secs, int root, int ws, int old)
{
	char num[4][16], *envp[] = {NULL};
	char *argv[] = {KEEPER_ARGV0, KEEPER_CMD, userns ? "u" : "r",	    num[0],
			num[1],	      num[2],	  old >= 0 ? num[3] : NULL, NULL};
	sigset_t none;
	pid_t pid;
	int null;

	snprintf(num[0], sizeof(num[0]), "%d", secs);
	snprintf(num[1], sizeof(num[1]), "%d", root);
	snprintf(num[2], sizeof(num[2]), "%d", ws);
	snprintf(num[3], sizeof(num[3]), "%d", old);
	pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	null = open("/dev/null", O_RDWR);
	for (int i = 0; i < 3 && null >= 0; i++)
		dup2(null, i);
	setsid();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGUSR1, SIG_DFL);
	/* Every other fd of the caller's closed at the exec (a runtime's pipe would wait on it). */
	syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
	fcntl(root, F_SETFD, 0);
	fcntl(ws, F_SETFD, 0);
	if (old >= 0)
		fcntl(old, F_SETFD, 0);
	execve("/proc/self/exe", argv, envp);
	_exit(127);
}

/* The keeper recorded for ws now, checked (ch_warm_keeper): its pidfd, or -1. */
static int recorded_keeper(const char *root, const struct stat *ws, bool userns, pid_t *pid)
{
	char name[WARM_NAME_LEN + 1];
	int at[W_FDS], pidfd;

	*pid = 0;
	if (ch_warm_read(root, ws, userns, pid, at, name) < 0)
		return -1;
	pidfd = ch_warm_keeper(root, *pid, at[W_DIR], name, NULL);
	return pidfd < 0 ? -1 : pidfd;
}

/* Until the record names kpid (0), kpid exits (its status), or CHANGES_PREPARE_MS. */
static int wait_recorded(const char *root, const struct stat *ws, bool userns, pid_t kpid,
			 int *status)
{
	struct timespec nap = {0, 500 * 1000};
	char name[WARM_NAME_LEN + 1];
	int at[W_FDS];
	pid_t pid;

	for (long i = 0; i < CHANGES_PREPARE_MS * 2L; i++) {
		if (ch_warm_read(root, ws, userns, &pid, at, name) == 0 && pid == kpid)
			return 0;
		if (waitpid(kpid, status, WNOHANG) == kpid)
			return -ECHILD;
		nanosleep(&nap, NULL);
	}
	return -ETIMEDOUT;
}

int changes_prepare(const char *workspace, char *why, size_t why_size)
{
	_cleanup_close_ int ws = -1, root = -1, old = -1;
	bool userns = geteuid() != 0 || !probe_has_sys_admin();
	int secs = changes_warm_secs(), scope = yama_scope(), r, status = 0;
	char dir[PATH_MAX] = "";
	struct stat st;
	pid_t pid;

	if (secs <= 0) {
		snprintf(why, why_size,
			 secs ? "BPFBOX_CHANGES_WARM='%s' is not a number of seconds from 0 to %d"
			      : "BPFBOX_CHANGES_WARM=0 keeps no overlay ahead; nothing prepared",
			 getenv("BPFBOX_CHANGES_WARM"), CHANGES_WARM_MAX);
		return -EINVAL;
	}
	if (scope >= 3 || (scope >= 1 && userns)) {
		snprintf(why, why_size,
			 "Yama's ptrace_scope is %d here: a session could not take an overlay "
			 "made ahead (pidfd_getfd); nothing prepared",
			 scope);
		return -EPERM;
	}
	if ((ws = path_open_exact(workspace, O_DIRECTORY)) < 0 || fstat(ws, &st) < 0) {
		r = ws < 0 ? ws : -errno;
		snprintf(why, why_size, "%s: %s", workspace, strerror(-r));
		return r;
	}
	if ((r = changes_root_usable(dir, sizeof(dir), workspace, why, why_size)) < 0)
		return r;
	if ((root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(why, why_size, "%s: %s", dir, strerror(-r));
		return r;
	}
	/* The keeper recorded now, if any, is told to go by the new one once its overlay is made. */
	old = recorded_keeper(dir, &st, userns, &pid);
	if ((pid = spawn_keeper(userns, secs, root, ws, old)) < 0) {
		snprintf(why, why_size, "cannot start the keeper: %s", strerror(-pid));
		return (int)pid;
	}
	r = wait_recorded(dir, &st, userns, pid, &status);
	if (r == -ETIMEDOUT) {
		kill(pid, SIGUSR1); /* it removes what it made */
		snprintf(why, why_size, "the overlay of %s was not made in %d ms; nothing prepared",
			 workspace, CHANGES_PREPARE_MS);
	} else if (r < 0) {
		snprintf(why, why_size,
			 "cannot make the overlay of %s ahead (its keeper exited %d); nothing "
			 "prepared, a review session makes its own",
			 workspace,
			 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	return r;
}

/* Whether /proc/PID/NAME (NAME: fd/N, exe) is the file of st. */
static bool proc_is(pid_t pid, const char *name, const struct stat *st)
{
	char path[320];
	struct stat at;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return stat(path, &at) == 0 && at.st_dev == st->st_dev && at.st_ino == st->st_ino;
}

/*
 * What pid is to workspace ws: 0 nothing; 1 a bpfbox process of this user
 * that holds it (this binary: a session's, or the end's helper on its way
 * to become a keeper); 2 a keeper that holds it.
 */
static int holder(pid_t pid, const struct stat *ws, const struct stat *self)
{
	static const char keeper[] = KEEPER_ARGV0 "\0" KEEPER_CMD;
	char path[64], cmd[64] = "", fdn[280];
	struct dirent *e;
	bool keeps, ours;
	struct stat st;
	ssize_t n;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0 || st.st_uid != geteuid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	keeps = n > (ssize_t)sizeof(keeper) && !memcmp(cmd, keeper, sizeof(keeper));
	ours = keeps || proc_is(pid, "exe", self);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!ours || !(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		snprintf(fdn, sizeof(fdn), "fd/%s", e->d_name);
		if (e->d_name[0] != '.' && proc_is(pid, fdn, ws))
			break;
	}
	closedir(d);
	return !e ? 0 : keeps ? 2 : 1;
}

/* One look at every process: the keepers of ws told to go (by pidfd), the bpfbox holders counted. */
static unsigned int release_scan(const struct stat *ws, const struct stat *self, pid_t *first)
{
	unsigned int busy = 0;
	struct dirent *e;
	char *end;
	DIR *d = opendir("/proc");

	while (d && (e = readdir(d))) {
		long pid = strtol(e->d_name, &end, 10);
		int pfd, what;

		/* The pidfd first: a pid reused after the checks is not signalled (ESRCH). */
		if (*end || pid <= 1 || pid == getpid() ||
		    (pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0)) < 0)
			continue;
		if ((what = holder((pid_t)pid, ws, self)) == 2)
			syscall(SYS_pidfd_send_signal, pfd, SIGUSR1, NULL, 0);
		close(pfd);
		if (what && !busy++)
			*first = (pid_t)pid;
	}
	if (d)
		closedir(d);
	return busy;
}

int changes_release(const char *workspace, char *why, size_t why_size)
{
	struct timespec nap = {0, 10 * 1000 * 1000};
	struct stat ws, self;
	unsigned int busy;
	int64_t deadline;
	pid_t first = 0;

	if (stat(workspace, &ws) < 0 || stat("/proc/self/exe", &self) < 0) {
		snprintf(why, why_size, "%s: %s", workspace, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(ws.st_mode)) {
		snprintf(why, why_size, "%s: not a directory", workspace);
		return -ENOTDIR;
	}
	/*
	 * Until no bpfbox process of this user holds it: each keeper exits
	 * once it has removed its set (its mounts and fds gone then), and a
	 * session's end that is making one is waited for and its keeper told
	 * at the next look.
	 */
	deadline = clock_now_ns(CLOCK_MONOTONIC) + CHANGES_RELEASE_WAIT_MS * 1000000LL;
	while ((busy = release_scan(&ws, &self, &first)) &&
	       clock_now_ns(CLOCK_MONOTONIC) < deadline)
		nanosleep(&nap, NULL);
	if (busy) {
		snprintf(why, why_size,
			 "%u bpfbox process%s still hold%s %s after %d ms (pid %d: a session "
			 "running there?)",
			 busy, busy == 1 ? "" : "es", busy == 1 ? "s" : "", workspace,
			 CHANGES_RELEASE_WAIT_MS, (int)first);
		return -EBUSY;
	}
	return 0;
}
