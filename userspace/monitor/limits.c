// SPDX-License-Identifier: GPL-2.0
/*
 * Session resource limits (docs/limits.md). The plan is a few reads; the
 * cgroups are made only for a session that runs. On cgroup v2 the child is
 * cloned straight into its cgroup (CLONE_INTO_CGROUP, no migration); v1
 * cgroups can only be joined by writing cgroup.procs, which costs one RCU
 * grace period (~10 ms) on kernels without favordynmods.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "limits.h"
#include "../lib/cgroup.h"
#include "../policy/policy.h"
#include "../lib/jsonw.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define CPU_PERIOD_US 100000

static const char *const ctrl_names[RES__COUNT] = {
	[RES_MEMORY] = "memory",
	[RES_PIDS] = "pids",
	[RES_CPU] = "cpu",
};

const char *limit_res_name(enum limit_res res)
{
	return ctrl_names[res];
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
			if (!l->v1_mount[r][0] && word_list_has(opts, ctrl_names[r], ","))
				snprintf(l->v1_mount[r], sizeof(l->v1_mount[r]), "%s", mnt);
	}
}

/* This process's cgroup in the v1 hierarchy holding ctrl, as /proc/self/cgroup says. */
static int own_v1_path(const char *ctrl, char *buf, size_t size)
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
static void describe(struct session_limits *l)
{
	char items[256] = "", why[160] = "";
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
	if (!n)
		return;
	if (l->via == LIMITS_VIA_RLIMIT)
		snprintf(why, sizeof(why), "--limits-via rlimit");
	else if (!l->cgroup)
		snprintf(why, sizeof(why), "%s", l->why_no_cgroup);
	else
		snprintf(why, sizeof(why), "no such controller on cgroup v2, nor on v1 for root");
	snprintf(l->not_enforced, sizeof(l->not_enforced), "%s (%s)", items, why);
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
		if (l->cgroup && word_list_has(avail, ctrl_names[r], " ")) {
			l->how[r] = LIMIT_CGROUP2;
			continue;
		}
		if (!root || !l->v1_mount[r][0] || own_v1_path(ctrl_names[r], own, sizeof(own)) < 0)
			continue;
		snprintf(dir, sizeof(dir), "%s%s", l->v1_mount[r], own);
		if (access(dir, W_OK) == 0)
			l->how[r] = LIMIT_CGROUP1;
	}
	describe(l);
}

/* Whether every controller in want is in the file's word list. */
static bool has_all(const char *path, const char *const *want, size_t n)
{
	char buf[256];

	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!word_list_has(buf, want[i], " "))
			return false;
	return true;
}

/*
 * Enables the v2 controllers the plan wants in every cgroup.subtree_control
 * from the mount down to the parent. A controller that cannot be enabled is
 * degraded to v1 or the fallback.
 */
static void enable_v2(struct session_limits *l)
{
	const char *want[RES__COUNT];
	char path[LIMITS_PATH_MAX + 32];
	size_t n = 0, mlen = strlen(l->v2_mount);

	for (int r = 0; r < RES__COUNT; r++)
		if (l->how[r] == LIMIT_CGROUP2)
			want[n++] = ctrl_names[r];
	if (!n)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", l->v2_parent);
	if (has_all(path, want, n))
		return; /* the common case: enabled once, long ago */
	for (size_t end = mlen;; end++) {
		char dir[LIMITS_PATH_MAX];

		if (l->v2_parent[end] != '/' && l->v2_parent[end] != '\0')
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)end, l->v2_parent);
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
		for (size_t i = 0; i < n; i++) {
			char word[32];

			if (has_all(path, &want[i], 1))
				continue;
			snprintf(word, sizeof(word), "+%s", want[i]);
			if (write_file_str(path, word) < 0)
				log_warn_errno(errno, "cannot enable the %s controller in %s",
					       want[i], dir);
		}
		if (!l->v2_parent[end])
			break;
	}
	for (int r = 0; r < RES__COUNT; r++) {
		if (l->how[r] != LIMIT_CGROUP2 || has_all(path, &ctrl_names[r], 1))
			continue;
		l->how[r] = r == RES_MEMORY && l->via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT
									   : LIMIT_NONE;
	}
}

static int write_knob(const char *dir, const char *file, const char *value)
{
	char path[LIMITS_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return write_file_str(path, value);
}

static int apply_v2(const struct session_limits *l, enum limit_res r)
{
	char v[64];
	int e;

	switch (r) {
	case RES_MEMORY:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_mb << 20);
		e = write_knob(l->cg, "memory.max", v);
		/* No memory.swap.max: the kernel has no swap accounting (docs/limits.md). */
		if (!e && (e = write_knob(l->cg, "memory.swap.max", "0")) == -ENOENT)
			e = 0;
		return e;
	case RES_PIDS:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids);
		return write_knob(l->cg, "pids.max", v);
	default:
		snprintf(v, sizeof(v), "%llu %d",
			 (unsigned long long)l->cpu_percent * CPU_PERIOD_US / 100, CPU_PERIOD_US);
		return write_knob(l->cg, "cpu.max", v);
	}
}

static int apply_v1(const struct session_limits *l, enum limit_res r, const char *dir)
{
	char v[64];
	int e;

	switch (r) {
	case RES_MEMORY:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->memory_mb << 20);
		e = write_knob(dir, "memory.limit_in_bytes", v);
		/* memsw = memory + swap: equal means no swap; absent without swapaccount. */
		if (!e && (e = write_knob(dir, "memory.memsw.limit_in_bytes", v)) == -ENOENT)
			e = 0;
		return e;
	case RES_PIDS:
		snprintf(v, sizeof(v), "%llu", (unsigned long long)l->pids);
		return write_knob(dir, "pids.max", v);
	default:
		snprintf(v, sizeof(v), "%d", CPU_PERIOD_US);
		e = write_knob(dir, "cpu.cfs_period_us", v);
		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)l->cpu_percent * CPU_PERIOD_US / 100);
		return e ? e : write_knob(dir, "cpu.cfs_quota_us", v);
	}
}

/* <v1 mount><own cgroup>/bpfbox/<id>, made (with the bpfbox level) and limited. */
static int make_v1(struct session_limits *l, enum limit_res r, const char *id)
{
	char own[LIMITS_PATH_MAX], base[LIMITS_PATH_MAX + 16], procs[LIMITS_PATH_MAX + 16];
	char *dir = l->cg1[r];
	int e;

	e = own_v1_path(ctrl_names[r], own, sizeof(own));
	if (e < 0)
		return e;
	snprintf(base, sizeof(base), "%s%s/bpfbox", l->v1_mount[r], own);
	if (snprintf(dir, LIMITS_PATH_MAX, "%s/%s", base, id) >= LIMITS_PATH_MAX) {
		dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	/* Another session may remove an empty base between the two mkdirs: retry once. */
	for (int i = 0; i < 2; i++) {
		if (mkdir(base, 0755) < 0 && errno != EEXIST)
			break;
		if (mkdir(dir, 0755) == 0 || errno != ENOENT)
			break;
	}
	if (access(dir, F_OK) < 0) {
		e = -errno;
		dir[0] = '\0';
		return e;
	}
	e = apply_v1(l, r, dir);
	if (!e) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
		l->cg1_procs_fd[r] = open(procs, O_WRONLY | O_CLOEXEC);
		if (l->cg1_procs_fd[r] < 0)
			e = -errno;
	}
	if (e) {
		rmdir(dir);
		dir[0] = '\0';
		rmdir(base);
	}
	return e;
}

static void degrade(struct session_limits *l, enum limit_res r, int err, const char *where)
{
	log_warn_errno(err, "cannot apply the %s limit in %s", ctrl_names[r], where);
	l->how[r] = r == RES_MEMORY && l->via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT : LIMIT_NONE;
}

/* What `bpfbox resume` and the supervisor read back from the v2 cgroup. */
static void write_xattrs(const struct session_limits *l)
{
	char v[96];
	int n;

	if (!l->cg[0])
		return;
	n = snprintf(v, sizeof(v), "memory_mb=%llu disk_mb=%llu", (unsigned long long)l->memory_mb,
		     (unsigned long long)l->disk_mb);
	setxattr(l->cg, LIMITS_XATTR_LIMITS, v, n, 0);
	if (l->cg1[RES_MEMORY][0] || l->cg1[RES_PIDS][0] || l->cg1[RES_CPU][0]) {
		char v1[RES__COUNT * (LIMITS_PATH_MAX + 8)];
		size_t len = 0;

		for (int r = 0; r < RES__COUNT; r++)
			if (l->cg1[r][0])
				len += snprintf(v1 + len, sizeof(v1) - len, "%s %s\n",
						ctrl_names[r], l->cg1[r]);
		setxattr(l->cg, LIMITS_XATTR_V1, v1, len, 0);
	}
}

int limits_v1_read(const char *cg, struct session_limits *l)
{
	char v1[RES__COUNT * (LIMITS_PATH_MAX + 8)], *line, *save = NULL;
	ssize_t n = getxattr(cg, LIMITS_XATTR_V1, v1, sizeof(v1) - 1);

	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	v1[n] = '\0';
	for (line = strtok_r(v1, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp || sp[1] != '/')
			continue;
		*sp = '\0';
		for (int r = 0; r < RES__COUNT; r++)
			if (streq(line, ctrl_names[r]))
				snprintf(l->cg1[r], sizeof(l->cg1[r]), "%s", sp + 1);
	}
	snprintf(l->v1_memory, sizeof(l->v1_memory), "%s", l->cg1[RES_MEMORY]);
	return 0;
}

int limits_apply(struct session_limits *l, const char *id)
{
	if (l->cg[0])
		enable_v2(l);
	for (int r = 0; r < RES__COUNT; r++) {
		int e;

		if (l->how[r] == LIMIT_CGROUP2) {
			e = l->cg[0] ? apply_v2(l, r) : -ENOENT;
			if (e < 0)
				degrade(l, r, e, l->cg[0] ? l->cg : "no session cgroup");
		} else if (l->how[r] == LIMIT_CGROUP1) {
			e = make_v1(l, r, id);
			if (e < 0)
				degrade(l, r, e, l->v1_mount[r]);
		}
	}
	if (l->cg1[RES_MEMORY][0])
		snprintf(l->v1_memory, sizeof(l->v1_memory), "%s", l->cg1[RES_MEMORY]);
	write_xattrs(l);
	describe(l);
	return 0;
}

int limits_create(struct session_limits *l, const char *id)
{
	struct session_cgroup cg;
	int e;

	/* One start in 64 (the id is random) removes what killed runs left. */
	if (id[0] == '0' && id[1] >= '0' && id[1] <= '3' && geteuid() == 0)
		limits_sweep(l);

	if (!l->cgroup)
		return limits_apply(l, id);
	if (l->cg[0])
		return 0;
	if (mkdir(l->v2_parent, 0755) < 0 && errno != EEXIST) {
		e = -errno;
		goto fail;
	}
	enable_v2(l);
	/* The one cgroup module makes it (lib/cgroup.h), as the daemon's register does. */
	e = strlen(l->v2_parent) + 1 + strlen(id) < sizeof(l->cg)
		    ? session_cgroup_create(l->v2_parent, id, &cg)
		    : -ENAMETOOLONG;
	if (e < 0)
		goto fail;
	snprintf(l->cg, sizeof(l->cg), "%.*s", (int)sizeof(l->cg) - 1, cg.path);
	l->cg_own = true;
	l->cg_fd = cg.dir_fd;
	l->cg_procs_fd = cg.procs_fd;
	l->cg_id = cg.id;
	return limits_apply(l, id);
fail:
	log_warn_errno(e, "cannot create the session cgroup in %s", l->v2_parent);
	snprintf(l->why_no_cgroup, sizeof(l->why_no_cgroup),
		 "the session cgroup could not be made");
	l->cgroup = l->pause = false;
	for (int r = 0; r < RES__COUNT; r++)
		if (l->how[r] == LIMIT_CGROUP2)
			l->how[r] = r == RES_MEMORY && l->via != LIMITS_VIA_CGROUP ? LIMIT_RLIMIT
										   : LIMIT_NONE;
	limits_apply(l, id);
	return e;
}

int limits_child_join(const struct session_limits *l, bool join_v2)
{
	if (join_v2 && l->cg_procs_fd >= 0 && write(l->cg_procs_fd, "0", 1) != 1)
		return -1;
	for (int r = 0; r < RES__COUNT; r++)
		if (l->cg1_procs_fd[r] >= 0 && write(l->cg1_procs_fd[r], "0", 1) != 1)
			return -1;
	return 0;
}

int limits_child_rlimit(const struct session_limits *l)
{
	if (l && l->how[RES_MEMORY] == LIMIT_RLIMIT) {
		struct rlimit rl = {l->memory_mb << 20, l->memory_mb << 20};

		return setrlimit(RLIMIT_DATA, &rl);
	}
	return 0;
}

int limits_attach_pid(const struct session_limits *l, pid_t pid)
{
	char num[24];

	snprintf(num, sizeof(num), "%d", pid);
	for (int r = 0; r < RES__COUNT; r++) {
		int e = l->cg1[r][0] ? write_knob(l->cg1[r], "cgroup.procs", num) : 0;

		if (e < 0)
			return e;
	}
	return 0;
}

void limits_close_fds(struct session_limits *l)
{
	fd_close(&l->cg_fd);
	fd_close(&l->cg_procs_fd);
	for (int r = 0; r < RES__COUNT; r++)
		fd_close(&l->cg1_procs_fd[r]);
}

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
	before = time(NULL) - (time_t)age;

	if (l->v2_parent[0])
		sweep_dir(l->v2_parent, before);
	for (int r = 0; r < RES__COUNT; r++) {
		char own[LIMITS_PATH_MAX], base[2 * LIMITS_PATH_MAX];

		if (!l->v1_mount[r][0] || own_v1_path(ctrl_names[r], own, sizeof(own)) < 0)
			continue;
		snprintf(base, sizeof(base), "%s%s/bpfbox", l->v1_mount[r], own);
		sweep_dir(base, before);
		/* An empty level would keep whoever owns our v1 cgroup from removing it. */
		rmdir(base);
	}
}

void limits_json(const struct session_limits *l, struct jsonw *w, const char *key)
{
	jsonw_object_begin(w, key);
	for (int r = 0; r < RES__COUNT; r++)
		jsonw_str(w, ctrl_names[r], limit_how_name(l->how[r]));
	jsonw_str(w, "disk", l->disk ? "inotify" : "none");
	jsonw_str(w, "pause", l->pause ? "cgroup2" : "none");
	jsonw_str(w, "kill", l->cgroup ? "cgroup2" : "reaper");
	jsonw_end(w);
}

void limits_describe_host(char *buf, size_t size, bool *cgroup, struct session_limits *l)
{
	struct policy_limits pl = {
		.memory_mb = 2048, .pids = 64, .cpu_percent = 100, .disk_mb = 1024};
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
