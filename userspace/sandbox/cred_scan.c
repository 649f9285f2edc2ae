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

/* One "**" "/" pattern: its one or two components. */
struct pat {
	const char *c[2];
	size_t n[2];
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
		w->npats++;
	}
	return 0;
}

/* One component against one of a pattern: a name, "*SUFFIX", "PREFIX*" (validate.c). */
static bool comp_match(const char *s, size_t n, const char *pc, size_t pn)
{
	char name[NAME_MAX + 1], pat[NAME_MAX + 1];

	if (!memchr(pc, '*', pn) && !memchr(pc, '?', pn) && !memchr(pc, '[', pn))
		return n == pn && !memcmp(s, pc, n);
	if (pn > 1 && pc[0] == '*' && !memchr(pc + 1, '*', pn - 1) && !memchr(pc, '?', pn) &&
	    !memchr(pc, '[', pn))
		return n >= pn - 1 && !memcmp(s + n - (pn - 1), pc + 1, pn - 1);
	if (pn > 1 && pc[pn - 1] == '*' && !memchr(pc, '?', pn) && !memchr(pc, '[', pn) &&
	    !memchr(pc, '*', pn - 1))
		return n >= pn - 1 && !memcmp(s, pc, pn - 1);
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

		if (s == len || !comp_match(path + s, len - s, pt->c[i], pt->n[i]))
			return false;
		if (s == 0)
			return i == 0;
		len = s - 1;
	}
	return true;
}

static bool full_match(const struct walk *w, size_t len)
{
	for (size_t i = 0; i < w->npats; i++)
		if (tail_match(w->path, len, &w->pats[i], w->pats[i].m))
			return true;
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
	char what[48];

	if (sc->entries >= sc->max_entries) {
		snprintf(what, sizeof(what), "past %llu entries, from ",
			 (unsigned long long)sc->max_entries);
		note(sc, 1, what, w->path);
		return true;
	}
	if ((sc->entries & 255) == 0 && now_ns() > sc->deadline_ns) {
		snprintf(what, sizeof(what), "after %llu ms, from ",
			 (unsigned long long)sc->max_ms);
		note(sc, 2, what, w->path);
		sc->entries = sc->max_entries; /* the other trees: not begun */
		return true;
	}
	return false;
}

static int found(struct walk *w, int dfd, const char *name)
{
	struct stat st;

	/* Other names of the same file are not found by name: said (docs/SECURITY.md). */
	if (w->sc && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    st.st_nlink > 1) {
		size_t len = strlen(w->sc->links);

		snprintf(w->sc->links + len, sizeof(w->sc->links) - len, "%s%s (%ju links)",
			 len ? ", " : "", w->path, (uintmax_t)st.st_nlink);
	}
	return strv_contains(w->out, w->path) ? 0 : strv_push(w->out, w->path);
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
		if (!dir || (w->sc ? false : !partial_match(w, nlen)))
			continue;
		if (depth >= (w->sc ? w->sc->max_depth : 8)) {
			if (w->sc)
				note(w->sc, 4, "below the depth bound: ", w->path);
			continue;
		}
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == EACCES && w->sc)
			note(w->sc, 8, "in a directory the scan cannot read: ", w->path);
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
		/* The whole grant is a credential entry (--ro ~/.ssh): masked whole. */
		r = strv_contains(out, w->path) ? 0 : strv_push(out, w->path);
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
