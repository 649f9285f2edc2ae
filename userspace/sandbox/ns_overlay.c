// SPDX-License-Identifier: GPL-2.0
/*
 * The workspace of a change set (docs/runtime.md, "Change sets"): an
 * overlayfs made in the session's mount namespace, its lower the
 * workspace as the parent checked it (grants.c), its upper and work the
 * change set's directories bpfbox keeps outside the session (changes.c).
 * Every layer is given as this process's fd (/proc/self/fd/N), never by
 * a path resolved again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns.h"
#include "grants.h"
#include "../lib/util.h"

#ifndef __NR_fsopen
#define __NR_fsopen   430
#define __NR_fsconfig 431
#define __NR_fsmount  432
#endif
/* <linux/mount.h>, without its clashes with <sys/mount.h>. */
#define NS_FSOPEN_CLOEXEC      0x00000001
#define NS_FSCONFIG_SET_FLAG   0
#define NS_FSCONFIG_SET_STRING 1
#define NS_FSCONFIG_CMD_CREATE 6
#define NS_FSMOUNT_CLOEXEC     0x00000001
#define NS_MOUNT_ATTR_NOSUID   0x00000002
#define NS_MOUNT_ATTR_NODEV    0x00000004

static int set_str(int fs, const char *key, const char *value)
{
	return syscall(__NR_fsconfig, fs, NS_FSCONFIG_SET_STRING, key, value, 0) < 0 ? -errno : 0;
}

/*
 * A flag of the overlay. volatile: no sync of the upper at its end (the
 * unmount of a synced overlay syncs the whole upper file system); the
 * upper is read by bpfbox, never mounted again, so what volatile forbids
 * (a remount after a crash) never happens.
 */
static int set_flag(int fs, const char *key)
{
	return syscall(__NR_fsconfig, fs, NS_FSCONFIG_SET_FLAG, key, NULL, 0) < 0 ? -errno : 0;
}

int ns_overlay_make(int lower, int upper, int work, bool userns, const char **step)
{
	char l[32], u[32], w[32];
	int fs, mnt, r = 0;

	*step = "make the change set's overlay (overlayfs)";
	fs = syscall(__NR_fsopen, "overlay", NS_FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	snprintf(l, sizeof(l), "/proc/self/fd/%d", lower);
	snprintf(u, sizeof(u), "/proc/self/fd/%d", upper);
	snprintf(w, sizeof(w), "/proc/self/fd/%d", work);
	/*
	 * No redirects, no metacopy: a renamed directory is copied, a chmod
	 * copies the file whole, so the upper alone says what changed.
	 */
	if ((r = set_str(fs, "lowerdir", l)) < 0 || (r = set_str(fs, "upperdir", u)) < 0 ||
	    (r = set_str(fs, "workdir", w)) < 0 ||
	    (r = set_str(fs, "redirect_dir", "nofollow")) < 0 ||
	    (r = set_str(fs, "metacopy", "off")) < 0 || (r = set_str(fs, "index", "off")) < 0 ||
	    (r = set_flag(fs, "volatile")) < 0 || (userns && (r = set_flag(fs, "userxattr")) < 0))
		goto out;
	/*
	 * No UUID written into the upper's root at the mount (uuid=auto since
	 * 6.6): its ctime stays the one the set was taken with, the end's
	 * proof that nothing was written (changes_session_end). Unknown to a
	 * kernel before 5.12, which writes none: ignored there.
	 */
	if ((r = set_str(fs, "uuid", "off")) < 0 && r != -EINVAL)
		goto out;
	if (syscall(__NR_fsconfig, fs, NS_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		r = -errno;
		goto out;
	}
	mnt = syscall(__NR_fsmount, fs, NS_FSMOUNT_CLOEXEC,
		      NS_MOUNT_ATTR_NOSUID | NS_MOUNT_ATTR_NODEV);
	r = mnt < 0 ? -errno : mnt;
out:
	close(fs);
	return r;
}

int ns_overlay_open(const char *path, const struct grant_fds *gf, bool userns, const char **step)
{
	_cleanup_close_ int lower = -1, upper = -1, work = -1;

	lower = grant_reopen(path, gf->ws);
	if (lower < 0) {
		*step = grant_changed(path, lower);
		return lower;
	}
	upper = grant_reopen(gf->upper_path, gf->upper);
	if (upper < 0) {
		*step = grant_changed(gf->upper_path, upper);
		return upper;
	}
	work = grant_reopen(gf->work_path, gf->work);
	if (work < 0) {
		*step = grant_changed(gf->work_path, work);
		return work;
	}
	return ns_overlay_make(lower, upper, work, userns, step);
}
