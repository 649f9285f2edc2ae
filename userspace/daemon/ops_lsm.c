// SPDX-License-Identifier: GPL-2.0
/*
 * A session's BPF LSM policy in the daemon: the deny and exec_deny lists
 * and the writable set written into the maps at register, removed at the
 * end, and kept in the cgroup's trusted.bpfbox xattr for re-adoption.
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
#include "../agent/agent.h"
#include "../lib/cgroup.h"
#include "../audit/lifecycle.h"
#include "../audit/sink.h"
#include "../monitor/control.h"
#include "../monitor/monitor.h"
#include "../monitor/oom.h"
#include "../policy/policy.h"
#include "../lib/util.h"
#include "../net/egress.h"

/*
 * Owner and start of a session, and its BPF LSM lists (lsm: a JSON object
 * {"deny":[...],"exec_deny":[...]}, may be NULL), kept on its cgroup for
 * the next daemon, which writes the lists again at re-adoption.
 */
void ops_write_meta(struct dsession *s, struct json_object *lsm)
{
	struct jsonw w = {0};
	const char *l = lsm ? json_object_to_json_string_ext(lsm, JSON_C_TO_STRING_PLAIN) : NULL;

	jsonw_begin(&w);
	if (s->adopted) { /* the next daemon finds it by this (ops_readopt_adopted) */
		jsonw_str(&w, "adopted", s->id);
		jsonw_u64(&w, "pause_timeout_ms", s->pause_timeout_ms);
	}
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
		     "restarted daemon finds them in the pinned maps only",
		     s->id);
	jsonw_end(&w);
	if (!w.oom && setxattr(s->cgroup, META_XATTR, w.buf, w.len, 0) < 0)
		dlog("cannot record the owner of session %s on its cgroup: %s; after a restart "
		     "only root may manage it",
		     s->id, strerror(errno));
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
int ops_apply_lsm(struct daemon *d, uint32_t index, struct json_object *lsm, const char **bad)
{
	struct json_object *deny = NULL, *exec = NULL;
	const char **dv = NULL, **ev = NULL;
	size_t nd = 0, ne = 0;
	int r;

	*bad = NULL;
	if (!lsm)
		return 0;
	if (proto_get_array(lsm, "deny", &deny) == 0 &&
	    !ops_string_array(deny, MAX_LSM_RULES, BPFBOX_PATH_LEN, false))
		return -EINVAL;
	if (proto_get_array(lsm, "exec_deny", &exec) == 0 &&
	    !ops_string_array(exec, MAX_LSM_RULES, BPFBOX_PATH_LEN, false))
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
void ops_drop_filled(struct json_object *req, uint32_t flags)
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

bool ops_full_access(struct json_object *req)
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
int ops_apply_writable(struct daemon *d, struct dsession *s, uint32_t index,
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
void ops_remove_lsm(struct daemon *d, struct dsession *s)
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

void ops_read_meta(struct daemon *d, struct dsession *s)
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
	if (proto_get_int(o, "pause_timeout_ms", &i) == 0 && i >= 1000)
		s->pause_timeout_ms = i;
	/*
	 * Its BPF LSM lists again: the pinned maps normally hold them still
	 * (adding is idempotent), but an earlier daemon that ran without the
	 * BPF LSM, or lost a pin, left them nowhere else.
	 */
	if (proto_get_object(o, "lsm", &v) == 0 && agent_status(d->agent)->lsm) {
		r = ops_apply_lsm(d, s->index, v, &bad);
		if (!r && (s->flags & BPFBOX_SF_GAP_META))
			r = ops_apply_writable(d, s, s->index, v);
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
	/* Redacted again: an older daemon kept it as given. */
	if (proto_get_array(o, "command", &v) == 0 &&
	    ops_string_array(v, MAX_COMMAND_ARGS, 0, false) && (v = audit_redact_command(v))) {
		s->command = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		json_object_put(v);
	}
	json_object_put(o);
}

/*
 * Full unless the client asked for less: the daemon's BPF LSM takes the
 * session's deny and exec_deny lists (docs/lsm.md).
 */
bool ops_want_lsm(struct json_object *req)
{
	const char *lvl;

	return proto_get_str(req, "level_requested", &lvl) != 0 || streq(lvl, "Full");
}

/* {"deny":policy.deny,"exec_deny":policy.exec_deny} in *out (put by the caller). */
struct json_object *ops_lsm_lists(struct json_object *req, struct json_object **out)
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
