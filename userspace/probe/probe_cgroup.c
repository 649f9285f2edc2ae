// SPDX-License-Identifier: GPL-2.0
/*
 * cgroups: whether v2 is mounted and with which controllers, whether a
 * scratch cgroup freezes and has cgroup.kill, and how a session of this
 * user would be limited (memory, pids, cpu).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe_internal.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"
#include "../monitor/limits.h"

/* Lists controllers bound to cgroup v1 hierarchies (a hybrid host). */
static void find_v1_controllers(struct host_caps *caps)
{
	static const char *const wanted[] = {"memory", "pids", "cpu", "freezer"};
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	size_t len = 0;

	caps->cgroup1_controllers[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char fstype[64], src[64], opts[512];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s %63s %511s", fstype, src, opts) != 3 ||
		    !streq(fstype, "cgroup"))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(wanted); i++) {
			if (!word_list_has(opts, wanted[i], ","))
				continue;
			if (word_list_has(caps->cgroup1_controllers, wanted[i], ","))
				continue;
			len += snprintf(caps->cgroup1_controllers + len,
					sizeof(caps->cgroup1_controllers) - len, "%s%s",
					len ? "," : "", wanted[i]);
		}
	}
}

/* Freezes an empty scratch cgroup and waits for the kernel to say so. */
static int try_freeze(const char *cg)
{
	char path[512], events[256];

	snprintf(path, sizeof(path), "%s/cgroup.freeze", cg);
	if (write_file_str(path, "1") < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/cgroup.events", cg);
	for (int i = 0; i < 100; i++) {
		if (read_file_str(path, events, sizeof(events)) > 0 && strstr(events, "frozen 1"))
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

void probe_cgroup_v2(struct host_caps *caps, const char *scratch)
{
	struct feature *fv2 = &caps->feat[FEAT_CGROUP_V2];
	struct feature *ffr = &caps->feat[FEAT_CGROUP_FREEZE];
	struct feature *fkill = &caps->feat[FEAT_CGROUP_KILL];
	char path[512];
	int r;

	find_v1_controllers(caps);
	r = cgroup2_mount_point(caps->cgroup2_mount, sizeof(caps->cgroup2_mount));
	if (r < 0) {
		probe_set_feat(fv2, FEAT_NO, r, "no cgroup2 file system mounted");
		probe_set_feat(ffr, FEAT_NO, 0, "no cgroup v2");
		probe_set_feat(fkill, FEAT_NO, 0, "no cgroup v2");
		return;
	}
	snprintf(path, sizeof(path), "%s/cgroup.controllers", caps->cgroup2_mount);
	read_file_str(path, caps->cgroup2_controllers, sizeof(caps->cgroup2_controllers));
	probe_set_feat(fv2, FEAT_YES, 0, "mounted at %s; v2 controllers: %s%s%s",
		       caps->cgroup2_mount,
		       caps->cgroup2_controllers[0] ? caps->cgroup2_controllers : "none",
		       caps->cgroup1_controllers[0] ? "; hybrid, on v1: " : "",
		       caps->cgroup1_controllers);
	if (!scratch) {
		enum feat_state s = caps->root ? FEAT_NO : FEAT_NEEDS_ROOT;

		probe_set_feat(ffr, s, 0, "needs a scratch cgroup (root)");
		probe_set_feat(fkill, s, 0, "needs a scratch cgroup (root)");
		return;
	}
	r = try_freeze(scratch);
	if (r)
		probe_set_feat(ffr, FEAT_NO, r, "freezing a scratch cgroup failed (%s)",
			       strerror(-r));
	else
		probe_set_feat(ffr, FEAT_YES, 0, "a scratch cgroup froze");
	snprintf(path, sizeof(path), "%s/cgroup.kill", scratch);
	if (access(path, W_OK) == 0)
		probe_set_feat(fkill, FEAT_YES, 0, "present in a scratch cgroup");
	else
		probe_set_feat(fkill, FEAT_NO, -errno, "absent (kernel < 5.14)");
}

/* What a session of this user gets for memory, pids and cpu (limits_plan, nothing made). */
void probe_limits(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_CGROUP_LIMITS];
	struct session_limits l;
	char detail[320];
	bool cgroup;

	limits_describe_host(detail, sizeof(detail), &cgroup, &l);
	for (int r = 0; r < RES__COUNT; r++)
		caps->limits_how[r] = l.how[r];
	caps->limits_pause = l.pause;
	caps->limits_probed = true;
	cgroup = cgroup && (l.how[RES_PIDS] == LIMIT_CGROUP2 || l.how[RES_PIDS] == LIMIT_CGROUP1);
	if (cgroup)
		probe_set_feat(f, FEAT_YES, 0, "%s", detail);
	else
		probe_set_feat(f, caps->root ? FEAT_NO : FEAT_NEEDS_ROOT, 0, "%s", detail);
}
