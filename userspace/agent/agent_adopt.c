// SPDX-License-Identifier: GPL-2.0
/*
 * Adopted cgroups (docs/daemon.md, "Adopted cgroups"): a cgroup outside the
 * daemon's cgroup parent gets the cgroup programs attached to the parent
 * (the network's), attached to it as well, each link pinned as
 * adopt_CGROUPID_K so that enforcement outlives the daemon as the parent's
 * links do, and the next daemon takes them back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "../lib/util.h"

static void adopt_pin(const struct agent *a, uint64_t cgroup_id, size_t k, char *buf, size_t size)
{
	snprintf(buf, size, "%s/adopt_%" PRIu64 "_%zu", a->pin_dir, cgroup_id, k);
}

/*
 * One pinned link's program attached to cgroup cg_fd too: 1 with the new
 * link's fd in *out, 0 not a cgroup link of the parent, -errno.
 */
static int attach_like(int dir_fd, const char *name, uint64_t parent_id, int cg_fd, int *out)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	int fd, prog, r;
	char path[PATH_MAX];

	if (strncmp(name, "link_", 5))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir_fd, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	r = bpf_obj_get_info_by_fd(fd, &info, &len) < 0 ? -errno : 0;
	close(fd);
	if (r || info.type != BPF_LINK_TYPE_CGROUP || info.cgroup.cgroup_id != parent_id)
		return r;
	prog = bpf_prog_get_fd_by_id(info.prog_id);
	if (prog < 0)
		return -errno;
	*out = bpf_link_create(prog, cg_fd, info.cgroup.attach_type, NULL);
	r = *out < 0 ? -errno : 1;
	close(prog);
	return r;
}

/* Each link pinned as adopt_CGROUPID_K; 0 or -errno. */
static int pin_links(struct agent *a, uint64_t cgroup_id, const int *links, size_t n)
{
	char path[PATH_MAX + 64];

	for (size_t k = 0; k < n; k++) {
		adopt_pin(a, cgroup_id, k, path, sizeof(path));
		if (bpf_obj_pin(links[k], path) < 0)
			return -errno;
	}
	return 0;
}

int agent_cgroup_attach(struct agent *a, const char *cgroup, uint64_t cgroup_id, int *links,
			size_t max)
{
	_cleanup_close_ int cg_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = a->pin_dir[0] ? opendir(a->pin_dir) : NULL;
	struct dirent *de;
	struct stat st;
	size_t n = 0;
	int r = 0;

	if (cg_fd < 0 || !dir || fstat(a->parent_fd, &st) < 0)
		r = cg_fd < 0 || !a->pin_dir[0] ? -EBADF : -errno;
	while (!r && dir && (de = readdir(dir))) {
		int fd = -1, k = attach_like(dirfd(dir), de->d_name, st.st_ino, cg_fd, &fd);

		if (k > 0 && n == max) {
			close(fd);
			r = -E2BIG;
		} else if (k > 0) {
			links[n++] = fd;
		} else {
			r = k;
		}
	}
	if (dir)
		closedir(dir);
	if (!r)
		r = pin_links(a, cgroup_id, links, n);
	if (r < 0) {
		agent_cgroup_detach(a, cgroup_id, links, n);
		return r;
	}
	return n;
}

int agent_cgroup_links(struct agent *a, uint64_t cgroup_id, int *links, size_t max)
{
	char path[PATH_MAX + 64];
	size_t n = 0;

	if (!a->pin_dir[0])
		return 0;
	for (; n < max; n++) {
		adopt_pin(a, cgroup_id, n, path, sizeof(path));
		links[n] = bpf_obj_get(path);
		if (links[n] < 0)
			break;
	}
	return n;
}

void agent_cgroup_detach(struct agent *a, uint64_t cgroup_id, int *links, size_t n)
{
	char path[PATH_MAX + 64];

	for (size_t k = 0; k < n; k++)
		close(links[k]);
	/* The pins hold the links too: unpinned, a link without an fd detaches. */
	for (size_t k = 0; a->pin_dir[0]; k++) {
		adopt_pin(a, cgroup_id, k, path, sizeof(path));
		if (unlink(path) < 0)
			break;
	}
}
