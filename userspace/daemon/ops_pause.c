// SPDX-License-Identifier: GPL-2.0
/*
 * Pause, resume and kill of a session (ops pause, resume, kill, and the
 * daemon's own for an adopted cgroup: an OOM kill pauses it, a pause
 * longer than its pause_timeout kills it), each a session.paused,
 * session.resumed or session.killed event.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "internal.h"
#include "ops_internal.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../monitor/monitor.h"
#include "../monitor/control.h"
#include "../monitor/oom.h"
#include "../lib/util.h"

/*
 * session.paused, session.resumed, session.killed to the sinks and to the
 * subscribers of the session (or of every session) that want them.
 */
void ops_emit_lifecycle(struct daemon *d, struct dsession *s, const struct session_event *ev)
{
	struct jsonw *w = &d->w;
	jsonw_reset(w);
	audit_session_lifecycle(w, &d->clock, s->id, ev);
	if (w->oom)
		return;
	ev_emit(d, s, audit_lifecycle_kind(ev), w->buf, w->len);
	ev_flush(d);
}

/* An optional count member; -EINVAL replied when mistyped. */
static int opt_count(struct daemon *d, struct conn *c, struct json_object *req, const char *op,
		     const char *key, int64_t min, int64_t *out)
{
	int r = proto_get_int(req, key, out);

	if (r == -ENOENT) {
		*out = 0;
		return 0;
	}
	if (r || *out < min || *out > DAEMON_COUNT_MAX) {
		char want[80];

		snprintf(want, sizeof(want), "an integer from %lld to %lld", (long long)min,
			 (long long)DAEMON_COUNT_MAX);
		return ops_bad_member(d, c, op, key, want);
	}
	return 0;
}

/*
 * Who the OOM killer chose: the agent's oom/mark_victim record (kept when
 * its pid is still in the session or already reaped), else the kernel log,
 * which a daemon under its systemd unit cannot read (ProtectKernelLogs).
 */
static void find_oom_victim(struct daemon *d, const struct dsession *s, struct session_event *ev)
{
	if (agent_oom_victim(d->agent, s->index, 5000000000ull, &ev->pid, ev->comm,
			     sizeof(ev->comm)) == 0 &&
	    oom_victim_check(s->id, ev->pid, ev->comm, sizeof(ev->comm)) == 0)
		return;
	ev->pid = 0;
	ev->comm[0] = '\0';
	oom_find_victim(s->id, &ev->pid, ev->comm, sizeof(ev->comm));
}

int ops_pause_session(struct daemon *d, struct dsession *s, struct session_event *ev)
{
	/*
	 * On top of a command rule's ask (ops_ask.c), ctl_pause keeps it frozen
	 * after the answer. -EALREADY: frozen by another before this request
	 * (its bpfbox run's monitor, when the daemon did not answer it, or
	 * cgroup.freeze written by hand): taken as the pause.
	 */
	int r = ctl_pause(s->cgroup, ev->reason);

	if (r < 0 && r != -EALREADY)
		return r;
	if (streq(ev->reason, "oom") && !ev->pid)
		find_oom_victim(d, s, ev);
	ev->memory_mb = s->lim.memory_mb;
	ev->disk_mb = s->lim.disk_mb;
	s->resume_state = s->state;
	s->state = DS_PAUSED;
	s->paused_at_ns = now_ns();
	snprintf(s->pause_reason, sizeof(s->pause_reason), "%s", ev->reason);
	ops_emit_lifecycle(d, s, ev);
	dlog("session %s paused (%s)", s->id, ev->reason);
	return 0;
}

void op_pause(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = ops_request_session(d, c, req, "pause");
	struct session_event ev = {.type = SEV_PAUSED, .reason = "manual"};
	const char *reason;
	int64_t kills, used, pid;
	int r;

	if (!s)
		return;
	r = proto_get_str(req, "reason", &reason);
	if (r == -EINVAL || (!r && !streq(reason, "manual") && !streq(reason, "oom") &&
			     !streq(reason, "disk") && !streq(reason, "disk_unwatched"))) {
		ops_bad_member(d, c, "pause", "reason",
			       "\"manual\", \"oom\", \"disk\" or \"disk_unwatched\"");
		return;
	}
	if (!r)
		ev.reason = reason;
	if (opt_count(d, c, req, "pause", "oom_kills", 0, &kills) < 0 ||
	    opt_count(d, c, req, "pause", "disk_used_mb", -1, &used) < 0 ||
	    opt_count(d, c, req, "pause", "pid", 0, &pid) < 0)
		return;
	if (s->state == DS_PAUSED) {
		ops_reply_error(d, c, EALREADY, "pause: session %s is already paused (%s)", s->id,
				s->pause_reason);
		return;
	}
	ops_note_running(s); /* a child cloned into the cgroup by its client */
	if (s->state == DS_ENDING || s->state == DS_REGISTERED) {
		ops_reply_error(d, c, s->state == DS_ENDING ? ESRCH : EINVAL,
				"pause: session %s %s", s->id,
				s->state == DS_ENDING ? "is ending" : "has no process yet");
		return;
	}
	ev.pid = pid;
	ev.oom_kills = kills;
	ev.disk_used_mb = proto_get_int(req, "disk_used_mb", &used) == 0 ? used : -1;
	r = ops_pause_session(d, s, &ev);
	if (r < 0) {
		ops_reply_error(d, c, -r, "pause: cannot freeze %s: %s", s->cgroup, strerror(-r));
		return;
	}
	ops_reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "state", "paused");
	jsonw_str(&d->rw, "reason", ev.reason);
	if (ev.pid)
		jsonw_u64(&d->rw, "pid", ev.pid);
	else
		jsonw_null(&d->rw, "pid");
	jsonw_str(&d->rw, "comm", ev.comm[0] ? ev.comm : NULL);
	ops_reply_send(d, c);
}

void op_resume(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = ops_request_session(d, c, req, "resume");
	struct session_event ev = {.type = SEV_RESUMED};
	struct ctl_asked asked[CTL_ASK_MAX];
	long holder;
	int64_t mem, disk;
	int r;

	if (!s)
		return;
	if (opt_count(d, c, req, "resume", "memory_mb", CTL_MIN_MEMORY_MB, &mem) < 0 ||
	    opt_count(d, c, req, "resume", "disk_mb", CTL_MIN_DISK_MB, &disk) < 0)
		return;
	if (s->state == DS_ENDING) {
		ops_reply_error(d, c, ESRCH, "resume: session %s is ending", s->id);
		return;
	}
	/*
	 * Fail closed: a thaw now would let a sibling SIGCONT the exec that
	 * waits for its answer, which would then run unanswered.
	 */
	if (ops_ask_pending(s)) {
		ops_reply_error(d, c, EBUSY,
				"resume: session %s waits for the answer to a command rule's ask; "
				"answer it (bpfbox answer) or let it time out, then resume",
				s->id);
		return;
	}
	r = ctl_resume(s->cgroup, mem, disk, &ev.memory_mb, &ev.disk_mb, asked, CTL_ASK_MAX,
		       &holder);
	if (r == -EOWNERDEAD) {
		ops_reply_error(d, c, EOWNERDEAD,
				"resume: session %s waits for a command rule's ask whose answerer "
				"(pid %ld) is gone and whose process is unknown; kill the session "
				"(bpfbox kill)",
				s->id, holder);
		return;
	}
	for (int i = 0; i < r && i < CTL_ASK_MAX; i++)
		ops_ask_denied_stale(d, s, &asked[i], holder);
	if (r == -EINVAL) {
		if (s->state == DS_PAUSED)
			s->state = s->resume_state; /* thawed behind our back */
		ops_reply_error(d, c, EINVAL, "resume: session %s is running, not paused", s->id);
		return;
	}
	if (r < 0) {
		ops_reply_error(d, c, -r, "resume: cannot %s %s: %s",
				mem ? "raise the memory limit of" : "thaw", s->cgroup,
				strerror(-r));
		return;
	}
	if (s->state == DS_PAUSED) {
		ev.paused_ms = (now_ns() - s->paused_at_ns) / 1000000ULL;
		s->state = s->resume_state;
	}
	s->lim.memory_mb = ev.memory_mb;
	s->lim.disk_mb = ev.disk_mb;
	ops_emit_lifecycle(d, s, &ev);
	dlog("session %s resumed (memory %llu MB, disk %llu MB)", s->id,
	     (unsigned long long)ev.memory_mb, (unsigned long long)ev.disk_mb);
	ops_reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "state", "running");
	jsonw_u64(&d->rw, "memory_mb", ev.memory_mb);
	jsonw_u64(&d->rw, "disk_mb", ev.disk_mb);
	ops_reply_send(d, c);
}

int ops_kill_session(struct daemon *d, struct dsession *s, struct session_event *ev)
{
	int r = ctl_kill(s->cgroup);

	if (r < 0)
		return r;
	ev->was_paused = s->state == DS_PAUSED;
	if (s->state == DS_PAUSED)
		s->state = s->resume_state;
	s->killed = true;
	ops_emit_lifecycle(d, s, ev);
	dlog("session %s killed (%s)", s->id, ev->reason);
	return 0;
}

void op_kill(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct session_event ev = {.type = SEV_KILLED, .reason = "manual"};
	struct dsession *s = ops_request_session(d, c, req, "kill");
	int r;

	if (!s)
		return;
	if (s->state == DS_ENDING) {
		ops_reply_error(d, c, ESRCH, "kill: session %s is ending already", s->id);
		return;
	}
	r = ops_kill_session(d, s, &ev);
	if (r < 0) {
		ops_reply_error(d, c, -r, "kill: cannot kill the processes of %s: %s", s->cgroup,
				strerror(-r));
		return;
	}
	ops_reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "state", "killed");
	ops_reply_send(d, c);
}
