/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The workspace and the --ro/--rw grants, each resolved once (grants.c).
 * The policy checked their real paths (policy/load_expand.c, validate.c);
 * from then on every step of the session (the Landlock rules, the mounts,
 * the chdir, the disk monitor) takes the fd opened here, or a fresh open
 * of the same path without symlinks that must be the same file, never the
 * path followed again: a symlink renamed over a checked directory after
 * the check cannot redirect a grant (docs/SECURITY.md, "One resolution").
 */
#ifndef BPFBOX_GRANTS_H
#define BPFBOX_GRANTS_H

#include <stddef.h>

struct bpfbox_policy;

struct grant_fds {
	const struct bpfbox_policy *p; /* whose paths these are */
	int ws;			       /* the workspace, O_PATH; -1: none */
	int *rw, *ro;		       /* one per p->rw_paths / p->ro_paths entry, O_PATH */
	size_t nrw, nro;
	int ssh_agent;		    /* --ssh-agent: the caller's agent socket, O_PATH; -1: none */
	const char *ssh_agent_path; /* its path, resolved (the session's) */
	/*
	 * A change set (changes.h): its upper and work dirs, O_PATH, by the
	 * paths bpfbox made them at; the child reopens each by its path and
	 * checks it is the same directory. -1: the workspace is written directly.
	 */
	int upper, work;
	const char *upper_path, *work_path;
	/*
	 * Without a user namespace, the overlay bpfbox made of them just
	 * after the fork, beside the child's set-up, kept to the session's
	 * end (its teardown is the end's helper's); -1: none yet, or the
	 * child makes it (in a user namespace only it may). It goes to the
	 * child over changes_sock: [0] bpfbox's end, [1] the child's, which
	 * receives it when it attaches the workspace (ns_mount.c); -1: not so.
	 */
	int changes_mnt;
	int changes_sock[2];
	char bad[4096 + 128]; /* after a failure: the path and what changed */
};

/*
 * Where a session with a mount namespace reaches the caller's SSH agent
 * (--ssh-agent): the socket alone, bound in /run's tmpfs (ns_mount.c).
 */
#define SSH_AGENT_VIEW_PATH "/run/ssh-agent.sock"

/* An empty set (every fd -1), safe to close. */
void grant_fds_init(struct grant_fds *g);

/*
 * Opens p's workspace and grants, each by its checked path without
 * following any symlink (openat2 RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW
 * name at a time before Linux 5.6), and checks that each fd still has
 * that path; ssh_agent (NULL or "": none) the same way, checked to be a
 * socket. 0, or -errno with g->bad naming the path (ELOOP: a symlink is
 * there now).
 */
int grant_fds_open(struct grant_fds *g, const struct bpfbox_policy *p, const char *ssh_agent);
void grant_fds_close(struct grant_fds *g);

/* The fd opened for path (the workspace or a grant of g->p), -1: none (or g NULL). */
int grant_fd_of(const struct grant_fds *g, const char *path);

/* path (absolute) opened O_PATH | flags without following a symlink; fd or -errno. */
int path_open_exact(const char *path, int flags);
/*
 * path_open_exact's way before openat2 (Linux 5.6), or where a seccomp
 * filter refuses it: one O_NOFOLLOW name at a time from /, each checked not
 * to be a symlink (-ELOOP); "." and ".." are refused (-EINVAL).
 */
int path_open_by_names(const char *path, int flags);

/*
 * path opened again (path_open_exact), in this process's mount namespace,
 * and checked to be the file of checked: fd, -ELOOP (a symlink there now)
 * or -ESTALE (another file there now).
 */
int grant_reopen(const char *path, int checked);

/*
 * For an error line: "'PATH' (changed after it was checked: a symlink is
 * there now)" for -ELOOP and -ESTALE (a static buffer), else path itself.
 */
const char *grant_changed(const char *path, int r);

#endif
