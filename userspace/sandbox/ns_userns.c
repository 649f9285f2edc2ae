// SPDX-License-Identifier: GPL-2.0
/*
 * A user namespace of the session's (ns_mount.c, the child) or of a change
 * set's keeper (changes_warm.c): its user mapped to itself, and the
 * session's share of the user's inotify instances.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "ns.h"
#include "../lib/util.h"

/* The caller's user and group mapped to themselves, setgroups denied. 0 or -errno, *step said. */
int ns_map_ids(uid_t uid, gid_t gid, const char **step)
{
	char line[64];
	int r;

	*step = "write the user namespace's uid_map";
	snprintf(line, sizeof(line), "%u %u 1\n", uid, uid);
	if ((r = write_file_str("/proc/self/uid_map", line)) < 0)
		return r;
	*step = "deny setgroups in the user namespace";
	if ((r = write_file_str("/proc/self/setgroups", "deny")) < 0)
		return r;
	*step = "write the user namespace's gid_map";
	snprintf(line, sizeof(line), "%u %u 1\n", gid, gid);
	return write_file_str("/proc/self/gid_map", line);
}

/*
 * A session in a user namespace of its own gets a share of its user's
 * inotify instances (a quarter, at least 16) and watches (a half, at least
 * 8192). The kernel counts each in the namespace and for the user outside
 * it, so one session cannot take all of them from the user's other
 * sessions, whose disk monitors need an instance each and refuse to start
 * without one (docs/SECURITY.md, "Resource limits and monitors"). Where
 * /proc/sys cannot be written (read-only in some containers) the session
 * runs without its share: docs/limits.md.
 */
void ns_share_inotify(void)
{
	static const struct {
		const char *user, *ns;
		unsigned long div, min;
	} k[] = {
		{"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances",
		 4, 16},
		{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches", 2,
		 8192},
	};
	char buf[32];

	for (size_t i = 0; i < ARRAY_SIZE(k); i++) {
		unsigned long v, n;

		if (read_file_str(k[i].user, buf, sizeof(buf)) < 0)
			continue;
		v = strtoul(buf, NULL, 10);
		n = v / k[i].div < k[i].min ? k[i].min : v / k[i].div;
		snprintf(buf, sizeof(buf), "%lu", n < v ? n : v);
		write_file_str(k[i].ns, buf);
	}
}
