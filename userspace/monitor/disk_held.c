// SPDX-License-Identifier: GPL-2.0
/*
 * Files the session holds without a name (docs/limits.md): a file unlinked
 * while open or mapped keeps its blocks but leaves the directory tree that
 * the inotify accounting (disk.c) counts. Each held scan walks the
 * session's processes (its cgroup's cgroup.procs, else the children lists
 * from the supervisor down) and sums st_blocks of every regular file with
 * no link left, on the file system of a watched root, once per (dev, ino):
 * through /proc/PID/fd (each thread's table when it has one of its own) and
 * the deleted mappings of /proc/PID/maps (stat through map_files).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "disk_internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

struct disk_held_ent {
	uint64_t dev, ino; /* ino 0: free slot */
};

/* Whether (dev, ino) is new to this scan (then it is remembered). */
static bool held_first(struct disk_monitor *m, dev_t dev, ino_t ino)
{
	size_t i;

	if (!ino)
		return false;
	if ((m->held_count + 1) * 2 > m->hcap) {
		size_t cap = m->hcap ? m->hcap * 2 : 256;
		struct disk_held_ent *n = calloc(cap, sizeof(*n));

		if (!n && !m->hcap)
			return true; /* counted, maybe twice: conservative */
		for (size_t j = 0; n && j < m->hcap; j++) {
			if (!m->hset[j].ino)
				continue;
			for (i = (m->hset[j].ino ^ m->hset[j].dev) & (cap - 1); n[i].ino;
			     i = (i + 1) & (cap - 1))
				;
			n[i] = m->hset[j];
		}
		if (n) {
			free(m->hset);
			m->hset = n;
			m->hcap = cap;
		}
	}
	for (i = (ino ^ dev) & (m->hcap - 1); m->hset[i].ino; i = (i + 1) & (m->hcap - 1))
		if (m->hset[i].ino == ino && m->hset[i].dev == dev)
			return false;
	m->hset[i] = (struct disk_held_ent){.dev = dev, .ino = ino};
	m->held_count++;
	return true;
}

static bool held_dev(const struct disk_monitor *m, dev_t dev)
{
	for (size_t i = 0; i < m->nheld_devs; i++)
		if (m->held_devs[i] == dev)
			return true;
	return false;
}

/* st names a file with no name left on a watched file system: count it once. */
static void held_stat(struct disk_monitor *m, const struct stat *st)
{
	if (S_ISREG(st->st_mode) && st->st_nlink == 0 && held_dev(m, st->st_dev) &&
	    held_first(m, st->st_dev, st->st_ino))
		m->held_new += disk_blocks_of(st);
}

/* A field of /proc/PID/stat after the name: 0 the state, 1 the parent. */
static long stat_field(pid_t pid, int field, char *state)
{
	char buf[1024];
	const char *p = proc_stat_fields(pid, buf, sizeof(buf));
	long v = -1;

	if (!p || sscanf(p, " %c %ld", state, &v) != 2)
		return -1;
	return field ? v : 0;
}

/*
 * The command between the init's vfork and its exec shares the init's
 * memory, which is not dumpable (docs/SECURITY.md, "The session's init"):
 * the init's child while the init waits for that exec. No other process
 * of the session can make the init wait so.
 */
static bool before_exec(const struct disk_monitor *m, pid_t pid)
{
	char state;

	return m->init && m->init_vforks && stat_field(pid, 1, &state) == m->init;
}

/* How long, and at how many scans in a row, before an unreadable process makes the limit blind. */
#define UNREAD_SCANS 3
#define UNREAD_NS    (500ULL * 1000000ULL)

/*
 * Whether pid has not been unreadable long enough to be blind: the end of
 * an exec (the init has woken, the new program's memory is not dumpable
 * yet) is brief, a process kept not dumpable is not.
 */
static bool unread_again(struct disk_monitor *m, pid_t pid)
{
	unsigned int scans = 1;
	uint64_t since = now_ns();

	for (size_t i = 0; i < m->nunread; i++)
		if (m->unread[i].pid == pid) {
			scans = m->unread[i].scans + 1;
			since = m->unread[i].since;
		}
	for (size_t i = 0; i < m->nunread_next; i++)
		if (m->unread_next[i].pid == pid)
			return true;
	if ((scans >= UNREAD_SCANS && now_ns() - since >= UNREAD_NS) ||
	    m->nunread_next == ARRAY_SIZE(m->unread_next))
		return false;
	m->unread_next[m->nunread_next].pid = pid;
	m->unread_next[m->nunread_next].since = since;
	m->unread_next[m->nunread_next++].scans = scans;
	disk_held_want(m, true);
	return true;
}

static void held_unreadable(struct disk_monitor *m, pid_t pid, const char *what, int err)
{
	if (err == ENOENT || err == ESRCH)
		return; /* gone meanwhile: it holds nothing any more */
	if (before_exec(m, pid)) {
		disk_held_want(m, true); /* looked at again once it has exec'd */
		return;
	}
	if (unread_again(m, pid))
		return;
	if (!m->held_warned)
		log_warn_always("disk monitor: cannot read %s (%s); the files the session holds "
				"unlinked cannot be counted, so its disk limit cannot hold",
				what, strerror(err));
	m->held_blind = m->held_warned = true;
}

/* Every fd of one table (/proc/PID/fd or /proc/PID/task/TID/fd). */
static void held_fds(struct disk_monitor *m, pid_t pid, const char *path)
{
	struct dirent *de;
	DIR *d;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		held_unreadable(m, pid, path, errno);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		m->fds_seen++;
		if (fstatat(fd, de->d_name, &st, 0) == 0)
			held_stat(m, &st);
	}
	closedir(d);
}

/*
 * A thread may have a table of its own (unshare(CLONE_FILES)): its fds are
 * not in /proc/PID/fd. kcmp() says which threads share the leader's.
 */
static void held_threads(struct disk_monitor *m, pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);

		if (tid <= 0 || tid == pid || syscall(SYS_kcmp, pid, tid, KCMP_FILES, 0, 0) == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/fd", pid, tid);
		held_fds(m, pid, path);
	}
	closedir(d);
}

/* One line of /proc/PID/maps: a deleted file on a watched file system is counted. */
static void held_map_line(struct disk_monitor *m, pid_t pid, char *line)
{
	unsigned long long start, end, ino;
	unsigned int maj, min;
	char path[96];
	struct stat st;
	size_t n = strlen(line);

	if (n < 10 || strcmp(line + n - 10, " (deleted)") ||
	    sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &start, &end, &maj, &min, &ino) != 5 ||
	    !held_dev(m, makedev(maj, min)))
		return;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid, start, end);
	if (stat(path, &st) == 0) {
		held_stat(m, &st);
		return;
	}
	/*
	 * map_files needs CAP_SYS_ADMIN: an unprivileged monitor counts
	 * what the mapping spans (a file no fd holds, not its whole size).
	 */
	if ((errno == EPERM || errno == EACCES) && held_first(m, makedev(maj, min), ino))
		m->held_new += end - start;
}

static void held_maps(struct disk_monitor *m, pid_t pid)
{
	char path[64];
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		held_unreadable(m, pid, path, errno);
		return;
	}
	/* One read for the whole file: each read of maps walks the mappings again. */
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		held_map_line(m, pid, line);
	}
	free(line);
	fclose(f);
}

static int pid_push(struct disk_monitor *m, pid_t pid)
{
	if (m->npids == m->pids_cap) {
		size_t cap = m->pids_cap ? m->pids_cap * 2 : 64;
		pid_t *p = realloc(m->pids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->pids = p;
		m->pids_cap = cap;
	}
	m->pids[m->npids++] = pid;
	return 0;
}

/* Appends the pids of a file of numbers (cgroup.procs, a children list). */
static int pids_from(struct disk_monitor *m, const char *path)
{
	unsigned long long v;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fscanf(f, "%llu", &v) == 1)
		if (v > 0 && pid_push(m, (pid_t)v) < 0)
			break;
	fclose(f);
	return 0;
}

/* The children of every thread of pid. */
static void pids_children(struct disk_monitor *m, pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", pid, de->d_name);
		pids_from(m, path);
	}
	closedir(d);
}

/*
 * The session's init (ns_run_as_init): pid 1 of its PID namespace, root's
 * child, not dumpable so that the session cannot read it, and so neither
 * can an unprivileged supervisor; it closed every fd before the command
 * ran. No other process of a session can be pid 1 of a namespace: making
 * one is refused by seccomp.
 */
static bool session_init(pid_t pid, pid_t root)
{
	char path[64], line[256];
	bool child = false, one = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *last;

		if (!strncmp(line, "PPid:", 5))
			child = atoi(line + 5) == root;
		else if (!strncmp(line, "NSpid:", 6) && (last = strrchr(line, '\t')) &&
			 last != strchr(line, '\t'))
			one = atoi(last + 1) == 1;
	}
	fclose(f);
	return child && one;
}

void disk_held_scan(struct disk_monitor *m, const char *cg, pid_t root)
{
	char path[4200];

	m->npids = 0;
	m->held_new = 0;
	m->held_count = 0;
	m->fds_seen = 0;
	m->held_blind = false; /* as this scan finds it: the process may be gone */
	if (m->hset)
		memset(m->hset, 0, m->hcap * sizeof(*m->hset));
	/*
	 * Without a cgroup: the subtree below root (the supervisor, a child
	 * subreaper, so orphans stay below it), not root itself.
	 */
	if (!cg || !cg[0] ||
	    snprintf(path, sizeof(path), "%s/cgroup.procs", cg) >= (int)sizeof(path) ||
	    pids_from(m, path) < 0) {
		m->npids = 0;
		pids_children(m, root);
		for (size_t i = 0; i < m->npids; i++)
			pids_children(m, m->pids[i]);
	}
	m->init = 0;
	for (size_t i = 0; i < m->npids; i++) {
		char state;

		if (!session_init(m->pids[i], root))
			continue;
		m->init = m->pids[i];
		m->init_vforks = stat_field(m->init, 0, &state) == 0 && state == 'D';
		m->pids[i--] = m->pids[--m->npids];
	}
	/* The fds first: a file also mapped is then counted by its size, not its span. */
	for (size_t i = 0; i < m->npids; i++) {
		snprintf(path, sizeof(path), "/proc/%d/fd", m->pids[i]);
		held_fds(m, m->pids[i], path);
		held_threads(m, m->pids[i]);
	}
	for (size_t i = 0; i < m->npids; i++)
		held_maps(m, m->pids[i]);
	m->held = (int64_t)m->held_new;
	__atomic_store_n(&m->held_count_pub, m->held_count, __ATOMIC_RELEASE);
	__atomic_store_n(&m->held_blind_pub, m->held_blind, __ATOMIC_RELEASE);
	__atomic_store_n(&m->held_pub, m->held, __ATOMIC_RELEASE);
	m->held_scans++;
	memcpy(m->unread, m->unread_next, sizeof(m->unread));
	m->nunread = m->nunread_next;
	m->nunread_next = 0;
}

/* The file systems of the roots: a file held there with no name counts. */
void disk_held_devs(struct disk_monitor *m)
{
	m->nheld_devs = 0;
	for (size_t i = 0; i < m->nroots && m->nheld_devs < DISK_HELD_DEVS; i++) {
		struct stat st;

		if (m->roots[i] && stat(m->roots[i], &st) == 0 && !held_dev(m, st.st_dev))
			m->held_devs[m->nheld_devs++] = st.st_dev;
	}
}

void disk_held_free(struct disk_monitor *m)
{
	free(m->hset);
	free(m->pids);
	m->hset = NULL;
	m->pids = NULL;
	m->hcap = m->pids_cap = m->npids = 0;
}
