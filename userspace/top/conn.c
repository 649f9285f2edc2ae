// SPDX-License-Identifier: GPL-2.0
/*
 * `bpfbox top` and the daemon: two connections made with the client
 * library (daemon/client.c). The control connection sends `list`, `pause`,
 * `resume` and `kill` and reads their replies, in order, without blocking;
 * the other subscribes once to every event. Both are read only when poll
 * says so, so a daemon that is slow to reply (one busy ending a session)
 * shows as a late refresh, not as a frozen screen.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "internal.h"
#include "../lib/util.h"

#define LINES_MAX (DAEMON_MAX_REPLY + 1) /* a list of 4096 sessions fits */

static double boottime_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start of pid in seconds after boot, if it is the daemon we talk to. */
static double process_start(pid_t pid)
{
	char path[64], buf[64];
	unsigned long long start;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (read_file_str(path, buf, sizeof(buf)) < 0 || !streq(buf, "bpfbox"))
		return -1; /* another pid namespace, or not the daemon */
	start = proc_start_time(pid);
	return start ? (double)start / sysconf(_SC_CLK_TCK) : -1;
}

double top_daemon_uptime(const struct top *t)
{
	return t->connected && t->daemon_start >= 0 ? boottime_s() - t->daemon_start : -1;
}

uint64_t top_drops(const struct top *t)
{
	uint64_t ring = t->removed_lost;

	for (size_t i = 0; i < t->n; i++)
		ring += t->all[i]->lost;
	return ring + t->view_lost;
}

int top_event_fd(const struct top *t)
{
	return t->connected ? t->sub.fd : -1;
}

int top_ctl_fd(const struct top *t)
{
	return t->connected ? t->ctl.fd : -1;
}

/*
 * Reads what fd has, at most max bytes, and calls fn for each whole line
 * (NUL-terminated in place). The number of lines, or -errno: -ECONNRESET
 * when the daemon closed the connection, -EPROTO for a line longer than
 * LINES_MAX.
 */
static int lines_read(struct top *t, struct buf *b, int fd, size_t max,
		      void (*fn)(struct top *t, char *line, size_t len))
{
	size_t got = 0;
	int lines = 0;

	while (got < max) {
		char chunk[65536];
		ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		size_t scan;
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		if (buf_append(b, chunk, n) < 0)
			return -ENOMEM;
		got += n;
		/* Only the new bytes can hold a newline not seen before. */
		scan = b->len - n;
		while ((nl = memchr(b->p + scan, '\n', b->len - scan))) {
			char *line = b->p + b->off;

			*nl = '\0';
			fn(t, line, nl - line);
			lines++;
			buf_consume(b, nl - line + 1);
			scan = b->off;
		}
		if (buf_used(b) > LINES_MAX)
			return -EPROTO;
	}
	return lines;
}

/* lines_read() of one connection; on an error, why and disconnected. */
static int read_or_drop(struct top *t, struct buf *b, int fd, size_t max,
			void (*fn)(struct top *t, char *line, size_t len), const char *closed)
{
	int r;

	if (!t->connected)
		return -ENOTCONN;
	r = lines_read(t, b, fd, max, fn);
	if (r < 0) {
		snprintf(t->why, sizeof(t->why), "%s", r == -ECONNRESET ? closed : strerror(-r));
		top_disconnect(t);
	}
	return r;
}

int top_read_events(struct top *t, size_t max_bytes)
{
	return read_or_drop(t, &t->sub_in, t->sub.fd, max_bytes, top_handle_line,
			    "the daemon closed the event stream");
}

static int send_request(struct top *t, enum top_req_kind kind, const char *op, const char *id)
{
	struct json_object *req;
	struct top_req *q;
	const char *text;
	size_t len, off = 0;
	int r = 0;

	if (!t->connected)
		return -ENOTCONN;
	if (t->pend_n == TOP_MAX_PENDING)
		return -EBUSY;
	req = daemon_request(op, id);
	text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	len = strlen(text);
	/* A few dozen bytes: the socket buffer takes them whole. */
	while (off <= len) {
		ssize_t n = off < len ? send(t->ctl.fd, text + off, len - off, MSG_NOSIGNAL)
				      : send(t->ctl.fd, "\n", 1, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EPIPE;
			break;
		}
		off += n;
	}
	json_object_put(req);
	if (r < 0) {
		snprintf(t->why, sizeof(t->why), "cannot send to the daemon: %s", strerror(-r));
		top_disconnect(t);
		return r;
	}
	q = &t->pend[(t->pend_head + t->pend_n++) % TOP_MAX_PENDING];
	q->kind = kind;
	snprintf(q->op, sizeof(q->op), "%s", op);
	snprintf(q->id, sizeof(q->id), "%s", id ? id : "");
	q->sent_ns = now_ns();
	return 0;
}

int top_request_sample(struct top *t)
{
	for (unsigned int i = 0; i < t->pend_n; i++)
		if (t->pend[(t->pend_head + i) % TOP_MAX_PENDING].kind == TOP_REQ_LIST)
			return 0; /* one is under way */
	return send_request(t, TOP_REQ_LIST, "list", NULL);
}

int top_request_op(struct top *t, const char *op, const char *id)
{
	return send_request(t, TOP_REQ_OP, op, id);
}

/* One reply of the control connection: the answer to the oldest request. */
static void on_reply(struct top *t, char *line, size_t len)
{
	struct json_object *o, *list;
	struct top_req q;
	const char *err;
	bool ok;
	int code;

	if (!t->pend_n) {
		t->bad_lines++;
		return;
	}
	q = t->pend[t->pend_head];
	t->pend_head = (t->pend_head + 1) % TOP_MAX_PENDING;
	t->pend_n--;
	o = json_tokener_parse(line);
	(void)len;
	ok = json_member_true(o, "ok");
	err = o ? json_member_str(o, "error") : NULL;
	code = o && json_member_str(o, "code") ? -proto_errno_from_name(json_member_str(o, "code"))
					       : -EPROTO;
	if (q.kind == TOP_REQ_OP) {
		snprintf(t->op.op, sizeof(t->op.op), "%s", q.op);
		snprintf(t->op.id, sizeof(t->op.id), "%s", q.id);
		t->op.err = ok ? 0 : code;
		snprintf(t->op.msg, sizeof(t->op.msg), "%s",
			 ok    ? ""
			 : err ? err
			       : "the daemon's reply is not valid");
		t->op_results++;
	} else if (ok && json_object_object_get_ex(o, "sessions", &list) &&
		   json_object_is_type(list, json_type_array)) {
		t->sample_err = 0;
		t->sample_msg[0] = '\0';
		top_apply_list(t, list, q.sent_ns);
	} else {
		t->sample_err = ok ? -EPROTO : code;
		snprintf(t->sample_msg, sizeof(t->sample_msg), "list: %s",
			 ok    ? "the daemon sent no session list"
			 : err ? err
			       : "not a valid reply");
		t->samples++;
	}
	json_object_put(o);
}

int top_read_replies(struct top *t)
{
	uint64_t samples = t->samples, ops = t->op_results;
	int r = read_or_drop(t, &t->ctl_in, t->ctl.fd, SIZE_MAX, on_reply,
			     "the daemon closed the connection");

	if (r < 0)
		return r;
	if (t->pend_n && now_ns() - t->pend[t->pend_head].sent_ns >
				 (uint64_t)TOP_REPLY_TIMEOUT_MS * 1000000ULL) {
		snprintf(t->why, sizeof(t->why), "no reply to '%s' in %d s",
			 t->pend[t->pend_head].op, TOP_REPLY_TIMEOUT_MS / 1000);
		top_disconnect(t);
		return -ETIMEDOUT;
	}
	return (t->samples != samples ? TOP_GOT_SAMPLE : 0) |
	       (t->op_results != ops ? TOP_GOT_OP : 0);
}

int top_sample(struct top *t, char *msg, size_t size)
{
	uint64_t seen = t->samples;
	int r = top_request_sample(t);

	while (r >= 0 && t->samples == seen) {
		struct pollfd pfd[2] = {{.fd = t->ctl.fd, .events = POLLIN},
					{.fd = t->sub.fd, .events = POLLIN}};

		/* The events go on meanwhile: read them so the daemon drops none. */
		if (poll(pfd, 2, 100) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (pfd[1].revents && (r = top_read_events(t, SIZE_MAX)) < 0)
			break;
		r = top_read_replies(t);
	}
	if (r < 0) {
		snprintf(msg, size, "the daemon on %s: %s", t->socket, t->why);
		return r;
	}
	if (t->sample_err) {
		snprintf(msg, size, "the daemon on %s: %s", t->socket, t->sample_msg);
		return t->sample_err;
	}
	return 0;
}

static void on_ping(struct top *t, struct json_object *reply)
{
	const char *str;
	int64_t pid;

	if (json_member_int(reply, "pid", &pid) && pid > 0) {
		t->daemon_pid = pid;
		t->daemon_start = process_start(pid);
	}
	if ((str = json_member_str(reply, "cgroup_parent")))
		snprintf(t->cgroup_parent, sizeof(t->cgroup_parent), "%s", str);
	t->bpf_audit = json_member_true(reply, "bpf_audit");
	t->bpf_network = json_member_true(reply, "bpf_network");
	t->bpf_unix = json_member_true(reply, "bpf_unix_connect");
}

void top_disconnect(struct top *t)
{
	daemon_client_close(&t->ctl);
	daemon_client_close(&t->sub);
	buf_free(&t->ctl_in);
	buf_free(&t->sub_in);
	t->pend_head = t->pend_n = 0;
	t->connected = false;
}

/* A call on c, waiting for its reply; msg says what failed. */
static int call(struct daemon_client *c, const char *op, char *msg, size_t size,
		struct json_object **reply)
{
	struct json_object *req = daemon_request(op, NULL);
	int r = daemon_client_call(c, req, reply, msg, size);

	json_object_put(req);
	return r;
}

int top_connect(struct top *t, char *msg, size_t size)
{
	struct json_object *reply = NULL;
	const char *pending;
	char why[512];
	size_t n;
	int r;

	top_disconnect(t);
	r = daemon_client_connect(&t->ctl, t->socket, TOP_REPLY_TIMEOUT_MS);
	if (!r)
		r = daemon_client_connect(&t->sub, t->socket, TOP_REPLY_TIMEOUT_MS);
	if (r < 0) {
		snprintf(t->why, sizeof(t->why), "no daemon answers (%s)", strerror(-r));
		snprintf(msg, size, "no daemon answers on %s (%s)", t->socket, strerror(-r));
		top_disconnect(t);
		return r;
	}
	r = call(&t->ctl, "ping", why, sizeof(why), &reply);
	if (!r) {
		on_ping(t, reply);
		json_object_put(reply);
		r = call(&t->sub, "subscribe", why, sizeof(why), &reply);
		json_object_put(reply);
	}
	if (r < 0) {
		snprintf(t->why, sizeof(t->why), "%s", why);
		snprintf(msg, size, "the daemon on %s: %s", t->socket, why);
		top_disconnect(t);
		return r;
	}
	t->connected = true;
	/* What came after the replies is ours to split into lines. */
	n = daemon_client_pending(&t->ctl, &pending);
	if (n && buf_append(&t->ctl_in, pending, n) < 0)
		r = -ENOMEM;
	n = daemon_client_pending(&t->sub, &pending);
	if (!r && n && buf_append(&t->sub_in, pending, n) < 0)
		r = -ENOMEM;
	if (r < 0) {
		snprintf(msg, size, "out of memory");
		top_disconnect(t);
		return r;
	}
	t->why[0] = '\0';
	return top_sample(t, msg, size);
}
