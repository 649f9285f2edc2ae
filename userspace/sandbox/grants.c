// SPDX-License-Identifier: GPL-2.0
/*
 * The workspace and the grants, each opened once by the path the policy
 * checked, never through a symlink (grants.h, docs/SECURITY.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "grants.h"
#include "../policy/policy.h"
#include "../lib/util.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif
/* <linux/openat2.h>, without depending on the build host's headers. */
#define GRANT_RESOLVE_NO_MAGICLINKS 0x02
#define GRANT_RESOLVE_NO_SYMLINKS   0x04

struct grant_open_how {
	uint64_t flags, mode, resolve;
};

int path_open_by_names(const char *path, int flags)
{
	_cleanup_free_ char *copy = strdup(path);
	char *save = NULL, *name;
	int fd, r = 0;

	if (!copy)
		return -ENOMEM;
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		struct stat st;
		int nfd;

		if (streq(name, ".") || streq(name, "..")) {
			r = -EINVAL; /* a checked real path has none */
			break;
		}
		nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
		if (fd < 0 || fstat(fd, &st) < 0) {
			r = -errno;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			r = -ELOOP;
			break;
		}
	}
	if (!r && (flags & O_DIRECTORY)) {
		struct stat st;

		if (fstat(fd, &st) < 0)
			r = -errno;
		else if (!S_ISDIR(st.st_mode))
			r = -ENOTDIR;
	}
	if (r < 0 && fd >= 0)
		close(fd);
	return r < 0 ? r : fd;
}

int path_open_exact(const char *path, int flags)
{
	struct grant_open_how how = {
		.flags = (uint64_t)(O_PATH | O_CLOEXEC | flags),
		.resolve = GRANT_RESOLVE_NO_SYMLINKS | GRANT_RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (path[0] != '/')
		return -EINVAL;
	fd = syscall(__NR_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	/* ENOSYS: an older kernel; EPERM: a seccomp filter that does not know it. */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	return path_open_by_names(path, flags);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int grant_reopen(const char *path, int checked)
{
	int fd = path_open_exact(path, 0);

	if (fd < 0)
		return fd;
	if (!same_file(fd, checked)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Whether fd's path, as the kernel names it, is still path. */
static bool still_named(int fd, const char *path)
{
	char link[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n < 0)
		return true; /* no /proc: the walk without symlinks is the check */
	buf[n] = '\0';
	return streq(buf, path);
}

const char *grant_changed(const char *path, int r)
{
	static char msg[PATH_MAX + 64];

	if (r != -ELOOP && r != -ESTALE)
		return path;
	snprintf(msg, sizeof(msg), "'%s' (changed after it was checked: %s)", path,
		 r == -ELOOP ? "a symlink is there now" : "another file is there now");
	return msg;
}

static void say_bad(struct grant_fds *g, const char *path, int r)
{
	if (r == -ELOOP || r == -ESTALE)
		snprintf(g->bad, sizeof(g->bad), "%s", grant_changed(path, r));
	else
		snprintf(g->bad, sizeof(g->bad), "cannot open '%s': %s", path, strerror(-r));
}

/* One grant: opened, then checked to be still at its path (not renamed meanwhile). */
static int open_one(struct grant_fds *g, const char *path, int flags, int *out)
{
	int fd = path_open_exact(path, flags);

	if (fd >= 0 && !still_named(fd, path)) {
		close(fd);
		fd = -ESTALE;
	}
	if (fd < 0) {
		say_bad(g, path, fd);
		return fd;
	}
	*out = fd;
	return 0;
}

void grant_fds_init(struct grant_fds *g)
{
	memset(g, 0, sizeof(*g));
	g->ws = g->upper = g->work = g->changes_mnt = -1;
	g->changes_sock[0] = g->changes_sock[1] = -1;
	g->ssh_agent = -1;
}

int grant_fds_open(struct grant_fds *g, const struct bpfbox_policy *p, const char *ssh_agent)
{
	struct stat st;
	int r = 0;

	grant_fds_init(g);
	g->p = p;
	g->rw = malloc((p->rw_paths.n + 1) * sizeof(int));
	g->ro = malloc((p->ro_paths.n + 1) * sizeof(int));
	if (!g->rw || !g->ro) {
		snprintf(g->bad, sizeof(g->bad), "the grants: out of memory");
		return -ENOMEM;
	}
	g->nrw = p->rw_paths.n;
	g->nro = p->ro_paths.n;
	for (size_t i = 0; i < g->nrw; i++)
		g->rw[i] = -1;
	for (size_t i = 0; i < g->nro; i++)
		g->ro[i] = -1;
	if (p->workspace)
		r = open_one(g, p->workspace, O_DIRECTORY, &g->ws);
	for (size_t i = 0; !r && i < g->nrw; i++)
		r = open_one(g, p->rw_paths.v[i], 0, &g->rw[i]);
	for (size_t i = 0; !r && i < g->nro; i++)
		r = open_one(g, p->ro_paths.v[i], 0, &g->ro[i]);
	/* --ssh-agent: the socket the plan resolved, the view binds and Landlock grants. */
	if (!r && ssh_agent && ssh_agent[0]) {
		r = open_one(g, ssh_agent, 0, &g->ssh_agent);
		if (!r && (fstat(g->ssh_agent, &st) < 0 || !S_ISSOCK(st.st_mode))) {
			say_bad(g, ssh_agent, -ESTALE);
			r = -ESTALE;
		}
		g->ssh_agent_path = ssh_agent;
	}
	return r;
}

void grant_fds_close(struct grant_fds *g)
{
	if (g->ws >= 0)
		close(g->ws);
	if (g->ssh_agent >= 0)
		close(g->ssh_agent);
	if (g->upper >= 0)
		close(g->upper);
	if (g->work >= 0)
		close(g->work);
	if (g->changes_mnt >= 0)
		close(g->changes_mnt);
	for (int i = 0; i < 2; i++)
		if (g->changes_sock[i] >= 0)
			close(g->changes_sock[i]);
	for (size_t i = 0; g->rw && i < g->nrw; i++)
		if (g->rw[i] >= 0)
			close(g->rw[i]);
	for (size_t i = 0; g->ro && i < g->nro; i++)
		if (g->ro[i] >= 0)
			close(g->ro[i]);
	free(g->rw);
	free(g->ro);
	grant_fds_init(g);
}

int grant_fd_of(const struct grant_fds *g, const char *path)
{
	const struct bpfbox_policy *p = g ? g->p : NULL;

	if (!p)
		return -1;
	if (p->workspace && streq(path, p->workspace))
		return g->ws;
	for (size_t i = 0; i < g->nrw; i++)
		if (streq(path, p->rw_paths.v[i]))
			return g->rw[i];
	for (size_t i = 0; i < g->nro; i++)
		if (streq(path, p->ro_paths.v[i]))
			return g->ro[i];
	return -1;
}
