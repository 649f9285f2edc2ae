// SPDX-License-Identifier: GPL-2.0
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
#include "embedded.h"
#include "run_internal.h"
#include "bpfbox/events.h"
#include "../policy/rules.h"
#include "../agent/agent.h"
#include "../audit/redact.h"
#include "../audit/sink.h"
#include "../net/egress.h"
#include "../policy/policy.h"
#include "../sandbox/session.h"
#include "../lib/json.h"
#include "../lib/log.h"
#include "../lib/util.h"

int daemon_run_connect(struct daemon_run *r, const char *socket)
{
	const char *path = daemon_socket_path(socket);
	const char *req_env = getenv("BPFBOX_REQUIRE_DAEMON");
	int rc;

	memset(r, 0, sizeof(*r));
	r->ctl.fd = r->sub.fd = -1;
	r->never_fd[0] = r->never_fd[1] = -1;
	r->ask.fd = -1;
	/* --daemon-socket, or BPFBOX_REQUIRE_DAEMON=1: no run without the daemon. */
	r->named = socket || (req_env && streq(req_env, "1"));
	snprintf(r->socket, sizeof(r->socket), "%s", path);
	rc = daemon_client_connect(&r->ctl, path, DAEMON_CALL_TIMEOUT_MS);
	if (rc == -EKEYREJECTED)
		return rc; /* not the daemon: said, and never a reason to run without it */
	if (rc == 0)
		return 1;
	/* No daemon here: embedded mode, unless one was asked for by name. */
	if (r->named)
		return log_error_errno(rc, "no daemon answers on %s%s; nothing ran (%s)", path,
				       socket ? "" : " and BPFBOX_REQUIRE_DAEMON=1 requires one",
				       "pass --no-daemon for embedded mode");
	/* No socket at all: no daemon on this host, the laptop case. */
	if (rc != -ENOENT)
		log_notice("the daemon at %s does not answer (%s); running without it "
			   "(embedded mode)",
			   path, strerror(-rc));
	return 0;
}

/* One of the reply's limits_effective, where it is below the run's own. */
static void take_limit(struct json_object *lim, const char *key, uint64_t scale, uint64_t *field)
{
	struct json_object *v;
	int64_t got;

	if (!json_object_object_get_ex(lim, key, &v) || !json_object_is_type(v, json_type_int))
		return;
	got = json_object_get_int64(v);
	if (got > 0 && (!*field || (uint64_t)got * scale < *field))
		*field = (uint64_t)got * scale;
}

/*
 * A ceiling of the daemon that clamps lowers the session's limits: the
 * daemon's cgroup holds memory, pids and cpu; timeout and output are this
 * run's to hold, and "started" says them all (docs/runtime.md).
 */
static void take_clamp(struct daemon_run *r, struct json_object *reply)
{
	struct json_object *lim, *v;

	if (r->limits && json_object_object_get_ex(reply, "limits_effective", &lim)) {
		take_limit(lim, "memory_mb", 1, &r->limits->memory_mb);
		take_limit(lim, "pids", 1, &r->limits->pids);
		take_limit(lim, "cpu_percent", 1, &r->limits->cpu_percent);
		take_limit(lim, "disk_mb", 1, &r->limits->disk_mb);
		take_limit(lim, "timeout_s", 1000, &r->limits->timeout_ms);
		take_limit(lim, "output_bytes", 1, &r->limits->output_bytes);
	}
	if (json_object_object_get_ex(reply, "clamped", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(r->s->clamped, sizeof(r->s->clamped), "%s", json_object_get_string(v));
}

/* What the daemon's reply raises: its BPF LSM makes the level Full. */
static void take_reply(struct daemon_run *r, struct json_object *reply)
{
	struct session *s = r->s;
	struct json_object *v;
	enum bpfbox_level lvl;

	take_clamp(r, reply);

	if (json_object_object_get_ex(reply, "level_enabled", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    level_parse(json_object_get_string(v), &lvl) == 0 && lvl <= s->layers.requested)
		s->layers.enabled = lvl;
	/* Its BPF LSM scopes abstract unix sockets and signals (docs/lsm.md). */
	if (json_object_object_get_ex(reply, "layers", &v) &&
	    json_object_object_get_ex(v, "bpf_lsm", &v) && json_object_get_boolean(v))
		agent_gaps_filled(s->layers.not_enforced, BPFBOX_SF_GAP_SCOPE);
	else
		session_note_bpf_lsm(s, false); /* as the daemon's session.start says */
	/* Its exec program holds the command rules (docs/config.md). */
	if (rules_any(s->policy) &&
	    !(json_object_object_get_ex(reply, "layers", &v) &&
	      json_object_object_get_ex(v, "cmd_rules", &v) && json_object_get_boolean(v)))
		session_not_enforced(s, "command rules on the execs inside the session (only the "
					"top-level command was checked: the daemon's exec program "
					"is not loaded)");
}

/* A refusal: -EAGAIN when the session may run without the daemon, else printed. */
static int refused(struct daemon_run *r, int rc, const char *msg)
{
	bool no = r->ctl.replied && (rc == -EACCES || rc == -EPERM);
	bool busy = r->ctl.replied && rc == -EBUSY;

	daemon_client_close(&r->ctl);
	/* Above the operator's ceiling or the uid's quota: nothing runs, not even alone. */
	if (r->ctl.replied && rc == -EDQUOT)
		return log_error_errno(rc, "the daemon at %s refused the session: %s", r->socket,
				       msg);
	if (r->named || (r->ctl.replied && !no && !busy))
		return log_error_errno(rc, "the daemon at %s did not take the session: %s",
				       r->socket, msg);
	/* Never silent, not even with -q: the session runs without the daemon. */
	log_notice("the daemon at %s %s (%s); running without it (embedded mode)", r->socket,
		   busy ? "is busy"
		   : no ? "refuses this client"
			: "does not answer",
		   msg);
	return -EAGAIN;
}

/*
 * Limits in v1 cgroups are joined by a migration: the daemon's attach, or
 * the child's own when registered ahead (register_ahead, join_v1_ahead).
 */
static void take_cgroup1(struct daemon_run *r, struct json_object *reply)
{
	struct json_object *o, *dir;

	if (json_object_object_get_ex(reply, "limits", &o)) {
		json_object_object_foreach (o, key, val) {
			(void)key;
			if (json_object_is_type(val, json_type_string) &&
			    streq(json_object_get_string(val), "cgroup1"))
				r->v1 = true;
		}
	}
	for (int i = 0; i < RES__COUNT; i++) {
		if (!json_object_object_get_ex(reply, "cgroup1", &o) ||
		    !json_object_object_get_ex(o, limit_res_name(i), &dir) ||
		    !json_object_is_type(dir, json_type_string))
			continue;
		if ((size_t)json_object_get_string_len(dir) >= sizeof(r->cgroup1[i]))
			r->cgroup1_bad = true;
		else
			memcpy(r->cgroup1[i], json_object_get_string(dir),
			       json_object_get_string_len(dir) + 1);
	}
}

/* The register's reply (its request sent before): what the session takes from it. */
static int register_take(struct daemon_run *r, pid_t pid)
{
	struct session *s = r->s;
	struct json_object *reply = NULL, *port;
	char msg[512];
	int rc;

	rc = daemon_client_reply(&r->ctl, &reply, msg, sizeof(msg));
	if (rc < 0) {
		json_object_put(reply);
		return refused(r, rc, msg);
	}
	r->registered = true;
	/* Registered before the fork, the session may take a cgroup made ahead: its name. */
	if (pid == 0 && json_object_object_get_ex(reply, "session", &port) &&
	    json_object_is_type(port, json_type_string) &&
	    !streq(json_object_get_string(port), s->id)) {
		if (!proto_session_id_valid(json_object_get_string(port))) {
			json_object_put(reply);
			return log_error_errno(-EPROTO, "the daemon at %s named the session '%s'",
					       r->socket, json_object_get_string(port));
		}
		session_take_id(s, json_object_get_string(port));
	}
	/*
	 * A daemon from before register+attach ignores "pid": no "pid" in its
	 * reply, and the child is attached by a request of its own.
	 */
	if (pid > 0 && !json_object_object_get_ex(reply, "pid", NULL) &&
	    (rc = daemon_attach(&r->ctl, s->id, pid, msg, sizeof(msg))) < 0) {
		json_object_put(reply);
		return log_error_errno(rc,
				       "the daemon at %s could not move the command into its "
				       "session cgroup: %s",
				       r->socket, msg);
	}
	take_reply(r, reply);
	if (r->ask_top && !(json_object_object_get_ex(reply, "layers", &port) &&
			    json_member_true(port, "cmd_ask"))) {
		json_object_put(reply);
		return log_error_errno(EPERM,
				       "the command needs approval, and the daemon at %s takes "
				       "no asks for it (its exec program is not loaded); nothing "
				       "ran",
				       r->socket);
	}
	if (json_object_object_get_ex(reply, "cgroup", &port))
		snprintf(r->cgroup, sizeof(r->cgroup), "%s", json_object_get_string(port));
	take_cgroup1(r, reply);
	if (s->policy->net == NET_DENY && egress_has_names(&s->policy->net_allow)) {
		/* A daemon without egress would leave every name unreachable: say so. */
		if (!json_object_object_get_ex(reply, "proxy_port", &port)) {
			json_object_put(reply);
			return log_error_errno(-EOPNOTSUPP,
					       "the daemon at %s runs no egress proxy "
					       "for name rules (an older bpfbox?)",
					       r->socket);
		}
		snprintf(s->proxy_url, sizeof(s->proxy_url), "http://127.0.0.1:%d",
			 json_object_get_int(port));
	}
	/* --secret: the CA the session trusts (its bundle is written with its home). */
	if (json_object_object_get_ex(reply, "ca_pem", &port) &&
	    json_object_is_type(port, json_type_string)) {
		free(r->ca_pem);
		r->ca_pem = strdup(json_object_get_string(port));
		s->ca_pem = r->ca_pem;
	}
	json_object_put(reply);
	return 0;
}

/* prepared (pid 0): a cgroup the daemon made ahead, whose name the session takes. */
static int do_register(struct daemon_run *r, pid_t pid)
{
	daemon_register_send(&r->ctl, r->s, r->audit_mode, r->ask.fd >= 0, r->argv, pid, pid == 0);
	return register_take(r, pid);
}

/*
 * The child waits: register and attach it in one request (or attach it to
 * the session registered before), then the audit stream, then the level.
 */
static int release_child(void *ctx, pid_t child)
{
	struct daemon_run *r = ctx;
	struct session *s = r->s;
	char msg[512];
	int rc;

	if (r->registered && !s->child_placed) {
		rc = daemon_attach(&r->ctl, s->id, child, msg, sizeof(msg));
		if (rc < 0)
			return log_error_errno(rc,
					       "the daemon at %s could not move the command "
					       "into its session cgroup: %s",
					       r->socket, msg);
	} else if (!r->registered && (rc = do_register(r, child)) < 0) {
		return rc;
	}
	if (r->sinks && (rc = vd_subscribe(r)) < 0)
		return rc;
	run_level_final(s, true, r->verbose);
	/* Never silently less: an explicit --level full that cannot hold refuses. */
	if (r->level_given && s->layers.enabled < s->layers.requested)
		return log_error_errno(EPERM,
				       "--level %s: this session reaches only %s through "
				       "the daemon at %s; nothing ran",
				       level_name(s->layers.requested),
				       level_name(s->layers.enabled), r->socket);
	return 0;
}

/* The denials the daemon's BPF records showed, into the session's summary. */
static void take_denials(struct session *s, struct json_object *reply)
{
	struct json_object *arr, *v;
	size_t n;

	if (!reply || !json_object_object_get_ex(reply, "denials", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return;
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(arr, i), *f[7];
		static const char *const keys[] = {"layer", "op",   "what",  "err",
						   "count", "rule", "reason"};
		bool ok = true;

		for (size_t k = 0; k < 7; k++)
			if (!json_object_object_get_ex(d, keys[k], &f[k]))
				f[k] = NULL;
		for (size_t k = 0; k < 5; k++)
			ok = ok && f[k];
		if (ok)
			denials_add_why(&s->denials, json_object_get_string(f[0]),
					json_object_get_string(f[1]), json_object_get_string(f[2]),
					json_object_get_int(f[3]), json_object_get_int(f[4]),
					f[5] ? json_object_get_string(f[5]) : NULL,
					f[6] ? json_object_get_string(f[6]) : NULL);
	}
	if (json_object_object_get_ex(reply, "denials_other", &v))
		s->denials.other += json_object_get_int64(v);
	if (json_object_object_get_ex(reply, "denials_fallbacks", &v))
		s->denials.fallbacks += json_object_get_int64(v);
	if (json_object_object_get_ex(reply, "denials_exec_not_found", &v))
		s->denials.exec_not_found += json_object_get_int64(v);
}

/* The change set the session's end scanned (--changes review|apply), NULL: none. */
static const struct changes_set *vd_changes(const struct session *s)
{
	return s->result.wait_status >= 0 ? s->changes : NULL;
}

static int unregister(struct daemon_run *r, const struct session_result *res,
		      struct json_object **reply, char *msg, size_t size)
{
	bool replied = false;
	int rc = -ENOTCONN;

	r->finishing = true;
	if (r->ctl.fd >= 0) {
		struct json_object *o = NULL;

		/* Sent by end_begin: only its reply is read here. */
		rc = r->unreg_sent ? daemon_client_reply(&r->ctl, &o, msg, size)
				   : daemon_unregister(&r->ctl, r->s->id, res, vd_changes(r->s), &o,
						       msg, size);
		r->unreg_sent = false;
		replied = r->ctl.replied;
		if (reply)
			*reply = o;
		else
			json_object_put(o);
	}
	if (rc < 0 && rc != -ENOTCONN && !replied) {
		/* The daemon went away; one that runs again re-adopted the session. */
		struct daemon_client again;

		if (daemon_client_connect(&again, r->socket, DAEMON_CALL_TIMEOUT_MS) == 0) {
			struct json_object *o = NULL;

			rc = daemon_unregister(&again, r->s->id, res, vd_changes(r->s), &o, msg,
					       size);
			replied = again.replied;
			if (reply) {
				json_object_put(*reply); /* the first try's, if it had one */
				*reply = o;
			} else {
				json_object_put(o);
			}
			if (rc == -ENOENT || rc == -DAEMON_ENDED)
				rc = 0; /* it ended the session already: its cgroup was empty */
			daemon_client_close(&again);
		}
	}
	if (rc < 0 && rc != -ENOTCONN && replied)
		log_warn("the daemon at %s could not end session %s: %s", r->socket, r->s->id, msg);
	else if (rc < 0 && rc != -ENOTCONN)
		log_warn("the daemon at %s went away (%s); when it runs again it ends session %s "
			 "once its processes are gone",
			 r->socket, msg, r->s->id);
	r->ended = true;
	return rc;
}

/*
 * The command ended: the unregister with its result is sent at once, and
 * its reply (the denials) read in on_end, so that the session's own
 * directories are removed while the daemon ends it (session_run.c).
 */
static int end_begin(void *ctx, struct session *s)
{
	struct daemon_run *r = ctx;

	if (!r->registered || r->ended || r->ctl.fd < 0)
		return -ENOTCONN;
	r->finishing = true;
	r->unreg_sent = daemon_unregister_send(&r->ctl, s->id, &s->result, vd_changes(s)) == 0;
	return r->unreg_sent ? 0 : -EPIPE;
}

/* The unregister's reply: the denials, then the stream's last records. */
static void on_end(void *ctx, struct session *s)
{
	struct daemon_run *r = ctx;
	struct json_object *reply = NULL;
	char msg[512];

	if (!r->registered)
		return;
	if (unregister(r, &s->result, &reply, msg, sizeof(msg)) == 0)
		take_denials(s, reply);
	json_object_put(reply);
	if (r->sub.fd >= 0)
		vd_drain_sub(r);
}

/*
 * A monitor (OOM, disk) wants the session paused: the daemon freezes its
 * cgroup and writes session.paused; its reply names the OOM victim.
 */
static int pause_via_daemon(void *ctx, struct session_event *ev)
{
	struct daemon_run *r = ctx;
	char msg[512];
	pid_t pid;
	int rc;

	rc = daemon_pause(&r->ctl, r->s->id, ev->reason, ev->oom_kills, ev->disk_used_mb, &pid,
			  ev->comm, sizeof(ev->comm), msg, sizeof(msg));
	if (rc < 0) {
		log_warn("the daemon did not pause session %s (%s); pausing it here", r->s->id,
			 msg);
		return rc;
	}
	if (pid)
		ev->pid = pid;
	return 0;
}

/*
 * The v1 cgroups of a hybrid host's limits, for the child to join before
 * its first step as embedded mode's does (limits_child_join): each a
 * directory under this host's v1 mount of its controller. 0, or -errno
 * with none kept (the daemon's attach migrates the child then).
 */
static int join_v1_ahead(struct daemon_run *r)
{
	struct session_limits *l = &r->s->lim;
	char procs[PATH_MAX + 16];
	int rc = r->cgroup1_bad ? -ENAMETOOLONG : -ENOENT;

	for (int i = 0; i < RES__COUNT && !r->cgroup1_bad; i++)
		if (r->cgroup1[i][0])
			rc = 0; /* none named: a daemon from before this */
	for (int i = 0; i < RES__COUNT && !rc; i++) {
		size_t n = strlen(l->v1_mount[i]);

		if (!r->cgroup1[i][0])
			continue;
		/* Below the mount: not its root cgroup (no limit there), nor outside it. */
		if (!n || strncmp(r->cgroup1[i], l->v1_mount[i], n) ||
		    !path_plain(r->cgroup1[i] + n)) {
			rc = -EPROTO;
			break;
		}
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", r->cgroup1[i]);
		l->cg1_procs_fd[i] = open(procs, O_WRONLY | O_CLOEXEC);
		if (l->cg1_procs_fd[i] < 0)
			rc = -errno;
	}
	if (rc < 0) {
		for (int i = 0; i < RES__COUNT; i++)
			fd_close(&l->cg1_procs_fd[i]);
		return rc;
	}
	/* The memory cgroup's OOM events, watched as the child's (limits_adopt). */
	memcpy(l->v1_memory, r->cgroup1[RES_MEMORY], sizeof(l->v1_memory));
	return 0;
}

/*
 * Registered before the fork, the child is cloned into the session's cgroup
 * (session_run.c spawn) and needs no attach: no migration by the daemon;
 * on a hybrid host it joins the v1 cgroups of its limits itself. The
 * request went out at prepare (register_send): its reply is read here,
 * just before the fork, so that the daemon made the session while this
 * process built the restrictions (hooks.before_fork).
 */
static int register_ahead(void *ctx)
{
	struct daemon_run *r = ctx;
	int rc, fd;

	if (!r->reg_pending)
		return 0;
	r->reg_pending = false;
	rc = register_take(r, 0);
	if (rc < 0 || !r->cgroup[0])
		return rc;
	/* A daemon that names no v1 cgroups (older): its attach moves the child. */
	if (r->v1 && join_v1_ahead(r) < 0)
		return 0;
	fd = open(r->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		r->s->lim.cg_fd = fd; /* closed with the session's limits */
	return 0;
}

int daemon_run_prepare(struct daemon_run *r, struct session *s, const struct audit_opts *audit,
		       struct sinks *sinks, char *const argv[])
{
	r->s = s;
	r->argv = argv;
	r->sinks = sinks;
	/* Asks come through the session's event stream: with --audit only. */
	r->ask.fd = sinks && audit->ask_fd > 2 ? audit->ask_fd : -1;
	r->audit_mode = audit->off ? "off" : audit->all ? "all" : "aggregate";
	s->hooks.before_release = release_child;
	s->hooks.end_begin = end_begin;
	s->hooks.on_end = on_end;
	/* The daemon makes and limits the cgroups; a monitor's pause goes through it. */
	s->hooks.request_pause = pause_via_daemon;
	s->hooks.ctx = r;
	/* The proxy's port goes into the command's environment: known before the fork. */
	if (s->policy->net == NET_DENY && egress_has_names(&s->policy->net_allow))
		return do_register(r, 0);
	if (geteuid() == 0) {
		/* The session keeps this id: its tmp, home and environment are named before the reply. */
		r->reg_pending = daemon_register_send(&r->ctl, s, r->audit_mode, r->ask.fd >= 0,
						      argv, 0, false) == 0;
		if (!r->reg_pending)
			return register_take(r, 0); /* the send's error, as a refusal */
		s->hooks.before_fork = register_ahead;
	}
	return 0;
}

void daemon_run_finish(struct daemon_run *r)
{
	char msg[512];

	if (r->s && r->s->ca_pem == r->ca_pem)
		r->s->ca_pem = NULL;
	free(r->ca_pem);
	r->ca_pem = NULL;

	/* Ended before the fork: a register still unanswered is read, and ended if it took. */
	if (r->reg_pending) {
		struct json_object *reply = NULL;

		r->reg_pending = false;
		r->registered = daemon_client_reply(&r->ctl, &reply, msg, sizeof(msg)) == 0;
		json_object_put(reply);
	}
	if (r->registered && !r->ended)
		unregister(r, NULL, NULL, msg, sizeof(msg));
	if (r->sub.fd >= 0)
		daemon_client_close(&r->sub);
	daemon_client_close(&r->ctl);
	for (int i = 0; i < 2; i++)
		if (r->never_fd[i] >= 0)
			close(r->never_fd[i]);
	r->never_fd[0] = r->never_fd[1] = -1;
	free(r->line);
	r->line = NULL;
}
