// SPDX-License-Identifier: GPL-2.0
/*
 * A layer's lists (docs/config.md): each entry checked for its kind
 * (paths, deny patterns, network rules, exec denials, command patterns,
 * env names), then appended (`extra`) or replacing (`restrictions`).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "merge_internal.h"
#include "rules.h"
#include "../lib/util.h"

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
	/* Every component plain: no "//", trailing '/', "." or "..". */
	if (s[0] == '/')
		return path_plain(s) && !strchr(s, '*')
			       ? NULL
			       : "an absolute pattern must be a plain path "
				 "(no '*', '.', '..' or empty components)";
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

/* A JSON array of paths (ro, rw) or deny patterns into *out. */
enum list_kind {
	LIST_PATH,
	LIST_DENY,
	LIST_NET,
	LIST_EXEC,
	LIST_CMD,
	LIST_SECRET,
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
		r = merge_get_string(lc, err, esub, v, &s);
		if (r < 0)
			return r;
		if (kind == LIST_NET) {
			char cidr[64], m[NET_HTTP_METHODS_LEN], rp[NET_HTTP_PATH_LEN];
			uint16_t lo, hi;

			/* Requests are allowed, never denied: a deny names hosts and ports. */
			if (strchr(s, ' ') && net_http_rule_parse(s, m, rp, &why) < 0)
				return lerr(lc, err, esub, "invalid HTTP rule '%.80s': %s", s, why);
			if (strchr(s, ' ') && strstr(sub, "net_deny"))
				return lerr(lc, err, esub,
					    "'%.80s': a net_deny rule names a host and ports, not "
					    "requests; allow the requests wanted instead",
					    s);
			if (net_rule_parse(s, cidr, sizeof(cidr), &lo, &hi) < 0 &&
			    net_name_rule_parse(s, cidr, sizeof(cidr), &lo, &hi) < 0)
				return lerr(
					lc, err, esub,
					"invalid network rule '%.80s'; use HOST[:PORT[-PORT]] with "
					"HOST a name (pypi.org), a wildcard (*.example.com), an "
					"address or a CIDR, e.g. pypi.org:443 or 10.0.0.0/8:443",
					s);
		} else if (kind == LIST_SECRET) {
			struct secret_spec spec;

			if (secret_spec_parse(s, &spec, &why) < 0)
				return lerr(lc, err, esub, "invalid secret '%.80s': %s", s, why);
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

/* The section's keys are known; restrictions may replace deny lists only where allowed. */
static int check_sect_keys(struct json_object *o, const char *sect, bool replace,
			   const char *const *keys, size_t nkeys, const struct layer_ctx *lc,
			   struct policy_error *err)
{
	char sub[128];

	json_object_object_foreach (o, key, val) {
		(void)val;
		if (!merge_in_list(key, keys, nkeys)) {
			path_join(sub, sizeof(sub), sect, key);
			return lerr(lc, err, sub,
				    "unknown key '%s'; valid keys: ro, rw, "
				    "devices, deny, net_allow, net_deny, secrets, exec_deny, "
				    "deny_commands, commands, env",
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
	return 0;
}

/* The section's "commands": parsed in rules.c, appended or replacing. */
static int merge_commands(struct bpfbox_policy *p, struct json_object *v, const char *sect,
			  bool replace, const char *origin, const struct layer_ctx *lc,
			  struct policy_error *err)
{
	struct cmd_rules parsed = {0};
	char sub[128];
	int r;

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
	return 0;
}

/* The section's "env": set by name, or replacing the whole environment. */
static int merge_env(struct bpfbox_policy *p, struct json_object *v, const char *sect, bool replace,
		     const struct layer_ctx *lc, struct policy_error *err)
{
	char sub[128];
	int r;

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
	return 0;
}

int merge_lists(struct bpfbox_policy *p, struct json_object *o, const char *sect, bool replace,
		const char *origin, const struct layer_ctx *lc, struct policy_error *err)
{
	static const char *const keys[] = {"ro",	"rw",	    "devices",	 "deny",
					   "net_allow", "net_deny", "exec_deny", "deny_commands",
					   "secrets",	"env",	    "commands"};
	static const enum list_kind kinds[] = {LIST_PATH, LIST_PATH, LIST_PATH,
					       LIST_DENY, LIST_NET,  LIST_NET,
					       LIST_EXEC, LIST_CMD,  LIST_SECRET};
	struct strv *lists[] = {&p->ro_paths,	&p->rw_paths,	   &p->devices,
				&p->deny_paths, &p->net_allow,	   &p->net_deny,
				&p->exec_deny,	&p->deny_commands, &p->secrets};
	struct json_object *v;
	char sub[128];
	int r;

	if (!json_object_is_type(o, json_type_object))
		return lerr(lc, err, sect, "must be an object");
	r = check_sect_keys(o, sect, replace, keys, ARRAY_SIZE(keys), lc, err);
	if (r < 0)
		return r;
	if (json_object_object_get_ex(o, "commands", &v)) {
		r = merge_commands(p, v, sect, replace, origin, lc, err);
		if (r < 0)
			return r;
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
	if (json_object_object_get_ex(o, "env", &v))
		return merge_env(p, v, sect, replace, lc, err);
	return 0;
}
