// SPDX-License-Identifier: GPL-2.0
/*
 * The session's cgroup view (docs/SECURITY.md, "The cgroup view"): a
 * runtime sizes its heap and threads from its cgroup's limits (the JVM,
 * Node, Go, .NET read /proc/self/cgroup, /proc/self/mountinfo, then
 * /sys/fs/cgroup/...). The child, once in its session cgroups, enters a
 * cgroup namespace of its own: /proc/self/cgroup says "/" and a cgroup
 * filesystem mounted here has the session's cgroup as its root. Each
 * hierarchy in which the session has a cgroup of its own (named by its id)
 * is mounted read-only where the host has it, under /sys/fs/cgroup;
 * nothing of another cgroup is in the view.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns.h"
#include "../lib/util.h"

#define CG_TOP "/sys/fs/cgroup"

/* One hierarchy to show: its mount point under CG_TOP and its controllers ("": v2). */
struct cg_mount {
	char at[256];
	char ctrls[96];
};

struct cg_view {
	struct cg_mount m[12];
	size_t n;
	bool top;	  /* the host's CG_TOP is itself the cgroup2 mount (pure v2) */
	char own[12][96]; /* the controller lists of the session's own cgroups */
	size_t nown;
};

/* Whether the cgroup path's last component is the session id. */
static bool own_path(const char *path, const char *id)
{
	const char *base = strrchr(path, '/');

	return base && streq(base + 1, id);
}

/* The controller lists ("" for v2) of /proc/self/cgroup's lines in a cgroup of the session's. */
static int find_own(struct cg_view *v, const char *id)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && v->nown < ARRAY_SIZE(v->own)) {
		char *ctrls = strchr(line, ':'), *path;

		if (!ctrls || !(path = strchr(++ctrls, ':')))
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (own_path(path, id))
			snprintf(v->own[v->nown++], sizeof(v->own[0]), "%s", ctrls);
	}
	return 0;
}

/* Whether every word of the comma list ctrls is in the mount's super options. */
static bool opts_hold(const char *opts, const char *ctrls)
{
	char buf[96], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", ctrls);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
		if (!word_list_has(opts, w, ","))
			return false;
	return true;
}

/* The own controller list a cgroup mount shows, or NULL. */
static const char *own_of(const struct cg_view *v, bool v2, const char *opts)
{
	for (size_t i = 0; i < v->nown; i++) {
		if (v2 ? !v->own[i][0] : v->own[i][0] && opts_hold(opts, v->own[i]))
			return v->own[i];
	}
	return NULL;
}

/* The host's cgroup mounts at and under CG_TOP that hold a cgroup of the session's. */
static int find_mounts(struct cg_view *v)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[2048];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && v->n < ARRAY_SIZE(v->m)) {
		char at[256], fstype[32], opts[512];
		const char *sep = strstr(line, " - "), *ctrls, *rel;
		bool v2;

		if (!sep || sscanf(sep, " - %31s %*s %511s", fstype, opts) != 2 ||
		    sscanf(line, "%*s %*s %*s %*s %255s", at) != 1)
			continue;
		v2 = streq(fstype, "cgroup2");
		if (!v2 && !streq(fstype, "cgroup"))
			continue;
		if (streq(at, CG_TOP)) {
			v->top = v2;
			rel = "";
		} else if (startswith(at, CG_TOP "/") && !strchr(at + strlen(CG_TOP "/"), '/') &&
			   !strchr(at, '\\')) {
			rel = at + strlen(CG_TOP "/");
		} else {
			continue;
		}
		if (!(ctrls = own_of(v, v2, opts)))
			continue;
		snprintf(v->m[v->n].at, sizeof(v->m[0].at), "%s", rel);
		snprintf(v->m[v->n].ctrls, sizeof(v->m[0].ctrls), "%s", ctrls);
		v->n++;
	}
	return 0;
}

/*
 * One hierarchy, read-only, rooted at the cgroup namespace's root: the
 * session's cgroup. Read-only by the mount, not the superblock: a cgroup
 * superblock is the host's, read-write, and a new read-only mount of it
 * is EBUSY (seen in a user namespace on pure cgroup v2).
 */
static int mount_one(const struct cg_mount *m, const char *dir)
{
	const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	int r = m->ctrls[0] ? mount("cgroup", dir, "cgroup", flags, m->ctrls)
			    : mount("cgroup2", dir, "cgroup2", flags, NULL);

	if (r < 0 || mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, NULL) < 0)
		return -errno;
	return 0;
}

/* The view over CG_TOP: the cgroup2 mount itself (pure v2), or a tmpfs holding each. */
static int mount_view(const struct cg_view *v, const char **step)
{
	char dir[256];
	int r;

	/*
	 * The host's cgroup mounts out of the view, so that /proc/self/mountinfo
	 * lists only the session's (a runtime takes the first it finds). A
	 * user namespace may not take them off (locked: EINVAL): covered then.
	 */
	bool locked = false;

	*step = "unmount the host's " CG_TOP;
	if (umount2(CG_TOP, MNT_DETACH) < 0) {
		if (errno != EINVAL && errno != EPERM)
			return -errno;
		locked = true;
	}
	if (v->top && v->n == 1 && !v->m[0].at[0]) {
		/*
		 * The same cgroup2 superblock on the root of its own mount is
		 * EBUSY: a locked host mount gets a tmpfs between the two.
		 */
		*step = "cover the host's " CG_TOP;
		if (locked && mount("tmpfs", CG_TOP, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				    "mode=0755,size=4k,nr_inodes=4") < 0)
			return -errno;
		*step = "mount the session's cgroup at " CG_TOP;
		return mount_one(&v->m[0], CG_TOP);
	}
	*step = "mount a tmpfs at " CG_TOP;
	if (mount("tmpfs", CG_TOP, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=16k,nr_inodes=32") < 0)
		return -errno;
	for (size_t i = 0; i < v->n; i++) {
		if (!v->m[i].at[0])
			continue; /* a cgroup2 at the top beside v1 ones: not a layout of hosts */
		snprintf(dir, sizeof(dir), CG_TOP "/%s", v->m[i].at);
		*step = "mount the session's cgroups under " CG_TOP;
		if (mkdir(dir, 0755) < 0)
			return -errno;
		if ((r = mount_one(&v->m[i], dir)) < 0)
			return r;
	}
	*step = "make " CG_TOP " read-only";
	if (mount(NULL, CG_TOP, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		return -errno;
	return 0;
}

int ns_cgroup_view(const char *id, const char **step)
{
	struct cg_view v = {0};
	int r;

	if (!id || !id[0])
		return 0;
	*step = "read the session's cgroups";
	if ((r = find_own(&v, id)) < 0 || (r = find_mounts(&v)) < 0)
		return r;
	if (!v.n)
		return 0;
	/* From here, a cgroup mount's root is the session's cgroup; never before. */
	*step = "unshare the cgroup namespace";
	if (unshare(CLONE_NEWCGROUP) < 0)
		return -errno;
	if ((r = mount_view(&v, step)) < 0)
		return r;
	return 1;
}
