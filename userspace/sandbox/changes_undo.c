// SPDX-License-Identifier: GPL-2.0
/*
 * bpfbox undo (changes.h, docs/SECURITY.md "Undo"): a generation of a
 * workspace's history put back. Checked first, nothing written on a
 * refusal: each path the apply wrote must still be what it left (type,
 * mode, and the SHA-256 of a file's bytes or a symlink's target), a path
 * it deleted must still be absent, a directory it made must hold nothing
 * it did not; so a later session's apply, an editor or an undo of a newer
 * generation that is not undone shows as a refusal. Then a journal, and
 * the paths in reverse order (what is below a directory first): what the
 * apply added removed, what it replaced or deleted linked (or copied)
 * back from prev to a temporary name beneath the workspace's fd and
 * renamed into place, the same no-symlink rules as apply (changes_fs.c);
 * what it takes away goes to a trash freed after it. Every step can be
 * done again: an undo that was killed is finished by running it again.
 * The generation is removed at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changes_internal.h"
#include "grants.h"
#include "../lib/closer.h"
#include "../lib/util.h"

struct undo {
	struct change_list l;
	int ws, prev;		     /* the workspace; the generation's prev (-1: none) */
	struct ch_parent wsp, prevp; /* their last directories (the workspace's: the checks') */
	int trash; /* the generation's trash (-1: none): what the undo takes away */
	char dir[PATH_MAX + 32], id[64]; /* the generation's directory; the set it applied */
	size_t refused;
	bool resuming; /* an undo that was interrupted, done again */
	unsigned long done;
};

static void refuse(struct undo *u, const char *path, const char *why)
{
	fprintf(stderr, "bpfbox undo: refused: %s: %s\n", path, why);
	u->refused++;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, ((const struct change *)b)->path);
}

/* Whether path is one the apply wrote (not deleted). */
static bool written_by_apply(const struct undo *u, const char *path)
{
	const struct change *c = bsearch(&path, u->l.v, u->l.n, sizeof(*u->l.v), by_path);

	return c && c->kind != CHANGE_DELETED;
}

/* A directory the apply made: does it hold only what the apply put there? */
static bool dir_only_applied(const struct undo *u, int parent, const char *base, const char *path)
{
	DIR *d = dir_open_at(parent, base);
	char sub[PATH_MAX];
	struct dirent *de;
	bool only = true;

	if (!d)
		return false;
	while (only && (de = dir_next(d))) {
		only = (size_t)snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) <
			       sizeof(sub) &&
		       written_by_apply(u, sub);
	}
	closedir(d);
	return only;
}

/* Is c->path still what the apply left there? */
static void check_one(struct undo *u, const struct change *c)
{
	const char *base;
	uint8_t sum[SHA256_LEN];
	struct stat st;
	int p = ch_parent_at(&u->wsp, u->ws, c->path, &base);

	if (p < 0) {
		refuse(u, c->path, "its directory was removed, or replaced by a symlink, since");
		return;
	}
	if (fstatat(p, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (c->kind != CHANGE_DELETED)
			refuse(u, c->path, "removed since the apply");
		return;
	}
	if (c->kind == CHANGE_DELETED) {
		refuse(u, c->path, "made again since the apply deleted it");
		return;
	}
	if ((st.st_mode & S_IFMT) != (c->mode & S_IFMT) ||
	    (!S_ISLNK(st.st_mode) && (st.st_mode & 07777) != (c->mode & 07777))) {
		refuse(u, c->path, "its type or mode changed since the apply");
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (c->kind != CHANGE_MODE && !dir_only_applied(u, p, base, c->path))
			refuse(u, c->path, "holds something the apply did not make");
		return;
	}
	if (!c->summed || ch_hash_at(p, base, &st, sum) < 0 || memcmp(sum, c->sum, SHA256_LEN))
		refuse(u, c->path, "changed since the apply");
}

/*
 * What the workspace has at base (st), taken away by the undo, put in the
 * trash as entry i instead of freed here: ext4 frees a file's blocks as
 * its last name goes (0.5 ms a file on this host's disk, whose discard
 * option trims them), and the trash is freed after the undo, by a helper
 * (changes_undo). move: renamed there; else linked there, its name in
 * the workspace then replaced by the caller. True when it is there; best
 * effort: else it is freed in place, as before.
 */
static bool set_aside(struct undo *u, int p, const char *base, const struct stat *st, size_t i,
		      bool move)
{
	char name[32];

	if (u->trash < 0 || !(S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)))
		return false;
	snprintf(name, sizeof(name), "%zu", i);
	if (move)
		return renameat(p, base, u->trash, name) == 0;
	return linkat(p, base, u->trash, name, 0) == 0;
}

/*
 * prev's pbase (ps) to tmp in p: linked, a file or symlink with one name
 * (the generation, removed at the end, held it alone), else copied. 0 or
 * -errno (-EEXIST: tmp is there).
 */
static int put_back(int pp, const char *pbase, const struct stat *ps, int p, const char *tmp)
{
	if ((S_ISREG(ps->st_mode) || S_ISLNK(ps->st_mode)) && ps->st_nlink == 1) {
		if (linkat(pp, pbase, p, tmp, 0) == 0)
			return 0;
		if (errno == EEXIST)
			return -EEXIST;
	}
	return ch_copy_any(pp, pbase, p, tmp);
}

/*
 * prev's copy of c->path back into place; a directory there (or to go
 * there) removed first. A file or symlink with one name is linked back
 * (the generation, removed at the end, held it alone), else copied.
 */
static int restore(struct undo *u, int p, const char *base, const struct stat *cur, bool exists,
		   size_t i, const char *path)
{
	const char *pbase;
	char tmp[64], proc[PATH_MAX];
	struct stat ps;
	int r, pp = ch_parent_at(&u->prevp, u->prev, path, &pbase);

	if (pp < 0 || fstatat(pp, pbase, &ps, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	snprintf(tmp, sizeof(tmp), ".bpfbox-undo-%zu", i);
	/* One left by an undo that was killed (no set holds such a name): removed, and again. */
	if ((r = put_back(pp, pbase, &ps, p, tmp)) == -EEXIST) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", p, tmp);
		rm_tree(proc);
		r = put_back(pp, pbase, &ps, p, tmp);
	}
	if (r < 0)
		return r;
	if (exists && (S_ISDIR(cur->st_mode) || S_ISDIR(ps.st_mode)) &&
	    (r = ch_remove_at(p, base, cur)) < 0)
		return r;
	if (exists)
		set_aside(u, p, base, cur, i, false);
	return renameat(p, tmp, p, base) < 0 ? -errno : 0;
}

static int undo_one(struct undo *u, const struct change *c, size_t i)
{
	/* Opened for each path, never kept: a directory moved under the undo fails the next. */
	_cleanup_close_ int fd = -1, p = -1;
	const char *base;
	struct stat st;
	bool exists;
	int r;

	p = ch_parent_of(u->ws, c->path, &base);
	if (p == -ENOENT && c->kind == CHANGE_ADDED)
		return 0; /* below an added directory removed by an undo that was killed */
	if (p < 0)
		return p;
	exists = fstatat(p, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (c->kind == CHANGE_ADDED)
		return !exists || set_aside(u, p, base, &st, i, true) ? 0
								      : ch_remove_at(p, base, &st);
	if (u->prev >= 0) {
		r = restore(u, p, base, &st, exists, i, c->path);
		if (r != -ENOENT)
			return r;
	}
	/* Nothing kept: a directory's mode, or a node apply did not copy. */
	if (c->kind != CHANGE_MODE || !exists || !S_ISDIR(st.st_mode))
		return 0;
	fd = openat(p, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 || fchmod(fd, c->old_mode & 07777) < 0 ? -errno : 0;
}

/* The generation to undo and its workspace; 0 or the exit code (said). */
static int open_gen(struct undo *u, const char *workspace, unsigned long *gen, char *hist,
		    size_t size)
{
	struct changes_gen g;
	struct changes_gen *v;
	struct stat st;
	size_t n;
	int r = changes_history_dir(workspace, hist, size);

	if (r < 0 || (r = changes_history_list(workspace, &v, &n)) < 0) {
		fprintf(stderr, "bpfbox undo: cannot read the history of %s: %s\n", workspace,
			strerror(-r));
		return 1;
	}
	if (!*gen && n)
		*gen = v[n - 1].n;
	free(v);
	if (!*gen || ch_gen_read(hist, *gen, &g) < 0) {
		if (*gen)
			fprintf(stderr,
				"bpfbox undo: %s has no generation %lu (bpfbox undo %s --list)\n",
				workspace, *gen, workspace);
		else
			fprintf(stderr, "bpfbox undo: %s has no history (nothing applied)\n",
				workspace);
		return CHANGES_EXIT_UNKNOWN;
	}
	u->ws = path_open_exact(workspace, O_DIRECTORY);
	if (u->ws < 0 || fstat(u->ws, &st) < 0 || st.st_dev != g.ws_dev || st.st_ino != g.ws_ino ||
	    !streq(g.workspace, workspace)) {
		fprintf(stderr,
			"bpfbox undo: the workspace %s is not the directory generation %lu was "
			"applied to (moved or replaced since); nothing written\n",
			workspace, *gen);
		return 1;
	}
	snprintf(u->dir, sizeof(u->dir), "%s/%lu", hist, *gen);
	snprintf(u->id, sizeof(u->id), "%s", g.id);
	return 0;
}

static int undo_gen(struct undo *u, const char *workspace, unsigned long gen)
{
	char path[PATH_MAX + 48];
	int r;

	snprintf(path, sizeof(path), "%s/paths", u->dir);
	if ((r = ch_paths_read(path, &u->l)) < 0) {
		fprintf(stderr, "bpfbox undo: cannot read %s: %s\n", path, strerror(-r));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/prev", u->dir);
	u->prev = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/journal", u->dir);
	u->resuming = access(path, F_OK) == 0;
	for (size_t i = 0; i < u->l.n && !u->resuming; i++)
		check_one(u, &u->l.v[i]);
	if (u->refused) {
		fprintf(stderr,
			"bpfbox undo: %zu path%s changed since generation %lu was applied; "
			"nothing written\n",
			u->refused, u->refused == 1 ? "" : "s", gen);
		return CHANGES_EXIT_CONFLICT;
	}
	ch_parent_drop(&u->wsp); /* the checks' only */
	if (!u->resuming) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd < 0 || write(fd, "checked\n", 8) != 8 || fsync(fd) < 0) {
			fprintf(stderr, "bpfbox undo: cannot write %s: %s; nothing written\n", path,
				strerror(errno));
			fd_close(&fd);
			return 1;
		}
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/trash", u->dir);
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		u->trash = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (size_t i = u->l.n; i-- > 0;) {
		ch_fault_step(&u->done);
		if ((r = undo_one(u, &u->l.v[i], i)) < 0) {
			fprintf(stderr,
				"bpfbox undo: cannot restore %s: %s; stopped, run 'bpfbox undo %s "
				"%lu' again to finish\n",
				u->l.v[i].path, strerror(-r), workspace, gen);
			return 1;
		}
	}
	return 0;
}

/*
 * The generation's trash out of it, as ".trash-ID" in the history, for a
 * helper that outlives bpfbox to free (lib/closer.h); the same helper
 * sweeps a ".trash-ID" a killed one left. Without a helper it is freed
 * here (closer_begin, or below), or with the generation.
 */
static void trash_later(struct undo *u, const char *hist)
{
	static struct closer end;
	char from[PATH_MAX + 96], to[80];
	_cleanup_close_ int hfd = -1;

	fd_close(&u->trash);
	snprintf(from, sizeof(from), "%s/trash", u->dir);
	snprintf(to, sizeof(to), ".trash-%s", u->id);
	hfd = open(hist, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (hfd < 0 || strlen(u->id) != 32 || renameat(AT_FDCWD, from, hfd, to) < 0)
		return; /* it goes with the generation */
	if (closer_remove(&end, hfd, to) < 0) {
		snprintf(from, sizeof(from), "%s/%s", hist, to);
		rm_tree(from);
		return;
	}
	closer_sweep(&end, hfd, ".trash-", "");
	end.nowait = true;
	closer_begin(&end, NULL, 0);
	closer_end(&end);
}

int changes_undo(const char *workspace, unsigned long gen)
{
	struct undo u = {.ws = -1, .prev = -1, .trash = -1, .wsp.fd = -1, .prevp.fd = -1};
	char hist[PATH_MAX];
	int lock, code;

	if ((code = changes_history_dir(workspace, hist, sizeof(hist))) < 0) {
		fprintf(stderr, "bpfbox undo: no change sets' directory: %s\n", strerror(-code));
		return 1;
	}
	if (access(hist, F_OK) < 0) {
		fprintf(stderr, "bpfbox undo: %s has no history (nothing applied)\n", workspace);
		return CHANGES_EXIT_UNKNOWN;
	}
	if ((lock = ch_history_lock(hist)) < 0) {
		fprintf(stderr, "bpfbox undo: cannot lock %s: %s\n", hist, strerror(-lock));
		return 1;
	}
	code = open_gen(&u, workspace, &gen, hist, sizeof(hist));
	if (!code)
		code = undo_gen(&u, workspace, gen);
	if (!code) {
		trash_later(&u, hist);
		ch_gen_drop(hist, gen);
		printf("restored %s to before generation %lu (%zu path%s)\n", workspace, gen, u.l.n,
		       u.l.n == 1 ? "" : "s");
	}
	change_list_free(&u.l);
	fd_close(&u.trash);
	ch_parent_drop(&u.wsp);
	ch_parent_drop(&u.prevp);
	fd_close(&u.ws);
	fd_close(&u.prev);
	close(lock);
	return code;
}
