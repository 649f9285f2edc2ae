// SPDX-License-Identifier: GPL-2.0
/*
 * What a change set holds against its workspace (changes.h): a walk of
 * the upper directory alone, each name looked up in the workspace. A
 * whiteout (a character device 0:0) is a deletion; an opaque directory
 * (trusted.overlay.opaque, or user.overlay.opaque in a user namespace's
 * mount) deletes what the workspace has below it and the upper does not.
 * The cost follows the upper, and the directories a session emptied.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "changes.h"
#include "grants.h"
#include "../lib/util.h"

struct scan {
	struct change_list *l;
	char path[PATH_MAX];
	int err;
};

static const char *const kind_names[] = {
	[CHANGE_ADDED] = "added",
	[CHANGE_MODIFIED] = "modified",
	[CHANGE_MODE] = "mode",
	[CHANGE_DELETED] = "deleted",
};

const char *change_kind_name(enum change_kind k)
{
	return kind_names[k];
}

void change_list_free(struct change_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int add(struct scan *s, const char *path, enum change_kind k, mode_t mode, mode_t old,
	       uint64_t size)
{
	struct change_list *l = s->l;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct change *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = (struct change){.kind = k, .mode = mode, .old_mode = old, .size = size};
	l->v[l->n].path = strdup(path);
	if (!l->v[l->n].path)
		return -ENOMEM;
	l->n++;
	l->count[k]++;
	return 0;
}

bool change_is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0;
}

static bool is_opaque(int dfd)
{
	char v[4];

	return (fgetxattr(dfd, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y') ||
	       (fgetxattr(dfd, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
}

/* Whether two regular files (or two symlinks) hold the same bytes. */
static bool same_content(int udir, int ldir, const char *name, const struct stat *us,
			 const struct stat *ls)
{
	char a[65536], b[65536];
	bool same = true;
	int ufd, lfd;

	if ((us->st_mode & S_IFMT) != (ls->st_mode & S_IFMT) || us->st_size != ls->st_size)
		return false;
	if (S_ISLNK(us->st_mode)) {
		ssize_t n = readlinkat(udir, name, a, sizeof(a)),
			m = readlinkat(ldir, name, b, sizeof(b));

		return n >= 0 && n == m && !memcmp(a, b, n);
	}
	if (!S_ISREG(us->st_mode))
		return false;
	ufd = openat(udir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	lfd = openat(ldir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	while (ufd >= 0 && lfd >= 0 && same) {
		ssize_t n = read(ufd, a, sizeof(a)), m = n > 0 ? read(lfd, b, n) : 0;

		if (n <= 0) {
			same = n == 0;
			break;
		}
		same = m == n && !memcmp(a, b, n);
	}
	if (ufd < 0 || lfd < 0)
		same = false;
	fd_close(&ufd);
	fd_close(&lfd);
	return same;
}

static int walk(struct scan *s, int udir, int ldir);

/* What the workspace has below an opaque directory and the upper does not: deleted. */
static int opaque_deletions(struct scan *s, int udir, int ldir)
{
	DIR *d = dir_open_at(ldir, ".");
	size_t len = strlen(s->path);
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (de = dir_next(d))) {
		struct stat us, ls;

		if (fstatat(udir, de->d_name, &us, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT ||
		    fstatat(ldir, de->d_name, &ls, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(s->path + len, sizeof(s->path) - len, "%s%s", len ? "/" : "", de->d_name);
		r = add(s, s->path, CHANGE_DELETED, 0, ls.st_mode, 0);
		s->path[len] = '\0';
	}
	closedir(d);
	return r;
}

/* One directory of the upper: udir (O_RDONLY), ldir the workspace's (-1: none there). */
static int one(struct scan *s, int udir, int ldir, const char *name)
{
	struct stat us, ls;
	bool has_lower;
	int r = 0;

	if (fstatat(udir, name, &us, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	has_lower = ldir >= 0 && fstatat(ldir, name, &ls, AT_SYMLINK_NOFOLLOW) == 0;
	if (change_is_whiteout(&us))
		return has_lower ? add(s, s->path, CHANGE_DELETED, 0, ls.st_mode, 0) : 0;
	if (S_ISDIR(us.st_mode)) {
		int ufd = openat(udir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int lfd = -1;

		if (ufd < 0)
			return -errno;
		if (has_lower && S_ISDIR(ls.st_mode)) {
			lfd = openat(ldir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if ((us.st_mode & 07777) != (ls.st_mode & 07777))
				r = add(s, s->path, CHANGE_MODE, us.st_mode, ls.st_mode, 0);
			if (!r && lfd >= 0 && is_opaque(ufd))
				r = opaque_deletions(s, ufd, lfd);
		} else {
			r = add(s, s->path, has_lower ? CHANGE_MODIFIED : CHANGE_ADDED, us.st_mode,
				has_lower ? ls.st_mode : 0, 0);
		}
		if (!r)
			r = walk(s, ufd, lfd);
		fd_close(&lfd);
		close(ufd);
		return r;
	}
	if (!has_lower)
		return add(s, s->path, CHANGE_ADDED, us.st_mode, 0, us.st_size);
	if (!same_content(udir, ldir, name, &us, &ls))
		return add(s, s->path, CHANGE_MODIFIED, us.st_mode, ls.st_mode, us.st_size);
	if ((us.st_mode & 07777) != (ls.st_mode & 07777))
		return add(s, s->path, CHANGE_MODE, us.st_mode, ls.st_mode, us.st_size);
	return 0; /* copied up, same bytes and mode: not a change */
}

static int walk(struct scan *s, int udir, int ldir)
{
	DIR *d = dir_open_at(udir, ".");
	size_t len = strlen(s->path);
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	while (!r && (de = dir_next(d))) {
		if ((size_t)snprintf(s->path + len, sizeof(s->path) - len, "%s%s", len ? "/" : "",
				     de->d_name) >= sizeof(s->path) - len) {
			r = -ENAMETOOLONG;
			break;
		}
		r = one(s, dirfd(d), ldir, de->d_name);
		s->path[len] = '\0';
	}
	closedir(d);
	return r;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct change *)a)->path, ((const struct change *)b)->path);
}

int changes_scan(const struct changes_set *cs, struct change_list *l, char *why, size_t why_size)
{
	char upper[PATH_MAX + 16];
	struct scan s = {.l = l};
	_cleanup_close_ int ufd = -1, ws = -1;
	struct stat st;
	int r;

	memset(l, 0, sizeof(*l));
	snprintf(upper, sizeof(upper), "%s/upper", cs->dir);
	ufd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0) {
		r = -errno;
		snprintf(why, why_size, "cannot open %s: %s", upper, strerror(-r));
		return r;
	}
	ws = path_open_exact(cs->workspace, O_DIRECTORY);
	if (ws < 0 || fstat(ws, &st) < 0 || st.st_dev != cs->ws_dev || st.st_ino != cs->ws_ino) {
		snprintf(why, why_size,
			 "the workspace %s is not the directory the session ran on (moved or "
			 "replaced since)",
			 cs->workspace);
		return -ESTALE;
	}
	r = walk(&s, ufd, ws);
	if (r < 0) {
		snprintf(why, why_size, "cannot read the change set at %s: %s", s.path,
			 strerror(-r));
		change_list_free(l);
		return r;
	}
	if (l->n) /* qsort of NULL, even for none, is undefined */
		qsort(l->v, l->n, sizeof(*l->v), by_path);
	return 0;
}
