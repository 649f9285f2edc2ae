// SPDX-License-Identifier: GPL-2.0
/*
 * An overlay made ahead (docs/runtime.md, "Change sets"; docs/SECURITY.md,
 * "The overlay kept ready"): making a change set's overlay is the most of
 * what review adds to a session's start (docs/benchmarks.md section 10),
 * and a runtime runs its tool calls one after another in one workspace.
 * So the helper that ends a review session (lib/closer.h) becomes a keeper
 * (closer_exec: `bpfbox __changes-keep`) that makes the next session's set,
 * ".HEX.gone" in the sets' directory (locked while kept: the sweep of what
 * killed runs left passes it by), and its overlay of the same workspace,
 * detached (fsmount: in no mount table, gone with its last fd), and
 * records itself beside the sets: ".warm.DEV.INO.r" (".u" for an overlay
 * of the keeper's own user namespace), a symlink whose target names its
 * pid, its fds and the set. The next review session of that workspace
 * takes them with pidfd_getfd, without waking the keeper, and a rename;
 * the keeper exits when the next keeper tells it. Nobody comes for it
 * within its time: it removes what it made and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "changes.h"
#include "changes_internal.h"
#include "grants.h"
#include "ns.h"
#include "../lib/closer.h"
#include "../lib/util.h"

#define WARM_OVERLAYFS_MAGIC 0x794c7630 /* OVERLAYFS_SUPER_MAGIC */

int changes_warm_secs(void)
{
	const char *e = getenv("BPFBOX_CHANGES_WARM");
	char *end;
	unsigned long v;

	if (!e || !e[0])
		return CHANGES_WARM_SECS;
	errno = 0;
	v = strtoul(e, &end, 10);
	return *end || errno || e[0] == '-' || v > CHANGES_WARM_MAX ? -EINVAL : (int)v;
}

int ch_warm_record_path(char *buf, size_t size, const char *dir, const struct stat *ws, bool userns)
{
	int n = snprintf(buf, size, "%s/.warm.%llx.%llx.%c", dir, (unsigned long long)ws->st_dev,
			 (unsigned long long)ws->st_ino, userns ? 'u' : 'r');

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static bool warm_name(const char *s)
{
	if (strlen(s) != WARM_NAME_LEN || s[0] != '.' || strcmp(s + 33, ".gone"))
		return false;
	for (int i = 1; i < 33; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* ---- the next session: the set taken ---- */

/* "PID:DIR:UPPER:WORK:MNT:NAME", the keeper's record, into pid, fds and name. */
static int parse_record(const char *rec, pid_t *pid, int *fds, char *name)
{
	const char *p = rec;
	char *end;
	long v;

	v = strtol(p, &end, 10);
	if (end == p || *end != ':' || v <= 1)
		return -EPROTO;
	*pid = (pid_t)v;
	for (int i = 0; i < W_FDS; i++) {
		p = end + 1;
		v = strtol(p, &end, 10);
		if (end == p || *end != ':' || v < 0 || v > 65535)
			return -EPROTO;
		fds[i] = (int)v;
	}
	if (!warm_name(end + 1))
		return -EPROTO;
	snprintf(name, WARM_NAME_LEN + 1, "%s", end + 1);
	return 0;
}

int ch_warm_read(const char *root, const struct stat *ws, bool userns, pid_t *pid, int *fds,
		 char *name)
{
	char path[PATH_MAX + 64], rec[128];
	ssize_t n;

	if (ch_warm_record_path(path, sizeof(path), root, ws, userns) < 0)
		return -ENAMETOOLONG;
	n = readlink(path, rec, sizeof(rec) - 1);
	if (n <= 0)
		return -ENOENT;
	rec[n] = '\0';
	return parse_record(rec, pid, fds, name);
}

/* Whether fd is name in dir (by its path: the same file). */
static bool is_at(int fd, int dir, const char *name, struct stat *st)
{
	struct stat at;

	return fstat(fd, st) == 0 && fstatat(dir, name, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
	       st->st_dev == at.st_dev && st->st_ino == at.st_ino;
}

int ch_warm_keeper(const char *root, pid_t pid, int dir_at, const char *name, int *dir)
{
	char path[PATH_MAX + 64];
	int pidfd, fd, r;
	struct stat st;

	/*
	 * The keeper's own open files, taken without waking it: a same-user
	 * process's fds, as ptrace allows (Yama may not: -EPERM).
	 */
	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return -errno;
	if ((fd = (int)syscall(SYS_pidfd_getfd, pidfd, dir_at, 0)) < 0) {
		r = -errno;
		close(pidfd);
		return r;
	}
	/* What the keeper of this name holds (a pid reused holds none). */
	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (!is_at(fd, AT_FDCWD, path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		close(pidfd);
		return -EPROTO;
	}
	if (dir)
		*dir = fd;
	else
		close(fd);
	return pidfd;
}

int ch_warm_take(struct changes_set *cs, const char *root, const struct stat *ws, int *upper,
		 int *work, int *mnt)
{
	char name[WARM_NAME_LEN + 1], path[PATH_MAX + 64];
	int at[W_FDS], fds[W_FDS] = {-1, -1, -1, -1}, pidfd, r;
	struct statfs sfs;
	struct stat st;
	pid_t pid;

	if ((r = ch_warm_read(root, ws, cs->userns, &pid, at, name)) < 0)
		return r; /* -ENOENT: none kept, the set is made */
	/* Yama refuses the keeper's fds here: none made at the end either. */
	if ((pidfd = ch_warm_keeper(root, pid, at[W_DIR], name, &fds[W_DIR])) < 0) {
		cs->warm_denied = pidfd == -EPERM;
		return pidfd;
	}
	r = -EPROTO;
	/* The overlay's mount and the set's layers, as a set made here would be. */
	for (int i = W_UPPER; i < W_FDS; i++)
		if ((fds[i] = (int)syscall(SYS_pidfd_getfd, pidfd, at[i], 0)) < 0)
			goto bad;
	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (!is_at(fds[W_UPPER], fds[W_DIR], "upper", &st) || !S_ISDIR(st.st_mode) ||
	    (st.st_mode & 07777) != (ws->st_mode & 07777) ||
	    (geteuid() == 0 ? st.st_uid != ws->st_uid || st.st_gid != ws->st_gid
			    : st.st_uid != geteuid()) ||
	    !is_at(fds[W_WORK], fds[W_DIR], "work", &st) || fstatfs(fds[W_MNT], &sfs) < 0 ||
	    sfs.f_type != WARM_OVERLAYFS_MAGIC)
		goto bad;
	/* The take: one rename, which the keeper's own at its time out races (changes_keep_main). */
	if (renameat2(AT_FDCWD, path, AT_FDCWD, cs->dir, RENAME_NOREPLACE) < 0) {
		r = -errno;
		goto bad;
	}
	/*
	 * The keeper's lock let go (one open file: its copy held it until it
	 * exits, and an apply after this session's end would find the set in
	 * use); the set's own comes once the command runs, as a made set's.
	 */
	flock(fds[W_DIR], LOCK_UN);
	fd_close(&fds[W_DIR]);
	*upper = fds[W_UPPER];
	*work = fds[W_WORK];
	*mnt = fds[W_MNT];
	cs->warm_pidfd = pidfd; /* told by the next keeper, or at the session's free */
	return 0;
bad:
	for (int i = 0; i < W_FDS; i++)
		fd_close(&fds[i]);
	fd_close(&pidfd);
	return r;
}

void changes_warm_release(struct changes_set *cs)
{
	if (cs->warm_pidfd < 0)
		return;
	syscall(SYS_pidfd_send_signal, cs->warm_pidfd, SIGUSR1, NULL, 0);
	fd_close(&cs->warm_pidfd);
}

/* ---- the session's end: the keeper asked for ---- */

void ch_warm_next(struct changes_set *cs, struct closer *end, int root, int ws)
{
	char secs[16];
	const char *argv[] = {"bpfbox", "__changes-keep", cs->userns ? "u" : "r", secs};
	int fds[3] = {root, ws, cs->warm_pidfd};

	if (!cs->warm_secs || cs->warm_denied || root < 0 || ws < 0 || cs->parent[0])
		return;
	snprintf(secs, sizeof(secs), "%u", cs->warm_secs);
	/*
	 * The keeper this set came from is told by the next one, once that
	 * one has made its overlay: its exit (a user namespace's teardown
	 * waits for the RCU) is then on nobody's path, not beside this
	 * session's start nor its end.
	 */
	if (!closer_exec(end, argv, ARRAY_SIZE(argv), fds, cs->warm_pidfd >= 0 ? 3 : 2))
		fd_close(&cs->warm_pidfd);
}

/* ---- the keeper ---- */

struct keeper {
	int root, ws, dir, upper, work, mnt;
	bool userns;
	char name[WARM_NAME_LEN + 1], tmp[64], rec_name[64], rec[128];
};

/*
 * fd opened again by its path in the keeper's new mount namespace: the
 * overlay takes its layers only from the mounter's own namespace. The
 * same directory, or -ESTALE (grant_reopen).
 */
static int reopen_here(int *fd)
{
	char link[40], path[PATH_MAX];
	ssize_t n;
	int r;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", *fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return -errno;
	path[n] = '\0';
	if ((r = grant_reopen(path, *fd)) < 0)
		return r;
	close(*fd);
	*fd = r;
	return 0;
}

/* The set's directory with its upper (as the workspace's root) and work, locked. */
static int make_set(struct keeper *k, const struct stat *ws)
{
	uint8_t rnd[16];

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	k->name[0] = '.';
	for (int i = 0; i < 16; i++)
		snprintf(k->name + 1 + 2 * i, 3, "%02x", rnd[i]);
	snprintf(k->name + 33, sizeof(k->name) - 33, ".gone");
	if (mkdirat(k->root, k->name, 0700) < 0)
		return -errno;
	k->dir = openat(k->root, k->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (k->dir < 0 || flock(k->dir, LOCK_EX | LOCK_NB) < 0 ||
	    mkdirat(k->dir, "upper", 0700) < 0 ||
	    fchmodat(k->dir, "upper", ws->st_mode & 07777, 0) < 0 ||
	    (geteuid() == 0 &&
	     fchownat(k->dir, "upper", ws->st_uid, ws->st_gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    mkdirat(k->dir, "work", 0700) < 0)
		return -errno;
	k->upper = openat(k->dir, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	k->work = openat(k->dir, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return k->upper < 0 || k->work < 0 ? -errno : 0;
}

/*
 * The record, "PID:DIR:UPPER:WORK:MNT:NAME" as a symlink's target (one
 * readlink reads it), made under a name of its own and renamed into
 * place: the last keeper of a workspace is the one found, an older one
 * times out.
 */
static int publish(struct keeper *k, const struct stat *ws)
{
	char dir[32], name[96];

	snprintf(dir, sizeof(dir), "/proc/self/fd/%d", k->root);
	if (ch_warm_record_path(name, sizeof(name), dir, ws, k->userns) < 0)
		return -ENAMETOOLONG;
	snprintf(k->rec_name, sizeof(k->rec_name), "%s", name + strlen(dir) + 1);
	snprintf(k->rec, sizeof(k->rec), "%d:%d:%d:%d:%d:%s", (int)getpid(), k->dir, k->upper,
		 k->work, k->mnt, k->name);
	snprintf(k->tmp, sizeof(k->tmp), ".warm.%d.tmp", (int)getpid());
	unlinkat(k->root, k->tmp, 0);
	if (symlinkat(k->rec, k->root, k->tmp) < 0 ||
	    renameat(k->root, k->tmp, k->root, k->rec_name) < 0)
		return -errno;
	k->tmp[0] = '\0';
	return 0;
}

/* The record's name, while it is still ours. */
static void withdraw(struct keeper *k)
{
	char now[sizeof(k->rec)];
	ssize_t n;

	if (k->tmp[0])
		unlinkat(k->root, k->tmp, 0);
	if (!k->rec_name[0])
		return;
	n = readlinkat(k->root, k->rec_name, now, sizeof(now) - 1);
	if (n > 0 && (now[n] = '\0', streq(now, k->rec)))
		unlinkat(k->root, k->rec_name, 0);
	k->rec_name[0] = '\0';
}

/* An fd number of argv (3 or more): 0, or -EINVAL. */
static int arg_fd(const char *s, int *fd)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || end == s || v < 3 || v > 65535)
		return -EINVAL;
	*fd = (int)v;
	return 0;
}

/*
 * argv: "u"|"r", seconds, the sets' directory's fd, the workspace's, and
 * the pidfd of the keeper the last session took its set from (or none).
 */
static int parse_args(int argc, char **argv, struct keeper *k, unsigned long *secs, int *old)
{
	char *end;

	if (argc < 5 || argc > 6 || (strcmp(argv[1], "u") && strcmp(argv[1], "r")))
		return -EINVAL;
	k->userns = argv[1][0] == 'u';
	*secs = strtoul(argv[2], &end, 10);
	if (*end || !*secs || *secs > CHANGES_WARM_MAX || arg_fd(argv[3], &k->root) < 0 ||
	    arg_fd(argv[4], &k->ws) < 0 || (argc == 6 && arg_fd(argv[5], old) < 0))
		return -EINVAL;
	return 0;
}

/* Nobody waits on it: no terminal, no pipe of the caller's, no cwd held; SIGUSR1 waited for. */
static int detach(sigset_t *usr1)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int i = 0; i < 3 && fd >= 0; i++)
		dup2(fd, i);
	if (fd > 2)
		close(fd);
	umask(077);
	sigemptyset(usr1);
	sigaddset(usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, usr1, NULL);
	return chdir("/") < 0 ? -errno : 0;
}

/* The set and its overlay made, and recorded: 0 or -errno. */
static int keep(struct keeper *k, const struct stat *ws)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	const char *step;
	int r = make_set(k, ws);

	/* Its own user and mount namespace, its user mapped to itself (the session's way). */
	if (!r && k->userns && (r = unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ? -errno : 0) == 0 &&
	    !(r = ns_map_ids(uid, gid, &step)) && !(r = reopen_here(&k->ws)) &&
	    !(r = reopen_here(&k->upper)))
		r = reopen_here(&k->work);
	if (!r && (r = k->mnt = ns_overlay_make(k->ws, k->upper, k->work, k->userns, &step)) >= 0)
		r = publish(k, ws);
	return r;
}

/* The pid of a pidfd (its fdinfo's "Pid:"), or 0. */
static pid_t pidfd_pid(int pidfd)
{
	char path[48], buf[512];
	const char *at;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	at = strstr(buf, "\nPid:\t");
	return at ? (pid_t)atoi(at + 6) : 0;
}

/*
 * Whether the keeper old (a pidfd) still offers its set: the record names
 * it, and its set is still at its name (a session's take renames it away).
 * Asked only when this keeper failed: then prepare's old keeper, whose
 * set nobody took, is left to serve the next session.
 */
static bool still_offered(const struct keeper *k, const struct stat *ws, int old)
{
	char root[32], name[WARM_NAME_LEN + 1];
	int at[W_FDS];
	struct stat st;
	pid_t pid;

	snprintf(root, sizeof(root), "/proc/self/fd/%d", k->root);
	return ch_warm_read(root, ws, k->userns, &pid, at, name) == 0 && pid > 0 &&
	       pid == pidfd_pid(old) && fstatat(k->root, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

int changes_keep_main(int argc, char **argv)
{
	struct keeper k = {.dir = -1, .upper = -1, .work = -1, .mnt = -1};
	struct timespec left = {0};
	char gone[WARM_NAME_LEN + 8];
	struct changes_set *cs;
	unsigned long secs;
	int old = -1, r;
	struct stat ws;
	sigset_t usr1;

	if (parse_args(argc, argv, &k, &secs, &old) < 0 || fstat(k.ws, &ws) < 0 ||
	    !S_ISDIR(ws.st_mode))
		return 2;
	if (detach(&usr1) < 0)
		return 1;
	r = keep(&k, &ws);
	/*
	 * That one's overlay is in use or gone by now: it may go; unless this
	 * one failed and that one still offers its own (bpfbox prepare's).
	 */
	if (old >= 0) {
		if (!r || !still_offered(&k, &ws, old))
			syscall(SYS_pidfd_send_signal, old, SIGUSR1, NULL, 0);
		fd_close(&old);
	}
	left.tv_sec = !r ? (time_t)secs : 0;
	while (left.tv_sec && sigtimedwait(&usr1, NULL, &left) < 0 && errno == EINTR)
		;
	/*
	 * Taken, or its time is out: the record withdrawn, then the set made
	 * ours again by a rename that a session's take races. Lost: it is the
	 * session's; won: nobody can take it now, and it is removed.
	 */
	withdraw(&k);
	fd_close(&k.mnt);
	fd_close(&k.upper);
	fd_close(&k.work);
	snprintf(gone, sizeof(gone), "%s", k.name);
	gone[32] = gone[32] == '0' ? '1' : '0'; /* another name the sweep knows */
	if (k.name[0] && !renameat2(k.root, k.name, k.root, gone, RENAME_NOREPLACE) &&
	    (cs = calloc(1, sizeof(*cs)))) {
		snprintf(cs->dir, sizeof(cs->dir), "/proc/self/fd/%d/%s", k.root, gone);
		changes_remove(cs);
		free(cs);
	}
	fd_close(&k.dir);
	return r < 0 ? 1 : 0;
}
