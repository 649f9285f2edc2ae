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
#include "metrics.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../lib/denial.h"
#include "../lib/log.h"
#include "../lib/util.h"

int ev_kind_parse(const char *name)
{
	int i = sink_type_index(name);

	return i >= 0 && i < EV_KINDS ? i : -EINVAL;
}

static enum ev_kind kind_of_record(const struct bpfbox_event_hdr *h)
{
	switch (h->type) {
	case BPFBOX_EV_NET:
		return h->decision == BPFBOX_DENY ? EV_NET_DENY : EV_NET_ALLOW;
	case BPFBOX_EV_EXEC:
		return EV_EXEC;
	case BPFBOX_EV_EXIT:
		return EV_EXIT;
	case BPFBOX_EV_FORK:
		return EV_FORK;
	case BPFBOX_EV_FILE:
		return EV_FILE;
	case BPFBOX_EV_COMM:
		return EV_RENAME;
	default:
		return EV_CONNECT;
	}
}

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
	jsonw_str(w, "type", "loss");
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
	struct jsonw w = { 0 };

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

void ev_emit(struct daemon *d, const struct dsession *s, enum ev_kind kind, const char *line,
	     size_t len)
{
	sinks_emit(d->sinks, sink_type_name(kind), line, len);
	metrics_count_event(d->metrics, kind, line, len);
	for (struct conn *c = d->conns; c; c = c->next)
		if (sub_matches(c, s, kind))
			sub_queue(d, c, line, len);
}

static void sink_log(void *ctx, const char *msg)
{
	(void)ctx;
	dlog("%s", msg);
}

/* An event the sinks made (sink.error): to the subscribers that want it. */
static void sink_event(void *ctx, const char *type, const char *line, size_t len)
{
	struct daemon *d = ctx;
	int kind = ev_kind_parse(type);

	if (kind < 0)
		return;
	for (struct conn *c = d->conns; c; c = c->next)
		if (sub_matches(c, NULL, kind))
			sub_queue(d, c, line, len);
}

int ev_sinks_open_list(struct daemon *d, const struct sink_config *v, size_t n, char *err,
		       size_t size, struct sinks **out)
{
	struct sinks_opts so = { .log = sink_log, .on_event = sink_event, .ctx = d };

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
		r = daemon_config_load(o->config_path, &file_sinks, &nfile, &d->ceilings, err,
				       sizeof(err));
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
	/* Every denial counts for the end-of-run summary, flood or not. */
	denials_add_record(&s->denials, data, size);
	/* A flood is counted, not written: exact counts by type, once a second. */
	if (!audit_flood_pass(&s->flood, data, size, now_ns()))
		return 0;
	ev_flood_say(d, s, false);
	jsonw_reset(&d->w);
	if (audit_encode_record(&d->w, &d->clock, data, size, s->id) < 0 || d->w.oom)
		return 0;
	if (h->decision == BPFBOX_DENY)
		metrics_count_denial(d->metrics, audit_layer_name(h->layer));
	ev_emit(d, s, kind_of_record(h), d->w.buf, d->w.len);
	return 0;
}

static void copy_strings(struct jsonw *w, const char *key, struct json_object *arr)
{
	size_t n = arr ? json_object_array_length(arr) : 0;

	jsonw_array_begin(w, key);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);

		if (json_object_is_type(v, json_type_string))
			jsonw_array_strn(w, json_object_get_string(v), json_object_get_string_len(v));
	}
}

void ev_session_start(struct daemon *d, struct dsession *s, struct json_object *req)
{
	const struct agent_status *st = agent_status(d->agent);
	struct json_object *v;
	struct jsonw *w = &d->w;
	const char *str;
	char *labels;
	int64_t abi = 0;
	bool seccomp = false;

	proto_get_int(req, "landlock_abi", &abi);
	proto_get_bool(req, "seccomp", &seccomp);
	jsonw_reset(w);
	audit_begin(w, &d->clock, "session.start", s->id, 0, now_ns());
	jsonw_u64(w, "pid", s->client_pid);
	jsonw_u64(w, "uid", s->uid);
	jsonw_str(w, "mode", "daemon");
	jsonw_str(w, "cgroup", s->cgroup);
	if (proto_get_str(req, "level_requested", &str) == 0)
		jsonw_str(w, "level_requested", str);
	if (proto_get_str(req, "level_enabled", &str) == 0)
		jsonw_str(w, "level_enabled", str);
	jsonw_object_begin(w, "layers");
	jsonw_u64(w, "landlock_abi", abi > 0 ? abi : 0);
	jsonw_bool(w, "seccomp", seccomp);
	jsonw_bool(w, "bpf_audit", st->audit);
	jsonw_bool(w, "bpf_network", st->net);
	jsonw_bool(w, "bpf_unix_connect", st->unix_connect);
	jsonw_bool(w, "bpf_lsm", s->lsm);
	jsonw_end(w);
	if (s->has_lim)
		limits_json(&s->lim, w, "limits");
	copy_strings(w, "not_enforced", proto_get_array(req, "not_enforced", &v) ? NULL : v);
	if (st->why_not[0])
		jsonw_array_strn(w, st->why_not, strlen(st->why_not));
	jsonw_array_end(w);
	copy_strings(w, "command", proto_get_array(req, "command", &v) ? NULL : v);
	jsonw_array_end(w);
	if (json_object_object_get_ex(req, "command_truncated", NULL))
		jsonw_bool(w, "command_truncated", true);
	/* The runtime's labels (session.start "labels", bpfbox run --label). */
	labels = proto_get_object(req, "labels", &v) ? NULL : strdup(
		json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
	if (proto_get_object(req, "policy", &v) == 0)
		audit_put_policy(w, labels,
				 json_object_to_json_string_ext(
					 v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	free(labels);
	jsonw_end(w);
	jsonw_newline(w);
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

void ev_session_end(struct daemon *d, struct dsession *s, uint64_t seq, uint64_t lost)
{
	const struct dsession_end *e = &s->end;
	/* seq is the next number: records 1..seq-1 were produced, lost among them. */
	uint64_t records = seq > lost ? seq - 1 - lost : 0;

	/* Those the rate limit counted instead of writing are not record lines. */
	records = records > s->flood.all ? records - s->flood.all : 0;
	struct jsonw *w = &d->w;

	if (lost) {
		jsonw_reset(w);
		audit_begin(w, &d->clock, "loss", s->id, seq++, now_ns());
		jsonw_u64(w, "count", lost);
		jsonw_str(w, "where", "ring buffer full");
		jsonw_end(w);
		jsonw_newline(w);
		if (!w->oom)
			ev_emit(d, s, EV_LOSS, w->buf, w->len);
	}
	jsonw_reset(w);
	audit_begin(w, &d->clock, "session.end", s->id, seq, now_ns());
	if (e->have_exit)
		jsonw_i64(w, "exit_code", e->exit_code);
	else
		jsonw_null(w, "exit_code");
	jsonw_bool(w, "timed_out", e->timed_out);
	jsonw_u64(w, "records", records);
	jsonw_u64(w, "lost", lost);
	jsonw_u64(w, "suppressed", s->flood.all);
	jsonw_u64(w, "output_bytes", e->output_bytes);
	jsonw_u64(w, "output_dropped", e->output_dropped);
	jsonw_str(w, "reason", e->reason);
	jsonw_end(w);
	jsonw_newline(w);
	if (!w->oom)
		ev_emit(d, s, EV_SESSION_END, w->buf, w->len);
	ev_flush(d);
}
