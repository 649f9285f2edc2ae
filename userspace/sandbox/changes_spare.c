// SPDX-License-Identifier: GPL-2.0
/*
 * A set's directories made ahead (docs/benchmarks.md section 10): the
 * helper that ends a review session (lib/closer.h) leaves a spare set,
 * ".spare.N" in the sets' directory with its empty upper and work, and
 * the next review session takes it with one rename instead of three
 * mkdirs on its start's path. A name that starts with a dot is never a
 * set's (changes_id_valid): no reader of sets sees a spare.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changes.h"
#include "changes_internal.h"
#include "grants.h"
#include "../lib/closer.h"
#include "../lib/util.h"

#define SPARE  ".spare."
#define SPARES 2 /* two sessions that start together each take one */

static const char *const set_dirs[] = {"upper", "work"};

/* The upper's root: the workspace root's mode and, as root, its owner. */
static int upper_as_workspace(int upper, const struct stat *ws)
{
	char self[40];
	struct stat st;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", upper);
	if (fstat(upper, &st) < 0)
		return -errno;
	/* Ours, as the helper made it (root's: the workspace's owner's): anything else was put there. */
	if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && geteuid() != 0))
		return -EPERM;
	/* The helper made it as the last session's workspace: mostly this one. */
	if ((st.st_mode & 07777) != (ws->st_mode & 07777) && chmod(self, ws->st_mode & 07777) < 0)
		return -errno;
	if (geteuid() == 0 && (st.st_uid != ws->st_uid || st.st_gid != ws->st_gid) &&
	    fchownat(upper, "", ws->st_uid, ws->st_gid, AT_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

int ch_spare_take(struct changes_set *cs, const char *root, const struct stat *ws, int *upper,
		  int *work)
{
	char from[PATH_MAX + 16], path[sizeof(cs->dir) + 8];
	int i, r;

	for (i = 0; i < SPARES; i++) {
		snprintf(from, sizeof(from), "%s/" SPARE "%d", root, i);
		if (!renameat2(AT_FDCWD, from, AT_FDCWD, cs->dir, RENAME_NOREPLACE))
			break;
	}
	if (i == SPARES)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/upper", cs->dir);
	*upper = path_open_exact(path, O_DIRECTORY);
	snprintf(path, sizeof(path), "%s/work", cs->dir);
	*work = path_open_exact(path, O_DIRECTORY);
	r = *upper < 0 ? *upper : *work < 0 ? *work : upper_as_workspace(*upper, ws);
	if (r < 0) {
		/* Not a spare as the helper makes it: gone, and the set made afresh. */
		fd_close(upper);
		fd_close(work);
		changes_remove(cs);
	}
	return r;
}

int ch_take_ahead(struct changes_set *cs, const char *root, const struct stat *ws, int *upper,
		  int *work, int *mnt)
{
	if (mnt && !ch_warm_take(cs, root, ws, upper, work, mnt))
		return 0;
	return ch_spare_take(cs, root, ws, upper, work);
}

/* The sets' directory of cs into root (size bytes): 0, or -ENAMETOOLONG. */
static int root_of(const struct changes_set *cs, char *root, size_t size)
{
	const char *slash = strrchr(cs->dir, '/');

	if (!slash || slash == cs->dir || slash - cs->dir >= (long)size)
		return -ENAMETOOLONG;
	snprintf(root, size, "%.*s", (int)(slash - cs->dir), cs->dir);
	return 0;
}

/*
 * The set once the session has ended, off its path: an empty one out of
 * sight at once, a rename to ".ID.gone" (never a set's name), then given
 * to the session end's helper (lib/closer.h, one for the whole end), with
 * copies of the caller's fds of its directories, so that neither the
 * removals nor the last closes (ext4 frees the inodes then; root's
 * overlay is torn down) are the session's. The same helper sweeps what
 * killed runs left and makes the next session's spare, under the name it
 * has just removed, its upper as this session's. The set is unlocked
 * first: the helper's copy of our fds, which it drops a moment later, is
 * then without the lock's (an apply just after our exit would find the
 * set in use). Whatever step fails, an empty set is removed here instead,
 * never left.
 */
void changes_session_done(struct changes_set *cs, const int *hold, size_t n, int ws,
			  struct closer *end)
{
	char root[sizeof(cs->dir) - 80], gone[80];
	_cleanup_close_ int dfd = -1;
	struct stat up;

	changes_unlock(cs);
	if (root_of(cs, root, sizeof(root)) < 0 || !end) {
		if (!cs->kept)
			changes_remove(cs);
		return;
	}
	snprintf(gone, sizeof(gone), ".%s.gone", cs->id);
	dfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); /* read: the sweep */
	if (!cs->kept && (dfd < 0 || renameat(dfd, cs->id, dfd, gone) < 0)) {
		changes_remove(cs); /* not renamed: by its own name */
		return;
	}
	if (dfd < 0)
		return;
	if ((!cs->kept && closer_remove(end, dfd, gone) < 0) || closer_hold(end, hold, n) < 0) {
		if (!cs->kept) {
			snprintf(cs->dir, sizeof(cs->dir), "%s/%s", root, gone);
			changes_remove(cs);
		}
		return;
	}
	/* Neither is needed: what a killed helper or keeper left (".ID.gone" a minute old), the spare. */
	closer_sweep(end, dfd, ".", ".gone");
	if (!closer_prepare(end, dfd, gone, SPARE, SPARES, set_dirs, ARRAY_SIZE(set_dirs)) && n &&
	    fstat(hold[0], &up) == 0)
		closer_prepare_owner(end, up.st_mode & 07777, geteuid() ? -1 : (int)up.st_uid,
				     (int)up.st_gid);
	ch_warm_next(cs, end, dfd, ws);
}

int changes_session_running(struct changes_set *cs)
{
	int r;

	/*
	 * Locked before the manifest: an apply or discard needs it, so none
	 * can act on the set before the lock. A chain's were taken before its
	 * start.
	 */
	if (cs->lock_fd >= 0 || (r = changes_lock(cs)) < 0)
		return cs->lock_fd >= 0 ? 0 : r;
	return changes_manifest_write(cs, false);
}
