// SPDX-License-Identifier: GPL-2.0
/*
 * Command rules: parsing (a layer's deny_commands and commands), the
 * decision for one exec, and the table bpf/cmd.bpf.c reads. docs/config.md
 * "Command rules" has the format; docs/SECURITY.md what they cannot stop.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "rules.h"
#include "../lib/util.h"

/*
 * Dangerous command lines, as words of argv joined with spaces (matched
 * at word boundaries: include/bpfbox/events.h, bpfbox_cmd_starts_ok): the
 * filesystem destroyed, the host stopped, a fork bomb, world-writable
 * trees, a download piped into a shell, a reverse shell, history wiped.
 */
const char *const rules_default_deny[] = {
	"rm -rf /",    "rm -rf /*",  "rm -rf ~",    "rm -rf ~/",  "mkfs",	  "mkfs.",
	"dd if=",      "> /dev/sda", "shutdown",    "reboot",	  "halt",	  "poweroff",
	"init 0",      "init 6",     ":(){:|:&};:", "chmod 777",  "chmod -R 777", "curl|sh",
	"curl | sh",   "curl|bash",  "curl | bash", "wget|sh",	  "wget | sh",	  "wget|bash",
	"wget | bash", "nc -e",	     "ncat -e",	    "history -c",
};
const size_t rules_n_default_deny = ARRAY_SIZE(rules_default_deny);

static const char *const action_names[] = {
	[CMD_ALLOW] = "allow",
	[CMD_DENY] = "deny",
	[CMD_ASK] = "ask",
};

const char *cmd_action_name(enum cmd_action a)
{
	return (unsigned int)a < ARRAY_SIZE(action_names) ? action_names[a] : "?";
}

void cmd_rules_clear(struct cmd_rules *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i].exe);
		free(r->v[i].argv);
		free(r->v[i].origin);
	}
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

static int rule_push(struct cmd_rules *r, const char *exe, const char *argv, enum cmd_action action,
		     const char *origin)
{
	struct cmd_rule *v = realloc(r->v, (r->n + 1) * sizeof(*v));
	struct cmd_rule *n;

	if (!v)
		return -ENOMEM;
	r->v = v;
	n = &v[r->n];
	memset(n, 0, sizeof(*n));
	n->action = action;
	if ((exe && !(n->exe = strdup(exe))) || (argv && !(n->argv = strdup(argv))) ||
	    (origin && !(n->origin = strdup(origin)))) {
		free(n->exe);
		free(n->argv);
		free(n->origin);
		return -ENOMEM;
	}
	r->n++;
	return 0;
}

int cmd_rules_copy(struct cmd_rules *dst, const struct cmd_rules *src)
{
	memset(dst, 0, sizeof(*dst));
	for (size_t i = 0; i < src->n; i++) {
		const struct cmd_rule *s = &src->v[i];

		if (rule_push(dst, s->exe, s->argv, s->action, s->origin) < 0) {
			cmd_rules_clear(dst);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Whether pat occurs in line at word boundaries (events.h has the rule). */
bool rules_pattern_in(const char *line, const char *pat)
{
	size_t n = strlen(pat);

	if (!n)
		return false;
	for (const char *at = strstr(line, pat); at; at = strstr(at + 1, pat)) {
		unsigned char prev = at > line ? (unsigned char)at[-1] : 0;

		if (bpfbox_cmd_starts_ok(prev, (unsigned char)pat[0]) &&
		    bpfbox_cmd_ends_ok((unsigned char)at[n], (unsigned char)pat[n - 1]))
			return true;
	}
	return false;
}

const char *rules_pattern_problem(const char *s)
{
	if (!*s)
		return "empty";
	if (strlen(s) >= BPFBOX_CMD_PAT_LEN)
		return "longer than 63 bytes (the kernel's bound)";
	return NULL;
}

/* NULL when s is an exe pattern the kernel can check, else why not. */
static const char *exe_problem(const char *s)
{
	size_t len = strlen(s);
	const char *star = strchr(s, '*');

	if (!len)
		return "empty";
	if (len >= BPFBOX_CMD_EXE_LEN)
		return "longer than 63 bytes";
	if (strpbrk(s, "?[]"))
		return "only a trailing '*' is a wildcard";
	if (star && star != s + len - 1)
		return "'*' may only end the pattern (a prefix)";
	if (s[0] != '/' && strchr(s, '/'))
		return "a pattern with '/' must be an absolute path";
	return NULL;
}

/* A rule's "action" (esub: the rule's path in the layer): allow, deny or ask. */
static int rule_action(const char *act, const char *esub, enum cmd_action *action,
		       const struct layer_ctx *lc, struct policy_error *err)
{
	char ksub[160];

	path_join(ksub, sizeof(ksub), esub, "action");
	if (!act)
		return lerr(lc, err, ksub, "missing; use \"allow\", \"deny\" or \"ask\"");
	for (size_t k = 0; k < ARRAY_SIZE(action_names); k++) {
		if (streq(act, action_names[k])) {
			*action = (enum cmd_action)k;
			return 0;
		}
	}
	return lerr(lc, err, ksub,
		    "unknown action '%.40s'; use allow, deny "
		    "or ask",
		    act);
}

int rules_parse(struct json_object *a, const char *sub, const char *origin, struct cmd_rules *out,
		const struct layer_ctx *lc, struct policy_error *err)
{
	size_t n;

	if (!json_object_is_type(a, json_type_array))
		return lerr(lc, err, sub,
			    "must be an array of {\"exe\", \"argv\", "
			    "\"action\"} objects");
	n = json_object_array_length(a);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i);
		const char *exe = NULL, *argv = NULL, *act = NULL, *why;
		enum cmd_action action = CMD_DENY;
		char esub[128], ksub[160];

		path_index(esub, sizeof(esub), sub, i);
		if (!json_object_is_type(o, json_type_object))
			return lerr(lc, err, esub,
				    "must be an object {\"exe\": NAME, "
				    "\"argv\": PATTERN, "
				    "\"action\": \"allow\"|\"deny\"|\"ask\"}");
		json_object_object_foreach (o, key, val) {
			const char **dst = streq(key, "exe")	  ? &exe
					   : streq(key, "argv")	  ? &argv
					   : streq(key, "action") ? &act
								  : NULL;

			path_join(ksub, sizeof(ksub), esub, key);
			if (!dst)
				return lerr(lc, err, ksub,
					    "unknown key '%s'; valid keys: "
					    "exe, argv, action",
					    key);
			if (!json_object_is_type(val, json_type_string) ||
			    strlen(json_object_get_string(val)) !=
				    (size_t)json_object_get_string_len(val))
				return lerr(lc, err, ksub, "must be a string without NUL");
			*dst = json_object_get_string(val);
		}
		if (rule_action(act, esub, &action, lc, err) < 0)
			return -EINVAL;
		if (!exe && !argv)
			return lerr(lc, err, esub,
				    "matches nothing: give \"exe\" and/or "
				    "\"argv\" (\"exe\": \"*\" "
				    "for every command)");
		if (exe && (why = exe_problem(exe))) {
			path_join(ksub, sizeof(ksub), esub, "exe");
			return lerr(lc, err, ksub,
				    "invalid exe '%.80s': %s; use NAME, NAME*, "
				    "/ABS/PATH or "
				    "/ABS/DIR/*",
				    exe, why);
		}
		if (argv && (why = rules_pattern_problem(argv))) {
			path_join(ksub, sizeof(ksub), esub, "argv");
			return lerr(lc, err, ksub, "invalid argv pattern: %s", why);
		}
		if (exe && streq(exe, "*"))
			exe = NULL;
		if (rule_push(out, exe, argv, action, origin) < 0)
			return oom(lc, err);
	}
	return 0;
}

bool rules_any(const struct bpfbox_policy *p)
{
	return p->deny_commands.n || p->cmd_rules.n;
}

__u64 rules_hash(const char *s, size_t n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n && s[i]; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool exe_match(const char *pat, const char *path, const char *target)
{
	size_t len = strlen(pat);
	bool prefix = len && pat[len - 1] == '*';

	if (prefix)
		len--;
	if (pat[0] == '/')
		return prefix ? strncmp(path, pat, len) == 0 : streq(path, pat);
	if (prefix)
		return strncmp(base_name(path), pat, len) == 0 ||
		       (target && strncmp(target, pat, len) == 0);
	return streq(base_name(path), pat) || (target && streq(target, pat));
}

/* src into dst, cut to size (labels are short on purpose). */
static void cut(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void label_rule(char *buf, size_t size, const struct bpfbox_policy *p, size_t i)
{
	const struct cmd_rule *r = &p->cmd_rules.v[i];
	char full[256];

	snprintf(full, sizeof(full), "commands[%zu]%s%s%s%s", i, r->exe ? " exe=" : "",
		 r->exe ? r->exe : "", r->argv ? " argv=" : "", r->argv ? r->argv : "");
	cut(buf, size, full);
}

static void label_pattern(char *buf, size_t size, const char *pat)
{
	char full[128];

	snprintf(full, sizeof(full), "deny_commands: %s", pat);
	cut(buf, size, full);
}

void rules_check(const struct bpfbox_policy *p, const char *path, char *const *argv,
		 struct rules_verdict *v)
{
	char joined[BPFBOX_CMD_ARGV_SCAN], real[PATH_MAX];
	const char *target = NULL;
	size_t len = 0;

	memset(v, 0, sizeof(*v));
	v->action = CMD_ALLOW;
	for (size_t i = 0; argv[i]; i++) {
		for (const char *c = argv[i]; *c && len < sizeof(joined) - 1; c++)
			joined[len++] = *c;
		if (argv[i + 1] && len < sizeof(joined) - 1)
			joined[len++] = ' ';
	}
	joined[len] = '\0';
	/* The name of what a symlink leads to, as the kernel's exe_file has it. */
	if (realpath(path, real))
		target = base_name(real);
	for (size_t i = 0; i < p->deny_commands.n; i++) {
		if (rules_pattern_in(joined, p->deny_commands.v[i])) {
			v->action = CMD_DENY;
			v->matched = true;
			label_pattern(v->rule, sizeof(v->rule), p->deny_commands.v[i]);
			return;
		}
	}
	for (size_t i = 0; i < p->cmd_rules.n; i++) {
		const struct cmd_rule *r = &p->cmd_rules.v[i];

		if (r->exe && !exe_match(r->exe, path, target))
			continue;
		if (r->argv && !rules_pattern_in(joined, r->argv))
			continue;
		v->action = r->action;
		v->matched = true;
		label_rule(v->rule, sizeof(v->rule), p, i);
		return;
	}
}

void rules_check_command(const struct bpfbox_policy *p, char *const *argv, struct rules_verdict *v)
{
	char found[PATH_MAX];
	const char *path = argv[0], *env = getenv("PATH");

	/* What execvp would run: the first executable of that name on PATH. */
	if (!strchr(argv[0], '/') && env) {
		for (const char *d = env; *d;) {
			size_t n = strcspn(d, ":");
			int len = snprintf(found, sizeof(found), "%.*s/%s", (int)n, d, argv[0]);

			if (n && len > 0 && (size_t)len < sizeof(found) &&
			    access(found, X_OK) == 0) {
				path = found;
				break;
			}
			d += n + (d[n] == ':');
		}
	}
	rules_check(p, path, argv, v);
}

static void fill(struct bpfbox_cmd_rule *k, const char *exe, const char *pat,
		 enum cmd_action action, const char *label)
{
	memset(k, 0, sizeof(*k));
	k->action = action;
	if (exe) {
		size_t len = strlen(exe);
		bool prefix = exe[len - 1] == '*';

		if (prefix)
			len--;
		k->exe_kind = exe[0] == '/'
				      ? (prefix ? BPFBOX_CMD_EXE_PATH_PREFIX : BPFBOX_CMD_EXE_PATH)
				      : (prefix ? BPFBOX_CMD_EXE_NAME_PREFIX : BPFBOX_CMD_EXE_NAME);
		memcpy(k->exe, exe, len);
		k->exe_len = len;
		k->exe_hash = rules_hash(exe, len);
	}
	if (pat) {
		k->pat_len = strlen(pat);
		memcpy(k->pat, pat, k->pat_len);
	}
	cut(k->label, sizeof(k->label), label);
}

static void set_pair(struct bpfbox_cmd_table *t, unsigned char a, unsigned char b)
{
	unsigned int pair = (unsigned int)a << 8 | b;

	t->pairs[pair >> 6] |= 1ULL << (pair & 63);
}

static void add_pairs(struct bpfbox_cmd_table *t, const char *pat)
{
	if (!pat)
		return;
	if (pat[1]) {
		set_pair(t, pat[0], pat[1]);
		return;
	}
	for (unsigned int b = 0; b < 256; b++)
		set_pair(t, pat[0], b);
}

int rules_compile(const struct bpfbox_policy *p, struct bpfbox_cmd_table *t)
{
	char label[BPFBOX_CMD_LABEL_LEN];

	memset(t, 0, sizeof(*t));
	if (p->deny_commands.n + p->cmd_rules.n > BPFBOX_CMD_RULES_MAX)
		return -E2BIG;
	for (size_t i = 0; i < p->deny_commands.n; i++) {
		const char *pat = p->deny_commands.v[i];

		if (rules_pattern_problem(pat))
			return -EINVAL;
		label_pattern(label, sizeof(label), pat);
		fill(&t->r[t->n++], NULL, pat, CMD_DENY, label);
		add_pairs(t, pat);
	}
	for (size_t i = 0; i < p->cmd_rules.n; i++) {
		const struct cmd_rule *r = &p->cmd_rules.v[i];

		if ((r->exe && exe_problem(r->exe)) || (r->argv && rules_pattern_problem(r->argv)))
			return -EINVAL;
		label_rule(label, sizeof(label), p, i);
		fill(&t->r[t->n++], r->exe, r->argv, r->action, label);
		add_pairs(t, r->argv);
	}
	return 0;
}

struct json_object *rules_to_json(const struct cmd_rules *r)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < r->n; i++) {
		struct json_object *o = json_object_new_object();

		if (!o)
			break;
		if (r->v[i].exe)
			json_object_object_add(o, "exe", json_object_new_string(r->v[i].exe));
		if (r->v[i].argv)
			json_object_object_add(o, "argv", json_object_new_string(r->v[i].argv));
		json_object_object_add(o, "action",
				       json_object_new_string(cmd_action_name(r->v[i].action)));
		if (r->v[i].origin)
			json_object_object_add(o, "layer", json_object_new_string(r->v[i].origin));
		json_object_array_add(a, o);
	}
	return a;
}

int rules_compile_json(struct json_object *policy, struct bpfbox_cmd_table *t)
{
	struct bpfbox_policy p;
	struct json_object *a;
	int r = 0;

	memset(&p, 0, sizeof(p));
	memset(t, 0, sizeof(*t));
	if (json_object_object_get_ex(policy, "deny_commands", &a)) {
		if (!json_object_is_type(a, json_type_array))
			return -EINVAL;
		for (size_t i = 0; !r && i < json_object_array_length(a); i++) {
			const char *pat = json_object_get_string(json_object_array_get_idx(a, i));

			r = pat ? strv_push(&p.deny_commands, pat) : -EINVAL;
		}
	}
	if (!r && json_object_object_get_ex(policy, "commands", &a)) {
		if (!json_object_is_type(a, json_type_array))
			r = -EINVAL;
		for (size_t i = 0; !r && i < json_object_array_length(a); i++) {
			struct json_object *o = json_object_array_get_idx(a, i), *v;
			const char *exe = NULL, *argv = NULL, *act = NULL;
			int action = -1;

			if (json_object_object_get_ex(o, "exe", &v))
				exe = json_object_get_string(v);
			if (json_object_object_get_ex(o, "argv", &v))
				argv = json_object_get_string(v);
			if (json_object_object_get_ex(o, "action", &v))
				act = json_object_get_string(v);
			for (size_t k = 0; act && k < ARRAY_SIZE(action_names); k++)
				if (streq(act, action_names[k]))
					action = (int)k;
			r = action < 0 ? -EINVAL
				       : rule_push(&p.cmd_rules, exe, argv, (enum cmd_action)action,
						   NULL);
		}
	}
	if (!r)
		r = rules_compile(&p, t);
	strv_clear(&p.deny_commands);
	cmd_rules_clear(&p.cmd_rules);
	return r;
}
