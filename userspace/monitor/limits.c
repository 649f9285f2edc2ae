// SPDX-License-Identifier: GPL-2.0
/*
 * Session resource limits (docs/limits.md). The plan is a few reads; the
 * cgroups are made only for a session that runs (limits_apply.c). On
 * cgroup v2 the child is cloned straight into its cgroup
 * (CLONE_INTO_CGROUP, no migration); v1 cgroups can only be joined by
 * writing cgroup.procs, which costs one RCU grace period (~10 ms) on
 * kernels without favordynmods. This file: the names, the plan and what
 * it does not hold.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "limits_internal.h"
#include "../lib/cgroup.h"
#include "../policy/policy.h"
#include "../lib/jsonw.h"
#include "../lib/util.h"

const char *const limits_ctrl_names[RES__COUNT] = {
	[RES_MEMORY] = "memory",
	[RES_PIDS] = "pids",
	[RES_CPU] = "cpu",
};

const char *limit_res_name(enum limit_res res)
{
	return limits_ctrl_names[res];
}

const char *limit_how_name(enum limit_how how)
{
	static const char *const names[] = {
		[LIMIT_CGROUP2] = "cgroup2", [LIMIT_CGROUP1] = "cgroup1", [LIMIT_RLIMIT] = "rlimit"};

	return name_of(names, ARRAY_SIZE(names), how, "none");
}

int limits_via_parse(const char *s, enum limits_via *out)
{
	static const char *const names[] = {[LIMITS_VIA_AUTO] = "auto",
					    [LIMITS_VIA_CGROUP] = "cgroup",
					    [LIMITS_VIA_RLIMIT] = "rlimit"};
	int i = name_index(names, ARRAY_SIZE(names), s);

	if (i < 0)
		return i;
	*out = i;
	return 0;
}

/* The cgroup2 mount and the v1 mounts of memory, pids and cpu, in one pass. */
static void find_mounts(struct session_limits *l)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mnt[LIMITS_PATH_MAX], fstype[32], opts[256];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %31s %*s %255s", fstype, opts) != 2 ||
		    sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
			continue;
		if (streq(fstype, "cgroup2") && !l->v2_mount[0]) {
			snprintf(l->v2_mount, sizeof(l->v2_mount), "%s", mnt);
			continue;
		}
		if (!streq(fstype, "cgroup"))
			continue;
		for (int r = 0; r < RES__COUNT; r++)
			if (!l->v1_mount[r][0] && word_list_has(opts, limits_ctrl_names[r], ","))
				snprintf(l->v1_mount[r], sizeof(l->v1_mount[r]), "%s", mnt);
	}
}

/* This process's cgroup in the v1 hierarchy holding ctrl, as /proc/self/cgroup says. */
int limits_own_v1_path(const char *ctrl, char *buf, size_t size)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ctrls = strchr(line, ':'), *path;

		if (!ctrls)
			continue;
		path = strchr(++ctrls, ':');
		if (!path)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (word_list_has(ctrls, ctrl, ",")) {
			snprintf(buf, size, "%s", streq(path, "/") ? "" : path);
			return 0;
		}
	}
	return -ENOENT;
}

static void add_item(char *buf, size_t size, int *n, const char *item)
{
	size_t len = strlen(buf);

	snprintf(buf + len, size - len, "%s%s", *n ? ", " : "", item);
	(*n)++;
}

/* l->not_enforced: what the policy asks that this plan does not hold, and why. */
void limits_describe(struct session_limits *l)
{
	char items[256] = "", why[160] = "";
	size_t len;
	int n = 0;

	if (l->how[RES_MEMORY] == LIMIT_RLIMIT)
		add_item(items, sizeof(items), &n,
			 "the session-wide memory limit (RLIMIT_DATA holds it per process only)");
	else if (l->how[RES_MEMORY] == LIMIT_NONE)
		add_item(items, sizeof(items), &n, "the memory limit");
	if (l->how[RES_PIDS] == LIMIT_NONE)
		add_item(items, sizeof(items), &n, "the pids limit");
	if (l->how[RES_CPU] == LIMIT_NONE)
		add_item(items, sizeof(items), &n, "the cpu limit");
	if (!l->pause)
		add_item(items, sizeof(items), &n,
			 "pausing on OOM or a full disk (over its disk limit the session is "
			 "killed)");
	l->not_enforced[0] = '\0';
	if (l->disk_unwatched)
		snprintf(l->not_enforced, sizeof(l->not_enforced),
			 "the disk limit (cannot watch the workspace's disk use: %s; raise "
			 "fs.inotify.max_user_instances)%s",
			 strerror(l->disk_unwatched), n ? "; " : "");
	if (!n)
		return;
	if (l->via == LIMITS_VIA_RLIMIT)
		snprintf(why, sizeof(why), "--limits-via rlimit");
	else if (!l->cgroup)
		snprintf(why, sizeof(why), "%s", l->why_no_cgroup);
	else
		snprintf(why, sizeof(why), "no such controller on cgroup v2, nor on v1 for root");
	len = strlen(l->not_enforced);
	snprintf(l->not_enforced + len, sizeof(l->not_enforced) - len, "%s (%s)", items, why);
}

/* Which controllers a session cgroup under l->v2_parent could get. */
static void v2_available(const struct session_limits *l, bool root, char *buf, size_t size)
{
	buf[0] = '\0';
	/* Root enables them down from the mount; others only below their parent. */
	cgroup_read(root ? l->v2_mount : l->v2_parent, "cgroup.controllers", buf, size);
}

void limits_plan_values(struct session_limits *l, const struct policy_limits *pl)
{
	l->memory_mb = pl->memory_mb;
	l->pids = pl->pids;
	l->cpu_percent = pl->cpu_percent;
	l->disk_mb = pl->disk_mb;
	l->disk = pl->disk_mb > 0;
}

void limits_plan(struct session_limits *l, const struct policy_limits *pl, const char *v2_parent,
		 enum limits_via via)
{
	const char *env = getenv("BPFBOX_CGROUP_PARENT");
	bool root = geteuid() == 0;
	char avail[256];

	memset(l, 0, sizeof(*l));
	l->cg_fd = l->cg_procs_fd = -1;
	for (int r = 0; r < RES__COUNT; r++)
		l->cg1_procs_fd[r] = -1;
	limits_plan_values(l, pl);
	l->via = via;
	find_mounts(l);
	if (v2_parent)
		snprintf(l->v2_parent, sizeof(l->v2_parent), "%s", v2_parent);
	else if (env && env[0] == '/')
		snprintf(l->v2_parent, sizeof(l->v2_parent), "%s", env);
	else if (l->v2_mount[0])
		if (snprintf(l->v2_parent, sizeof(l->v2_parent), "%s/bpfbox", l->v2_mount) >=
		    (int)sizeof(l->v2_parent))
			l->v2_parent[0] = '\0';

	if (!l->v2_mount[0] || !l->v2_parent[0])
		snprintf(l->why_no_cgroup, sizeof(l->why_no_cgroup), "no cgroup v2 mounted");
	else if (!root && access(l->v2_parent, W_OK) < 0)
		snprintf(l->why_no_cgroup, sizeof(l->why_no_cgroup),
			 "no session cgroup: not root; use the daemon, or BPFBOX_CGROUP_PARENT "
			 "for a cgroup you may write");
	else
		l->cgroup = true;
	l->pause = l->cgroup;
	v2_available(l, root, avail, sizeof(avail));

	for (int r = 0; r < RES__COUNT; r++) {
		char own[LIMITS_PATH_MAX], dir[2 * LIMITS_PATH_MAX];
		enum limit_how fallback = r == RES_MEMORY && via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT
										      : LIMIT_NONE;

		l->how[r] = fallback;
		if (via == LIMITS_VIA_RLIMIT)
			continue;
		if (l->cgroup && word_list_has(avail, limits_ctrl_names[r], " ")) {
			l->how[r] = LIMIT_CGROUP2;
			continue;
		}
		if (!root || !l->v1_mount[r][0] ||
		    limits_own_v1_path(limits_ctrl_names[r], own, sizeof(own)) < 0)
			continue;
		snprintf(dir, sizeof(dir), "%s%s", l->v1_mount[r], own);
		if (access(dir, W_OK) == 0)
			l->how[r] = LIMIT_CGROUP1;
	}
	limits_describe(l);
}

void limits_json(const struct session_limits *l, struct jsonw *w, const char *key)
{
	jsonw_object_begin(w, key);
	for (int r = 0; r < RES__COUNT; r++)
		jsonw_str(w, limits_ctrl_names[r], limit_how_name(l->how[r]));
	jsonw_str(w, "disk", l->disk ? "inotify" : "none");
	jsonw_str(w, "pause", l->pause ? "cgroup2" : "none");
	jsonw_str(w, "kill", l->cgroup ? "cgroup2" : "reaper");
	jsonw_end(w);
}

void limits_describe_host(char *buf, size_t size, bool *cgroup, struct session_limits *l)
{
	struct policy_limits pl = {.memory_mb = 2048,
				   .pids = POLICY_PIDS_DEFAULT,
				   .cpu_percent = 100,
				   .disk_mb = 1024};
	bool v1 = false;

	limits_plan(l, &pl, NULL, LIMITS_VIA_AUTO);
	for (int r = 0; r < RES__COUNT; r++)
		v1 |= l->how[r] == LIMIT_CGROUP1;
	*cgroup = l->how[RES_MEMORY] == LIMIT_CGROUP2 || l->how[RES_MEMORY] == LIMIT_CGROUP1;
	snprintf(buf, size, "memory %s, pids %s, cpu %s; pause %s%s%s",
		 limit_how_name(l->how[RES_MEMORY]), limit_how_name(l->how[RES_PIDS]),
		 limit_how_name(l->how[RES_CPU]), l->pause ? "by cgroup.freeze" : "unavailable",
		 v1 ? "; v1 costs one cgroup migration (~10 ms) per session" : "",
		 l->cgroup ? "" : "; ");
	if (!l->cgroup) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, "%s", l->why_no_cgroup);
	}
}
