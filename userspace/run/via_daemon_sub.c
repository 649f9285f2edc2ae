// SPDX-License-Identifier: GPL-2.0
/*
 * Daemon mode's event stream (via_daemon.c registers the session): the
 * session's records and lifecycle lines, subscribed to at the child's
 * release, copied to the run's sinks (--audit) as they come, and the
 * command rules' asks among them relayed between the status fd, the
 * runtime's answers (--ask-fd) and the daemon's answer op; drained after
 * the end until session.end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <json-c/json.h>

#include "via_daemon.h"
#include "via_daemon_internal.h"
#include "../audit/redact.h"
#include "../audit/sink.h"
#include "../sandbox/session.h"
#include "../lib/json.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define DRAIN_TIMEOUT_MS 5000

/* The subscription is done: poll must never see it readable again. */
static void sub_done(struct daemon_run *r)
{
	if (r->sub_gone)
		return;
	r->sub_gone = true;
	if (!r->finishing)
		log_warn("the daemon's event stream ended during the session; the rest of its "
			 "events go to the daemon's own audit log once it runs again");
	if (r->never_fd[0] >= 0)
		dup2(r->never_fd[0], r->sub.fd);
}

/* The ask id is answered (or given up): out of the queue. */
static void ask_forget(struct daemon_run *r, uint64_t id)
{
	for (unsigned int i = 0; i < r->nasks; i++) {
		if (r->asks[i].id != id)
			continue;
		memmove(&r->asks[i], &r->asks[i + 1], (r->nasks - i - 1) * sizeof(r->asks[0]));
		r->nasks--;
		return;
	}
}

/* Whether id waits in the queue. */
static bool ask_queued(const struct daemon_run *r, uint64_t id)
{
	for (unsigned int i = 0; i < r->nasks; i++)
		if (r->asks[i].id == id)
			return true;
	return false;
}

static const char *member_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

/*
 * A session.ask of the stream: asked (answer null), the question to the
 * status fd and into the queue, as embedded mode says it; answered, its
 * "answered" line when this side asked it.
 */
static void ask_line(struct daemon_run *r, const char *line, size_t len)
{
	char *text = strndup(line, len);
	struct json_object *o = text ? json_tokener_parse(text) : NULL, *v, *arr;
	const char *answer = member_str(o, "answer");
	uint64_t id = json_object_object_get_ex(o, "id", &v) ? json_object_get_uint64(v) : 0;
	char *argv = NULL;
	size_t n = 0;

	free(text);
	if (!o || !id || r->ask.fd < 0) {
		json_object_put(o);
		return;
	}
	if (answer) {
		if (ask_queued(r, id)) {
			ask_forget(r, id);
			status_answered(r->s, id, answer);
		}
	} else if (!ask_queued(r, id) && r->nasks < ARRAY_SIZE(r->asks) && member_str(o, "name") &&
		   streq(member_str(o, "kind") ? member_str(o, "kind") : "", "net")) {
		/* --net-ask: a destination (docs/network.md), no process stopped. */
		uint64_t after = json_object_object_get_ex(o, "deny_after_ms", &v)
					 ? json_object_get_uint64(v)
					 : 0;

		status_ask_net(r->s, id, member_str(o, "name"),
			       json_object_object_get_ex(o, "port", &v) && v
				       ? (uint16_t)json_object_get_int(v)
				       : 0,
			       after);
		r->asks[r->nasks].id = id;
		r->asks[r->nasks].until_ms = now_ns() / 1000000 + after + 5000;
		r->asks[r->nasks++].sent = false;
	} else if (!ask_queued(r, id) && r->nasks < ARRAY_SIZE(r->asks) &&
		   json_object_object_get_ex(o, "argv", &arr) &&
		   json_object_is_type(arr, json_type_array) &&
		   (argv = malloc(REDACT_MAX(BPFBOX_ARGV_LEN)))) {
		uint64_t after = json_object_object_get_ex(o, "deny_after_ms", &v)
					 ? json_object_get_uint64(v)
					 : 0;

		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			struct json_object *a = json_object_array_get_idx(arr, i);
			size_t l = json_object_get_string_len(a);

			if (n + l + 1 > REDACT_MAX(BPFBOX_ARGV_LEN))
				break;
			memcpy(argv + n, json_object_get_string(a), l);
			argv[n + l] = '\0';
			n += l + 1;
		}
		r->s->asked = true; /* the command has exec'd (session_run.c wait_exec) */
		status_ask(r->s, id,
			   json_object_object_get_ex(o, "pid", &v) ? json_object_get_int(v) : 0,
			   member_str(o, "rule"), member_str(o, "filename"), argv, n, after);
		/* A little past the daemon's bound: its own denial comes first. */
		r->asks[r->nasks].id = id;
		r->asks[r->nasks].until_ms = now_ns() / 1000000 + after + 5000;
		r->asks[r->nasks++].sent = false;
	}
	free(argv);
	json_object_put(o);
}

/* Whole lines of data to the run's sinks; the rest waits for its newline. */
static void copy_lines(struct daemon_run *r, const char *data, size_t n)
{
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data + 1) : n;

		if (r->line_len + take > r->line_cap) {
			size_t cap = (r->line_len + take) * 2;
			char *p = realloc(r->line, cap);

			if (!p)
				return; /* the line is lost; the daemon's own log has it */
			r->line = p;
			r->line_cap = cap;
		}
		memcpy(r->line + r->line_len, data, take);
		r->line_len += take;
		data += take;
		n -= take;
		if (nl) {
			struct audit_event ev;

			if (audit_event_parse(&ev, r->line, r->line_len) == 0) {
				sinks_emit(r->sinks, &ev);
				if (ev.kind == EV_SESSION_ASK)
					ask_line(r, r->line, r->line_len);
			} else
				log_warn("the daemon sent a line that is no event; it is not kept");
			r->line_len = 0;
		}
	}
	sinks_flush(r->sinks);
}

/* Copies the session's events that came; polled with the command's output. */
static void read_sub(struct daemon_run *r)
{
	char buf[65536];

	for (;;) {
		ssize_t n = recv(r->sub.fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			sub_done(r);
			return;
		}
		copy_lines(r, buf, n);
	}
}

/*
 * The asks the stream brought, one at a time: the runtime's answer from
 * the ask fd goes to the daemon (answer op) while the stream is read on,
 * until the daemon's session.ask says it was answered (by this answer,
 * another one through `bpfbox answer`, or its pause timeout).
 */
static void relay_asks(struct daemon_run *r)
{
	char msg[512];

	while (r->nasks && !r->sub_gone) {
		uint64_t id = r->asks[0].id, now = now_ns() / 1000000;
		uint64_t left = r->asks[0].until_ms > now ? r->asks[0].until_ms - now : 0;
		enum ask_answer ans = ASK_OTHER;
		struct pollfd pfd = {.fd = r->sub.fd, .events = POLLIN};

		if (!r->asks[0].sent)
			ans = left ? ask_wait_or(&r->ask, id, left, r->sub.fd) : ASK_TIMEOUT;
		else if (!left || poll(&pfd, 1, (int)left) == 0)
			ans = ASK_TIMEOUT; /* the daemon never said: not waited for longer */
		if (ans == ASK_OTHER) {
			read_sub(r);
			continue;
		}
		if (r->asks[0].sent) {
			ask_forget(r, id);
			continue;
		}
		r->asks[0].sent = true;
		/* Fail closed: past the bound, this side denies too. */
		if (daemon_answer(&r->ctl, r->s->id, id,
				  ans == ASK_TIMEOUT ? "deny" : ask_answer_name(ans), msg,
				  sizeof(msg)) < 0 &&
		    r->ctl.fd < 0)
			ask_forget(r, id); /* the daemon is gone: it ended the session */
	}
}

/* Copies the session's events as they come and relays its asks. */
static void on_sub_poll(void *ctx)
{
	struct daemon_run *r = ctx;

	read_sub(r);
	relay_asks(r);
}

int vd_subscribe(struct daemon_run *r)
{
	struct json_object *req = daemon_request("subscribe", r->s->id);
	struct json_object *reply = NULL;
	const char *pending;
	char msg[512];
	size_t n;
	int rc;

	if (pipe2(r->never_fd, O_CLOEXEC) < 0) {
		json_object_put(req);
		return log_error_errno(errno, "cannot create a pipe");
	}
	rc = daemon_client_connect(&r->sub, r->socket, DAEMON_CALL_TIMEOUT_MS);
	if (rc < 0) {
		json_object_put(req);
		return log_error_errno(
			rc, "cannot connect to the daemon at %s for the audit stream", r->socket);
	}
	rc = daemon_client_call(&r->sub, req, &reply, msg, sizeof(msg));
	json_object_put(req);
	json_object_put(reply);
	if (rc < 0)
		return log_error_errno(rc, "the daemon refused the audit stream: %s", msg);
	/* What came with the reply (the replayed session.start) goes first. */
	n = daemon_client_pending(&r->sub, &pending);
	copy_lines(r, pending, n);
	r->sub.in_len = r->sub.taken = 0;
	r->s->hooks.poll_fd = r->sub.fd;
	r->s->hooks.on_poll = on_sub_poll;
	return 0;
}

/* After the end, the subscription carries the last records and session.end. */
void vd_drain_sub(struct daemon_run *r)
{
	uint64_t deadline = now_ns() + DRAIN_TIMEOUT_MS * 1000000ULL;

	while (!r->sub_gone) {
		struct pollfd pfd = {.fd = r->sub.fd, .events = POLLIN};
		uint64_t now = now_ns();

		if (now >= deadline || poll(&pfd, 1, (deadline - now) / 1000000ULL + 1) <= 0)
			break;
		on_sub_poll(r);
	}
}
