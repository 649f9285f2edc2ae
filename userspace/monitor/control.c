// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
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

/*
 * The state changes of one session (pause, resume, an ask's hold and
 * release) come from several processes: the daemon, `bpfbox pause` and
 * `resume`, an embedded run's ask. They take turns through flock(2) on its
 * cgroup directory, so that a resume cannot thaw between an ask's check
 * and its freeze. A holder that does not let go within CTL_LOCK_WAIT_MS
 * (stopped) is not waited for: the fd is returned unlocked, *locked false.
 */
#define CTL_LOCK_WAIT_MS 1000

static int lock_cg(const char *cg, bool *locked)
{
	int fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*locked = false;
	if (fd < 0)
		return -errno;
	for (int i = 0; i < CTL_LOCK_WAIT_MS; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*locked = true;
			break;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	return fd;
}

/* LIMITS_XATTR_STATE of cg, "" when unset. */
static void read_state(const char *cg, char *st, size_t size)
{
	ssize_t n = getxattr(cg, LIMITS_XATTR_STATE, st, size - 1);

	st[n > 0 ? n : 0] = '\0';
}

static bool state_paused(const char *cg)
{
	char st[48];

	read_state(cg, st, sizeof(st));
	return startswith(st, "paused ");
}

int ctl_pause(const char *cg, const char *reason)
{
	char state[48], st[48];
	bool locked, frozen;
	int r, fd = lock_cg(cg, &locked);

	if (fd < 0)
		return fd;
	snprintf(state, sizeof(state), "paused %s", reason);
	read_state(cg, st, sizeof(st));
	frozen = ctl_paused(cg);
	if (frozen && (streq(st, "ask") || ctl_ask_open(cg)) && !startswith(st, "paused ")) {
		/* Frozen for an ask: paused on top of it, it stays frozen after its answer. */
		r = session_cgroup_set_state(cg, state);
	} else if (frozen) {
		r = -EALREADY; /* paused, or frozen by someone else (killed: not overwritten) */
	} else {
		/* Said before the freeze: the supervisor reads it when it sees the freeze. */
		session_cgroup_set_state(cg, state);
		r = knob(cg, "cgroup.freeze", "1");
	}
	close(fd);
	return r;
}

bool ctl_ask_open(const char *cg)
{
	char buf[24];
	ssize_t n = getxattr(cg, LIMITS_XATTR_ASK, buf, sizeof(buf) - 1);
	long pid;

	if (n <= 0)
		return false;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	/* Its holder gone (a daemon restarted, a run killed): nobody will answer it. */
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

int ctl_ask_hold(const char *cg)
{
	char pid[24];
	bool locked;
	int r, fd = lock_cg(cg, &locked);

	if (fd < 0)
		return fd;
	/* The mark and the state are said first; the freeze holds even if they fail. */
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setxattr(cg, LIMITS_XATTR_ASK, pid, strlen(pid), 0);
	/* "ask": a supervisor does not take the freeze for a pause. */
	if (!state_paused(cg))
		session_cgroup_set_state(cg, "ask");
	r = knob(cg, "cgroup.freeze", "1");
	if (r < 0)
		removexattr(cg, LIMITS_XATTR_ASK);
	close(fd);
	return r;
}

int ctl_ask_release(const char *cg)
{
	bool locked;
	int r = 1, fd = lock_cg(cg, &locked);

	if (fd < 0)
		return fd;
	removexattr(cg, LIMITS_XATTR_ASK);
	if (!state_paused(cg)) {
		r = knob(cg, "cgroup.freeze", "0");
		session_cgroup_set_state(cg, "running");
	}
	close(fd);
	return r;
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

/* ctl_resume's work, under the session's lock. */
static int resume_locked(const char *cg, uint64_t memory_mb, uint64_t disk_mb, uint64_t *mem,
			 uint64_t *disk)
{
	char v[96];
	int r, n;

	if (!ctl_paused(cg))
		return -EINVAL;
	/* Fail closed: a thaw would let a sibling SIGCONT the exec that waits for its answer. */
	if (ctl_ask_open(cg))
		return -EBUSY;
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

int ctl_resume(const char *cg, uint64_t memory_mb, uint64_t disk_mb, uint64_t *mem, uint64_t *disk)
{
	bool locked;
	int r, fd = lock_cg(cg, &locked);

	if (fd < 0)
		return fd;
	/* Without the lock an ask could freeze between the check and the thaw. */
	r = locked ? resume_locked(cg, memory_mb, disk_mb, mem, disk) : -EAGAIN;
	close(fd);
	return r;
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
