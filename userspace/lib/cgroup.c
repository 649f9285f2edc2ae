// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"

int cgroup2_mount_point(char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char mnt[512], fstype[64];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s", fstype) != 1 || !streq(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
			continue;
		snprintf(buf, size, "%s", mnt);
		return 0;
	}
	return -ENOENT;
}

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
	int r;

	memset(cg, 0, sizeof(*cg));
	cg->dir_fd = cg->procs_fd = -1;
	if (snprintf(cg->path, sizeof(cg->path), "%s/%s", parent, name) >= (int)sizeof(cg->path)) {
		cg->path[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (mkdir(cg->path, 0755) < 0) {
		cg->path[0] = '\0';
		return -errno;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg->path);
	cg->dir_fd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cg->procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (cg->dir_fd < 0 || cg->procs_fd < 0 || fstat(cg->dir_fd, &st) < 0) {
		r = -errno;
		session_cgroup_close(cg);
		rmdir(cg->path);
		cg->path[0] = '\0';
		return r;
	}
	cg->id = st.st_ino;
	return 0;
}

void session_cgroup_close(struct session_cgroup *cg)
{
	fd_close(&cg->dir_fd);
	fd_close(&cg->procs_fd);
}

int cgroup_read(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX + 64];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	return read_file_str(path, buf, size);
}

bool cgroup_key(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (const char *p = text; (p = strstr(p, key)); p += klen)
		if ((p == text || p[-1] == '\n') && p[klen] == ' ') {
			*out = strtoull(p + klen + 1, NULL, 10);
			return true;
		}
	return false;
}

bool cgroup_freeze_set(const char *dir)
{
	char buf[8];

	return cgroup_read(dir, "cgroup.freeze", buf, sizeof(buf)) > 0 && buf[0] == '1';
}

/* SIGKILL to each process listed in dir/cgroup.procs. */
static int kill_members(const char *dir)
{
	char path[PATH_MAX + 32];
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &pid) == 1)
		kill(pid, SIGKILL);
	fclose(f);
	return 0;
}

static int write_kill(const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
	return write_file_str(path, "1");
}

int cgroup_kill(const char *dir)
{
	int r = write_kill(dir);

	/* A v1 cgroup, or a kernel before 5.14: signal each member instead. */
	return r == -ENOENT ? kill_members(dir) : r;
}

int cgroup_remove(const char *dir, int wait_ms)
{
	bool have_kill = write_kill(dir) == 0;

	if (!have_kill)
		kill_members(dir);
	for (int i = 0; i <= wait_ms; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		/* Members forked while they were killed, without cgroup.kill: again. */
		if (!have_kill && i % 50 == 49)
			kill_members(dir);
		usleep(1000);
	}
	return -EBUSY;
}
