// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon client's connection: finding and trusting the socket,
 * connecting with a deadline, and one JSON request a line with its
 * reply. The typed requests are in client_ops.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>

#include "client.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../sandbox/session.h"
#include "../lib/fdpass.h"
#include "../lib/json.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../net/egress.h"

#define CALL_TIMEOUT_MS DAEMON_CALL_TIMEOUT_MS

const char *daemon_socket_path(const char *override)
{
	const char *env = getenv("BPFBOX_SOCKET");

	if (override)
		return override;
	return env && env[0] ? env : DAEMON_SOCKET_DEFAULT;
}

int daemon_client_connect(struct daemon_client *c, const char *path, int timeout_ms)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->attach_fd = -1;
	c->timeout_ms = timeout_ms;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path));
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	/* A daemon whose backlog is full counts as not answering. */
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		daemon_client_close(c);
		return r;
	}
	r = daemon_peer_trusted(c->fd, path);
	if (r < 0)
		daemon_client_close(c);
	return r;
}

/*
 * Nothing is sent to a socket that is not the daemon's: the file must be a
 * socket owned by root, and the process that listens on it must run as
 * root (SO_PEERCRED, taken by the kernel at listen time). Anyone can bind a
 * socket at a path they can write, and a fake daemon would get the whole
 * register request and let the session run with no limits and no BPF.
 */
int daemon_peer_trusted(int fd, const char *path)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0) {
		log_error("%s is not a socket owned by root (%s); it is not bpfbox's daemon, "
			  "nothing was sent to it",
			  path,
			  lstat(path, &st) < 0	  ? strerror(errno)
			  : !S_ISSOCK(st.st_mode) ? "not a socket"
						  : "owned by another user");
		return -EKEYREJECTED;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.uid != 0) {
		log_error("the process listening on %s runs as uid %d, not root; it is not "
			  "bpfbox's daemon, nothing was sent to it",
			  path, (int)uc.uid);
		return -EKEYREJECTED;
	}
	return 0;
}

void daemon_client_close(struct daemon_client *c)
{
	fd_close(&c->fd);
	free(c->in);
	c->in = NULL;
	c->in_len = c->cap = c->taken = 0;
}

size_t daemon_client_pending(const struct daemon_client *c, const char **data)
{
	*data = c->in + c->taken;
	return c->in_len - c->taken;
}

static int grow(struct daemon_client *c)
{
	size_t cap = c->cap ? c->cap * 2 : 4096;
	char *p;

	if (c->cap >= DAEMON_MAX_REPLY)
		return -EPROTO;
	if (cap > DAEMON_MAX_REPLY)
		cap = DAEMON_MAX_REPLY;
	p = realloc(c->in, cap);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->cap = cap;
	return 0;
}

int daemon_client_read_line(struct daemon_client *c, char **line, size_t *len, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	size_t scanned = 0;

	if (c->taken) {
		memmove(c->in, c->in + c->taken, c->in_len - c->taken);
		c->in_len -= c->taken;
		c->taken = 0;
	}
	for (;;) {
		char *nl = c->in_len ? memchr(c->in + scanned, '\n', c->in_len - scanned) : NULL;
		struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
		uint64_t now;
		ssize_t n;
		int r;

		if (nl) {
			*nl = '\0';
			*line = c->in;
			*len = nl - c->in;
			c->taken = *len + 1;
			return 1;
		}
		scanned = c->in_len;
		if (c->in_len == c->cap && (r = grow(c)) < 0)
			return r;
		now = now_ns();
		if (now >= deadline)
			return -EAGAIN;
		n = poll(&pfd, 1, (deadline - now) / 1000000ULL + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EAGAIN;
		n = recv(c->fd, c->in + c->in_len, c->cap - c->in_len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return errno == ECONNRESET ? 0 : -errno;
		if (n == 0)
			return 0;
		c->in_len += n;
	}
}

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * The request and its newline in one message: the daemon wakes once per
 * request, not once for the text and again for the newline. attach >= 0:
 * an fd sent with it.
 */
static int send_line(int fd, const char *text, size_t len, int attach)
{
	struct iovec iov[2] = {{.iov_base = (void *)text, .iov_len = len},
			       {.iov_base = "\n", .iov_len = 1}};
	ssize_t n;

	do
		n = send_with_fds(fd, iov, 2, &attach, attach >= 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n > len)
		return 0;
	/* Short (a request larger than the socket's buffer): the rest in order. */
	if ((n = send_all(fd, text + n, len - n)) < 0)
		return n;
	return send_all(fd, "\n", 1);
}

int daemon_client_send(struct daemon_client *c, struct json_object *req)
{
	const char *text = json_object_to_json_string_ext(
		req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	c->replied = false;
	c->send_err = c->fd < 0 ? -ENOTCONN : send_line(c->fd, text, strlen(text), c->attach_fd);
	c->attach_fd = -1; /* the caller's still: once */
	return c->send_err;
}

int daemon_client_reply(struct daemon_client *c, struct json_object **reply, char *msg,
			size_t msg_size)
{
	struct json_object *o, *v;
	char *line;
	size_t len;
	int r = c->send_err;

	*reply = NULL;
	msg[0] = '\0';
	if (r == -ENOTCONN) {
		snprintf(msg, msg_size, "not connected");
		return r;
	}
	if (r < 0) {
		/* A daemon that said "busy" and closed: its reason may be waiting. */
		int rr = daemon_client_read_line(c, &line, &len, 100);

		if (rr <= 0) {
			snprintf(msg, msg_size, "cannot send the request: %s", strerror(-r));
			return r;
		}
		r = rr;
	} else {
		r = daemon_client_read_line(c, &line, &len,
					    c->timeout_ms > 0 ? c->timeout_ms : CALL_TIMEOUT_MS);
	}
	if (r <= 0) {
		snprintf(msg, msg_size, "%s",
			 r == 0		? "the daemon closed the connection"
			 : r == -EAGAIN ? "no reply in time"
					: strerror(-r));
		return r == 0 ? -ECONNRESET : r == -EAGAIN ? -ETIMEDOUT : r;
	}
	o = json_tokener_parse(line);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "ok", &v)) {
		json_object_put(o);
		snprintf(msg, msg_size, "the daemon's reply is not valid");
		return -EPROTO;
	}
	c->replied = true;
	if (json_object_get_boolean(v)) {
		*reply = o;
		return 0;
	}
	snprintf(msg, msg_size, "%s",
		 json_object_object_get_ex(o, "error", &v) ? json_object_get_string(v) : "?");
	r = json_object_object_get_ex(o, "code", &v)
		    ? -proto_errno_from_name(json_object_get_string(v))
		    : -EIO;
	if (json_member_true(o, "ended"))
		r = -DAEMON_ENDED;
	json_object_put(o);
	return r;
}

int daemon_client_call(struct daemon_client *c, struct json_object *req, struct json_object **reply,
		       char *msg, size_t msg_size)
{
	daemon_client_send(c, req);
	return daemon_client_reply(c, reply, msg, msg_size);
}
