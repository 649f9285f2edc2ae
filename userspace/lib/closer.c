// SPDX-License-Identifier: GPL-2.0
/* Pays for the slow last close of some fds in a helper: closer.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "closer.h"

/*
 * The helper: drops every fd but the ones to hold and its pipe ends, tells
 * the parent, then holds them until the parent lets go. It shares the
 * parent's memory and TLS, so raw syscalls only, nothing instrumented.
 */
__attribute__((no_sanitize("address"), no_sanitize("undefined"))) static int helper(void *arg)
{
	struct closer *c = arg;
	unsigned int from = 0;
	char b = 0;

	for (int i = 0; i < c->nkeep; i++) {
		if ((unsigned int)c->keep[i] > from)
			syscall(SYS_close_range, from, (unsigned int)c->keep[i] - 1, 0U);
		from = (unsigned int)c->keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0U);
	syscall(SYS_write, c->ready_write, &b, 1);
	syscall(SYS_read, c->go_read, &b, 1);
	syscall(SYS_exit, 0);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int closer_begin(struct closer *c, const int *fds, size_t n)
{
	char b;
	int r;

	c->started = 0;
	c->go[0] = c->go[1] = c->ready[0] = c->ready[1] = -1;
	if (n > CLOSER_MAX_FDS)
		return -E2BIG;
	if (pipe2(c->go, O_CLOEXEC) < 0 || pipe2(c->ready, O_CLOEXEC) < 0) {
		r = -errno;
		closer_end(c);
		return r;
	}
	c->nkeep = 0;
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			c->keep[c->nkeep++] = fds[i];
	c->keep[c->nkeep++] = c->go_read = c->go[0];
	c->keep[c->nkeep++] = c->ready_write = c->ready[1];
	qsort(c->keep, c->nkeep, sizeof(c->keep[0]), cmp_int);
	if (clone(helper, c->stack + sizeof(c->stack), CLONE_VM, c) < 0) {
		r = -errno;
		closer_end(c);
		return r;
	}
	c->started = 1;
	close(c->ready[1]);
	c->ready[1] = -1;
	/* EOF without a byte: the helper died before it held the fds. */
	while ((r = read(c->ready[0], &b, 1)) < 0 && errno == EINTR)
		;
	if (r != 1) {
		closer_end(c);
		return -ECHILD;
	}
	return 0;
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

size_t closer_bpf_fds(int *fds, size_t max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while (n < max && (e = readdir(d))) {
		char path[64], target[64];
		ssize_t len;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		fd = atoi(e->d_name);
		if (fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (!strncmp(target, "anon_inode:bpf", 14) ||
		    !strcmp(target, "anon_inode:[perf_event]"))
			fds[n++] = fd;
	}
	closedir(d);
	return n;
}
