// SPDX-License-Identifier: GPL-2.0
/* The fds a closer is given to hold: closer.h, closer_bpf_fds. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "closer.h"

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
