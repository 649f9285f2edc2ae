// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"
#include "../lib/cgroup.h"
#include "limits_internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define SCAN_SLICE 256 /* entries read per loop turn by the initial disk scan */
/*
 * The initial scan starts this long after the command: a short command
 * (most tool calls) ends before it and pays nothing for a big workspace.
 */
#define SCAN_DELAY_NS (10ULL * 1000000ULL)
/*
 * Held scans (files held open or mapped with no name left, disk_held.c):
 * every HELD_PERIOD_NS while the last one found such a file (writes
 * through a mapping raise no event), every HELD_IDLE_NS otherwise, sooner
 * when an event hints at one; never closer than HELD_GAP_NS nor than
 * HELD_COST_SHARE times the last scan's CPU time apart: at most 1/20 of a
 * core whatever the session holds (docs/benchmarks.md).
 */
#define HELD_PERIOD_NS	(100ULL * 1000000ULL)
#define HELD_IDLE_NS	(1000ULL * 1000000ULL)
#define HELD_GAP_NS	(10ULL * 1000000ULL)
#define HELD_COST_SHARE 20

enum { SLOT_OOM, SLOT_EVENTS, SLOT_DISK, SLOT_HELD };

static bool read_frozen(int fd)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "frozen 1") != NULL;
}

/*
 * No inotify instance (the user's fs.inotify.max_user_instances reached on
 * a busy host, EMFILE): the disk limit is added to what is not enforced.
 * Known at the plan (monitor_disk_reserve), that reaches the start's
 * warning and session.start; known only at monitor_open (a session whose
 * limits were not planned here), it is said even with -q and reaches the
 * status channel's "started" line.
 */
static void disk_not_enforced(struct session_limits *l, int r)
{
	l->disk_unwatched = -r;
	l->disk = false;
	limits_describe(l);
}

void monitor_disk_reserve(struct session_limits *l)
{
	int fd;

	if (!l->disk || l->disk_watch_held)
		return;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0) {
		disk_not_enforced(l, -errno);
		return;
	}
	l->disk_watch_fd = fd;
	l->disk_watch_held = true;
}

int monitor_open(struct monitor *m, struct session_limits *l, const char *id, const char *workspace,
		 int workspace_fd, const char *tmp, const char *home)
{
	char path[LIMITS_PATH_MAX + 32];
	size_t n = 0;
	int r;

	memset(m, 0, sizeof(*m));
	m->lim = l;
	m->id = id;
	m->events_fd = -1;
	m->oom.fd = m->oom.ctl_fd = -1;
	m->disk.fd = -1;
	m->held_fd = -1;
	pthread_mutex_init(&m->held_lock, NULL);
	pthread_cond_init(&m->held_cond, NULL);
	if (l->how[RES_MEMORY] == LIMIT_CGROUP2 || l->how[RES_MEMORY] == LIMIT_CGROUP1 ||
	    (l->cg[0] && !l->cg_own)) {
		r = oom_watch_open(&m->oom, l);
		if (r < 0 && r != -ENOENT)
			log_warn_errno(r,
				       "cannot watch the session's OOM kills; an OOM kill will not "
				       "pause it");
	}
	if (l->cg[0]) {
		snprintf(path, sizeof(path), "%s/cgroup.events", l->cg);
		m->events_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (m->events_fd >= 0)
			m->frozen = read_frozen(m->events_fd);
	}
	if (l->disk) {
		if (workspace)
			m->roots[n++] = workspace;
		if (tmp)
			m->roots[n++] = tmp;
		if (home)
			m->roots[n++] = home;
		m->disk_limit = l->disk_mb << 20;
		m->scan_after = now_ns() + SCAN_DELAY_NS;
		m->held_last = m->scan_after;
		r = disk_monitor_open(&m->disk, m->roots, n,
				      l->disk_watch_held ? l->disk_watch_fd : -1);
		l->disk_watch_held = false; /* the monitor's now */
		if (r == 0 && workspace)
			m->disk.root_fds[0] = workspace_fd;
		if (r < 0) {
			log_warn_always("cannot watch the workspace's disk use (%s); the disk "
					"limit is not enforced",
					strerror(-r));
			disk_not_enforced(l, r);
		} else {
			m->disk_on = true;
		}
	}
	return 0;
}

void monitor_close(struct monitor *m, int sweep_dirfd, const char *prefix, const char *suffix,
		   const char *remove, struct closer *end)
{
	/* The session is killed by now: a maps read it waited on has returned. */
	if (m->held_thread_on) {
		pthread_mutex_lock(&m->held_lock);
		m->held_quit = true;
		pthread_cond_signal(&m->held_cond);
		pthread_mutex_unlock(&m->held_lock);
		pthread_join(m->held_thread, NULL);
		m->held_thread_on = false;
	}
	if (m->held_fd >= 0)
		close(m->held_fd);
	m->held_fd = -1;
	oom_watch_close(&m->oom);
	if (m->events_fd >= 0)
		close(m->events_fd);
	m->events_fd = -1;
	if (m->disk_on && m->disk.held_scans)
		log_info("disk monitor: %llu held scans, %.3f ms of CPU in all, the last over %llu "
			 "fds "
			 "of %zu processes",
			 (unsigned long long)m->disk.held_scans,
			 __atomic_load_n(&m->held_total, __ATOMIC_RELAXED) / 1e6,
			 (unsigned long long)m->disk.fds_seen, m->disk.npids);
	if (m->disk_on)
		disk_monitor_close(&m->disk, sweep_dirfd, prefix, suffix, remove, end);
	else /* no disk monitor (no inotify instance): what killed runs left goes all the same */
		disk_sweep(sweep_dirfd, prefix, suffix, remove, end);
	m->disk_on = false;
	pthread_cond_destroy(&m->held_cond);
	pthread_mutex_destroy(&m->held_lock);
	if (sweep_dirfd >= 0)
		close(sweep_dirfd); /* the helper holds its own copy */
}

/* When the next held scan is due (CLOCK_MONOTONIC ns). */
static uint64_t held_due(const struct monitor *m)
{
	uint64_t gap = __atomic_load_n(&m->held_cost, __ATOMIC_RELAXED) * HELD_COST_SHARE;

	uint64_t period = disk_held_count(&m->disk) ? HELD_PERIOD_NS : HELD_IDLE_NS;

	if (gap < HELD_GAP_NS)
		gap = HELD_GAP_NS;
	if (!__atomic_load_n(&m->disk.held_wanted, __ATOMIC_RELAXED) && gap < period)
		gap = period;
	return __atomic_load_n(&m->held_last, __ATOMIC_RELAXED) + gap;
}

/* This thread's CPU time (ns): a scan's cost, not the time others ran meanwhile. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One held scan, on the calling thread; its cost is that thread's CPU time. */
static void held_scan(struct monitor *m)
{
	uint64_t c0 = cpu_ns(), cost;

	disk_held_scan(&m->disk, m->lim->cg, getpid());
	cost = cpu_ns() - c0;
	__atomic_store_n(&m->held_cost, cost, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->held_total, cost, __ATOMIC_RELAXED);
	__atomic_store_n(&m->held_last, now_ns(), __ATOMIC_RELAXED);
}

/* The held thread: a scan each time the loop asks, until monitor_close. */
static void *held_main(void *arg)
{
	struct monitor *m = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&m->held_lock);
	for (;;) {
		while (!m->held_asked && !m->held_quit)
			pthread_cond_wait(&m->held_cond, &m->held_lock);
		if (m->held_quit)
			break;
		m->held_asked = false;
		pthread_mutex_unlock(&m->held_lock);
		held_scan(m);
		pthread_mutex_lock(&m->held_lock);
		__atomic_store_n(&m->held_busy, false, __ATOMIC_RELEASE);
		if (write(m->held_fd, &one, sizeof(one)) < 0) {
			/* A full eventfd wakes the loop all the same. */
		}
	}
	pthread_mutex_unlock(&m->held_lock);
	return NULL;
}

static bool held_busy(const struct monitor *m)
{
	return __atomic_load_n(&m->held_busy, __ATOMIC_ACQUIRE);
}

/*
 * Asks the held thread for a scan (started at the first one). Without a
 * thread (none could be made) the scan runs here, as it must still run.
 */
static void held_ask(struct monitor *m)
{
	__atomic_store_n(&m->disk.held_wanted, false, __ATOMIC_RELAXED);
	if (!m->held_thread_on) {
		if (m->held_fd < 0)
			m->held_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (m->held_fd < 0 || pthread_create(&m->held_thread, NULL, held_main, m) != 0) {
			held_scan(m);
			return;
		}
		m->held_thread_on = true;
	}
	pthread_mutex_lock(&m->held_lock);
	__atomic_store_n(&m->held_busy, true, __ATOMIC_RELEASE);
	m->held_asked = true;
	pthread_cond_signal(&m->held_cond);
	pthread_mutex_unlock(&m->held_lock);
}

int monitor_pollfds(struct monitor *m, struct pollfd *p)
{
	uint64_t after;
	int n = 0;

	if (!m->looped) {
		m->looped = true;
		after = now_ns() + SCAN_DELAY_NS;
		if (after > m->scan_after)
			m->held_last = m->scan_after = after;
	}
	for (int i = 0; i < MONITOR_MAX_FDS; i++)
		m->idx[i] = -1;
	if (m->oom.fd >= 0) {
		m->idx[SLOT_OOM] = n;
		p[n++] = (struct pollfd){.fd = m->oom.fd, .events = oom_watch_events(&m->oom)};
	}
	if (m->events_fd >= 0) {
		m->idx[SLOT_EVENTS] = n;
		p[n++] = (struct pollfd){.fd = m->events_fd, .events = POLLPRI};
	}
	if (m->disk_on) {
		m->idx[SLOT_DISK] = n;
		p[n++] = (struct pollfd){.fd = m->disk.fd, .events = POLLIN};
	}
	if (m->held_fd >= 0) {
		m->idx[SLOT_HELD] = n;
		p[n++] = (struct pollfd){.fd = m->held_fd, .events = POLLIN};
	}
	return n;
}

int monitor_timeout(const struct monitor *m)
{
	int t = oom_watch_timeout(&m->oom);
	uint64_t now = now_ns();

	if (m->disk_on && disk_monitor_scanning(&m->disk)) {
		int s = now >= m->scan_after ? 0 : (int)((m->scan_after - now) / 1000000) + 1;

		if (t < 0 || s < t)
			t = s;
	}
	if (m->disk_on && m->disk.nheld_devs && !held_busy(m)) {
		uint64_t due = held_due(m);
		int h = now >= due ? 0 : (int)((due - now) / 1000000) + 1;

		if (t < 0 || h < t)
			t = h;
	}
	return t;
}

int64_t monitor_disk_used(const struct monitor *m)
{
	return m->disk_on ? disk_monitor_growth(&m->disk) : -1;
}

unsigned int monitor_dispatch(struct monitor *m, const struct pollfd *p)
{
	unsigned int t = 0;
	int i;

	if ((i = m->idx[SLOT_OOM]) >= 0 || m->oom.recheck_until) {
		bool ready = i >= 0 && p[i].revents, invoked = false;
		uint64_t k = ready || m->oom.recheck_until
				     ? oom_watch_check(&m->oom, ready, &invoked)
				     : 0;

		if (invoked)
			t |= MON_OOM_INVOKED;
		if (k) {
			m->new_kills += k;
			t |= MON_OOM;
		}
	}
	if ((i = m->idx[SLOT_EVENTS]) >= 0 && p[i].revents) {
		bool frozen = read_frozen(m->events_fd);

		if (frozen != m->frozen) {
			m->frozen = frozen;
			t |= MON_FROZEN;
		}
	}
	if (m->disk_on) {
		if ((i = m->idx[SLOT_DISK]) >= 0 && p[i].revents)
			disk_monitor_read(&m->disk);
		if (disk_monitor_scanning(&m->disk) && now_ns() >= m->scan_after)
			disk_monitor_scan(&m->disk, SCAN_SLICE);
		if ((i = m->idx[SLOT_HELD]) >= 0 && p[i].revents) {
			uint64_t v;

			if (read(m->held_fd, &v, sizeof(v)) < 0) {
				/* EAGAIN: read already */
			}
		}
		if (m->disk.nheld_devs && !held_busy(m) && now_ns() >= held_due(m))
			held_ask(m);
		if (monitor_disk_over(m))
			t |= MON_DISK;
	}
	return t;
}

/*
 * Over the limit in bytes, or in entries (MONITOR_ENTRIES_PER_MB per MB), or
 * blind: a directory could not be watched (inotify watches exhausted), so
 * writes below it are not counted. That fails closed, as a pause.
 */
bool monitor_disk_over(const struct monitor *m)
{
	return m->disk_on && (disk_monitor_growth(&m->disk) > (int64_t)m->disk_limit ||
			      disk_monitor_entries(&m->disk) >
				      (int64_t)((m->disk_limit >> 20) * MONITOR_ENTRIES_PER_MB) ||
			      disk_monitor_blind(&m->disk));
}

const char *monitor_disk_reason(const struct monitor *m)
{
	return m->disk_on && disk_monitor_blind(&m->disk) ? "disk_unwatched" : "disk";
}

int64_t monitor_disk_entries(const struct monitor *m)
{
	return m->disk_on ? disk_monitor_entries(&m->disk) : -1;
}

void monitor_reload_limits(struct monitor *m)
{
	char buf[128];
	unsigned long long mem, disk;
	ssize_t n;

	if (!m->lim->cg[0])
		return;
	n = getxattr(m->lim->cg, LIMITS_XATTR_LIMITS, buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (sscanf(buf, "memory_mb=%llu disk_mb=%llu", &mem, &disk) != 2)
		return;
	m->lim->memory_mb = mem;
	m->lim->disk_mb = disk;
	m->disk_limit = (uint64_t)disk << 20;
}

void monitor_read_frozen(struct monitor *m)
{
	if (m->events_fd >= 0)
		m->frozen = read_frozen(m->events_fd);
}

bool monitor_freeze_requested(const struct monitor *m)
{
	return cgroup_freeze_set(m->lim->cg);
}

void monitor_read_state(const struct monitor *m, char *buf, size_t size)
{
	ssize_t n = m->lim->cg[0] ? getxattr(m->lim->cg, LIMITS_XATTR_STATE, buf, size - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
}

int session_cgroup_set_state(const char *cg, const char *state)
{
	return setxattr(cg, LIMITS_XATTR_STATE, state, strlen(state), 0) < 0 ? -errno : 0;
}
