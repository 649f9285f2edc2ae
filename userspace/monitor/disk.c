// SPDX-License-Identifier: GPL-2.0
/*
 * Incremental disk accounting with inotify (see disk.h and docs/limits.md).
 * Each directory is a watch; each entry (file, directory, symlink) is a
 * slot keyed by (watch, hash of its name) holding its st_blocks in bytes.
 * usage is the sum over the slots; baseline the sum of what the initial scan
 * found, so usage - baseline is what the session added.
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

#include "disk.h"
#include "../lib/closer.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define WATCH_MASK                                                                          \
	(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | \
	 IN_ONLYDIR | IN_DONT_FOLLOW)
/* A watch through /proc/self/fd/N of an O_PATH fd opened O_NOFOLLOW: follow that link. */
#define WATCH_MASK_FD (WATCH_MASK & ~IN_DONT_FOLLOW)

struct disk_dir {
	int parent; /* watch descriptor of the parent, -1 for a root */
	char *name; /* name in the parent; a root's full path */
	dev_t dev;
	bool live;
	bool unread; /* queued for the initial scan, not read yet */
};

struct disk_ent {
	uint64_t h;	 /* hash of (wd, name); 0: free slot */
	uint64_t blocks; /* bytes allocated (st_blocks * 512) */
	uint64_t base;	 /* what this entry added to the baseline */
	int wd;
	bool in_base; /* counted in base_count (found by the initial scan) */
};

static uint64_t ent_hash(int wd, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < 4; i++) {
		h ^= (uint8_t)(wd >> (8 * i));
		h *= 0x100000001b3ULL;
	}
	for (const char *p = name; *p; p++) {
		h ^= (uint8_t)*p;
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

static struct disk_ent *ent_find(struct disk_monitor *m, uint64_t h)
{
	if (!m->cap)
		return NULL;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->ents[i].h == h)
			return &m->ents[i];
		if (!m->ents[i].h)
			return NULL;
	}
}

static int ent_grow(struct disk_monitor *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct disk_ent *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->ents[i].h)
			continue;
		for (j = m->ents[i].h & (cap - 1); n[j].h; j = (j + 1) & (cap - 1))
			;
		n[j] = m->ents[i];
	}
	free(m->ents);
	m->ents = n;
	m->cap = cap;
	return 0;
}

/* Sets an entry's size; a new one adds base to the baseline (initial: its count too). */
static struct disk_ent *ent_set_ex(struct disk_monitor *m, int wd, uint64_t h, uint64_t blocks,
				   uint64_t base, bool initial)
{
	struct disk_ent *e = ent_find(m, h);
	size_t i;

	if (e) {
		m->usage += (int64_t)blocks - (int64_t)e->blocks;
		e->blocks = blocks;
		return e;
	}
	if ((m->count + 1) * 10 > m->cap * 7 && ent_grow(m) < 0)
		return NULL; /* out of memory: this entry is not counted */
	for (i = h & (m->cap - 1); m->ents[i].h; i = (i + 1) & (m->cap - 1))
		;
	m->ents[i] = (struct disk_ent){
		.h = h, .blocks = blocks, .base = base, .wd = wd, .in_base = initial};
	m->count++;
	m->base_count += initial;
	m->usage += blocks;
	m->baseline += base;
	return &m->ents[i];
}

static struct disk_ent *ent_set(struct disk_monitor *m, int wd, uint64_t h, uint64_t blocks,
				uint64_t base)
{
	return ent_set_ex(m, wd, h, blocks, base, base > 0);
}

/* Removes slot i (backward shift, so no tombstones). */
static void ent_remove_at(struct disk_monitor *m, size_t i)
{
	size_t mask = m->cap - 1, j = i;

	m->usage -= m->ents[i].blocks;
	m->count--;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->ents[j].h)
			break;
		home = m->ents[j].h & mask;
		/* Move j into the hole at i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->ents[i] = m->ents[j];
			i = j;
		}
	}
	m->ents[i].h = 0;
}

static struct disk_ent *ent_remove(struct disk_monitor *m, uint64_t h)
{
	struct disk_ent *e = ent_find(m, h);

	if (e)
		ent_remove_at(m, e - m->ents);
	return NULL;
}

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

static struct disk_dir *dir_get(struct disk_monitor *m, int wd)
{
	return wd >= 0 && (size_t)wd < m->ndirs && m->dirs[wd].live ? &m->dirs[wd] : NULL;
}

/*
 * An O_PATH fd of a watched directory, opened from its root one name at a
 * time (openat, O_NOFOLLOW): no path is ever built, so no depth is too deep
 * (a tree below PATH_MAX would otherwise go unwatched). The last one is
 * kept (m->fd_wd): events and scans come in runs on one directory. The
 * caller does not close it. -errno when a name on the way is gone (renamed
 * since the names were last updated: the events not read yet fix them).
 */
static int dir_open(struct disk_monitor *m, int wd)
{
	struct disk_dir *d;
	size_t n = 0;
	int fd, r = 0;

	if (m->fd_wd == wd && m->dir_fd >= 0)
		return m->dir_fd;
	for (int w = wd; (d = dir_get(m, w)); w = d->parent) {
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
	fd = open(m->dirs[m->chain[n - 1]].name, O_PATH | O_DIRECTORY | O_CLOEXEC);
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
static void dir_fd_drop(struct disk_monitor *m)
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
	if (initial && dir_get(m, wd))
		dir_get(m, wd)->unread = true;
	m->queue[m->qtail++] =
		(struct disk_scan_item){.wd = wd, .initial = initial, .tries = tries};
}

/*
 * Watches the directory name under parent (its fd pfd) and queues it for
 * reading. Through /proc/self/fd: a path relative to nothing, any depth.
 */
static void watch_dir(struct disk_monitor *m, int parent, int pfd, const char *name, dev_t dev,
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
	if (dir_get(m, wd))
		return; /* already watched (a bind mount of a watched tree) */
	if (dir_add(m, wd, parent, name, dev) == 0)
		queue_push(m, wd, initial, 0);
}

static uint64_t blocks_of(const struct stat *st)
{
	return (uint64_t)st->st_blocks * 512;
}

/* Reads one directory: its entries' sizes, and watches for its subdirectories. */
static size_t scan_dir(struct disk_monitor *m, const struct disk_scan_item *it)
{
	struct disk_dir *d = dir_get(m, it->wd);
	struct dirent *de;
	size_t n = 0;
	DIR *dir;
	int dfd, pfd;

	if (!d)
		return 1;
	d->unread = false;
	pfd = dir_open(m, it->wd);
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
		h = ent_hash(it->wd, de->d_name);
		b = blocks_of(&st);
		/* An event may have counted it already: then it is not in the baseline. */
		if (!ent_find(m, h))
			ent_set_ex(m, it->wd, h, b, it->initial ? b : 0, it->initial);
		/* Other file systems mounted inside are not followed. */
		if (S_ISDIR(st.st_mode) && st.st_dev == d->dev) {
			watch_dir(m, it->wd, dfd, de->d_name, st.st_dev, it->initial);
			d = dir_get(m, it->wd); /* dirs may have moved */
		}
	}
	closedir(dir);
	m->scanned += n;
	return n + 1;
}

static int add_roots(struct disk_monitor *m);

void disk_monitor_scan(struct disk_monitor *m, size_t budget)
{
	size_t done = 0;

	if (m->roots_pending) {
		int r;

		m->roots_pending = false;
		r = add_roots(m);
		if (r < 0)
			log_warn_errno(r,
				       "disk monitor: cannot watch the workspace; the disk limit "
				       "is not enforced");
	}
	while (disk_monitor_scanning(m) && done < budget) {
		struct disk_scan_item it = m->queue[m->qhead++];

		done += scan_dir(m, &it);
	}
}

static int add_roots(struct disk_monitor *m)
{
	int added = 0;

	for (size_t i = 0; i < m->nroots; i++) {
		struct stat st;
		int wd;

		if (!m->roots[i] || stat(m->roots[i], &st) < 0)
			continue;
		wd = inotify_add_watch(m->fd, m->roots[i], WATCH_MASK);
		if (wd < 0)
			return -errno;
		if (!dir_get(m, wd) && dir_add(m, wd, -1, m->roots[i], st.st_dev) == 0) {
			queue_push(m, wd, true, 0);
			added++;
		}
	}
	return added;
}

int disk_monitor_open(struct disk_monitor *m, const char *const *roots, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->dir_fd = m->fd_wd = -1;
	m->roots = roots;
	m->nroots = n;
	m->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	m->roots_pending = true;
	return 0;
}

/*
 * Closing an inotify instance that has watches waits for an SRCU grace
 * period (fsnotify_destroy_group), 5-10 ms, also when the process exits: a
 * closer (lib/closer.h) takes the last reference and pays for it.
 */
static void close_async(int fd)
{
	static struct closer c;
	int r = closer_begin(&c, &fd, 1);

	close(fd);
	if (!r)
		closer_end(&c);
}

void disk_monitor_close(struct disk_monitor *m)
{
	if (m->fd >= 0)
		close_async(m->fd);
	m->fd = -1;
	dir_fd_drop(m);
	free(m->chain);
	m->chain = NULL;
	m->chain_cap = 0;
	for (size_t i = 0; i < m->ndirs; i++)
		free(m->dirs[i].name);
	free(m->dirs);
	free(m->ents);
	free(m->queue);
	m->dirs = NULL;
	m->ents = NULL;
	m->queue = NULL;
	m->ndirs = m->cap = m->count = 0;
	m->qhead = m->qtail = m->qcap = 0;
}

/*
 * The event queue overflowed: events were lost. Everything is read again
 * (synchronously: this only happens under a flood), the baseline is kept.
 */
static void rescan(struct disk_monitor *m)
{
	int64_t baseline = m->baseline;
	size_t base_count = m->base_count;
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	/*
	 * During the initial scan the baseline covers only what was read so
	 * far: then the scan starts again and the baseline with it (what the
	 * session wrote meanwhile counts as baseline, as it would have).
	 */
	bool initial = m->roots_pending;

	for (size_t i = m->qhead; i < m->qtail; i++)
		initial |= m->queue[i].initial;

	if (fd < 0)
		return;
	/* Same fd number: the supervision loop polls it. */
	dup3(fd, m->fd, O_CLOEXEC);
	close(fd);
	for (size_t i = 0; i < m->ndirs; i++) {
		free(m->dirs[i].name);
		m->dirs[i] = (struct disk_dir){0};
	}
	if (m->ents)
		memset(m->ents, 0, m->cap * sizeof(*m->ents));
	m->count = 0;
	m->base_count = 0;
	m->usage = 0;
	m->qhead = m->qtail = 0;
	dir_fd_drop(m);
	m->moved_pending = false;
	m->roots_pending = false;
	m->baseline = 0;
	add_roots(m);
	for (size_t i = m->qhead; i < m->qtail; i++)
		m->queue[i].initial = initial;
	while (disk_monitor_scanning(m))
		disk_monitor_scan(m, SIZE_MAX);
	if (!initial) {
		m->baseline = baseline;
		m->base_count = base_count;
	}
	m->rescans++;
}

/* Whether wd lies under (or is) top. */
static bool dir_under(struct disk_monitor *m, int wd, int top)
{
	for (struct disk_dir *d; (d = dir_get(m, wd)); wd = d->parent)
		if (wd == top)
			return true;
	return false;
}

/* A directory left the tree: its watches and entries go. */
static void forget_subtree(struct disk_monitor *m, int top)
{
	size_t i = 0;

	while (i < m->cap) {
		if (m->ents[i].h && dir_under(m, m->ents[i].wd, top))
			ent_remove_at(m, i); /* slot i now holds another entry: look again */
		else
			i++;
	}
	/* Children first would be tidier; marking dead in any order is enough. */
	for (size_t wd = 0; wd < m->ndirs; wd++) {
		if (wd != (size_t)top && m->dirs[wd].live && dir_under(m, wd, top)) {
			inotify_rm_watch(m->fd, wd);
			m->dirs[wd].live = false;
		}
	}
	inotify_rm_watch(m->fd, top);
	if (dir_get(m, top))
		m->dirs[top].live = false;
	dir_fd_drop(m);
}

/* The watch of the subdirectory name of parent, -1 if none. */
static int child_wd(struct disk_monitor *m, int parent, const char *name)
{
	for (size_t wd = 0; wd < m->ndirs; wd++)
		if (m->dirs[wd].live && m->dirs[wd].parent == parent && m->dirs[wd].name &&
		    streq(m->dirs[wd].name, name))
			return wd;
	return -1;
}

/* An IN_MOVED_FROM without its IN_MOVED_TO: the entry left the tree. */
static void flush_moved(struct disk_monitor *m)
{
	if (!m->moved_pending)
		return;
	m->moved_pending = false;
	if (m->moved_isdir) {
		int wd = child_wd(m, m->moved_wd, m->moved_name);

		if (wd >= 0)
			forget_subtree(m, wd);
	}
}

static void on_event(struct disk_monitor *m, const struct inotify_event *ev)
{
	bool isdir = ev->mask & IN_ISDIR;
	struct disk_dir *d;
	struct disk_ent *e;
	struct stat st;
	uint64_t h;
	int pfd;

	m->events++;
	if (ev->mask & IN_IGNORED) {
		flush_moved(m);
		if ((d = dir_get(m, ev->wd)))
			d->live = false;
		if (m->fd_wd == ev->wd)
			dir_fd_drop(m);
		return;
	}
	if (m->moved_pending && !((ev->mask & IN_MOVED_TO) && ev->cookie == m->moved_cookie))
		flush_moved(m);
	if (!ev->len || !(d = dir_get(m, ev->wd)))
		return;
	h = ent_hash(ev->wd, ev->name);
	if (ev->mask & IN_DELETE) {
		ent_remove(m, h);
		return;
	}
	if (ev->mask & IN_MOVED_FROM) {
		e = ent_find(m, h);
		m->moved_base = e ? e->base : 0;
		m->moved_hash = h;
		m->moved_wd = ev->wd;
		m->moved_cookie = ev->cookie;
		m->moved_isdir = isdir;
		m->moved_in_base = e && e->in_base;
		snprintf(m->moved_name, sizeof(m->moved_name), "%s", ev->name);
		m->moved_pending = true;
		ent_remove(m, h);
		return;
	}
	pfd = dir_open(m, ev->wd);
	if (pfd < 0 || fstatat(pfd, ev->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return; /* gone already: its IN_DELETE follows */
	if ((ev->mask & IN_MOVED_TO) && m->moved_pending) {
		/* A rename inside the tree: the entry keeps its share of the baseline. */
		int wd = isdir ? child_wd(m, m->moved_wd, m->moved_name) : -1;

		m->moved_pending = false;
		/* Its old slot left the baseline as it was: only the share moves. */
		e = ent_set(m, ev->wd, h, blocks_of(&st), 0);
		if (e) {
			/* Its old slot stays in base_count too: only the flag moves. */
			e->base = m->moved_base;
			e->in_base = m->moved_in_base;
		}
		if (wd >= 0) {
			char *name = strdup(ev->name);

			if (name) {
				free(m->dirs[wd].name);
				m->dirs[wd].name = name;
				m->dirs[wd].parent = ev->wd;
			}
		}
		return;
	}
	if (d->unread && !(ev->mask & (IN_CREATE | IN_MOVED_TO)) && !ent_find(m, h)) {
		/*
		 * A write to an entry the initial scan has not read yet: it was
		 * there before, and what it holds counts as baseline (as for
		 * what the session writes before the scan gets there).
		 */
		ent_set_ex(m, ev->wd, h, blocks_of(&st), blocks_of(&st), true);
		return;
	}
	e = ent_set(m, ev->wd, h, blocks_of(&st), 0);
	if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && e && (e->base || e->in_base)) {
		/* Created after the watch: the scan's count of it was growth, not baseline. */
		m->baseline -= e->base;
		e->base = 0;
		m->base_count -= e->in_base;
		e->in_base = false;
	}
	if (isdir && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && st.st_dev == d->dev)
		watch_dir(m, ev->wd, pfd, ev->name, st.st_dev, false);
}

void disk_monitor_read(struct disk_monitor *m)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool overflow = false;

	/* Bounded: a flood must not starve the output relay. */
	for (int round = 0; round < 16; round++) {
		ssize_t n = read(m->fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_Q_OVERFLOW)
				overflow = true;
			else
				on_event(m, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
	flush_moved(m);
	if (overflow)
		rescan(m);
}
