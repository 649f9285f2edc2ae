// SPDX-License-Identifier: GPL-2.0
/*
 * A change set written into its workspace (changes.h, docs/SECURITY.md
 * "Applying a change set"). Everything is checked before the first
 * write: each path the apply would write or remove must not have changed
 * in the workspace since the session started (its ctime is before the
 * set's start), and the set holds only files, directories and symlinks,
 * none set-uid or set-gid. Then a journal goes into the set's directory,
 * and each path is written through its parent opened beneath the
 * workspace without following any symlink (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): a file or symlink to a
 * temporary name renamed over it, what it replaces or deletes copied to
 * ROOT/ID/prev first. Every step can be done again: an apply that was
 * killed is finished by running it again (the journal says the checks
 * were passed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "changes.h"
#include "grants.h"
#include "../lib/util.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#define AP_RESOLVE_NO_XDEV	 0x01
#define AP_RESOLVE_NO_MAGICLINKS 0x02
#define AP_RESOLVE_NO_SYMLINKS	 0x04
#define AP_RESOLVE_BENEATH	 0x08

struct ap_how {
	uint64_t flags, mode, resolve;
};

struct apply {
	struct changes_set *cs;
	int ws, upper;
	char prev[PATH_MAX + 16];
	size_t refused;
	unsigned long kill_after; /* tests: SIGKILL after this many writes (0: never) */
	unsigned long done;
};

/* rel beneath dir, no symlink, no other mount on the way. fd or -errno. */
static int beneath(int dir, const char *rel, int flags)
{
	struct ap_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.resolve = AP_RESOLVE_BENEATH | AP_RESOLVE_NO_SYMLINKS | AP_RESOLVE_NO_MAGICLINKS |
			   AP_RESOLVE_NO_XDEV,
	};
	int fd = syscall(__NR_openat2, dir, rel[0] ? rel : ".", &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* The parent of path in the workspace (O_PATH) and its last name. fd or -errno. */
static int parent_of(int ws, const char *path, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	return beneath(ws, dir, O_PATH | O_DIRECTORY);
}

static bool changed_since(const struct stat *st, int64_t start_ns)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec >= start_ns;
}

static void refuse(struct apply *a, const char *path, const char *why)
{
	fprintf(stderr, "bpfbox apply: refused: %s: %s\n", path, why);
	a->refused++;
}

/* A directory of the workspace to be removed: anything in it changed since the start? */
static bool tree_changed(int dfd, int64_t start_ns, int depth)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	bool changed = false;
	DIR *d;

	if (fd < 0 || depth > 256 || !(d = fdopendir(fd))) {
		fd_close(&fd);
		return true;
	}
	while (!changed && (de = readdir(d))) {
		struct stat st;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    changed_since(&st, start_ns)) {
			changed = true;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			changed = sub < 0 || tree_changed(sub, start_ns, depth + 1);
			fd_close(&sub);
		}
	}
	closedir(d);
	return changed;
}

/* Every check, before anything is written. */
static void check_one(struct apply *a, const struct change *c, bool resuming)
{
	mode_t m = c->mode;
	const char *base;
	struct stat st;
	int p;

	if (c->kind != CHANGE_DELETED && !S_ISREG(m) && !S_ISDIR(m) && !S_ISLNK(m)) {
		refuse(a, c->path,
		       "not a file, directory or symlink (a device node, fifo or socket)");
		return;
	}
	if (c->kind != CHANGE_DELETED && !S_ISDIR(m) && (m & (S_ISUID | S_ISGID))) {
		refuse(a, c->path, "set-uid or set-gid");
		return;
	}
	if (resuming)
		return;
	p = parent_of(a->ws, c->path, &base);
	if (p == -ENOENT || p == -ENOTDIR)
		return; /* below a directory the set adds, in place of nothing or of a file */
	if (p < 0) {
		refuse(a, c->path,
		       p == -ELOOP || p == -EXDEV
			       ? "a symlink or a mount on its path in the workspace"
			       : strerror(-p));
		return;
	}
	if (fstatat(p, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (changed_since(&st, a->cs->start_ns))
			refuse(a, c->path, "changed in the workspace since the session started");
		else if (S_ISDIR(st.st_mode) && (c->kind == CHANGE_DELETED || !S_ISDIR(m))) {
			int sub = beneath(p, base, O_PATH | O_DIRECTORY);

			if (sub < 0 || tree_changed(sub, a->cs->start_ns, 0))
				refuse(a, c->path,
				       "something below it changed in the workspace since "
				       "the session started");
			fd_close(&sub);
		}
	}
	close(p);
}

static int copy_data(int in, int out)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

/* name in dir (a file, symlink or tree, never followed) copied to the path to. */
static int copy_any(int dir, const char *name, const char *to)
{
	struct stat st;
	int r = 0;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlink(target, to) < 0 ? -errno : 0;
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int in = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int out = open(to,
					       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					       st.st_mode & 0777);

		if (in < 0 || out < 0)
			return -errno;
		return copy_data(in, out);
	}
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct dirent *de;
		DIR *d;

		if (fd < 0 || mkdir(to, 0700) < 0 || !(d = fdopendir(fd))) {
			r = -errno;
			fd_close(&fd);
			return r;
		}
		while (!r && (de = readdir(d))) {
			char sub[PATH_MAX];

			if (streq(de->d_name, ".") || streq(de->d_name, ".."))
				continue;
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", to, de->d_name) >=
			    sizeof(sub))
				r = -ENAMETOOLONG;
			else
				r = copy_any(dirfd(d), de->d_name, sub);
		}
		closedir(d);
		chmod(to, st.st_mode & 07777);
		return r;
	}
	return 0; /* a device node or fifo of the workspace: not kept */
}

/* What the workspace has at path, kept in ROOT/ID/prev before it is replaced (once). */
static int keep(struct apply *a, int parent, const char *base, const char *path)
{
	char to[PATH_MAX + 32], tmp[PATH_MAX + 64];
	struct stat st;
	int r;

	if ((size_t)snprintf(to, sizeof(to), "%s/%s", a->prev, path) >= sizeof(to))
		return -ENAMETOOLONG;
	if (lstat(to, &st) == 0)
		return 0; /* kept by an apply that was interrupted */
	snprintf(tmp, sizeof(tmp), "%s.bpfbox-tmp", to);
	if ((r = mkdir_parents(to, 0700)) < 0)
		return r;
	rm_tree(tmp);
	if ((r = copy_any(parent, base, tmp)) < 0)
		return r;
	return rename(tmp, to) < 0 ? -errno : 0;
}

static int remove_at(int parent, const char *base, const struct stat *st)
{
	char path[PATH_MAX];

	if (!S_ISDIR(st->st_mode))
		return unlinkat(parent, base, 0) < 0 && errno != ENOENT ? -errno : 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", parent, base);
	return rm_tree(path);
}

/* The session's file or symlink at c->path, to tmp in parent, with its mode and owner. */
static int write_tmp(struct apply *a, const struct change *c, int parent, const char *tmp)
{
	const char *ubase;
	_cleanup_close_ int up = parent_of(a->upper, c->path, &ubase), in = -1, out = -1;
	struct stat st;

	if (up < 0)
		return up;
	if (fstatat(up, ubase, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(up, ubase, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, parent, tmp) < 0)
			return -errno;
		if (geteuid() == 0 &&
		    fchownat(parent, tmp, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		return 0;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & (S_ISUID | S_ISGID)))
		return -EPERM; /* changed since the checks: never written */
	in = openat(up, ubase, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	out = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (in < 0 || out < 0)
		return -errno;
	if (copy_data(in, out) < 0)
		return -EIO;
	if ((geteuid() == 0 && fchown(out, st.st_uid, st.st_gid) < 0) ||
	    fchmod(out, st.st_mode & 01777) < 0)
		return -errno;
	return 0;
}

/* A directory of the session's at c->path: made (or its mode set). */
static int write_dir(const struct change *c, int parent, const char *base, bool exists)
{
	_cleanup_close_ int fd = -1;

	if (!exists && mkdirat(parent, base, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, c->mode & 07777) < 0)
		return -errno;
	return 0;
}

static int apply_one(struct apply *a, const struct change *c, size_t i)
{
	const char *base;
	_cleanup_close_ int p = parent_of(a->ws, c->path, &base);
	char tmp[64];
	struct stat st;
	bool exists;
	int r = 0;

	if (p < 0)
		return p;
	exists = fstatat(p, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	/* What is there goes to prev first; a directory a file or symlink replaces is removed. */
	if (exists && (c->kind == CHANGE_DELETED || !S_ISDIR(c->mode) || !S_ISDIR(st.st_mode)) &&
	    (r = keep(a, p, base, c->path)) < 0)
		return r;
	if (exists && (c->kind == CHANGE_DELETED || S_ISDIR(st.st_mode) != S_ISDIR(c->mode)) &&
	    (r = remove_at(p, base, &st)) < 0)
		return r;
	if (c->kind == CHANGE_DELETED)
		return 0;
	if (S_ISDIR(c->mode))
		return write_dir(c, p, base, exists && S_ISDIR(st.st_mode));
	snprintf(tmp, sizeof(tmp), ".bpfbox-apply-%zu", i);
	unlinkat(p, tmp, 0); /* left by an apply that was killed */
	r = write_tmp(a, c, p, tmp);
	if (!r && renameat(p, tmp, p, base) < 0)
		r = -errno;
	if (r)
		unlinkat(p, tmp, 0);
	return r;
}

/* The set's upper and work removed, the manifest says applied, the journal goes last. */
static int finish(struct apply *a, const char *journal)
{
	struct changes_set *cs = a->cs;
	char path[PATH_MAX + 16];
	int r;

	snprintf(cs->state, sizeof(cs->state), "applied");
	if ((r = changes_manifest_write(cs)) < 0)
		return r;
	changes_remove_work(cs);
	snprintf(path, sizeof(path), "%s/upper", cs->dir);
	rm_tree(path);
	unlink(journal);
	return 0;
}

static int open_dirs(struct apply *a)
{
	struct changes_set *cs = a->cs;
	char upper[PATH_MAX + 16];
	struct stat st;

	a->ws = path_open_exact(cs->workspace, O_DIRECTORY);
	if (a->ws < 0 || fstat(a->ws, &st) < 0 || st.st_dev != cs->ws_dev ||
	    st.st_ino != cs->ws_ino) {
		fprintf(stderr,
			"bpfbox apply: the workspace %s is not the directory the session ran on "
			"(moved or replaced since); nothing written\n",
			cs->workspace);
		return -ESTALE;
	}
	snprintf(upper, sizeof(upper), "%s/upper", cs->dir);
	a->upper = path_open_exact(upper, O_DIRECTORY);
	if (a->upper < 0) {
		fprintf(stderr, "bpfbox apply: cannot open %s: %s\n", upper, strerror(-a->upper));
		return a->upper;
	}
	snprintf(a->prev, sizeof(a->prev), "%s/prev", cs->dir);
	return 0;
}

static int write_journal(const char *journal)
{
	int fd = open(journal, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "checked\n", 8) != 8 || fsync(fd) < 0)
		r = -errno ? -errno : -EIO;
	close(fd);
	return r;
}

int changes_apply(struct changes_set *cs)
{
	struct apply a = {.cs = cs, .ws = -1, .upper = -1};
	char journal[PATH_MAX + 16], why[PATH_MAX + 128];
	const char *e = getenv("BPFBOX_FAULT_APPLY_KILL_AFTER");
	struct change_list l;
	bool resuming;
	int r, code = 1;

	if (streq(cs->state, "applied")) {
		fprintf(stderr, "bpfbox apply: change set %s was applied already\n", cs->id);
		return 0;
	}
	snprintf(journal, sizeof(journal), "%s/journal", cs->dir);
	resuming = access(journal, F_OK) == 0;
	if (e)
		a.kill_after = strtoul(e, NULL, 10);
	if (open_dirs(&a) < 0)
		goto out_fds;
	if (changes_scan(cs, &l, why, sizeof(why)) < 0) {
		fprintf(stderr, "bpfbox apply: %s; nothing written\n", why);
		goto out_fds;
	}
	for (size_t i = 0; i < l.n; i++)
		check_one(&a, &l.v[i], resuming);
	if (a.refused) {
		fprintf(stderr,
			"bpfbox apply: %zu path%s refused; nothing written (bpfbox changes %s)\n",
			a.refused, a.refused == 1 ? "" : "s", cs->id);
		code = CHANGES_EXIT_CONFLICT;
		goto out;
	}
	if (!resuming && (r = write_journal(journal)) < 0) {
		fprintf(stderr, "bpfbox apply: cannot write %s: %s; nothing written\n", journal,
			strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		if (a.kill_after && ++a.done > a.kill_after)
			raise(SIGKILL);
		if ((r = apply_one(&a, &l.v[i], i)) < 0) {
			fprintf(stderr,
				"bpfbox apply: cannot write %s: %s; stopped, run 'bpfbox apply %s' "
				"again to finish\n",
				l.v[i].path, strerror(-r), cs->id);
			goto out;
		}
	}
	if ((r = finish(&a, journal)) < 0) {
		fprintf(stderr, "bpfbox apply: cannot mark %s applied: %s\n", cs->dir,
			strerror(-r));
		goto out;
	}
	code = 0;
out:
	change_list_free(&l);
out_fds:
	fd_close(&a.ws);
	fd_close(&a.upper);
	return code;
}
