// SPDX-License-Identifier: GPL-2.0
/*
 * Incremental disk accounting with inotify (see disk.h and docs/limits.md).
 * Each directory is a watch; each entry (file, directory, symlink) is a
 * slot keyed by (watch, hash of its name) holding its st_blocks in bytes.
 * usage is the sum over the slots; baseline the sum of what the initial scan
 * found, so usage - baseline is what the session added. This file: the
 * directories, their watches, the initial scan; the entries are
 * disk_table.c, the events disk_events.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_internal.h"
#include "../lib/closer.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define WATCH_MASK                                                                          \
	(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
	 IN_ONLYDIR | IN_DONT_FOLLOW)
/* A watch through /proc/self/fd/N of an O_PATH fd opened O_NOFOLLOW: follow that link. */
#define WATCH_MASK_FD (WATCH_MASK & ~IN_DONT_FOLLOW)

static int dir_add(struct disk_monitor *m, int wd, int parent, const char *name, dev_t dev)
{
	if ((size_t)wd >= m->ndirs) {
		size_t n = m->ndirs ? m->ndirs : 64;
		struct disk_dir *d;

		while (n <= (size_t)wd)
			n *= 2;
		d = realloc(m->dirs, n * sizeof(*d));
		if (!d)
			return -ENOMEM;
		memset(d + m->ndirs, 0, (n - m->ndirs) * sizeof(*d));
		m->dirs = d;
		m->ndirs = n;
	}
	free(m->dirs[wd].name);
	m->dirs[wd] =
		(struct disk_dir){.parent = parent, .name = strdup(name), .dev = dev, .live = true};
	return m->dirs[wd].name ? 0 : -ENOMEM;
}

struct disk_dir *disk_dir_get(struct disk_monitor *m, int wd)
{
	return wd >= 0 && (size_t)wd < m->ndirs && m->dirs[wd].live ? &m->dirs[wd] : NULL;
}

/* A root directory: through the fd it was opened as once, if any (disk.h). */
static int root_open(const struct disk_monitor *m, const char *name)
{
	for (size_t i = 0; i < m->nroots && i < DISK_MAX_ROOTS; i++)
		if (m->root_fds[i] >= 0 && m->roots[i] && streq(m->roots[i], name))
			return openat(m->root_fds[i], ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/*
 * An O_PATH fd of a watched directory, opened from its root one name at a
 * time (openat, O_NOFOLLOW): no path is ever built, so no depth is too deep
 * (a tree below PATH_MAX would otherwise go unwatched). The last one is
 * kept (m->fd_wd): events and scans come in runs on one directory. The
 * caller does not close it. -errno when a name on the way is gone (renamed
 * since the names were last updated: the events not read yet fix them).
 */
int disk_dir_open(struct disk_monitor *m, int wd)
{
	struct disk_dir *d;
	size_t n = 0;
	int fd, r = 0;

	if (m->fd_wd == wd && m->dir_fd >= 0)
		return m->dir_fd;
	for (int w = wd; (d = disk_dir_get(m, w)); w = d->parent) {
		if (n == m->chain_cap) {
			size_t cap = m->chain_cap ? m->chain_cap * 2 : 64;
			int *c = realloc(m->chain, cap * sizeof(*c));

			if (!c)
				return -ENOMEM;
			m->chain = c;
			m->chain_cap = cap;
		}
		m->chain[n++] = w;
		if (d->parent < 0)
			break;
	}
	if (!n || !d)
		return -ENOENT;
	fd = root_open(m, m->dirs[m->chain[n - 1]].name);
	if (fd < 0)
		return -errno;
	for (size_t i = n - 1; i-- > 0;) {
		int nfd = openat(fd, m->dirs[m->chain[i]].name,
				 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (nfd < 0)
			r = -errno;
		close(fd);
		if (r < 0)
			return r;
		fd = nfd;
	}
	if (m->dir_fd >= 0)
		close(m->dir_fd);
	m->dir_fd = fd;
	m->fd_wd = wd;
	return fd;
}

/* The kept fd no longer names wd's directory (a watch gone, a rescan). */
void disk_dir_fd_drop(struct disk_monitor *m)
{
	if (m->dir_fd >= 0)
		close(m->dir_fd);
	m->dir_fd = -1;
	m->fd_wd = -1;
}

static void queue_push(struct disk_monitor *m, int wd, bool initial, unsigned int tries)
{
	if (m->qtail == m->qcap) {
		size_t live = m->qtail - m->qhead;
		struct disk_scan_item *q;

		if (live)
			memmove(m->queue, m->queue + m->qhead, live * sizeof(*m->queue));
		m->qhead = 0;
		m->qtail = live;
		if (m->qtail == m->qcap) {
			size_t cap = m->qcap ? m->qcap * 2 : 64;

			q = realloc(m->queue, cap * sizeof(*q));
			if (!q)
				return; /* this directory is not scanned: out of memory */
			m->queue = q;
			m->qcap = cap;
		}
	}
	if (initial && disk_dir_get(m, wd))
		disk_dir_get(m, wd)->unread = true;
	m->queue[m->qtail++] =
		(struct disk_scan_item){.wd = wd, .initial = initial, .tries = tries};
}

/*
 * Watches the directory name under parent (its fd pfd) and queues it for
 * reading. Through /proc/self/fd: a path relative to nothing, any depth.
 */
void disk_watch_dir(struct disk_monitor *m, int parent, int pfd, const char *name, dev_t dev,
		    bool initial)
{
	int cfd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char link[64];
	int wd, e;

	if (cfd < 0)
		return; /* gone, or replaced by a non-directory: its events follow */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", cfd);
	wd = inotify_add_watch(m->fd, link, WATCH_MASK_FD);
	e = errno;
	close(cfd);
	if (wd < 0) {
		/*
		 * Fail closed: writes below a directory we cannot watch would
		 * not be counted, so the monitor says the limit cannot hold
		 * (disk_monitor_blind) and the session is paused.
		 */
		if (e == ENOSPC && !m->watch_limit) {
			m->watch_limit = true;
			log_warn("disk monitor: the inotify watch limit is reached at %s; the disk "
				 "limit cannot be enforced (raise fs.inotify.max_user_watches)",
				 name);
		}
		return;
	}
	if (disk_dir_get(m, wd))
		return; /* already watched (a bind mount of a watched tree) */
	/* What was unlinked there before the watch raised no event: a held scan looks. */
	disk_held_want(m, !initial);
	if (dir_add(m, wd, parent, name, dev) == 0)
		queue_push(m, wd, initial, 0);
}

uint64_t disk_blocks_of(const struct stat *st)
{
	return (uint64_t)st->st_blocks * 512;
}

/* Reads one directory: its entries' sizes, and watches for its subdirectories. */
static size_t scan_dir(struct disk_monitor *m, const struct disk_scan_item *it)
{
	struct disk_dir *d = disk_dir_get(m, it->wd);
	struct dirent *de;
	size_t n = 0;
	DIR *dir;
	int dfd, pfd;

	if (!d)
		return 1;
	d->unread = false;
	pfd = disk_dir_open(m, it->wd);
	dfd = pfd < 0 ? pfd : openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 && pfd != -ENOMEM)
		errno = -pfd;
	if (dfd < 0) {
		/*
		 * Renamed (an ancestor too) since the names were last updated:
		 * the events not read yet will fix them. Read it again later,
		 * a few times, rather than never watch what is below it.
		 */
		if (errno == ENOENT && it->tries < DISK_SCAN_TRIES)
			queue_push(m, it->wd, it->initial, it->tries + 1);
		return 1;
	}
	dir = fdopendir(dfd);
	if (!dir) {
		close(dfd);
		return 1;
	}
	while ((de = readdir(dir))) {
		struct stat st;
		uint64_t h, b;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		n++;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		h = disk_ent_hash(it->wd, de->d_name);
		b = disk_blocks_of(&st);
		/* An event may have counted it already: then it is not in the baseline. */
		if (!disk_ent_find(m, h))
			disk_ent_set_ex(m, it->wd, h, b, it->initial ? b : 0, it->initial);
		/* Other file systems mounted inside are not followed. */
		if (S_ISDIR(st.st_mode) && st.st_dev == d->dev) {
			disk_watch_dir(m, it->wd, dfd, de->d_name, st.st_dev, it->initial);
			d = disk_dir_get(m, it->wd); /* dirs may have moved */
		}
	}
	closedir(dir);
	m->scanned += n;
	return n + 1;
}

void disk_monitor_scan(struct disk_monitor *m, size_t budget)
{
	bool was = disk_monitor_scanning(m);
	size_t done = 0;

	if (m->roots_pending) {
		int r;

		m->roots_pending = false;
		r = disk_add_roots(m);
		if (r < 0)
			log_warn_errno(r,
				       "disk monitor: cannot watch the workspace; the disk limit "
				       "is not enforced");
	}
	while (disk_monitor_scanning(m) && done < budget) {
		struct disk_scan_item it = m->queue[m->qhead++];

		done += scan_dir(m, &it);
	}
	/* Unlinked before the scan reached its directory: a held scan looks. */
	if (was && !disk_monitor_scanning(m))
		disk_held_want(m, true);
}

int disk_add_roots(struct disk_monitor *m)
{
	int added = 0;

	for (size_t i = 0; i < m->nroots; i++) {
		int rfd = i < DISK_MAX_ROOTS ? m->root_fds[i] : -1;
		char link[64];
		struct stat st;
		int wd;

		if (!m->roots[i] || (rfd >= 0 ? fstat(rfd, &st) : stat(m->roots[i], &st)) < 0)
			continue;
		/* The root as it was checked, not its path resolved again. */
		snprintf(link, sizeof(link), "/proc/self/fd/%d", rfd);
		wd = rfd >= 0 ? inotify_add_watch(m->fd, link, WATCH_MASK_FD)
			      : inotify_add_watch(m->fd, m->roots[i], WATCH_MASK);
		if (wd < 0)
			return -errno;
		if (!disk_dir_get(m, wd) && dir_add(m, wd, -1, m->roots[i], st.st_dev) == 0) {
			queue_push(m, wd, true, 0);
			added++;
		}
	}
	return added;
}

int disk_monitor_open(struct disk_monitor *m, const char *const *roots, size_t n, int inotify_fd)
{
	memset(m, 0, sizeof(*m));
	m->dir_fd = m->fd_wd = -1;
	for (size_t i = 0; i < DISK_MAX_ROOTS; i++)
		m->root_fds[i] = -1;
	m->roots = roots;
	m->nroots = n;
	m->fd = inotify_fd >= 0 ? inotify_fd : inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	m->roots_pending = true;
	disk_held_devs(m);
	return 0;
}

/*
 * Closing an inotify instance that has watches waits for an SRCU grace
 * period (fsnotify_destroy_group), 5-10 ms, also when the process exits: a
 * closer (lib/closer.h) takes the last reference and pays for it.
 */
static void close_async(int fd, int sweep_dirfd, const char *prefix, const char *suffix,
			const char *remove, struct closer *end)
{
	static struct closer own;
	struct closer *c = end ? end : &own;
	char path[64 + 256];
	int r = 0;

	c->nowait = true; /* nothing here waits for an EOF */
	if (sweep_dirfd >= 0 && remove && remove[0])
		r = closer_remove(c, sweep_dirfd, remove); /* else removed below */
	if (sweep_dirfd >= 0)
		closer_sweep(c, sweep_dirfd, prefix, suffix); /* -EINVAL: no sweep */
	/* Its failure removes what it was given (closer_begin). */
	if ((fd >= 0 || closer_pending(c)) && closer_begin(c, &fd, fd >= 0 ? 1 : 0) == 0)
		closer_end(c);
	if (fd >= 0)
		close(fd);
	/* Not given to a helper: removed here, on our time. */
	if (r < 0 && snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", sweep_dirfd, remove) <
			     (int)sizeof(path))
		rm_tree(path);
}

void disk_sweep(int sweep_dirfd, const char *prefix, const char *suffix, const char *remove,
		struct closer *end)
{
	if (sweep_dirfd >= 0 || end)
		close_async(-1, sweep_dirfd, prefix, suffix, remove, end);
}

void disk_monitor_close(struct disk_monitor *m, int sweep_dirfd, const char *prefix,
			const char *suffix, const char *remove, struct closer *end)
{
	/* Without an instance, the sweep and the removal all the same (disk_sweep). */
	if (m->fd >= 0 || sweep_dirfd >= 0 || end)
		close_async(m->fd, sweep_dirfd, prefix, suffix, remove, end);
	m->fd = -1;
	disk_dir_fd_drop(m);
	free(m->chain);
	m->chain = NULL;
	m->chain_cap = 0;
	for (size_t i = 0; i < m->ndirs; i++)
		free(m->dirs[i].name);
	free(m->dirs);
	free(m->ents);
	free(m->queue);
	disk_held_free(m);
	m->dirs = NULL;
	m->ents = NULL;
	m->queue = NULL;
	m->ndirs = m->cap = m->count = 0;
	m->qhead = m->qtail = m->qcap = 0;
}
