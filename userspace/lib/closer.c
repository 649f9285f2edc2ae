// SPDX-License-Identifier: GPL-2.0
/* Pays for the slow last close of some fds in a helper: closer.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "closer.h"
#include "util.h"

#ifndef SYS_newfstatat /* the helper compares st_dev by it: no removal without */
#define SYS_newfstatat -1
#endif

/*
 * The helper's system calls. It shares the parent's memory and its
 * thread's TLS, so it calls nothing instrumented and writes no errno (the
 * libc wrapper's errno is the parent's thread's): raw instructions where
 * the architecture is known, the wrapper elsewhere.
 */
/* Our copies: the jobs' directories, closer_hold()'s, closer_exec()'s. */
#define CLOSER_OWN (CLOSER_HOLD + 2 * CLOSER_JOBS + 1 + CLOSER_EXEC_FDS)

#define NOSAN __attribute__((no_sanitize("address"), no_sanitize("undefined")))
#if defined(__x86_64__)
NOSAN static inline long rsys(long n, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}

NOSAN static inline long rsys5(long n, long a, long b, long c, long d, long e)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e;
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return r;
}
#elif defined(__aarch64__)
NOSAN static inline long rsys(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
			 x2 __asm__("x2") = c, x3 __asm__("x3") = d;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
}

NOSAN static inline long rsys5(long n, long a, long b, long c, long d, long e)
{
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b,
			 x2 __asm__("x2") = c, x3 __asm__("x3") = d, x4 __asm__("x4") = e;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory");
	return x0;
}
#else
NOSAN static inline long rsys(long n, long a, long b, long c, long d)
{
	long r = syscall(n, a, b, c, d);

	return r < 0 ? -errno : r;
}

NOSAN static inline long rsys5(long n, long a, long b, long c, long d, long e)
{
	long r = syscall(n, a, b, c, d, e);

	return r < 0 ? -errno : r;
}
#endif

struct dent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/*
 * Removes name under dfd and all below it, never following a symlink (an
 * unlink removes a link itself; every directory is opened O_NOFOLLOW); a
 * directory nobody may search (overlayfs makes its work dirs mode 0) is
 * made searchable first; another file system (dev) is left alone, as
 * rm_tree (lib/util.c) leaves it. Best effort, CLOSER_RM_DEPTH levels at
 * most.
 */
NOSAN static void rm_at(int dfd, const char *name, dev_t dev, int depth)
{
	char buf[1024] __attribute__((aligned(8)));
	struct stat st;
	long fd, n;

	if (!rsys(SYS_unlinkat, dfd, (long)name, 0, 0) ||
	    !rsys(SYS_unlinkat, dfd, (long)name, AT_REMOVEDIR, 0) || depth >= CLOSER_RM_DEPTH)
		return;
	fd = rsys(SYS_openat, dfd, (long)name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd == -EACCES && !rsys(SYS_fchmodat, dfd, (long)name, 0700, 0))
		fd = rsys(SYS_openat, dfd, (long)name,
			  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* Another file system mounted here: left alone, as rm_tree does. */
	if (rsys(SYS_newfstatat, fd, (long)"", (long)&st, AT_EMPTY_PATH) || st.st_dev != dev) {
		rsys(SYS_close, fd, 0, 0, 0);
		return;
	}
	while ((n = rsys(SYS_getdents64, fd, (long)buf, sizeof(buf), 0)) > 0) {
		for (long off = 0; off < n;) {
			struct dent64 *d = (struct dent64 *)(buf + off);

			off += d->reclen;
			if (d->name[0] == '.' &&
			    (!d->name[1] || (d->name[1] == '.' && !d->name[2])))
				continue;
			rm_at((int)fd, d->name, dev, depth + 1);
		}
	}
	rsys(SYS_close, fd, 0, 0, 0);
	rsys(SYS_unlinkat, dfd, (long)name, AT_REMOVEDIR, 0);
}

/* Whether name is prefix, a session id (32 lowercase hex digits), suffix; a dot before it too. */
NOSAN static bool swept_name(const char *p, const char *s, const char *name)
{
	/* One hidden for its removal (closer_remove) whose helper was killed: the same. */
	if (*name == '.' && *p != '.')
		name++;
	while (*p && *name == *p)
		p++, name++;
	if (*p)
		return false;
	for (int i = 0; i < 32; i++, name++)
		if (!((*name >= '0' && *name <= '9') || (*name >= 'a' && *name <= 'f')))
			return false;
	while (*s && *name == *s)
		s++, name++;
	return !*s && !*name;
}

/*
 * closer_sweep's job: what killed runs left, unlocked, old, ours (closer.h).
 * Root's are anyone's: a --user session's home is its user's. What another
 * user could put under such a name (and swap in before rm_at) is a tree
 * that user could remove, as tmp cleaners remove anyone's old files.
 */
NOSAN static void sweep(const struct closer *c, int job)
{
	int dfd = c->sweep_dirfd[job];
	char buf[1024] __attribute__((aligned(8)));
	struct stat dir, st;
	struct timespec now;
	long uid = rsys(SYS_geteuid, 0, 0, 0, 0), n, fd;

	if (rsys(SYS_newfstatat, dfd, (long)"", (long)&dir, AT_EMPTY_PATH) ||
	    rsys(SYS_clock_gettime, CLOCK_REALTIME, (long)&now, 0, 0) ||
	    rsys(SYS_lseek, dfd, 0, SEEK_SET, 0))
		return;
	while ((n = rsys(SYS_getdents64, dfd, (long)buf, sizeof(buf), 0)) > 0) {
		for (long off = 0; off < n;) {
			struct dent64 *d = (struct dent64 *)(buf + off);

			off += d->reclen;
			if (!swept_name(c->sweep_prefix[job], c->sweep_suffix[job], d->name))
				continue;
			fd = rsys(SYS_openat, dfd, (long)d->name,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
			if (fd < 0)
				continue;
			if (!rsys(SYS_newfstatat, fd, (long)"", (long)&st, AT_EMPTY_PATH) &&
			    (st.st_uid == (uid_t)uid || uid == 0) && st.st_dev == dir.st_dev &&
			    st.st_mtime + CLOSER_SWEEP_AGE < now.tv_sec &&
			    !rsys(SYS_flock, fd, LOCK_EX | LOCK_NB, 0, 0))
				rm_at(dfd, d->name, st.st_dev, 0);
			rsys(SYS_close, fd, 0, 0, 0);
		}
	}
}

/* closer_prepare's job (closer.h): one directory made for a later user. */
NOSAN static void prepare(const struct closer *c)
{
	char slot[sizeof(c->prep_name) + 2];
	struct stat st;
	long fd, i, n = 0, bad = 0;

	while (c->prep_name[n])
		slot[n] = c->prep_name[n], n++;
	slot[n + 1] = '\0';
	for (i = 0; i < c->prep_slots; i++) {
		slot[n] = (char)('0' + i);
		if (rsys(SYS_newfstatat, c->prep_dirfd, (long)slot, (long)&st,
			 AT_SYMLINK_NOFOLLOW) == -ENOENT)
			break;
	}
	if (i == c->prep_slots ||
	    rsys(SYS_newfstatat, c->prep_dirfd, (long)"", (long)&st, AT_EMPTY_PATH) ||
	    rsys(SYS_mkdirat, c->prep_dirfd, (long)c->prep_tmp, 0700, 0))
		return;
	fd = rsys(SYS_openat, c->prep_dirfd, (long)c->prep_tmp,
		  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	for (i = 0; i < c->prep_nsubs && !bad; i++)
		bad = fd < 0 || rsys(SYS_mkdirat, fd, (long)c->prep_subs[i], 0700, 0);
	if (!bad && c->prep_nsubs && c->prep_mode >= 0)
		bad = rsys(SYS_fchmodat, fd, (long)c->prep_subs[0], c->prep_mode, 0);
	if (!bad && c->prep_nsubs && c->prep_uid >= 0)
		bad = rsys5(SYS_fchownat, fd, (long)c->prep_subs[0], c->prep_uid, c->prep_gid,
			    AT_SYMLINK_NOFOLLOW);
	if (fd >= 0)
		rsys(SYS_close, fd, 0, 0, 0);
	if (fd < 0 || bad ||
	    rsys5(SYS_renameat2, c->prep_dirfd, (long)c->prep_tmp, c->prep_dirfd, (long)slot,
		  RENAME_NOREPLACE))
		rm_at(c->prep_dirfd, c->prep_tmp, st.st_dev, 0);
}

/* closer_remove's jobs: by the helper, or here when none could start. */
NOSAN static void remove_all(const struct closer *c)
{
	struct stat st;

	for (int i = 0; i < c->nrm; i++)
		if (!rsys(SYS_newfstatat, c->rm_dirfd[i], (long)"", (long)&st, AT_EMPTY_PATH))
			rm_at(c->rm_dirfd[i], c->rm_name[i], st.st_dev, 0);
}

/*
 * The helper: drops every fd but the ones to hold and its pipe ends, tells
 * the parent, then holds them until the parent lets go; then removes the
 * tree it was given, if any, and exits.
 */
NOSAN static int helper(void *arg)
{
	struct closer *c = arg;
	unsigned int from = 0;
	char b = 0;

	for (int i = 0; i < c->nkeep; i++) {
		if ((unsigned int)c->keep[i] > from)
			rsys(SYS_close_range, from, (unsigned int)c->keep[i] - 1, 0, 0);
		from = (unsigned int)c->keep[i] + 1;
	}
	rsys(SYS_close_range, from, ~0U, 0, 0);
	if (c->ready_write >= 0)
		rsys(SYS_write, c->ready_write, (long)&b, 1, 0);
	if (c->go_read >= 0)
		rsys(SYS_read, c->go_read, (long)&b, 1, 0);
	remove_all(c);
	for (int i = 0; i < c->nsweep; i++)
		sweep(c, i);
	if (c->prep_tmp[0])
		prepare(c);
	/* This use's jobs done: the closer's next use asks for its own. */
	c->nrm = c->nsweep = 0;
	c->prep_tmp[0] = '\0';
	if (c->exec_argv[0]) {
		/*
		 * The next use may not find this one's: the pointers copied, the
		 * closer's cleared (busy until the exec has read the strings).
		 */
		static char *const env[] = {NULL};
		char *argv[CLOSER_EXEC_ARGS + 2];

		for (int i = 0; i < CLOSER_EXEC_ARGS + 2; i++)
			argv[i] = c->exec_argv[i];
		c->exec_argv[0] = NULL;
		rsys(SYS_execve, (long)"/proc/self/exe", (long)argv, (long)env, 0);
	}
	rsys(SYS_exit, 0, 0, 0, 0);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Whether this closer's last helper may still run on its stack (closer.h, busy). */
static bool busy(const struct closer *c)
{
	return __atomic_load_n(&c->busy, __ATOMIC_ACQUIRE) != 0;
}

/* Our copies of the jobs' directories and of closer_hold()'s fds into fds; their number. */
static size_t copies(const struct closer *c, int *fds)
{
	size_t n = 0;

	for (int i = 0; i < c->nrm; i++)
		fds[n++] = c->rm_dirfd[i];
	for (int i = 0; i < c->nsweep; i++)
		fds[n++] = c->sweep_dirfd[i];
	if (c->prep_tmp[0])
		fds[n++] = c->prep_dirfd;
	for (int i = 0; i < c->nheld; i++)
		fds[n++] = c->held[i];
	for (int i = 0; i < c->nexec_fds; i++)
		fds[n++] = c->exec_fds[i];
	return n;
}

static void close_all(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/* A use that did not start: its jobs are not the next use's, its copies closed. */
static void forget_jobs(struct closer *c)
{
	int own[CLOSER_OWN];

	close_all(own, copies(c, own));
	c->nrm = c->nsweep = c->nheld = c->nexec_fds = 0;
	c->prep_tmp[0] = '\0';
	c->exec_argv[0] = NULL;
}

/* Our copy of fd, for a job or closer_hold(): the caller may close its own. */
static int copy_fd(int fd)
{
	int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	return r < 0 ? -errno : r;
}

bool closer_pending(const struct closer *c)
{
	return !busy(c) && (c->nrm || c->nsweep || c->nheld || c->prep_tmp[0] || c->exec_argv[0]);
}

int closer_flush(struct closer *c)
{
	int r;

	if (!closer_pending(c))
		return 0;
	c->nowait = true;
	if ((r = closer_begin(c, NULL, 0)) == 0)
		closer_end(c);
	return r;
}

int closer_hold(struct closer *c, const int *fds, size_t n)
{
	int start = c->nheld, r;

	if (busy(c))
		return -EBUSY;
	if (c->nheld + n > CLOSER_HOLD)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		if ((r = copy_fd(fds[i])) < 0) {
			while (c->nheld > start)
				close(c->held[--c->nheld]);
			return r;
		}
		c->held[c->nheld++] = r;
	}
	return 0;
}

/* A name for the helper: one entry of a directory, never "", "." or "..", shorter than size. */
static bool one_name(const char *name, size_t size)
{
	return name[0] && !streq(name, ".") && !streq(name, "..") && strlen(name) < size &&
	       !strchr(name, '/');
}

int closer_begin(struct closer *c, const int *fds, size_t n)
{
	int own[CLOSER_OWN];
	size_t nown;
	char b;
	int r;

	if (n > CLOSER_MAX_FDS) {
		if (!busy(c))
			forget_jobs(c);
		return -E2BIG;
	}
	if (busy(c))
		return -EBUSY;
	c->started = 0;
	c->go[0] = c->go[1] = c->ready[0] = c->ready[1] = -1;
	c->go_read = c->ready_write = -1;
	if (!c->nowait && (pipe2(c->go, O_CLOEXEC) < 0 || pipe2(c->ready, O_CLOEXEC) < 0)) {
		r = -errno;
		forget_jobs(c);
		closer_end(c);
		return r;
	}
	c->nkeep = 0;
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			c->keep[c->nkeep++] = fds[i];
	/* Ours: closed here once the helper has its copies (it clears the jobs as it ends). */
	nown = copies(c, own);
	memcpy(c->keep + c->nkeep, own, nown * sizeof(*own));
	c->nkeep += (int)nown;
	if (!c->nowait) {
		c->keep[c->nkeep++] = c->go_read = c->go[0];
		c->keep[c->nkeep++] = c->ready_write = c->ready[1];
	}
	qsort(c->keep, c->nkeep, sizeof(c->keep[0]), cmp_int);
	__atomic_store_n(&c->busy, 1, __ATOMIC_RELEASE);
	if (clone(helper, c->stack + sizeof(c->stack), CLONE_VM | CLONE_CHILD_CLEARTID, c, NULL,
		  NULL, &c->busy) < 0) {
		r = -errno;
		__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
		/* No helper: what it was to remove goes here, on our time. */
		remove_all(c);
		forget_jobs(c);
		closer_end(c);
		return r;
	}
	close_all(own, nown);
	c->nheld = c->nexec_fds = 0; /* the helper reads keep[], never held[] */
	c->started = 1;
	if (c->nowait)
		return 0;
	close(c->ready[1]);
	c->ready[1] = -1;
	/* EOF without a byte: the helper died before it held the fds. */
	while ((r = read(c->ready[0], &b, 1)) < 0 && errno == EINTR)
		;
	if (r != 1) {
		forget_jobs(c);
		closer_end(c);
		return -ECHILD;
	}
	return 0;
}

int closer_remove(struct closer *c, int dirfd, const char *name)
{
	int r;

	if (SYS_newfstatat < 0)
		return -ENOSYS;
	if (busy(c))
		return -EBUSY;
	if (dirfd < 0 || !one_name(name, sizeof(c->rm_name[0])))
		return -EINVAL;
	if (c->nrm == CLOSER_JOBS)
		return -E2BIG;
	if ((r = copy_fd(dirfd)) < 0)
		return r;
	c->rm_dirfd[c->nrm] = r;
	snprintf(c->rm_name[c->nrm++], sizeof(c->rm_name[0]), "%s", name);
	return 0;
}

int closer_sweep(struct closer *c, int dirfd, const char *prefix, const char *suffix)
{
	int r;

	if (SYS_newfstatat < 0)
		return -ENOSYS;
	if (busy(c))
		return -EBUSY;
	if (dirfd < 0 || !prefix[0] || strlen(prefix) >= sizeof(c->sweep_prefix[0]) ||
	    strlen(suffix) >= sizeof(c->sweep_suffix[0]) || strchr(prefix, '/') ||
	    strchr(suffix, '/'))
		return -EINVAL;
	if (c->nsweep == CLOSER_JOBS)
		return -E2BIG;
	if ((r = copy_fd(dirfd)) < 0)
		return r;
	c->sweep_dirfd[c->nsweep] = r;
	snprintf(c->sweep_prefix[c->nsweep], sizeof(c->sweep_prefix[0]), "%s", prefix);
	snprintf(c->sweep_suffix[c->nsweep++], sizeof(c->sweep_suffix[0]), "%s", suffix);
	return 0;
}

int closer_prepare(struct closer *c, int dirfd, const char *tmp, const char *name, int slots,
		   const char *const *subs, size_t nsubs)
{
	int r;

	if (SYS_newfstatat < 0)
		return -ENOSYS;
	if (busy(c))
		return -EBUSY;
	if (dirfd < 0 || !one_name(tmp, sizeof(c->prep_tmp)) ||
	    !one_name(name, sizeof(c->prep_name) - 1) || slots < 1 || slots > 10 ||
	    nsubs > CLOSER_PREP_SUBS)
		return -EINVAL;
	for (size_t i = 0; i < nsubs; i++)
		if (!one_name(subs[i], sizeof(c->prep_subs[i])))
			return -EINVAL;
	if ((r = copy_fd(dirfd)) < 0)
		return r;
	if (c->prep_tmp[0])
		close(c->prep_dirfd); /* the one this replaces */
	dirfd = r;
	for (size_t i = 0; i < nsubs; i++)
		snprintf(c->prep_subs[i], sizeof(c->prep_subs[i]), "%s", subs[i]);
	c->prep_dirfd = dirfd;
	c->prep_mode = c->prep_uid = c->prep_gid = -1;
	c->prep_nsubs = (int)nsubs;
	c->prep_slots = slots;
	snprintf(c->prep_name, sizeof(c->prep_name), "%s", name);
	snprintf(c->prep_tmp, sizeof(c->prep_tmp), "%s", tmp);
	return 0;
}

void closer_prepare_owner(struct closer *c, int mode, int uid, int gid)
{
	if (busy(c))
		return;
	c->prep_mode = mode;
	c->prep_uid = uid;
	c->prep_gid = gid;
}

int closer_exec(struct closer *c, const char *const *argv, int argc, const int *fds, size_t nfds)
{
	size_t used = 0, len;
	char num[16];
	int r;

	if (busy(c))
		return -EBUSY;
	if (argc < 1 || argc + nfds > CLOSER_EXEC_ARGS || nfds > CLOSER_EXEC_FDS)
		return -EINVAL;
	while (c->nexec_fds) /* the one this replaces */
		close(c->exec_fds[--c->nexec_fds]);
	c->exec_argv[0] = NULL;
	for (size_t i = 0; i < (size_t)argc + nfds; i++) {
		const char *a = argv[i < (size_t)argc ? i : 0];

		if (i >= (size_t)argc) {
			/* Without FD_CLOEXEC: the program's (made at the helper's end, no exec before). */
			if ((r = fcntl(fds[i - argc], F_DUPFD, 3)) < 0) {
				r = -errno;
				goto fail;
			}
			c->exec_fds[c->nexec_fds++] = r;
			snprintf(num, sizeof(num), "%d", r);
			a = num;
		}
		len = strlen(a) + 1;
		if (used + len > sizeof(c->exec_buf)) {
			r = -EINVAL;
			goto fail;
		}
		memcpy(c->exec_buf + used, a, len);
		c->exec_argv[i] = c->exec_buf + used;
		used += len;
	}
	c->exec_argv[argc + nfds] = NULL;
	return 0;
fail:
	while (c->nexec_fds)
		close(c->exec_fds[--c->nexec_fds]);
	c->exec_argv[0] = NULL;
	return r;
}

void closer_end(struct closer *c)
{
	/* The helper's read returns: it exits, the last references go. */
	for (int i = 0; i < 2; i++) {
		if (c->go[i] >= 0)
			close(c->go[i]);
		if (c->ready[i] >= 0)
			close(c->ready[i]);
		c->go[i] = c->ready[i] = -1;
	}
}
