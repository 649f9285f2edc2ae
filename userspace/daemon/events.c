// SPDX-License-Identifier: GPL-2.0
/*
 * Where the daemon's events go: the sinks (--audit, --sink, --config:
 * files, stdout, syslog collectors; docs/sinks.md) and every matching
 * subscriber. The ring consumer never blocks on either: the sinks queue and
 * spool on their own, and a subscriber's full queue drops the event and
 * counts it, the count delivered as a "loss" line once there is room.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "internal.h"
#include "ops_internal.h"
#include "metrics.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../lib/denial.h"
#include "../lib/names.h"
#include "../lib/log.h"
#include "../lib/util.h"

void ev_flush(struct daemon *d)
{
	sinks_flush(d->sinks);
}

static bool sub_matches(const struct conn *c, const struct dsession *s, enum ev_kind kind)
{
	if (!c->subscribed || c->closing || c->dead)
		return false;
	if (c->sub_kinds && !(c->sub_kinds & (1U << kind)))
		return false;
	if (c->sub_session[0] && (!s || !streq(c->sub_session, s->id)))
		return false;
	return c->sub_all_users || (s && s->uid == c->peer.uid);
}

/* The line that tells a subscriber how many events it missed. */
static void sub_loss_line(struct daemon *d, const struct conn *c, struct jsonw *w)
{
	jsonw_begin(w);
	jsonw_u64(w, "schema_version", AUDIT_SCHEMA_VERSION);
	jsonw_str(w, "type", ev_kind_name(EV_LOSS));
	audit_put_host(w);
	jsonw_str(w, "session", c->sub_session[0] ? c->sub_session : NULL);
	jsonw_u64(w, "count", c->sub_lost);
	jsonw_str(w, "where", "subscriber queue full");
	jsonw_end(w);
	jsonw_newline(w);
	(void)d;
}

/* Queues the loss line when room for it and then len more bytes is left. */
static bool sub_report_loss(struct daemon *d, struct conn *c, size_t len)
{
	struct jsonw w = {0};

	sub_loss_line(d, c, &w);
	if (!w.oom && buf_used(&c->out) + w.len + len <= DAEMON_SUB_BUF_MAX &&
	    buf_append(&c->out, w.buf, w.len) == 0)
		c->sub_lost = 0;
	jsonw_free(&w);
	return !c->sub_lost;
}

void ev_sub_drained(struct daemon *d, struct conn *c)
{
	if (c->subscribed && c->sub_lost && buf_used(&c->out) < DAEMON_SUB_BUF_MAX / 2)
		sub_report_loss(d, c, 0);
}

static void sub_queue(struct daemon *d, struct conn *c, const char *line, size_t len)
{
	if (c->sub_lost && !sub_report_loss(d, c, len)) {
		c->sub_lost++;
		return;
	}
	if (buf_used(&c->out) + len > DAEMON_SUB_BUF_MAX || buf_append(&c->out, line, len) < 0)
		c->sub_lost++;
}

void ev_emit_event(struct daemon *d, const struct dsession *s, const struct audit_event *ev)
{
	sinks_emit(d->sinks, ev);
	metrics_count_event(d->metrics, ev);
	for (struct conn *c = d->conns; c; c = c->next)
		if (sub_matches(c, s, ev->kind))
			sub_queue(d, c, ev->line, ev->len);
}

void ev_emit(struct daemon *d, const struct dsession *s, enum ev_kind kind, const char *line,
	     size_t len)
{
	struct audit_event ev = {.kind = kind, .line = line, .len = len};

	ev_emit_event(d, s, &ev);
}

static void sink_log(void *ctx, const char *msg)
{
	(void)ctx;
	dlog("%s", msg);
}

/* An event the sinks made (sink.error): to the subscribers that want it. */
static void sink_event(void *ctx, const struct audit_event *ev)
{
	struct daemon *d = ctx;

	for (struct conn *c = d->conns; c; c = c->next)
		if (sub_matches(c, NULL, ev->kind))
			sub_queue(d, c, ev->line, ev->len);
}

int ev_sinks_open_list(struct daemon *d, const struct sink_config *v, size_t n, char *err,
		       size_t size, struct sinks **out)
{
	struct sinks_opts so = {.log = sink_log, .on_event = sink_event, .ctx = d};

	return sinks_open(out, v, n, &so, err, size);
}

int ev_sinks_open(struct daemon *d)
{
	const struct daemon_opts *o = d->o;
	struct sink_config *file_sinks = NULL, *v = NULL;
	size_t nfile = 0, n = 0;
	char err[PATH_MAX + 1024];
	int r;

	if (o->config_path) {
		r = daemon_config_load(o->config_path, &file_sinks, &nfile, &d->ceilings,
				       &d->policies, err, sizeof(err));
		if (r < 0) {
			log_error("--config %s", err);
			return r;
		}
	}
	r = daemon_sink_list(o, file_sinks, nfile, &v, &n);
	free(file_sinks);
	if (r < 0)
		return log_error_errno(r, "out of memory");
	r = ev_sinks_open_list(d, v, n, err, sizeof(err), &d->sinks);
	if (r < 0) {
		free(v);
		log_error("%s", err);
		return r;
	}
	d->sink_cfg = v;
	d->nsink_cfg = n;
	return 0;
}

int ev_on_record(void *ctx, void *data, size_t size)
{
	const struct bpfbox_event_hdr *h = data;
	struct audit_event ev;
	struct daemon *d = ctx;
	struct dsession *s;

	if (size < sizeof(*h))
		return 0;
	s = table_by_index(&d->table, h->session);
	if (!s) {
		/* A session forgotten while the daemon was down: no id to give. */
		d->unknown_records++;
		return 0;
	}
	/* An exec stopped for an answer: session.ask in its place (ops_ask.c). */
	if (ops_ask_record(d, s, data, size))
		return 0;
	/* Every denial counts for the end-of-run summary, flood or not. */
	denials_add_record(&s->denials, data, size);
	/* A flood is counted, not written: exact counts by type, once a second. */
	if (!audit_flood_pass(&s->flood, data, size, now_ns()))
		return 0;
	ev_flood_say(d, s, false);
	jsonw_reset(&d->w);
	if (audit_encode_record(&d->w, &d->clock, data, size, s->id, &ev) < 0 || d->w.oom)
		return 0;
	if (h->decision == BPFBOX_DENY)
		metrics_count_denial(d->metrics, bpfbox_layer_name(h->layer));
	ev.line = d->w.buf;
	ev.len = d->w.len;
	ev_emit_event(d, s, &ev);
	return 0;
}

/* The strings of a request's array member, at most n - 1 of them, NULL-terminated. */
static size_t request_strings(struct json_object *req, const char *key, const char **v, size_t n)
{
	struct json_object *arr;
	size_t k = 0;

	if (proto_get_array(req, key, &arr) == 0)
		for (size_t i = 0; i < json_object_array_length(arr) && k + 1 < n; i++) {
			struct json_object *e = json_object_array_get_idx(arr, i);

			if (json_object_is_type(e, json_type_string))
				v[k++] = json_object_get_string(e);
		}
	v[k] = NULL;
	return k;
}

static char *object_text(struct json_object *req, const char *key)
{
	struct json_object *v;

	if (proto_get_object(req, key, &v))
		return NULL;
	return strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
								JSON_C_TO_STRING_NOSLASHESCAPE));
}

void ev_session_start(struct daemon *d, struct dsession *s, struct json_object *req)
{
	const struct agent_status *st = agent_status(d->agent);
	struct audit_start_info in = {
		.session = s->id,
		.ts_ns = now_ns(),
		.pid = s->client_pid,
		.has_uid = true,
		.uid = s->uid,
		.mode = "daemon",
		.cgroup = s->cgroup,
		.layers = {.bpf_audit = st->audit,
			   .bpf_network = st->net,
			   .bpf_unix_connect = st->unix_connect,
			   .bpf_lsm = s->lsm,
			   .bpf_audit_attach = st->attach},
		.limits = s->has_lim ? &s->lim : NULL,
		.command_truncated = json_object_object_get_ex(req, "command_truncated", NULL),
	};
	struct json_object *arr;
	size_t ncmd = proto_get_array(req, "command", &arr) ? 1 : json_object_array_length(arr) + 1;
	const char **cmd = calloc(ncmd, sizeof(*cmd));
	char *labels = object_text(req, "labels"), *policy = object_text(req, "policy");
	struct jsonw *w = &d->w;
	int64_t abi = 0;

	proto_get_int(req, "landlock_abi", &abi);
	proto_get_bool(req, "seccomp", &in.layers.seccomp);
	in.layers.landlock_abi = abi > 0 ? abi : 0;
	proto_get_str(req, "level_requested", &in.level_requested);
	proto_get_str(req, "level_enabled", &in.level_enabled);
	in.n_not_enforced = request_strings(req, "not_enforced", in.not_enforced,
					    ARRAY_SIZE(in.not_enforced) - 1);
	if (st->why_not[0])
		in.not_enforced[in.n_not_enforced++] = st->why_not;
	if (cmd)
		request_strings(req, "command", cmd, ncmd);
	in.command = (char *const *)cmd;
	/* The runtime's labels (session.start "labels", bpfbox run --label). */
	in.labels_json = labels;
	in.policy_json = policy;
	jsonw_reset(w);
	audit_session_start(w, &d->clock, &in);
	free(labels);
	free(policy);
	free(cmd);
	if (w->oom)
		return;
	free(s->start_line);
	s->start_line = strndup(w->buf, w->len);
	ev_emit(d, s, EV_SESSION_START, w->buf, w->len);
	ev_flush(d);
}

void ev_flood_init(struct daemon *d, struct dsession *s)
{
	if (d->o->audit_rate_set)
		audit_flood_init(&s->flood, d->o->audit_rate, d->o->audit_burst);
	else
		audit_flood_init(&s->flood, AUDIT_RATE_DEFAULT, AUDIT_BURST_DEFAULT);
}

void ev_flood_say(struct daemon *d, struct dsession *s, bool force)
{
	if (!s->flood.total)
		return;
	jsonw_reset(&d->w);
	if (audit_flood_line(&s->flood, &d->w, &d->clock, s->id, now_ns(), force) && !d->w.oom)
		ev_emit(d, s, EV_LOSS, d->w.buf, d->w.len);
}

struct emit_ctx {
	struct daemon *d;
	const struct dsession *s;
};

static void emit_to(void *ctx, const struct audit_event *ev)
{
	const struct emit_ctx *x = ctx;

	ev_emit_event(x->d, x->s, ev);
}

void ev_session_end(struct daemon *d, struct dsession *s, uint64_t seq, uint64_t lost)
{
	const struct dsession_end *e = &s->end;
	struct audit_end_info end = {
		.session = s->id,
		.seq = seq,
		.ts_ns = now_ns(),
		.has_exit = e->have_exit,
		.exit_code = e->exit_code,
		.timed_out = e->timed_out,
		.lost = lost,
		.exec_not_found = s->denials.exec_not_found,
		.suppressed = s->flood.all,
		.output_bytes = e->output_bytes,
		.output_dropped = e->output_dropped,
		.reason = e->reason,
	};
	struct emit_ctx x = {d, s};

	audit_session_end(&d->w, &d->clock, &end, emit_to, &x);
	ev_flush(d);
}
