/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What apply (changes_apply.c), the history (changes_history.c) and undo
 * (changes_undo.c) share: paths opened beneath the workspace without
 * following a symlink, files copied and hashed (changes_fs.c).
 */
#ifndef BPFBOX_CHANGES_INTERNAL_H
#define BPFBOX_CHANGES_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "changes.h"

/*
 * changes_warm.c: the set a keeper holds for workspace ws (fstat) and
 * cs->userns, taken
 * into cs->dir with its overlay (*mnt; the keeper's pidfd in
 * cs->warm_pidfd, its lock let go); 0, or -errno (-ENOENT: none kept)
 * with nothing taken.
 */
int ch_warm_take(struct changes_set *cs, const char *root, const struct stat *ws, int *upper,
		 int *work, int *mnt);
/*
 * A keeper's record (changes_warm.c): the symlink ".warm.DEV.INO.r|u" in
 * the sets' directory whose target is "PID:DIR:UPPER:WORK:MNT:NAME", the
 * keeper's pid, the numbers of its fds (W_*) and its set's name (".",
 * 32 hex digits, ".gone").
 */
#define WARM_NAME_LEN 38
enum { W_DIR, W_UPPER, W_WORK, W_MNT, W_FDS };
/* The record's path for workspace ws, in dir (a path, or /proc/self/fd/N); 0 or -ENAMETOOLONG. */
int ch_warm_record_path(char *buf, size_t size, const char *dir, const struct stat *ws,
			bool userns);
/* The record read: 0, -ENOENT (none), -EPROTO (not a record). */
int ch_warm_read(const char *root, const struct stat *ws, bool userns, pid_t *pid, int *fds,
		 char *name);
/*
 * The keeper the record names (pid, the number of its set's fd, the set's
 * name in root), checked to hold that set, this user's: its pidfd, and
 * with dir that fd (taken); or -errno (-EPERM: Yama refuses its fds,
 * -EPROTO: not that set, -ESRCH: gone).
 */
int ch_warm_keeper(const char *root, pid_t pid, int dir_at, const char *name, int *dir);
/*
 * The session end's helper asked to become the keeper of the next set
 * (root, ws: fds), and to tell the keeper cs came from (cs->warm_pidfd,
 * then closed here).
 */
struct closer;
void ch_warm_next(struct changes_set *cs, struct closer *end, int root, int ws);

/* The parent of path below root (O_PATH, open_beneath) and its last name. fd or -errno. */
int ch_parent_of(int root, const char *path, const char **base);
/*
 * The last directory opened below a root, kept for the next path: a set's
 * paths come a directory at a time. ch_parent_at is ch_parent_of through
 * it: the fd (its, not to be closed) or -errno, kept too. For bpfbox's
 * own trees (the upper, prev) and for the checks before any write; what
 * writes to the workspace opens each path's directory anew, so that one
 * moved or replaced by a symlink under it fails the next path.
 */
struct ch_parent {
	char dir[PATH_MAX];
	int fd; /* or -errno; -1: nothing kept */
};
int ch_parent_at(struct ch_parent *pc, int root, const char *path, const char **base);
void ch_parent_drop(struct ch_parent *pc);
/* in to out (when out >= 0); its SHA-256 into sum when not NULL. 0 or -errno. */
int ch_copy_data(int in, int out, struct sha256 *sum);
/*
 * name in dir (a file, symlink or tree, never followed) copied to to in
 * todir (made with O_EXCL, never followed): modes without set-uid and
 * set-gid on files, modification times, and as root the owners. A device
 * node, fifo or socket is not copied. 0 or -errno.
 */
int ch_copy_any(int dir, const char *name, int todir, const char *to);
/* name in parent removed (a directory with what it holds). 0 or -errno. */
int ch_remove_at(int parent, const char *base, const struct stat *st);
/* The SHA-256 of a file's bytes or a symlink's target (st: its lstat). 0 or -errno. */
int ch_hash_at(int dir, const char *name, const struct stat *st, uint8_t out[SHA256_LEN]);
/* The disk space a tree uses (st_blocks), without following symlinks. */
uint64_t ch_tree_bytes(int dir, const char *name);
/* BPFBOX_FAULT_APPLY_KILL_AFTER (docs/testing.md): SIGKILL before write n + 1. */
void ch_fault_step(unsigned long *done);
/*
 * BPFBOX_FAULT_TOUCH_BEFORE_START=PATH (docs/testing.md): a line written to
 * PATH just before `bpfbox run` takes the tick it started in (changes_clock.c).
 */
void ch_fault_touch(void);
/* The bound of a set's start: the tick bpfbox was started in (changes_clock.c). */
int64_t ch_start_bound(void);
/* Whether st changed at or after start_ns (its ctime). */
bool ch_changed_since(const struct stat *st, int64_t start_ns);
/*
 * A change list in a file (ROOT/ID/paths, a generation's paths): one
 * record per path, "K MODE OLD_MODE SUM PATH" ended by a NUL (a path may
 * hold a newline): K a, m, c or d (added, modified, mode, deleted), the
 * modes in octal with their type, SUM the SHA-256 in hex or "-".
 * Written to a temporary file renamed over. 0 or -errno.
 */
int ch_paths_write(const char *file, const struct change_list *l);
int ch_paths_read(const char *file, struct change_list *l);

/* changes_history.c: the history's directory made and locked (flock): fd or -errno. */
int ch_history_lock(const char *hist);
/* Generation n of the history hist, as its gen.json says. 0 or -ENOENT. */
int ch_gen_read(const char *hist, unsigned long n, struct changes_gen *g);
/* Generation n removed (renamed away first). */
void ch_gen_drop(const char *hist, unsigned long n);

/*
 * The set made ahead, taken into cs->dir: with mnt, the set and overlay a
 * keeper holds (ch_warm_take), else a spare (ch_spare_take).
 * 0, or -errno with nothing taken.
 */
int ch_take_ahead(struct changes_set *cs, const char *root, const struct stat *ws, int *upper,
		  int *work, int *mnt);
/*
 * changes_spare.c: a spare set taken for cs (cs->dir, not yet there) in
 * root, its upper made the workspace root's (ws) mode and owner, upper
 * and work opened as changes_create opens them. 0, or -errno: none was
 * there (-ENOENT), or it was not as the helper makes it (removed).
 */
int ch_spare_take(struct changes_set *cs, const char *root, const struct stat *ws, int *upper,
		  int *work);
#endif
