// SPDX-License-Identifier: GPL-2.0
/* Policy ceilings: parsing the operator's rules and holding a request to them. */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "ceiling.h"
#include "policy.h"
#include "../lib/util.h"

static const char *const limit_keys[CL__COUNT] = {
	[CL_MEMORY_MB] = "memory_mb",	  [CL_PIDS] = "pids",
	[CL_CPU_PERCENT] = "cpu_percent", [CL_DISK_MB] = "disk_mb",
	[CL_TIMEOUT_S] = "timeout_s",	  [CL_OUTPUT_BYTES] = "output_bytes",
};

static const char *const net_names[] = {"deny", "allow-list", "allow"};

static void rule_free(struct ceiling_rule *r)
{
	for (size_t i = 0; i < r->nrw; i++)
		free(r->rw[i]);
	free(r->rw);
}

void ceilings_free(struct ceilings *c)
{
	for (size_t i = 0; i < c->n; i++)
		rule_free(&c->v[i]);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* "uid" or "group": a number, or a user or group name of this host. */
static int rule_id(struct json_object *v, bool group, bool *has, uid_t *id, const char *where,
		   char *err, size_t size)
{
	const char *name = json_object_get_string(v);
	struct passwd *pw;
	struct group *gr;

	*has = true;
	if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0 &&
	    json_object_get_int64(v) < UINT32_MAX) {
		*id = json_object_get_int64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_string) && !group && (pw = getpwnam(name))) {
		*id = pw->pw_uid;
		return 0;
	}
	if (json_object_is_type(v, json_type_string) && group && (gr = getgrnam(name))) {
		*id = gr->gr_gid;
		return 0;
	}
	if (group)
		return err_invalid(err, size,
				   "%s.group: give a gid number or a group name of "
				   "this host",
				   where);
	return err_invalid(err, size,
			   "%s.uid: give a uid number or a user name of this "
			   "host",
			   where);
}

static int rule_modes(struct json_object *v, struct ceiling_rule *r, const char *where, char *err,
		      size_t size)
{
	size_t n = json_type_array == json_object_get_type(v) ? json_object_array_length(v) : 0;

	if (!n)
		return err_invalid(err, size,
				   "%s.modes: give a non-empty array of modes "
				   "(workspace-write, read-only, full-access)",
				   where);
	for (size_t i = 0; i < n; i++) {
		enum sandbox_mode m;
		const char *s = json_object_get_string(json_object_array_get_idx(v, i));

		if (sandbox_mode_parse(s, &m) < 0)
			return err_invalid(err, size,
					   "%s.modes: '%s' is not a mode "
					   "(workspace-write, read-only, full-access)",
					   where, s ? s : "?");
		r->modes |= 1U << m;
	}
	return 0;
}

static int rule_rw(struct json_object *v, struct ceiling_rule *r, const char *where, char *err,
		   size_t size)
{
	size_t n = json_type_array == json_object_get_type(v) ? json_object_array_length(v) : 0;

	if (!json_object_is_type(v, json_type_array))
		return err_invalid(err, size, "%s.rw: give an array of absolute paths", where);
	r->rw_set = true;
	r->rw = calloc(n ? n : 1, sizeof(*r->rw));
	if (!r->rw)
		return err_invalid(err, size, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(v, i));

		if (!s || s[0] != '/')
			return err_invalid(err, size, "%s.rw: '%s' is not an absolute path", where,
					   s ? s : "?");
		r->rw[r->nrw++] = strdup(s);
	}
	return 0;
}

static int rule_limits(struct json_object *v, struct ceiling_rule *r, const char *where, char *err,
		       size_t size)
{
	if (!json_object_is_type(v, json_type_object))
		return err_invalid(err, size, "%s.limits: give an object", where);
	json_object_object_foreach (v, lk, lv) {
		int i = 0;

		while (i < CL__COUNT && !streq(limit_keys[i], lk))
			i++;
		if (i == CL__COUNT)
			return err_invalid(err, size,
					   "%s.limits: unknown limit '%s'; valid: "
					   "memory_mb, pids, cpu_percent, disk_mb, "
					   "timeout_s, output_bytes",
					   where, lk);
		if (!json_object_is_type(lv, json_type_int) || json_object_get_int64(lv) <= 0)
			return err_invalid(err, size, "%s.limits.%s: give a positive number", where,
					   lk);
		r->max[i] = json_object_get_int64(lv);
	}
	return 0;
}

/* A true or false key of the rule into *out. */
static int rule_bool(struct json_object *v, bool *out, const char *where, const char *key,
		     char *err, size_t size)
{
	if (!json_object_is_type(v, json_type_boolean))
		return err_invalid(err, size, "%s.%s: give true or false", where, key);
	*out = json_object_get_boolean(v);
	return 0;
}

static int parse_rule(struct json_object *o, struct ceiling_rule *r, size_t idx, char *err,
		      size_t size)
{
	char where[96];
	int ret;

	snprintf(where, sizeof(where), "ceilings.rules[%zu]", idx);
	snprintf(r->name, sizeof(r->name), "rule %zu", idx + 1);
	r->network = -1;
	if (!json_object_is_type(o, json_type_object))
		return err_invalid(err, size, "%s: give an object", where);
	json_object_object_foreach (o, key, v) {
		if (streq(key, "name")) {
			if (!json_object_is_type(v, json_type_string) ||
			    (size_t)json_object_get_string_len(v) >= sizeof(r->name))
				return err_invalid(err, size, "%s.name: give a short string",
						   where);
			snprintf(r->name, sizeof(r->name), "%s", json_object_get_string(v));
			ret = 0;
		} else if (streq(key, "uid")) {
			ret = rule_id(v, false, &r->has_uid, &r->uid, where, err, size);
		} else if (streq(key, "group")) {
			ret = rule_id(v, true, &r->has_group, &r->gid, where, err, size);
		} else if (streq(key, "modes")) {
			ret = rule_modes(v, r, where, err, size);
		} else if (streq(key, "network")) {
			const char *s = json_object_get_string(v);

			for (int i = 0; i < 3; i++)
				if (json_object_is_type(v, json_type_string) &&
				    streq(s, net_names[i]))
					r->network = i;
			if (r->network < 0)
				return err_invalid(err, size,
						   "%s.network: use deny, allow-list or allow",
						   where);
			ret = 0;
		} else if (streq(key, "rw")) {
			ret = rule_rw(v, r, where, err, size);
		} else if (streq(key, "limits")) {
			ret = rule_limits(v, r, where, err, size);
		} else if (streq(key, "action")) {
			const char *s = json_object_get_string(v);

			if (!json_object_is_type(v, json_type_string) ||
			    (!streq(s, "refuse") && !streq(s, "clamp")))
				return err_invalid(err, size,
						   "%s.action: use refuse or clamp (limits)",
						   where);
			r->clamp = streq(s, "clamp");
			ret = 0;
		} else if (streq(key, "no_daemon") || streq(key, "no_namespaces")) {
			ret = rule_bool(v,
					streq(key, "no_daemon") ? &r->no_daemon : &r->no_namespaces,
					where, key, err, size);
		} else {
			return err_invalid(err, size,
					   "%s: unknown key '%s'; valid keys: name, uid, group, "
					   "modes, network, rw, limits, action, no_daemon, "
					   "no_namespaces",
					   where, key);
		}
		if (ret < 0)
			return ret;
	}
	if (r->has_uid && r->has_group)
		return err_invalid(err, size, "%s: give uid or group, not both (two rules)", where);
	return 0;
}

int ceilings_parse(struct json_object *o, struct ceilings *out, char *err, size_t size)
{
	struct json_object *rules = NULL;
	int r;

	memset(out, 0, sizeof(*out));
	if (!json_object_is_type(o, json_type_object))
		return err_invalid(err, size, "ceilings: give an object with \"rules\"");
	json_object_object_foreach (o, key, v) {
		if (streq(key, "exempt_root")) {
			if (!json_object_is_type(v, json_type_boolean))
				return err_invalid(err, size,
						   "ceilings.exempt_root: give true or false");
			out->exempt_root = json_object_get_boolean(v);
		} else if (streq(key, "rules")) {
			rules = v;
		} else {
			return err_invalid(err, size,
					   "ceilings: unknown key '%s'; valid keys: rules, "
					   "exempt_root",
					   key);
		}
	}
	if (!rules || !json_object_is_type(rules, json_type_array) ||
	    !json_object_array_length(rules))
		return err_invalid(err, size, "ceilings.rules: give a non-empty array of rules");
	out->n = json_object_array_length(rules);
	out->v = calloc(out->n, sizeof(*out->v));
	if (!out->v)
		return err_invalid(err, size, "out of memory");
	for (size_t i = 0; i < out->n; i++) {
		r = parse_rule(json_object_array_get_idx(rules, i), &out->v[i], i, err, size);
		if (r < 0) {
			ceilings_free(out);
			return r;
		}
	}
	out->set = true;
	return 0;
}

static bool in_group(uid_t uid, gid_t gid, gid_t want)
{
	struct passwd *pw;
	gid_t groups[256];
	int n = 256;

	if (gid == want)
		return true;
	pw = getpwuid(uid);
	if (!pw || getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (groups[i] == want)
			return true;
	return false;
}

const struct ceiling_rule *ceilings_match(const struct ceilings *c, uid_t uid, gid_t gid)
{
	if (!c->set || (uid == 0 && c->exempt_root))
		return NULL;
	for (size_t i = 0; i < c->n; i++) {
		const struct ceiling_rule *r = &c->v[i];

		if (r->has_uid ? r->uid == uid : r->has_group ? in_group(uid, gid, r->gid) : true)
			return r;
	}
	return NULL;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return !strncmp(path, dir, n) &&
	       (path[n] == '/' || path[n] == 0 || (n == 1 && dir[0] == '/'));
}

/* The workspace, the rw paths and the devices (all writable) under the rule's rw paths; -EPERM. */
static int check_rw(const struct ceiling_rule *r, struct json_object *policy, char *why,
		    size_t why_size)
{
	struct json_object *v, *rw = NULL;

	/* The workspace is writable too: it is held like the rw paths. */
	if (r->rw_set && json_object_object_get_ex(policy, "workspace", &v) &&
	    json_object_is_type(v, json_type_string)) {
		const char *p = json_object_get_string(v);
		bool okp = false;

		for (size_t j = 0; j < r->nrw && !okp; j++)
			okp = under(p, r->rw[j]);
		if (!okp) {
			snprintf(why, why_size, "ceiling '%s': the workspace %s is outside %s%s",
				 r->name, p, r->nrw ? r->rw[0] : "(none allowed)",
				 r->nrw > 1 ? " and the rule's other paths" : "");
			return -EPERM;
		}
	}
	for (size_t k = 0; k < 2; k++) {
		if (!r->rw_set || !json_object_object_get_ex(policy, k ? "devices" : "rw", &rw) ||
		    !json_object_is_type(rw, json_type_array))
			continue;
		for (size_t i = 0; i < json_object_array_length(rw); i++) {
			const char *p = json_object_get_string(json_object_array_get_idx(rw, i));
			bool okp = false;

			for (size_t j = 0; p && j < r->nrw && !okp; j++)
				okp = under(p, r->rw[j]);
			if (!okp) {
				snprintf(why, why_size, "ceiling '%s': %s %s is outside %s%s",
					 r->name, k ? "device" : "writable path", p ? p : "?",
					 r->nrw ? r->rw[0] : "(none allowed)",
					 r->nrw > 1 ? " and the rule's other paths" : "");
				return -EPERM;
			}
		}
	}
	return 0;
}

/* The limits under the rule's: refused (-EPERM), or clamped (1, said in what). */
static int check_limits(const struct ceiling_rule *r, struct json_object *policy, char *what,
			size_t what_size, char *why, size_t why_size)
{
	struct json_object *lim = NULL;
	size_t off = 0;
	int got = 0;

	if (!json_object_object_get_ex(policy, "limits", &lim) ||
	    !json_object_is_type(lim, json_type_object))
		return 0;
	for (int i = 0; i < CL__COUNT; i++) {
		struct json_object *lv;
		int64_t asked;

		if (!r->max[i])
			continue;
		/* A limit not asked for (null, absent, 0) is unlimited: above any bound. */
		asked = json_object_object_get_ex(lim, limit_keys[i], &lv) &&
					json_object_is_type(lv, json_type_int)
				? json_object_get_int64(lv)
				: 0;
		if (asked > 0 && (uint64_t)asked <= r->max[i])
			continue;
		if (!r->clamp) {
			snprintf(why, why_size, "ceiling '%s': %s %s is above %" PRIu64, r->name,
				 limit_keys[i],
				 asked > 0 ? json_object_get_string(lv) : "unlimited", r->max[i]);
			return -EPERM;
		}
		json_object_object_add(lim, limit_keys[i], json_object_new_int64(r->max[i]));
		off += snprintf(what + off, off < what_size ? what_size - off : 0, "%s%s %" PRIu64,
				off ? ", " : "", limit_keys[i], r->max[i]);
		got = 1;
	}
	return got;
}

int ceiling_check(const struct ceiling_rule *r, struct json_object *policy, char *what,
		  size_t what_size, char *why, size_t why_size)
{
	struct json_object *v, *na = NULL;
	const char *mode = NULL, *net = NULL;
	enum sandbox_mode m;
	int ret;

	what[0] = 0;
	if (json_object_object_get_ex(policy, "mode", &v))
		mode = json_object_get_string(v);
	if (r->modes && (!mode || sandbox_mode_parse(mode, &m) < 0 || !(r->modes & (1U << m)))) {
		snprintf(why, why_size, "ceiling '%s': mode %s is not allowed", r->name,
			 mode ? mode : "?");
		return -EPERM;
	}
	/* The namespace layer off (--no-namespaces) is a weaker session too. */
	if (!r->no_namespaces && json_object_object_get_ex(policy, "namespaces", &v) &&
	    json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v)) {
		snprintf(why, why_size, "ceiling '%s': sessions without namespaces are not allowed",
			 r->name);
		return -EPERM;
	}
	if (json_object_object_get_ex(policy, "network", &v))
		net = json_object_get_string(v);
	json_object_object_get_ex(policy, "net_allow", &na);
	if (r->network >= 0) {
		int asked = net && streq(net, "allow")		     ? 2
			    : na && json_object_array_length(na) > 0 ? 1
								     : 0;

		if (asked > r->network) {
			snprintf(why, why_size, "ceiling '%s': network %s is above %s", r->name,
				 net_names[asked], net_names[r->network]);
			return -EPERM;
		}
	}
	ret = check_rw(r, policy, why, why_size);
	if (ret < 0)
		return ret;
	return check_limits(r, policy, what, what_size, why, why_size);
}
