// SPDX-License-Identifier: GPL-2.0
/*
 * The masks of the session's view (docs/SECURITY.md, "Credential entries
 * without BPF LSM"): an empty mode-0 file or directory of /dev's read-only
 * tmpfs bound over each absolute deny path and each credential entry the
 * plan found in the grants (cred_scan.c), once the grants are put back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns.h"
#include "ns_internal.h"
#include "../policy/policy.h"
#include "../lib/util.h"

/*
 * Absolute deny paths and the credential entries found in the grants
 * (session_view_policy): an empty mode-0 file or directory bound over
 * each, after the grants are put back, so each is on top at its path.
 * The session cannot unmount one (seccomp), nor rename or unlink it
 * (EBUSY: a mount point), nor link it elsewhere (EXDEV: the mask is on
 * /dev's tmpfs).
 */
static int mask_deny_paths(const struct bpfbox_policy *p, const char **step)
{
	for (size_t i = 0; i < p->deny_paths.n; i++) {
		const char *path = p->deny_paths.v[i];
		struct stat st;

		/* Patterns ("**" "/.env") are not paths; a found name may hold a '*'. */
		if (path[0] != '/' || lstat(path, &st) < 0 || S_ISLNK(st.st_mode))
			continue;
		*step = path;
		if (mount(S_ISDIR(st.st_mode) ? "/dev/.bpfbox-mask-d" : "/dev/.bpfbox-mask-f", path,
			  NULL, MS_BIND, NULL) < 0)
			return -errno;
		/* A bind keeps its source's read-only flag: /dev is read-only by now. */
	}
	return 0;
}

/*
 * Whether rel below lower (the workspace under a change set's overlay) is
 * the file id names, reached without a symlink, a "..", or a mount.
 */
static bool lower_is(int lower, const char *rel, const uint64_t id[2])
{
	int fd = open_beneath(lower, rel, O_PATH);
	struct stat st;
	bool same;

	if (fd < 0)
		return false;
	same = fstat(fd, &st) == 0 && st.st_dev == id[0] && st.st_ino == id[1];
	close(fd);
	return same;
}

/*
 * The credential entries the plan found (cred_scan.c), each checked to be
 * the file the scan saw before its mask goes on: another session on the
 * same workspace that renamed a directory on the way, or put another file
 * in its place, fails this set-up rather than leave the file shown; the
 * mount goes on the fd opened here, never on a name resolved again.
 *
 * Under a change set's overlay (lower >= 0: the workspace itself, its
 * lower layer) an entry of the workspace is the overlay's view of the
 * file the scan saw, on the overlay's device: it is checked in the lower
 * at the same place, before the mask goes on and again after, so that a
 * swap made meanwhile fails the set-up too.
 */
static int mask_found(const struct ns_plan *n, const char *ws, int lower, const char **step)
{
	size_t wn = ws ? strlen(ws) : 0;
	char at[32];

	for (size_t i = 0; i < n->nmasks; i++) {
		const char *m = n->masks[i], *rel = NULL;
		struct stat st;
		int fd, r = 0;

		*step = m;
		if (lower >= 0 && wn && !strncmp(m, ws, wn) && m[wn] == '/' && m[wn + 1])
			rel = m + wn + 1;
		fd = open(m, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0)
			r = -errno;
		else if (st.st_dev == n->mask_ids[i][0] && st.st_ino == n->mask_ids[i][1])
			rel = NULL; /* the file itself: no overlay between */
		else if (!rel || !lower_is(lower, rel, n->mask_ids[i]))
			r = -ESTALE;
		snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
		if (!r && mount(S_ISDIR(st.st_mode) ? "/dev/.bpfbox-mask-d" : "/dev/.bpfbox-mask-f",
				at, NULL, MS_BIND, NULL) < 0)
			r = -errno;
		close(fd);
		if (!r && rel && !lower_is(lower, rel, n->mask_ids[i]))
			r = -ESTALE;
		if (r)
			return r;
	}
	return 0;
}

/*
 * The session's resolv.conf (ns_build_dev) over the host's: its name
 * server is the proxy's resolver, in its namespace. A resolv.conf that is a
 * symlink into a hidden tree (/run) does not resolve in the view: the C
 * library then asks 127.0.0.1 by itself.
 */
static int local_resolver(const char **step)
{
	*step = "/etc/resolv.conf";
	if (mount(NS_RESOLV_CONF, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int ns_mask(const struct ns_plan *n, const struct bpfbox_policy *p, int lower, const char **step)
{
	int r = mask_deny_paths(p, step);

	if (!r && n->proxy_port)
		r = local_resolver(step);
	return r < 0 ? r : mask_found(n, p->workspace, lower, step);
}
