// SPDX-License-Identifier: GPL-2.0
/*
 * Merging one JSON layer into a policy: absent keys inherit, scalars
 * replace, `extra` appends to lists and `restrictions` replaces them
 * (docs/config.md). The lists are merged in merge_lists.c, command rules
 * parsed in rules.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "merge_internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

static const char *const layer_keys[] = {
	"mode",	      "workspace", "network",	   "user",    "allow_unconfined", "private_tmp",
	"namespaces", "limits",	   "restrictions", "extra",   "read_host",	  "net_resolver",
	"ssh_agent",  "changes",   "undo",	   "net_ask",
};

#define LAYER_KEYS                                                                               \
	"mode, workspace, network, user, allow_unconfined, private_tmp, namespaces, read_host, " \
	"ssh_agent, limits, restrictions, extra, net_resolver, net_ask, changes, undo"
#define LIMIT_KEYS                                                            \
	"timeout_s, output_bytes, memory_mb, pids, cpu_percent, disk_mb, "    \
	"file_size_mb, open_files, pause_timeout_s, timeout_counts, on_oom, " \
	"on_disk"

/* An error at sub (a path inside the layer); always -EINVAL. */
__attribute__((format(printf, 4, 5))) int lerr(const struct layer_ctx *lc, struct policy_error *err,
					       const char *sub, const char *fmt, ...)
{
	char path[sizeof(err->path)];
	va_list ap;
	int r;

	path_join(path, sizeof(path), lc->prefix, sub);
	va_start(ap, fmt);
	r = policy_error_vset(err, lc->file, path, -EINVAL, fmt, ap);
	va_end(ap);
	return r;
}

int oom(const struct layer_ctx *lc, struct policy_error *err)
{
	return policy_error_set(err, lc->file, lc->prefix, -ENOMEM, "out of memory");
}

/* ---- value checks ---- */

bool merge_in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(s, list[i]))
			return true;
	return false;
}

/* A non-empty JSON string without NUL bytes. */
int merge_get_string(const struct layer_ctx *lc, struct policy_error *err, const char *sub,
		     struct json_object *v, const char **out)
{
	const char *s;
	int len;

	if (!json_object_is_type(v, json_type_string))
		return lerr(lc, err, sub, "must be a string");
	s = json_object_get_string(v);
	len = json_object_get_string_len(v);
	if (len == 0)
		return lerr(lc, err, sub, "must not be empty");
	if (strlen(s) != (size_t)len)
		return lerr(lc, err, sub, "must not contain a NUL character");
	*out = s;
	return 0;
}

static int get_bool(const struct layer_ctx *lc, struct policy_error *err, const char *sub,
		    struct json_object *v, bool *out)
{
	if (!json_object_is_type(v, json_type_boolean))
		return lerr(lc, err, sub, "must be true or false");
	*out = json_object_get_boolean(v);
	return 0;
}

/* ---- merging ---- */

static int merge_limits(struct bpfbox_policy *p, struct json_object *o, const struct layer_ctx *lc,
			struct policy_error *err)
{
	if (!json_object_is_type(o, json_type_object))
		return lerr(lc, err, "limits", "must be an object");
	json_object_object_foreach (o, key, v) {
		const struct limit_def *d = NULL;
		char sub[128];
		uint64_t u;

		path_join(sub, sizeof(sub), "limits", key);
		for (size_t i = 0; i < policy_n_limit_defs; i++)
			if (streq(key, policy_limit_defs[i].key))
				d = &policy_limit_defs[i];
		if (!d)
			return lerr(lc, err, sub, "unknown limit '%s'; valid limits: " LIMIT_KEYS,
				    key);
		if (d->kind == LK_CHOICE) {
			size_t n;

			for (n = 0; d->names[n]; n++)
				if (json_object_is_type(v, json_type_string) &&
				    streq(json_object_get_string(v), d->names[n]))
					break;
			if (!d->names[n])
				return lerr(lc, err, sub, "must be \"%s\" or \"%s\"", d->names[0],
					    d->names[1]);
			*(uint64_t *)((char *)&p->limits + d->offset) = n;
			continue;
		}
		if (json_object_is_type(v, json_type_string) && d->kind != LK_NUM) {
			const char *str = json_object_get_string(v);
			uint64_t ns;
			int r;

			/* A unit: stored in the field's own unit, not scaled. */
			if (d->kind == LK_SECONDS) {
				r = parse_duration_ns(str, &ns);
				u = ns / 1000000ULL;
			} else {
				r = d->kind == LK_MB ? parse_size_mb(str, &u) : parse_size(str, &u);
			}
			if (r < 0)
				return lerr(lc, err, sub, "'%s' is not %s", str,
					    d->kind == LK_SECONDS
						    ? "a duration such as 90, 500ms, 5s, 2m or 1h"
					    : d->kind == LK_MB ? "a size such as 512, 512M or 2G"
							       : "a size such as 65536, 64K or 1M");
			if (u < d->min * d->scale)
				return lerr(lc, err, sub, "must be at least %llu%s",
					    (unsigned long long)d->min,
					    d->kind == LK_SECONDS ? " s"
					    : d->kind == LK_MB	  ? " MB"
								  : "");
			if (u > POLICY_LIMIT_MAX * d->scale)
				return lerr(lc, err, sub, "'%s' is too large", str);
			*(uint64_t *)((char *)&p->limits + d->offset) = u;
			continue;
		}
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
			return lerr(
				lc, err, sub,
				d->kind == LK_NUM
					? "must be a non-negative integer"
					: "must be a non-negative integer or a string with a unit");
		u = json_object_get_uint64(v);
		if (u < d->min)
			return lerr(lc, err, sub,
				    "must be at least %llu; only timeout_s and "
				    "output_bytes take 0 (no limit)",
				    (unsigned long long)d->min);
		if (u > POLICY_LIMIT_MAX)
			return lerr(lc, err, sub, "must be at most %llu",
				    (unsigned long long)POLICY_LIMIT_MAX);
		*(uint64_t *)((char *)&p->limits + d->offset) = u * d->scale;
	}
	return 0;
}

/* "mode": a known mode, and a modes.NAME layer cannot switch to another. */
static int merge_mode(struct bpfbox_policy *p, struct json_object *v, const struct layer_ctx *lc,
		      struct policy_error *err)
{
	enum sandbox_mode m;
	const char *s;
	int r;

	r = merge_get_string(lc, err, "mode", v, &s);
	if (r < 0)
		return r;
	if (sandbox_mode_parse(s, &m) < 0)
		return lerr(lc, err, "mode",
			    "unknown mode '%s'; use workspace-write, "
			    "read-only or full-access",
			    s);
	if (lc->mode_name && !streq(s, lc->mode_name))
		return lerr(lc, err, "mode",
			    "the %s mode layer cannot switch to '%s'; "
			    "remove the key",
			    lc->mode_name, s);
	p->mode = m;
	return 0;
}

/* "changes": direct, review or apply (docs/runtime.md, "Change sets"). */
static int merge_changes(struct bpfbox_policy *p, struct json_object *v, const struct layer_ctx *lc,
			 struct policy_error *err)
{
	const char *s;
	int r = merge_get_string(lc, err, "changes", v, &s);

	if (r < 0)
		return r;
	if (changes_mode_parse(s, &p->changes) < 0)
		return lerr(lc, err, "changes", "unknown value '%s'; use direct, review or apply",
			    s);
	return 0;
}

/*
 * "undo": {"generations": N, "mb": M}, the bound of a workspace's history
 * of applies (docs/runtime.md, "Undo"); each at least 1.
 */
static int merge_undo(struct bpfbox_policy *p, struct json_object *o, const struct layer_ctx *lc,
		      struct policy_error *err)
{
	struct json_object *v;

	if (!json_object_is_type(o, json_type_object))
		return lerr(lc, err, "undo",
			    "must be an object: {\"generations\": 20, \"mb\": 1024}");
	json_object_object_foreach (o, key, val) {
		int64_t n = json_object_get_int64(val);

		if (!streq(key, "generations") && !streq(key, "mb"))
			return lerr(lc, err, "undo",
				    "unknown key '%s'; valid keys: generations, mb", key);
		if (!json_object_is_type(val, json_type_int) || n < 1 || n > 1000000)
			return lerr(lc, err, "undo", "%s must be an integer from 1 to 1000000",
				    key);
	}
	if (json_object_object_get_ex(o, "generations", &v))
		p->undo_generations = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "mb", &v))
		p->undo_mb = json_object_get_int64(v);
	return 0;
}

/* A string key into *out (replacing it); max: its length limit, 0 for none. */
static int merge_str(char **out, struct json_object *v, const char *key, size_t max,
		     const struct layer_ctx *lc, struct policy_error *err)
{
	const char *s;
	char *dup;
	int r;

	r = merge_get_string(lc, err, key, v, &s);
	if (r < 0)
		return r;
	if (max && strlen(s) >= max)
		return lerr(lc, err, key, "is longer than %zu bytes", max - 1);
	dup = strdup(s);
	if (!dup)
		return oom(lc, err);
	free(*out);
	*out = dup;
	return 0;
}

static int merge_network(struct bpfbox_policy *p, struct json_object *v, const struct layer_ctx *lc,
			 struct policy_error *err)
{
	const char *s;
	int r;

	r = merge_get_string(lc, err, "network", v, &s);
	if (r < 0)
		return r;
	if (streq(s, "deny"))
		p->net = NET_DENY;
	else if (streq(s, "allow"))
		p->net = NET_ALLOW;
	else
		return lerr(lc, err, "network",
			    "unknown value '%s'; use \"deny\" or "
			    "\"allow\"",
			    s);
	return 0;
}

/* "user": a name, or null for none. */
static int merge_user(struct bpfbox_policy *p, struct json_object *v, const struct layer_ctx *lc,
		      struct policy_error *err)
{
	if (json_object_is_type(v, json_type_null)) {
		free(p->user);
		p->user = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return lerr(lc, err, "user", "must be a user name or null");
	return merge_str(&p->user, v, "user", 0, lc, err);
}

static int merge_scalars(struct bpfbox_policy *p, struct json_object *layer,
			 const struct layer_ctx *lc, struct policy_error *err)
{
	const struct {
		const char *key;
		bool *out;
	} bools[] = {
		{"allow_unconfined", &p->allow_unconfined},
		{"read_host", &p->read_host},
		{"private_tmp", &p->private_tmp},
		{"namespaces", &p->namespaces},
		{"ssh_agent", &p->ssh_agent},
		{"net_ask", &p->net_ask},
	};
	struct json_object *v;
	int r = 0;

	if (json_object_object_get_ex(layer, "mode", &v))
		r = merge_mode(p, v, lc, err);
	if (r >= 0 && json_object_object_get_ex(layer, "workspace", &v))
		r = merge_str(&p->workspace, v, "workspace", PATH_MAX, lc, err);
	if (r >= 0 && json_object_object_get_ex(layer, "network", &v))
		r = merge_network(p, v, lc, err);
	if (r >= 0 && json_object_object_get_ex(layer, "user", &v))
		r = merge_user(p, v, lc, err);
	if (r >= 0 && json_object_object_get_ex(layer, "net_resolver", &v))
		r = merge_str(&p->net_resolver, v, "net_resolver", 0, lc, err);
	if (r >= 0 && json_object_object_get_ex(layer, "changes", &v))
		r = merge_changes(p, v, lc, err);
	if (r >= 0 && json_object_object_get_ex(layer, "undo", &v))
		r = merge_undo(p, v, lc, err);
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(bools); i++)
		if (json_object_object_get_ex(layer, bools[i].key, &v))
			r = get_bool(lc, err, bools[i].key, v, bools[i].out);
	return r < 0 ? r : 0;
}

static int merge_into(struct bpfbox_policy *p, struct json_object *layer, const char *origin,
		      const struct layer_ctx *lc, struct policy_error *err)
{
	struct json_object *v;
	int r;

	r = merge_scalars(p, layer, lc, err);
	if (r < 0)
		return r;
	if (json_object_object_get_ex(layer, "limits", &v)) {
		r = merge_limits(p, v, lc, err);
		if (r < 0)
			return r;
	}
	/* restrictions before extra, whatever the order in the file */
	if (json_object_object_get_ex(layer, "restrictions", &v)) {
		r = merge_lists(p, v, "restrictions", true, origin, lc, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(layer, "extra", &v)) {
		r = merge_lists(p, v, "extra", false, origin, lc, err);
		if (r < 0)
			return r;
	}
	if (strv_push(&p->origins, origin) < 0)
		return oom(lc, err);
	return 0;
}

int layer_merge(struct bpfbox_policy *p, struct json_object *layer, const char *origin,
		const struct layer_ctx *lc, struct policy_error *err)
{
	struct bpfbox_policy n;
	int r;

	if (!json_object_is_type(layer, json_type_object))
		return lerr(lc, err, NULL, "must be a JSON object");
	json_object_object_foreach (layer, key, val) {
		(void)val;
		if (!merge_in_list(key, layer_keys, ARRAY_SIZE(layer_keys)))
			return lerr(lc, err, key, "unknown key '%s'; valid keys: " LAYER_KEYS, key);
	}
	/* Work on a copy so that p is unchanged when the layer is invalid. */
	if (policy_dup(&n, p) < 0)
		return oom(lc, err);
	r = merge_into(&n, layer, origin ? origin : "layer", lc, err);
	if (r < 0) {
		policy_free(&n);
		return r;
	}
	policy_free(p);
	*p = n;
	return 0;
}

/*
 * The origins policy_load gives its layers: "FILE:sandbox",
 * "FILE:agents.NAME", "FILE:modes.MODE", "task:FILE", "file:FILE", "flags".
 * Only the first two may replace the deny list.
 */
int policy_merge_layer(struct bpfbox_policy *p, struct json_object *layer, const char *origin,
		       struct policy_error *err)
{
	struct layer_ctx lc = {.file = origin ? origin : "layer", .prefix = ""};
	_cleanup_free_ char *file = NULL;
	const char *colon;

	if (!origin || streq(origin, "flags")) {
		lc.file = "command line";
	} else if (startswith(origin, "task:") || startswith(origin, "file:")) {
		lc.file = origin + 5;
	} else if ((colon = strrchr(origin, ':'))) {
		const char *suffix = colon + 1;
		bool sandbox = streq(suffix, "sandbox");
		bool agent = startswith(suffix, "agents.") && suffix[7];
		bool mode = startswith(suffix, "modes.") && suffix[6];

		if (sandbox || agent || mode) {
			file = strndup(origin, colon - origin);
			if (!file)
				return policy_error_set(err, origin, "", -ENOMEM, "out of memory");
			lc.file = file;
			lc.prefix = suffix;
			lc.may_replace_deny = sandbox || agent;
			if (mode)
				lc.mode_name = suffix + 6;
		}
	}
	return layer_merge(p, layer, origin, &lc, err);
}
