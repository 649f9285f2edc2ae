// SPDX-License-Identifier: GPL-2.0
/*
 * Merging one JSON layer into a policy: absent keys inherit, scalars
 * replace, `extra` appends to lists and `restrictions` replaces them
 * (docs/config.md). Command rules are parsed in rules.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "rules.h"
#include "../lib/log.h"
#include "../lib/util.h"

static const char *const layer_keys[] = {
	"mode",	      "workspace", "network",	   "user",  "allow_unconfined", "private_tmp",
	"namespaces", "limits",	   "restrictions", "extra", "read_host",	"net_resolver",
};
#define LAYER_KEYS                                                                               \
	"mode, workspace, network, user, allow_unconfined, private_tmp, namespaces, read_host, " \
	"limits, restrictions, extra, net_resolver"
#define LIMIT_KEYS                                                            \
	"timeout_s, output_bytes, memory_mb, pids, cpu_percent, disk_mb, "    \
	"file_size_mb, open_files, pause_timeout_s, timeout_counts, on_oom, " \
	"on_disk"
#define DENY_FORMS "an absolute path, **/NAME, **/*.SUFFIX, **/NAME.* or **/DIR/NAME"

/* Sets NAME=VALUE, replacing an earlier entry for NAME in place. */
static int env_set(struct strv *env, const char *name, const char *value)
{
	size_t len = strlen(name);
	char *entry;

	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], name, len) == 0 && env->v[i][len] == '=') {
			free(env->v[i]);
			env->v[i] = entry;
			return 0;
		}
	}
	{
		int r = strv_push(env, entry);

		free(entry);
		return r;
	}
}

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

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(s, list[i]))
			return true;
	return false;
}

/* A non-empty JSON string without NUL bytes. */
static int get_string(const struct layer_ctx *lc, struct policy_error *err, const char *sub,
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

/* A single path component: no '/', no '*', not "." or "..". */
static bool plain_name(const char *s, size_t len)
{
	if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/' || s[i] == '*')
			return false;
	return true;
}

/* NULL when s is a valid deny pattern, else why not. */
static const char *deny_pattern_problem(const char *s)
{
	size_t len = strlen(s);
	const char *rest, *slash;

	if (len == 0)
		return "must not be empty";
	if (len > 255)
		return "is longer than 255 bytes";
	if (s[0] == '/') {
		const char *c = s + 1;

		/* Every component plain: no "//", trailing '/', "." or "..". */
		for (;;) {
			size_t n = strcspn(c, "/");

			if (!plain_name(c, n))
				return "an absolute pattern must be a plain "
				       "path "
				       "(no '*', '.', '..' or empty "
				       "components)";
			if (!c[n])
				return NULL;
			c += n + 1;
		}
	}
	if (!startswith(s, "**/"))
		return "must be an absolute path or start with '**/'";
	rest = s + 3;
	slash = strchr(rest, '/');
	if (slash) {
		if (plain_name(rest, slash - rest) && plain_name(slash + 1, strlen(slash + 1)))
			return NULL;
		return "**/DIR/NAME takes two plain names without '*'";
	}
	len = strlen(rest);
	if (rest[0] == '*') {
		if (len >= 3 && rest[1] == '.' && plain_name(rest + 2, len - 2))
			return NULL;
		return "'*' is only allowed as **/*.SUFFIX or **/NAME.*";
	}
	if (len >= 3 && rest[len - 1] == '*' && rest[len - 2] == '.') {
		if (plain_name(rest, len - 2))
			return NULL;
		return "'*' is only allowed as **/*.SUFFIX or **/NAME.*";
	}
	if (plain_name(rest, len))
		return NULL;
	return "'*' is only allowed as **/*.SUFFIX or **/NAME.*";
}

static bool env_name_ok(const char *s)
{
	if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (const char *c = s + 1; *c; c++)
		if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return strlen(s) <= 255;
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

/* A JSON array of paths (ro, rw) or deny patterns into *out. */
enum list_kind {
	LIST_PATH,
	LIST_DENY,
	LIST_NET,
	LIST_EXEC,
	LIST_CMD,
};

static const char *exec_deny_problem(const char *s)
{
	if (!*s)
		return "empty";
	if (strlen(s) >= 256)
		return "longer than 255 bytes";
	if (s[0] != '/' && strchr(s, '/'))
		return "a name with a '/' must be an absolute path";
	return NULL;
}

static int parse_list(struct json_object *a, const char *sub, enum list_kind kind, struct strv *out,
		      const struct layer_ctx *lc, struct policy_error *err)
{
	size_t n;

	if (!json_object_is_type(a, json_type_array))
		return lerr(lc, err, sub, "must be an array of strings");
	n = json_object_array_length(a);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(a, i);
		const char *s, *why;
		char esub[128];
		int r;

		path_index(esub, sizeof(esub), sub, i);
		r = get_string(lc, err, esub, v, &s);
		if (r < 0)
			return r;
		if (kind == LIST_NET) {
			char cidr[64];
			uint16_t lo, hi;

			if (net_rule_parse(s, cidr, sizeof(cidr), &lo, &hi) < 0 &&
			    net_name_rule_parse(s, cidr, sizeof(cidr), &lo, &hi) < 0)
				return lerr(
					lc, err, esub,
					"invalid network rule '%.80s'; use HOST[:PORT[-PORT]] with "
					"HOST a name (pypi.org), a wildcard (*.example.com), an "
					"address or a CIDR, e.g. pypi.org:443 or 10.0.0.0/8:443",
					s);
		} else if (kind == LIST_EXEC) {
			why = exec_deny_problem(s);
			if (why)
				return lerr(lc, err, esub, "invalid exec_deny entry '%.80s': %s", s,
					    why);
		} else if (kind == LIST_CMD) {
			why = rules_pattern_problem(s);
			if (why)
				return lerr(lc, err, esub, "invalid command pattern: %s", why);
		} else if (kind == LIST_DENY) {
			why = deny_pattern_problem(s);
			if (why && strlen(s) > 80)
				return lerr(lc, err, esub,
					    "invalid deny pattern: %s; "
					    "use " DENY_FORMS,
					    why);
			if (why)
				return lerr(lc, err, esub,
					    "invalid deny pattern '%s': %s; "
					    "use " DENY_FORMS,
					    s, why);
		} else if (strlen(s) >= PATH_MAX) {
			return lerr(lc, err, esub, "is longer than %d bytes", PATH_MAX - 1);
		}
		if (strv_push_unique(out, s) < 0)
			return oom(lc, err);
	}
	return 0;
}

/* An {"NAME": "VALUE"} object into *env (set, replacing by NAME). */
static int parse_env(struct json_object *o, const char *sub, struct strv *env,
		     const struct layer_ctx *lc, struct policy_error *err)
{
	if (!json_object_is_type(o, json_type_object))
		return lerr(lc, err, sub, "must be an object of \"NAME\": \"VALUE\" strings");
	json_object_object_foreach (o, name, v) {
		char esub[128];
		const char *val;

		path_join(esub, sizeof(esub), sub, name);
		if (!env_name_ok(name))
			return lerr(lc, err, esub,
				    "invalid variable name '%s'; use letters, "
				    "digits and '_', not starting with a digit",
				    name);
		if (!json_object_is_type(v, json_type_string))
			return lerr(lc, err, esub, "must be a string");
		val = json_object_get_string(v);
		if (strlen(val) != (size_t)json_object_get_string_len(v))
			return lerr(lc, err, esub, "must not contain a NUL character");
		if (env_set(env, name, val) < 0)
			return oom(lc, err);
	}
	return 0;
}

/* restrictions (replace) or extra (append) of one layer. */
static int merge_lists(struct bpfbox_policy *p, struct json_object *o, const char *sect,
		       bool replace, const char *origin, const struct layer_ctx *lc,
		       struct policy_error *err)
{
	static const char *const keys[] = {"ro",       "rw",	    "deny",	     "net_allow",
					   "net_deny", "exec_deny", "deny_commands", "env",
					   "commands"};
	static const enum list_kind kinds[] = {LIST_PATH, LIST_PATH, LIST_DENY, LIST_NET,
					       LIST_NET,  LIST_EXEC, LIST_CMD};
	struct strv *lists[] = {&p->ro_paths, &p->rw_paths,  &p->deny_paths,   &p->net_allow,
				&p->net_deny, &p->exec_deny, &p->deny_commands};
	struct json_object *v;
	char sub[128];
	int r;

	if (!json_object_is_type(o, json_type_object))
		return lerr(lc, err, sect, "must be an object");
	json_object_object_foreach (o, key, val) {
		(void)val;
		if (!in_list(key, keys, ARRAY_SIZE(keys))) {
			path_join(sub, sizeof(sub), sect, key);
			return lerr(lc, err, sub,
				    "unknown key '%s'; valid keys: ro, rw, "
				    "deny, net_allow, net_deny, exec_deny, deny_commands, "
				    "commands, env",
				    key);
		}
	}
	if (replace && json_object_object_get_ex(o, "deny", NULL) && !lc->may_replace_deny) {
		path_join(sub, sizeof(sub), sect, "deny");
		return lerr(lc, err, sub,
			    "deny list can only be replaced in the global or "
			    "agent config; use extra.deny");
	}
	/* The command denials are protected the same way (docs/config.md). */
	for (size_t i = 0; i < 2; i++) {
		static const char *const prot[] = {"deny_commands", "commands"};

		if (replace && json_object_object_get_ex(o, prot[i], NULL) &&
		    !lc->may_replace_deny) {
			path_join(sub, sizeof(sub), sect, prot[i]);
			return lerr(lc, err, sub,
				    "%s can only be replaced in the global or agent config; "
				    "use extra.%s",
				    prot[i], prot[i]);
		}
	}
	if (json_object_object_get_ex(o, "commands", &v)) {
		struct cmd_rules parsed = {0};

		path_join(sub, sizeof(sub), sect, "commands");
		if (!replace) {
			r = cmd_rules_copy(&parsed, &p->cmd_rules);
			if (r < 0)
				return oom(lc, err);
		}
		r = rules_parse(v, sub, origin, &parsed, lc, err);
		if (r < 0) {
			cmd_rules_clear(&parsed);
			return r;
		}
		cmd_rules_clear(&p->cmd_rules);
		p->cmd_rules = parsed;
	}
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		struct strv parsed = {0};

		if (!json_object_object_get_ex(o, keys[i], &v))
			continue;
		path_join(sub, sizeof(sub), sect, keys[i]);
		r = parse_list(v, sub, kinds[i], &parsed, lc, err);
		if (r < 0) {
			strv_clear(&parsed);
			return r;
		}
		if (replace) {
			strv_clear(lists[i]);
			*lists[i] = parsed;
			continue;
		}
		for (size_t j = 0; j < parsed.n && r >= 0; j++)
			r = strv_push_unique(lists[i], parsed.v[j]);
		strv_clear(&parsed);
		if (r < 0)
			return oom(lc, err);
	}
	if (json_object_object_get_ex(o, "env", &v)) {
		path_join(sub, sizeof(sub), sect, "env");
		if (replace) {
			struct strv env = {0};

			r = parse_env(v, sub, &env, lc, err);
			if (r < 0) {
				strv_clear(&env);
				return r;
			}
			strv_clear(&p->env);
			p->env = env;
		} else {
			r = parse_env(v, sub, &p->env, lc, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int merge_scalars(struct bpfbox_policy *p, struct json_object *layer,
			 const struct layer_ctx *lc, struct policy_error *err)
{
	struct json_object *v;
	const char *s;
	int r;

	if (json_object_object_get_ex(layer, "mode", &v)) {
		enum sandbox_mode m;

		r = get_string(lc, err, "mode", v, &s);
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
	}
	if (json_object_object_get_ex(layer, "workspace", &v)) {
		char *dup;

		r = get_string(lc, err, "workspace", v, &s);
		if (r < 0)
			return r;
		if (strlen(s) >= PATH_MAX)
			return lerr(lc, err, "workspace", "is longer than %d bytes", PATH_MAX - 1);
		dup = strdup(s);
		if (!dup)
			return oom(lc, err);
		free(p->workspace);
		p->workspace = dup;
	}
	if (json_object_object_get_ex(layer, "network", &v)) {
		r = get_string(lc, err, "network", v, &s);
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
	}
	if (json_object_object_get_ex(layer, "user", &v)) {
		char *dup = NULL;

		if (!json_object_is_type(v, json_type_null)) {
			if (!json_object_is_type(v, json_type_string))
				return lerr(lc, err, "user", "must be a user name or null");
			r = get_string(lc, err, "user", v, &s);
			if (r < 0)
				return r;
			dup = strdup(s);
			if (!dup)
				return oom(lc, err);
		}
		free(p->user);
		p->user = dup;
	}
	if (json_object_object_get_ex(layer, "net_resolver", &v)) {
		char *dup;

		r = get_string(lc, err, "net_resolver", v, &s);
		if (r < 0)
			return r;
		dup = strdup(s);
		if (!dup)
			return oom(lc, err);
		free(p->net_resolver);
		p->net_resolver = dup;
	}
	if (json_object_object_get_ex(layer, "allow_unconfined", &v)) {
		r = get_bool(lc, err, "allow_unconfined", v, &p->allow_unconfined);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(layer, "read_host", &v)) {
		r = get_bool(lc, err, "read_host", v, &p->read_host);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(layer, "private_tmp", &v)) {
		r = get_bool(lc, err, "private_tmp", v, &p->private_tmp);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(layer, "namespaces", &v)) {
		r = get_bool(lc, err, "namespaces", v, &p->namespaces);
		if (r < 0)
			return r;
	}
	return 0;
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
		if (!in_list(key, layer_keys, ARRAY_SIZE(layer_keys)))
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
