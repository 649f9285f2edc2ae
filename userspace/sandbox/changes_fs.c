// SPDX-License-Identifier: GPL-2.0
/*
 * The file operations apply and undo share (changes_internal.h): every
 * path of the workspace through openat2 beneath its fd without following
 * a symlink, every name made with O_EXCL | O_NOFOLLOW at a directory fd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "changes_internal.h"
#include "../lib/util.h"

int ch_parent_of(int root, const char *path, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	*base = slash ? slash + 1 : path;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	return open_beneath(root, dir, O_PATH | O_DIRECTORY);
}

int ch_parent_at(struct ch_parent *pc, int root, const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	*base = slash ? slash + 1 : path;
	if (pc->fd != -1 && n < sizeof(pc->dir) && !strncmp(pc->dir, path, n) && !pc->dir[n])
		return pc->fd;
	if (pc->fd >= 0)
		close(pc->fd);
	snprintf(pc->dir, sizeof(pc->dir), "%.*s", (int)n, path);
	pc->fd = open_beneath(root, pc->dir, O_PATH | O_DIRECTORY);
	if (pc->fd == -1)
		pc->fd = -EPERM; /* -1 means nothing kept */
	return pc->fd;
}

void ch_parent_drop(struct ch_parent *pc)
{
	if (pc->fd >= 0)
		close(pc->fd);
	pc->fd = -1;
}

int ch_copy_data(int in, int out, struct sha256 *sum)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (out >= 0 && write(out, buf, n) != n)
			return -EIO;
		if (sum)
			sha256_update(sum, buf, n);
	}
	return n < 0 ? -errno : 0;
}

/* The owner (as root), mode and times of st onto fd. */
static int copy_meta(int fd, const struct stat *st, mode_t keep)
{
	struct timespec t[2] = {st->st_atim, st->st_mtim};

	if (geteuid() == 0 && fchown(fd, st->st_uid, st->st_gid) < 0)
		return -errno;
	if (fchmod(fd, st->st_mode & keep) < 0 || futimens(fd, t) < 0)
		return -errno;
	return 0;
}

static int copy_tree(int dir, const char *name, int todir, const char *to, const struct stat *st)
{
	DIR *d = dir_open_at(dir, name);
	struct dirent *de;
	int out = -1, r;

	if (!d)
		return -errno;
	if (mkdirat(todir, to, 0700) < 0 ||
	    (out = openat(todir, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		r = -errno;
		closedir(d);
		fd_close(&out);
		return r;
	}
	r = 0;
	while (!r && (de = dir_next(d)))
		r = ch_copy_any(dirfd(d), de->d_name, out, de->d_name);
	closedir(d);
	if (!r)
		r = copy_meta(out, st, 07777);
	close(out);
	return r;
}

int ch_copy_any(int dir, const char *name, int todir, const char *to)
{
	struct stat st;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, todir, to) < 0)
			return -errno;
		if (geteuid() == 0 &&
		    fchownat(todir, to, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int in = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int out = -1;
		int r;

		if (in < 0)
			return -errno;
		out = openat(todir, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			return -errno;
		if ((r = ch_copy_data(in, out, NULL)) < 0)
			return r;
		return copy_meta(out, &st, 01777);
	}
	if (S_ISDIR(st.st_mode))
		return copy_tree(dir, name, todir, to, &st);
	return 0; /* a device node, fifo or socket: not copied */
}

int ch_remove_at(int parent, const char *base, const struct stat *st)
{
	char path[PATH_MAX];

	if (!S_ISDIR(st->st_mode))
		return unlinkat(parent, base, 0) < 0 && errno != ENOENT ? -errno : 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", parent, base);
	return rm_tree(path);
}

int ch_hash_at(int dir, const char *name, const struct stat *st, uint8_t out[SHA256_LEN])
{
	struct sha256 c;

	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dir, name, target, sizeof(target));

		if (n < 0)
			return -errno;
		sha256(target, n, out);
		return 0;
	}
	if (S_ISREG(st->st_mode)) {
		_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		char buf[65536];
		ssize_t n;

		if (fd < 0)
			return -errno;
		sha256_init(&c);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			sha256_update(&c, buf, n);
		if (n < 0)
			return -errno;
		sha256_final(&c, out);
		return 0;
	}
	return -EINVAL;
}

uint64_t ch_tree_bytes(int dir, const char *name)
{
	struct stat st;
	uint64_t sum;
	struct dirent *de;
	DIR *d;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	sum = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode))
		return sum;
	d = dir_open_at(dir, name);
	if (!d)
		return sum;
	while ((de = dir_next(d)))
		sum += ch_tree_bytes(dirfd(d), de->d_name);
	closedir(d);
	return sum;
}

void ch_fault_step(unsigned long *done)
{
	static unsigned long after;
	static bool read_env;
	const char *e;

	if (!read_env) {
		read_env = true;
		if ((e = getenv("BPFBOX_FAULT_APPLY_KILL_AFTER")))
			after = strtoul(e, NULL, 10);
	}
	if (after && ++*done > after)
		raise(SIGKILL);
}
