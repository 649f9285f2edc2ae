// SPDX-License-Identifier: GPL-2.0
/*
 * A session's cgroups once they exist: adopted from a running session,
 * frozen, killed and removed, and the cgroups of dead sessions swept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "limits_internal.h"
#include "../lib/cgroup.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* Whether path names the session's own cgroup: its last component is the id. */
static bool is_session_path(const char *path, const char *id)
{
	const char *slash = strrchr(path, '/');

	return slash && streq(slash + 1, id);
}

int limits_adopt(struct session_limits *l, pid_t pid, const char *id)
{
	char path[64], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ctrls = strchr(line, ':'), *p;

		if (!ctrls || !(p = strchr(++ctrls, ':')))
			continue;
		*p++ = '\0';
		p[strcspn(p, "\n")] = '\0';
		if (!is_session_path(p, id))
			continue; /* bpfbox's own cgroup: not the session's to watch */
		if (!ctrls[0] && l->v2_mount[0])
			snprintf(l->cg, sizeof(l->cg), "%s%s", l->v2_mount, p);
		else if (word_list_has(ctrls, "memory", ",") && l->v1_mount[RES_MEMORY][0])
			snprintf(l->v1_memory, sizeof(l->v1_memory), "%s%s",
				 l->v1_mount[RES_MEMORY], p);
	}
	fclose(f);
	l->cg_own = false;
	l->cgroup = l->cg[0] != '\0';
	l->pause = l->cgroup;
	return l->cgroup ? 0 : -ENOENT;
}

int limits_kill(const struct session_limits *l)
{
	return l->cg[0] ? cgroup_kill(l->cg) : -ENOENT;
}

int limits_freeze(const struct session_limits *l, bool frozen)
{
	char path[LIMITS_PATH_MAX + 32];

	if (!l->cg[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/cgroup.freeze", l->cg);
	return write_file_str(path, frozen ? "1" : "0");
}

/* Kills its members and removes it, waiting up to 2 s for them to go. */
static void remove_cgroup(const char *dir)
{
	if (cgroup_remove(dir, 2000) == -EBUSY)
		log_warn("the cgroup %s stays: its processes did not exit in 2 s", dir);
}

void limits_destroy(struct session_limits *l)
{
	limits_close_fds(l);
	if (l->cg_own && l->cg[0]) {
		remove_cgroup(l->cg);
		l->cg[0] = '\0';
		l->cg_own = false;
	}
	for (int r = 0; r < RES__COUNT; r++) {
		char *dir = l->cg1[r], *slash;

		if (!dir[0])
			continue;
		/* Killed by the v2 cgroup, or here on a pure v1 host (its members). */
		remove_cgroup(dir);
		/* The bpfbox level under our own v1 cgroup goes with its last session. */
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			rmdir(dir);
		}
		dir[0] = '\0';
	}
}

static bool is_session_name(const char *name)
{
	size_t n = 0;

	for (; name[n]; n++)
		if (!((name[n] >= '0' && name[n] <= '9') || (name[n] >= 'a' && name[n] <= 'f')))
			return false;
	return n == 32;
}

static void sweep_dir(const char *dir, time_t before)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_type != DT_DIR || !is_session_name(de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_ctime > before)
			continue;
		/* EBUSY when it holds a process: a live session. */
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

void limits_sweep(const struct session_limits *l)
{
	const char *env = getenv("BPFBOX_CGROUP_STALE_S");
	unsigned long long age = LIMITS_STALE_S;
	time_t before;

	if (env)
		parse_u64(env, &age);
	if (age < LIMITS_STALE_MIN_S)
		age = LIMITS_STALE_MIN_S;
	before = time(NULL) - (time_t)age;

	if (l->v2_parent[0])
		sweep_dir(l->v2_parent, before);
	for (int r = 0; r < RES__COUNT; r++) {
		char own[LIMITS_PATH_MAX], base[2 * LIMITS_PATH_MAX];

		if (!l->v1_mount[r][0] ||
		    limits_own_v1_path(limits_ctrl_names[r], own, sizeof(own)) < 0)
			continue;
		snprintf(base, sizeof(base), "%s%s/bpfbox", l->v1_mount[r], own);
		sweep_dir(base, before);
		/* An empty level would keep whoever owns our v1 cgroup from removing it. */
		rmdir(base);
	}
}
