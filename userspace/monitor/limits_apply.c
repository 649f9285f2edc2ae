// SPDX-License-Identifier: GPL-2.0
/*
 * A planned session's cgroups made and its limits written (v2 knobs, v1
 * cgroups beside this process's own, rlimits where neither holds), and
 * its child joined to them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "limits_internal.h"
#include "../lib/cgroup.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define CPU_PERIOD_US 100000

/* Whether every controller in want is in the file's word list. */
static bool has_all(const char *path, const char *const *want, size_t n)
{
	char buf[256];

	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!word_list_has(buf, want[i], " "))
			return false;
	return true;
}

/*
 * Enables the v2 controllers the plan wants in every cgroup.subtree_control
 * from the mount down to the parent. A controller that cannot be enabled is
 * degraded to v1 or the fallback.
 */
static void enable_v2(struct session_limits *l)
{
	const char *want[RES__COUNT];
	char path[LIMITS_PATH_MAX + 32];
	size_t n = 0, mlen = strlen(l->v2_mount);

	for (int r = 0; r < RES__COUNT; r++)
		if (l->how[r] == LIMIT_CGROUP2)
			want[n++] = limits_ctrl_names[r];
	if (!n)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", l->v2_parent);
	if (has_all(path, want, n))
		return; /* the common case: enabled once, long ago */
	for (size_t end = mlen;; end++) {
		char dir[LIMITS_PATH_MAX];

		if (l->v2_parent[end] != '/' && l->v2_parent[end] != '\0')
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)end, l->v2_parent);
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
		for (size_t i = 0; i < n; i++) {
			char word[32];

			if (has_all(path, &want[i], 1))
				continue;
			snprintf(word, sizeof(word), "+%s", want[i]);
			if (write_file_str(path, word) < 0)
				log_warn_errno(errno, "cannot enable the %s controller in %s",
					       want[i], dir);
		}
		if (!l->v2_parent[end])
			break;
	}
	for (int r = 0; r < RES__COUNT; r++) {
		if (l->how[r] != LIMIT_CGROUP2 || has_all(path, &limits_ctrl_names[r], 1))
			continue;
		l->how[r] = r == RES_MEMORY && l->via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT
									   : LIMIT_NONE;
	}
}

static int write_knob(const char *dir, const char *file, const char *value)
{
	char path[LIMITS_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return write_file_str(path, value);
}

static int apply_v2(const struct session_limits *l, enum limit_res r)
{
	char v[64];
	int e;

	switch (r) {
	case RES_MEMORY:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_mb << 20);
		e = write_knob(l->cg, "memory.max", v);
		/* No memory.swap.max: the kernel has no swap accounting (docs/limits.md). */
		if (!e && (e = write_knob(l->cg, "memory.swap.max", "0")) == -ENOENT)
			e = 0;
		return e;
	case RES_PIDS:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids);
		return write_knob(l->cg, "pids.max", v);
	default:
		snprintf(v, sizeof(v), "%llu %d",
			 (unsigned long long)l->cpu_percent * CPU_PERIOD_US / 100, CPU_PERIOD_US);
		return write_knob(l->cg, "cpu.max", v);
	}
}

static int apply_v1(const struct session_limits *l, enum limit_res r, const char *dir)
{
	char v[64];
	int e;

	switch (r) {
	case RES_MEMORY:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_mb << 20);
		e = write_knob(dir, "memory.limit_in_bytes", v);
		/* memsw = memory + swap: equal means no swap; absent without swapaccount. */
		if (!e && (e = write_knob(dir, "memory.memsw.limit_in_bytes", v)) == -ENOENT)
			e = 0;
		return e;
	case RES_PIDS:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids);
		return write_knob(dir, "pids.max", v);
	default:
		snprintf(v, sizeof(v), "%d", CPU_PERIOD_US);
		e = write_knob(dir, "cpu.cfs_period_us", v);
		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)l->cpu_percent * CPU_PERIOD_US / 100);
		return e ? e : write_knob(dir, "cpu.cfs_quota_us", v);
	}
}

/* <v1 mount><own cgroup>/bpfbox/<id>, made (with the bpfbox level) and limited. */
static int make_v1(struct session_limits *l, enum limit_res r, const char *id)
{
	char own[LIMITS_PATH_MAX], base[LIMITS_PATH_MAX + 16], procs[LIMITS_PATH_MAX + 16];
	char *dir = l->cg1[r];
	int e;

	e = limits_own_v1_path(limits_ctrl_names[r], own, sizeof(own));
	if (e < 0)
		return e;
	snprintf(base, sizeof(base), "%s%s/bpfbox", l->v1_mount[r], own);
	if (snprintf(dir, LIMITS_PATH_MAX, "%s/%s", base, id) >= LIMITS_PATH_MAX) {
		dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	/* Another session may remove an empty base between the two mkdirs: retry once. */
	for (int i = 0; i < 2; i++) {
		if (mkdir(base, 0755) < 0 && errno != EEXIST)
			break;
		if (mkdir(dir, 0755) == 0 || errno != ENOENT)
			break;
	}
	if (access(dir, F_OK) < 0) {
		e = -errno;
		dir[0] = '\0';
		return e;
	}
	e = apply_v1(l, r, dir);
	if (!e) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		l->cg1_procs_fd[r] = open(procs, O_WRONLY | O_CLOEXEC);
		if (l->cg1_procs_fd[r] < 0)
			e = -errno;
	}
	if (e) {
		rmdir(dir);
		dir[0] = '\0';
		rmdir(base);
	}
	return e;
}

static void degrade(struct session_limits *l, enum limit_res r, int err, const char *where)
{
	log_warn_errno(err, "cannot apply the %s limit in %s", limits_ctrl_names[r], where);
	l->how[r] = r == RES_MEMORY && l->via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT : LIMIT_NONE;
}

/* What `bpfbox resume` and the supervisor read back from the v2 cgroup. */
static void write_xattrs(const struct session_limits *l)
{
	char v[96];
	int n;

	if (!l->cg[0])
		return;
	n = snprintf(v, sizeof(v), "memory_mb=%llu disk_mb=%llu", (unsigned long long)l->memory_mb,
		     (unsigned long long)l->disk_mb);
	setxattr(l->cg, LIMITS_XATTR_LIMITS, v, n, 0);
	if (l->cg1[RES_MEMORY][0] || l->cg1[RES_PIDS][0] || l->cg1[RES_CPU][0]) {
		char v1[RES__COUNT * (LIMITS_PATH_MAX + 8)];
		size_t len = 0;

		for (int r = 0; r < RES__COUNT; r++)
			if (l->cg1[r][0])
				len += snprintf(v1 + len, sizeof(v1) - len, "%s %s\n",
						limits_ctrl_names[r], l->cg1[r]);
		setxattr(l->cg, LIMITS_XATTR_V1, v1, len, 0);
	}
}

int limits_v1_read(const char *cg, struct session_limits *l)
{
	char v1[RES__COUNT * (LIMITS_PATH_MAX + 8)], *line, *save = NULL;
	ssize_t n = getxattr(cg, LIMITS_XATTR_V1, v1, sizeof(v1) - 1);

	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	v1[n] = '\0';
	for (line = strtok_r(v1, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp || sp[1] != '/')
			continue;
		*sp = '\0';
		for (int r = 0; r < RES__COUNT; r++)
			if (streq(line, limits_ctrl_names[r]))
				snprintf(l->cg1[r], sizeof(l->cg1[r]), "%s", sp + 1);
	}
	snprintf(l->v1_memory, sizeof(l->v1_memory), "%s", l->cg1[RES_MEMORY]);
	return 0;
}

int limits_apply(struct session_limits *l, const char *id)
{
	if (l->cg[0])
		enable_v2(l);
	for (int r = 0; r < RES__COUNT; r++) {
		int e;

		if (l->how[r] == LIMIT_CGROUP2) {
			e = l->cg[0] ? apply_v2(l, r) : -ENOENT;
			if (e < 0)
				degrade(l, r, e, l->cg[0] ? l->cg : "no session cgroup");
		} else if (l->how[r] == LIMIT_CGROUP1) {
			e = make_v1(l, r, id);
			if (e < 0)
				degrade(l, r, e, l->v1_mount[r]);
		}
	}
	if (l->cg1[RES_MEMORY][0])
		snprintf(l->v1_memory, sizeof(l->v1_memory), "%s", l->cg1[RES_MEMORY]);
	write_xattrs(l);
	limits_describe(l);
	return 0;
}

int limits_create(struct session_limits *l, const char *id)
{
	struct session_cgroup cg;
	int e;

	/* One start in 64 (the id is random) removes what killed runs left. */
	if (id[0] == '0' && id[1] >= '0' && id[1] <= '3' && geteuid() == 0)
		limits_sweep(l);

	if (!l->cgroup)
		return limits_apply(l, id);
	if (l->cg[0])
		return 0;
	if (mkdir(l->v2_parent, 0755) < 0 && errno != EEXIST) {
		e = -errno;
		goto fail;
	}
	enable_v2(l);
	/* The one cgroup module makes it (lib/cgroup.h), as the daemon's register does. */
	e = strlen(l->v2_parent) + 1 + strlen(id) < sizeof(l->cg)
		    ? session_cgroup_create(l->v2_parent, id, &cg)
		    : -ENAMETOOLONG;
	if (e < 0)
		goto fail;
	snprintf(l->cg, sizeof(l->cg), "%.*s", (int)sizeof(l->cg) - 1, cg.path);
	l->cg_own = true;
	l->cg_fd = cg.dir_fd;
	l->cg_procs_fd = cg.procs_fd;
	l->cg_id = cg.id;
	return limits_apply(l, id);
fail:
	log_warn_errno(e, "cannot create the session cgroup in %s", l->v2_parent);
	snprintf(l->why_no_cgroup, sizeof(l->why_no_cgroup),
		 "the session cgroup could not be made");
	l->cgroup = l->pause = false;
	for (int r = 0; r < RES__COUNT; r++)
		if (l->how[r] == LIMIT_CGROUP2)
			l->how[r] = r == RES_MEMORY && l->via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT
										   : LIMIT_NONE;
	limits_apply(l, id);
	return e;
}

int limits_child_join(const struct session_limits *l, bool join_v2)
{
	if (join_v2 && l->cg_procs_fd >= 0 && write(l->cg_procs_fd, "0", 1) != 1)
		return -1;
	for (int r = 0; r < RES__COUNT; r++)
		if (l->cg1_procs_fd[r] >= 0 && write(l->cg1_procs_fd[r], "0", 1) != 1)
			return -1;
	return 0;
}

int limits_child_rlimit(const struct session_limits *l)
{
	if (l && l->how[RES_MEMORY] == LIMIT_RLIMIT) {
		struct rlimit rl = {l->memory_mb << 20, l->memory_mb << 20};

		return setrlimit(RLIMIT_DATA, &rl);
	}
	return 0;
}

int limits_attach_pid(const struct session_limits *l, pid_t pid)
{
	char num[24];

	snprintf(num, sizeof(num), "%d", pid);
	for (int r = 0; r < RES__COUNT; r++) {
		int e = l->cg1[r][0] ? write_knob(l->cg1[r], "cgroup.procs", num) : 0;

		if (e < 0)
			return e;
	}
	return 0;
}

void limits_close_fds(struct session_limits *l)
{
	fd_close(&l->cg_fd);
	fd_close(&l->cg_procs_fd);
	for (int r = 0; r < RES__COUNT; r++)
		fd_close(&l->cg1_procs_fd[r]);
	if (l->disk_watch_held)
		fd_close(&l->disk_watch_fd);
	l->disk_watch_held = false;
}
