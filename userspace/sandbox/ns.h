/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The namespace layer of a session (docs/SECURITY.md, "Namespaces"): the
 * child is cloned into new mount, PID and IPC namespaces (and a user
 * namespace that maps the caller to itself when bpfbox is not root), then
 * builds its view of the host before Landlock and seccomp: the host
 * read-only, the workspace and --rw paths writable, a private tmpfs at /tmp
 * and /dev/shm, a minimal /dev, a fresh /proc, the absolute deny paths
 * masked and the directories of other users and host sockets hidden.
 * Under network deny also a network namespace with its own loopback
 * (ns_net.c), the only network the session's inet sockets have.
 */
#ifndef BPFBOX_NS_H
#define BPFBOX_NS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct bpfbox_policy;
struct landlock_rights;
struct grant_fds;

/* What namespaces a session gets on this host, decided before the fork. */
struct ns_plan {
	uint64_t clone_flags; /* CLONE_NEW* for clone3; 0: no namespace layer */
	bool user;	      /* a user namespace mapping uid/gid to themselves */
	uid_t uid;	      /* the caller's ids, mapped in the user namespace */
	gid_t gid;
	char why_not[160];	/* non-empty: the layer is missing, and why */
	uint64_t inodes_per_mb; /* the private /tmp's nr_inodes per MB of the disk limit */
	/*
	 * The session id: a cgroup named so is the session's own, shown at
	 * /sys/fs/cgroup (ns_cgroup.c). NULL: no cgroup view.
	 */
	const char *cg_id;
	/*
	 * The credential entries found at plan (cred_scan.c): masked in the
	 * child, each the same file (st_dev, st_ino) or the set-up fails.
	 */
	char *const *masks;
	const uint64_t (*mask_ids)[2];
	size_t nmasks;
	/*
	 * Egress through the proxy without BPF (session_net_by_proxy): the
	 * child makes the proxy's listener (127.0.0.1:proxy_port) and its
	 * resolver's socket (127.0.0.1:53, which /etc/resolv.conf in the view
	 * names) in the session's network namespace and sends them on
	 * proxy_sock. proxy_port 0: none.
	 */
	uint16_t proxy_port;
	int proxy_sock;
};

/*
 * Decides and probes (a cheap clone of the namespaces, CLONE_VM|CLONE_VFORK)
 * whether the namespaces can be made. want false (--no-namespaces): none,
 * why_not says so. Returns 0; the plan tells what holds.
 */
int ns_plan(struct ns_plan *n, bool want);

/* Runs in the child: the network namespace's lo up. 0 or -errno. */
int ns_loopback_up(void);

/* The clone with n's flags failed with err: no namespaces, why_not says why. */
void ns_spawn_failed(struct ns_plan *n, int err);

/* The private /tmp's tmpfs limits for a session's disk limit in MB. */
void ns_tmp_limits(uint64_t disk_mb, uint64_t inodes_per_mb, uint64_t *bytes, uint64_t *inodes);

/*
 * Runs in the child (pid 1 of the new PID namespace): maps the user
 * namespace, then builds the mounts for p. When ruleset_fd >= 0, adds the
 * Landlock rules for what is new here (/proc, /tmp, /dev/shm, /dev/pts).
 * The workspace and grants are taken as gf has them (grants.h), never by
 * following their paths; *ws_fd: the workspace's new mount, for the chdir
 * (-1: not mounted anew; the caller opens it as gf has it). Returns 0 or
 * -errno with *step naming what failed.
 */
int ns_child_setup(const struct ns_plan *n, const struct bpfbox_policy *p, int ruleset_fd,
		   const struct landlock_rights *rights, const struct grant_fds *gf, int *ws_fd,
		   const char **step);

/*
 * ns_cgroup.c, in the child once it is in its session cgroups and the host
 * is read-only: when it has a cgroup named id in some hierarchy, a cgroup
 * namespace of its own and each such hierarchy mounted read-only at its
 * place under /sys/fs/cgroup, rooted at the session's cgroup. 1: shown,
 * 0: no cgroup of its own (nothing changed), -errno with *step.
 */
int ns_cgroup_view(const char *id, const char **step);

/*
 * ns_overlay.c, in the child: an overlayfs of the workspace at path
 * (lower) and gf's change set (upper, work), each reopened here by its
 * path and checked to be the directory the parent opened (grants.h), then
 * given to overlayfs as this process's fd (/proc/self/fd/N); userns: a
 * user namespace's mount (user.overlay.* xattrs). The detached mount's fd
 * (nosuid, nodev), or -errno with *step naming what failed.
 */
int ns_overlay_open(const char *path, const struct grant_fds *gf, bool userns, const char **step);
/*
 * The same overlay of the fds lower, upper and work as they are (the
 * caller's, checked, of its own mount namespace): a root session's is
 * made by bpfbox before the fork (session_changes.c), about half what the
 * child pays (docs/benchmarks.md). The detached mount's fd, or -errno
 * with *step.
 */
int ns_overlay_make(int lower, int upper, int work, bool userns, const char **step);

/*
 * ns_userns.c: in a new user namespace, the caller's uid and gid mapped to
 * themselves and setgroups denied (0 or -errno, *step what failed); the
 * session's share of its user's inotify instances and watches.
 */
int ns_map_ids(uid_t uid, gid_t gid, const char **step);
void ns_share_inotify(void);

/*
 * Where the kernel shows this process's argv and environment
 * (/proc/PID/cmdline, /proc/PID/environ): the init wipes both, since it is
 * a copy of bpfbox and they hold the caller's (docs/SECURITY.md, "The
 * session's init").
 */
struct ns_init_scrub {
	unsigned long arg_start, arg_end, env_start, env_end;
};

/* Reads the bounds from /proc/self/stat. Returns 0 or -errno. */
int ns_init_scrub_read(struct ns_init_scrub *s);

/*
 * ns_mask.c, in the child once the grants are put back: the masks over
 * p's absolute deny paths and n's credential entries (each checked to be
 * the file the plan found; in the workspace under a change set's overlay,
 * checked in lower, the workspace's own fd; else lower is -1). 0 or
 * -errno with *step naming the path.
 */
int ns_mask(const struct ns_plan *n, const struct bpfbox_policy *p, int lower, const char **step);

/*
 * Runs in the child after every restriction, instead of exec: vforks
 * exec_fn(arg) (which must exec or _exit), and stays as the PID
 * namespace's init: not dumpable (no /proc/1/{environ,mem,maps} for the
 * session), its argv and environment wiped (scrub), it reaps everything,
 * and exits with the command's status (128+N for signal N) when the
 * command ends; the kernel then kills whatever is left in the namespace.
 * Returns -errno if the fork failed.
 */
int ns_run_as_init(void (*exec_fn)(void *), void *arg, const struct ns_init_scrub *scrub);

#endif
