// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's typed requests, one function per op: each builds the
 * request object, sends it through daemon_client_call() (client.c: the
 * connection and the line framing) and reads what its caller needs
 * from the reply.
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
#include "../sandbox/changes.h"
#include "../sandbox/session.h"
#include "../lib/json.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../net/egress.h"

#define CALL_TIMEOUT_MS DAEMON_CALL_TIMEOUT_MS

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

static struct json_object *labels_object(const struct strv *labels);

int daemon_adopt(struct daemon_client *c, const char *cgroup, const char *policy,
		 const struct strv *labels, struct json_object **reply, char *msg, size_t size)
{
	struct json_object *req = daemon_request("adopt", NULL);

	json_object_object_add(req, "cgroup", json_object_new_string(cgroup));
	json_object_object_add(req, "policy_name", json_object_new_string(policy));
	if (labels && labels->n)
		json_object_object_add(req, "labels", labels_object(labels));
	return call_put(c, req, reply, msg, size);
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

/*
 * --secret: each secret's name, placeholder, hosts and value for the
 * daemon's proxy (docs/network.md, "Secrets"): over the daemon's socket
 * only, never logged.
 */
static struct json_object *secrets_json(const struct egress_secrets *ss)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < ss->n; i++) {
		const struct egress_secret *e = &ss->v[i];
		struct json_object *o = json_object_new_object(), *h = json_object_new_array();

		for (size_t j = 0; j < e->n_hosts; j++)
			json_object_array_add(h, json_object_new_string(e->hosts[j]));
		add_str(o, "name", e->name);
		add_str(o, "token", e->token);
		json_object_object_add(o, "hosts", h);
		json_object_object_add(o, "value", json_object_new_string_len(e->value, e->len));
		if (e->query)
			json_object_object_add(o, "query", json_object_new_boolean(1));
		json_object_array_add(a, o);
	}
	return a;
}

/* The network part: the allow-list's addresses, its names, the holes. */
void daemon_request_net(struct json_object *req, const struct bpfbox_policy *p)
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
	size_t max = p->rw_paths.n + 3, n;
	const char **dirs = calloc(max, sizeof(*dirs));
	char what[768];

	json_object_object_add(req, "landlock",
			       json_object_new_boolean(l->landlock && p->mode != MODE_FULL_ACCESS));
	json_object_object_add(req, "mount_ro",
			       json_object_new_boolean((l->ns.clone_flags & CLONE_NEWNS) &&
						       p->mode != MODE_FULL_ACCESS));
	/* A network namespace of its own: its loopback is allowed (docs/network.md). */
	json_object_object_add(req, "private_net",
			       json_object_new_boolean(l->ns.clone_flags & CLONE_NEWNET));
	/* What the cgroup sees before the command's exec is this run's own set-up. */
	json_object_object_add(req, "audit_from_exec", json_object_new_boolean(true));
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

static struct json_object *register_request(const struct session *s, const char *audit_mode,
					    bool asks, char *const argv[], pid_t pid, bool prepared)
{
	struct json_object *req = daemon_request("register", s->id);
	size_t argc = 0;

	while (argv[argc])
		argc++;
	json_object_object_add(req, "command", str_array((const char *const *)argv, argc));
	if (s->labels && s->labels->n)
		json_object_object_add(req, "labels", labels_object(s->labels));
	daemon_request_net(req, s->policy);
	if (s->secrets && s->secrets->n)
		json_object_object_add(req, "secrets", secrets_json(s->secrets));
	add_str(req, "audit_mode", audit_mode);
	add_layers(req, s);
	json_object_object_add(req, "policy", policy_to_json(s->policy));
	if (asks)
		json_object_object_add(req, "asks", json_object_new_boolean(true));
	/* Register and attach in one round trip (docs/daemon.md). */
	if (pid > 0)
		json_object_object_add(req, "pid", json_object_new_int64(pid));
	/* Before the fork: a cgroup the daemon made ahead, whose name the session takes. */
	else if (prepared)
		json_object_object_add(req, "prepared", json_object_new_boolean(1));
	return req;
}

int daemon_register(struct daemon_client *c, const struct session *s, const char *audit_mode,
		    bool asks, char *const argv[], pid_t pid, struct json_object **reply, char *msg,
		    size_t size)
{
	return call_put(c, register_request(s, audit_mode, asks, argv, pid, pid == 0), reply, msg,
			size);
}

int daemon_register_send(struct daemon_client *c, const struct session *s, const char *audit_mode,
			 bool asks, char *const argv[], pid_t pid, bool prepared)
{
	struct json_object *req = register_request(s, audit_mode, asks, argv, pid, prepared);
	int r = daemon_client_send(c, req);

	json_object_put(req);
	return r;
}

int daemon_attach(struct daemon_client *c, const char *id, pid_t pid, char *msg, size_t size)
{
	struct json_object *req = daemon_request("attach", id);

	json_object_object_add(req, "pid", json_object_new_int64(pid));
	return call_simple(c, req, msg, size);
}

int daemon_unregister_send(struct daemon_client *c, const char *id,
			   const struct session_result *res, const struct changes_set *changes)
{
	struct json_object *req = daemon_request("unregister", id), *o;
	int r;

	/* --changes review|apply: the daemon writes session.changes before session.end. */
	if (changes && (o = changes_summary_object(changes)))
		json_object_object_add(req, "changes", o);
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
		      const struct changes_set *changes, struct json_object **reply, char *msg,
		      size_t size)
{
	daemon_unregister_send(c, id, res, changes);
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
