// SPDX-License-Identifier: GPL-2.0
/*
 * register: the request checked and held to the operator's ceilings, the
 * session's cgroup and map entry, its network rules and egress proxy, its
 * limits, its session.start; with "pid", the child attached in the same
 * request (one round trip, docs/daemon.md).
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
#include "../policy/rules.h"
#include "../agent/agent.h"
#include "../lib/cgroup.h"
#include "../audit/sink.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../lib/util.h"
#include "../net/egress.h"

/* A limit of the request's policy, when present and sane. */
static void limit_from(struct json_object *lim, const char *key, int64_t min, uint64_t *out)
{
	int64_t v;

	if (lim && proto_get_int(lim, key, &v) == 0 && v >= min && v <= DAEMON_COUNT_MAX)
		*out = v;
}

/*
 * The session's memory, pids and cpu limits (from the request's policy, the
 * built-in defaults else) on the cgroup just made; v1 cgroups on hybrid
 * hosts, joined at attach. What does not hold goes into session.start.
 */
static void apply_limits(struct daemon *d, struct dsession *s, struct json_object *req)
{
	struct policy_limits pl = {
		.memory_mb = 2048, .pids = 64, .cpu_percent = 100, .disk_mb = 1024};
	struct json_object *pol, *lim = NULL, *ne;

	if (proto_get_object(req, "policy", &pol) == 0)
		proto_get_object(pol, "limits", &lim);
	limit_from(lim, "memory_mb", CTL_MIN_MEMORY_MB, &pl.memory_mb);
	limit_from(lim, "pids", 4, &pl.pids);
	limit_from(lim, "cpu_percent", 1, &pl.cpu_percent);
	limit_from(lim, "disk_mb", CTL_MIN_DISK_MB, &pl.disk_mb);
	/*
	 * Cgroups only: an rlimit fallback would be the client's to set, in
	 * the child, and it is not; what cannot hold by cgroup says "none".
	 */
	if (d->lim_planned)
		s->lim = d->lim_plan;
	else
		limits_plan(&s->lim, &pl, d->parent, LIMITS_VIA_CGROUP);
	limits_plan_values(&s->lim, &pl);
	if (snprintf(s->lim.cg, sizeof(s->lim.cg), "%s", s->cgroup) >= (int)sizeof(s->lim.cg)) {
		dlog("session %s: cgroup path too long for limits; none applied", s->id);
		return;
	}
	s->lim.cg_id = s->cgroup_id;
	s->lim.cgroup = s->lim.pause = true;
	limits_apply(&s->lim, s->id);
	limits_close_fds(&s->lim);
	s->has_lim = true;
	if (!s->lim.not_enforced[0])
		return;
	if (proto_get_array(req, "not_enforced", &ne) < 0) {
		ne = json_object_new_array();
		json_object_object_add(req, "not_enforced", ne);
	}
	json_object_array_add(ne, json_object_new_string(s->lim.not_enforced));
}

/* A new session of the table, not in it yet; NULL when out of memory. */
static struct dsession *new_session(struct daemon *d, struct conn *c, struct json_object *req,
				    const char *id, uint32_t index, const struct session_cgroup *cg)
{
	struct dsession *s = calloc(1, sizeof(*s));
	struct json_object *v;

	if (!s)
		return NULL;
	ev_flood_init(d, s);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", cg->path);
	s->index = index;
	s->cgroup_id = cg->id;
	s->client_pid = c->peer.pid;
	s->uid = c->peer.uid;
	s->owner = c->serial;
	s->state = DS_REGISTERED;
	s->start_real_ns = real_now_ns();
	if (proto_get_array(req, "command", &v) == 0)
		s->command = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	s->command_truncated = json_object_object_get_ex(req, "command_truncated", NULL);
	if (json_object_object_get_ex(req, "labels", &v) &&
	    json_object_is_type(v, json_type_object))
		s->labels = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	return s;
}

/*
 * The BPF LSM policy, before the session's map entry: the programs never
 * see the session without it. 0, -ECANCELED when replied, else -errno.
 */
static int register_lsm(struct daemon *d, struct conn *c, struct dsession *s,
			struct json_object *req, struct json_object **lsm)
{
	const char *bad, *str;
	int r;

	if (ops_want_lsm(req)) {
		r = ops_apply_lsm(d, s->index, ops_lsm_lists(req, lsm), &bad);
		if ((r == -EINVAL || r == -ENAMETOOLONG) && bad) {
			ops_reply_error(d, c, EINVAL,
					"register: the BPF LSM cannot express '%s'%s; "
					"see docs/config.md for the forms of deny and exec_deny",
					bad, r == -ENAMETOOLONG ? " (too long or too deep)" : "");
			return -ECANCELED;
		}
		if (r == -EINVAL || r == -ENAMETOOLONG) {
			ops_bad_member(d, c, "register", "policy.deny and policy.exec_deny",
				       "arrays of at most 1024 strings shorter than 256 bytes");
			return -ECANCELED;
		}
		if (r < 0)
			return r;
		s->lsm = agent_status(d->agent)->lsm;
		if (s->lsm) {
			s->lsm_lists = json_object_get(*lsm);
			s->flags |= BPFBOX_SF_BPF_LSM;
		}
		/* An adopted cgroup's writes are its runtime's: no writable set to hold. */
		if (s->lsm && !ops_full_access(req) && !s->adopted) {
			int64_t abi = 0;

			proto_get_int(req, "landlock_abi", &abi);
			if (!(s->flags & BPFBOX_SF_LANDLOCK))
				abi = 0;
			s->flags |= agent_gap_flags(d->agent, abi);
			ops_drop_filled(req, s->flags);
			r = ops_apply_writable(d, s, s->index, req);
			if (r < 0)
				return r;
		}
	}
	if (proto_get_str(req, "level_enabled", &str) == 0) {
		/* What the client could do alone, and the BPF LSM of the daemon. */
		if (s->lsm && streq(str, "Standard")) {
			str = "Full";
			json_object_object_add(req, "level_enabled", json_object_new_string(str));
		}
		snprintf(s->level, sizeof(s->level), "%s", str);
	}
	return 0;
}

/*
 * The command rules (bpf/cmd.bpf.c) of the session's policy into the exec
 * program's table, before the session's map entry. 0, -ECANCELED when
 * replied (a list the table cannot hold), else -errno.
 */
static int register_cmd(struct daemon *d, struct conn *c, struct dsession *s,
			struct json_object *req)
{
	struct bpfbox_cmd_table *t;
	struct json_object *pol;
	int r;

	if (!agent_status(d->agent)->cmd || !json_object_object_get_ex(req, "policy", &pol))
		return 0;
	t = malloc(sizeof(*t));
	r = t ? rules_compile_json(pol, t) : -ENOMEM;
	if (!r && t->n)
		r = agent_session_cmd_rules(d->agent, s->index, t);
	if (!r && t->n)
		s->flags |= BPFBOX_SF_CMD_RULES;
	if (!r)
		r = ops_ask_register(d, s, req);
	free(t);
	if (r == -EINVAL || r == -E2BIG) {
		ops_bad_member(d, c, "register", "policy.deny_commands and policy.commands",
			       "at most 64 patterns and rules of the forms of docs/config.md");
		return -ECANCELED;
	}
	return r;
}

/*
 * The map entry, the egress proxy, the network rules and the unix dirs.
 * 0, -ECANCELED when replied, else -errno; *in_map: the entry was made.
 */
static int register_net(struct daemon *d, struct conn *c, struct dsession *s,
			struct json_object *req, int netns_fd, uint16_t *proxy, bool *in_map)
{
	struct json_object *v;
	uint16_t dns = 0;
	int r;

	if (ops_start_egress(d, c, s, req, netns_fd, proxy, &dns) < 0)
		return -ECANCELED;
	r = agent_session_add_egress(d->agent, s->cgroup_id, s->index, s->flags, *proxy, dns);
	if (r < 0)
		return r;
	*in_map = true;
	if (proto_get_array(req, "net_allow", &v) == 0 && ops_add_net_rules(d, c, s, v) < 0)
		return -ECANCELED;
	if (ops_add_net_holes(d, c, s, req) < 0)
		return -ECANCELED;
	if (agent_status(d->agent)->net && proto_get_array(req, "unix_dirs", &v) == 0) {
		const char *dirs[BPFBOX_UNIX_PREFIXES];
		size_t n = json_object_array_length(v);

		for (size_t i = 0; i < n; i++)
			dirs[i] = json_object_get_string(json_object_array_get_idx(v, i));
		return agent_unix_allow(d->agent, s->index, dirs, n);
	}
	return 0;
}

/*
 * The request's limits as the session got them (lowered by a ceiling that
 * clamps): the client enforces timeout and output itself, and says them
 * all in its status channel's "started".
 */
static void reply_effective_limits(struct daemon *d, struct json_object *req)
{
	static const char *const keys[] = {"memory_mb", "pids",	     "cpu_percent",
					   "disk_mb",	"timeout_s", "output_bytes"};
	struct json_object *pol, *lim, *v;

	if (proto_get_object(req, "policy", &pol) < 0 || proto_get_object(pol, "limits", &lim) < 0)
		return;
	jsonw_object_begin(&d->rw, "limits_effective");
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (json_object_object_get_ex(lim, keys[i], &v) &&
		    json_object_is_type(v, json_type_int))
			jsonw_i64(&d->rw, keys[i], json_object_get_int64(v));
	jsonw_end(&d->rw);
	if (json_object_object_get_ex(req, "clamped", &v) &&
	    json_object_is_type(v, json_type_string))
		jsonw_str(&d->rw, "clamped", json_object_get_string(v));
}

void ops_register_reply(struct daemon *d, struct conn *c, struct dsession *s,
			struct json_object *req, uint16_t proxy, int64_t pid)
{
	const struct agent_status *st = agent_status(d->agent);

	ops_reply_begin(d);
	if (pid)
		jsonw_u64(&d->rw, "pid", pid);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_u64(&d->rw, "index", s->index);
	jsonw_str(&d->rw, "cgroup", s->cgroup);
	jsonw_object_begin(&d->rw, "layers");
	jsonw_bool(&d->rw, "bpf_audit", st->audit);
	jsonw_bool(&d->rw, "bpf_network", st->net);
	jsonw_bool(&d->rw, "bpf_unix_connect", st->unix_connect);
	jsonw_bool(&d->rw, "bpf_lsm", s->lsm);
	jsonw_bool(&d->rw, "cmd_rules", s->flags & BPFBOX_SF_CMD_RULES);
	jsonw_bool(&d->rw, "cmd_ask", s->flags & BPFBOX_SF_CMD_ASK);
	jsonw_end(&d->rw);
	if (s->level[0])
		jsonw_str(&d->rw, "level_enabled", s->level);
	if (proxy)
		jsonw_u64(&d->rw, "proxy_port", proxy);
	/* --secret: the session CA the client writes into the session's bundle. */
	if (s->egress && egress_ca_pem(s->egress))
		jsonw_str(&d->rw, "ca_pem", egress_ca_pem(s->egress));
	limits_json(&s->lim, &d->rw, "limits");
	reply_effective_limits(d, req);
	/* A client that registered before its fork joins these itself (via_daemon.c). */
	if (s->lim.cg1[RES_MEMORY][0] || s->lim.cg1[RES_PIDS][0] || s->lim.cg1[RES_CPU][0]) {
		jsonw_object_begin(&d->rw, "cgroup1");
		for (int r = 0; r < RES__COUNT; r++)
			if (s->lim.cg1[r][0])
				jsonw_str(&d->rw, limit_res_name(r), s->lim.cg1[r]);
		jsonw_end(&d->rw);
	}
	ops_reply_send(d, c);
}

/* What a register that failed half-way made, undone (s may be NULL). */
static void register_undo(struct daemon *d, struct dsession *s, const struct session_cgroup *cg,
			  uint32_t index, bool in_map, bool adopted)
{
	if (in_map) {
		agent_session_remove(d->agent, cg->id, NULL, NULL);
		agent_net_clear(d->agent, index);
	}
	agent_session_lsm_clear(d->agent, index);
	agent_session_cmd_rules(d->agent, index, NULL);
	if (!adopted)
		cgroup_remove(cg->path, 0); /* empty: nothing ran in it */
	if (s) {
		egress_stop(s->egress);
		free(s->command);
		free(s->labels);
		json_object_put(s->lsm_lists);
		free(s->wkeys);
		ops_ask_free(d, s);
		free(s);
	}
}

/* How many cgroups the daemon keeps made ahead, and for how long (seconds). */
#define POOL_WANT  4
#define POOL_RENEW 300 /* under the stale sweep's LIMITS_STALE_S (600) */

/* The cgroups made ahead, refilled (after a register's reply, and on a tick). */
static void pool_refill(struct daemon *d, bool tick)
{
	int r;

	if (tick)
		cgroup_pool_expire(&d->pool, d->parent, time(NULL) - POOL_RENEW);
	r = cgroup_pool_fill(&d->pool, d->parent, POOL_WANT);
	if (r < 0 && !tick)
		dlog("cannot make session cgroups ahead under %s (%s); each register makes its "
		     "own",
		     d->parent, strerror(-r));
}

void ops_ahead(struct daemon *d, bool tick)
{
	struct policy_limits pl = {0};

	pool_refill(d, tick);
	/*
	 * How limits hold (the mount table, the controllers) is read once a
	 * second, not at every register: a change shows within a tick.
	 */
	limits_plan(&d->lim_plan, &pl, d->parent, LIMITS_VIA_CGROUP);
	d->lim_planned = true;
}

/*
 * The session's cgroup: the one made ahead of that name (register_check
 * picked it for "prepared", or a client that read the parent directory
 * named it), else made now.
 */
static int register_cgroup(struct daemon *d, const char *id, struct session_cgroup *cg)
{
	int r;

	if (cgroup_pool_take(&d->pool, d->parent, id, cg) == 0)
		return 0;
	r = session_cgroup_create(d->parent, id, cg);
	if (r == 0)
		session_cgroup_close(cg); /* the client's child is moved in by its pid */
	return r;
}

uint32_t ops_free_index(struct daemon *d, struct conn *c, const char *op)
{
	uint32_t index = table_free_index(&d->table);

	if (!index)
		ops_reply_error(d, c, ENOSPC, "%s: %d sessions are running; end one first", op,
				BPFBOX_MAX_SESSIONS);
	return index;
}

int ops_register_session(struct daemon *d, struct conn *c, struct json_object *req, const char *id,
			 uint32_t index, const struct session_cgroup *cg, uint32_t flags,
			 const struct adopt_opts *adopt, struct dsession **out, uint16_t *proxy)
{
	struct dsession *s = new_session(d, c, req, id, index, cg);
	struct json_object *lsm = NULL;
	bool in_map = false, adopted = adopt != NULL;
	int r = s ? 0 : -ENOMEM;

	if (s) {
		s->flags = flags;
		s->adopted = adopted;
	}
	if (!r)
		r = register_lsm(d, c, s, req, &lsm);
	if (!r)
		r = register_cmd(d, c, s, req);
	if (!r)
		r = register_net(d, c, s, req, adopt ? adopt->netns_fd : -1, proxy, &in_map);
	if (!r)
		r = table_add(&d->table, s);
	if (r < 0) {
		if (r != -ECANCELED)
			ops_reply_error(d, c, -r, "%s: %s", adopted ? "adopt" : "register",
					strerror(-r));
		register_undo(d, s, cg, index, in_map, adopted);
		json_object_put(lsm);
		return -ECANCELED;
	}
	ops_write_meta(s, s->lsm ? lsm : NULL);
	json_object_put(lsm);
	*out = s;
	return 0;
}

void op_register(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct session_cgroup cg;
	struct dsession *s = NULL;
	const char *id;
	uint32_t flags = 0, index;
	uint16_t proxy = 0;
	char pick[SESSION_NAME_LEN + 1];
	int64_t pid;
	int r;

	if (ops_register_check(d, c, req, &id, pick, &flags, &pid) < 0)
		return;
	index = ops_free_index(d, c, "register");
	if (!index)
		return;
	r = register_cgroup(d, id, &cg);
	if (r < 0) {
		ops_reply_error(d, c, -r, "register: cannot create the cgroup %s/%s: %s", d->parent,
				id, strerror(-r));
		return;
	}
	if (ops_register_session(d, c, req, id, index, &cg, flags, NULL, &s, &proxy) < 0)
		return;
	apply_limits(d, s, req);
	if (!s->lsm)
		ops_register_lsm_only(req);
	/* Register and attach in one round trip: the child waits for this reply. */
	if (pid && ops_attach_pid(d, c, s, pid) < 0) {
		ev_session_start(d, s, req);
		ops_end_session(d, s, "attach failed", NULL);
		return;
	}
	ops_register_reply(d, c, s, req, proxy, pid);
	/* After the reply, before any record of the session: it waits for the reply. */
	ev_session_start(d, s, req);
	dlog("session %s registered by pid %d uid %u: index %u, cgroup %s", s->id, s->client_pid,
	     s->uid, s->index, s->cgroup);
	pool_refill(d, false); /* off the request's path: the reply is sent */
}
