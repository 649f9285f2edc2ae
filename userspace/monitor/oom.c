// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "oom.h"
#include "limits.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"

#define V1_RECHECK_NS (500ULL * 1000000ULL) /* how long a v1 OOM may take to kill */

/* The number after "key " in a flat keyed file (memory.events, memory.oom_control). */
static uint64_t read_key(int fd, const char *key)
{
	char buf[512];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	uint64_t v = 0;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	cgroup_key(buf, key, &v);
	return v;
}

int oom_watch_open(struct oom_watch *w, const struct session_limits *l)
{
	char path[LIMITS_PATH_MAX + 32], reg[64];
	int e;

	memset(w, 0, sizeof(*w));
	w->fd = w->ctl_fd = -1;
	if (l->cg[0] && l->how[RES_MEMORY] != LIMIT_CGROUP1) {
		snprintf(path, sizeof(path), "%s/memory.events", l->cg);
		w->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (w->fd >= 0) {
			/* A read arms the notification (kernfs compares against it). */
			w->kills = read_key(w->fd, "oom_kill");
			w->ooms = read_key(w->fd, "oom");
			return 0;
		}
	}
	if (!l->v1_memory[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/memory.oom_control", l->v1_memory);
	w->ctl_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w->ctl_fd < 0)
		return -errno;
	w->v1 = true;
	w->kills = read_key(w->ctl_fd, "oom_kill");
	w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->fd < 0)
		goto fail;
	snprintf(reg, sizeof(reg), "%d %d", w->fd, w->ctl_fd);
	snprintf(path, sizeof(path), "%s/cgroup.event_control", l->v1_memory);
	e = write_file_str(path, reg);
	if (e < 0) {
		oom_watch_close(w);
		return e;
	}
	return 0;
fail:
	e = -errno;
	oom_watch_close(w);
	return e;
}

void oom_watch_close(struct oom_watch *w)
{
	fd_close(&w->fd);
	fd_close(&w->ctl_fd);
}

short oom_watch_events(const struct oom_watch *w)
{
	return w->v1 ? POLLIN : POLLPRI;
}

uint64_t oom_watch_check(struct oom_watch *w, bool fd_ready, bool *invoked)
{
	uint64_t kills, now = now_ns();

	*invoked = false;
	if (w->fd < 0)
		return 0;
	if (w->v1) {
		uint64_t cnt;

		if (fd_ready && read(w->fd, &cnt, sizeof(cnt)) == sizeof(cnt)) {
			w->recheck_until = now + V1_RECHECK_NS;
			*invoked = true;
		}
		if (!w->recheck_until)
			return 0;
		kills = read_key(w->ctl_fd, "oom_kill");
		if (now >= w->recheck_until)
			w->recheck_until = 0;
	} else {
		uint64_t ooms = read_key(w->fd, "oom");

		kills = read_key(w->fd, "oom_kill");
		*invoked = ooms > w->ooms;
		w->ooms = ooms;
	}
	if (kills <= w->kills)
		return 0;
	kills -= w->kills;
	w->kills += kills;
	if (w->v1)
		w->recheck_until = 0;
	return kills;
}

int oom_watch_timeout(const struct oom_watch *w)
{
	return w->v1 && w->recheck_until ? 2 : -1;
}

/* "task_memcg=PATH,task=COMM,pid=PID," where PATH is .../<id> or .../<id>/... */
static bool parse_summary(const char *msg, const char *id, pid_t *pid, char *comm, size_t size)
{
	const char *m = strstr(msg, "task_memcg="), *t, *p, *end;
	size_t idlen = strlen(id);
	bool ours = false;

	if (!m)
		return false;
	m += strlen("task_memcg=");
	end = strchr(m, ',');
	if (!end)
		return false;
	for (const char *s = m; (s = memchr(s, '/', end - s)); s++)
		if ((size_t)(end - s) > idlen && !strncmp(s + 1, id, idlen) &&
		    (s[1 + idlen] == ',' || s[1 + idlen] == '/'))
			ours = true;
	t = strstr(end, ",task=");
	p = strstr(end, ",pid=");
	if (!ours || !t || !p)
		return false;
	t += strlen(",task=");
	snprintf(comm, size, "%.*s", (int)strcspn(t, ","), t);
	*pid = atoi(p + strlen(",pid="));
	return true;
}

int oom_find_victim(const char *id, pid_t *pid, char *comm, size_t size)
{
	_cleanup_close_ int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	char rec[8192];
	bool found = false;

	if (fd < 0)
		return -errno;
	/* Records from the oldest kept; EPIPE: some were overwritten meanwhile. */
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		const char *msg;

		if (n < 0 && (errno == EPIPE || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		if (msg && strstr(msg, "oom-kill:") && parse_summary(msg, id, pid, comm, size))
			found = true;
	}
	return found ? 0 : -ENOENT;
}

int oom_victim_check(const char *id, pid_t pid, char *comm, size_t size)
{
	char path[64], buf[4096];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* reaped already: nothing to check against */
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* An exited task has its cgroup lines still; the id is a path component. */
	for (const char *p = buf; (p = strstr(p, id)); p++)
		if (p > buf && p[-1] == '/' && (p[strlen(id)] == '\n' || p[strlen(id)] == '/'))
			goto ours;
	return -EXDEV;
ours:
	if (!comm[0]) {
		_cleanup_close_ int cfd = -1;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		cfd = open(path, O_RDONLY | O_CLOEXEC);
		n = cfd < 0 ? -1 : read(cfd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(comm, size, "%s", buf);
		}
	}
	return 0;
}
