// SPDX-License-Identifier: GPL-2.0
/*
 * A session's plan (docs/ARCHITECTURE.md): the layers this host can give
 * it, what is not enforced and why, its limits and cgroup. Running it is
 * session_run.c, its environment session_env.c.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"
#include "../lib/cgroup.h"
#include "session_internal.h"
#include "landlock.h"
#include "cred_scan.h"
#include "cred_match.h"
#include "changes.h"
#include "grants.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/prefault.h"
#include "../lib/util.h"

static void add_not_enforced(struct session_layers *l, const char *what)
{
	size_t len = strlen(l->not_enforced);

	snprintf(l->not_enforced + len, sizeof(l->not_enforced) - len, "%s%s", len ? "; " : "",
		 what);
}

void session_not_enforced(struct session *s, const char *what)
{
	add_not_enforced(&s->layers, what);
}

const char *session_tmp_base(void)
{
	const char *base = getenv("TMPDIR");

	return base && base[0] == '/' ? base : "/tmp";
}

/* The session id is 128 random bits: the name is unique and unguessable. */
static void name_private_tmp(struct session *s)
{
	/* With a mount namespace, /tmp itself is the session's tmpfs (ns_mount.c). */
	if (!s->policy->private_tmp ||
	    (s->layers.ns.clone_flags && s->policy->mode != MODE_FULL_ACCESS))
		return;
	snprintf(s->private_tmp, sizeof(s->private_tmp), "%s/bpfbox-%s", session_tmp_base(), s->id);
}

static bool unix_dir_fits(const char *dir)
{
	return dir[0] == '/' && strlen(dir) < BPFBOX_UNIX_PATH_LEN - 2;
}

const char *session_ssh_agent_sock(const struct session *s)
{
	if (!s->ssh_agent[0])
		return NULL;
	if (s->layers.ns.clone_flags && s->policy->mode != MODE_FULL_ACCESS)
		return SSH_AGENT_VIEW_PATH;
	return s->ssh_agent;
}

/*
 * --ssh-agent: the caller's $SSH_AUTH_SOCK, resolved and checked to be a
 * socket, or the session is refused (docs/runtime.md). 0 or -EINVAL.
 */
static int plan_ssh_agent(struct session *s)
{
	const char *sock = getenv("SSH_AUTH_SOCK");
	struct stat st;

	if (!s->policy->ssh_agent)
		return 0;
	if (!sock || !*sock) {
		log_error("--ssh-agent: SSH_AUTH_SOCK is not set, there is no agent to forward "
			  "(start one: eval \"$(ssh-agent)\"; ssh-add), or drop --ssh-agent; "
			  "nothing ran");
		return -EINVAL;
	}
	if (!realpath(sock, s->ssh_agent) || stat(s->ssh_agent, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		s->ssh_agent[0] = '\0';
		log_error("--ssh-agent: SSH_AUTH_SOCK=%s is not a socket (the agent is gone?); "
			  "start one (eval \"$(ssh-agent)\"; ssh-add), or drop --ssh-agent; "
			  "nothing ran",
			  sock);
		return -EINVAL;
	}
	return 0;
}

size_t session_writable_dirs(const struct session *s, bool for_unix, const char **dirs, size_t max)
{
	const struct bpfbox_policy *p = s->policy;
	size_t n = 0;

	if (for_unix && max > BPFBOX_UNIX_PREFIXES)
		max = BPFBOX_UNIX_PREFIXES;
	/* The agent's socket alone, never its directory: by the name the session uses. */
	if (s->ssh_agent[0] && n < max) {
		const char *sock = for_unix ? session_ssh_agent_sock(s) : s->ssh_agent;

		if (!for_unix || unix_dir_fits(sock))
			dirs[n++] = sock;
	}
	if (p->mode != MODE_READ_ONLY && n < max && (!for_unix || unix_dir_fits(p->workspace)))
		dirs[n++] = p->workspace;
	if (s->private_tmp[0] && n < max && (!for_unix || unix_dir_fits(s->private_tmp)))
		dirs[n++] = s->private_tmp;
	/* With namespaces /tmp is the session's own tmpfs; the host's is not in its view. */
	else if (for_unix && !s->private_tmp[0] && p->private_tmp && s->layers.ns.clone_flags &&
		 n < max)
		dirs[n++] = "/tmp";
	for (size_t i = 0; i < p->rw_paths.n && n < max; i++)
		if (!for_unix || unix_dir_fits(p->rw_paths.v[i]))
			dirs[n++] = p->rw_paths.v[i];
	/*
	 * A change set's overlay sets up its work directory at its mount, in
	 * the session's cgroup (the child mounts it). Out of the session's
	 * view and Landlock's rules: only the overlay writes there.
	 */
	if (!for_unix && s->changes_root[0] && n < max)
		dirs[n++] = s->changes_root;
	return n;
}

static void free_masks(struct session *s)
{
	if (s->cred_masks)
		strv_clear(s->cred_masks);
	free(s->cred_masks);
	free(s->cred_ids);
	s->cred_masks = NULL;
	s->cred_ids = NULL;
	s->layers.ns.masks = NULL;
	s->layers.ns.nmasks = 0;
}

/*
 * With a mount namespace, the credential entries of the workspace and the
 * --ro/--rw grants, found by name within the scan's bounds, are masked by
 * the view (session_view_policy); what the bounds left unchecked, and the
 * other names (hard links) of a match, go to s->cred_unchecked.
 */
static int plan_masks(struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	char record_dir[PATH_MAX];
	struct cred_scan sc;
	int r;

	if (p->mode == MODE_FULL_ACCESS)
		return 0;
	/* A workspace that is itself a credential entry would be masked whole. */
	if (p->workspace && cred_path_denied(p, p->workspace))
		return log_error_errno(EPERM,
				       "the workspace %s is inside a credential path (a deny "
				       "pattern matches it); nothing ran",
				       p->workspace);
	if (!s->layers.ns.clone_flags)
		return 0;
	s->cred_masks = calloc(1, sizeof(*s->cred_masks));
	if (!s->cred_masks)
		return -ENOMEM;
	cred_scan_init(&sc);
	/* A large tree's record, where every session's view masks it (home.c). */
	if (changes_root(record_dir, sizeof(record_dir), false) == 0)
		sc.record_dir = record_dir;
	/* Twice when a match has other names (hard links): those are masked too. */
	for (int pass = 0; pass < 2; pass++) {
		if (pass && !cred_scan_relink(&sc))
			break;
		r = cred_scan_tree(p, p->workspace, &sc, s->cred_masks);
		for (size_t i = 0; !r && i < p->ro_paths.n; i++)
			r = cred_scan_tree(p, p->ro_paths.v[i], &sc, s->cred_masks);
		for (size_t i = 0; !r && i < p->rw_paths.n; i++)
			r = cred_scan_tree(p, p->rw_paths.v[i], &sc, s->cred_masks);
		if (r)
			break;
	}
	cred_scan_links(&sc, s->cred_masks);
	s->cred_ids = sc.ids;
	if (!r)
		r = cred_scan_dedupe(&sc, s->cred_masks);
	if (r < 0)
		return r; /* session_cleanup frees them */
	/*
	 * More matches than masks: decoys a session made could push a real
	 * credential file past the cap, so none runs (docs/SECURITY.md).
	 */
	if (sc.said & CRED_SCAN_SAID_MASKS)
		return log_error_errno(E2BIG,
				       "more than %d credential entries in the workspace and the "
				       "grants (%s); nothing ran",
				       CRED_SCAN_MAX_MASKS, sc.unchecked);
	s->layers.ns.masks = s->cred_masks->v;
	s->layers.ns.mask_ids = (const uint64_t(*)[2])s->cred_ids;
	s->layers.ns.nmasks = s->cred_masks->n;
	snprintf(s->cred_unchecked, sizeof(s->cred_unchecked), "%s", sc.unchecked);
	return r;
}

int session_plan(struct session *s, const struct bpfbox_policy *p)
{
	struct session_layers *l = &s->layers;
	int abi;

	memset(s, 0, sizeof(*s));
	s->policy = p;
	/* First: it sets the fds session_cleanup() closes. */
	limits_plan(&s->lim, &p->limits, NULL, LIMITS_VIA_AUTO);
	monitor_disk_reserve(&s->lim);
	s->hooks.poll_fd = -1;
	s->result.wait_status = -1;
	s->status_fd = -1;
	s->home_lock = -1;
	if ((abi = session_name_new(s->id)) < 0)
		return log_error_errno(abi, "cannot generate a session id");

	abi = landlock_abi();
	if (abi > 0) {
		l->landlock = true;
		l->landlock_abi = abi;
		landlock_rights_for_abi(abi, &l->rights);
	} else {
		add_not_enforced(l,
				 abi == -EOPNOTSUPP
					 ? "filesystem isolation (Landlock is not enabled at boot)"
					 : "filesystem isolation (no Landlock in this kernel)");
	}
	/* PR_GET_SECCOMP fails with EINVAL only when seccomp is not built in. */
	l->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	if (!l->seccomp)
		add_not_enforced(l, "syscall filtering and network deny (no seccomp)");
	if (l->landlock && !l->rights.scoped)
		add_not_enforced(l, "abstract unix socket and signal isolation (Landlock ABI < 6)");
	if (l->landlock && p->net == NET_DENY && !l->rights.net && !l->seccomp)
		add_not_enforced(l, "network deny");
	/* What holds of memory, pids, cpu and disk is in s->lim.not_enforced. */
	ns_plan(&l->ns, p->namespaces);
	l->ns.inodes_per_mb = MONITOR_ENTRIES_PER_MB;
	l->ns.cg_id = s->id; /* session_take_id() may change it in place */
	/*
	 * Network deny: a network namespace with only its own loopback, where
	 * servers and clients of the session meet (docs/network.md). An
	 * allow-list needs the host's network: none.
	 */
	if (l->ns.clone_flags && p->net == NET_DENY && !p->net_allow.n)
		l->ns.clone_flags |= CLONE_NEWNET;
	if (l->ns.why_not[0]) {
		char what[400];

		snprintf(
			what, sizeof(what),
			"read-only host, private /proc /tmp /dev/shm, process and IPC isolation%s, "
			"its own cgroup's limits at /sys/fs/cgroup (no namespaces: %s)",
			p->net == NET_DENY && !p->net_allow.n
				? ", a loopback of its own (inet sockets stay denied)"
				: "",
			l->ns.why_not);
		add_not_enforced(l, what);
	}

	if ((abi = plan_masks(s)) < 0) {
		free_masks(s);
		if (abi == -ENOMEM)
			return log_error_errno(abi, "cannot list the credential entries of the "
						    "workspace");
		return abi;
	}
	if ((abi = plan_ssh_agent(s)) < 0) {
		free_masks(s);
		return abi;
	}
	session_changes_plan(s);
	session_changes_note(s);
	name_private_tmp(s);
	/* Embedded mode without BPF asks for what Landlock and seccomp give. */
	l->requested = LEVEL_STANDARD;
	l->enabled = level_from(false, l->landlock, l->seccomp, false);
	return 0;
}

void session_note_cgroup_view(struct session *s)
{
	bool own = s->lim.cgroup;

	for (int r = 0; r < RES__COUNT; r++)
		own |= s->lim.how[r] == LIMIT_CGROUP1;
	/* Without namespaces it is said with them; full-access shows the host's. */
	if (own || !s->layers.ns.clone_flags || s->policy->mode == MODE_FULL_ACCESS)
		return;
	/* Why there is none is said with the limits (s->lim.not_enforced). */
	add_not_enforced(&s->layers, "its own cgroup's limits at /sys/fs/cgroup (no session "
				     "cgroup)");
}

void session_take_id(struct session *s, const char *id)
{
	snprintf(s->id, sizeof(s->id), "%s", id);
	name_private_tmp(s);
}

void session_plan_limits(struct session *s, enum limits_via via)
{
	/* Planned again (a daemon's refusal): no fd of its cgroups stays open. */
	limits_close_fds(&s->lim);
	limits_plan(&s->lim, &s->policy->limits, NULL, via);
	monitor_disk_reserve(&s->lim);
}

bool session_limits_by_cgroup(const struct session *s)
{
	for (int r = 0; r < RES__COUNT; r++)
		if (s->lim.how[r] != LIMIT_CGROUP2 && s->lim.how[r] != LIMIT_CGROUP1)
			return false;
	return true;
}

int session_prepare_cgroup(struct session *s)
{
	if (s->lim_made)
		return s->lim.cg[0] ? 0 : -ENOENT;
	s->lim_made = true;
	return limits_create(&s->lim, s->id);
}

void session_cleanup(struct session *s)
{
	limits_destroy(&s->lim);
	free_masks(s);
	session_changes_free(s);
}

void session_exec_confirmed(struct session *s, pid_t child, bool not_found)
{
	/* The pages the fork left shared with the init, present for the end's path (prefault.h). */
	prefault_writable(true);
	s->cmd_pid = child;
	/* With a PID namespace the command is the init's child (ns_run_as_init). */
	if (s->layers.ns.clone_flags & CLONE_NEWPID) {
		char path[64], buf[32];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", child, child);
		s->cmd_pid = read_file_str(path, buf, sizeof(buf)) > 0 ? atoi(buf) : 0;
	}
	status_started(s, child);
	s->result.started = !not_found;
	if (not_found)
		s->result.cause = CAUSE_NOT_FOUND;
}
