// SPDX-License-Identifier: GPL-2.0
/*
 * The requests of docs/daemon.md: the dispatch, the replies, list,
 * subscribe, ping, reload, the tick, and re-adoption of the sessions a
 * previous daemon left. A session's register is ops_register.c (its BPF
 * LSM part ops_lsm.c), its life after that ops_session.c.
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
#include "../lib/util.h"
#include "../net/egress.h"

static char ended_ids[ENDED_KEPT][DAEMON_SESSION_ID_LEN + 1];
static unsigned int ended_next;

void ops_ended(const char *id)
{
	snprintf(ended_ids[ended_next++ % ENDED_KEPT], sizeof(ended_ids[0]), "%s", id);
}

bool ops_ended_recently(const char *id)
{
	for (unsigned int i = 0; i < ENDED_KEPT; i++)
		if (streq(ended_ids[i], id))
			return true;
	return false;
}

void ops_reply_error(struct daemon *d, struct conn *c, int err, const char *fmt, ...)
{
	va_list ap;

	jsonw_reset(&d->rw);
	va_start(ap, fmt);
	proto_verror(&d->rw, err, fmt, ap);
	va_end(ap);
	if (!d->rw.oom)
		conn_queue(d, c, d->rw.buf, d->rw.len);
}

/* ENOENT with "ended": true, which the client API tells apart (DAEMON_ENDED). */
static void reply_ended(struct daemon *d, struct conn *c, const char *op, const char *id)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "%s: session %s has already ended", op, id);
	jsonw_reset(&d->rw);
	jsonw_begin(&d->rw);
	jsonw_bool(&d->rw, "ok", false);
	jsonw_str(&d->rw, "error", msg);
	jsonw_str(&d->rw, "code", "ENOENT");
	jsonw_bool(&d->rw, "ended", true);
	jsonw_end(&d->rw);
	jsonw_newline(&d->rw);
	if (!d->rw.oom)
		conn_queue(d, c, d->rw.buf, d->rw.len);
}

/* Starts {"ok":true in d->rw; the caller adds members and calls reply_send. */
struct jsonw *ops_reply_begin(struct daemon *d)
{
	jsonw_reset(&d->rw);
	jsonw_begin(&d->rw);
	jsonw_bool(&d->rw, "ok", true);
	return &d->rw;
}

void ops_reply_send(struct daemon *d, struct conn *c)
{
	jsonw_end(&d->rw);
	jsonw_newline(&d->rw);
	if (d->rw.oom) {
		ops_reply_error(d, c, ENOMEM, "out of memory building the reply");
		return;
	}
	conn_queue(d, c, d->rw.buf, d->rw.len);
}

/* Type errors name the member, so that a client author sees what to fix. */
int ops_bad_member(struct daemon *d, struct conn *c, const char *op, const char *key,
		   const char *want)
{
	ops_reply_error(d, c, EINVAL, "%s: '%s' must be %s", op, key, want);
	return -EINVAL;
}

/* The session named by the request's "session", owned by the peer. */
struct dsession *ops_request_session(struct daemon *d, struct conn *c, struct json_object *req,
				     const char *op)
{
	struct dsession *s;
	const char *id;
	int r = proto_get_str(req, "session", &id);

	if (r == -ENOENT) {
		ops_reply_error(d, c, EINVAL, "%s: 'session' is required", op);
		return NULL;
	}
	if (r || !proto_session_id_valid(id)) {
		ops_bad_member(d, c, op, "session", "32 lowercase hex digits");
		return NULL;
	}
	s = table_find(&d->table, id);
	if (!s) {
		if (ops_ended_recently(id))
			reply_ended(d, c, op, id);
		else
			ops_reply_error(d, c, ENOENT, "%s: unknown session %s", op, id);
		return NULL;
	}
	if (c->peer.uid != 0 && c->peer.uid != s->uid) {
		ops_reply_error(d, c, EPERM, "%s: session %s belongs to another user", op, id);
		return NULL;
	}
	return s;
}

/* `bpfbox daemon reload`: root only, like SIGHUP. */
static void op_reload(struct daemon *d, struct conn *c, struct json_object *req)
{
	(void)req;
	char why[PATH_MAX + 1024];

	if (c->peer.uid != 0) {
		ops_reply_error(d, c, EPERM,
				"reload: only root may reload the daemon's configuration");
		return;
	}
	if (daemon_reload(d, why, sizeof(why)) < 0) {
		ops_reply_error(d, c, EINVAL, "reload refused: %s", why);
		return;
	}
	ops_reply_begin(d);
	jsonw_u64(&d->rw, "sinks", d->nsink_cfg);
	jsonw_u64(&d->rw, "ceiling_rules", d->ceilings.n);
	ops_reply_send(d, c);
}

static void put_time(struct jsonw *w, const char *key, int64_t ns)
{
	char buf[RFC3339_MAX];

	rfc3339(buf, sizeof(buf), ns, 0);
	jsonw_str(w, key, buf);
}

/*
 * One page of sessions: from "offset" (default 0, counted among the ones the
 * peer may see) until the reply passes DAEMON_LIST_PAGE; then "next_offset"
 * says where the next page starts. Without it, the list is complete.
 */
static void op_list(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct jsonw *w;
	int64_t offset = 0, seen = 0;

	if (proto_get_int(req, "offset", &offset) == -EINVAL || offset < 0) {
		ops_bad_member(d, c, "list", "offset", "a count of sessions, 0 or more");
		return;
	}
	w = ops_reply_begin(d);
	jsonw_array_begin(w, "sessions");
	for (struct dsession *s = d->table.head; s; s = s->next) {
		uint64_t seq = 1, lost = 0;

		if (c->peer.uid != 0 && c->peer.uid != s->uid)
			continue;
		if (seen++ < offset)
			continue;
		if (w->len > DAEMON_LIST_PAGE) {
			jsonw_array_end(w);
			jsonw_u64(w, "next_offset", seen - 1);
			ops_reply_send(d, c);
			return;
		}
		agent_session_stats(d->agent, s->cgroup_id, &seq, &lost);
		ops_note_running(s);
		jsonw_begin(w);
		jsonw_str(w, "session", s->id);
		jsonw_u64(w, "index", s->index);
		jsonw_str(w, "state", dsession_state_name(s->state));
		if (s->state == DS_PAUSED)
			jsonw_str(w, "pause_reason", s->pause_reason);
		jsonw_str(w, "cgroup", s->cgroup);
		if (s->level[0])
			jsonw_str(w, "level_enabled", s->level);
		jsonw_u64(w, "pid", s->client_pid);
		jsonw_u64(w, "uid", s->uid);
		jsonw_u64(w, "child", s->child);
		put_time(w, "start_time", s->start_real_ns);
		jsonw_u64(w, "records", seq > lost ? seq - 1 - lost : 0);
		jsonw_u64(w, "lost", lost);
		jsonw_bool(w, "client_connected", s->owner != 0);
		if (s->command)
			jsonw_raw(w, "command", s->command);
		else
			jsonw_null(w, "command");
		if (s->command_truncated)
			jsonw_bool(w, "command_truncated", true);
		/* The runtime's labels (bpfbox run --label): which tool call this is. */
		if (s->labels)
			jsonw_raw(w, "labels", s->labels);
		jsonw_end(w);
	}
	jsonw_array_end(w);
	ops_reply_send(d, c);
}

static void op_subscribe(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = NULL;
	struct json_object *types, *v;
	uint32_t kinds = 0;

	if (json_object_object_get_ex(req, "session", &v)) {
		s = ops_request_session(d, c, req, "subscribe");
		if (!s)
			return;
	}
	if (proto_get_array(req, "types", &types) == 0) {
		for (size_t i = 0; i < json_object_array_length(types); i++) {
			struct json_object *t = json_object_array_get_idx(types, i);
			const char *name = json_object_get_string(t);
			int k = json_object_is_type(t, json_type_string) ? ev_kind_parse(name)
									 : -EINVAL;

			if (k < 0) {
				char want[320];

				snprintf(want, sizeof(want), "an array of event types (%s)",
					 ev_kind_list());
				ops_bad_member(d, c, "subscribe", "types", want);
				return;
			}
			kinds |= 1U << k;
		}
	} else if (json_object_object_get_ex(req, "types", &v)) {
		ops_bad_member(d, c, "subscribe", "types", "an array");
		return;
	}
	ops_reply_begin(d);
	ops_reply_send(d, c);
	c->subscribed = true;
	c->sub_kinds = kinds;
	c->sub_all_users = c->peer.uid == 0;
	snprintf(c->sub_session, sizeof(c->sub_session), "%s", s ? s->id : "");
	/* A subscriber of one session gets its start, even if it came late. */
	if (s && s->start_line && (!kinds || (kinds & (1U << EV_SESSION_START))))
		conn_queue(d, c, s->start_line, strlen(s->start_line));
}

static void op_ping(struct daemon *d, struct conn *c, struct json_object *req)
{
	(void)req;
	const struct agent_status *st = agent_status(d->agent);
	struct jsonw *w = ops_reply_begin(d);

	jsonw_u64(w, "pid", getpid());
	jsonw_u64(w, "sessions", d->table.count);
	jsonw_str(w, "cgroup_parent", d->parent);
	jsonw_str(w, "pin_dir", d->o->pin_dir);
	jsonw_bool(w, "bpf_audit", st->audit);
	jsonw_bool(w, "bpf_network", st->net);
	jsonw_bool(w, "bpf_unix_connect", st->unix_connect);
	jsonw_bool(w, "bpf_lsm", st->lsm);
	/* Whether this peer may run sessions without the daemon (its ceiling). */
	if (d->ceilings.set && !(c->peer.uid == 0 && d->ceilings.exempt_root)) {
		const struct ceiling_rule *r =
			ceilings_match(&d->ceilings, c->peer.uid, c->peer.gid);

		jsonw_bool(w, "no_daemon", r && r->no_daemon);
		jsonw_str(w, "ceiling", r ? r->name : NULL);
	}
	ops_reply_send(d, c);
}

/* One parser for every request, reset for each (its allocation was 3% of a session). */
static struct json_tokener *parser(struct daemon *d)
{
	if (!d->tok && (d->tok = json_tokener_new()))
		json_tokener_set_flags(d->tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	if (d->tok)
		json_tokener_reset(d->tok);
	return d->tok;
}

/* The operations of the socket API (docs/daemon.md), by their "op". */
static const struct op {
	const char *name;
	void (*run)(struct daemon *d, struct conn *c, struct json_object *req);
} ops[] = {
	{"register", op_register}, {"adopt", op_adopt},
	{"attach", op_attach},	   {"unregister", op_unregister},
	{"list", op_list},	   {"subscribe", op_subscribe},
	{"ping", op_ping},	   {"pause", op_pause},
	{"resume", op_resume},	   {"kill", op_kill},
	{"net", op_net},	   {"answer", op_answer},
	{"reload", op_reload},
};

void ops_handle(struct daemon *d, struct conn *c, const char *line, size_t len)
{
	struct json_tokener *tok;
	struct json_object *req;
	const char *op;
	uint64_t t0;
	size_t end, i;

	if (memchr(line, '\0', len)) {
		ops_reply_error(d, c, EINVAL,
				"the request holds a NUL byte; send one JSON object per line");
		return;
	}
	tok = parser(d);
	if (!tok) {
		ops_reply_error(d, c, ENOMEM, "out of memory");
		return;
	}
	req = json_tokener_parse_ex(tok, line, len);
	end = json_tokener_get_parse_end(tok);
	while (req && end < len && (line[end] == ' ' || line[end] == '\t' || line[end] == '\r'))
		end++;
	if (!req || end != len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		ops_reply_error(d, c, EINVAL, "malformed JSON: %s; send one JSON object per line",
				req			     ? "trailing bytes after the object"
				: e == json_tokener_continue ? "incomplete object"
							     : json_tokener_error_desc(e));
		goto out;
	}
	if (!json_object_is_type(req, json_type_object)) {
		ops_reply_error(d, c, EINVAL, "the request must be a JSON object with an \"op\"");
		goto out;
	}
	if (proto_get_str(req, "op", &op)) {
		ops_reply_error(
			d, c, EINVAL,
			"the request needs an \"op\" string: register, attach, "
			"unregister, list, subscribe, ping, pause, resume, kill, net, answer "
			"or reload");
		goto out;
	}
	t0 = now_ns();
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		if (streq(op, ops[i].name))
			break;
	if (i < ARRAY_SIZE(ops))
		ops[i].run(d, c, req);
	else
		ops_reply_error(d, c, EOPNOTSUPP,
				"unknown op '%.64s': use register, adopt, attach, unregister, "
				"list, subscribe, ping, pause, resume, kill, net, answer or reload",
				op);
	metrics_observe_request(d->metrics, op, now_ns() - t0);
out:
	json_object_put(req);
}

bool ops_cgroup_populated(const char *cgroup)
{
	return cgroup_populated(cgroup) != 0; /* unreadable: assume it lives */
}

void ops_tick(struct daemon *d)
{
	struct dsession *s = d->table.head, *next;

	for (; s; s = next) {
		next = s->next;
		if (ops_adopt_tick(d, s)) /* ended and freed */
			continue;
		ev_flood_say(d, s, false);
		ops_ask_tick(d, s);
		ops_note_running(s);
		if (s->state == DS_ENDING)
			ops_end_session(d, s, s->end.reason, NULL);
		else if (!s->owner && !ops_cgroup_populated(s->cgroup))
			ops_end_session(d, s, "processes exited", NULL);
	}
	ops_ahead(d, true);
}

void ops_conn_gone(struct daemon *d, struct conn *c)
{
	struct dsession *s = d->table.head, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->owner != c->serial)
			continue;
		s->owner = 0;
		if (s->state != DS_ENDING)
			ops_end_session(d, s, "client gone", NULL);
	}
}

/* The cgroup directory under the parent whose id (inode) is cgroup_id. */
static int find_cgroup(struct daemon *d, uint64_t cgroup_id, char *name, size_t size)
{
	DIR *dir = opendir(d->parent);
	struct dirent *de;
	int r = -ENOENT;

	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		struct stat st;

		if (!proto_session_id_valid(de->d_name) ||
		    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_ino != cgroup_id)
			continue;
		r = snprintf(name, size, "%s", de->d_name) < (int)size ? 0 : -ENAMETOOLONG;
		break;
	}
	closedir(dir);
	return r;
}

static int readopt_one(void *ctx, uint64_t cgroup_id, uint32_t index, uint32_t flags)
{
	struct daemon *d = ctx;
	struct dsession *s;
	char name[DAEMON_SESSION_ID_LEN + 1];
	uint64_t seq = 1;

	if (table_by_index(&d->table, index)) {
		dlog("session index %u appears twice in the sessions map; cgroup id %llu is left "
		     "as it is",
		     index, (unsigned long long)cgroup_id);
		return 0;
	}
	if (find_cgroup(d, cgroup_id, name, sizeof(name)) < 0) {
		/* An adopted cgroup, outside the parent (ops_adopt.c). */
		if (ops_readopt_adopted(d, cgroup_id, index, flags) == 0)
			return 0;
		/* Its cgroup is gone (or not ours): nothing can run in it any more. */
		agent_session_remove(d->agent, cgroup_id, &seq, NULL);
		agent_flush_session(d->agent, index, &seq, ops_discard_record, NULL);
		agent_net_clear(d->agent, index);
		agent_session_lsm_clear(d->agent, index);
		agent_cgroup_detach(d->agent, cgroup_id, NULL, 0); /* an adopted one's pins */
		dlog("forgot session index %u: no session cgroup with id %llu under %s", index,
		     (unsigned long long)cgroup_id, d->parent);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ev_flood_init(d, s);
	if (snprintf(s->id, sizeof(s->id), "%s", name) >= (int)sizeof(s->id) ||
	    snprintf(s->cgroup, sizeof(s->cgroup), "%s/%s", d->parent, name) >=
		    (int)sizeof(s->cgroup)) {
		free(s);
		return 0;
	}
	s->index = index;
	s->cgroup_id = cgroup_id;
	s->flags = flags;
	s->state = DS_ADOPTED;
	ops_read_meta(d, s);
	/* Its v1 cgroups, if any, go with it. */
	limits_plan(&s->lim,
		    &(struct policy_limits){
			    .memory_mb = 2048, .pids = 64, .cpu_percent = 100, .disk_mb = 1024},
		    d->parent, LIMITS_VIA_AUTO);
	snprintf(s->lim.cg, sizeof(s->lim.cg), "%.*s", (int)sizeof(s->lim.cg) - 1, s->cgroup);
	limits_v1_read(s->cgroup, &s->lim);
	ctl_limits(s->cgroup, &s->lim.memory_mb, &s->lim.disk_mb);
	s->has_lim = true;
	/* Before the pause is read: a denied ask thaws a session it alone froze. */
	if (!ops_ask_readopt(d, s) && ctl_paused(s->cgroup)) {
		char st[48] = "";
		ssize_t n = getxattr(s->cgroup, LIMITS_XATTR_STATE, st, sizeof(st) - 1);

		st[n > 0 ? n : 0] = '\0';
		s->resume_state = DS_ADOPTED;
		s->state = DS_PAUSED;
		s->paused_at_ns = now_ns();
		snprintf(s->pause_reason, sizeof(s->pause_reason), "%.15s",
			 startswith(st, "paused ") ? st + 7 : "manual");
	}
	if (table_add(&d->table, s) < 0) {
		free(s->command);
		json_object_put(s->lsm_lists);
		free(s->wkeys);
		free(s);
		return 0;
	}
	dlog("re-adopted session %s (index %u, uid %u, cgroup %s)", s->id, s->index, s->uid,
	     s->cgroup);
	return 0;
}

static bool index_adopted(void *ctx, uint32_t index)
{
	return table_by_index(&((struct daemon *)ctx)->table, index) != NULL;
}

int ops_readopt(struct daemon *d)
{
	struct session_limits l;
	struct policy_limits pl = {.memory_mb = 2048, .pids = 64, .cpu_percent = 100};
	int r = agent_session_foreach(d->agent, readopt_one, d), n;

	/*
	 * Policy entries of no adopted session (a daemon killed between a
	 * register's writes): a later session given that index must not
	 * inherit them.
	 */
	n = r < 0 ? 0 : agent_policy_sweep(d->agent, index_adopted, d);
	if (n > 0)
		dlog("removed %d policy map entries of sessions that no longer exist", n);

	/* What a killed daemon or killed runs left: empty, stale session cgroups. */
	limits_plan(&l, &pl, d->parent, LIMITS_VIA_AUTO);
	limits_sweep(&l);
	/* A killed daemon's cgroups made ahead; then ours. */
	n = cgroup_pool_sweep(d->parent);
	if (n > 0)
		dlog("removed %d cgroup%s made ahead by a daemon before", n, n == 1 ? "" : "s");
	ops_ahead(d, false);
	return r;
}
