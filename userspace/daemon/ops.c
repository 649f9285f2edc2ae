// SPDX-License-Identifier: GPL-2.0
/*
 * The requests of docs/daemon.md and the life of a session in the daemon:
 * register (cgroup + map entry, no program load), attach (move a child of
 * the peer into the cgroup), unregister (kill, drain, flush, end), list,
 * subscribe; and re-adoption of the sessions a previous daemon left.
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
#include "metrics.h"
#include "../agent/agent.h"
#include "../agent/cgroup.h"
#include "../audit/sink.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../policy/rules.h"
#include "../lib/util.h"
#include "../net/egress.h"

/* The largest limit or count a request may carry (as policy files: 2^40). */
#define DAEMON_COUNT_MAX (1LL << 40)

#define META_XATTR "trusted.bpfbox" /* owner of a session cgroup, for re-adoption */
#define MAX_COMMAND_ARGS 4096
#define MAX_NET_RULES	 256
#define MAX_LSM_RULES	 1024 /* deny patterns, and exec_deny entries */
#define MAX_WRITABLE	 256  /* directories of the writable set */
#define META_MAX	 65536 /* the trusted.bpfbox xattr */
#define END_WAIT_MS	 1000 /* then the end is retried every tick */
#define ENDED_KEPT	 256  /* ended session ids remembered, for clear errors */
/* Subscription bit of session.paused, session.resumed, session.killed. */

static char ended_ids[ENDED_KEPT][DAEMON_SESSION_ID_LEN + 1];
static unsigned int ended_next;

static bool ended_recently(const char *id)
{
	for (unsigned int i = 0; i < ENDED_KEPT; i++)
		if (streq(ended_ids[i], id))
			return true;
	return false;
}

static int64_t real_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void reply_error(struct daemon *d, struct conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void reply_error(struct daemon *d, struct conn *c, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jsonw_reset(&d->rw);
	proto_error(&d->rw, err, "%s", msg);
	if (!d->rw.oom)
		conn_queue(d, c, d->rw.buf, d->rw.len);
}

/* ENOENT with "ended": true, which the client API tells apart (DAEMON_ENDED). */
static void reply_ended(struct daemon *d, struct conn *c, const char *op, const char *id)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "%s: session %s has already ended", op, id);
	jsonw_reset(&d->rw);
	jsonw_begin(&d->rw);
	jsonw_bool(&d->rw, "ok", false);
	jsonw_str(&d->rw, "error", msg);
	jsonw_str(&d->rw, "code", "ENOENT");
	jsonw_bool(&d->rw, "ended", true);
	jsonw_end(&d->rw);
	jsonw_newline(&d->rw);
	if (!d->rw.oom)
		conn_queue(d, c, d->rw.buf, d->rw.len);
}

/* Starts {"ok":true in d->rw; the caller adds members and calls reply_send. */
static struct jsonw *reply_begin(struct daemon *d)
{
	jsonw_reset(&d->rw);
	jsonw_begin(&d->rw);
	jsonw_bool(&d->rw, "ok", true);
	return &d->rw;
}

static void reply_send(struct daemon *d, struct conn *c)
{
	jsonw_end(&d->rw);
	jsonw_newline(&d->rw);
	if (d->rw.oom) {
		reply_error(d, c, ENOMEM, "out of memory building the reply");
		return;
	}
	conn_queue(d, c, d->rw.buf, d->rw.len);
}

/* Type errors name the member, so that a client author sees what to fix. */
static int bad_member(struct daemon *d, struct conn *c, const char *op, const char *key,
		      const char *want)
{
	reply_error(d, c, EINVAL, "%s: '%s' must be %s", op, key, want);
	return -EINVAL;
}

/* The session named by the request's "session", owned by the peer. */
static struct dsession *request_session(struct daemon *d, struct conn *c, struct json_object *req,
					const char *op)
{
	struct dsession *s;
	const char *id;
	int r = proto_get_str(req, "session", &id);

	if (r == -ENOENT) {
		reply_error(d, c, EINVAL, "%s: 'session' is required", op);
		return NULL;
	}
	if (r || !proto_session_id_valid(id)) {
		bad_member(d, c, op, "session", "32 lowercase hex digits");
		return NULL;
	}
	s = table_find(&d->table, id);
	if (!s) {
		if (ended_recently(id))
			reply_ended(d, c, op, id);
		else
			reply_error(d, c, ENOENT, "%s: unknown session %s", op, id);
		return NULL;
	}
	if (c->peer.uid != 0 && c->peer.uid != s->uid) {
		reply_error(d, c, EPERM, "%s: session %s belongs to another user", op, id);
		return NULL;
	}
	return s;
}

/* Strings only, at most max of them, each shorter than len_max (0: any). */
static bool string_array(struct json_object *arr, size_t max, size_t len_max, bool absolute)
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

/* --label pairs of the client (docs/runtime.md): bounded, strings only. */
static bool labels_valid(struct json_object *o)
{
	if (json_object_object_length(o) > 32)
		return false;
	json_object_object_foreach(o, key, val) {
		if (!*key || strlen(key) > 64 || !json_object_is_type(val, json_type_string) ||
		    json_object_get_string_len(val) > 256)
			return false;
	}
	return true;
}

/*
 * Owner and start of a session, and its BPF LSM lists (lsm: a JSON object
 * {"deny":[...],"exec_deny":[...]}, may be NULL), kept on its cgroup for
 * the next daemon, which writes the lists again at re-adoption.
 */
static void write_meta(struct dsession *s, struct json_object *lsm)
{
	struct jsonw w = { 0 };
	const char *l = lsm ? json_object_to_json_string_ext(lsm, JSON_C_TO_STRING_PLAIN) : NULL;

	jsonw_begin(&w);
	jsonw_u64(&w, "uid", s->uid);
	jsonw_u64(&w, "pid", s->client_pid);
	jsonw_i64(&w, "start_ns", s->start_real_ns);
	if (s->level[0])
		jsonw_str(&w, "level", s->level);
	if (s->command && strlen(s->command) < 3000)
		jsonw_raw(&w, "command", s->command);
	if (l && strlen(l) < META_MAX - 4096)
		jsonw_raw(&w, "lsm", l);
	else if (l)
		dlog("session %s: its BPF LSM lists are too long to keep on its cgroup; a "
		     "restarted daemon finds them in the pinned maps only", s->id);
	jsonw_end(&w);
	if (!w.oom && setxattr(s->cgroup, META_XATTR, w.buf, w.len, 0) < 0)
		dlog("cannot record the owner of session %s on its cgroup: %s; after a restart "
		     "only root may manage it", s->id, strerror(errno));
	jsonw_free(&w);
}

/* The strings of arr (checked by string_array) as a vector; NULL if none. */
static const char **strings_of(struct json_object *arr, size_t *n)
{
	const char **v;

	*n = arr ? json_object_array_length(arr) : 0;
	if (!*n)
		return NULL;
	v = calloc(*n, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < *n; i++)
		v[i] = json_object_get_string(json_object_array_get_idx(arr, i));
	return v;
}

/*
 * The deny and exec_deny lists of lsm ({"deny":[...],"exec_deny":[...]})
 * into the BPF LSM maps for session index. -errno, *bad the entry at fault.
 */
static int apply_lsm(struct daemon *d, uint32_t index, struct json_object *lsm, const char **bad)
{
	struct json_object *deny = NULL, *exec = NULL;
	const char **dv = NULL, **ev = NULL;
	size_t nd = 0, ne = 0;
	int r;

	*bad = NULL;
	if (!lsm)
		return 0;
	if (proto_get_array(lsm, "deny", &deny) == 0 &&
	    !string_array(deny, MAX_LSM_RULES, BPFBOX_PATH_LEN, false))
		return -EINVAL;
	if (proto_get_array(lsm, "exec_deny", &exec) == 0 &&
	    !string_array(exec, MAX_LSM_RULES, BPFBOX_PATH_LEN, false))
		return -EINVAL;
	dv = strings_of(deny, &nd);
	ev = strings_of(exec, &ne);
	if ((nd && !dv) || (ne && !ev))
		r = -ENOMEM;
	else
		r = agent_session_lsm(d->agent, index, dv, nd, ev, ne, bad);
	free(dv);
	free(ev);
	return r;
}

/* The request's not_enforced without what the BPF LSM fills (gap flags). */
static void drop_filled(struct json_object *req, uint32_t flags)
{
	struct json_object *ne, *kept;

	if (!(flags & BPFBOX_SF_GAP_SCOPE) || proto_get_array(req, "not_enforced", &ne) != 0)
		return;
	kept = json_object_new_array();
	for (size_t i = 0; kept && i < json_object_array_length(ne); i++) {
		struct json_object *v = json_object_array_get_idx(ne, i);
		char buf[512];

		snprintf(buf, sizeof(buf), "%s", json_object_get_string(v));
		agent_gaps_filled(buf, flags);
		if (buf[0])
			json_object_array_add(kept, json_object_new_string(buf));
	}
	if (kept)
		json_object_object_add(req, "not_enforced", kept);
}

static bool full_access(struct json_object *req)
{
	struct json_object *pol;
	const char *mode;

	return proto_get_object(req, "policy", &pol) == 0 &&
	       proto_get_str(pol, "mode", &mode) == 0 && streq(mode, "full-access");
}

/*
 * The writable set ("writable", else "unix_dirs") into the BPF LSM by inode;
 * the keys written are kept in s, to delete them at the end.
 */
static int apply_writable(struct daemon *d, struct dsession *s, uint32_t index,
			  struct json_object *req)
{
	struct json_object *v = NULL;
	const char **dirs;
	size_t n;
	int r;

	if (proto_get_array(req, "writable", &v) != 0 && proto_get_array(req, "unix_dirs", &v) != 0)
		return 0;
	dirs = strings_of(v, &n);
	if (n && !dirs)
		return -ENOMEM;
	free(s->wkeys);
	s->nwkeys = 0;
	s->wkeys = n ? calloc(n, sizeof(*s->wkeys)) : NULL;
	r = n && !s->wkeys ? -ENOMEM
			   : agent_session_writable(d->agent, index, dirs, n, s->wkeys, &s->nwkeys);
	free(dirs);
	return r;
}

/*
 * Removes the session's BPF LSM entries: key by key from the lists it was
 * given (a daemon with many sessions ends each at the cost of its own
 * entries), else by walking the maps (an adopted session of an older
 * daemon, whose lists were not kept).
 */
static void remove_lsm(struct daemon *d, struct dsession *s)
{
	struct json_object *deny = NULL, *exec = NULL;
	const char **dv, **ev;
	size_t nd, ne;

	agent_session_cmd_rules(d->agent, s->index, NULL); /* -ENOTSUP without it */
	if (!s->lsm_lists) {
		agent_session_lsm_clear(d->agent, s->index);
		return;
	}
	proto_get_array(s->lsm_lists, "deny", &deny);
	proto_get_array(s->lsm_lists, "exec_deny", &exec);
	dv = strings_of(deny, &nd);
	ev = strings_of(exec, &ne);
	if ((nd && !dv) || (ne && !ev))
		agent_session_lsm_clear(d->agent, s->index);
	else
		agent_session_lsm_remove(d->agent, s->index, dv, nd, ev, ne, s->wkeys, s->nwkeys);
	free(dv);
	free(ev);
}

static void read_meta(struct daemon *d, struct dsession *s)
{
	char *buf = malloc(META_MAX);
	struct json_object *o, *v;
	ssize_t n = buf ? getxattr(s->cgroup, META_XATTR, buf, META_MAX - 1) : -1;
	const char *str, *bad;
	struct stat st;
	int64_t i;
	int r;

	s->uid = 0;
	if (stat(s->cgroup, &st) == 0)
		s->start_real_ns = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
	if (n <= 0) {
		free(buf);
		return;
	}
	buf[n] = '\0';
	o = json_tokener_parse(buf);
	free(buf);
	if (!o)
		return;
	if (proto_get_str(o, "level", &str) == 0)
		snprintf(s->level, sizeof(s->level), "%s", str);
	/*
	 * Its BPF LSM lists again: the pinned maps normally hold them still
	 * (adding is idempotent), but an earlier daemon that ran without the
	 * BPF LSM, or lost a pin, left them nowhere else.
	 */
	if (proto_get_object(o, "lsm", &v) == 0 && agent_status(d->agent)->lsm) {
		r = apply_lsm(d, s->index, v, &bad);
		if (!r && (s->flags & BPFBOX_SF_GAP_META))
			r = apply_writable(d, s, s->index, v);
		if (!r)
			s->lsm_lists = json_object_get(v);
		if (r < 0)
			dlog("session %s: cannot restore its BPF LSM policy%s%s: %s", s->id,
			     bad ? " at " : "", bad ? bad : "", strerror(-r));
		s->lsm = r == 0;
	}
	if (proto_get_int(o, "uid", &i) == 0 && i >= 0)
		s->uid = i;
	if (proto_get_int(o, "pid", &i) == 0 && i > 0)
		s->client_pid = i;
	if (proto_get_int(o, "start_ns", &i) == 0)
		s->start_real_ns = i;
	if (proto_get_array(o, "command", &v) == 0 && string_array(v, MAX_COMMAND_ARGS, 0, false))
		s->command = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

/* The optional connect allow-list: [{"cidr":"10.0.0.0/8","ports":[lo,hi]}]. */
static int add_net_rules(struct daemon *d, struct conn *c, struct dsession *s,
			 struct json_object *rules)
{
	size_t n = json_object_array_length(rules);

	if (n > MAX_NET_RULES)
		return bad_member(d, c, "register", "net_allow", "at most 256 rules");
	for (size_t i = 0; i < n; i++) {
		struct json_object *rule = json_object_array_get_idx(rules, i), *ports;
		int64_t lo = 0, hi = 65535;
		const char *cidr;
		int r;

		if (!json_object_is_type(rule, json_type_object) ||
		    proto_get_str(rule, "cidr", &cidr))
			return bad_member(d, c, "register", "net_allow",
					  "an array of {\"cidr\": \"ADDR/LEN\", \"ports\": [LO, HI]}");
		if (proto_get_array(rule, "ports", &ports) == 0) {
			struct json_object *a = json_object_array_get_idx(ports, 0);
			struct json_object *b = json_object_array_get_idx(ports, 1);

			if (json_object_array_length(ports) != 2 || !json_object_is_type(a, json_type_int) ||
			    !json_object_is_type(b, json_type_int))
				return bad_member(d, c, "register", "net_allow[].ports", "[LO, HI]");
			lo = json_object_get_int64(a);
			hi = json_object_get_int64(b);
			if (lo < 0 || hi > 65535 || lo > hi)
				return bad_member(d, c, "register", "net_allow[].ports",
						  "a range within 0-65535");
		}
		r = agent_net_allow(d->agent, s->index, cidr, lo, hi);
		if (r == -EINVAL)
			return bad_member(d, c, "register", "net_allow[].cidr", "ADDR/LEN, v4 or v6");
		if (r < 0) {
			reply_error(d, c, -r, "register: cannot add the connect allow-list: %s",
				    strerror(-r));
			return r;
		}
	}
	return 0;
}

/* A JSON array of strings into a strv (rules checked by their users). */
static int strv_of(struct json_object *a, struct strv *out)
{
	size_t n = json_object_array_length(a);

	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);

		if (!json_object_is_type(v, json_type_string) ||
		    strv_push(out, json_object_get_string(v)) < 0)
			return -EINVAL;
	}
	return 0;
}

/*
 * Egress by name (docs/network.md): "net_hosts" (allow rules with names),
 * "net_deny" (exceptions: names, addresses, CIDRs) and "net_resolver" start
 * the session's proxy and resolver; *proxy and *dns get their ports.
 */
static int start_egress(struct daemon *d, struct conn *c, struct dsession *s,
			struct json_object *req, uint16_t *proxy, uint16_t *dns)
{
	struct strv allow = { 0 }, deny = { 0 };
	struct egress_opts o = { .cgroup_id = s->cgroup_id, .session = s->index,
				 .allow = &allow, .deny = &deny };
	struct agent_egress_fds f;
	struct json_object *v;
	char err[256];
	int r = 0;

	*proxy = *dns = 0;
	r = proto_get_array(req, "net_hosts", &v);
	if (r == -EINVAL || (r == 0 && strv_of(v, &allow) < 0)) {
		r = bad_member(d, c, "register", "net_hosts", "an array of HOST[:PORT[-PORT]]");
		goto out;
	}
	r = proto_get_array(req, "net_deny", &v);
	if (r == -EINVAL || (r == 0 && strv_of(v, &deny) < 0)) {
		r = bad_member(d, c, "register", "net_deny", "an array of HOST[:PORT[-PORT]]");
		goto out;
	}
	r = 0;
	if (proto_get_str(req, "net_resolver", &o.resolver) == -EINVAL) {
		r = bad_member(d, c, "register", "net_resolver", "ADDR[:PORT]");
		goto out;
	}
	if (!egress_has_names(&allow))
		goto out;
	if (agent_egress_fds(d->agent, &f) < 0) {
		reply_error(d, c, ENOTSUP, "register: name rules need the daemon's own network "
					   "programs (adopted ones have no proxy maps); restart it "
					   "with --cleanup first");
		r = -ENOTSUP;
		goto out;
	}
	o.orig_fd = f.orig;
	o.resolved_fd = f.resolved;
	o.dns_client_fd = f.dns_client;
	o.emit_fd = f.emit;
	r = egress_start(&s->egress, &o, err, sizeof(err));
	if (r < 0) {
		reply_error(d, c, r == -EINVAL ? EINVAL : -r, "register: %s", err);
		goto out;
	}
	*proxy = egress_proxy_port(s->egress);
	*dns = egress_dns_port(s->egress);
out:
	strv_clear(&allow);
	strv_clear(&deny);
	return r;
}

/* The net_deny addresses and CIDRs: holes in the BPF allow-list. */
static int add_net_holes(struct daemon *d, struct conn *c, struct dsession *s,
			 struct json_object *req)
{
	struct json_object *v;
	size_t n;

	if (proto_get_array(req, "net_deny", &v) < 0)
		return 0;
	n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		const char *rule = json_object_get_string(json_object_array_get_idx(v, i));
		char cidr[64];
		uint16_t lo, hi;
		int r;

		if (!rule || net_rule_parse(rule, cidr, sizeof(cidr), &lo, &hi) < 0)
			continue;
		r = agent_net_hole(d->agent, s->index, cidr);
		if (r < 0) {
			reply_error(d, c, -r, "register: cannot add the net_deny rule '%s': %s", rule,
				    strerror(-r));
			return r;
		}
	}
	return 0;
}

static int parse_flags(struct daemon *d, struct conn *c, struct json_object *req, uint32_t *flags)
{
	const char *net = "deny", *mode = "aggregate";
	bool landlock = false, meta = false, mount_ro = false;
	int r;

	if ((r = proto_get_str(req, "net", &net)) == -EINVAL ||
	    (!r && !streq(net, "deny") && !streq(net, "allow")))
		return bad_member(d, c, "register", "net", "\"deny\" or \"allow\"");
	if ((r = proto_get_str(req, "audit_mode", &mode)) == -EINVAL ||
	    (!r && !streq(mode, "aggregate") && !streq(mode, "all") && !streq(mode, "off")))
		return bad_member(d, c, "register", "audit_mode", "\"aggregate\", \"all\" or \"off\"");
	if (proto_get_bool(req, "landlock", &landlock) == -EINVAL)
		return bad_member(d, c, "register", "landlock", "a boolean");
	if (proto_get_bool(req, "allow_metadata", &meta) == -EINVAL)
		return bad_member(d, c, "register", "allow_metadata", "a boolean");
	if (proto_get_bool(req, "mount_ro", &mount_ro) == -EINVAL)
		return bad_member(d, c, "register", "mount_ro", "a boolean");
	*flags = 0;
	if (streq(net, "deny"))
		*flags |= BPFBOX_SF_NET_DENY;
	if (streq(mode, "all"))
		*flags |= BPFBOX_SF_AUDIT_ALL;
	if (streq(mode, "off"))
		*flags |= BPFBOX_SF_AUDIT_OFF;
	if (landlock)
		*flags |= BPFBOX_SF_LANDLOCK;
	if (meta)
		*flags |= BPFBOX_SF_ALLOW_META;
	if (mount_ro)
		*flags |= BPFBOX_SF_MOUNT_RO;
	if (agent_status(d->agent)->net)
		*flags |= BPFBOX_SF_NET_BPF;
	return 0;
}

/* Everything but the map entry and cgroup: those are undone by the caller. */
static int check_register(struct daemon *d, struct conn *c, struct json_object *req,
			  const char **id)
{
	struct json_object *v;
	const char *str;
	int64_t i;
	bool b;
	int r;

	r = proto_get_str(req, "session", id);
	if (r == -ENOENT) {
		reply_error(d, c, EINVAL, "register: 'session' is required");
		return -EINVAL;
	}
	if (r || !proto_session_id_valid(*id))
		return bad_member(d, c, "register", "session", "32 lowercase hex digits");
	if ((r = proto_get_array(req, "command", &v)) == -EINVAL ||
	    (!r && !string_array(v, MAX_COMMAND_ARGS, 0, false)))
		return bad_member(d, c, "register", "command", "an array of strings");
	if ((r = proto_get_array(req, "unix_dirs", &v)) == -EINVAL ||
	    (!r && !string_array(v, BPFBOX_UNIX_PREFIXES, BPFBOX_UNIX_PATH_LEN - 2, true)))
		return bad_member(d, c, "register", "unix_dirs",
				  "at most 4 absolute paths shorter than 106 bytes");
	if ((r = proto_get_object(req, "labels", &v)) == -EINVAL || (!r && !labels_valid(v)))
		return bad_member(d, c, "register", "labels",
				  "an object of at most 32 strings, keys up to 64 bytes, values up to 256");
	if ((r = proto_get_array(req, "writable", &v)) == -EINVAL ||
	    (!r && !string_array(v, MAX_WRITABLE, PATH_MAX, true)))
		return bad_member(d, c, "register", "writable",
				  "at most 256 absolute paths");
	if ((r = proto_get_array(req, "not_enforced", &v)) == -EINVAL ||
	    (!r && !string_array(v, 64, 0, false)))
		return bad_member(d, c, "register", "not_enforced", "an array of strings");
	if (proto_get_array(req, "net_allow", &v) == -EINVAL)
		return bad_member(d, c, "register", "net_allow", "an array");
	if (proto_get_object(req, "policy", &v) == -EINVAL)
		return bad_member(d, c, "register", "policy", "an object");
	if (proto_get_str(req, "level_requested", &str) == -EINVAL)
		return bad_member(d, c, "register", "level_requested", "a string");
	if (proto_get_str(req, "level_enabled", &str) == -EINVAL)
		return bad_member(d, c, "register", "level_enabled", "a string");
	if (proto_get_int(req, "landlock_abi", &i) == -EINVAL)
		return bad_member(d, c, "register", "landlock_abi", "an integer");
	if (proto_get_bool(req, "seccomp", &b) == -EINVAL)
		return bad_member(d, c, "register", "seccomp", "a boolean");
	if (table_find(&d->table, *id)) {
		reply_error(d, c, EEXIST, "register: session %s is already registered", *id);
		return -EEXIST;
	}
	return 0;
}

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
	struct policy_limits pl = { .memory_mb = 2048, .pids = 64, .cpu_percent = 100,
				    .disk_mb = 1024 };
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
	limits_plan(&s->lim, &pl, d->parent, LIMITS_VIA_CGROUP);
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

/*
 * Full unless the client asked for less: the daemon's BPF LSM takes the
 * session's deny and exec_deny lists (docs/lsm.md).
 */
static bool want_lsm(struct json_object *req)
{
	const char *lvl;

	return proto_get_str(req, "level_requested", &lvl) != 0 || streq(lvl, "Full");
}

/* {"deny":policy.deny,"exec_deny":policy.exec_deny} in *out (put by the caller). */
static struct json_object *lsm_lists(struct json_object *req, struct json_object **out)
{
	struct json_object *pol, *v;

	*out = json_object_new_object();
	if (!*out)
		return NULL;
	if (proto_get_object(req, "policy", &pol) != 0)
		pol = NULL;
	if (pol && json_object_object_get_ex(pol, "deny", &v))
		json_object_object_add(*out, "deny", json_object_get(v));
	if (pol && json_object_object_get_ex(pol, "exec_deny", &v))
		json_object_object_add(*out, "exec_deny", json_object_get(v));
	if (json_object_object_get_ex(req, "writable", &v) ||
	    json_object_object_get_ex(req, "unix_dirs", &v))
		json_object_object_add(*out, "writable", json_object_get(v));
	return *out;
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
		reply_error(d, c, EBUSY, "busy: register: %zu sessions are running; the last %d "
			    "are kept for root; end one first", d->table.count,
			    DAEMON_ROOT_SESSIONS);
		return -EBUSY;
	}
	for (struct dsession *s = d->table.head; s; s = s->next)
		mine += s->uid == c->peer.uid;
	if (mine >= per_uid) {
		reply_error(d, c, EDQUOT, "register: uid %u has %zu sessions, the daemon's "
			    "--max-sessions-per-uid; end one first or raise it", c->peer.uid,
			    mine);
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
	audit_begin(w, &d->clock, "ceiling", id, 0, now_ns());
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
		reply_error(d, c, EDQUOT, "register: refused: no ceiling rule of the daemon covers "
					 "uid %u; ask the operator", c->peer.uid);
		dlog("session %s of uid %u refused: no ceiling rule covers it", id, c->peer.uid);
		return -EPERM;
	}
	if (proto_get_object(req, "policy", &pol) < 0) {
		reply_error(d, c, EDQUOT, "register: refused by ceiling '%s': the request carries "
					 "no policy to hold to it", r->name);
		return -EPERM;
	}
	k = ceiling_check(r, pol, what, sizeof(what), why, sizeof(why));
	if (k < 0) {
		ceiling_event(d, c, id, r, "refuse", why);
		dlog("session %s of uid %u refused: %s", id, c->peer.uid, why);
		reply_error(d, c, EDQUOT, "register: refused by %s; ask for less or ask the operator",
			    why);
		return -EPERM;
	}
	if (k > 0) {
		snprintf(why, sizeof(why), "ceiling '%s': lowered %s", r->name, what);
		ceiling_event(d, c, id, r, "clamp", why);
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
		json_object_array_add(cut, json_object_new_string_len(json_object_get_string(v),
								      len));
		used += len + 1;
	}
	json_object_object_add(req, "command", cut);
	json_object_object_add(req, "command_truncated", json_object_new_boolean(1));
}

/* `bpfbox daemon reload`: root only, like SIGHUP. */
static void op_reload(struct daemon *d, struct conn *c)
{
	char why[PATH_MAX + 1024];

	if (c->peer.uid != 0) {
		reply_error(d, c, EPERM, "reload: only root may reload the daemon's configuration");
		return;
	}
	if (daemon_reload(d, why, sizeof(why)) < 0) {
		reply_error(d, c, EINVAL, "reload refused: %s", why);
		return;
	}
	reply_begin(d);
	jsonw_u64(&d->rw, "sinks", d->nsink_cfg);
	jsonw_u64(&d->rw, "ceiling_rules", d->ceilings.n);
	reply_send(d, c);
}

static void op_register(struct daemon *d, struct conn *c, struct json_object *req)
{
	const struct agent_status *st = agent_status(d->agent);
	struct session_cgroup cg;
	struct dsession *s = NULL;
	struct json_object *v, *lsm = NULL;
	const char *id, *str, *bad;
	uint32_t flags, index;
	uint16_t proxy = 0, dns = 0;
	bool in_map = false;
	int r;

	if (check_register(d, c, req, &id) < 0 || parse_flags(d, c, req, &flags) < 0 ||
	    session_quota(d, c) < 0 || hold_to_ceiling(d, c, req, id) < 0)
		return;
	bound_command(req);
	index = table_free_index(&d->table);
	if (!index) {
		reply_error(d, c, ENOSPC, "register: %d sessions are running; end one first",
			    BPFBOX_MAX_SESSIONS);
		return;
	}
	r = session_cgroup_create(d->parent, id, &cg);
	if (r < 0) {
		reply_error(d, c, -r, "register: cannot create the cgroup %s/%s: %s", d->parent, id,
			    strerror(-r));
		return;
	}
	close(cg.procs_fd);
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		goto fail;
	}
	ev_flood_init(d, s);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->cgroup, sizeof(s->cgroup), "%s", cg.path);
	s->index = index;
	s->cgroup_id = cg.id;
	s->flags = flags;
	s->client_pid = c->peer.pid;
	s->uid = c->peer.uid;
	s->owner = c->serial;
	s->state = DS_REGISTERED;
	s->start_real_ns = real_now_ns();
	if (proto_get_array(req, "command", &v) == 0)
		s->command = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	s->command_truncated = json_object_object_get_ex(req, "command_truncated", NULL);
	/*
	 * The BPF LSM policy goes in before the session's map entry: the
	 * programs never see the session without it.
	 */
	if (want_lsm(req)) {
		r = apply_lsm(d, index, lsm_lists(req, &lsm), &bad);
		if (r == -EINVAL || r == -ENAMETOOLONG) {
			if (bad)
				reply_error(d, c, EINVAL, "register: the BPF LSM cannot express '%s'%s; "
					    "see docs/config.md for the forms of deny and exec_deny",
					    bad, r == -ENAMETOOLONG ? " (too long or too deep)" : "");
			else
				bad_member(d, c, "register", "policy.deny and policy.exec_deny",
					   "arrays of at most 1024 strings shorter than 256 bytes");
			goto undo;
		}
		if (r < 0)
			goto fail;
		s->lsm = st->lsm;
		if (s->lsm)
			s->lsm_lists = json_object_get(lsm);
		if (s->lsm && !full_access(req)) {
			int64_t abi = 0;

			proto_get_int(req, "landlock_abi", &abi);
			if (!(flags & BPFBOX_SF_LANDLOCK))
				abi = 0;
			s->flags = flags |= agent_gap_flags(d->agent, abi);
			drop_filled(req, flags);
			r = apply_writable(d, s, index, req);
			if (r < 0)
				goto fail;
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
	/* The command rules (bpf/cmd.bpf.c) go in before the session's map entry too. */
	if (st->cmd && json_object_object_get_ex(req, "policy", &v)) {
		struct bpfbox_cmd_table *t = malloc(sizeof(*t));

		r = t ? rules_compile_json(v, t) : -ENOMEM;
		if (!r && t->n)
			r = agent_session_cmd_rules(d->agent, index, t);
		if (!r && t->n)
			s->flags = flags |= BPFBOX_SF_CMD_RULES;
		free(t);
		if (r == -EINVAL || r == -E2BIG) {
			bad_member(d, c, "register", "policy.deny_commands and policy.commands",
				   "at most 64 patterns and rules of the forms of docs/config.md");
			goto undo;
		}
		if (r < 0)
			goto fail;
	}
	if (start_egress(d, c, s, req, &proxy, &dns) < 0)
		goto undo; /* replied */
	r = agent_session_add_egress(d->agent, cg.id, index, flags, proxy, dns);
	if (r < 0)
		goto fail;
	in_map = true;
	if (proto_get_array(req, "net_allow", &v) == 0 && add_net_rules(d, c, s, v) < 0)
		goto undo; /* replied */
	if (add_net_holes(d, c, s, req) < 0)
		goto undo; /* replied */
	if (st->net && proto_get_array(req, "unix_dirs", &v) == 0) {
		const char *dirs[BPFBOX_UNIX_PREFIXES];
		size_t n = json_object_array_length(v);

		for (size_t i = 0; i < n; i++)
			dirs[i] = json_object_get_string(json_object_array_get_idx(v, i));
		r = agent_unix_allow(d->agent, index, dirs, n);
		if (r < 0)
			goto fail;
	}
	r = table_add(&d->table, s);
	if (r < 0)
		goto fail;
	write_meta(s, s->lsm ? lsm : NULL);
	apply_limits(d, s, req);
	ev_session_start(d, s, req);
	dlog("session %s registered by pid %d uid %u: index %u, cgroup %s", s->id, s->client_pid,
	     s->uid, s->index, s->cgroup);
	reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_u64(&d->rw, "index", s->index);
	jsonw_str(&d->rw, "cgroup", s->cgroup);
	jsonw_object_begin(&d->rw, "layers");
	jsonw_bool(&d->rw, "bpf_audit", st->audit);
	jsonw_bool(&d->rw, "bpf_network", st->net);
	jsonw_bool(&d->rw, "bpf_unix_connect", st->unix_connect);
	jsonw_bool(&d->rw, "bpf_lsm", s->lsm);
	jsonw_bool(&d->rw, "cmd_rules", s->flags & BPFBOX_SF_CMD_RULES);
	jsonw_end(&d->rw);
	if (s->level[0])
		jsonw_str(&d->rw, "level_enabled", s->level);
	if (proxy)
		jsonw_u64(&d->rw, "proxy_port", proxy);
	limits_json(&s->lim, &d->rw, "limits");
	reply_send(d, c);
	json_object_put(lsm);
	return;
fail:
	reply_error(d, c, -r, "register: %s", strerror(-r));
undo:
	if (in_map) {
		agent_session_remove(d->agent, cg.id, NULL, NULL);
		agent_net_clear(d->agent, index);
	}
	agent_session_lsm_clear(d->agent, index);
	agent_session_cmd_rules(d->agent, index, NULL);
	rmdir(cg.path);
	if (s) {
		egress_stop(s->egress);
		free(s->command);
		json_object_put(s->lsm_lists);
		free(s->wkeys);
		free(s);
	}
	json_object_put(lsm);
}

/* The parent pid of pid from /proc/PID/stat (the name may hold ')'). */
static int parent_of(pid_t pid, pid_t *ppid)
{
	char path[64], buf[1024], *p;
	int r, pp;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	r = read_file_str(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &pp) != 1)
		return -EINVAL;
	*ppid = pp;
	return 0;
}

/* Whether the process of a pidfd is not reaped yet (-1: no pidfd support, true). */
static bool pidfd_runs(int pidfd)
{
	return pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 ||
	       errno != ESRCH;
}

static void op_attach(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = request_session(d, c, req, "attach");
	char path[PATH_MAX + 32], num[24];
	int target = -1;
	pid_t ppid;
	int64_t pid;
	int r;

	if (!s)
		return;
	r = proto_get_int(req, "pid", &pid);
	if (r || pid <= 0 || pid > 0x3fffffff) {
		bad_member(d, c, "attach", "pid", "a process id");
		return;
	}
	if (s->state == DS_ENDING) {
		reply_error(d, c, ESRCH, "attach: session %s is ending", s->id);
		return;
	}
	/*
	 * The target is held by a pidfd before its parent is read, and both
	 * it and the requester are checked to still run after: neither pid
	 * number can have been reused in between (a zombie keeps its pid).
	 */
	target = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (target < 0 && errno != ENOSYS) {
		reply_error(d, c, ESRCH, "attach: no process %lld", (long long)pid);
		return;
	}
	r = parent_of(pid, &ppid);
	if (r < 0 || ppid != c->peer.pid || peer_alive(&c->peer) < 0 ||
	    !pidfd_runs(target)) {
		reply_error(d, c, EPERM, "attach: pid %lld is not a child of the requesting process",
			    (long long)pid);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", s->cgroup);
	snprintf(num, sizeof(num), "%lld", (long long)pid);
	r = write_file_str(path, num);
	if (r == 0 && !pidfd_runs(target)) {
		dlog("attach: pid %lld of session %s was reaped while it was moved", (long long)pid,
		     s->id);
		r = -ESRCH;
	}
	if (r < 0) {
		reply_error(d, c, -r, "attach: cannot move pid %lld into %s: %s", (long long)pid,
			    s->cgroup, strerror(-r));
		goto out;
	}
	if (s->has_lim && (r = limits_attach_pid(&s->lim, pid)) < 0) {
		reply_error(d, c, -r, "attach: cannot move pid %lld into the v1 cgroups of its "
				      "limits: %s", (long long)pid, strerror(-r));
		goto out;
	}
	s->child = pid;
	if (s->state == DS_REGISTERED)
		s->state = DS_RUNNING;
	reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_u64(&d->rw, "pid", pid);
	reply_send(d, c);
out:
	if (target >= 0)
		close(target);
}

/* Kills what is left; 0 once the directory is gone, -EBUSY if it stays. */
static int kill_cgroup(const char *cgroup, int wait_ms)
{
	char path[PATH_MAX + 32];
	bool have_kill;

	snprintf(path, sizeof(path), "%s/cgroup.kill", cgroup);
	have_kill = write_file_str(path, "1") == 0;
	for (int i = 0; i <= wait_ms; i++) {
		if (rmdir(cgroup) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		/* No cgroup.kill (kernel < 5.14): signal each member. */
		if (!have_kill && i % 50 == 0) {
			char procs[PATH_MAX + 32];
			FILE *f;
			int pid;

			snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
			f = fopen(procs, "re");
			while (f && fscanf(f, "%d", &pid) == 1)
				kill(pid, SIGKILL);
			if (f)
				fclose(f);
		}
		usleep(1000);
	}
	return -EBUSY;
}

static int discard_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

int ops_end_session(struct daemon *d, struct dsession *s, const char *reason)
{
	uint64_t seq = 1, lost = 0;
	int r;

	if (!s->end.reason)
		s->end.reason = reason;
	/* Fail closed: the map entry stays while any process of it lives. */
	r = kill_cgroup(s->cgroup, s->state == DS_ENDING ? 0 : END_WAIT_MS);
	if (r < 0) {
		if (s->state != DS_ENDING)
			dlog("session %s: its cgroup %s does not go away (%s); retrying every "
			     "second", s->id, s->cgroup, strerror(-r));
		s->state = DS_ENDING;
		return r;
	}
	if (s->has_lim)
		limits_destroy(&s->lim); /* the v1 cgroups; the v2 one is gone */
	snprintf(ended_ids[ended_next++ % ENDED_KEPT], sizeof(ended_ids[0]), "%s", s->id);
	/* The proxy's last records (bytes at close) reach the ring first. */
	egress_stop(s->egress);
	s->egress = NULL;
	agent_consume(d->agent);
	agent_session_remove(d->agent, s->cgroup_id, &seq, &lost);
	agent_flush_session(d->agent, s->index, &seq, ev_on_record, d);
	agent_net_clear(d->agent, s->index);
	remove_lsm(d, s);
	ev_flood_say(d, s, true);
	ev_session_end(d, s, seq, lost);
	/* A subscription to this session ends with it. */
	for (struct conn *c = d->conns; c; c = c->next) {
		if (c->subscribed && streq(c->sub_session, s->id)) {
			c->closing = true;
			conn_flush(d, c);
		}
	}
	dlog("session %s ended (%s): %llu records, %llu lost", s->id, s->end.reason,
	     (unsigned long long)(seq > lost ? seq - 1 - lost : 0), (unsigned long long)lost);
	table_remove(&d->table, s);
	return 0;
}

static void op_unregister(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = request_session(d, c, req, "unregister");
	struct dsession_end e = { .reason = "unregister" };
	char id[33];
	int64_t i;
	int r;

	if (!s)
		return;
	r = proto_get_int(req, "exit_code", &e.exit_code);
	if (r == -EINVAL) {
		bad_member(d, c, "unregister", "exit_code", "an integer");
		return;
	}
	e.have_exit = r == 0;
	if (proto_get_bool(req, "timed_out", &e.timed_out) == -EINVAL) {
		bad_member(d, c, "unregister", "timed_out", "a boolean");
		return;
	}
	r = proto_get_int(req, "output_bytes", &i);
	if (r == -EINVAL || (!r && i < 0)) {
		bad_member(d, c, "unregister", "output_bytes", "a count");
		return;
	}
	e.output_bytes = r ? 0 : i;
	r = proto_get_int(req, "output_dropped", &i);
	if (r == -EINVAL || (!r && i < 0)) {
		bad_member(d, c, "unregister", "output_dropped", "a count");
		return;
	}
	e.output_dropped = r ? 0 : i;
	if (s->state != DS_ENDING)
		s->end = e;
	snprintf(id, sizeof(id), "%s", s->id);
	r = ops_end_session(d, s, "unregister");
	reply_begin(d);
	jsonw_str(&d->rw, "session", id);
	jsonw_str(&d->rw, "state", r < 0 ? "ending" : "ended");
	reply_send(d, c);
}

static void put_time(struct jsonw *w, const char *key, int64_t ns)
{
	time_t sec = ns / 1000000000LL;
	struct tm tm;
	char buf[40];

	gmtime_r(&sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	jsonw_str(w, key, buf);
}

/*
 * One page of sessions: from "offset" (default 0, counted among the ones the
 * peer may see) until the reply passes DAEMON_LIST_PAGE; then "next_offset"
 * says where the next page starts. Without it, the list is complete.
 */
static void op_list(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct jsonw *w;
	int64_t offset = 0, seen = 0;

	if (proto_get_int(req, "offset", &offset) == -EINVAL || offset < 0) {
		bad_member(d, c, "list", "offset", "a count of sessions, 0 or more");
		return;
	}
	w = reply_begin(d);
	jsonw_array_begin(w, "sessions");
	for (struct dsession *s = d->table.head; s; s = s->next) {
		uint64_t seq = 1, lost = 0;

		if (c->peer.uid != 0 && c->peer.uid != s->uid)
			continue;
		if (seen++ < offset)
			continue;
		if (w->len > DAEMON_LIST_PAGE) {
			jsonw_array_end(w);
			jsonw_u64(w, "next_offset", seen - 1);
			reply_send(d, c);
			return;
		}
		agent_session_stats(d->agent, s->cgroup_id, &seq, &lost);
		jsonw_begin(w);
		jsonw_str(w, "session", s->id);
		jsonw_u64(w, "index", s->index);
		jsonw_str(w, "state", dsession_state_name(s->state));
		if (s->state == DS_PAUSED)
			jsonw_str(w, "pause_reason", s->pause_reason);
		jsonw_str(w, "cgroup", s->cgroup);
		if (s->level[0])
			jsonw_str(w, "level_enabled", s->level);
		jsonw_u64(w, "pid", s->client_pid);
		jsonw_u64(w, "uid", s->uid);
		jsonw_u64(w, "child", s->child);
		put_time(w, "start_time", s->start_real_ns);
		jsonw_u64(w, "records", seq > lost ? seq - 1 - lost : 0);
		jsonw_u64(w, "lost", lost);
		jsonw_bool(w, "client_connected", s->owner != 0);
		if (s->command)
			jsonw_raw(w, "command", s->command);
		else
			jsonw_null(w, "command");
		if (s->command_truncated)
			jsonw_bool(w, "command_truncated", true);
		jsonw_end(w);
	}
	jsonw_array_end(w);
	reply_send(d, c);
}

static void op_subscribe(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = NULL;
	struct json_object *types, *v;
	uint32_t kinds = 0;

	if (json_object_object_get_ex(req, "session", &v)) {
		s = request_session(d, c, req, "subscribe");
		if (!s)
			return;
	}
	if (proto_get_array(req, "types", &types) == 0) {
		for (size_t i = 0; i < json_object_array_length(types); i++) {
			struct json_object *t = json_object_array_get_idx(types, i);
			const char *name = json_object_get_string(t);
			int k = json_object_is_type(t, json_type_string) ? ev_kind_parse(name) : -EINVAL;

			if (k < 0) {
				char want[320];

				snprintf(want, sizeof(want), "an array of event types (%s)",
					 sink_type_list());
				bad_member(d, c, "subscribe", "types", want);
				return;
			}
			kinds |= 1U << k;
		}
	} else if (json_object_object_get_ex(req, "types", &v)) {
		bad_member(d, c, "subscribe", "types", "an array");
		return;
	}
	reply_begin(d);
	reply_send(d, c);
	c->subscribed = true;
	c->sub_kinds = kinds;
	c->sub_all_users = c->peer.uid == 0;
	snprintf(c->sub_session, sizeof(c->sub_session), "%s", s ? s->id : "");
	/* A subscriber of one session gets its start, even if it came late. */
	if (s && s->start_line && (!kinds || (kinds & (1U << EV_SESSION_START))))
		conn_queue(d, c, s->start_line, strlen(s->start_line));
}

static void op_ping(struct daemon *d, struct conn *c)
{
	const struct agent_status *st = agent_status(d->agent);
	struct jsonw *w = reply_begin(d);

	jsonw_u64(w, "pid", getpid());
	jsonw_u64(w, "sessions", d->table.count);
	jsonw_str(w, "cgroup_parent", d->parent);
	jsonw_str(w, "pin_dir", d->o->pin_dir);
	jsonw_bool(w, "bpf_audit", st->audit);
	jsonw_bool(w, "bpf_network", st->net);
	jsonw_bool(w, "bpf_unix_connect", st->unix_connect);
	jsonw_bool(w, "bpf_lsm", st->lsm);
	/* Whether this peer may run sessions without the daemon (its ceiling). */
	if (d->ceilings.set && !(c->peer.uid == 0 && d->ceilings.exempt_root)) {
		const struct ceiling_rule *r = ceilings_match(&d->ceilings, c->peer.uid, c->peer.gid);

		jsonw_bool(w, "no_daemon", r && r->no_daemon);
		jsonw_str(w, "ceiling", r ? r->name : NULL);
	}
	reply_send(d, c);
}

/*
 * session.paused, session.resumed, session.killed to the sinks and to the
 * subscribers of the session (or of every session) that want them.
 */
static void emit_lifecycle(struct daemon *d, struct dsession *s, const struct session_event *ev)
{
	struct jsonw *w = &d->w;
	int kind = ev_kind_parse(session_event_type_name(ev->type));

	jsonw_reset(w);
	session_event_json(w, &d->clock, s->id, ev);
	if (w->oom || kind < 0)
		return;
	ev_emit(d, s, kind, w->buf, w->len);
	ev_flush(d);
}

/* An optional count member; -EINVAL replied when mistyped. */
static int opt_count(struct daemon *d, struct conn *c, struct json_object *req, const char *op,
		     const char *key, int64_t min, int64_t *out)
{
	int r = proto_get_int(req, key, out);

	if (r == -ENOENT) {
		*out = 0;
		return 0;
	}
	if (r || *out < min || *out > DAEMON_COUNT_MAX) {
		char want[80];

		snprintf(want, sizeof(want), "an integer from %lld to %lld", (long long)min,
			 (long long)DAEMON_COUNT_MAX);
		return bad_member(d, c, op, key, want);
	}
	return 0;
}

/*
 * Who the OOM killer chose: the agent's oom/mark_victim record (kept when
 * its pid is still in the session or already reaped), else the kernel log,
 * which a daemon under its systemd unit cannot read (ProtectKernelLogs).
 */
static void find_oom_victim(struct daemon *d, const struct dsession *s, struct session_event *ev)
{
	if (agent_oom_victim(d->agent, s->index, 5000000000ull, &ev->pid, ev->comm,
			     sizeof(ev->comm)) == 0 &&
	    oom_victim_check(s->id, ev->pid, ev->comm, sizeof(ev->comm)) == 0)
		return;
	ev->pid = 0;
	ev->comm[0] = '\0';
	oom_find_victim(s->id, &ev->pid, ev->comm, sizeof(ev->comm));
}

static void op_pause(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = request_session(d, c, req, "pause");
	struct session_event ev = { .type = SEV_PAUSED, .reason = "manual" };
	const char *reason;
	int64_t kills, used, pid;
	int r;

	if (!s)
		return;
	r = proto_get_str(req, "reason", &reason);
	if (r == -EINVAL || (!r && !streq(reason, "manual") && !streq(reason, "oom") &&
			     !streq(reason, "disk") && !streq(reason, "disk_unwatched"))) {
		bad_member(d, c, "pause", "reason",
			   "\"manual\", \"oom\", \"disk\" or \"disk_unwatched\"");
		return;
	}
	if (!r)
		ev.reason = reason;
	if (opt_count(d, c, req, "pause", "oom_kills", 0, &kills) < 0 ||
	    opt_count(d, c, req, "pause", "disk_used_mb", -1, &used) < 0 ||
	    opt_count(d, c, req, "pause", "pid", 0, &pid) < 0)
		return;
	if (s->state == DS_PAUSED) {
		reply_error(d, c, EALREADY, "pause: session %s is already paused (%s)", s->id,
			    s->pause_reason);
		return;
	}
	if (s->state == DS_ENDING || s->state == DS_REGISTERED) {
		reply_error(d, c, s->state == DS_ENDING ? ESRCH : EINVAL,
			    "pause: session %s %s", s->id,
			    s->state == DS_ENDING ? "is ending" : "has no process yet");
		return;
	}
	r = ctl_pause(s->cgroup, ev.reason);
	if (r < 0 && r != -EALREADY) {
		reply_error(d, c, -r, "pause: cannot freeze %s: %s", s->cgroup, strerror(-r));
		return;
	}
	ev.pid = pid;
	ev.oom_kills = kills;
	ev.disk_used_mb = proto_get_int(req, "disk_used_mb", &used) == 0 ? used : -1;
	if (streq(ev.reason, "oom") && !ev.pid)
		find_oom_victim(d, s, &ev);
	ev.memory_mb = s->lim.memory_mb;
	ev.disk_mb = s->lim.disk_mb;
	s->resume_state = s->state;
	s->state = DS_PAUSED;
	s->paused_at_ns = now_ns();
	snprintf(s->pause_reason, sizeof(s->pause_reason), "%s", ev.reason);
	emit_lifecycle(d, s, &ev);
	dlog("session %s paused (%s)", s->id, ev.reason);
	reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "state", "paused");
	jsonw_str(&d->rw, "reason", ev.reason);
	if (ev.pid)
		jsonw_u64(&d->rw, "pid", ev.pid);
	else
		jsonw_null(&d->rw, "pid");
	jsonw_str(&d->rw, "comm", ev.comm[0] ? ev.comm : NULL);
	reply_send(d, c);
}

static void op_resume(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = request_session(d, c, req, "resume");
	struct session_event ev = { .type = SEV_RESUMED };
	int64_t mem, disk;
	int r;

	if (!s)
		return;
	if (opt_count(d, c, req, "resume", "memory_mb", CTL_MIN_MEMORY_MB, &mem) < 0 ||
	    opt_count(d, c, req, "resume", "disk_mb", CTL_MIN_DISK_MB, &disk) < 0)
		return;
	if (s->state == DS_ENDING) {
		reply_error(d, c, ESRCH, "resume: session %s is ending", s->id);
		return;
	}
	r = ctl_resume(s->cgroup, mem, disk, &ev.memory_mb, &ev.disk_mb);
	if (r == -EINVAL) {
		if (s->state == DS_PAUSED)
			s->state = s->resume_state; /* thawed behind our back */
		reply_error(d, c, EINVAL, "resume: session %s is running, not paused", s->id);
		return;
	}
	if (r < 0) {
		reply_error(d, c, -r, "resume: cannot %s %s: %s",
			    mem ? "raise the memory limit of" : "thaw", s->cgroup, strerror(-r));
		return;
	}
	if (s->state == DS_PAUSED) {
		ev.paused_ms = (now_ns() - s->paused_at_ns) / 1000000ULL;
		s->state = s->resume_state;
	}
	s->lim.memory_mb = ev.memory_mb;
	s->lim.disk_mb = ev.disk_mb;
	emit_lifecycle(d, s, &ev);
	dlog("session %s resumed (memory %llu MB, disk %llu MB)", s->id,
	     (unsigned long long)ev.memory_mb, (unsigned long long)ev.disk_mb);
	reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "state", "running");
	jsonw_u64(&d->rw, "memory_mb", ev.memory_mb);
	jsonw_u64(&d->rw, "disk_mb", ev.disk_mb);
	reply_send(d, c);
}

static void op_kill(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct session_event ev = { .type = SEV_KILLED, .reason = "manual" };
	struct dsession *s = request_session(d, c, req, "kill");
	int r;

	if (!s)
		return;
	if (s->state == DS_ENDING) {
		reply_error(d, c, ESRCH, "kill: session %s is ending already", s->id);
		return;
	}
	r = ctl_kill(s->cgroup);
	if (r < 0) {
		reply_error(d, c, -r, "kill: cannot kill the processes of %s: %s", s->cgroup,
			    strerror(-r));
		return;
	}
	ev.was_paused = s->state == DS_PAUSED;
	if (s->state == DS_PAUSED)
		s->state = s->resume_state;
	s->killed = true;
	emit_lifecycle(d, s, &ev);
	dlog("session %s killed", s->id);
	reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "state", "killed");
	reply_send(d, c);
}

/*
 * A rule added to or removed from a running session (an operator approving
 * a domain): {"op":"net","session":ID,"action":"allow"|"deny"|"remove",
 * "rule":"HOST[:PORT[-PORT]]"}. Names go to the session's proxy, which
 * judges every new connection and query by the rules of the moment;
 * addresses and CIDRs to the BPF allow-list (added, not removed).
 */
static void op_net(struct daemon *d, struct conn *c, struct json_object *req)
{
	struct dsession *s = request_session(d, c, req, "net");
	const char *action, *rule;
	char cidr[64], host[256];
	uint16_t lo, hi;
	bool name, deny;
	int r = 0;

	if (!s)
		return;
	if (proto_get_str(req, "action", &action) ||
	    (!streq(action, "allow") && !streq(action, "deny") && !streq(action, "remove"))) {
		bad_member(d, c, "net", "action", "\"allow\", \"deny\" or \"remove\"");
		return;
	}
	deny = streq(action, "deny");
	/* Widening is the operator's: the owner is held to its ceiling (register). */
	if (!deny && c->peer.uid != 0) {
		reply_error(d, c, EPERM, "net: only root may %s a rule of a running session; "
					 "deny is open to its owner",
			    action);
		return;
	}
	if (proto_get_str(req, "rule", &rule)) {
		bad_member(d, c, "net", "rule", "HOST[:PORT[-PORT]]");
		return;
	}
	name = net_name_rule_parse(rule, host, sizeof(host), &lo, &hi) == 0;
	if (!name && net_rule_parse(rule, cidr, sizeof(cidr), &lo, &hi) < 0) {
		bad_member(d, c, "net", "rule",
			   "HOST[:PORT[-PORT]] with HOST a name, *.wildcard, ADDR or ADDR/LEN");
		return;
	}
	if (streq(action, "remove")) {
		if (!s->egress || (egress_rule_remove(s->egress, rule, false) < 0 &&
				   egress_rule_remove(s->egress, rule, true) < 0)) {
			reply_error(d, c, ENOENT, "net: session %s has no name rule '%s' to remove "
						  "(address rules stay while it runs)", s->id, rule);
			return;
		}
	} else if (name && !s->egress) {
		reply_error(d, c, EOPNOTSUPP, "net: session %s started without name rules and has "
					      "no egress proxy; start it with one", s->id);
		return;
	} else if (name) {
		r = egress_rule_add(s->egress, rule, deny);
	} else {
		r = deny ? agent_net_hole(d->agent, s->index, cidr)
			 : agent_net_allow(d->agent, s->index, cidr, lo, hi);
		if (!r && deny && s->egress)
			r = egress_rule_add(s->egress, rule, true);
	}
	if (r < 0) {
		reply_error(d, c, -r, "net: cannot %s '%s' for session %s: %s", action, rule, s->id,
			    strerror(-r));
		return;
	}
	dlog("session %s: net %s %s (by pid %d uid %u)", s->id, action, rule, c->peer.pid,
	     c->peer.uid);
	reply_begin(d);
	jsonw_str(&d->rw, "session", s->id);
	jsonw_str(&d->rw, "action", action);
	jsonw_str(&d->rw, "rule", rule);
	reply_send(d, c);
}

void ops_handle(struct daemon *d, struct conn *c, const char *line, size_t len)
{
	struct json_tokener *tok;
	struct json_object *req;
	const char *op;
	uint64_t t0;
	size_t end;

	if (memchr(line, '\0', len)) {
		reply_error(d, c, EINVAL, "the request holds a NUL byte; send one JSON object per line");
		return;
	}
	tok = json_tokener_new();
	if (!tok) {
		reply_error(d, c, ENOMEM, "out of memory");
		return;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	req = json_tokener_parse_ex(tok, line, len);
	end = json_tokener_get_parse_end(tok);
	while (req && end < len && (line[end] == ' ' || line[end] == '\t' || line[end] == '\r'))
		end++;
	if (!req || end != len) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		reply_error(d, c, EINVAL, "malformed JSON: %s; send one JSON object per line",
			    req ? "trailing bytes after the object"
				: e == json_tokener_continue ? "incomplete object"
							     : json_tokener_error_desc(e));
		goto out;
	}
	if (!json_object_is_type(req, json_type_object)) {
		reply_error(d, c, EINVAL, "the request must be a JSON object with an \"op\"");
		goto out;
	}
	if (proto_get_str(req, "op", &op)) {
		reply_error(d, c, EINVAL, "the request needs an \"op\" string: register, attach, "
					  "unregister, list, subscribe, ping, pause, resume, kill, net or reload");
		goto out;
	}
	t0 = now_ns();
	if (streq(op, "register"))
		op_register(d, c, req);
	else if (streq(op, "attach"))
		op_attach(d, c, req);
	else if (streq(op, "unregister"))
		op_unregister(d, c, req);
	else if (streq(op, "list"))
		op_list(d, c, req);
	else if (streq(op, "subscribe"))
		op_subscribe(d, c, req);
	else if (streq(op, "ping"))
		op_ping(d, c);
	else if (streq(op, "pause"))
		op_pause(d, c, req);
	else if (streq(op, "resume"))
		op_resume(d, c, req);
	else if (streq(op, "kill"))
		op_kill(d, c, req);
	else if (streq(op, "net"))
		op_net(d, c, req);
	else if (streq(op, "reload"))
		op_reload(d, c);
	else
		reply_error(d, c, EOPNOTSUPP, "unknown op '%.64s': use register, attach, unregister, "
					      "list, subscribe, ping, pause, resume, kill, net or reload", op);
	metrics_observe_request(d->metrics, op, now_ns() - t0);
out:
	json_object_put(req);
	json_tokener_free(tok);
}

static bool cgroup_populated(const char *cgroup)
{
	char path[PATH_MAX + 32], buf[256];

	snprintf(path, sizeof(path), "%s/cgroup.events", cgroup);
	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return access(cgroup, F_OK) == 0; /* unreadable: assume it lives */
	return !strstr(buf, "populated 0");
}

void ops_tick(struct daemon *d)
{
	struct dsession *s = d->table.head, *next;

	for (; s; s = next) {
		next = s->next;
		ev_flood_say(d, s, false);
		if (s->state == DS_ENDING)
			ops_end_session(d, s, s->end.reason);
		else if (!s->owner && !cgroup_populated(s->cgroup))
			ops_end_session(d, s, "processes exited");
	}
}

void ops_conn_gone(struct daemon *d, struct conn *c)
{
	struct dsession *s = d->table.head, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->owner != c->serial)
			continue;
		s->owner = 0;
		if (s->state != DS_ENDING)
			ops_end_session(d, s, "client gone");
	}
}

/* The cgroup directory under the parent whose id (inode) is cgroup_id. */
static int find_cgroup(struct daemon *d, uint64_t cgroup_id, char *name, size_t size)
{
	DIR *dir = opendir(d->parent);
	struct dirent *de;
	int r = -ENOENT;

	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		struct stat st;

		if (!proto_session_id_valid(de->d_name) ||
		    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_ino != cgroup_id)
			continue;
		r = snprintf(name, size, "%s", de->d_name) < (int)size ? 0 : -ENAMETOOLONG;
		break;
	}
	closedir(dir);
	return r;
}

static int readopt_one(void *ctx, uint64_t cgroup_id, uint32_t index, uint32_t flags)
{
	struct daemon *d = ctx;
	struct dsession *s;
	char name[DAEMON_SESSION_ID_LEN + 1];
	uint64_t seq = 1;

	if (table_by_index(&d->table, index)) {
		dlog("session index %u appears twice in the sessions map; cgroup id %llu is left "
		     "as it is", index, (unsigned long long)cgroup_id);
		return 0;
	}
	if (find_cgroup(d, cgroup_id, name, sizeof(name)) < 0) {
		/* Its cgroup is gone (or not ours): nothing can run in it any more. */
		agent_session_remove(d->agent, cgroup_id, &seq, NULL);
		agent_flush_session(d->agent, index, &seq, discard_record, NULL);
		agent_net_clear(d->agent, index);
		agent_session_lsm_clear(d->agent, index);
		dlog("forgot session index %u: no session cgroup with id %llu under %s", index,
		     (unsigned long long)cgroup_id, d->parent);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	ev_flood_init(d, s);
	if (snprintf(s->id, sizeof(s->id), "%s", name) >= (int)sizeof(s->id) ||
	    snprintf(s->cgroup, sizeof(s->cgroup), "%s/%s", d->parent, name) >=
		    (int)sizeof(s->cgroup)) {
		free(s);
		return 0;
	}
	s->index = index;
	s->cgroup_id = cgroup_id;
	s->flags = flags;
	s->state = DS_ADOPTED;
	read_meta(d, s);
	/* Its v1 cgroups, if any, go with it. */
	limits_plan(&s->lim, &(struct policy_limits){ .memory_mb = 2048, .pids = 64,
						      .cpu_percent = 100, .disk_mb = 1024 },
		    d->parent, LIMITS_VIA_AUTO);
	snprintf(s->lim.cg, sizeof(s->lim.cg), "%.*s", (int)sizeof(s->lim.cg) - 1, s->cgroup);
	limits_v1_read(s->cgroup, &s->lim);
	ctl_limits(s->cgroup, &s->lim.memory_mb, &s->lim.disk_mb);
	s->has_lim = true;
	if (ctl_paused(s->cgroup)) {
		char st[48] = "";
		ssize_t n = getxattr(s->cgroup, LIMITS_XATTR_STATE, st, sizeof(st) - 1);

		st[n > 0 ? n : 0] = '\0';
		s->resume_state = DS_ADOPTED;
		s->state = DS_PAUSED;
		s->paused_at_ns = now_ns();
		snprintf(s->pause_reason, sizeof(s->pause_reason), "%.15s",
			 startswith(st, "paused ") ? st + 7 : "manual");
	}
	if (table_add(&d->table, s) < 0) {
		free(s->command);
		json_object_put(s->lsm_lists);
		free(s->wkeys);
		free(s);
		return 0;
	}
	dlog("re-adopted session %s (index %u, uid %u, cgroup %s)", s->id, s->index, s->uid,
	     s->cgroup);
	return 0;
}

static bool index_adopted(void *ctx, uint32_t index)
{
	return table_by_index(&((struct daemon *)ctx)->table, index) != NULL;
}

int ops_readopt(struct daemon *d)
{
	struct session_limits l;
	struct policy_limits pl = { .memory_mb = 2048, .pids = 64, .cpu_percent = 100 };
	int r = agent_session_foreach(d->agent, readopt_one, d), n;

	/*
	 * Policy entries of no adopted session (a daemon killed between a
	 * register's writes): a later session given that index must not
	 * inherit them.
	 */
	n = r < 0 ? 0 : agent_policy_sweep(d->agent, index_adopted, d);
	if (n > 0)
		dlog("removed %d policy map entries of sessions that no longer exist", n);

	/* What a killed daemon or killed runs left: empty, stale session cgroups. */
	limits_plan(&l, &pl, d->parent, LIMITS_VIA_AUTO);
	limits_sweep(&l);
	return r;
}
