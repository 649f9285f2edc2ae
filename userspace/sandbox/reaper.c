// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "reaper.h"
#include "../lib/util.h"

struct proc_link {
	pid_t pid, ppid;
};

/* Reads "pid (comm) state ppid" from /proc/PID/stat; comm may hold ')'. */
static int read_ppid(const char *pid_dir, pid_t *ppid)
{
	char path[320], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid_dir);
	if (read_file_str(path, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", ppid) != 1)
		return -EINVAL;
	return 0;
}

/* Snapshot of every process's parent, to walk our subtree in memory. */
static int snapshot(struct proc_link **out, size_t *count)
{
	DIR *d = opendir("/proc");
	struct proc_link *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		pid_t ppid;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (read_ppid(e->d_name, &ppid) < 0)
			continue;
		if (n == cap) {
			struct proc_link *nv;

			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n].pid = atoi(e->d_name);
		v[n].ppid = ppid;
		n++;
	}
	closedir(d);
	*out = v;
	*count = n;
	return 0;
}

/* Appends the children of every thread of pid, from /proc's children lists. */
static int add_children(pid_t pid, pid_t **queue, size_t *tail, size_t *cap)
{
	char path[320], buf[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		char *p, *end;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", pid, e->d_name);
		if (read_file_str(path, buf, sizeof(buf)) <= 0)
			continue;
		for (p = buf; *p; p = end) {
			long child = strtol(p, &end, 10);

			if (end == p)
				break;
			if (*tail == *cap) {
				pid_t *nq = realloc(*queue, (*cap *= 2) * sizeof(**queue));

				if (!nq) {
					closedir(d);
					return -ENOMEM;
				}
				*queue = nq;
			}
			(*queue)[(*tail)++] = child;
		}
	}
	closedir(d);
	return 0;
}

/*
 * Walks our subtree through /proc/PID/task/TID/children, which costs one
 * read per process of the session instead of a scan of every process on
 * the host. Kernels without those lists get the scan.
 */
static int kill_subtree(int sig)
{
	size_t head = 0, tail = 1, cap = 64;
	pid_t *queue = malloc(cap * sizeof(*queue));
	int r = 0;

	if (!queue)
		return -ENOMEM;
	queue[0] = getpid();
	while (!r && head < tail) {
		pid_t pid = queue[head++];

		if (head > 1)
			kill(pid, sig);
		r = add_children(pid, &queue, &tail, &cap);
	}
	free(queue);
	return r < 0 ? r : (int)(tail - 1);
}

static int kill_by_scan(int sig)
{
	_cleanup_free_ struct proc_link *v = NULL;
	_cleanup_free_ pid_t *queue = NULL;
	size_t n = 0, head = 0, tail = 0;
	int r;

	r = snapshot(&v, &n);
	if (r < 0)
		return r;
	queue = calloc(n + 1, sizeof(*queue));
	if (!queue)
		return -ENOMEM;
	queue[tail++] = getpid();
	/* Breadth first from ourselves: every pid reached is a descendant. */
	while (head < tail) {
		pid_t parent = queue[head++];

		for (size_t i = 0; i < n; i++) {
			if (v[i].ppid != parent || v[i].pid == parent)
				continue;
			kill(v[i].pid, sig);
			if (tail < n + 1)
				queue[tail++] = v[i].pid;
		}
	}
	return (int)(tail - 1);
}

int reaper_kill_all(pid_t leader, int sig)
{
	static int have_children_lists = -1;
	char path[64];

	if (leader > 0)
		kill(-leader, sig);
	if (have_children_lists < 0) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/children", getpid());
		have_children_lists = access(path, R_OK) == 0;
	}
	return have_children_lists ? kill_subtree(sig) : kill_by_scan(sig);
}

void reaper_reap(pid_t leader, int *leader_status, bool *leader_done)
{
	int status;
	pid_t w;

	while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
		if (w == leader) {
			*leader_status = status;
			*leader_done = true;
		}
	}
}

void reaper_reap_all(void)
{
	uint64_t until = now_ns() + 5000000000ULL;

	while (now_ns() < until) {
		pid_t w = waitpid(-1, NULL, WNOHANG);

		if (w < 0 && errno == ECHILD)
			return;
		if (w > 0)
			continue;
		if (reaper_kill_all(0, SIGKILL) == 0) {
			/* Nothing alive; only zombies on the way out. */
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
		usleep(1000);
	}
}
