// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
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

int cgroup_of_pid(pid_t pid, char *buf, size_t size)
{
	char path[64], line[PATH_MAX + 64];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!startswith(line, "0::"))
			continue;
		line[strcspn(line, "\n")] = '\0';
		return snprintf(buf, size, "%s", line + 3) < (int)size ? 0 : -ENAMETOOLONG;
	}
	return -ENOENT;
}

int cgroup_dir_of_pid(pid_t pid, char *out, size_t size)
{
	char rel[PATH_MAX], mnt[PATH_MAX];
	int r = cgroup_of_pid(pid, rel, sizeof(rel));

	if (!r)
		r = cgroup2_mount_point(mnt, sizeof(mnt));
	if (!r && snprintf(out, size, "%s%s", mnt, streq(rel, "/") ? "" : rel) >= (int)size)
		r = -ENAMETOOLONG;
	return r;
}

int cgroup_netns_open(const char *dir, pid_t pid)
{
	char buf[32], path[64], now[PATH_MAX];
	struct stat want, st;
	int fd;

	if (!pid && cgroup_read(dir, "cgroup.procs", buf, sizeof(buf)) > 0)
		pid = strtol(buf, NULL, 10);
	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Opened first, checked after: a pid reused meanwhile is another cgroup's. */
	if (stat(dir, &want) < 0 || cgroup_dir_of_pid(pid, now, sizeof(now)) < 0 ||
	    stat(now, &st) < 0 || st.st_ino != want.st_ino) {
		close(fd);
		return -ESRCH;
	}
	return fd;
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

int session_name_new(char *buf)
{
	unsigned char rnd[SESSION_NAME_LEN / 2];

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(buf + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

int cgroup_pool_fill(struct cgroup_pool *p, const char *parent, size_t want)
{
	if (want > CGROUP_POOL_MAX)
		want = CGROUP_POOL_MAX;
	while (p->n < want) {
		struct session_cgroup cg;
		char name[SESSION_NAME_LEN + 1];
		int r = session_name_new(name);

		if (!r)
			r = session_cgroup_create(parent, name, &cg);
		if (r < 0)
			return r;
		session_cgroup_close(&cg);
		/* Unmarked, a killed daemon's pool would wait for the stale sweep. */
		if (setxattr(cg.path, CGROUP_POOL_XATTR, "1", 1, 0) < 0) {
			r = -errno;
			rmdir(cg.path);
			return r;
		}
		memcpy(p->v[p->n].name, name, sizeof(name));
		p->v[p->n].made = time(NULL);
		p->v[p->n++].id = cg.id;
	}
	return 0;
}

const char *cgroup_pool_next(const struct cgroup_pool *p)
{
	return p->n ? p->v[p->n - 1].name : NULL;
}

int cgroup_pool_take(struct cgroup_pool *p, const char *parent, const char *name,
		     struct session_cgroup *cg)
{
	for (size_t i = p->n; i-- > 0;) {
		if (name && !streq(p->v[i].name, name))
			continue;
		memset(cg, 0, sizeof(*cg));
		cg->dir_fd = cg->procs_fd = -1;
		snprintf(cg->path, sizeof(cg->path), "%s/%s", parent, p->v[i].name);
		cg->id = p->v[i].id;
		p->v[i] = p->v[--p->n];
		/* Gone (removed by someone else's sweep): the next one. */
		if (removexattr(cg->path, CGROUP_POOL_XATTR) < 0 && errno == ENOENT)
			continue;
		return 0;
	}
	return -ENOENT;
}

void cgroup_pool_expire(struct cgroup_pool *p, const char *parent, time_t before)
{
	char path[PATH_MAX];

	for (size_t i = p->n; i-- > 0;) {
		if (p->v[i].made >= before)
			continue;
		snprintf(path, sizeof(path), "%s/%s", parent, p->v[i].name);
		rmdir(path);
		p->v[i] = p->v[--p->n];
	}
}

void cgroup_pool_drain(struct cgroup_pool *p, const char *parent)
{
	cgroup_pool_expire(p, parent, (time_t)INT64_MAX);
}

int cgroup_pool_sweep(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[PATH_MAX], v[4];

		if (de->d_type != DT_DIR || strlen(de->d_name) != SESSION_NAME_LEN)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) >=
			    (int)sizeof(path) ||
		    getxattr(path, CGROUP_POOL_XATTR, v, sizeof(v)) < 0)
			continue;
		/* EBUSY when a process is in it: not an empty pool cgroup, left alone. */
		n += rmdir(path) == 0;
	}
	closedir(d);
	return n;
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

int cgroup_populated(const char *dir)
{
	char buf[256];
	uint64_t v;
	int r = cgroup_read(dir, "cgroup.events", buf, sizeof(buf));

	if (r == -ENOENT)
		return access(dir, F_OK) == 0 ? -ENOENT : 0;
	if (r < 0)
		return r;
	/* No "populated" line: not known to be empty. */
	return !cgroup_key(buf, "populated", &v) || v != 0;
}

int cgroup_empty(const char *dir, int wait_ms)
{
	bool have_kill = write_kill(dir) == 0;

	if (!have_kill)
		kill_members(dir);
	for (int i = 0; i <= wait_ms; i++) {
		int r = cgroup_populated(dir);

		if (r <= 0)
			return r;
		if (!have_kill && i % 50 == 49)
			kill_members(dir);
		usleep(1000);
	}
	return -EBUSY;
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
