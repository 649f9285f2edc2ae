// SPDX-License-Identifier: GPL-2.0
/*
 * Refused file changes summarised without BPF (issue 18, docs/SECURITY.md):
 * the seccomp listener holds each unlink, rename, mkdir, link, symlink,
 * chmod, chown, utimes, setxattr and removexattr of the session, and each
 * creat and open that writes or creates (issue 32); this
 * reads its path from the caller's memory, resolves it against the
 * caller's cwd or dirfd, and counts a
 * denial when it names a place outside the session's writable paths where
 * the change would do something (a file to remove exists, a name to create
 * does not). Then the kernel runs the call: Landlock and the mounts decide,
 * the listener never does. What is counted is a prediction, exact for the
 * paths the session sees (no symlinks resolved past the cwd).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "session_internal.h"
#include "seccomp.h"

#include "../policy/policy.h"
#include "../lib/util.h"

#ifndef AT_FDCWD
#define AT_FDCWD -100
#endif

/* OPEN: an open whose flags write or create (seccomp.h SECCOMP_OPEN_WRITES). */
enum want { EXISTS, ABSENT, ANY, OPEN };

/* Which argument is the path (and its dirfd, -1: the cwd) a call changes. */
struct file_call {
	int nr;
	const char *op;
	int dirfd_arg;
	int path_arg;
	enum want want;
	int flags_arg; /* OPEN: the open flags' argument; -1: creat's O_CREAT|O_WRONLY|O_TRUNC */
};

static const struct file_call calls[] = {
	{__NR_unlinkat, "unlink", 0, 1, EXISTS},
	{__NR_renameat2, "rename", 2, 3, ANY},
	{__NR_mkdirat, "mkdir", 0, 1, ABSENT},
	{__NR_linkat, "link", 2, 3, ABSENT},
	{__NR_symlinkat, "symlink", 1, 2, ABSENT},
	{__NR_fchmodat, "chmod", 0, 1, EXISTS},
	{__NR_utimensat, "utimes", 0, 1, EXISTS},
	{__NR_fchownat, "chown", 0, 1, EXISTS},
	{__NR_setxattr, "setxattr", -1, 0, EXISTS},
	{__NR_lsetxattr, "setxattr", -1, 0, EXISTS},
	{__NR_removexattr, "removexattr", -1, 0, EXISTS},
	{__NR_lremovexattr, "removexattr", -1, 0, EXISTS},
#ifdef __NR_chown
	{__NR_chown, "chown", -1, 0, EXISTS},
	{__NR_lchown, "chown", -1, 0, EXISTS},
#endif
#ifdef __NR_unlink
	{__NR_unlink, "unlink", -1, 0, EXISTS},
	{__NR_rmdir, "rmdir", -1, 0, EXISTS},
	{__NR_rename, "rename", -1, 1, ANY},
	{__NR_mkdir, "mkdir", -1, 0, ABSENT},
	{__NR_link, "link", -1, 1, ABSENT},
	{__NR_symlink, "symlink", -1, 1, ABSENT},
	{__NR_chmod, "chmod", -1, 0, EXISTS},
#endif
#ifdef __NR_renameat
	{__NR_renameat, "rename", 2, 3, ANY},
#endif
	{__NR_fchmodat2, "chmod", 0, 1, EXISTS},
	{__NR_setxattrat, "setxattr", 0, 1, EXISTS},
	{__NR_removexattrat, "removexattr", 0, 1, EXISTS},
	/* Named "write" as the BPF records name an open for writing (lib/denial.c). */
	{__NR_openat, "write", 0, 1, OPEN, 2},
#ifdef __NR_open
	{__NR_open, "write", -1, 0, OPEN, 1},
#endif
#ifdef __NR_creat
	{__NR_creat, "write", -1, 0, OPEN, -1},
#endif
};

/* The NUL-terminated string at addr in pid's memory, page by page. */
static int read_str(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	size_t off = 0;

	while (off < size - 1) {
		size_t page = 4096 - ((addr + off) & 4095), n = size - 1 - off;
		struct iovec local, remote;
		ssize_t got;

		if (n > page)
			n = page;
		local = (struct iovec){buf + off, n};
		remote = (struct iovec){(void *)(uintptr_t)(addr + off), n};
		got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (got <= 0)
			return -errno;
		if (memchr(buf + off, '\0', got))
			return 0;
		off += got;
	}
	buf[size - 1] = '\0';
	return -ENAMETOOLONG;
}

static bool under(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	if (!len)
		return false;
	if (streq(dir, "/"))
		return true;
	return strncmp(path, dir, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/* strlen(dir) + 1 when path is dir or below it, else 0: the longest match wins. */
static size_t match(const char *path, const char *dir)
{
	return under(path, dir) ? strlen(dir) + 1 : 0;
}

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/*
 * Whether the session may change path (policy only: Landlock and the view
 * agree). The most specific grant decides: a --ro tree inside the private
 * /tmp or the workspace is read-only.
 */
static bool writable(const struct session *s, const char *path)
{
	const struct bpfbox_policy *p = s->policy;
	bool ns = s->layers.ns.clone_flags != 0;
	size_t w = 0, r = 0;

	if (p->mode == MODE_FULL_ACCESS)
		return true;
	if (p->mode != MODE_READ_ONLY)
		w = match(path, p->workspace);
	for (size_t i = 0; i < p->rw_paths.n; i++)
		w = max_sz(w, match(path, p->rw_paths.v[i]));
	w = max_sz(w, max_sz(match(path, s->home), match(path, s->private_tmp)));
	w = max_sz(w, match(path, "/dev"));
	/* The view's /tmp is the session's own tmpfs; without a private tmp, not ours to judge. */
	if (ns || !p->private_tmp)
		w = max_sz(w, match(path, "/tmp"));
	for (size_t i = 0; i < p->ro_paths.n; i++)
		r = max_sz(r, match(path, p->ro_paths.v[i]));
	return w > r;
}

/* pid's cwd (dirfd AT_FDCWD) or the file of its dirfd, as the session sees it. */
static int base_of(pid_t pid, int dirfd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", pid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", pid, dirfd);
	n = readlink(link, buf, size - 1);
	if (n <= 0 || buf[0] != '/')
		return -ENOENT;
	buf[n] = '\0';
	return 0;
}

/* Whether path exists in the session's view (its root, not ours). */
static int exists(pid_t pid, const char *path)
{
	char root[64];
	struct stat st;
	int fd, r;

	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = fstatat(fd, path[1] ? path + 1 : ".", &st, AT_SYMLINK_NOFOLLOW) == 0 ? 1 : 0;
	close(fd);
	return r;
}

/*
 * Whether an open with flags would be refused at path rather than fail
 * first: a create of a name that is not there (or O_CREAT without O_EXCL
 * of one that is), a write of a file that is; e its existence.
 */
static bool open_refused(int flags, int e)
{
	if (flags & O_CREAT)
		return !e || !(flags & O_EXCL);
	return e == 1;
}

void session_file_op_notified(struct session *s, int listener, const struct seccomp_denied *d)
{
	const struct file_call *c = NULL;
	char name[PATH_MAX], full[PATH_MAX * 2];
	int e;

	for (size_t i = 0; i < ARRAY_SIZE(calls); i++)
		if (calls[i].nr == d->nr)
			c = &calls[i];
	name[0] = '\0';
	full[0] = '\0';
	/* While the call waits: its name and the dir it is relative to. */
	if (!c || (d->args[c->path_arg] &&
		   read_str(d->pid, d->args[c->path_arg], name, sizeof(name)) < 0)) {
		c = NULL;
	} else if (name[0] == '/') {
		snprintf(full, sizeof(full), "%s", name);
	} else if (base_of(d->pid, c->dirfd_arg < 0 ? AT_FDCWD : (int)d->args[c->dirfd_arg], full,
			   sizeof(full)) < 0) {
		c = NULL;
	} else if (name[0]) {
		/* utimensat(fd, NULL, ...): the fd's own file. */
		snprintf(full + strlen(full), sizeof(full) - strlen(full), "/%s", name);
	}
	if (c)
		path_fold(full);
	/* The common case, a change where the session may write: run at once. */
	if (!c || writable(s, full) ||
	    /* Landlock has no right for metadata: without the read-only view, those pass. */
	    (!s->layers.ns.clone_flags && session_meta_of(c->op))) {
		seccomp_notify_answer(listener, d->id, 0);
		return;
	}
	/* Bound to fail unless it fails first for ENOENT or EEXIST: looked at while it waits. */
	e = c->want == ANY ? 1 : exists(d->pid, full);
	/* What was read belongs to this call only if it still waits. */
	if (!seccomp_notify_valid(listener, d->id))
		return;
	seccomp_notify_answer(listener, d->id, 0);
	if (c->want == OPEN) {
		int flags = c->flags_arg < 0 ? O_CREAT | O_WRONLY | O_TRUNC
					     : (int)d->args[c->flags_arg];

		if (e < 0 || !open_refused(flags, e))
			return;
	} else if (e < 0 || (c->want != ANY && e != (c->want == EXISTS))) {
		return;
	}
	/* With namespaces the host is a read-only mount: EROFS; else Landlock's EACCES. */
	if (s->layers.ns.clone_flags)
		denials_add(&s->denials, "mount", c->op, full, EROFS, 1);
	else
		denials_add(&s->denials, "landlock", c->op, full, EACCES, 1);
}
