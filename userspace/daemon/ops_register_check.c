// SPDX-License-Identifier: GPL-2.0
/*
 * What a register request may ask, checked before anything is made
 * (ops_register.c makes the session): its members and their bounds, its
 * flags, the sessions per uid, the operator's ceilings (held to, with
 * their events), the command bounded for the audit stream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "internal.h"
#include "ops_internal.h"
#include "metrics.h"
#include "../policy/rules.h"
#include "../agent/agent.h"
#include "../audit/lifecycle.h"
#include "../audit/sink.h"
#include "../policy/policy.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"
#include "../net/egress.h"

/* Strings only, at most max of them, each shorter than len_max (0: any). */
bool ops_string_array(struct json_object *arr, size_t max, size_t len_max, bool absolute)
{
	size_t n = json_object_array_length(arr);

	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(v, json_type_string))
			return false;
		if (len_max && (size_t)json_object_get_string_len(v) >= len_max)
			return false;
		if (absolute && json_object_get_string(v)[0] != '/')
			return false;
	}
	return true;
}

struct reg_member;

/* --label pairs of the client (docs/runtime.md): bounded, strings only. */
static bool labels_valid(struct json_object *o, const struct reg_member *m)
{
	(void)m;
	return ops_labels_valid(o);
}

bool ops_labels_valid(struct json_object *o)
{
	if (json_object_object_length(o) > 32)
		return false;
	json_object_object_foreach (o, key, val) {
		if (!*key || strlen(key) > 64 || !json_object_is_type(val, json_type_string) ||
		    json_object_get_string_len(val) > 256)
			return false;
	}
	return true;
}

/* The request's booleans that set a session flag. */
static const struct {
	const char *key;
	uint32_t flag;
} bool_flags[] = {{"landlock", BPFBOX_SF_LANDLOCK},
		  {"allow_metadata", BPFBOX_SF_ALLOW_META},
		  {"mount_ro", BPFBOX_SF_MOUNT_RO},
		  {"private_net", BPFBOX_SF_NET_LOOPBACK},
		  {"audit_from_exec", BPFBOX_SF_FROM_EXEC}};

static int parse_flags(struct daemon *d, struct conn *c, struct json_object *req, uint32_t *flags)
{
	const char *net = "deny", *mode = "aggregate";
	int r;

	if ((r = proto_get_str(req, "net", &net)) == -EINVAL ||
	    (!r && !streq(net, "deny") && !streq(net, "allow")))
		return ops_bad_member(d, c, "register", "net", "\"deny\" or \"allow\"");
	if ((r = proto_get_str(req, "audit_mode", &mode)) == -EINVAL ||
	    (!r && !streq(mode, "aggregate") && !streq(mode, "all") && !streq(mode, "off")))
		return ops_bad_member(d, c, "register", "audit_mode",
				      "\"aggregate\", \"all\" or \"off\"");
	*flags = 0;
	for (size_t i = 0; i < ARRAY_SIZE(bool_flags); i++) {
		bool on = false;

		if (proto_get_bool(req, bool_flags[i].key, &on) == -EINVAL)
			return ops_bad_member(d, c, "register", bool_flags[i].key, "a boolean");
		if (on)
			*flags |= bool_flags[i].flag;
	}
	if (streq(net, "deny"))
		*flags |= BPFBOX_SF_NET_DENY;
	if (streq(mode, "all"))
		*flags |= BPFBOX_SF_AUDIT_ALL;
	if (streq(mode, "off"))
		*flags |= BPFBOX_SF_AUDIT_OFF;
	if (agent_status(d->agent)->net)
		*flags |= BPFBOX_SF_NET_BPF;
	return 0;
}

static bool string_array_valid(struct json_object *v, const struct reg_member *m);

/*
 * The request's other optional members, in the order they are checked: the
 * JSON type each must have when present, and what else it must hold.
 */
static const struct reg_member {
	const char *key;
	json_type type;
	size_t max, len_max; /* string arrays: as ops_string_array() */
	bool absolute;
	bool (*valid)(struct json_object *v, const struct reg_member *m);
	const char *want;
} reg_members[] = {
	{"command", json_type_array, MAX_COMMAND_ARGS, 0, false, string_array_valid,
	 "an array of strings"},
	{"unix_dirs", json_type_array, BPFBOX_UNIX_PREFIXES, BPFBOX_UNIX_PATH_LEN - 2, true,
	 string_array_valid, "at most 4 absolute paths shorter than 106 bytes"},
	{"labels", json_type_object, 0, 0, false, labels_valid,
	 "an object of at most 32 strings, keys up to 64 bytes, values up to 256"},
	{"writable", json_type_array, MAX_WRITABLE, PATH_MAX, true, string_array_valid,
	 "at most 256 absolute paths"},
	{"not_enforced", json_type_array, 64, 0, false, string_array_valid, "an array of strings"},
	{"net_allow", json_type_array, .want = "an array"},
	{"policy", json_type_object, .want = "an object"},
	{"level_requested", json_type_string, .want = "a string"},
	{"level_enabled", json_type_string, .want = "a string"},
	{"landlock_abi", json_type_int, .want = "an integer"},
	{"seccomp", json_type_boolean, .want = "a boolean"},
};

static bool string_array_valid(struct json_object *v, const struct reg_member *m)
{
	return ops_string_array(v, m->max, m->len_max, m->absolute);
}

/* Everything but the map entry and cgroup: those are undone by the caller. */
static int check_register(struct daemon *d, struct conn *c, struct json_object *req,
			  const char **id)
{
	int r;

	r = proto_get_str(req, "session", id);
	if (r == -ENOENT) {
		ops_reply_error(d, c, EINVAL, "register: 'session' is required");
		return -EINVAL;
	}
	if (r || !proto_session_id_valid(*id))
		return ops_bad_member(d, c, "register", "session", "32 lowercase hex digits");
	for (size_t i = 0; i < ARRAY_SIZE(reg_members); i++) {
		const struct reg_member *m = &reg_members[i];
		struct json_object *v;

		if (!json_object_object_get_ex(req, m->key, &v) || !v)
			continue; /* absent or null: as proto_get_*() */
		if (!json_object_is_type(v, m->type) || (m->valid && !m->valid(v, m)))
			return ops_bad_member(d, c, "register", m->key, m->want);
	}
	if (table_find(&d->table, *id)) {
		ops_reply_error(d, c, EEXIST, "register: session %s is already registered", *id);
		return -EEXIST;
	}
	return 0;
}

/*
 * Sessions per uid (--max-sessions-per-uid, root exempt) and the last
 * DAEMON_ROOT_SESSIONS slots kept for root: one user cannot block the others
 * or root. 0, or replied.
 */
static int session_quota(struct daemon *d, struct conn *c)
{
	unsigned int per_uid = d->o->max_sessions_per_uid ? d->o->max_sessions_per_uid
							  : DAEMON_SESSIONS_PER_UID;
	size_t mine = 0;

	if (c->peer.uid == 0)
		return 0;
	if (d->table.count >= BPFBOX_MAX_SESSIONS - DAEMON_ROOT_SESSIONS) {
		ops_reply_error(d, c, EBUSY,
				"busy: register: %zu sessions are running; the last %d "
				"are kept for root; end one first",
				d->table.count, DAEMON_ROOT_SESSIONS);
		return -EBUSY;
	}
	for (struct dsession *s = d->table.head; s; s = s->next)
		mine += s->uid == c->peer.uid;
	if (mine >= per_uid) {
		ops_reply_error(d, c, EDQUOT,
				"register: uid %u has %zu sessions, the daemon's "
				"--max-sessions-per-uid; end one first or raise it",
				c->peer.uid, mine);
		return -EDQUOT;
	}
	return 0;
}

/* The ceiling event: what was asked, by whom, which rule, what it did. */
static void ceiling_event(struct daemon *d, struct conn *c, const char *id,
			  const struct ceiling_rule *r, const char *action, const char *what)
{
	struct jsonw *w = &d->w;

	jsonw_reset(w);
	audit_begin(w, &d->clock, EV_CEILING, id, 0, now_ns());
	jsonw_u64(w, "pid", c->peer.pid);
	jsonw_u64(w, "uid", c->peer.uid);
	jsonw_str(w, "rule", r->name);
	jsonw_str(w, "action", action);
	jsonw_str(w, "reason", what);
	jsonw_end(w);
	jsonw_newline(w);
	if (!w->oom)
		ev_emit(d, NULL, EV_CEILING, w->buf, w->len);
	ev_flush(d);
}

/*
 * The operator's ceilings (docs/operating.md): a request above its rule is
 * refused, or its limits lowered when the rule clamps. No rule for a uid
 * while ceilings are set: refused (fail closed). -EPERM replied.
 */
static int hold_to_ceiling(struct daemon *d, struct conn *c, struct json_object *req,
			   const char *id)
{
	const struct ceiling_rule *r;
	struct json_object *pol;
	char what[256], why[512];
	int k;

	if (!d->ceilings.set || (c->peer.uid == 0 && d->ceilings.exempt_root))
		return 0;
	r = ceilings_match(&d->ceilings, c->peer.uid, c->peer.gid);
	if (!r) {
		ops_reply_error(d, c, EDQUOT,
				"register: refused: no ceiling rule of the daemon covers "
				"uid %u; ask the operator",
				c->peer.uid);
		dlog("session %s of uid %u refused: no ceiling rule covers it", id, c->peer.uid);
		return -EPERM;
	}
	if (proto_get_object(req, "policy", &pol) < 0) {
		ops_reply_error(d, c, EDQUOT,
				"register: refused by ceiling '%s': the request carries "
				"no policy to hold to it",
				r->name);
		return -EPERM;
	}
	k = ceiling_check(r, pol, what, sizeof(what), why, sizeof(why));
	if (k < 0) {
		ceiling_event(d, c, id, r, "refuse", why);
		dlog("session %s of uid %u refused: %s", id, c->peer.uid, why);
		ops_reply_error(d, c, EDQUOT,
				"register: refused by %s; ask for less or ask the operator", why);
		return -EPERM;
	}
	if (k > 0) {
		snprintf(why, sizeof(why), "ceiling '%s': lowered %s", r->name, what);
		ceiling_event(d, c, id, r, "clamp", why);
		/* The register's reply tells the client (its status line's "clamped"). */
		json_object_object_add(req, "clamped", json_object_new_string(why));
		dlog("session %s of uid %u: %s", id, c->peer.uid, why);
	}
	return 0;
}

/*
 * What a session keeps of its command (in session.start, its replay and
 * list): DAEMON_COMMAND_MAX bytes of strings; past that the arguments are
 * cut and "command_truncated" says so. A request may be 64 KiB; 4096 of
 * them would hold the daemon's memory and make list too long to answer.
 */
static void bound_command(struct json_object *req)
{
	struct json_object *cmd, *cut;
	size_t n, used = 0;

	if (proto_get_array(req, "command", &cmd) < 0)
		return;
	n = json_object_array_length(cmd);
	for (size_t i = 0; i < n; i++)
		used += json_object_get_string_len(json_object_array_get_idx(cmd, i)) + 1;
	if (used <= DAEMON_COMMAND_MAX)
		return;
	cut = json_object_new_array();
	used = 0;
	for (size_t i = 0; i < n && used < DAEMON_COMMAND_MAX; i++) {
		struct json_object *v = json_object_array_get_idx(cmd, i);
		size_t len = json_object_get_string_len(v);

		if (len > DAEMON_COMMAND_MAX - used)
			len = DAEMON_COMMAND_MAX - used;
		json_object_array_add(cut,
				      json_object_new_string_len(json_object_get_string(v), len));
		used += len + 1;
	}
	json_object_object_add(req, "command", cut);
	json_object_object_add(req, "command_truncated", json_object_new_boolean(1));
}

/*
 * The command and the policy's env values redacted before anything keeps
 * them (session.start, list, the cgroup's record): as the embedded mode
 * writes them. A command that cannot be redacted is not kept at all.
 */
static void redact_request(struct json_object *req)
{
	struct json_object *cmd, *pol;

	if (proto_get_array(req, "command", &cmd) == 0) {
		struct json_object *red = audit_redact_command(cmd);

		if (red)
			json_object_object_add(req, "command", red);
		else
			json_object_object_del(req, "command");
	}
	if (proto_get_object(req, "policy", &pol) == 0)
		audit_redact_env(pol);
}

/* No BPF LSM for the session: the rules only it enforces are not enforced. */
void ops_register_lsm_only(struct json_object *req)
{
	struct json_object *lsm_only, *ne;
	size_t n;

	if (proto_get_array(req, "lsm_only", &lsm_only))
		return;
	if (proto_get_array(req, "not_enforced", &ne)) {
		ne = json_object_new_array();
		json_object_object_add(req, "not_enforced", ne);
	}
	n = json_object_array_length(lsm_only);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(ne, json_object_get(json_object_array_get_idx(lsm_only, i)));
}

/*
 * The checks before anything is made; 0, or -1 when replied. With
 * "prepared" and a cgroup made ahead, *id becomes its name (in pick, 33
 * bytes) before the ceiling's events name the session.
 */
int ops_register_check(struct daemon *d, struct conn *c, struct json_object *req, const char **id,
		       char *pick, uint32_t *flags, int64_t *pid)
{
	const char *next = cgroup_pool_next(&d->pool);
	bool prepared = false;

	*pid = 0;
	if (check_register(d, c, req, id) < 0 || parse_flags(d, c, req, flags) < 0 ||
	    session_quota(d, c) < 0)
		return -1;
	if (proto_get_bool(req, "prepared", &prepared) == -EINVAL)
		return ops_bad_member(d, c, "register", "prepared", "a boolean");
	if (prepared && next) {
		snprintf(pick, SESSION_NAME_LEN + 1, "%s", next);
		*id = pick;
	}
	if (hold_to_ceiling(d, c, req, *id) < 0)
		return -1;
	if (json_object_object_get_ex(req, "pid", NULL) &&
	    (proto_get_int(req, "pid", pid) || !ops_valid_pid(*pid)))
		return ops_bad_member(d, c, "register", "pid", "a process id");
	redact_request(req);
	bound_command(req);
	return 0;
}
