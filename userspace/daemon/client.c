// SPDX-License-Identifier: GPL-2.0
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
 * request, not once for the text and again for the newline.
 */
static int send_line(int fd, const char *text, size_t len)
{
	struct iovec iov[2] = {{.iov_base = (void *)text, .iov_len = len},
			       {.iov_base = "\n", .iov_len = 1}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n;

	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
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
	c->send_err = c->fd < 0 ? -ENOTCONN : send_line(c->fd, text, strlen(text));
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

struct json_object *daemon_request(const char *op, const char *id)
{
	struct json_object *req = json_object_new_object();

	json_object_object_add(req, "op", json_object_new_string(op));
	if (id)
		json_object_object_add(req, "session", json_object_new_string(id));
	return req;
}

/* Sends req (put here) and hands the ok reply to *reply, or puts it. */
static int call_put(struct daemon_client *c, struct json_object *req, struct json_object **reply,
		    char *msg, size_t size)
{
	struct json_object *o = NULL;
	int r = daemon_client_call(c, req, &o, msg, size);

	json_object_put(req);
	if (reply)
		*reply = o;
	else
		json_object_put(o);
	return r;
}

int daemon_list(struct daemon_client *c, struct json_object **sessions, char *msg, size_t size)
{
	struct json_object *all = json_object_new_array(), *reply, *list, *next;
	int64_t offset = 0;
	int r;

	*sessions = NULL;
	if (!all)
		return -ENOMEM;
	/* The daemon answers in pages of about 1 MiB: ask until none is left. */
	for (;;) {
		struct json_object *req = daemon_request("list", NULL);

		json_object_object_add(req, "offset", json_object_new_int64(offset));
		r = call_put(c, req, &reply, msg, size);
		if (r < 0)
			break;
		if (!json_object_object_get_ex(reply, "sessions", &list) ||
		    !json_object_is_type(list, json_type_array)) {
			snprintf(msg, size, "the daemon sent no session list");
			json_object_put(reply);
			r = -EPROTO;
			break;
		}
		for (size_t i = 0; i < json_object_array_length(list); i++)
			json_object_array_add(all,
					      json_object_get(json_object_array_get_idx(list, i)));
		if (!json_object_object_get_ex(reply, "next_offset", &next) ||
		    json_object_get_int64(next) <= offset) {
			json_object_put(reply);
			break;
		}
		offset = json_object_get_int64(next);
		json_object_put(reply);
	}
	if (r < 0) {
		json_object_put(all);
		return r;
	}
	*sessions = all;
	return 0;
}

int daemon_subscribe(struct daemon_client *c, const char *id, struct json_object *types, char *msg,
		     size_t size)
{
	struct json_object *req = daemon_request("subscribe", id);

	if (types && json_object_array_length(types))
		json_object_object_add(req, "types", json_object_get(types));
	return call_put(c, req, NULL, msg, size);
}

int daemon_pause(struct daemon_client *c, const char *id, const char *reason, int64_t oom_kills,
		 int64_t disk_used_mb, pid_t *pid, char *comm, size_t comm_size, char *msg,
		 size_t size)
{
	struct json_object *req = daemon_request("pause", id), *reply, *v;
	int r;

	json_object_object_add(req, "reason", json_object_new_string(reason));
	json_object_object_add(req, "oom_kills", json_object_new_int64(oom_kills));
	json_object_object_add(req, "disk_used_mb", json_object_new_int64(disk_used_mb));
	r = call_put(c, req, &reply, msg, size);
	if (pid)
		*pid = 0;
	if (comm && comm_size)
		comm[0] = '\0';
	if (r < 0)
		return r;
	if (pid && json_object_object_get_ex(reply, "pid", &v) &&
	    json_object_is_type(v, json_type_int))
		*pid = json_object_get_int(v);
	if (comm && json_object_object_get_ex(reply, "comm", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(comm, comm_size, "%s", json_object_get_string(v));
	json_object_put(reply);
	return 0;
}

int daemon_resume(struct daemon_client *c, const char *id, int64_t memory_mb, int64_t disk_mb,
		  int64_t *memory_out, int64_t *disk_out, char *msg, size_t size)
{
	struct json_object *req = daemon_request("resume", id), *reply, *v;
	int r;

	if (memory_mb)
		json_object_object_add(req, "memory_mb", json_object_new_int64(memory_mb));
	if (disk_mb)
		json_object_object_add(req, "disk_mb", json_object_new_int64(disk_mb));
	r = call_put(c, req, &reply, msg, size);
	if (r < 0)
		return r;
	if (memory_out && json_object_object_get_ex(reply, "memory_mb", &v))
		*memory_out = json_object_get_int64(v);
	if (disk_out && json_object_object_get_ex(reply, "disk_mb", &v))
		*disk_out = json_object_get_int64(v);
	json_object_put(reply);
	return 0;
}

int daemon_kill(struct daemon_client *c, const char *id, char *msg, size_t size)
{
	return call_put(c, daemon_request("kill", id), NULL, msg, size);
}

int daemon_answer(struct daemon_client *c, const char *id, uint64_t ask_id, const char *answer,
		  char *msg, size_t size)
{
	struct json_object *req = daemon_request("answer", id);

	json_object_object_add(req, "id", json_object_new_int64((int64_t)ask_id));
	json_object_object_add(req, "answer", json_object_new_string(answer));
	return call_put(c, req, NULL, msg, size);
}

int daemon_ping(struct daemon_client *c, struct json_object **reply, char *msg, size_t size)
{
	return call_put(c, daemon_request("ping", NULL), reply, msg, size);
}

int daemon_call_reload(struct daemon_client *c, int *sinks, int *rules, char *msg, size_t size)
{
	struct json_object *reply, *v;
	int r = call_put(c, daemon_request("reload", NULL), &reply, msg, size);

	*sinks = *rules = 0;
	if (r < 0)
		return r;
	if (json_object_object_get_ex(reply, "sinks", &v))
		*sinks = json_object_get_int(v);
	if (json_object_object_get_ex(reply, "ceiling_rules", &v))
		*rules = json_object_get_int(v);
	json_object_put(reply);
	return 0;
}

/* A call whose reply is not needed beyond ok or not. */
static int call_simple(struct daemon_client *c, struct json_object *req, char *msg, size_t msg_size)
{
	struct json_object *reply;
	int r = daemon_client_call(c, req, &reply, msg, msg_size);

	json_object_put(reply);
	json_object_put(req);
	return r;
}

static void add_str(struct json_object *o, const char *key, const char *value)
{
	json_object_object_add(o, key, json_object_new_string(value));
}

static struct json_object *str_array(const char *const *v, size_t n)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

/* --label KEY=VALUE pairs as an object. */
static struct json_object *labels_object(const struct strv *labels)
{
	struct json_object *o = json_object_new_object();

	for (size_t i = 0; labels && i < labels->n; i++) {
		const char *lb = labels->v[i], *eq = strchr(lb, '=');
		char key[128];

		if (!eq || (size_t)(eq - lb) >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - lb), lb);
		json_object_object_add(o, key, json_object_new_string(eq + 1));
	}
	return o;
}

/* The network part: the allow-list's addresses, its names, the holes. */
static void add_net(struct json_object *req, const struct bpfbox_policy *p)
{
	add_str(req, "net", p->net == NET_DENY ? "deny" : "allow");
	if (p->net_allow.n) {
		struct json_object *rules = json_object_new_array();

		for (size_t i = 0; i < p->net_allow.n; i++) {
			struct json_object *rule, *ports;
			char cidr[64];
			uint16_t lo, hi;

			/* The policy validated every rule already; names are the proxy's. */
			if (net_rule_parse(p->net_allow.v[i], cidr, sizeof(cidr), &lo, &hi) < 0)
				continue;
			rule = json_object_new_object();
			ports = json_object_new_array();
			add_str(rule, "cidr", cidr);
			json_object_array_add(ports, json_object_new_int(lo));
			json_object_array_add(ports, json_object_new_int(hi));
			json_object_object_add(rule, "ports", ports);
			json_object_array_add(rules, rule);
		}
		json_object_object_add(req, "net_allow", rules);
	}
	/* Egress by name: the daemon runs the session's proxy and resolver. */
	if (p->net == NET_DENY && egress_has_names(&p->net_allow)) {
		struct json_object *hosts = json_object_new_array();

		for (size_t i = 0; i < p->net_allow.n; i++) {
			char host[256];
			uint16_t lo, hi;

			if (net_name_rule_parse(p->net_allow.v[i], host, sizeof(host), &lo, &hi) ==
			    0)
				json_object_array_add(hosts,
						      json_object_new_string(p->net_allow.v[i]));
		}
		json_object_object_add(req, "net_hosts", hosts);
		if (p->net_resolver)
			add_str(req, "net_resolver", p->net_resolver);
	}
	if (p->net_deny.n)
		json_object_object_add(req, "net_deny",
				       str_array((const char *const *)p->net_deny.v,
						 p->net_deny.n));
}

/* The layers the client planned, and the directories the BPF maps get. */
static void add_layers(struct json_object *req, const struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	const struct session_layers *l = &s->layers;
	size_t max = p->rw_paths.n + 2, n;
	const char **dirs = calloc(max, sizeof(*dirs));
	char what[768];

	json_object_object_add(req, "landlock",
			       json_object_new_boolean(l->landlock && p->mode != MODE_FULL_ACCESS));
	json_object_object_add(req, "mount_ro",
			       json_object_new_boolean((l->ns.clone_flags & CLONE_NEWNS) &&
						       p->mode != MODE_FULL_ACCESS));
	/* The same sets as an embedded run writes (session_writable_dirs). */
	n = dirs ? session_writable_dirs(s, true, dirs, max) : 0;
	json_object_object_add(req, "unix_dirs", str_array(dirs, n));
	n = dirs ? session_writable_dirs(s, false, dirs, max) : 0;
	json_object_object_add(req, "writable", str_array(dirs, n));
	free(dirs);
	add_str(req, "level_requested", level_name(l->requested));
	add_str(req, "level_enabled", level_name(l->enabled));
	json_object_object_add(req, "landlock_abi",
			       json_object_new_int(l->landlock ? l->landlock_abi : 0));
	json_object_object_add(req, "seccomp", json_object_new_boolean(l->seccomp));
	if (l->not_enforced[0]) {
		const char *ne = l->not_enforced;

		json_object_object_add(req, "not_enforced", str_array(&ne, 1));
	}
	/* What only a BPF LSM enforces: not_enforced when the daemon has none. */
	if (session_lsm_only_rules(s, what, sizeof(what))) {
		const char *w = what;

		json_object_object_add(req, "lsm_only", str_array(&w, 1));
	}
}

int daemon_register(struct daemon_client *c, const struct session *s, const char *audit_mode,
		    bool asks, char *const argv[], pid_t pid, struct json_object **reply, char *msg,
		    size_t size)
{
	struct json_object *req = daemon_request("register", s->id);
	size_t argc = 0;

	while (argv[argc])
		argc++;
	json_object_object_add(req, "command", str_array((const char *const *)argv, argc));
	if (s->labels && s->labels->n)
		json_object_object_add(req, "labels", labels_object(s->labels));
	add_net(req, s->policy);
	add_str(req, "audit_mode", audit_mode);
	add_layers(req, s);
	json_object_object_add(req, "policy", policy_to_json(s->policy));
	if (asks)
		json_object_object_add(req, "asks", json_object_new_boolean(true));
	/* Register and attach in one round trip (docs/daemon.md). */
	if (pid > 0)
		json_object_object_add(req, "pid", json_object_new_int64(pid));
	/* Before the fork: a cgroup the daemon made ahead, whose name the session takes. */
	else
		json_object_object_add(req, "prepared", json_object_new_boolean(1));
	return call_put(c, req, reply, msg, size);
}

int daemon_attach(struct daemon_client *c, const char *id, pid_t pid, char *msg, size_t size)
{
	struct json_object *req = daemon_request("attach", id);

	json_object_object_add(req, "pid", json_object_new_int64(pid));
	return call_simple(c, req, msg, size);
}

int daemon_unregister_send(struct daemon_client *c, const char *id,
			   const struct session_result *res)
{
	struct json_object *req = daemon_request("unregister", id);
	int r;

	if (res) {
		json_object_object_add(req, "exit_code", json_object_new_int(res->exit_code));
		json_object_object_add(req, "timed_out", json_object_new_boolean(res->timed_out));
		json_object_object_add(req, "output_bytes",
				       json_object_new_int64(res->output_bytes));
		json_object_object_add(req, "output_dropped",
				       json_object_new_int64(res->output_dropped));
	}
	r = daemon_client_send(c, req);
	json_object_put(req);
	return r;
}

int daemon_unregister(struct daemon_client *c, const char *id, const struct session_result *res,
		      struct json_object **reply, char *msg, size_t size)
{
	daemon_unregister_send(c, id, res);
	return daemon_client_reply(c, reply, msg, size);
}

int daemon_no_daemon_allowed(const char *socket, char *why, size_t size)
{
	const char *path = daemon_socket_path(socket);
	struct json_object *reply = NULL, *v;
	struct daemon_client c;
	char msg[512];
	int r;

	if (daemon_client_connect(&c, path, CALL_TIMEOUT_MS) < 0)
		return 0; /* no daemon here: nothing to bypass */
	r = daemon_ping(&c, &reply, msg, sizeof(msg));
	daemon_client_close(&c);
	if (r == 0 && json_object_object_get_ex(reply, "no_daemon", &v) &&
	    !json_object_get_boolean(v)) {
		snprintf(why, size,
			 "the daemon on %s does not allow --no-daemon for this user "
			 "(ceiling %s); run through it, or ask the operator",
			 path,
			 json_object_object_get_ex(reply, "ceiling", &v) &&
					 json_object_get_string(v)
				 ? json_object_get_string(v)
				 : "(none matches)");
		json_object_put(reply);
		return -EPERM;
	}
	json_object_put(reply);
	return 0;
}
