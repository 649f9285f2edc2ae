// SPDX-License-Identifier: GPL-2.0
/*
 * A change set written into its workspace (changes.h, docs/SECURITY.md
 * "Applying a change set"). Everything is checked before the first
 * write: each path the apply would write or remove must not have changed
 * in the workspace since the session started (its ctime is before the
 * set's start), and the set holds only files, directories and symlinks,
 * none set-uid or set-gid. Then a journal goes into the set's directory,
 * and each path is written through its parent opened beneath the
 * workspace without following any symlink (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): a file (linked from the upper
 * where it can be, else copied) or symlink to a temporary name renamed
 * into place, what it replaces or deletes kept in ROOT/ID/prev first
 * (linked where it can be, else copied) and its name unlinked just
 * before. Every step can be done again: an apply that was
 * killed is finished by running it again (the journal says the checks
 * were passed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "changes_internal.h"
#include "grants.h"
#include "../lib/util.h"

struct apply {
	struct changes_set *cs;
	int ws, upper;
	struct ch_parent wsp, upp; /* the workspace's (the checks'), the upper's */
	char prev[PATH_MAX + 16];
	char prevdir[PATH_MAX + 32]; /* the last directory of prev made */
	size_t refused;
	bool resuming;	    /* an apply that was interrupted, done again */
	unsigned long done; /* writes, for the fault hook (ch_fault_step) */
};

static void refuse(struct apply *a, const char *path, const char *why)
{
	fprintf(stderr, "bpfbox apply: refused: %s: %s\n", path, why);
	a->refused++;
}

/* A directory of the workspace to be removed: anything in it changed since the start? */
static bool tree_changed(int dfd, int64_t start_ns, int depth)
{
	struct dirent *de;
	bool changed = false;
	DIR *d;

	if (depth > 256 || !(d = dir_open_at(dfd, ".")))
		return true;
	while (!changed && (de = dir_next(d))) {
		struct stat st;

		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    ch_changed_since(&st, start_ns)) {
			changed = true;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			changed = sub < 0 || tree_changed(sub, start_ns, depth + 1);
			fd_close(&sub);
		}
	}
	closedir(d);
	return changed;
}

/* Every check, before anything is written. */
static void check_one(struct apply *a, const struct change *c, bool resuming)
{
	mode_t m = c->mode;
	const char *base;
	struct stat st;
	int p;

	if (c->kind != CHANGE_DELETED && !S_ISREG(m) && !S_ISDIR(m) && !S_ISLNK(m)) {
		refuse(a, c->path,
		       "not a file, directory or symlink (a device node, fifo or socket)");
		return;
	}
	if (c->kind != CHANGE_DELETED && !S_ISDIR(m) && (m & (S_ISUID | S_ISGID))) {
		refuse(a, c->path, "set-uid or set-gid");
		return;
	}
	base = strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path;
	if (!strncmp(base, ".bpfbox-apply-", 14) || !strncmp(base, ".bpfbox-undo-", 13)) {
		refuse(a, c->path, "a name apply and undo give their temporary files");
		return;
	}
	if (resuming)
		return;
	p = ch_parent_at(&a->wsp, a->ws, c->path, &base);
	if (p == -ENOENT || p == -ENOTDIR)
		return; /* below a directory the set adds, in place of nothing or of a file */
	if (p < 0) {
		refuse(a, c->path,
		       p == -ELOOP || p == -EXDEV
			       ? "a symlink or a mount on its path in the workspace"
			       : strerror(-p));
		return;
	}
	if (fstatat(p, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (ch_changed_since(&st, a->cs->start_ns))
			refuse(a, c->path, "changed in the workspace since the session started");
		else if (S_ISDIR(st.st_mode) && (c->kind == CHANGE_DELETED || !S_ISDIR(m))) {
			int sub = open_beneath(p, base, O_PATH | O_DIRECTORY);

			if (sub < 0 || tree_changed(sub, a->cs->start_ns, 0))
				refuse(a, c->path,
				       "something below it changed in the workspace since "
				       "the session started");
			fd_close(&sub);
		}
	}
}

/*
 * What the workspace has at path (st: its lstat), kept in ROOT/ID/prev
 * before it is replaced (once): a file or symlink with one name, neither
 * set-uid nor set-gid, linked there (it loses its workspace name next;
 * prev holds it alone; a link is made whole or not at all), else copied
 * (without those bits) to a temporary name renamed there.
 */
static int keep(struct apply *a, int parent, const char *base, const char *path,
		const struct stat *st)
{
	char to[PATH_MAX + 32], tmp[PATH_MAX + 64];
	struct stat at;
	size_t dir;
	int r;

	if ((size_t)snprintf(to, sizeof(to), "%s/%s", a->prev, path) >= sizeof(to))
		return -ENAMETOOLONG;
	dir = strrchr(to, '/') - to; /* its parents made once a directory */
	if (strncmp(a->prevdir, to, dir) || a->prevdir[dir]) {
		if ((r = mkdir_parents(to, 0700)) < 0)
			return r;
		snprintf(a->prevdir, sizeof(a->prevdir), "%.*s", (int)dir, to);
	}
	if ((S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) && st->st_nlink == 1 &&
	    !(st->st_mode & (S_ISUID | S_ISGID))) {
		if (linkat(parent, base, AT_FDCWD, to, 0) == 0 || errno == EEXIST)
			return 0; /* EEXIST: kept by an apply that was interrupted */
		if (errno != EXDEV && errno != EPERM && errno != EMLINK)
			return -errno;
	}
	if (lstat(to, &at) == 0)
		return 0; /* kept by an apply that was interrupted */
	snprintf(tmp, sizeof(tmp), "%s.bpfbox-tmp", to);
	if (a->resuming)
		rm_tree(tmp);
	if ((r = ch_copy_any(parent, base, AT_FDCWD, tmp)) < 0)
		return r;
	return rename(tmp, to) < 0 ? -errno : 0;
}

/*
 * The overlay's own attributes of an upper file removed (the origin of a
 * copied-up file: trusted.overlay., user.overlay. in a user namespace):
 * 0 when the file has no other attribute left, 1 when it has (or they
 * cannot be removed).
 */
static int overlay_xattrs_off(int fd)
{
	char names[1024];
	ssize_t n = flistxattr(fd, names, sizeof(names));

	if (n < 0)
		return 1;
	for (char *x = names; x < names + n; x += strlen(x) + 1)
		if (strncmp(x, "trusted.overlay.", 16) && strncmp(x, "user.overlay.", 13))
			return 1;
	for (char *x = names; x < names + n; x += strlen(x) + 1)
		if (fremovexattr(fd, x) < 0)
			return 1;
	return 0;
}

/*
 * The session's file (open as in) linked to tmp in parent, in place of a
 * copy: 0 linked, 1 to be copied, < 0 an error. Only a file with no other
 * name and no extended attribute but the overlay's (a copy carries none:
 * a file capability or a label the session set stays behind), on the
 * workspace's own file system; its owner and mode are the upper's
 * already. The upper keeps its name until the set is finished, so an
 * apply killed after this one is done again (by a copy: the file has two
 * names then).
 */
static int link_tmp(struct apply *a, int in, const struct stat *st, int parent, const char *tmp,
		    bool replace)
{
	char proc[64];

	/* Its times now, as a copy's: a build that ran since the session sees it as new. */
	if (st->st_nlink != 1 || st->st_dev != a->cs->ws_dev || overlay_xattrs_off(in) ||
	    futimens(in, NULL) < 0)
		return 1;
	if (replace && unlinkat(parent, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", in);
	if (linkat(AT_FDCWD, proc, parent, tmp, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return errno == EXDEV || errno == EPERM || errno == ENOENT || errno == EMLINK ? 1 : -errno;
}

/*
 * The session's file or symlink at c->path, to tmp in parent, with its
 * mode and owner; its SHA-256 into c (what undo checks is still there).
 * 0; or 1: at direct instead (not NULL), where it is made whole or not
 * at all (a link, a symlink; a copy goes to tmp), what direct holds
 * unlinked just before when replace (a file or symlink, kept in prev).
 */
static int write_tmp(struct apply *a, struct change *c, int parent, const char *tmp,
		     const char *direct, bool replace)
{
	struct sha256 sum;
	int r;

	const char *ubase;
	int up = ch_parent_at(&a->upp, a->upper, c->path, &ubase);
	_cleanup_close_ int in = -1, out = -1;
	struct stat st;

	if (up < 0)
		return up;
	if (S_ISLNK(c->mode)) {
		char target[PATH_MAX];
		ssize_t n;

		if (fstatat(up, ubase, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode))
			return -EPERM; /* changed since the checks: never written */
		if ((n = readlinkat(up, ubase, target, sizeof(target) - 1)) < 0)
			return -errno;
		target[n] = '\0';
		if (direct && replace && unlinkat(parent, direct, 0) < 0 && errno != ENOENT)
			return -errno;
		if (symlinkat(target, parent, direct ? direct : tmp) < 0)
			return -errno;
		if (geteuid() == 0 && fchownat(parent, direct ? direct : tmp, st.st_uid, st.st_gid,
					       AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		sha256(target, n, c->sum);
		c->summed = true;
		return direct ? 1 : 0;
	}
	/* Not blocking on a fifo put there since: fstat refuses it. */
	in = openat(up, ubase, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (st.st_mode & (S_ISUID | S_ISGID)))
		return -EPERM; /* changed since the checks: never written */
	sha256_init(&sum);
	if ((r = link_tmp(a, in, &st, parent, direct ? direct : tmp, direct && replace)) <= 0) {
		if (r < 0 || (r = ch_copy_data(in, -1, &sum)) < 0)
			return r;
		sha256_final(&sum, c->sum);
		c->summed = true;
		return direct ? 1 : 0;
	}
	out = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	if ((r = ch_copy_data(in, out, &sum)) < 0)
		return r;
	if ((geteuid() == 0 && fchown(out, st.st_uid, st.st_gid) < 0) ||
	    fchmod(out, st.st_mode & 01777) < 0)
		return -errno;
	sha256_final(&sum, c->sum);
	c->summed = true;
	return 0;
}

/* A directory of the session's at c->path: made (or its mode set). */
static int write_dir(const struct change *c, int parent, const char *base, bool exists)
{
	_cleanup_close_ int fd = -1;

	if (!exists && mkdirat(parent, base, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, c->mode & 07777) < 0)
		return -errno;
	return 0;
}

static int apply_one(struct apply *a, struct change *c, size_t i)
{
	const char *base;
	/* Opened for each path, never kept: a directory moved under the apply fails the next. */
	_cleanup_close_ int p = ch_parent_of(a->ws, c->path, &base);
	char tmp[64];
	struct stat st;
	bool exists, replace;
	int r = 0;

	if (p < 0)
		return p;
	exists = fstatat(p, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
	/*
	 * What is there goes to prev first (an added path there is this apply's
	 * own, written before it was killed); a directory a file or symlink
	 * replaces is removed.
	 */
	if (exists && c->kind != CHANGE_ADDED &&
	    (c->kind == CHANGE_DELETED || !S_ISDIR(c->mode) || !S_ISDIR(st.st_mode)) &&
	    (r = keep(a, p, base, c->path, &st)) < 0)
		return r;
	if (exists && (c->kind == CHANGE_DELETED || S_ISDIR(st.st_mode) != S_ISDIR(c->mode)) &&
	    (r = ch_remove_at(p, base, &st)) < 0)
		return r;
	if (c->kind == CHANGE_DELETED)
		return 0;
	if (S_ISDIR(c->mode))
		return write_dir(c, p, base, exists && S_ISDIR(st.st_mode));
	/*
	 * The file or symlink there (kept in prev) unlinked just before the
	 * session's is put in its place, never renamed over: ext4 writes out
	 * a file renamed over another (auto_da_alloc), 0.1 ms a file with the
	 * session's data unwritten yet. A link or a symlink is made there at
	 * once, whole or not at all; a copy is made under a temporary name
	 * and renamed there. Killed between the two, the apply run again
	 * writes the path.
	 */
	replace = exists && !S_ISDIR(st.st_mode);
	snprintf(tmp, sizeof(tmp), ".bpfbox-apply-%zu", i);
	r = write_tmp(a, c, p, tmp, base, replace);
	/* One left by an apply that was killed (no set holds such a name): removed, and again. */
	if (r == -EEXIST && unlinkat(p, tmp, 0) == 0)
		r = write_tmp(a, c, p, tmp, base, replace);
	if (r == 1)
		return 0;
	if (!r && replace && unlinkat(p, base, 0) < 0 && errno != ENOENT)
		r = -errno;
	if (!r && renameat(p, tmp, p, base) < 0)
		r = -errno;
	if (r)
		unlinkat(p, tmp, 0);
	return r;
}

/*
 * The set's prev and list made a generation of the workspace's history,
 * the manifest says applied, upper and work removed, the journal last.
 */
static int finish(struct apply *a, const char *journal)
{
	struct changes_set *cs = a->cs;
	char path[PATH_MAX + 16];
	int r;

	if ((r = changes_history_commit(cs)) < 0)
		return r;
	snprintf(cs->state, sizeof(cs->state), "applied");
	if ((r = changes_manifest_write(cs, true)) < 0)
		return r;
	changes_remove_work(cs);
	/*
	 * Here, not by a helper after: the last name of an upper's file that
	 * apply linked into the workspace goes now, and with it that inode's
	 * ctime moves; later, it would be after the next session's start, and
	 * that session's apply would refuse the file as changed since.
	 */
	snprintf(path, sizeof(path), "%s/upper", cs->dir);
	rm_tree(path);
	unlink(journal);
	changes_remove_parents(cs);
	return 0;
}

/* The workspace, and the upper unless the writes are done (written). */
static int open_dirs(struct apply *a, bool written)
{
	struct changes_set *cs = a->cs;
	char upper[PATH_MAX + 16];
	struct stat st;

	a->ws = path_open_exact(cs->workspace, O_DIRECTORY);
	if (a->ws < 0 || fstat(a->ws, &st) < 0 || st.st_dev != cs->ws_dev ||
	    st.st_ino != cs->ws_ino) {
		fprintf(stderr,
			"bpfbox apply: the workspace %s is not the directory the session ran on "
			"(moved or replaced since); nothing written\n",
			cs->workspace);
		return -ESTALE;
	}
	snprintf(a->prev, sizeof(a->prev), "%s/prev", cs->dir);
	if (written)
		return 0;
	snprintf(upper, sizeof(upper), "%s/upper", cs->dir);
	a->upper = path_open_exact(upper, O_DIRECTORY);
	if (a->upper < 0) {
		fprintf(stderr, "bpfbox apply: cannot open %s: %s\n", upper, strerror(-a->upper));
		return a->upper;
	}
	return 0;
}

/* The journal's step: "checked" (the checks passed, the list kept), "written". */
static int journal_add(const char *journal, const char *step)
{
	int fd = open(journal, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600), r = 0;
	size_t n = strlen(step);

	if (fd < 0)
		return -errno;
	if (write(fd, step, n) != (ssize_t)n || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	close(fd);
	return r;
}

/* The journal's last step: "" (none), "checked" or "written". */
static const char *journal_step(const char *journal)
{
	char buf[64] = "";
	int fd = open(journal, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);

	fd_close(&fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, "written\n") ? "written" : strstr(buf, "checked\n") ? "checked" : "";
}

/* The list of the set: scanned, or the journal's (an apply that was interrupted). */
static int list_of(struct apply *a, bool resuming, struct change_list *l)
{
	char why[PATH_MAX + 128], path[PATH_MAX + 16];
	int r;

	snprintf(path, sizeof(path), "%s/paths", a->cs->dir);
	if (resuming) {
		r = ch_paths_read(path, l);
		if (r < 0)
			fprintf(stderr, "bpfbox apply: cannot read %s: %s\n", path, strerror(-r));
		return r;
	}
	r = changes_scan(a->cs, l, why, sizeof(why));
	if (r < 0)
		fprintf(stderr, "bpfbox apply: %s; nothing written\n", why);
	return r;
}

static int write_all(struct apply *a, struct change_list *l, const char *journal)
{
	char path[PATH_MAX + 16];
	int r;

	ch_parent_drop(&a->wsp); /* the checks' only */
	for (size_t i = 0; i < l->n; i++) {
		ch_fault_step(&a->done);
		if ((r = apply_one(a, &l->v[i], i)) < 0) {
			fprintf(stderr,
				"bpfbox apply: cannot write %s: %s; stopped, run 'bpfbox apply %s' "
				"again to finish\n",
				l->v[i].path, strerror(-r), a->cs->id);
			return r;
		}
	}
	/* What the apply left, for undo; then "written": no write again after a crash. */
	snprintf(path, sizeof(path), "%s/paths", a->cs->dir);
	if ((r = ch_paths_write(path, l)) < 0 || (r = journal_add(journal, "written\n")) < 0)
		fprintf(stderr, "bpfbox apply: cannot write %s: %s\n", path, strerror(-r));
	return r;
}

int changes_apply(struct changes_set *cs)
{
	struct apply a = {.cs = cs, .ws = -1, .upper = -1, .wsp.fd = -1, .upp.fd = -1};
	char journal[PATH_MAX + 16], path[PATH_MAX + 16];
	struct change_list l = {0};
	const char *step;
	bool locked = cs->lock_fd < 0;
	int r, code = 1;

	if (streq(cs->state, "applied")) {
		fprintf(stderr, "bpfbox apply: change set %s was applied already\n", cs->id);
		return 0;
	}
	if (streq(cs->state, "chained")) {
		fprintf(stderr,
			"bpfbox apply: change set %s was continued by %s (--changes-from), which "
			"holds its changes; apply or discard that one\n",
			cs->id, cs->child);
		return CHANGES_EXIT_CONFLICT;
	}
	if (locked && (r = changes_lock(cs)) < 0) {
		fprintf(stderr, "bpfbox apply: change set %s %s; nothing written\n", cs->id,
			r == -EWOULDBLOCK ? "is in use by a running session" : strerror(-r));
		return r == -EWOULDBLOCK ? CHANGES_EXIT_BUSY : 1;
	}
	snprintf(journal, sizeof(journal), "%s/journal", cs->dir);
	step = journal_step(journal);
	if (open_dirs(&a, streq(step, "written")) < 0 ||
	    (!streq(step, "written") && list_of(&a, step[0], &l) < 0))
		goto out;
	a.resuming = step[0];
	for (size_t i = 0; i < l.n; i++)
		check_one(&a, &l.v[i], a.resuming);
	if (a.refused) {
		fprintf(stderr,
			"bpfbox apply: %zu path%s refused; nothing written (bpfbox changes %s)\n",
			a.refused, a.refused == 1 ? "" : "s", cs->id);
		code = CHANGES_EXIT_CONFLICT;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/paths", cs->dir);
	if (!step[0] &&
	    ((r = ch_paths_write(path, &l)) < 0 || (r = journal_add(journal, "checked\n")) < 0)) {
		fprintf(stderr, "bpfbox apply: cannot write %s: %s; nothing written\n", journal,
			strerror(-r));
		goto out;
	}
	if (!streq(step, "written") && write_all(&a, &l, journal) < 0)
		goto out;
	if ((r = finish(&a, journal)) < 0) {
		fprintf(stderr, "bpfbox apply: cannot record %s in the history: %s; run it again\n",
			cs->dir, strerror(-r));
		goto out;
	}
	code = 0;
out:
	change_list_free(&l);
	ch_parent_drop(&a.wsp);
	ch_parent_drop(&a.upp);
	fd_close(&a.ws);
	fd_close(&a.upper);
	if (locked)
		changes_unlock(cs);
	return code;
}
