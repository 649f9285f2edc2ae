// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "../probe/probe.h"
#include "../lib/util.h"

int cgroup_parent(char *buf, size_t size)
{
	const char *env = getenv("BPFBOX_CGROUP_PARENT");
	char mnt[256];
	int r;

	if (env && env[0] == '/') {
		snprintf(buf, size, "%s", env);
		return 0;
	}
	r = cgroup2_mount_point(mnt, sizeof(mnt));
	if (r < 0)
		return r;
	snprintf(buf, size, "%s/bpfbox", mnt);
	return 0;
}

int cgroup_parent_open(const char *parent)
{
	int fd;

	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int session_cgroup_create(const char *parent, const char *name, struct session_cgroup *cg)
{
	char procs[PATH_MAX + 16];
	struct stat st;

	memset(cg, 0, sizeof(*cg));
	cg->procs_fd = -1;
	snprintf(cg->path, sizeof(cg->path), "%s/%s", parent, name);
	if (mkdir(cg->path, 0755) < 0) {
		cg->path[0] = '\0';
		return -errno;
	}
	if (stat(cg->path, &st) < 0)
		goto fail;
	cg->id = st.st_ino;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg->path);
	cg->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (cg->procs_fd < 0)
		goto fail;
	return 0;
fail:
	rmdir(cg->path);
	cg->path[0] = '\0';
	return -errno;
}

int session_cgroup_destroy(struct session_cgroup *cg)
{
	char path[PATH_MAX + 16];
	int r = 0;

	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	if (!cg->path[0])
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.kill", cg->path);
	write_file_str(path, "1");
	/* rmdir fails with EBUSY until the killed processes are gone. */
	for (int i = 0; i < 2000; i++) {
		if (rmdir(cg->path) == 0) {
			cg->path[0] = '\0';
			return 0;
		}
		r = -errno;
		if (r != -EBUSY)
			break;
		usleep(1000);
	}
	return r;
}
