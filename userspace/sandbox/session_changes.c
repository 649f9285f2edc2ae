// SPDX-License-Identifier: GPL-2.0
/*
 * A session's change set (changes.h, docs/runtime.md "Change sets"):
 * made before the fork, its overlay built by the child (ns_overlay.c),
 * scanned at the end: removed when nothing changed, applied with
 * --changes apply when the command exited 0, else kept for review.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "session.h"
#include "session_internal.h"
#include "changes.h"
#include "grants.h"
#include "ns.h"
#include "../policy/policy.h"
#include "../lib/fdpass.h"
#include "../lib/log.h"
#include "../lib/util.h"

/* Whether a is b or below it. */
static bool below(const char *a, const char *b)
{
	size_t n = strlen(b);

	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/' || streq(b, "/"));
}

#define refuse(...) (log_error(__VA_ARGS__), -EINVAL)

/* What the overlay cannot hold: refused with one line, nothing ran. */
static int changes_refused(const struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	const char *m = p->changes == CHANGES_DIRECT ? "review" : changes_mode_name(p->changes);

	if (!(s->layers.ns.clone_flags & CLONE_NEWNS) || !(s->layers.ns.clone_flags & CLONE_NEWPID))
		return refuse("--changes %s needs the session's mount namespace (%s); "
			      "nothing ran",
			      m, s->layers.ns.why_not[0] ? s->layers.ns.why_not : "none");
	if (p->mode != MODE_WORKSPACE_WRITE)
		return refuse("--changes %s needs --mode workspace-write (the mode is %s); "
			      "nothing ran",
			      m, sandbox_mode_name(p->mode));
	for (size_t i = 0; i < p->rw_paths.n; i++)
		if (below(p->rw_paths.v[i], p->workspace))
			return refuse("--changes %s: --rw %s is inside the workspace, "
				      "which the change set covers; nothing ran",
				      m, p->rw_paths.v[i]);
	return 0;
}

/* --changes-from: the parent's upper taken over, reopened for the overlay. */
static int chain(struct changes_set *cs, struct grant_fds *gf, const struct session *s)
{
	char why[PATH_MAX + 256], upper[PATH_MAX + 16];
	int r;

	fd_close(&gf->upper);
	cs->upper_ctime_ns = 0; /* the parent's upper: not empty */
	r = changes_chain(cs, s->changes_from, why, sizeof(why));
	if (r < 0) {
		log_error("--changes-from %s: %s; nothing ran", s->changes_from, why);
		return -EINVAL;
	}
	snprintf(upper, sizeof(upper), "%s/upper", cs->dir);
	gf->upper = path_open_exact(upper, O_DIRECTORY);
	return gf->upper < 0 ? gf->upper : 0;
}

void session_changes_plan(struct session *s)
{
	/* Made now, so the BPF LSM's writable set can name it; a failure is said at the set's making. */
	if ((s->policy->changes != CHANGES_DIRECT || s->changes_from) &&
	    changes_root(s->changes_root, sizeof(s->changes_root), true) < 0)
		s->changes_root[0] = '\0';
}

void session_changes_note(struct session *s)
{
	char root[PATH_MAX], what[PATH_MAX + 96];

	/*
	 * Every view masks the sets (home.c, mask_change_sets); without a
	 * mount namespace nothing does, and Landlock cannot take them out of
	 * a grant that holds them: said, as what is not enforced.
	 */
	if (s->layers.ns.clone_flags & CLONE_NEWNS || changes_root(root, sizeof(root), false) < 0 ||
	    !session_policy_writes(s->policy, root))
		return;
	snprintf(what, sizeof(what),
		 "the change sets in %s, which a writable grant holds (no mount namespace to mask "
		 "them)",
		 root);
	session_not_enforced(s, what);
}

int session_changes_start(struct session *s, struct grant_fds *gf, struct child_plan *c)
{
	struct changes_set *cs;
	int warm;
	char why[PATH_MAX + 256];
	int r;

	if ((s->policy->changes == CHANGES_DIRECT && !s->changes_from) || gf->ws < 0)
		return 0;
	if ((r = changes_refused(s)) < 0)
		return r;
	if ((warm = changes_warm_secs()) < 0)
		return refuse("BPFBOX_CHANGES_WARM='%s' is not a number of seconds from 0 to %d; "
			      "nothing ran",
			      getenv("BPFBOX_CHANGES_WARM"), CHANGES_WARM_MAX);
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return log_error_errno(ENOMEM, "--changes: cannot make the change set");
	s->changes = cs;
	/*
	 * A kept set and overlay taken (not a chain's: it takes its parent's
	 * upper, not an empty one), unless BPFBOX_CHANGES_WARM=0 says none.
	 */
	r = changes_create(cs, s->changes_root, s->id, s->policy->workspace, gf->ws,
			   s->layers.ns.clone_flags & CLONE_NEWUSER, &gf->upper, &gf->work,
			   s->changes_from || !warm ? NULL : &gf->changes_mnt, why, sizeof(why));
	if (r < 0) {
		changes_remove(cs); /* nothing when its directory was never made */
		log_error("%s; nothing ran", why);
		return r;
	}
	cs->warm_secs = warm;
	cs->undo_gens = s->policy->undo_generations;
	cs->undo_mb = s->policy->undo_mb;
	/*
	 * A chain's manifests and lock come first: it takes its parent over.
	 * Any other set's come once the child runs (session_changes_running),
	 * off the start's path.
	 */
	if (s->changes_from && (r = changes_manifest_write(cs, false)) < 0) {
		changes_remove(cs);
		return log_error_errno(
			-r, "--changes: cannot write the manifest of %s; nothing ran", cs->dir);
	}
	if (s->changes_from && ((r = changes_lock(cs)) < 0 || (r = chain(cs, gf, s)) < 0)) {
		if (!s->changes_from || !cs->parent[0])
			changes_remove(cs);
		return r < 0 && r != -EINVAL ? log_error_errno(-r, "--changes: the set %s", cs->id)
					     : r;
	}
	/*
	 * Without a user namespace the overlay is made by bpfbox, in its own
	 * mount namespace where the set's fds are, just after the fork and
	 * beside the child's set-up (session_changes_forked): the child only
	 * attaches it. In one, only the child may make it (its user owns the
	 * mount). One made ahead (changes_warm.c) the child inherits.
	 */
	if (!(s->layers.ns.clone_flags & CLONE_NEWUSER) && gf->changes_mnt < 0 &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gf->changes_sock) < 0) {
		r = -errno;
		if (!cs->parent[0]) /* a chain's holds its parent's changes */
			changes_remove(cs);
		return log_error_errno(-r, "--changes: the set %s; nothing ran", cs->id);
	}
	/* The child takes the start (changes_start_wait) and writes it here. */
	if (!cs->parent[0] && pipe2(cs->start_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		changes_remove(cs);
		return log_error_errno(-r, "--changes: the set %s; nothing ran", cs->id);
	}
	c->changes_start_fd = cs->start_pipe[1];
	c->changes_after = cs->start_ns;
	snprintf(s->changes_upper, sizeof(s->changes_upper), "%s/upper", cs->dir);
	snprintf(s->changes_work, sizeof(s->changes_work), "%s/work", cs->dir);
	gf->upper_path = s->changes_upper;
	gf->work_path = s->changes_work;
	return 0;
}

int session_changes_forked(struct session *s, struct grant_fds *gf, pid_t child)
{
	struct iovec iov = {.iov_base = "", .iov_len = 1};
	const char *step;
	int r;

	if (s->changes)
		fd_close(&s->changes->start_pipe[1]); /* the child's */
	if (!s->changes || gf->changes_sock[0] < 0)
		return 0;
	fd_close(&gf->changes_sock[1]); /* the child's */
	r = ns_overlay_make(gf->ws, gf->upper, gf->work, false, &step);
	if (r >= 0) {
		gf->changes_mnt = r;
		step = "send the change set's overlay to the session";
		r = send_with_fds(gf->changes_sock[0], &iov, 1, &gf->changes_mnt, 1) == 1 ? 0
											  : -errno;
		/* The child gone before it asked: its own failure is in its report (wait_exec). */
		if (r == -EPIPE || r == -ECONNRESET || r == -ECONNREFUSED)
			r = 0;
	}
	fd_close(&gf->changes_sock[0]);
	if (r == 0)
		return 0;
	/* Nothing ran: the child waits for it before its command (its set is removed then). */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return log_error_errno(-r, "--changes: cannot %s; nothing ran", step);
}

void session_changes_started(const struct session *s)
{
	if (s->changes)
		changes_fault_at_start(s->changes);
}

void session_changes_running(struct session *s)
{
	struct changes_set *cs = s->changes;
	int r;

	if (cs && (r = changes_session_running(cs)) < 0)
		log_warn("--changes: the change set %s: cannot %s (%s); it is recorded at the "
			 "session's end",
			 cs->id, cs->lock_fd < 0 ? "lock it" : "write its manifest", strerror(-r));
}

void session_changes_end(struct session *s, const struct grant_fds *gf, struct closer *end)
{
	/* With root's overlay: its last reference, so its teardown is the helper's too. */
	int hold[3] = {gf->upper, gf->work, gf->changes_mnt};
	struct changes_set *cs = s->changes;
	int r;

	if (!cs || s->result.wait_status < 0)
		return;
	/*
	 * The command ran: its child took the start. None (its clock unread):
	 * the bound stays the start, its own tick counted as changed (fail closed).
	 */
	if (cs->start_pipe[0] >= 0)
		changes_start_take(cs, 0);
	r = changes_session_end(cs, gf->upper);
	if (r < 0)
		log_warn("cannot read or record the change set %s (%s): kept as it is", cs->id,
			 strerror(-r));
	if (cs->kept && s->policy->changes == CHANGES_APPLY && s->result.exit_code != 0)
		log_warn("the command exited %d: change set %s kept, not applied (bpfbox apply %s)",
			 s->result.exit_code, cs->id, cs->id);
	if (cs->kept && s->policy->changes == CHANGES_APPLY && s->result.exit_code == 0) {
		cs->apply_code = changes_apply(cs);
		cs->applied = cs->apply_code == 0;
		if (!cs->applied)
			log_warn("change set %s not applied, kept (bpfbox changes %s)", cs->id,
				 cs->id);
	}
	/*
	 * session.changes, before session.end (embedded: the audit stream;
	 * through a daemon the unregister request carries it, via_daemon.c).
	 */
	if (s->hooks.on_event) {
		struct session_event ev = {.type = SEV_CHANGES, .changes = cs};

		s->hooks.on_event(s->hooks.ctx, &ev);
	}
	changes_session_done(cs, hold, ARRAY_SIZE(hold), gf->ws, end);
}

void session_changes_free(struct session *s)
{
	if (!s->changes)
		return;
	/*
	 * A set-up that failed before the command ran leaves no set behind,
	 * unless it holds a parent's changes (--changes-from).
	 */
	if (s->result.wait_status < 0 && !s->changes->list.n && !s->changes->parent[0])
		changes_remove(s->changes); /* refuses a set whose directory was never made */
	changes_unlock(s->changes);
	changes_warm_release(s->changes);
	fd_close(&s->changes->start_pipe[0]);
	fd_close(&s->changes->start_pipe[1]);
	change_list_free(&s->changes->list);
	free(s->changes);
	s->changes = NULL;
}
