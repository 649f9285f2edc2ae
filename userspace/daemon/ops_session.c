// SPDX-License-Identifier: GPL-2.0
/*
 * A session's life after register: attach, net, and its end (unregister, or its processes gone, or its client gone): kill,
 * drain, flush, session.end, and the denials for the client's summary.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "internal.h"
#include "ops_internal.h"
#include "metrics.h"
#include "../agent/agent.h"
#include "../lib/cgroup.h"
#include "../audit/sink.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../sandbox/changes.h"
#include "../lib/util.h"
#include "../net/egress.h"

/* The parent pid of pid from /proc/PID/stat (the name may hold ')'). */
static int parent_of(pid_t pid, pid_t *ppid)
{
	char path[64], buf[1024], *p;
	int r, pp;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	r = read_file_str(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &pp) != 1)
		return -EINVAL;
	*ppid = pp;
	return 0;
}

/* Whether the process of a pidfd is not reaped yet (-1: no pidfd support, true). */
static bool pidfd_runs(int pidfd)
{
	return pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 ||
	       errno != ESRCH;
}

/*
 * Moves pid, a child of the requester, into the session's cgroups. 0, or
 * -errno with the error replied.
 */
int ops_attach_pid(struct daemon *d, struct conn *c, struct dsession *s, int64_t pid)
{
	char path[PATH_MAX + 32], num[24];
	int target, r;
	pid_t ppid;

	if (s->state == DS_ENDING) {
		ops_reply_error(d, c, ESRCH, "attach: session %s is ending", s->id);
		return -ESRCH;
	}
	/*
	 * The target is held by a pidfd before its parent is read, and both
	 * it and the requester are checked to still run after: neither pid
	 * number can have been reused in between (a zombie keeps its pid).
	 */
	target = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (target < 0 && errno != ENOSYS) {
		ops_reply_error(d, c, ESRCH, "attach: no process %lld", (long long)pid);
		return -ESRCH;
	}
	r = parent_of(pid, &ppid);
	if (r < 0 || ppid != c->peer.pid || peer_alive(&c->peer) < 0 || !pidfd_runs(target)) {
		ops_reply_error(d, c, EPERM,
				"attach: pid %lld is not a child of the requesting process",
				(long long)pid);
		r = -EPERM;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", s->cgroup);
	snprintf(num, sizeof(num), "%lld", (long long)pid);
	r = write_file_str(path, num);
	if (r == 0 && !pidfd_runs(target)) {
		dlog("attach: pid %lld of session %s was reaped while it was moved", (long long)pid,
		     s->id);
		r = -ESRCH;
	}
	if (r < 0) {
		ops_reply_error(d, c, -r, "attach: cannot move pid %lld into %s: %s",
				(long long)pid, s->cgroup, strerror(-r));
		goto out;
	}
	if (s->has_lim && (r = limits_attach_pid(&s->lim, pid)) < 0) {
		ops_reply_error(d, c, -r,
				"attach: cannot move pid %lld into the v1 cgroups of its "
				"limits: %s",
				(long long)pid, strerror(-r));
		goto out;
	}
	s->child = pid;
	if (s->state == DS_REGISTERED)
		s->state = DS_RUNNING;
out:
	if (target >= 0)
		close(target);
	return r;
}

bool ops_valid_pid(int64_t pid)
{
	return pid > 0 && pid <= 0x3fffffff;
}

void ops_note_running(struct dsession *s)
{
	char path[PATH_MAX + 16], buf[4096], *p, *end;

	if (s->state != DS_REGISTERED || !ops_cgroup_populated(s->cgroup))
		return;
	s->state = DS_RUNNING;
	/* Its child: the process of the cgroup whose parent is the client. */
	snprintf(path, sizeof(path), "%s/cgroup.procs", s->cgroup);
	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return;
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);
		pid_t ppid;

		if (end == p)
			break;
		if (pid > 0 && parent_of(pid, &ppid) == 0 && ppid == s->client_pid) {
			s->child = pid;
			return;
		}
	}
}

void op_attach(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = ops_request_session(d, c, req, "attach");
	int64_t pid;

	if (!s)
		return;
	if (proto_get_int(req, "pid", &pid) || !ops_valid_pid(pid)) {
		ops_bad_member(d, c, "attach", "pid", "a process id");
		return;
	}
	if (ops_attach_pid(d, c, s, pid) < 0)
		return;
	ops_reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_u64(&d->rw, "pid", pid);
	ops_reply_send(d, c);
}

int ops_discard_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

/*
 * The end's first half: the session's processes gone (its cgroup empty),
 * its records read to the end, session.end written; the cgroup stays.
 * 0, or -errno with the session DS_ENDING (retried every tick).
 */
static int end_drain(struct daemon *d, struct dsession *s, const char *reason,
		     struct denials *denials)
{
	uint64_t seq = 1, lost = 0;
	int r;

	if (!s->end.reason)
		s->end.reason = reason;
	if (denials)
		*denials = s->denials; /* what an ending session counted so far */
	if (s->drained)
		return 0;
	/* Fail closed: the map entry stays while any process of it lives. */
	r = s->cgroup_gone ? 0 : cgroup_empty(s->cgroup, s->state == DS_ENDING ? 0 : END_WAIT_MS);
	if (r < 0) {
		if (s->state != DS_ENDING)
			dlog("session %s: processes stay in its cgroup %s (%s); retrying every "
			     "second",
			     s->id, s->cgroup, strerror(-r));
		s->state = DS_ENDING;
		return r;
	}
	/* The proxy's last records (bytes at close) reach the ring first. */
	egress_stop(s->egress);
	s->egress = NULL;
	agent_consume(d->agent);
	s->denials.exec_not_found = agent_session_exec_not_found(d->agent, s->cgroup_id);
	agent_session_remove(d->agent, s->cgroup_id, &seq, &lost);
	ops_adopt_detach(d, s);
	agent_flush_session(d->agent, s->index, &seq, ev_on_record, d);
	agent_net_clear(d->agent, s->index);
	ops_remove_lsm(d, s);
	ev_flood_say(d, s, true);
	ops_ask_end(d, s); /* an open ask was denied: its process died with the cgroup */
	ev_session_end(d, s, seq, lost);
	if (denials)
		*denials = s->denials;
	/* A subscription to this session ends with it. */
	for (struct conn *c = d->conns; c; c = c->next) {
		if (c->subscribed && streq(c->sub_session, s->id)) {
			c->closing = true;
			conn_flush(d, c);
		}
	}
	dlog("session %s ended (%s): %llu records, %llu lost", s->id, s->end.reason,
	     (unsigned long long)(seq > lost ? seq - 1 - lost : 0), (unsigned long long)lost);
	s->drained = true;
	s->state = DS_ENDING; /* until its cgroups are removed */
	return 0;
}

/*
 * The second half: the empty cgroups removed (nothing of the session runs,
 * nothing is left to record), the session forgotten. 0, or -errno with the
 * session DS_ENDING, retried every tick.
 */
static int end_remove(struct daemon *d, struct dsession *s)
{
	/* Kills again: only root or the daemon can have put a process in since. */
	int r = s->adopted ? 0 : cgroup_remove(s->cgroup, 0); /* an adopted one is its owner's */

	if (r < 0) {
		if (!s->remove_said)
			dlog("session %s: its cgroup %s does not go away (%s); retrying every "
			     "second",
			     s->id, s->cgroup, strerror(-r));
		s->remove_said = true;
		return r;
	}
	if (s->has_lim)
		limits_destroy(&s->lim); /* the v1 cgroups; the v2 one is gone */
	ops_ended(s->id);
	ops_ask_free(d, s);
	table_remove(&d->table, s);
	return 0;
}

int ops_end_session(struct daemon *d, struct dsession *s, const char *reason,
		    struct denials *denials)
{
	int r = end_drain(d, s, reason, denials);

	return r < 0 ? r : end_remove(d, s);
}

/* The denials for the client's end-of-run summary (lib/denial.h). */
static void put_denials(struct jsonw *w, const struct denials *dn)
{
	jsonw_array_begin(w, "denials");
	for (size_t i = 0; i < dn->n; i++) {
		const struct denial *x = &dn->v[i];

		jsonw_object_begin(w, NULL);
		jsonw_str(w, "layer", x->layer);
		jsonw_str(w, "op", x->op);
		jsonw_str(w, "what", x->what);
		if (x->rule[0])
			jsonw_str(w, "rule", x->rule);
		if (x->reason[0])
			jsonw_str(w, "reason", x->reason);
		jsonw_i64(w, "err", x->err);
		jsonw_u64(w, "count", x->count);
		jsonw_end(w);
	}
	jsonw_array_end(w);
	jsonw_u64(w, "denials_other", dn->other);
	jsonw_u64(w, "denials_fallbacks", dn->fallbacks);
	jsonw_u64(w, "denials_exec_not_found", dn->exec_not_found);
}

/*
 * The run's change set (--changes review|apply), written as
 * session.changes before session.end. 0, or -EINVAL replied.
 */
static int unregister_changes(struct daemon *d, struct conn *c, struct dsession *s,
			      struct json_object *req)
{
	struct changes_set *cs;
	struct json_object *o;
	const char *bad;
	int r;

	if (!json_object_object_get_ex(req, "changes", &o) || s->drained)
		return 0;
	if (!(cs = malloc(sizeof(*cs))))
		return 0;
	r = changes_summary_parse(o, cs, &bad);
	if (r < 0) {
		char member[64];

		snprintf(member, sizeof(member), "changes.%s", bad);
		ops_bad_member(d, c, "unregister", member, "the change set's summary");
	} else {
		struct session_event ev = {.type = SEV_CHANGES, .changes = cs};

		ops_emit_lifecycle(d, s, &ev);
	}
	change_list_free(&cs->list);
	free(cs);
	return r;
}

void op_unregister(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = ops_request_session(d, c, req, "unregister");
	struct dsession_end e = {.reason = "unregister"};
	struct denials denials;
	char id[33];
	int64_t i;
	int r;

	if (!s)
		return;
	r = proto_get_int(req, "exit_code", &e.exit_code);
	if (r == -EINVAL) {
		ops_bad_member(d, c, "unregister", "exit_code", "an integer");
		return;
	}
	e.have_exit = r == 0;
	if (proto_get_bool(req, "timed_out", &e.timed_out) == -EINVAL) {
		ops_bad_member(d, c, "unregister", "timed_out", "a boolean");
		return;
	}
	r = proto_get_int(req, "output_bytes", &i);
	if (r == -EINVAL || (!r && i < 0)) {
		ops_bad_member(d, c, "unregister", "output_bytes", "a count");
		return;
	}
	e.output_bytes = r ? 0 : i;
	r = proto_get_int(req, "output_dropped", &i);
	if (r == -EINVAL || (!r && i < 0)) {
		ops_bad_member(d, c, "unregister", "output_dropped", "a count");
		return;
	}
	e.output_dropped = r ? 0 : i;
	if (unregister_changes(d, c, s, req) < 0)
		return;
	if (s->state != DS_ENDING)
		s->end = e;
	snprintf(id, sizeof(id), "%s", s->id);
	/*
	 * Its last records are counted once its cgroup is empty: the summary
	 * is whole, and the reply goes before the cgroups are removed (off the
	 * client's path; docs/daemon.md "Unregister").
	 */
	r = end_drain(d, s, "unregister", &denials);
	ops_reply_begin(d);
	jsonw_str(&d->rw, "session", id);
	jsonw_str(&d->rw, "state", r < 0 ? "ending" : "ended");
	put_denials(&d->rw, &denials);
	ops_reply_send(d, c);
	if (r == 0)
		end_remove(d, s);
}
