// SPDX-License-Identifier: GPL-2.0
/*
 * The session's view of the host (docs/SECURITY.md), built in the child's
 * own mount namespace: the host read-only, the hidden dirs covered, the
 * grants cloned and put back, a minimal /dev, a private /tmp and /proc,
 * the deny paths masked, and the Landlock rules of the new mounts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns.h"
#include "ns_internal.h"
#include "landlock.h"
#include "grants.h"
#include "../policy/policy.h"
#include "../lib/fdpass.h"
#include "../lib/util.h"

/*
 * Directories that hold other users' data and host sockets: covered by an
 * empty read-only tmpfs, with only what the policy grants put back.
 */
static const char *const hidden_dirs[] = {
	"/run", "/var/tmp", "/home", "/root", "/mnt", "/media", "/srv",
};

/*
 * Whether the view hides dir. --read-host shows all but /run: its sockets
 * (a container engine's, the user's bus and agents) are not "reading",
 * and a read-only mount does not stop a connect. The credential entries
 * of the homes stay masked as deny paths (session_view_policy).
 */
static bool hides(const struct bpfbox_policy *p, const char *dir)
{
	return !p->read_host || streq(dir, "/run");
}

int ns_make_mountpoint(const char *path, bool dir)
{
	int r = mkdir_parents(path, 0755);

	if (r < 0)
		return r;
	if (dir) {
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -errno;
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);

		if (fd < 0 && errno != EEXIST && errno != EROFS)
			return -errno;
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

int ns_mount_tmpfs(const char *dir, unsigned long flags, const char *opts)
{
	return mount("tmpfs", dir, "tmpfs", flags, opts) < 0 ? -errno : 0;
}

int ns_mount_shared_tmpfs(const char *dir, uint64_t bytes, uint64_t inodes)
{
	char opts[96];

	if (bytes)
		snprintf(opts, sizeof(opts), "mode=1777,size=%llu,nr_inodes=%llu",
			 (unsigned long long)bytes, (unsigned long long)inodes);
	else
		snprintf(opts, sizeof(opts), "mode=1777");
	return ns_mount_tmpfs(dir, MS_NOSUID | MS_NODEV, opts);
}

int ns_remount_ro(const char *dir)
{
	return mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		     NULL) < 0
		       ? -errno
		       : 0;
}

/* ---- child ---- */

/* Whether path is dir or below it. */
static bool is_under(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	return strncmp(path, dir, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/* A path put back into the new view, cloned before the host went read-only. */
struct grant {
	const char *path;
	int fd;
	int checked; /* the fd the parent opened it as (grants.h); -1: a path of bpfbox's */
	bool dir;
	bool rw;
	bool covered; /* below a dir we mount over: must be put back */
	bool late;    /* its mount comes over late_sock, at its attach (add_overlay) */
	int late_sock;
	/* A change set's overlay made ahead (changes_warm.c): made here if it cannot attach. */
	const struct grant_fds *warm;
	bool userns;
};

#define MAX_GRANTS 128

struct view {
	struct grant g[MAX_GRANTS];
	size_t n;
	const char *covered[ARRAY_SIZE(hidden_dirs) + 3];
	size_t ncovered;
	bool tmpfs[ARRAY_SIZE(hidden_dirs)]; /* hidden by a tmpfs holding grants */
	char resolv[PATH_MAX];
};

static bool covered(const struct view *v, const char *path)
{
	for (size_t i = 0; i < v->ncovered; i++)
		if (is_under(path, v->covered[i]))
			return true;
	return false;
}

/*
 * The grant at path, cloned: a grant the parent checked (checked >= 0) is
 * opened here again without symlinks and must be the same file, then
 * cloned from that fd; never by following the path.
 */
static int add_grant(struct view *v, const char *path, bool rw, int checked, const char **step)
{
	_cleanup_close_ int own = -1;
	struct grant *g;
	struct stat st;

	if (v->n == MAX_GRANTS)
		return -E2BIG;
	if (checked >= 0) {
		own = grant_reopen(path, checked);
		if (own < 0) {
			*step = grant_changed(path, own);
			return own;
		}
	}
	if (own >= 0 ? fstat(own, &st) < 0 : stat(path, &st) < 0)
		return -errno;
	g = &v->g[v->n];
	g->path = path;
	g->checked = checked;
	g->dir = S_ISDIR(st.st_mode);
	g->rw = rw;
	g->covered = covered(v, path);
	g->fd = -1;
	/* A read-only grant outside a covered dir is already visible read-only. */
	if (!rw && !g->covered)
		return 0;
	g->fd = own >= 0 ? sys_open_tree(own, "",
					 NS_OPEN_TREE_CLONE | NS_OPEN_TREE_CLOEXEC |
						 NS_AT_RECURSIVE | AT_EMPTY_PATH)
			 : sys_open_tree(AT_FDCWD, path,
					 NS_OPEN_TREE_CLONE | NS_OPEN_TREE_CLOEXEC |
						 NS_AT_RECURSIVE);
	if (g->fd < 0)
		return -errno;
	if (!rw) {
		struct ns_mount_attr a = {.attr_set = NS_MOUNT_ATTR_RDONLY};

		if (sys_mount_setattr(g->fd, "", AT_EMPTY_PATH | NS_AT_RECURSIVE, &a) < 0)
			return -errno;
	}
	v->n++;
	return 0;
}

/* The workspace of a change set (ns_overlay.c), attached where the workspace goes. */
static int add_overlay(struct view *v, const char *path, const struct grant_fds *gf, bool userns,
		       const char **step)
{
	struct grant *g = &v->g[v->n];

	if (v->n == MAX_GRANTS)
		return -E2BIG;
	*g = (struct grant){.path = path, .checked = gf->ws, .dir = true, .rw = true};
	g->covered = covered(v, path);
	/*
	 * Without a user namespace, made by bpfbox as this set-up goes on
	 * (session_changes.c); its end of the socket closed here, so that its
	 * exit is our end of file, not a wait. In one, made here.
	 */
	if (gf->changes_sock[1] >= 0) {
		if (gf->changes_sock[0] >= 0)
			close(gf->changes_sock[0]);
		g->fd = -1;
		g->late = true;
		g->late_sock = gf->changes_sock[1];
		v->n++;
		return 0;
	}
	/* Made ahead and inherited (changes_warm.c): attached as it is. */
	if (gf->changes_mnt >= 0) {
		g->fd = gf->changes_mnt;
		g->warm = gf;
		g->userns = userns;
		v->n++;
		return 0;
	}
	g->fd = ns_overlay_open(path, gf, userns, step);
	if (g->fd < 0)
		return g->fd;
	v->n++;
	return 0;
}

/*
 * An overlay made ahead that this kernel will not attach here (one of
 * another user namespace): made here instead, of the same layers (the
 * kept one is never attached: with index=off the kernel allows both).
 */
static int warm_fallback(struct grant *g, const char **step)
{
	int fd;

	if (!g->warm)
		return -EPERM;
	fd = ns_overlay_open(g->path, g->warm, g->userns, step);
	if (fd < 0)
		return fd;
	close(g->fd);
	g->fd = fd;
	g->warm = NULL;
	return 0;
}

/*
 * The caller's SSH agent socket (--ssh-agent: path, checked as the fd
 * checked) at target, a path of a covered dir (/run's tmpfs): the socket
 * alone, never its directory. Opened again here (a mount of this
 * namespace) and checked to be the same file, as add_grant does.
 */
static int add_socket_grant(struct view *v, const char *target, const char *path, int checked,
			    const char **step)
{
	_cleanup_close_ int own = -1;
	struct grant *g;

	if (v->n == MAX_GRANTS)
		return -E2BIG;
	if (!covered(v, target))
		return -ENOENT; /* no tmpfs of ours to bind it into */
	own = grant_reopen(path, checked);
	if (own < 0) {
		*step = grant_changed(path, own);
		return own;
	}
	g = &v->g[v->n];
	*g = (struct grant){.path = target, .checked = -1, .rw = true, .covered = true};
	g->fd = sys_open_tree(own, "", NS_OPEN_TREE_CLONE | NS_OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (g->fd < 0)
		return -errno;
	v->n++;
	return 0;
}

/*
 * Where a checked grant goes: its path opened without symlinks (a mount
 * point made in our tmpfs when covered; else the host's, which must still
 * be the file checked). fd or -errno.
 */
static int grant_target(const struct grant *g)
{
	if (g->checked < 0)
		return -EBADF;
	return g->covered ? path_open_exact(g->path, 0) : grant_reopen(g->path, g->checked);
}

/* The mount bpfbox sends when it has made it (session_changes_forked): fd or -errno. */
static int late_mount(int sock)
{
	size_t n = 0;
	ssize_t r;
	int fd = -1;
	char b;

	do
		r = recv_with_fds(sock, &b, 1, 0, &fd, 1, &n);
	while (r < 0 && errno == EINTR);
	r = r == 1 && n == 1 ? fd : r < 0 ? -errno : -ECONNRESET; /* 0: bpfbox gone, no fd */
	close(sock); /* its only message came, or none will */
	return (int)r;
}

/* The grants put back; *ws_root: the workspace's mount (for the chdir), -1: none. */
static int attach_grants(struct view *v, const char *ws, int *ws_root, const char **step)
{
	int r;

	for (size_t i = 0; i < v->n; i++) {
		struct grant *g = &v->g[i];
		_cleanup_close_ int to = -1;

		if (g->late && (g->fd = late_mount(g->late_sock)) < 0) {
			*step = "receive the change set's overlay from bpfbox";
			return g->fd;
		}
		if (g->fd < 0)
			continue;
		*step = g->path;
		if (g->covered && (r = ns_make_mountpoint(g->path, g->dir)) < 0)
			return r;
		to = grant_target(g);
		if (to < 0 && to != -EBADF) {
			*step = grant_changed(g->path, to);
			return to;
		}
		do {
			if (to >= 0)
				r = sys_move_mount(g->fd, "", to, "",
						   NS_MOVE_MOUNT_F_EMPTY_PATH |
							   NS_MOVE_MOUNT_T_EMPTY_PATH);
			else
				r = sys_move_mount(g->fd, "", AT_FDCWD, g->path,
						   NS_MOVE_MOUNT_F_EMPTY_PATH);
			r = r < 0 ? -errno : 0;
		} while (r < 0 && g->warm && warm_fallback(g, step) == 0);
		if (r < 0)
			return r;
		if (streq(g->path, ws) && *ws_root < 0) {
			*ws_root = g->fd; /* the attached mount's root */
			g->fd = -1;
			continue;
		}
		close(g->fd);
		g->fd = -1;
	}
	return 0;
}

/* Whether a grant must be put back below dir (then dir gets a tmpfs of its own). */
static bool grants_below(const struct view *v, const char *dir)
{
	for (size_t i = 0; i < v->n; i++)
		if ((v->g[i].fd >= 0 || v->g[i].late) && is_under(v->g[i].path, dir))
			return true;
	return false;
}

/*
 * A hidden dir: an empty read-only dir bound over it (no new superblock),
 * or a tmpfs to put grants into, made read-only after (hide_done).
 */
static int hide(const struct view *v, const char *dir)
{
	if (grants_below(v, dir))
		return ns_mount_tmpfs(dir, MS_NOSUID | MS_NODEV | MS_NOEXEC,
				      "mode=0755,size=64k,nr_inodes=256");
	return mount("/dev/.bpfbox-empty", dir, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
}

static int add_ll_rule_fd(int ruleset_fd, int fd, uint64_t access, uint64_t handled)
{
	struct landlock_path_beneath_attr attr = {.parent_fd = fd,
						  .allowed_access = access & handled};

	if (attr.allowed_access &&
	    landlock_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0)
		return -errno;
	return 0;
}

static int add_ll_rule(int ruleset_fd, const char *path, uint64_t access, uint64_t handled)
{
	int fd = open(path, O_PATH | O_CLOEXEC), r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = add_ll_rule_fd(ruleset_fd, fd, access, handled);
	close(fd);
	return r;
}

/* What is new in this view has new inodes: Landlock rules for them here. */
static int landlock_rules(int ruleset_fd, const struct landlock_rights *rights,
			  const struct bpfbox_policy *p, bool tmp, bool cgroups)
{
	const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	const uint64_t dev = read | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			     LANDLOCK_ACCESS_FS_IOCTL_DEV;
	uint64_t handled = rights->fs;
	int r;

	if (p->mode == MODE_FULL_ACCESS)
		return 0;
	if ((r = add_ll_rule(ruleset_fd, "/proc", read, handled)) < 0 ||
	    (r = add_ll_rule(ruleset_fd, "/dev/shm", rights->fs, handled)) < 0 ||
	    (r = add_ll_rule(ruleset_fd, "/dev/pts", dev, handled)) < 0)
		return r;
	if (tmp && (r = add_ll_rule(ruleset_fd, "/tmp", rights->fs, handled)) < 0)
		return r;
	/* The session's own cgroups (ns_cgroup.c): read, never written. */
	if (cgroups && (r = add_ll_rule(ruleset_fd, "/sys/fs/cgroup", read, handled)) < 0)
		return r;
	return 0;
}

/* A /proc of the session's PID namespace: only its own processes. */
static int mount_proc(const char **step)
{
	*step = "mount a fresh /proc";
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -errno;
	return 0;
}

/* What is mounted over: the hidden dirs, /tmp, /dev. */
static void mark_covered(struct view *v, const struct bpfbox_policy *p, bool tmp)
{
	for (size_t i = 0; i < ARRAY_SIZE(hidden_dirs); i++) {
		struct stat st;

		if (hides(p, hidden_dirs[i]) && lstat(hidden_dirs[i], &st) == 0 &&
		    S_ISDIR(st.st_mode))
			v->covered[v->ncovered++] = hidden_dirs[i];
	}
	if (tmp)
		v->covered[v->ncovered++] = "/tmp";
	v->covered[v->ncovered++] = "/dev";
}

/* Grants, cloned while the host tree is still as it was. */
static int clone_grants(struct view *v, const struct ns_plan *n, const struct bpfbox_policy *p,
			const struct grant_fds *gf, const char **step)
{
	int r;

	*step = p->workspace;
	if (gf && gf->upper >= 0 && gf->ws >= 0)
		r = add_overlay(v, p->workspace, gf, n->user, step);
	else
		r = add_grant(v, p->workspace, p->mode != MODE_READ_ONLY,
			      grant_fd_of(gf, p->workspace), step);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->rw_paths.n; i++) {
		*step = p->rw_paths.v[i];
		if ((r = add_grant(v, p->rw_paths.v[i], true, grant_fd_of(gf, p->rw_paths.v[i]),
				   step)) < 0)
			return r;
	}
	for (size_t i = 0; i < p->ro_paths.n; i++) {
		*step = p->ro_paths.v[i];
		if ((r = add_grant(v, p->ro_paths.v[i], false, grant_fd_of(gf, p->ro_paths.v[i]),
				   step)) < 0)
			return r;
	}
	if (gf && gf->ssh_agent >= 0) {
		*step = SSH_AGENT_VIEW_PATH;
		if ((r = add_socket_grant(v, SSH_AGENT_VIEW_PATH, gf->ssh_agent_path, gf->ssh_agent,
					  step)) < 0)
			return r;
	}
	/* Name resolution: /etc/resolv.conf may point into /run (systemd-resolved). */
	if (realpath("/etc/resolv.conf", v->resolv) && !streq(v->resolv, "/etc/resolv.conf") &&
	    covered(v, v->resolv)) {
		*step = v->resolv;
		if ((r = add_grant(v, v->resolv, false, -1, step)) < 0)
			return r;
	}
	return 0;
}

/* Over the read-only host: a minimal /dev, the hidden dirs, a private /tmp, a fresh /proc. */
static int cover(struct view *v, const struct ns_plan *n, const struct bpfbox_policy *p, bool tmp,
		 const char **step)
{
	uint64_t bytes, inodes;
	int r;

	ns_tmp_limits(p->limits.disk_mb, n->inodes_per_mb, &bytes, &inodes);
	if ((r = ns_build_dev(&p->devices, bytes, inodes, n->proxy_port, step)) < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(hidden_dirs); i++) {
		if (!covered(v, hidden_dirs[i]))
			continue;
		*step = hidden_dirs[i];
		if ((r = hide(v, hidden_dirs[i])) < 0)
			return r;
	}
	if (tmp) {
		*step = "mount the private /tmp";
		if ((r = ns_mount_shared_tmpfs("/tmp", bytes, inodes)) < 0)
			return r;
	}
	return mount_proc(step);
}

int ns_child_setup(const struct ns_plan *n, const struct bpfbox_policy *p, int ruleset_fd,
		   const struct landlock_rights *rights, const struct grant_fds *gf, int *ws_fd,
		   const char **step)
{
	struct ns_mount_attr priv = {.propagation = MS_PRIVATE};
	struct ns_mount_attr ro = {.attr_set = NS_MOUNT_ATTR_RDONLY};
	bool tmp = p->private_tmp, cgroups = false;
	struct view *v;
	int r = 0;

	if (n->user && (r = ns_map_ids(n->uid, n->gid, step)) < 0)
		return r;
	if (n->user)
		ns_share_inotify();
	*step = "bring up the network namespace's loopback";
	if ((n->clone_flags & CLONE_NEWNET) && (r = ns_loopback_up()) < 0)
		return r;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;

	/* Nothing done here may reach the host's mount tree. */
	*step = "make the mount tree private";
	if (sys_mount_setattr(AT_FDCWD, "/", NS_AT_RECURSIVE, &priv) < 0) {
		r = -errno;
		goto out;
	}
	/*
	 * full-access: the host stays writable as the mode says; the session
	 * still gets its own processes, IPC and /proc.
	 */
	if (p->mode == MODE_FULL_ACCESS) {
		r = mount_proc(step);
		goto out;
	}
	mark_covered(v, p, tmp);
	if ((r = clone_grants(v, n, p, gf, step)) < 0)
		goto out;
	/* The host, read-only: one recursive flag (EROFS for chmod, utimes, xattrs). */
	*step = "make the host read-only";
	if (sys_mount_setattr(AT_FDCWD, "/", NS_AT_RECURSIVE, &ro) < 0) {
		r = -errno;
		goto out;
	}
	if ((r = cover(v, n, p, tmp, step)) < 0)
		goto out;
	if ((r = ns_cgroup_view(n->cg_id, step)) < 0)
		goto out;
	cgroups = r > 0;
	for (size_t i = 0; i < ARRAY_SIZE(hidden_dirs); i++)
		v->tmpfs[i] = covered(v, hidden_dirs[i]) && grants_below(v, hidden_dirs[i]);
	if ((r = attach_grants(v, p->workspace, ws_fd, step)) < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(hidden_dirs); i++) {
		if (!v->tmpfs[i])
			continue;
		*step = hidden_dirs[i];
		if ((r = ns_remount_ro(hidden_dirs[i])) < 0)
			goto out;
	}
	if ((r = ns_mask(n, p, gf && gf->upper >= 0 ? gf->ws : -1, step)) < 0)
		goto out;
	if (ruleset_fd >= 0) {
		*step = "add the Landlock rules of the new mounts";
		r = landlock_rules(ruleset_fd, rights, p, tmp, cgroups);
		/* A change set's overlay is a new mount: its own rule, on its root. */
		if (!r && gf && gf->upper >= 0 && *ws_fd >= 0)
			r = add_ll_rule_fd(ruleset_fd, *ws_fd, rights->fs, rights->fs);
	}
out:
	for (size_t i = 0; i < v->n; i++)
		if (v->g[i].fd >= 0)
			close(v->g[i].fd);
	free(v);
	return r;
}
