// SPDX-License-Identifier: GPL-2.0
/*
 * The credential entries of the granted trees, found by name (cred_scan.h):
 * masked by the mount namespace, or carved out of Landlock without one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cred_scan.h"
#include "../policy/policy.h"
#include "../lib/util.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

enum comp_kind { COMP_NAME, COMP_SUFFIX, COMP_PREFIX, COMP_GLOB };

/* One "**" "/" pattern: its one or two components, each of a kind. */
struct pat {
	const char *c[2];
	size_t n[2];
	enum comp_kind k[2];
	int m;
};

struct walk {
	struct pat *pats;
	size_t npats;
	struct cred_scan *sc; /* NULL: the top only (cred_top_paths) */
	struct strv *out;
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

/* "*.pem" a suffix, ".env.*" a prefix, a plain name; anything else fnmatch's. */
static enum comp_kind kind_of(const char *c, size_t n)
{
	size_t stars = 0;

	for (size_t i = 0; i < n; i++) {
		if (c[i] == '?' || c[i] == '[' || c[i] == '\\')
			return COMP_GLOB;
		stars += c[i] == '*';
	}
	if (!stars)
		return COMP_NAME;
	if (stars == 1 && n > 1 && c[0] == '*')
		return COMP_SUFFIX;
	if (stars == 1 && n > 1 && c[n - 1] == '*')
		return COMP_PREFIX;
	return COMP_GLOB;
}

static int compile(const struct bpfbox_policy *p, struct walk *w)
{
	w->pats = calloc(p->deny_paths.n + 1, sizeof(*w->pats));
	if (!w->pats)
		return -ENOMEM;
	for (size_t i = 0; i < p->deny_paths.n; i++) {
		const char *s = p->deny_paths.v[i], *slash;
		struct pat *pt = &w->pats[w->npats];

		if (!startswith(s, "**/") || !s[3])
			continue; /* absolute: masked as they are (ns_mount.c) */
		s += 3;
		slash = strchr(s, '/');
		pt->c[0] = s;
		pt->n[0] = slash ? (size_t)(slash - s) : strlen(s);
		pt->m = 1;
		if (slash && slash[1]) {
			pt->c[1] = slash + 1;
			pt->n[1] = strlen(slash + 1);
			pt->m = 2;
		}
		for (int j = 0; j < pt->m; j++)
			pt->k[j] = kind_of(pt->c[j], pt->n[j]);
		w->npats++;
	}
	return 0;
}

/* One component against one of a pattern (validate.c has the forms). */
static bool comp_match(const char *s, size_t n, const struct pat *pt, int j)
{
	const char *pc = pt->c[j];
	size_t pn = pt->n[j];
	char name[NAME_MAX + 1], pat[NAME_MAX + 1];

	switch (pt->k[j]) {
	case COMP_NAME:
		return n == pn && !memcmp(s, pc, n);
	case COMP_SUFFIX:
		return n >= pn - 1 && !memcmp(s + n - (pn - 1), pc + 1, pn - 1);
	case COMP_PREFIX:
		return n >= pn - 1 && !memcmp(s, pc, pn - 1);
	default:
		break;
	}
	if (n > NAME_MAX || pn > NAME_MAX)
		return false;
	memcpy(name, s, n);
	name[n] = '\0';
	memcpy(pat, pc, pn);
	pat[pn] = '\0';
	return fnmatch(pat, name, 0) == 0;
}

/* The component of path[0, end): its start. */
static size_t comp_start(const char *path, size_t end)
{
	while (end > 0 && path[end - 1] != '/')
		end--;
	return end;
}

/*
 * Whether the last components of path[0, len) match the first k of pt
 * (k == pt->m: the whole pattern).
 */
static bool tail_match(const char *path, size_t len, const struct pat *pt, int k)
{
	for (int i = k - 1; i >= 0; i--) {
		size_t s = comp_start(path, len);

		if (s == len || !comp_match(path + s, len - s, pt, i))
			return false;
		if (s == 0)
			return i == 0;
		len = s - 1;
	}
	return true;
}

static bool full_match(const struct walk *w, size_t len)
{
	size_t s = comp_start(w->path, len);

	for (size_t i = 0; i < w->npats; i++) {
		const struct pat *pt = &w->pats[i];

		/* The last component first: most entries end here. */
		if (s < len && comp_match(w->path + s, len - s, pt, pt->m - 1) &&
		    tail_match(w->path, len, pt, pt->m))
			return true;
	}
	return false;
}

/* Whether a two-component pattern may match one level below path[0, len). */
static bool partial_match(const struct walk *w, size_t len)
{
	for (size_t i = 0; i < w->npats; i++)
		if (w->pats[i].m == 2 && tail_match(w->path, len, &w->pats[i], 1))
			return true;
	return false;
}

/* Whether w->path (len bytes) or one of its ancestors matches. */
static bool ancestor_match(const struct walk *w, size_t len)
{
	for (size_t end = 1; end <= len; end++)
		if ((end == len || w->path[end] == '/') && full_match(w, end))
			return true;
	return false;
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

/* Whether a bound stops the walk here; said once per bound in sc->unchecked. */
static bool over_budget(struct walk *w)
{
	struct cred_scan *sc = w->sc;
	char what[64];

	if (sc->entries >= sc->max_entries) {
		snprintf(what, sizeof(what), "not masked past %llu entries, from ",
			 (unsigned long long)sc->max_entries);
		note(sc, 1, what, w->path);
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

	if (strv_contains(w->out, w->path))
		return 0;
	if (sc && w->out->n >= CRED_SCAN_MAX_MASKS) {
		note(sc, CRED_SCAN_SAID_MASKS, "past " STR(CRED_SCAN_MAX_MASKS) " masks, from ",
		     w->path);
		return 0;
	}
	if (sc) {
		uint64_t(*ids)[2] = realloc(sc->ids, (w->out->n + 1) * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		sc->ids = ids;
		ids[w->out->n][0] = st->st_dev;
		ids[w->out->n][1] = st->st_ino;
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

/*
 * The entries of the directory dfd (closed here), whose path is w->path
 * [0, len): each match pushed; directories walked into (all of them with a
 * scan, within its bounds; else those on the way to a two-component match).
 */
static int walk_dir(struct walk *w, int dfd, size_t len, unsigned int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int r = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	while (!r && (e = readdir(d))) {
		size_t n = strlen(e->d_name), nlen = len + 1 + n;
		bool dir = e->d_type == DT_DIR || e->d_type == DT_UNKNOWN;
		int fd;

		if (streq(e->d_name, ".") || streq(e->d_name, "..") || nlen >= sizeof(w->path))
			continue;
		if (w->sc && over_budget(w))
			break;
		if (w->sc)
			w->sc->entries++;
		w->path[len] = '/';
		memcpy(w->path + len + 1, e->d_name, n + 1);
		if (full_match(w, nlen)) {
			r = found(w, dirfd(d), e->d_name);
			continue;
		}
		if (w->sc && w->sc->linking && (r = relinked(w, dirfd(d), e->d_name, e->d_type)))
			break;
		if (!dir || (w->sc ? false : !partial_match(w, nlen)))
			continue;
		if (depth >= (w->sc ? w->sc->max_depth : 8)) {
			struct stat st;

			/*
			 * Past the depth bound a directory is masked whole: a
			 * session could nest a credential directory that deep for
			 * the next session's scan to miss.
			 */
			if (w->sc && !w->sc->linking &&
			    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode)) {
				note(w->sc, 4,
				     "directories hidden whole past the depth bound, from ",
				     w->path);
				r = found(w, dirfd(d), e->d_name);
			}
			continue;
		}
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/*
		 * A directory the scan cannot read, the session cannot either;
		 * but its owner could chmod it back and read what the scan did
		 * not see: masked whole, it stays as unreadable as it is.
		 */
		if (fd < 0 && errno == EACCES && w->sc && !w->sc->linking)
			r = found(w, dirfd(d), e->d_name);
		if (fd >= 0)
			r = walk_dir(w, fd, nlen, depth + 1);
	}
	w->path[len] = '\0';
	closedir(d);
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
	if ((r = compile(p, w)) < 0)
		goto out;
	len = snprintf(w->path, sizeof(w->path), "%s", root);
	while (len > 1 && w->path[len - 1] == '/')
		w->path[--len] = '\0';
	if (len >= sizeof(w->path) - 1)
		goto out;
	if (ancestor_match(w, len)) {
		struct stat st;

		/* The whole grant is a credential entry (--ro ~/.ssh): masked whole. */
		if (!(sc && sc->linking) && lstat(w->path, &st) == 0)
			r = push(w, &st);
		goto out;
	}
	fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		r = walk_dir(w, fd, streq(w->path, "/") ? 0 : len, 0);
out:
	free(w->pats);
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

bool cred_path_denied(const struct bpfbox_policy *p, const char *path)
{
	struct walk *w = calloc(1, sizeof(*w));
	bool denied = false;
	size_t len;

	if (!w || compile(p, w) < 0) {
		free(w);
		return true; /* fail closed */
	}
	len = snprintf(w->path, sizeof(w->path), "%s", path);
	denied = len < sizeof(w->path) && ancestor_match(w, len);
	free(w->pats);
	free(w);
	return denied;
}
