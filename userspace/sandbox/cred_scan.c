// SPDX-License-Identifier: GPL-2.0
/*
 * The credential entries of the granted trees, found by name (cred_scan.h):
 * masked by the mount namespace, or carved out of Landlock without one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "cred_scan.h"
#include "cred_match.h"
#include "cred_record.h"
#include "../policy/policy.h"
#include "../lib/util.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

/* The directories a scan has still to read, shallowest first. */
struct queue {
	char **path;
	unsigned int *depth;
	size_t head, n, cap;
};

struct walk {
	struct cred_pats pats;
	struct cred_scan *sc; /* NULL: the top only (cred_top_paths) */
	struct strv *out;
	struct queue q; /* a scan's, breadth first */
	struct cred_record rec;
	bool recording; /* a scan's first walk, with sc->record_dir: rec read and written */
	int rootfd;
	size_t rootlen;
	char path[PATH_MAX];
};

void cred_scan_init(struct cred_scan *sc)
{
	*sc = (struct cred_scan){
		.max_entries = CRED_SCAN_MAX_ENTRIES,
		.max_depth = CRED_SCAN_MAX_DEPTH,
		.max_ms = CRED_SCAN_MAX_MS,
		.deadline_ns = now_ns() + CRED_SCAN_MAX_MS * 1000000ULL,
	};
}

/* Appends "what PATH" to sc->unchecked, "; "-separated, once per bound. */
static void note(struct cred_scan *sc, unsigned int bound, const char *what, const char *path)
{
	size_t len = strlen(sc->unchecked);

	if (sc->said & bound)
		return;
	sc->said |= bound;
	snprintf(sc->unchecked + len, sizeof(sc->unchecked) - len, "%s%s%s", len ? "; " : "", what,
		 path);
}

static void entries_note(struct cred_scan *sc, const char *path)
{
	char what[64];

	snprintf(what, sizeof(what), "not masked past %llu entries, from ",
		 (unsigned long long)sc->max_entries);
	note(sc, 1, what, path);
}

/* Whether a bound stops the walk here; said once per bound in sc->unchecked. */
static bool over_budget(struct walk *w)
{
	struct cred_scan *sc = w->sc;
	char what[64];

	if (sc->entries >= sc->max_entries) {
		entries_note(sc, w->path);
		return true;
	}
	if ((sc->entries & 255) == 0 && now_ns() > sc->deadline_ns) {
		snprintf(what, sizeof(what), "not masked after %llu ms, from ",
			 (unsigned long long)sc->max_ms);
		note(sc, 2, what, w->path);
		sc->entries = sc->max_entries; /* the other trees: not begun */
		return true;
	}
	return false;
}

static struct cred_linked *linked_of(struct cred_scan *sc, const struct stat *st)
{
	for (size_t i = 0; i < sc->nlinked; i++)
		if (sc->linked[i].dev == st->st_dev && sc->linked[i].ino == st->st_ino)
			return &sc->linked[i];
	return NULL;
}

/* A match (st: its lstat); with a scan, its identity beside it (ids). */
static int push(struct walk *w, const struct stat *st)
{
	struct cred_scan *sc = w->sc;

	/* A scan's duplicates (overlapping grants) go at its end (cred_scan_dedupe). */
	if (!sc && strv_contains(w->out, w->path))
		return 0;
	if (sc && w->out->n >= CRED_SCAN_MAX_MASKS) {
		note(sc, CRED_SCAN_SAID_MASKS, "past " STR(CRED_SCAN_MAX_MASKS) " masks, from ",
		     w->path);
		return 0;
	}
	/* Doubled, not grown by one: thousands of matches must not cost n^2 copies. */
	if (sc && w->out->n >= sc->ids_cap) {
		size_t cap = w->out->n < 32 ? 64 : 2 * w->out->n;
		uint64_t(*ids)[2] = realloc(sc->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		sc->ids = ids;
		sc->ids_cap = cap;
	}
	if (sc) {
		sc->ids[w->out->n][0] = st->st_dev;
		sc->ids[w->out->n][1] = st->st_ino;
	}
	return strv_push(w->out, w->path);
}

/*
 * A match: pushed; one with other names recorded for the second walk. Not
 * a symlink: what it points to is judged by its own name and place.
 */
static int found(struct walk *w, int dfd, const char *name)
{
	struct cred_scan *sc = w->sc;
	struct cred_linked *l;
	size_t n = w->out->n;
	struct stat st;
	int r;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(st.st_mode))
		return 0;
	r = push(w, &st);
	if (r || w->out->n == n || !sc || sc->linking || S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return r;
	if ((l = linked_of(sc, &st))) {
		l->seen++;
		return 0;
	}
	if (sc->nlinked == CRED_SCAN_MAX_LINKED) {
		note(sc, 32,
		     "other hard links not looked for past " STR(
			     CRED_SCAN_MAX_LINKED) " files, from ",
		     w->path);
		return 0;
	}
	sc->linked[sc->nlinked++] = (struct cred_linked){
		.dev = st.st_dev,
		.ino = st.st_ino,
		.nlink = st.st_nlink,
		.seen = 1,
		.at = w->out->n - 1,
	};
	return 0;
}

/* The second walk: a file that is another name of a match is masked too. */
static int relinked(struct walk *w, int dfd, const char *name, unsigned char type)
{
	struct cred_linked *l;
	struct stat st;

	if ((type != DT_REG && type != DT_UNKNOWN) ||
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode) ||
	    st.st_nlink < 2 || !(l = linked_of(w->sc, &st)) || strv_contains(w->out, w->path))
		return 0;
	l->seen++;
	return push(w, &st);
}

bool cred_scan_relink(struct cred_scan *sc)
{
	if (!sc->nlinked)
		return false;
	sc->linking = true;
	sc->entries = 0;
	sc->deadline_ns = now_ns() + sc->max_ms * 1000000ULL;
	return true;
}

void cred_scan_links(struct cred_scan *sc, const struct strv *out)
{
	for (size_t i = 0; i < sc->nlinked; i++) {
		const struct cred_linked *l = &sc->linked[i];
		size_t len = strlen(sc->unchecked);

		if (l->seen >= l->nlink)
			continue;
		snprintf(sc->unchecked + len, sizeof(sc->unchecked) - len,
			 "%s%llu other hard link(s) of %s outside the scanned trees not masked",
			 len ? "; " : "", (unsigned long long)(l->nlink - l->seen), out->v[l->at]);
	}
}

static int enqueue(struct queue *q, const char *path, unsigned int depth)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 256;
		char **p = realloc(q->path, cap * sizeof(*p));
		unsigned int *d;

		if (!p)
			return -ENOMEM;
		q->path = p;
		d = realloc(q->depth, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		q->depth = d;
		q->cap = cap;
	}
	q->path[q->n] = strdup(path);
	if (!q->path[q->n])
		return -ENOMEM;
	q->depth[q->n++] = depth;
	return 0;
}

static void queue_free(struct queue *q)
{
	for (size_t i = q->head; i < q->n; i++)
		free(q->path[i]);
	free(q->path);
	free(q->depth);
}

/*
 * A directory below the root, never through a symlink, nor out of the
 * root (another session may swap one in on the way meanwhile).
 */
static int open_below(int rootfd, const char *rel)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(rootfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

struct found_entry {
	char *path;
	uint64_t id[2];
};

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct found_entry *)a)->path, ((const struct found_entry *)b)->path);
}

int cred_scan_dedupe(struct cred_scan *sc, struct strv *out)
{
	struct found_entry *e;
	size_t k = 0;

	if (out->n < 2)
		return 0;
	e = calloc(out->n, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < out->n; i++)
		e[i] = (struct found_entry){out->v[i], {sc->ids[i][0], sc->ids[i][1]}};
	qsort(e, out->n, sizeof(*e), entry_cmp);
	for (size_t i = 0; i < out->n; i++) {
		if (k && streq(e[i].path, out->v[k - 1])) {
			free(e[i].path);
			continue;
		}
		out->v[k] = e[i].path;
		sc->ids[k][0] = e[i].id[0];
		sc->ids[k][1] = e[i].id[1];
		k++;
	}
	out->n = k;
	out->v[k] = NULL;
	free(e);
	return 0;
}

static int walk_dir(struct walk *w, int dfd, size_t len, unsigned int depth);

/*
 * The entry w->path[0, nlen) of the directory w->path[0, len) (dfd, or
 * AT_FDCWD with the whole path), a match or a directory (dir): pushed,
 * walked into (all of them with a scan, within its bounds; else those on
 * the way to a two-component match) or queued.
 */
static int entry(struct walk *w, int dfd, const char *name, size_t nlen, bool match, bool dir,
		 unsigned int depth)
{
	struct stat st;
	int fd;

	if (dfd == AT_FDCWD)
		name = w->path;
	if (match)
		/* The second walk looks for other names only. */
		return w->sc && w->sc->linking ? 0 : found(w, dfd, name);
	if (!dir || (w->sc ? false : !cred_partial_match(&w->pats, w->path, nlen)))
		return 0;
	if (depth >= (w->sc ? w->sc->max_depth : 8)) {
		/*
		 * Past the depth bound a directory is masked whole: a session
		 * could nest a credential directory that deep for the next
		 * session's scan to miss.
		 */
		if (w->sc && !w->sc->linking && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			note(w->sc, 4, "directories hidden whole past the depth bound, from ",
			     w->path);
			return found(w, dfd, name);
		}
		return 0;
	}
	/* A scan reads each level whole before the next (walk_queue). */
	if (w->sc)
		return enqueue(&w->q, w->path, depth + 1);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? walk_dir(w, fd, nlen, depth + 1) : 0;
}

/* The directory w->path[0, len) below the root, "" for the root. */
static const char *rel_of(const struct walk *w, size_t len)
{
	return len > w->rootlen ? w->path + w->rootlen + 1 : "";
}

/*
 * The entries of the directory dfd (closed here), whose path is w->path
 * [0, len), read; recorded (cred_record.h) on a scan's first walk.
 */
static int walk_dir(struct walk *w, int dfd, size_t len, unsigned int depth)
{
	DIR *d = fdopendir(dfd);
	uint64_t entries = 0;
	struct dirent *e;
	struct stat st;
	int r = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	/* Its times before its read: a name added after it moves them. */
	if (w->recording) {
		if (fstat(dfd, &st) == 0)
			cred_record_begin(&w->rec, rel_of(w, len), &st);
		else
			w->rec.spoilt = true;
	}
	while (!r && (e = readdir(d))) {
		size_t n = strlen(e->d_name), nlen = len + 1 + n;
		bool dir = e->d_type == DT_DIR || e->d_type == DT_UNKNOWN, match;

		if (streq(e->d_name, ".") || streq(e->d_name, "..") || nlen >= sizeof(w->path))
			continue;
		if (w->sc && over_budget(w)) {
			w->rec.spoilt = true;
			break;
		}
		if (w->sc)
			w->sc->entries++;
		entries++;
		w->path[len] = '/';
		memcpy(w->path + len + 1, e->d_name, n + 1);
		match = cred_full_match(&w->pats, w->path, nlen);
		if (w->recording && (match || dir))
			cred_record_name(&w->rec, match ? 'm' : 'd', e->d_name, n);
		if (!match && w->sc && w->sc->linking &&
		    (r = relinked(w, dirfd(d), e->d_name, e->d_type)))
			break;
		r = entry(w, dirfd(d), e->d_name, nlen, match, dir, depth);
	}
	w->path[len] = '\0';
	if (w->recording)
		cred_record_end(&w->rec, entries);
	closedir(d);
	return r;
}

/*
 * The directory w->path[0, len) as its record has it (unchanged since): the
 * names that mattered walked as walk_dir walks them, without a read.
 */
static int walk_recorded(struct walk *w, const struct cred_dir *d, size_t len, unsigned int depth)
{
	int r = 0;

	w->sc->entries += d->entries;
	cred_record_keep(&w->rec, d);
	for (const char *p = d->names; !r && *p; p += strlen(p) + 1) {
		size_t n = strlen(p + 1), nlen = len + 1 + n;

		if (nlen >= sizeof(w->path))
			continue;
		w->path[len] = '/';
		memcpy(w->path + len + 1, p + 1, n + 1);
		r = entry(w, AT_FDCWD, p + 1, nlen, p[0] == 'm', p[0] == 'd', depth);
	}
	w->path[len] = '\0';
	return r;
}

/*
 * The directory w->path[0, len) of a scan: from its record when unchanged
 * (within the bounds), else read.
 */
static int visit(struct walk *w, size_t len, unsigned int depth)
{
	struct cred_scan *sc = w->sc;
	const char *rel = rel_of(w, len);
	const struct cred_dir *d;
	int fd;

	if (w->recording && (d = cred_record_take(&w->rec, rel)) &&
	    sc->entries + d->entries <= sc->max_entries && now_ns() <= sc->deadline_ns)
		return walk_recorded(w, d, len, depth);
	fd = rel[0] ? open_below(w->rootfd, rel) : dup(w->rootfd);
	/*
	 * A directory the scan cannot read, the session cannot either; but its
	 * owner could chmod it back and read what the scan did not see: masked
	 * whole, it stays as unreadable as it is.
	 */
	if (fd < 0 && errno == EACCES && !sc->linking)
		return found(w, AT_FDCWD, w->path);
	return fd >= 0 ? walk_dir(w, fd, len, depth) : 0;
}

/*
 * A scan's directories, breadth first: every entry of a level is looked at
 * before the next, so a bound reached in a large subtree (node_modules)
 * still leaves the top and the shallow levels checked.
 */
static int walk_queue(struct walk *w)
{
	struct cred_scan *sc = w->sc;
	struct queue *q = &w->q;
	int r = 0;

	while (!r && q->head < q->n && sc->entries < sc->max_entries) {
		char *path = q->path[q->head];
		unsigned int depth = q->depth[q->head];
		size_t len = strlen(path);

		q->head++;
		memcpy(w->path, path, len + 1);
		free(path);
		r = visit(w, len, depth);
	}
	if (!r && q->head < q->n && !(sc->said & 3))
		entries_note(sc, q->path[q->head]);
	if (q->head < q->n)
		w->rec.spoilt = true;
	return r;
}

/*
 * The record of the tree w->path for a scan with these patterns and depth
 * bound (cred_record.h). 0, or -ENOMEM: then the tree is read whole.
 */
static int record_open(struct walk *w, const struct bpfbox_policy *p, const struct cred_scan *sc)
{
	struct buf key = {0};
	char depth[16];
	int r = 0;

	snprintf(depth, sizeof(depth), "%u", sc->max_depth);
	for (size_t i = 0; !r && i < p->deny_paths.n; i++)
		if (startswith(p->deny_paths.v[i], "**/"))
			r = buf_append(&key, p->deny_paths.v[i], strlen(p->deny_paths.v[i]) + 1);
	if (!r)
		r = buf_append(&key, depth, strlen(depth) + 1);
	if (!r)
		cred_record_open(&w->rec, sc->record_dir, w->path, w->rootfd, key.p, key.len);
	buf_free(&key);
	return r;
}

static int walk_root(const struct bpfbox_policy *p, const char *root, struct cred_scan *sc,
		     struct strv *out)
{
	struct walk *w;
	size_t len;
	int r = 0, fd;

	if (!root || root[0] != '/')
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->sc = sc;
	w->out = out;
	if ((r = cred_pats_compile(p, &w->pats)) < 0)
		goto out;
	len = snprintf(w->path, sizeof(w->path), "%s", root);
	while (len > 1 && w->path[len - 1] == '/')
		w->path[--len] = '\0';
	if (len >= sizeof(w->path) - 1)
		goto out;
	if (cred_ancestor_match(&w->pats, w->path, len)) {
		struct stat st;

		/* The whole grant is a credential entry (--ro ~/.ssh): masked whole. */
		if (!(sc && sc->linking) && lstat(w->path, &st) == 0)
			r = push(w, &st);
		goto out;
	}
	w->rootlen = streq(w->path, "/") ? 0 : len;
	w->rootfd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->rootfd >= 0 && sc) {
		uint64_t entries = sc->entries;

		if (sc->record_dir && !sc->linking)
			w->recording = !record_open(w, p, sc);
		r = visit(w, w->rootlen, 0);
		if (!r)
			r = walk_queue(w);
		if (w->recording) {
			if (r || (sc->said & ~4u))
				w->rec.spoilt = true;
			cred_record_close(&w->rec, sc->entries - entries);
		}
	} else if (w->rootfd >= 0 && (fd = dup(w->rootfd)) >= 0) {
		r = walk_dir(w, fd, w->rootlen, 0);
	}
	if (w->rootfd >= 0)
		close(w->rootfd);
	queue_free(&w->q);
out:
	cred_pats_free(&w->pats);
	free(w);
	return r;
}

int cred_scan_tree(const struct bpfbox_policy *p, const char *root, struct cred_scan *sc,
		   struct strv *out)
{
	return walk_root(p, root, sc, out);
}

int cred_top_paths(const struct bpfbox_policy *p, const char *root, struct strv *out)
{
	return walk_root(p, root, NULL, out);
}
