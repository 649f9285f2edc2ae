// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "control.h"
#include "limits.h"
#include "monitor.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"

static int knob(const char *dir, const char *file, const char *value)
{
	char path[LIMITS_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return write_file_str(path, value);
}

bool ctl_paused(const char *cg)
{
	return cgroup_freeze_set(cg);
}

int ctl_pause(const char *cg, const char *reason)
{
	char state[48];

	if (ctl_paused(cg))
		return -EALREADY;
	snprintf(state, sizeof(state), "paused %s", reason);
	/* Said before the freeze: the supervisor reads it when it sees the freeze. */
	session_cgroup_set_state(cg, state);
	return knob(cg, "cgroup.freeze", "1");
}

void ctl_limits(const char *cg, uint64_t *mem, uint64_t *disk)
{
	unsigned long long m = 0, d = 0;
	char buf[128];
	ssize_t n = getxattr(cg, LIMITS_XATTR_LIMITS, buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = '\0';
		sscanf(buf, "memory_mb=%llu disk_mb=%llu", &m, &d);
	}
	*mem = m;
	*disk = d;
}

/* memory.max on v2, or memory.limit_in_bytes (and memsw) of the v1 cgroup in the xattr. */
static int set_memory(const char *cg, uint64_t mb)
{
	struct session_limits l = {0};
	char v[32], path[LIMITS_PATH_MAX + 32];
	const char *v1 = l.cg1[RES_MEMORY];
	int r, n;

	snprintf(v, sizeof(v), "%llu", (unsigned long long)mb << 20);
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	if (access(path, F_OK) == 0)
		return write_file_str(path, v);
	if (limits_v1_read(cg, &l) < 0 || !v1[0])
		return -ENOENT; /* no memory cgroup: the limit is not a cgroup's */
	/* memsw >= limit at every step: raise memsw first, lower it last. */
	r = knob(v1, "memory.memsw.limit_in_bytes", v);
	n = knob(v1, "memory.limit_in_bytes", v);
	if (n < 0)
		return n;
	if (r < 0 && r != -ENOENT)
		r = knob(v1, "memory.memsw.limit_in_bytes", v);
	return r == -ENOENT ? 0 : r;
}

int ctl_resume(const char *cg, uint64_t memory_mb, uint64_t disk_mb, uint64_t *mem, uint64_t *disk)
{
	char v[96];
	int r, n;

	if (!ctl_paused(cg))
		return -EINVAL;
	ctl_limits(cg, mem, disk);
	if (memory_mb) {
		r = set_memory(cg, memory_mb);
		if (r < 0)
			return r;
		*mem = memory_mb;
	}
	if (disk_mb)
		*disk = disk_mb;
	n = snprintf(v, sizeof(v), "memory_mb=%llu disk_mb=%llu", (unsigned long long)*mem,
		     (unsigned long long)*disk);
	if ((memory_mb || disk_mb) && setxattr(cg, LIMITS_XATTR_LIMITS, v, n, 0) < 0)
		return -errno;
	session_cgroup_set_state(cg, "running");
	return knob(cg, "cgroup.freeze", "0");
}

int ctl_kill(const char *cg)
{
	session_cgroup_set_state(cg, "killed manual");
	return cgroup_kill(cg);
}

int ctl_session_cgroup(const char *id, char *buf, size_t size)
{
	char parent[LIMITS_PATH_MAX];
	struct stat st;
	int r = cgroup_parent(parent, sizeof(parent));

	if (r < 0)
		return r;
	if (snprintf(buf, size, "%s/%s", parent, id) >= (int)size)
		return -ENAMETOOLONG;
	if (stat(buf, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
