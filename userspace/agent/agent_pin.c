// SPDX-License-Identifier: GPL-2.0
/*
 * Daemon mode's pins (docs/daemon.md): the shared maps and every link live
 * in a directory on a bpf file system, so enforcement outlives the daemon
 * and its next incarnation adopts them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "../lib/util.h"

/* The maps a daemon shares with its next incarnation (pinned as map_NAME). */
static const char *const pinned_maps[] = {"sessions",	 "events",	 "lost",     "net_allow",
					  "unix_allow",	 "agg",		 "names",    "abs_paths",
					  "oom_victims", "net_resolved", "writable", "cmd_rules",
					  "own_sbs"};

void agent_pin_path(const char *dir, char *buf, size_t size, const char *kind, const char *name)
{
	snprintf(buf, size, "%s/%s_%s", dir, kind, name);
}

/* Whether every program of the skeleton that would load has a pinned link. */
bool agent_links_pinned(const struct agent *a, const struct bpf_object_skeleton *sk)
{
	char path[PATH_MAX + 64];
	int n = 0;

	for (int i = 0; i < sk->prog_cnt; i++) {
		/* net_emit is run, never attached: it has no link. */
		if (!bpf_program__autoload(*sk->progs[i].prog) ||
		    bpf_program__type(*sk->progs[i].prog) == BPF_PROG_TYPE_SYSCALL)
			continue;
		agent_pin_path(a->pin_dir, path, sizeof(path), "link", sk->progs[i].name);
		if (access(path, F_OK) < 0)
			return false;
		n++;
	}
	return n > 0;
}

/* Partial pins (a crash while pinning) are dropped before attaching anew. */
void agent_unpin_links(const struct agent *a, const struct bpf_object_skeleton *sk)
{
	char path[PATH_MAX + 64];

	for (int i = 0; i < sk->prog_cnt; i++) {
		agent_pin_path(a->pin_dir, path, sizeof(path), "link", sk->progs[i].name);
		unlink(path);
	}
}

int agent_pin_links(const struct agent *a, const struct bpf_object_skeleton *sk)
{
	char path[PATH_MAX + 64];

	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *link = *sk->progs[i].link;
		int r;

		if (!link)
			continue;
		agent_pin_path(a->pin_dir, path, sizeof(path), "link", sk->progs[i].name);
		r = bpf_link__pin(link, path);
		if (r)
			return r;
	}
	return 0;
}

/* Pinned links stay attached when the skeleton is destroyed. */
void agent_disconnect_pinned_links(const struct bpf_object_skeleton *sk)
{
	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *link = *sk->progs[i].link;

		if (link && bpf_link__pin_path(link))
			bpf_link__disconnect(link);
	}
}

/* libbpf reuses a compatible pinned map at load, or creates and pins it. */
int agent_set_map_pins(const struct agent *a, struct bpf_object *obj)
{
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < ARRAY_SIZE(pinned_maps); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, pinned_maps[i]);
		int r, fd;

		if (!m)
			continue;
		agent_pin_path(a->pin_dir, path, sizeof(path), "map", pinned_maps[i]);
		r = bpf_map__set_pin_path(m, path);
		if (r)
			return r;
		/* A pinned map keeps its size (the ring of an earlier --audit-ring). */
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			struct bpf_map_info info = {0};
			__u32 len = sizeof(info);

			if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
				bpf_map__set_max_entries(m, info.max_entries);
			close(fd);
		}
	}
	return 0;
}

int agent_pin_dir_prepare(const char *dir)
{
	char parent[PATH_MAX];
	struct statfs sf;
	char *slash;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	if (statfs(parent, &sf) < 0)
		return -errno;
	if (sf.f_type != BPF_FS_MAGIC && streq(parent, "/sys/fs/bpf") &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") < 0)
		return -errno;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (statfs(dir, &sf) < 0)
		return -errno;
	return sf.f_type == BPF_FS_MAGIC ? 0 : -ENOTSUP;
}

/* Pinned cgroup links must be those of this cgroup parent, not another's. */
int agent_check_cgroup_link(const struct agent *a, const char *prog)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 64];
	struct stat st;
	int fd, r = 0;

	agent_pin_path(a->pin_dir, path, sizeof(path), "link", prog);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || fstat(a->parent_fd, &st) < 0)
		r = -errno;
	else if (info.type != BPF_LINK_TYPE_CGROUP || info.cgroup.cgroup_id != st.st_ino)
		r = -EXDEV;
	close(fd);
	return r;
}

/* Pin mode: the agent's map fds come from the pins, whatever was loaded. */
int agent_open_pinned_maps(struct agent *a)
{
	struct {
		const char *name;
		int *fd;
		bool need, optional; /* optional: pins of an older daemon lack it */
	} m[] = {
		{"sessions", &a->sessions_fd, true},
		{"events", &a->events_fd, true},
		{"lost", &a->lost_fd, true},
		{"net_allow", &a->net_allow_fd, a->st.net || a->st.lsm},
		{"unix_allow", &a->unix_allow_fd, a->st.net},
		{"agg", &a->agg_fd, a->st.audit},
		{"oom_victims", &a->oom_fd, a->st.audit, true},
		{"names", &a->lsm_maps.names, a->st.lsm},
		{"abs_paths", &a->lsm_maps.abs_paths, a->st.lsm},
		{"writable", &a->lsm_maps.writable, a->st.lsm, true},
		{"own_sbs", &a->lsm_maps.own_sbs, a->st.lsm, true},
		{"cmd_rules", &a->cmd_rules_fd, a->st.cmd, true},
	};
	char path[PATH_MAX + 64];

	a->own_fds = true;
	for (size_t i = 0; i < ARRAY_SIZE(m); i++) {
		if (!m[i].need)
			continue;
		agent_pin_path(a->pin_dir, path, sizeof(path), "map", m[i].name);
		*m[i].fd = bpf_obj_get(path);
		if (*m[i].fd < 0 && !m[i].optional)
			return -errno;
	}
	return 0;
}

int agent_pin_dir_check(const char *pin_dir)
{
	struct statfs sf;

	if (statfs(pin_dir, &sf) < 0)
		return errno == ENOENT ? 0 : -errno;
	return sf.f_type == BPF_FS_MAGIC ? 0 : -ENOTSUP;
}

int agent_unpin(const char *pin_dir)
{
	DIR *d;
	struct dirent *de;
	int r = agent_pin_dir_check(pin_dir);

	/* Every entry goes: never in a directory that is not the BPF file system's. */
	if (r < 0)
		return r;
	d = opendir(pin_dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) < 0 && !r)
			r = -errno;
	}
	closedir(d);
	if (rmdir(pin_dir) < 0 && errno != ENOENT && !r)
		r = -errno;
	return r;
}

int agent_prog_stats(const struct agent *a, agent_prog_fn fn, void *ctx)
{
	DIR *dir;
	struct dirent *de;

	if (!a->pin_dir[0])
		return -ENOENT;
	dir = opendir(a->pin_dir);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		struct bpf_link_info li = {0};
		struct bpf_prog_info pi = {0};
		struct agent_prog_stat st = {0};
		uint32_t ll = sizeof(li), pl = sizeof(pi);
		char path[PATH_MAX + 256];
		int lfd, pfd;

		if (strncmp(de->d_name, "link_", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", a->pin_dir, de->d_name);
		lfd = bpf_obj_get(path);
		if (lfd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(lfd, &li, &ll) == 0) {
			pfd = bpf_prog_get_fd_by_id(li.prog_id);
			if (pfd >= 0 && bpf_obj_get_info_by_fd(pfd, &pi, &pl) == 0) {
				/* the program's name in the skeleton (the kernel keeps 15 bytes) */
				snprintf(st.name, sizeof(st.name), "%s", de->d_name + 5);
				st.id = pi.id;
				st.run_time_ns = pi.run_time_ns;
				st.run_cnt = pi.run_cnt;
				st.recursion_misses = pi.recursion_misses;
				fn(ctx, &st);
			}
			if (pfd >= 0)
				close(pfd);
		}
		close(lfd);
	}
	closedir(dir);
	return 0;
}
