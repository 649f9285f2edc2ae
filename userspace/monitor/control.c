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

/*
 * The ask mark (LIMITS_XATTR_ASK): "HOLDER ASKED... start=TICKS" in
 * decimal, the pid that holds the ask (will answer it), the pids stopped
 * at their exec for it, and the holder's start time (proc_start_time): a
 * holder that died and whose pid another process took is gone all the
 * same. An older bpfbox's mark has no start (its holder is the pid alone;
 * an older reader stops at "start=", after the pids), or no asked pids
 * ("HOLDER": still read, its asked process unknown). 0, or -ENODATA when
 * there is no mark.
 */
struct ask_mark {
	long holder;
	unsigned long long start; /* of the holder; 0 unknown */
	int n;
	pid_t asked[CTL_ASK_MAX];
};

static int mark_read(const char *cg, struct ask_mark *m)
{
	char buf[CTL_ASK_MAX * 12 + 48], *p = buf, *end;
	ssize_t n = getxattr(cg, LIMITS_XATTR_ASK, buf, sizeof(buf) - 1);

	m->holder = 0;
	m->start = 0;
	m->n = 0;
	if (n <= 0)
		return -ENODATA;
	buf[n] = '\0';
	if ((p = strstr(buf, " start=")))
		m->start = strtoull(p + 7, NULL, 10);
	p = buf;
	m->holder = strtol(p, &end, 10);
	for (p = end; m->n < CTL_ASK_MAX; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0)
			m->asked[m->n++] = (pid_t)pid;
	}
	return 0;
}

static int mark_write(const char *cg, const struct ask_mark *m)
{
	char buf[CTL_ASK_MAX * 12 + 48];
	int len = snprintf(buf, sizeof(buf), "%ld", m->holder);

	for (int i = 0; i < m->n; i++)
		len += snprintf(buf + len, sizeof(buf) - len, " %d", (int)m->asked[i]);
	if (m->start)
		len += snprintf(buf + len, sizeof(buf) - len, " start=%llu", m->start);
	return setxattr(cg, LIMITS_XATTR_ASK, buf, len, 0) < 0 ? -errno : 0;
}

/*
 * Whether the mark's holder runs: its pid, and the same process (its start
 * time, when the mark has one and /proc says one). A pid reused by another
 * process would otherwise hold the ask open for good: a resume refused
 * until a kill.
 */
static bool holder_alive(const struct ask_mark *m)
{
	unsigned long long start;

	if (m->holder <= 0 || (kill((pid_t)m->holder, 0) < 0 && errno != EPERM))
		return false;
	start = m->start ? proc_start_time((pid_t)m->holder) : 0;
	return !start || start == m->start;
}

/* The mark of this process (its pid and start time). */
static struct ask_mark mark_ours(void)
{
	return (struct ask_mark){.holder = getpid(), .start = proc_start_time(getpid())};
}

static bool mark_is_ours(const struct ask_mark *m)
{
	struct ask_mark me = mark_ours();

	return m->holder == me.holder && m->start == me.start;
}

bool ctl_ask_open(const char *cg)
{
	struct ask_mark m;

	/* Its holder gone (a daemon restarted, a run killed): nobody will answer it. */
	return mark_read(cg, &m) == 0 && holder_alive(&m);
}

int ctl_ask_hold(const char *cg, pid_t asked)
{
	struct ask_mark m, before;
	bool locked, had;
	int r, fd = lock_cg(cg, &locked);

	if (fd < 0)
		return fd;
	/* Our mark grows by the asked pid; anyone else's (stale) is replaced. */
	had = mark_read(cg, &before) == 0 && mark_is_ours(&before);
	m = had ? before : mark_ours();
	if (asked > 0 && m.n < CTL_ASK_MAX)
		m.asked[m.n++] = asked;
	/* The mark and the state are said first; the freeze holds even if they fail. */
	mark_write(cg, &m);
	/* "ask": a supervisor does not take the freeze for a pause. */
	if (!state_paused(cg))
		session_cgroup_set_state(cg, "ask");
	r = knob(cg, "cgroup.freeze", "1");
	if (r < 0 && had)
		mark_write(cg, &before);
	else if (r < 0)
		removexattr(cg, LIMITS_XATTR_ASK);
	close(fd);
	return r;
}

void ctl_ask_answered(const char *cg, pid_t asked)
{
	struct ask_mark m;
	bool locked;
	int k = 0, fd = lock_cg(cg, &locked);

	if (fd < 0)
		return;
	/* Answered: a stale mark must not name it (it may run on, approved). */
	if (mark_read(cg, &m) == 0 && mark_is_ours(&m)) {
		for (int i = 0; i < m.n; i++)
			if (m.asked[i] != asked)
				m.asked[k++] = m.asked[i];
		m.n = k;
		mark_write(cg, &m);
	}
	close(fd);
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

/* Whether pid is a process of cg (its cgroup.procs). */
static bool in_cgroup(const char *cg, pid_t pid)
{
	char path[LIMITS_PATH_MAX + 32];
	FILE *f;
	int p;
	bool found = false;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fscanf(f, "%d", &p) == 1)
		found = p == pid;
	fclose(f);
	return found;
}

/* ctl_ask_deny_stale's work, under the session's lock; the cgroup stays frozen. */
static int deny_stale_locked(const char *cg, bool any_holder, struct ctl_asked *out, int max,
			     long *holder)
{
	struct ask_mark m;
	int k = 0;

	if (mark_read(cg, &m) < 0)
		return 0;
	*holder = m.holder;
	if (!any_holder && holder_alive(&m))
		return 0;
	/* An old mark: which process waits is not known; the caller kills the session. */
	if (m.n == 0)
		return -EOWNERDEAD;
	for (int i = 0; i < m.n; i++) {
		char exe[32];
		struct ctl_asked a = {.pid = m.asked[i]};
		ssize_t n;

		/* Gone already (or its pid not ours any more): nothing waits. */
		if (!in_cgroup(cg, a.pid))
			continue;
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)a.pid);
		n = readlink(exe, a.file, sizeof(a.file) - 1);
		a.file[n > 0 ? n : 0] = '\0';
		/*
		 * Killed while still frozen and stopped: a pending SIGKILL is
		 * taken before it returns to user space, so no SIGCONT after
		 * the thaw can run the exec's first instruction.
		 */
		if (kill(a.pid, SIGKILL) < 0)
			continue;
		if (k < max)
			out[k] = a;
		k++;
	}
	removexattr(cg, LIMITS_XATTR_ASK);
	return k;
}

int ctl_ask_deny_stale(const char *cg, bool any_holder, struct ctl_asked *out, int max,
		       long *holder)
{
	bool locked;
	int r, fd = lock_cg(cg, &locked);

	*holder = 0;
	if (fd < 0)
		return fd;
	if (!locked) {
		close(fd);
		return -EAGAIN;
	}
	r = deny_stale_locked(cg, any_holder, out, max, holder);
	/* Denied, as an answer "deny" would: thawed unless paused meanwhile. */
	if (r > 0 && !state_paused(cg)) {
		knob(cg, "cgroup.freeze", "0");
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
			 uint64_t *disk, struct ctl_asked *out, int max, long *holder)
{
	char v[96];
	int r, n, denied;

	if (!ctl_paused(cg))
		return -EINVAL;
	/* Fail closed: a thaw would let a sibling SIGCONT the exec that waits for its answer. */
	if (ctl_ask_open(cg))
		return -EBUSY;
	/* An ask nobody can answer is a deny: its process killed before the thaw. */
	denied = deny_stale_locked(cg, false, out, max, holder);
	if (denied < 0)
		return denied;
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
	r = knob(cg, "cgroup.freeze", "0");
	return r < 0 ? r : denied;
}

int ctl_resume(const char *cg, uint64_t memory_mb, uint64_t disk_mb, uint64_t *mem, uint64_t *disk,
	       struct ctl_asked *denied, int max, long *holder)
{
	bool locked;
	int r, fd = lock_cg(cg, &locked);

	*holder = 0;
	if (fd < 0)
		return fd;
	/* Without the lock an ask could freeze between the check and the thaw. */
	r = locked ? resume_locked(cg, memory_mb, disk_mb, mem, disk, denied, max, holder)
		   : -EAGAIN;
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
