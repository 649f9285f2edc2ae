// SPDX-License-Identifier: GPL-2.0
/*
 * The disk monitor's inotify events: entries created, grown, moved and
 * removed, directories watched as they appear, and a full rescan when the
 * event queue overflowed. Events that hint at a file held with no name
 * left ask for a held scan (held_wanted, disk_held.c).
 */
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
#include "../lib/util.h"

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
	disk_dir_fd_drop(m);
	m->moved_pending = false;
	m->roots_pending = false;
	m->baseline = 0;
	disk_add_roots(m);
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
	for (struct disk_dir *d; (d = disk_dir_get(m, wd)); wd = d->parent)
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
			disk_ent_remove_at(m, i); /* slot i now holds another entry: look again */
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
	if (disk_dir_get(m, top))
		m->dirs[top].live = false;
	disk_dir_fd_drop(m);
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

/* The first half of a rename: the entry is kept aside until its IN_MOVED_TO. */
static void moved_from(struct disk_monitor *m, const struct inotify_event *ev, uint64_t h,
		       bool isdir)
{
	struct disk_ent *e = disk_ent_find(m, h);

	m->moved_base = e ? e->base : 0;
	m->moved_hash = h;
	m->moved_wd = ev->wd;
	m->moved_cookie = ev->cookie;
	m->moved_isdir = isdir;
	m->moved_in_base = e && e->in_base;
	snprintf(m->moved_name, sizeof(m->moved_name), "%s", ev->name);
	m->moved_pending = true;
	disk_ent_remove(m, h);
}

/* A rename inside the tree: the entry keeps its share of the baseline. */
static void moved_to(struct disk_monitor *m, const struct inotify_event *ev, uint64_t h, bool isdir,
		     const struct stat *st)
{
	int wd = isdir ? child_wd(m, m->moved_wd, m->moved_name) : -1;
	struct disk_ent *e;

	m->moved_pending = false;
	/* Its old slot left the baseline as it was: only the share moves. */
	e = disk_ent_set(m, ev->wd, h, disk_blocks_of(st), 0);
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
		if ((d = disk_dir_get(m, ev->wd)))
			d->live = false;
		if (m->fd_wd == ev->wd)
			disk_dir_fd_drop(m);
		return;
	}
	if (m->moved_pending && !((ev->mask & IN_MOVED_TO) && ev->cookie == m->moved_cookie))
		flush_moved(m);
	if (!ev->len || !(d = disk_dir_get(m, ev->wd)))
		return;
	h = disk_ent_hash(ev->wd, ev->name);
	/*
	 * A file may lose its last name while held open or mapped, and an
	 * O_TMPFILE never had one (its writes say "#INO"): the held scan
	 * counts those (disk_held.c), soon.
	 */
	if ((ev->mask & IN_DELETE && !isdir) || ev->name[0] == '#' ||
	    (ev->mask & IN_MOVED_TO && !isdir && disk_ent_find(m, h)))
		disk_held_want(m, true);
	if (ev->mask & IN_DELETE) {
		disk_ent_remove(m, h);
		return;
	}
	if (ev->mask & IN_MOVED_FROM) {
		moved_from(m, ev, h, isdir);
		return;
	}
	pfd = disk_dir_open(m, ev->wd);
	if (pfd < 0 || fstatat(pfd, ev->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* Gone already: its IN_DELETE follows, or a write to it unlinked. */
		disk_held_want(m, (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) != 0);
		return;
	}
	if ((ev->mask & IN_MOVED_TO) && m->moved_pending) {
		moved_to(m, ev, h, isdir, &st);
		return;
	}
	if (d->unread && !(ev->mask & (IN_CREATE | IN_MOVED_TO)) && !disk_ent_find(m, h)) {
		/*
		 * A write to an entry the initial scan has not read yet: it was
		 * there before, and what it holds counts as baseline (as for
		 * what the session writes before the scan gets there).
		 */
		disk_ent_set_ex(m, ev->wd, h, disk_blocks_of(&st), disk_blocks_of(&st), true);
		return;
	}
	e = disk_ent_set(m, ev->wd, h, disk_blocks_of(&st), 0);
	if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && e && (e->base || e->in_base)) {
		/* Created after the watch: the scan's count of it was growth, not baseline. */
		m->baseline -= e->base;
		e->base = 0;
		m->base_count -= e->in_base;
		e->in_base = false;
	}
	if (isdir && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && st.st_dev == d->dev)
		disk_watch_dir(m, ev->wd, pfd, ev->name, st.st_dev, false);
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
