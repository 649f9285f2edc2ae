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
#include "../agent/embedded.h"
#include "../policy/policy.h"
#include "../sandbox/session.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../net/egress.h"

#define CALL_TIMEOUT_MS	  5000
#define DRAIN_TIMEOUT_MS  5000

const char *daemon_socket_path(const char *override)
{
	const char *env = getenv("BPFBOX_SOCKET");

	if (override)
		return override;
	return env && env[0] ? env : DAEMON_SOCKET_DEFAULT;
}

int daemon_client_connect(struct daemon_client *c, const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
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
			  "nothing was sent to it", path,
			  lstat(path, &st) < 0 ? strerror(errno)
			  : !S_ISSOCK(st.st_mode) ? "not a socket" : "owned by another user");
		return -EKEYREJECTED;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.uid != 0) {
		log_error("the process listening on %s runs as uid %d, not root; it is not "
			  "bpfbox's daemon, nothing was sent to it", path, (int)uc.uid);
		return -EKEYREJECTED;
	}
	return 0;
}

void daemon_client_close(struct daemon_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
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
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
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

int daemon_client_call(struct daemon_client *c, struct json_object *req,
		       struct json_object **reply, char *msg, size_t msg_size)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN |
								   JSON_C_TO_STRING_NOSLASHESCAPE);
	struct json_object *o, *v;
	char *line;
	size_t len;
	int r;

	*reply = NULL;
	c->replied = false;
	msg[0] = '\0';
	if (c->fd < 0) {
		snprintf(msg, msg_size, "not connected");
		return -ENOTCONN;
	}
	r = send_all(c->fd, text, strlen(text));
	if (!r)
		r = send_all(c->fd, "\n", 1);
	if (r < 0) {
		/* A daemon that said "busy" and closed: its reason may be waiting. */
		int rr = daemon_client_read_line(c, &line, &len, 100);

		if (rr <= 0) {
			snprintf(msg, msg_size, "cannot send the request: %s", strerror(-r));
			return r;
		}
		r = rr;
	} else {
		r = daemon_client_read_line(c, &line, &len, c->timeout_ms > 0 ? c->timeout_ms
									   : CALL_TIMEOUT_MS);
	}
	if (r <= 0) {
		snprintf(msg, msg_size, "%s", r == 0 ? "the daemon closed the connection"
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
	if (json_object_object_get_ex(o, "ended", &v) && json_object_get_boolean(v))
		r = -DAEMON_ENDED;
	json_object_put(o);
	return r;
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
			json_object_array_add(all, json_object_get(json_object_array_get_idx(list, i)));
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

int daemon_subscribe(struct daemon_client *c, const char *id, struct json_object *types,
		     char *msg, size_t size)
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
static int call_simple(struct daemon_client *c, struct json_object *req, char *msg,
		       size_t msg_size)
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

static bool unix_dir_fits(const char *dir)
{
	size_t len = strlen(dir);

	return dir[0] == '/' && len < BPFBOX_UNIX_PATH_LEN - 2;
}

static struct json_object *register_request(struct session *s, const struct audit_opts *audit,
					    char *const argv[])
{
	const struct bpfbox_policy *p = s->policy;
	const struct session_layers *l = &s->layers;
	struct json_object *req = json_object_new_object();
	const char *dirs[BPFBOX_UNIX_PREFIXES];
	size_t argc = 0, n = 0;

	add_str(req, "op", "register");
	add_str(req, "session", s->id);
	while (argv[argc])
		argc++;
	json_object_object_add(req, "command", str_array((const char *const *)argv, argc));
	if (s->labels && s->labels->n) {
		struct json_object *labels = json_object_new_object();

		for (size_t i = 0; i < s->labels->n; i++) {
			const char *lb = s->labels->v[i], *eq = strchr(lb, '=');
			char key[128];

			if (!eq || (size_t)(eq - lb) >= sizeof(key))
				continue;
			snprintf(key, sizeof(key), "%.*s", (int)(eq - lb), lb);
			json_object_object_add(labels, key, json_object_new_string(eq + 1));
		}
		json_object_object_add(req, "labels", labels);
	}
	add_str(req, "net", p->net == NET_DENY ? "deny" : "allow");
	json_object_object_add(req, "landlock",
			       json_object_new_boolean(l->landlock && p->mode != MODE_FULL_ACCESS));
	json_object_object_add(req, "mount_ro",
			       json_object_new_boolean((l->ns.clone_flags & CLONE_NEWNS) &&
						       p->mode != MODE_FULL_ACCESS));
	add_str(req, "audit_mode", audit->off ? "off" : audit->all ? "all" : "aggregate");
	/*
	 * Unix sockets may be reached under the dirs the session can write; a
	 * longer directory cannot hold a socket path anyway (as in embedded mode).
	 */
	if (p->mode != MODE_READ_ONLY && unix_dir_fits(p->workspace))
		dirs[n++] = p->workspace;
	if (s->private_tmp[0] && unix_dir_fits(s->private_tmp))
		dirs[n++] = s->private_tmp;
	/* With namespaces /tmp is the session's own tmpfs; the host's is not in its view. */
	else if (p->private_tmp && s->layers.ns.clone_flags)
		dirs[n++] = "/tmp";
	for (size_t i = 0; i < p->rw_paths.n && n < BPFBOX_UNIX_PREFIXES; i++)
		if (unix_dir_fits(p->rw_paths.v[i]))
			dirs[n++] = p->rw_paths.v[i];
	json_object_object_add(req, "unix_dirs", str_array(dirs, n));
	/* The whole writable set, for the BPF LSM's checks by inode. */
	{
		struct json_object *wr = json_object_new_array();

		if (p->mode != MODE_READ_ONLY)
			json_object_array_add(wr, json_object_new_string(p->workspace));
		if (s->private_tmp[0])
			json_object_array_add(wr, json_object_new_string(s->private_tmp));
		for (size_t i = 0; i < p->rw_paths.n; i++)
			json_object_array_add(wr, json_object_new_string(p->rw_paths.v[i]));
		json_object_object_add(req, "writable", wr);
	}
	if (p->net_allow.n) {
		struct json_object *rules = json_object_new_array();

		for (size_t i = 0; i < p->net_allow.n; i++) {
			struct json_object *rule = json_object_new_object();
			struct json_object *ports = json_object_new_array();
			char cidr[64];
			uint16_t lo, hi;

			/* The policy validated every rule already. */
			if (net_rule_parse(p->net_allow.v[i], cidr, sizeof(cidr), &lo, &hi) < 0)
				continue;
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

			if (net_name_rule_parse(p->net_allow.v[i], host, sizeof(host), &lo, &hi) == 0)
				json_object_array_add(hosts,
						      json_object_new_string(p->net_allow.v[i]));
		}
		json_object_object_add(req, "net_hosts", hosts);
		if (p->net_resolver)
			add_str(req, "net_resolver", p->net_resolver);
	}
	if (p->net_deny.n)
		json_object_object_add(req, "net_deny", str_array((const char *const *)p->net_deny.v,
								  p->net_deny.n));
	add_str(req, "level_requested", level_name(l->requested));
	add_str(req, "level_enabled", level_name(l->enabled));
	json_object_object_add(req, "landlock_abi",
			       json_object_new_int(l->landlock ? l->landlock_abi : 0));
	json_object_object_add(req, "seccomp", json_object_new_boolean(l->seccomp));
	if (l->not_enforced[0]) {
		const char *ne = l->not_enforced;

		json_object_object_add(req, "not_enforced", str_array(&ne, 1));
	}
	json_object_object_add(req, "policy", policy_to_json(p));
	return req;
}

static int attach_child(void *ctx, pid_t child)
{
	struct daemon_run *r = ctx;
	struct json_object *req = daemon_request("attach", r->session_id);
	char msg[512];
	int rc;

	json_object_object_add(req, "pid", json_object_new_int64(child));
	rc = call_simple(&r->ctl, req, msg, sizeof(msg));
	if (rc < 0)
		return log_error_errno(rc, "the daemon at %s could not move the command into its "
					   "session cgroup: %s", r->socket, msg);
	return 0;
}

static void write_audit(struct daemon_run *r, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(r->audit_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the file says what it lacks; the session goes on */
		p += n;
		len -= n;
	}
}

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

/* Copies the session's events as they come; polled with the command's output. */
static void on_sub_poll(void *ctx)
{
	struct daemon_run *r = ctx;
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
		write_audit(r, buf, n);
	}
}

static int open_audit(struct daemon_run *r, const struct audit_opts *audit)
{
	if (streq(audit->path, "-"))
		r->audit_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	else
		r->audit_fd = open(audit->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (r->audit_fd < 0)
		return log_error_errno(errno, "cannot open the audit file %s", audit->path);
	return 0;
}

static int subscribe(struct daemon_run *r)
{
	struct json_object *req = daemon_request("subscribe", r->session_id);
	const char *pending;
	char msg[512];
	size_t n;
	int rc;

	if (pipe2(r->never_fd, O_CLOEXEC) < 0)
		return log_error_errno(errno, "cannot create a pipe");
	rc = daemon_client_connect(&r->sub, r->socket, CALL_TIMEOUT_MS);
	if (rc < 0) {
		json_object_put(req);
		return log_error_errno(rc, "cannot connect to the daemon at %s for the audit stream",
				       r->socket);
	}
	rc = call_simple(&r->sub, req, msg, sizeof(msg));
	if (rc < 0)
		return log_error_errno(rc, "the daemon refused the audit stream: %s", msg);
	/* What came with the reply (the replayed session.start) goes first. */
	n = daemon_client_pending(&r->sub, &pending);
	write_audit(r, pending, n);
	r->sub.in_len = r->sub.taken = 0;
	return 0;
}

static int unregister(struct daemon_run *r, struct daemon_client *c, struct session *s,
		      char *msg, size_t size);

int daemon_run_begin(struct daemon_run *r, struct session *s, const char *socket,
		     const struct audit_opts *audit, char *const argv[])
{
	struct json_object *req, *reply = NULL;
	const char *path = daemon_socket_path(socket);
	const char *req_env = getenv("BPFBOX_REQUIRE_DAEMON");
	/* --daemon-socket, or BPFBOX_REQUIRE_DAEMON=1: no run without the daemon. */
	bool named = socket || (req_env && streq(req_env, "1"));
	char msg[512];
	int rc;

	memset(r, 0, sizeof(*r));
	r->ctl.fd = r->sub.fd = r->audit_fd = -1;
	r->never_fd[0] = r->never_fd[1] = -1;
	r->session_id = s->id;
	snprintf(r->socket, sizeof(r->socket), "%s", path);
	rc = daemon_client_connect(&r->ctl, path, CALL_TIMEOUT_MS);
	if (rc == -EKEYREJECTED)
		return rc; /* not the daemon: said, and never a reason to run without it */
	if (rc < 0) {
		/* No daemon here: embedded mode, unless one was asked for by name. */
		if (named)
			return log_error_errno(rc, "no daemon answers on %s%s; nothing ran (%s)", path,
					       socket ? "" : " and BPFBOX_REQUIRE_DAEMON=1 requires one",
					       "pass --no-daemon for embedded mode");
		/* No socket at all: no daemon on this host, the laptop case. */
		if (rc != -ENOENT)
			log_notice("the daemon at %s does not answer (%s); running without it "
				   "(embedded mode)", path, strerror(-rc));
		return 0;
	}
	req = register_request(s, audit, argv);
	rc = daemon_client_call(&r->ctl, req, &reply, msg, sizeof(msg));
	json_object_put(req);
	if (rc == 0) {
		/* The daemon's BPF LSM raises what the client planned (Full). */
		struct json_object *v;
		enum bpfbox_level lvl;

		if (json_object_object_get_ex(reply, "level_enabled", &v) &&
		    json_object_is_type(v, json_type_string) &&
		    level_parse(json_object_get_string(v), &lvl) == 0 && lvl <= s->layers.requested)
			s->layers.enabled = lvl;
		/* Its exec program holds the command rules (docs/config.md). */
		if (json_object_object_get_ex(reply, "layers", &v) &&
		    json_object_object_get_ex(v, "cmd_rules", &v) && json_object_get_boolean(v))
			s->exec_rules = true;
		/* Its BPF LSM scopes abstract unix sockets and signals (docs/lsm.md). */
		if (json_object_object_get_ex(reply, "layers", &v) &&
		    json_object_object_get_ex(v, "bpf_lsm", &v) && json_object_get_boolean(v))
			agent_gaps_filled(s->layers.not_enforced, BPFBOX_SF_GAP_SCOPE);
	}
	if (rc >= 0 && s->policy->net == NET_DENY && egress_has_names(&s->policy->net_allow)) {
		struct json_object *port;

		/* A daemon without egress would leave every name unreachable: say so. */
		if (!json_object_object_get_ex(reply, "proxy_port", &port)) {
			json_object_put(reply);
			unregister(r, &r->ctl, NULL, msg, sizeof(msg));
			daemon_client_close(&r->ctl);
			return log_error_errno(-EOPNOTSUPP, "the daemon at %s runs no egress proxy "
					       "for name rules (an older bpfbox?)", path);
		}
		snprintf(s->proxy_url, sizeof(s->proxy_url), "http://127.0.0.1:%d",
			 json_object_get_int(port));
	}
	json_object_put(reply);
	if (rc < 0) {
		bool refused = r->ctl.replied && (rc == -EACCES || rc == -EPERM);
		bool busy = r->ctl.replied && rc == -EBUSY;

		daemon_client_close(&r->ctl);
		/*
		 * Above the operator's ceiling or the uid's session quota: nothing
		 * runs, not even without the daemon.
		 */
		if (r->ctl.replied && rc == -EDQUOT)
			return log_error_errno(rc, "the daemon at %s refused the session: %s", path,
					       msg);
		if (named || (r->ctl.replied && !refused && !busy))
			return log_error_errno(rc, "the daemon at %s did not take the session: %s",
					       path, msg);
		/* Never silent, not even with -q: the session runs without the daemon. */
		log_notice("the daemon at %s %s (%s); running without it (embedded mode)", path,
			   busy ? "is busy" : refused ? "refuses this client" : "does not answer",
			   msg);
		return 0;
	}
	if (audit->path && ((rc = open_audit(r, audit)) < 0 || (rc = subscribe(r)) < 0)) {
		daemon_run_finish(r, NULL);
		return rc;
	}
	s->hooks.before_release = attach_child;
	s->hooks.ctx = r;
	if (r->sub.fd >= 0) {
		s->hooks.poll_fd = r->sub.fd;
		s->hooks.on_poll = on_sub_poll;
	}
	return 1;
}

static int unregister(struct daemon_run *r, struct daemon_client *c, struct session *s,
		      char *msg, size_t size)
{
	struct json_object *req = daemon_request("unregister", r->session_id);

	if (s) {
		json_object_object_add(req, "exit_code", json_object_new_int(s->result.exit_code));
		json_object_object_add(req, "timed_out", json_object_new_boolean(s->result.timed_out));
		json_object_object_add(req, "output_bytes",
				       json_object_new_int64(s->result.output_bytes));
		json_object_object_add(req, "output_dropped",
				       json_object_new_int64(s->result.output_dropped));
	}
	return call_simple(c, req, msg, size);
}

/* After the end, the subscription carries the last records and session.end. */
static void drain_sub(struct daemon_run *r)
{
	uint64_t deadline = now_ns() + DRAIN_TIMEOUT_MS * 1000000ULL;

	while (!r->sub_gone) {
		struct pollfd pfd = { .fd = r->sub.fd, .events = POLLIN };
		uint64_t now = now_ns();

		if (now >= deadline || poll(&pfd, 1, (deadline - now) / 1000000ULL + 1) <= 0)
			break;
		on_sub_poll(r);
	}
}

void daemon_run_finish(struct daemon_run *r, struct session *s)
{
	bool replied = false;
	char msg[512];
	int rc = -ENOTCONN;

	r->finishing = true;
	if (r->ctl.fd >= 0) {
		rc = unregister(r, &r->ctl, s, msg, sizeof(msg));
		replied = r->ctl.replied;
	}
	if (rc < 0 && rc != -ENOTCONN && !replied) {
		/* The daemon went away; one that runs again re-adopted the session. */
		struct daemon_client again;

		if (daemon_client_connect(&again, r->socket, CALL_TIMEOUT_MS) == 0) {
			rc = unregister(r, &again, s, msg, sizeof(msg));
			replied = again.replied;
			if (rc == -ENOENT || rc == -DAEMON_ENDED)
				rc = 0; /* it ended the session already: its cgroup was empty */
			daemon_client_close(&again);
		}
	}
	if (rc < 0 && rc != -ENOTCONN && replied)
		log_warn("the daemon at %s could not end session %s: %s", r->socket, r->session_id,
			 msg);
	else if (rc < 0 && rc != -ENOTCONN)
		log_warn("the daemon at %s went away (%s); when it runs again it ends session %s "
			 "once its processes are gone", r->socket, msg, r->session_id);
	if (r->sub.fd >= 0) {
		if (rc == 0)
			drain_sub(r);
		daemon_client_close(&r->sub);
	}
	daemon_client_close(&r->ctl);
	for (int i = 0; i < 2; i++)
		if (r->never_fd[i] >= 0)
			close(r->never_fd[i]);
	if (r->audit_fd >= 0)
		close(r->audit_fd);
	r->audit_fd = -1;
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
		snprintf(why, size, "the daemon on %s does not allow --no-daemon for this user "
				    "(ceiling %s); run through it, or ask the operator", path,
			 json_object_object_get_ex(reply, "ceiling", &v) && json_object_get_string(v)
				 ? json_object_get_string(v) : "(none matches)");
		json_object_put(reply);
		return -EPERM;
	}
	json_object_put(reply);
	return 0;
}
