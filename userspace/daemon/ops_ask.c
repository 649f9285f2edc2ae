// SPDX-License-Identifier: GPL-2.0
/*
 * The command rules' asks of the daemon's sessions (docs/runtime.md
 * "Approvals"): bpf/cmd.bpf.c stopped an exec (SIGSTOP) and sent its
 * record; the session's cgroup is frozen, session.ask (answer null, with
 * the ask's id) goes to the sinks and the subscribers, and the `answer` op
 * of root or the session's owner continues or kills the process. The
 * registering `bpfbox run` relays its runtime's answers (--ask-fd) with
 * the same op. No answer within the session's pause timeout, or the
 * session's end (its client gone), is deny; the session always thaws.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <json-c/json.h>

#include "internal.h"
#include "metrics.h"
#include "ops_internal.h"
#include "../agent/agent.h"
#include "../agent/ask.h"
#include "../lib/cgroup.h"
#include "../lib/denial.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../policy/policy.h"
#include "../lib/names.h"
#include "../lib/util.h"

#define ASK_OPEN_MAX	8		 /* questions open at once in one session */
#define ASK_DONE_KEPT	16		 /* answered ids remembered, for a clear error */
#define ASK_TIMEOUT_MAX (3600ULL * 1000) /* a policy's pause timeout, capped */

struct dask_done {
	uint64_t id;
	const char *answer, *how;
};

struct dask {
	struct ask ask;	     /* counters; table NULL: approve always reads the kernel's */
	uint64_t timeout_ms; /* the session's pause timeout */
	bool froze;	     /* held by ctl_ask_hold (released after the last answer) */
	struct audit_ask *open[ASK_OPEN_MAX];
	uint64_t deadline_ns[ASK_OPEN_MAX];
	struct dask_done done[ASK_DONE_KEPT];
	unsigned int ndone;
	uint64_t next_net_id; /* --net-ask questions' ids, from ASK_NET_ID0 */
};

static uint64_t policy_pause_timeout(struct json_object *req)
{
	struct json_object *pol, *lim;
	int64_t sec = 0;

	if (proto_get_object(req, "policy", &pol) == 0 &&
	    proto_get_object(pol, "limits", &lim) == 0)
		proto_get_int(lim, "pause_timeout_s", &sec);
	if (sec <= 0)
		sec = POLICY_PAUSE_TIMEOUT_S;
	return (uint64_t)sec * 1000 > ASK_TIMEOUT_MAX ? ASK_TIMEOUT_MAX : (uint64_t)sec * 1000;
}

int ops_ask_register(struct daemon *d, struct dsession *s, struct json_object *req)
{
	bool asks = false, net = false;
	struct json_object *pol;

	/* --net-ask (the policy's net_ask): the proxy's questions (ops_ask_net.c). */
	if (proto_get_object(req, "policy", &pol) == 0)
		proto_get_bool(pol, "net_ask", &net);
	if ((!(s->flags & BPFBOX_SF_CMD_RULES) && !net) || proto_get_bool(req, "asks", &asks) ||
	    !asks)
		return 0;
	s->ask = calloc(1, sizeof(*s->ask));
	if (!s->ask)
		return -ENOMEM;
	s->ask->ask.fd = -1;
	s->ask->ask.session_index = s->index;
	s->ask->timeout_ms = policy_pause_timeout(req);
	s->ask->next_net_id = ASK_NET_ID0;
	if (s->flags & BPFBOX_SF_CMD_RULES)
		s->flags |= BPFBOX_SF_CMD_ASK;
	if (net)
		s->net_ask = (struct dsession_ask_ctx){.d = d, .timeout_ms = s->ask->timeout_ms};
	snprintf(s->net_ask.session, sizeof(s->net_ask.session), "%s", s->id);
	return 0;
}

/* Whether a question of s waits for its answer (its exec stopped, the session frozen for it). */
bool ops_ask_pending(const struct dsession *s)
{
	for (unsigned int k = 0; s->ask && k < ASK_OPEN_MAX; k++)
		if (s->ask->open[k] && !s->ask->open[k]->net)
			return true;
	return false;
}

/* The line of q to the sinks and the subscribers. */
static void emit(struct daemon *d, struct dsession *s, const struct audit_ask *q)
{
	jsonw_reset(&d->w);
	audit_session_ask(&d->w, &d->clock, s->id, q);
	if (!d->w.oom)
		ev_emit(d, s, EV_SESSION_ASK, d->w.buf, d->w.len);
	ev_flush(d);
}

/*
 * The open asks of s kept on its cgroup (ASKS_XATTR, by pid: {"PID":{"id",
 * "ts_ns","rule","filename","argv","frozen"}}), rewritten at each ask and
 * answer, so that a daemon re-adopting the session after a restart says
 * its deny of each with the fields of the asked line (ops_ask_readopt).
 * trusted.*: nothing inside the session can forge it. The mark
 * (ctl_ask_hold) alone decides what is killed; without this the denial is
 * still logged and counted, only its session.ask line is missing.
 */
static void asks_save(struct dsession *s)
{
	struct jsonw w = {0};
	bool any = false;
	char key[24];

	jsonw_begin(&w);
	for (unsigned int i = 0; i < ASK_OPEN_MAX; i++) {
		const struct audit_ask *q = s->ask->open[i];

		if (!q || q->net) /* a destination: nothing to kill after a restart */
			continue;
		any = true;
		snprintf(key, sizeof(key), "%llu", (unsigned long long)q->pid);
		jsonw_object_begin(&w, key);
		jsonw_u64(&w, "id", q->id);
		jsonw_u64(&w, "ts_ns", q->ts_ns);
		jsonw_str(&w, "rule", q->rule);
		jsonw_str(&w, "filename", q->file);
		audit_ask_argv(&w, q);
		jsonw_bool(&w, "frozen", q->frozen);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	if (!any)
		removexattr(s->cgroup, ASKS_XATTR);
	else if (w.oom || setxattr(s->cgroup, ASKS_XATTR, w.buf, w.len, 0) < 0)
		dlog("session %s: cannot keep its open asks on its cgroup: %s; a restarted daemon "
		     "denies them without a session.ask line",
		     s->id, w.oom ? strerror(ENOMEM) : strerror(errno));
	jsonw_free(&w);
}

/* The open asks an earlier daemon kept on cg (asks_save), NULL: none. */
static struct json_object *asks_load(const char *cg)
{
	char *buf = malloc(META_MAX);
	ssize_t n = buf ? getxattr(cg, ASKS_XATTR, buf, META_MAX - 1) : -1;
	struct json_object *o = NULL;

	if (n > 0) {
		buf[n] = '\0';
		o = json_tokener_parse(buf);
	}
	free(buf);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

/* The kept ask e of process pid as its line says it; false when e has no id. */
static bool ask_of_json(struct json_object *e, long pid, struct audit_ask *q)
{
	struct json_object *argv;
	const char *str;
	int64_t v;

	memset(q, 0, sizeof(*q));
	if (!e || proto_get_int(e, "id", &v) || v <= 0)
		return false;
	q->id = (uint64_t)v;
	q->pid = (uint64_t)pid;
	if (proto_get_int(e, "ts_ns", &v) == 0 && v > 0)
		q->ts_ns = (uint64_t)v;
	if (proto_get_str(e, "rule", &str) == 0)
		snprintf(q->rule, sizeof(q->rule), "%s", str);
	if (proto_get_str(e, "filename", &str) == 0)
		snprintf(q->file, sizeof(q->file), "%s", str);
	proto_get_bool(e, "frozen", &q->frozen);
	for (size_t i = 0;
	     proto_get_array(e, "argv", &argv) == 0 && i < json_object_array_length(argv); i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(argv, i));
		size_t n = a ? strlen(a) + 1 : 0;

		if (!n || q->argv_len + n > sizeof(q->argv))
			break;
		memcpy(q->argv + q->argv_len, a, n);
		q->argv_len += n;
	}
	return true;
}

/*
 * The deny of an ask an earlier daemon held (its answerer gone) as
 * session.ask says it: how "restarted". false when asks does not keep it.
 */
static bool say_stale(struct daemon *d, struct dsession *s, struct json_object *asks, long pid)
{
	struct json_object *e = NULL;
	struct audit_ask q;
	char key[24];

	snprintf(key, sizeof(key), "%ld", pid);
	if (!asks || !json_object_object_get_ex(asks, key, &e) || !ask_of_json(e, pid, &q))
		return false;
	q.answer = ask_answer_name(ASK_DENY);
	q.how = "restarted";
	q.waited_ms = q.ts_ns && now_ns() > q.ts_ns ? (now_ns() - q.ts_ns) / 1000000 : 0;
	emit(d, s, &q);
	return true;
}

bool ops_ask_record(struct daemon *d, struct dsession *s, const void *data, size_t size)
{
	const struct bpfbox_exec_event *x = data;
	struct dask *a = s->ask;
	unsigned int i = 0;
	struct audit_ask *q;

	if (size < sizeof(*x) || x->hdr.type != BPFBOX_EV_EXEC ||
	    !(x->argv_truncated & BPFBOX_EXEC_PENDING))
		return false;
	while (a && i < ASK_OPEN_MAX && a->open[i])
		i++;
	q = a && i < ASK_OPEN_MAX ? malloc(sizeof(*q)) : NULL;
	if (!q) {
		/* Nobody to ask (an adopted session), or too many open: fail closed. */
		kill(x->hdr.pid, SIGKILL);
		return false; /* written as the exec record it is (action ask) */
	}
	audit_ask_from_exec(q, x);
	q->deny_after_ms = a->timeout_ms;
	/* Frozen: no sibling can SIGCONT it (a paused session stays paused, and held). */
	/* Each ask names its pid in the mark: a next daemon denies it if we die. */
	if (ctl_ask_hold(s->cgroup, (pid_t)x->hdr.pid) == 0 || a->froze) {
		a->froze = true;
		q->frozen = true;
	}
	a->open[i] = q;
	a->deadline_ns[i] = now_ns() + a->timeout_ms * 1000000ULL;
	a->ask.asked++;
	d->asks_open++;
	asks_save(s);
	dlog("session %s: exec of %s (pid %llu) waits for an answer to ask %llu (rule '%s')", s->id,
	     q->file, (unsigned long long)q->pid, (unsigned long long)q->id, q->rule);
	emit(d, s, q);
	return true;
}

bool ops_ask_net_open(struct daemon *d, struct dsession *s, void *net_q, const char *name,
		      uint16_t port)
{
	struct dask *a = s->ask;
	unsigned int i = 0;
	struct audit_ask *q;

	while (a && i < ASK_OPEN_MAX && a->open[i])
		i++;
	q = a && i < ASK_OPEN_MAX && s->state != DS_ENDING ? calloc(1, sizeof(*q)) : NULL;
	if (!q)
		return false; /* nobody to ask, or too many open: denied */
	q->net = true;
	q->net_q = net_q;
	q->id = a->next_net_id++;
	q->ts_ns = now_ns();
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->port = port;
	q->deny_after_ms = a->timeout_ms;
	a->open[i] = q;
	a->deadline_ns[i] = q->ts_ns + a->timeout_ms * 1000000ULL;
	a->ask.asked++;
	d->asks_open++;
	dlog("session %s: %s port %u waits for an answer to ask %llu (--net-ask)", s->id, name,
	     port, (unsigned long long)q->id);
	emit(d, s, q);
	return true;
}

/* Answers the open question i: the process goes on or dies, the line says how. */
static void resolve(struct daemon *d, struct dsession *s, unsigned int i, enum ask_answer ans,
		    const char *how, const struct conn *by)
{
	struct dask *a = s->ask;
	struct audit_ask *q = a->open[i];
	bool left = false;

	if (q->net) {
		/* A destination: its proxy thread gets the answer; nothing was frozen. */
		bool yes = ans == ASK_APPROVE || ans == ASK_ALWAYS;

		ops_net_answer(q->net_q, yes);
		a->open[i] = NULL;
		d->asks_open--;
		yes ? a->ask.approved++ : a->ask.denied++;
		goto said;
	}
	if (!ask_apply(&a->ask, d->agent, q->pid, q->rule, ans))
		denials_add_why(&s->denials, bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP), "exec",
				q->file, EPERM, 1, q->rule, NULL);
	a->open[i] = NULL;
	d->asks_open--;
	asks_save(s);
	for (unsigned int k = 0; k < ASK_OPEN_MAX; k++)
		left = left || a->open[k];
	/* Thawed after the last answer, unless someone paused it meanwhile. */
	if (!left && a->froze) {
		ctl_ask_release(s->cgroup);
		a->froze = false;
	} else if (a->froze) {
		ctl_ask_answered(s->cgroup, (pid_t)q->pid);
	}
said:
	q->answer = ask_answer_name(ans);
	q->how = how;
	q->has_who = by != NULL;
	if (by) {
		q->uid = by->peer.uid;
		q->by_pid = by->peer.pid;
	}
	q->waited_ms = (now_ns() - q->ts_ns) / 1000000;
	a->done[a->ndone++ % ASK_DONE_KEPT] = (struct dask_done){q->id, q->answer, how};
	dlog("session %s: ask %llu answered %s (%s)", s->id, (unsigned long long)q->id, q->answer,
	     how);
	emit(d, s, q);
	free(q);
}

void ops_ask_tick(struct daemon *d, struct dsession *s)
{
	uint64_t now = now_ns();

	for (unsigned int i = 0; s->ask && i < ASK_OPEN_MAX; i++)
		if (s->ask->open[i] && now >= s->ask->deadline_ns[i])
			resolve(d, s, i, ASK_TIMEOUT, "timeout", NULL);
}

int ops_ask_due(struct daemon *d)
{
	uint64_t now, next = 0;

	if (!d->asks_open)
		return -1;
	now = now_ns();
	for (struct dsession *s = d->table.head; s && d->asks_open; s = s->next) {
		ops_ask_tick(d, s);
		for (unsigned int i = 0; s->ask && i < ASK_OPEN_MAX; i++)
			if (s->ask->open[i] && (!next || s->ask->deadline_ns[i] < next))
				next = s->ask->deadline_ns[i];
	}
	if (!next)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

void ops_ask_end(struct daemon *d, struct dsession *s)
{
	for (unsigned int i = 0; s->ask && i < ASK_OPEN_MAX; i++)
		if (s->ask->open[i])
			resolve(d, s, i, ASK_DENY, "ended", NULL);
}

void ops_ask_free(struct daemon *d, struct dsession *s)
{
	for (unsigned int i = 0; s->ask && i < ASK_OPEN_MAX; i++) {
		d->asks_open -= s->ask->open[i] != NULL;
		if (s->ask->open[i] && s->ask->open[i]->net)
			ops_net_answer(s->ask->open[i]->net_q, false);
		free(s->ask->open[i]);
	}
	free(s->ask);
	s->ask = NULL;
}

void ops_ask_denied_stale(struct daemon *d, struct dsession *s, const struct ctl_asked *q,
			  long holder)
{
	const char *layer = bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP);
	struct json_object *asks = asks_load(s->cgroup);

	denials_add(&s->denials, layer, "exec", q->file[0] ? q->file : "(unknown)", EPERM, 1);
	metrics_count_denial(d->metrics, layer);
	dlog("session %s: exec of %s (pid %d) waited for an ask whose answerer (pid %ld) is gone: "
	     "denied, killed",
	     s->id, q->file[0] ? q->file : "(unknown)", (int)q->pid, holder);
	if (!say_stale(d, s, asks, q->pid))
		dlog("session %s: no session.ask line for the denied ask of pid %d: its daemon "
		     "kept no record of it on the session's cgroup",
		     s->id, (int)q->pid);
	json_object_put(asks);
}

/*
 * Re-adoption (docs/daemon.md): an ask its cgroup is marked with was held
 * by a daemon before us, and nobody will answer it (we hold no ask of an
 * adopted session). Fail closed: denied, its process killed before the
 * session thaws; the whole session killed when which process waits is not
 * known, or the mark cannot be handled under the session's lock (then
 * true: it ends as its processes go).
 */
bool ops_ask_readopt(struct daemon *d, struct dsession *s)
{
	struct ctl_asked q[CTL_ASK_MAX];
	long holder;
	int n = ctl_ask_deny_stale(s->cgroup, true, q, CTL_ASK_MAX, &holder);

	for (int i = 0; i < n && i < CTL_ASK_MAX; i++)
		ops_ask_denied_stale(d, s, &q[i], holder);
	if (n == -EOWNERDEAD || n == -EAGAIN) {
		struct json_object *asks = asks_load(s->cgroup);

		/* Every ask it kept dies with the session: each line says the deny. */
		if (asks) {
			json_object_object_foreach (asks, key, e) {
				(void)e;
				say_stale(d, s, asks, strtol(key, NULL, 10));
			}
		}
		json_object_put(asks);
		denials_add(&s->denials, bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP), "exec",
			    "(unknown)", EPERM, 1);
		metrics_count_denial(d->metrics, bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP));
		/* Said first, as ctl_kill does, so that a supervisor reads why. */
		session_cgroup_set_state(s->cgroup, "killed ask_unanswered");
		cgroup_kill(s->cgroup);
		dlog("session %s: an ask whose answerer (pid %ld) is gone waits, its process %s: "
		     "the session is killed",
		     s->id, holder,
		     n == -EAGAIN ? "not reachable (the session's lock is held)" : "unknown");
		removexattr(s->cgroup, ASKS_XATTR);
		return true;
	}
	/* We hold none of its asks: what an earlier daemon kept is said, or stale. */
	removexattr(s->cgroup, ASKS_XATTR);
	return false;
}

/* An answer to an id that is not open: answered already, or never asked. */
static void reply_not_open(struct daemon *d, struct conn *c, struct dsession *s, uint64_t id)
{
	struct dask *a = s->ask;

	for (unsigned int k = 0; a && k < ASK_DONE_KEPT && k < a->ndone; k++) {
		if (a->done[k].id != id)
			continue;
		ops_reply_error(d, c, EALREADY,
				"answer: ask %llu of session %s was answered already (%s, %s)",
				(unsigned long long)id, s->id, a->done[k].answer, a->done[k].how);
		return;
	}
	ops_reply_error(d, c, ENOENT,
			"answer: session %s has no open ask %llu; its session.ask lines give "
			"the ids",
			s->id, (unsigned long long)id);
}

/* {"op":"answer","session":ID,"id":N,"answer":"approve"|"always"|"deny"} */
void op_answer(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = ops_request_session(d, c, req, "answer");
	enum ask_answer ans;
	const char *word;
	int64_t id;

	if (!s)
		return;
	if (proto_get_int(req, "id", &id) || id <= 0) {
		ops_bad_member(d, c, "answer", "id", "the ask's id (session.ask \"id\")");
		return;
	}
	if (proto_get_str(req, "answer", &word) || strchr(word, ' ') ||
	    ask_parse(word, 0, &ans) < 0) {
		ops_bad_member(d, c, "answer", "answer", "\"approve\", \"always\" or \"deny\"");
		return;
	}
	for (unsigned int i = 0; s->ask && i < ASK_OPEN_MAX; i++) {
		if (!s->ask->open[i] || s->ask->open[i]->id != (uint64_t)id)
			continue;
		/* The registering client relays its runtime's answers (--ask-fd). */
		resolve(d, s, i, ans, c->serial == s->owner ? "ask_fd" : "answer", c);
		ops_reply_begin(d);
		jsonw_str(&d->rw, "session", s->id);
		jsonw_u64(&d->rw, "id", id);
		jsonw_str(&d->rw, "answer", ask_answer_name(ans));
		ops_reply_send(d, c);
		return;
	}
	reply_not_open(d, c, s, id);
}
