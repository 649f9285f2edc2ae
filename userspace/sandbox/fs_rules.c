// SPDX-License-Identifier: GPL-2.0
/* The Landlock ruleset of one session, built before the child is forked. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "landlock.h"
#include "cred_scan.h"
#include "grants.h"
#include "../policy/policy.h"
#include "../lib/util.h"

/* Read-only and executable for every session (docs/SECURITY.md). */
static const char *const system_ro[] = {
	"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc",
};

bool landlock_system_readable(const char *path)
{
	for (size_t i = 0; i < ARRAY_SIZE(system_ro); i++) {
		size_t n = strlen(system_ro[i]);

		if (!strncmp(path, system_ro[i], n) && (path[n] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

/*
 * Readable without exec: process info, CPU topology and the memory
 * settings runtimes size themselves by (the JVM, Python's and Rust's
 * allocators read the huge page modes and sizes); none names a secret.
 */
static const char *const system_read[] = {
	"/proc", /* first: a mount namespace has its own (see masked) */
	"/sys/devices/system/cpu",
	"/sys/kernel/mm/transparent_hugepage",
	"/sys/kernel/mm/hugepages",
};

/*
 * Device nodes a shell and a compiler expect to write or ioctl. Not
 * /dev/pts: every terminal of the user lives there, and a session that could
 * open them would read what is typed in another one. New ptys come from
 * /dev/ptmx (libc opens their other end with TIOCGPTPEER); the session's
 * own terminal is granted by name (session_tty_rules).
 */
static const char *const dev_rw[] = {
	"/dev/null",	"/dev/zero", "/dev/full", "/dev/random",
	"/dev/urandom", "/dev/tty",  "/dev/ptmx", "/dev/shm",
};

struct rules_ctx {
	int fd;
	uint64_t handled;
	const struct strv *hidden; /* absolute paths to leave out */
	const char **bad;
	bool nofollow; /* inside a grant: a symlink is not followed, and gets no rule */
};

/*
 * Adds a rule for the file of fd (O_PATH). type is a readdir d_type;
 * DT_UNKNOWN (or a symlink) costs an fstat to learn whether the rule is
 * for a directory.
 */
static int add_rule_fd(struct rules_ctx *c, int fd, const char *path, unsigned char type,
		       uint64_t access)
{
	struct landlock_path_beneath_attr attr = {0};
	struct stat st;

	if (type == DT_UNKNOWN || type == DT_LNK) {
		if (fstat(fd, &st) < 0) {
			*c->bad = path;
			return -errno;
		}
		/* Inside a grant, a link's target is not granted through it. */
		if (c->nofollow && S_ISLNK(st.st_mode))
			return 0;
		type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
	}
	if (type != DT_DIR)
		access &= ~LANDLOCK_FS_DIR_ONLY;
	attr.parent_fd = fd;
	attr.allowed_access = access & c->handled;
	if (!attr.allowed_access)
		return 0;
	if (landlock_add_rule(c->fd, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) < 0) {
		*c->bad = path;
		return -errno;
	}
	return 0;
}

/*
 * Adds a rule for name, relative to dirfd (AT_FDCWD with an absolute
 * path).
 */
static int add_rule_at(struct rules_ctx *c, int dirfd, const char *name, const char *path,
		       unsigned char type, uint64_t access, bool optional)
{
	_cleanup_close_ int fd = -1;

	if (c->nofollow && type == DT_LNK)
		return 0;
	fd = openat(dirfd, name, O_PATH | O_CLOEXEC | (c->nofollow ? O_NOFOLLOW : 0));
	if (fd < 0) {
		if (optional && (errno == ENOENT || errno == EACCES))
			return 0;
		*c->bad = path;
		return -errno;
	}
	return add_rule_fd(c, fd, path, type, access);
}

static int add_rule(struct rules_ctx *c, const char *path, uint64_t access, bool optional)
{
	return add_rule_at(c, AT_FDCWD, path, path, DT_UNKNOWN, access, optional);
}

/* Whether a hidden path lies strictly below dir. */
static bool hides_below(const struct strv *hidden, const char *dir)
{
	size_t len = strlen(dir);

	if (streq(dir, "/"))
		return hidden->n > 0;
	for (size_t i = 0; i < hidden->n; i++) {
		const char *h = hidden->v[i];

		if (strncmp(h, dir, len) == 0 && h[len] == '/')
			return true;
	}
	return false;
}

/*
 * Landlock only grants, so a denied file inside a granted tree is carved
 * out by granting the tree's other entries one by one, only along the
 * directories that lead to a hidden path. dfd: the directory at path,
 * opened for reading (taken: closed here).
 */
static int walk_tree(struct rules_ctx *c, int dfd, const char *path, uint64_t access)
{
	struct dirent *e;
	int r = 0;
	DIR *d = fdopendir(dfd);

	if (!d) {
		*c->bad = path;
		r = -errno;
		close(dfd);
		return r;
	}
	while (!r && (e = readdir(d))) {
		char child[PATH_MAX];

		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		snprintf(child, sizeof(child), "%s/%s", streq(path, "/") ? "" : path, e->d_name);
		/* Only directories on the way to a hidden path need a walk. */
		if (strv_contains(c->hidden, child))
			continue;
		if (e->d_type == DT_DIR && hides_below(c->hidden, child)) {
			int cfd = openat(dirfd(d), e->d_name,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC |
						 (c->nofollow ? O_NOFOLLOW : 0));

			if (cfd >= 0)
				r = walk_tree(c, cfd, child, access);
			else if (errno != ENOENT) {
				*c->bad = child;
				r = -errno;
			}
		} else {
			r = add_rule_at(c, dirfd(d), e->d_name, child, e->d_type, access, true);
		}
	}
	closedir(d);
	return r;
}

static int add_tree(struct rules_ctx *c, const char *path, uint64_t access, bool optional)
{
	int dfd;

	if (strv_contains(c->hidden, path))
		return 0;
	if (!hides_below(c->hidden, path))
		return add_rule(c, path, access, optional);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		if (optional && errno == ENOENT)
			return 0;
		*c->bad = path;
		return -errno;
	}
	return walk_tree(c, dfd, path, access);
}

/*
 * A grant's tree, from the fd it was opened as once (grants.c), never by
 * its path again; symlinks inside are not followed. fd -1 (a path bpfbox
 * made itself): by path.
 */
static int add_grant_tree(struct rules_ctx *c, int fd, const char *path, uint64_t access)
{
	int r, dfd;

	if (fd < 0)
		return add_tree(c, path, access, false);
	if (strv_contains(c->hidden, path))
		return 0;
	if (!hides_below(c->hidden, path))
		return add_rule_fd(c, fd, path, DT_UNKNOWN, access);
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		*c->bad = path;
		return -errno;
	}
	c->nofollow = true;
	r = walk_tree(c, dfd, path, access);
	c->nofollow = false;
	return r;
}

/* Whether the DAC bits let uid/gid (or a supplementary group) in. */
static bool dac_allows(const struct stat *st, uid_t uid, gid_t gid)
{
	mode_t want_u = S_IRUSR, want_g = S_IRGRP, want_o = S_IROTH;
	gid_t groups[256];
	int n;

	if (S_ISDIR(st->st_mode)) {
		/* Search alone is enough to open a known name inside. */
		want_u |= S_IXUSR;
		want_g |= S_IXGRP;
		want_o |= S_IXOTH;
	}
	if (st->st_uid == uid)
		return st->st_mode & want_u;
	if (st->st_gid == gid)
		return st->st_mode & want_g;
	n = getgroups(ARRAY_SIZE(groups), groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == st->st_gid)
			return st->st_mode & want_g;
	return st->st_mode & want_o;
}

/*
 * The absolute deny paths that need carving out: those that exist and the
 * session's user could read. Without capabilities a session's root is an
 * ordinary owner, so /etc/shadow (root, 0640) needs it; for other users it
 * is already closed by its mode, and the carve-out would cost a rule per
 * entry of /etc for nothing.
 */
static int readable_deny_paths(const struct bpfbox_policy *p, uid_t uid, gid_t gid,
			       struct strv *out)
{
	for (size_t i = 0; i < p->deny_paths.n; i++) {
		const char *path = p->deny_paths.v[i];
		struct stat st;
		int r;

		if (path[0] != '/' || stat(path, &st) < 0 || !dac_allows(&st, uid, gid))
			continue;
		r = strv_push(out, path);
		if (r)
			return r;
	}
	return 0;
}

uint32_t landlock_restrict_flags(const struct landlock_rights *rights)
{
	/* Log denials of the new program too: they are what we audit. */
	return rights->restrict_flags & LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON;
}

/*
 * What the rules must leave out without a mount namespace: the deny paths
 * and the credential entries of the granted trees but the workspace's.
 * With one, the view masks them all by a mount (ns_mount.c, cred_scan.c):
 * nothing is carved out, so the workspace stays listable and writable.
 */
static int hidden_paths(const struct bpfbox_policy *p, const struct landlock_extra *x, uid_t uid,
			gid_t gid, struct strv *hidden, size_t *n_deny)
{
	int r;

	*n_deny = 0;
	if (x->masked)
		return 0;
	r = readable_deny_paths(p, uid, gid, hidden);
	*n_deny = hidden->n;
	/*
	 * The credential entries at the top of the other granted trees and of
	 * the caller's home (.ssh, .aws, .kube/config, ...), a readdir per tree
	 * and per directory on the way to a two-component pattern. Not the
	 * workspace's: a carve-out there makes its top unlistable and
	 * unwritable (`ls`, `git init` fail); said in not_enforced (status.c).
	 */
	if (!r)
		r = cred_top_paths(p, x->caller_home, hidden);
	for (size_t i = 0; !r && i < p->ro_paths.n; i++)
		r = cred_top_paths(p, p->ro_paths.v[i], hidden);
	for (size_t i = 0; !r && i < p->rw_paths.n; i++)
		r = cred_top_paths(p, p->rw_paths.v[i], hidden);
	for (size_t i = 0; !r && x->ro && i < x->ro->n; i++)
		r = cred_top_paths(p, x->ro->v[i], hidden);
	return r;
}

/*
 * The system's trees: read-only, readable, the device nodes tools need and
 * the --device ones (policy_grant_problem checked each), our terminals.
 */
static int system_rules(struct rules_ctx *c, bool masked, const struct strv *devices)
{
	const uint64_t ro = LANDLOCK_FS_READ;
	const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	const uint64_t dev = read | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			     LANDLOCK_ACCESS_FS_IOCTL_DEV;
	int r = 0;

	for (size_t i = 0; !r && i < ARRAY_SIZE(system_ro); i++)
		r = add_tree(c, system_ro[i], ro, true);
	/*
	 * Masked (a mount namespace): /proc, /dev/shm and /dev/pts are new
	 * mounts there, and ns_mount.c adds their rules in the child; /dev/ptmx
	 * is a link into that /dev/pts.
	 */
	for (size_t i = masked ? 1 : 0; !r && i < ARRAY_SIZE(system_read); i++)
		r = add_tree(c, system_read[i], read, true);
	for (size_t i = 0; !r && i < ARRAY_SIZE(dev_rw); i++)
		if (!masked || !streq(dev_rw[i], "/dev/shm"))
			r = add_rule(c, dev_rw[i], dev | LANDLOCK_ACCESS_FS_READ_DIR, true);
	for (size_t i = 0; !r && i < devices->n; i++)
		r = add_rule(c, devices->v[i], dev, false);
	/* The terminal(s) bpfbox itself was given, so `bpfbox run -- vim` works. */
	for (int fd = 0; !masked && !r && fd <= 2; fd++) {
		char tty[64];

		if (ttyname_r(fd, tty, sizeof(tty)) == 0 && startswith(tty, "/dev/pts/"))
			r = add_rule(c, tty, dev, true);
	}
	return r;
}

int landlock_build_ruleset(const struct bpfbox_policy *p, const struct landlock_rights *rights,
			   const struct landlock_extra *x, uid_t uid, gid_t gid, const char **bad)
{
	const uint64_t ro = LANDLOCK_FS_READ;
	struct bpfbox_ruleset_attr attr = {0};
	struct strv hidden = {0}, ws_hidden;
	struct rules_ctx c = {.bad = bad};
	size_t n_deny;
	bool fs = p->mode != MODE_FULL_ACCESS;
	uint64_t rw = rights->fs;
	int r = 0;

	if (fs)
		attr.handled_access_fs = rights->fs;
	/*
	 * No TCP rule at all means every TCP bind and connect is denied. With
	 * an allow-list, BPF decides connects by address; binds stay denied.
	 */
	/*
	 * A network namespace of the session's own (ns.h) is the network
	 * deny: its loopback is the session's, nothing else is reachable.
	 */
	if (p->net == NET_DENY && !x->private_net)
		/* UDP too (ABI 10): no bind, connect or send to any port. */
		attr.handled_access_net =
			p->net_allow.n ? rights->net & LANDLOCK_ACCESS_NET_BIND_TCP : rights->net;
	attr.scoped = rights->scoped;
	c.fd = landlock_create_ruleset(&attr, 0);
	if (c.fd < 0) {
		*bad = "landlock_create_ruleset";
		return -errno;
	}
	if (!fs)
		return c.fd;
	c.handled = attr.handled_access_fs;

	r = hidden_paths(p, x, uid, gid, &hidden, &n_deny);
	if (r)
		goto fail;
	c.hidden = &hidden;
	r = system_rules(&c, x->masked, &p->devices);
	/* Not /dev: its disks and every terminal of the host; dev_rw has what tools need. */
	if (!r && x->read_host && !strv_contains(&hidden, "/dev"))
		r = strv_push(&hidden, "/dev");
	if (!r && x->read_host)
		r = add_tree(&c, "/", ro, false);
	/* The workspace and the grants: by the fds they were checked as (grants.h). */
	for (size_t i = 0; !r && i < p->ro_paths.n; i++)
		r = add_grant_tree(&c, grant_fd_of(x->grants, p->ro_paths.v[i]), p->ro_paths.v[i],
				   ro);
	for (size_t i = 0; !r && x->ro && i < x->ro->n; i++)
		r = add_tree(&c, x->ro->v[i], ro, true);
	/* The workspace whole but the absolute deny paths (hidden_paths). */
	ws_hidden = (struct strv){.v = hidden.v, .n = n_deny};
	c.hidden = &ws_hidden;
	if (!r)
		r = add_grant_tree(&c, grant_fd_of(x->grants, p->workspace), p->workspace,
				   p->mode == MODE_READ_ONLY ? ro : rw);
	c.hidden = &hidden;
	for (size_t i = 0; !r && i < p->rw_paths.n; i++)
		r = add_grant_tree(&c, grant_fd_of(x->grants, p->rw_paths.v[i]), p->rw_paths.v[i],
				   rw);
	/* --ssh-agent: connect to the socket itself (Landlock ABI 9), nothing else there. */
	if (!r && x->grants && x->grants->ssh_agent >= 0)
		r = add_rule_fd(&c, x->grants->ssh_agent, "the SSH agent's socket", DT_UNKNOWN,
				LANDLOCK_ACCESS_FS_RESOLVE_UNIX);
	if (!r && x->private_tmp)
		r = add_rule(&c, x->private_tmp, rw, false);
	if (!r && x->home)
		r = add_rule(&c, x->home, rw, false);
	if (r)
		goto fail;
	strv_clear(&hidden);
	return c.fd;
fail:
	strv_clear(&hidden);
	close(c.fd);
	return r;
}
