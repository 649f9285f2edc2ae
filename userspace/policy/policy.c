// SPDX-License-Identifier: GPL-2.0
/*
 * The policy core: built-in defaults, merging one JSON layer into a policy,
 * and the policy as JSON. Reading files, the layer order and path expansion
 * are in load.c, the final checks in validate.c; docs/config.md has the
 * format.
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
#include "../lib/log.h"
#include "../lib/util.h"

static const char *const default_deny[] = {
	"/etc/shadow",	   "/etc/gshadow",
	"/etc/sudoers",	   "/etc/sudoers.d",
	"**/.env",	   "**/.env.*",
	"**/credentials",  "**/credentials.*",
	"**/secrets",	   "**/secrets.*",
	"**/*.pem",	   "**/*.key",
	"**/*.p12",	   "**/*.pfx",
	"**/.ssh",	   "**/id_rsa",
	"**/id_dsa",	   "**/id_ecdsa",
	"**/id_ed25519",   "**/.aws",
	"**/.azure",	   "**/.config/gcloud",
	"**/.gnupg",	   "**/.docker/config.json",
	"**/.netrc",	   "**/.npmrc",
	"**/.pypirc",	   "**/.git-credentials",
	"**/.kube/config",
};

#define LIMIT(k, field, m, s, kd)                                          \
	{                                                                  \
		.key = k, .offset = offsetof(struct policy_limits, field), \
		.min = m, .scale = s, .kind = kd                           \
	}
#define CHOICE(k, field, n)                                                \
	{                                                                  \
		.key = k, .offset = offsetof(struct policy_limits, field), \
		.scale = 1, .kind = LK_CHOICE, .names = n                  \
	}

static const char *const timeout_counts_names[] = { "wall", "running", NULL };
static const char *const on_limit_names[] = { "pause", "kill", NULL };

const struct limit_def policy_limit_defs[] = {
	LIMIT("timeout_s", timeout_ms, 0, 1000, LK_SECONDS),
	LIMIT("output_bytes", output_bytes, 0, 1, LK_BYTES),
	LIMIT("memory_mb", memory_mb, 16, 1, LK_MB),
	LIMIT("pids", pids, 4, 1, LK_NUM),
	LIMIT("cpu_percent", cpu_percent, 1, 1, LK_NUM),
	LIMIT("disk_mb", disk_mb, 1, 1, LK_MB),
	LIMIT("file_size_mb", file_size_mb, 1, 1, LK_MB),
	LIMIT("open_files", open_files, 16, 1, LK_NUM),
	LIMIT("pause_timeout_s", pause_timeout_ms, 1, 1000, LK_SECONDS),
	CHOICE("timeout_counts", timeout_counts, timeout_counts_names),
	CHOICE("on_oom", on_oom, on_limit_names),
	CHOICE("on_disk", on_disk, on_limit_names),
};

const size_t policy_n_limit_defs = ARRAY_SIZE(policy_limit_defs);

static const char *const layer_keys[] = {
	"mode",	       "workspace", "network",	    "user",  "allow_unconfined",
	"private_tmp", "namespaces", "limits",    "restrictions", "extra", "read_host", "net_resolver",
};
#define LAYER_KEYS                                                        \
	"mode, workspace, network, user, allow_unconfined, private_tmp, namespaces, read_host, " \
	"limits, restrictions, extra, net_resolver"
#define LIMIT_KEYS                                                         \
	"timeout_s, output_bytes, memory_mb, pids, cpu_percent, disk_mb, " \
	"file_size_mb, open_files, pause_timeout_s, timeout_counts, on_oom, " \
	"on_disk"
#define DENY_FORMS \
	"an absolute path, **/NAME, **/*.SUFFIX, **/NAME.* or **/DIR/NAME"

static const char *const mode_names[] = {
	[MODE_WORKSPACE_WRITE] = "workspace-write",
	[MODE_READ_ONLY] = "read-only",
	[MODE_FULL_ACCESS] = "full-access",
};

/* ---- string lists ---- */

int strv_push(struct strv *s, const char *str)
{
	char **v, *dup;

	if (!str)
		return -EINVAL;
	dup = strdup(str);
	if (!dup)
		return -ENOMEM;
	v = realloc(s->v, (s->n + 2) * sizeof(*v));
	if (!v) {
		free(dup);
		return -ENOMEM;
	}
	v[s->n++] = dup;
	v[s->n] = NULL;
	s->v = v;
	return 0;
}

void strv_clear(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

bool strv_contains(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->v[i], str))
			return true;
	return false;
}

int strv_push_unique(struct strv *s, const char *str)
{
	if (str && strv_contains(s, str))
		return 0;
	return strv_push(s, str);
}

static int strv_copy(struct strv *dst, const struct strv *src)
{
	*dst = (struct strv){0};
	for (size_t i = 0; i < src->n; i++) {
		int r = strv_push(dst, src->v[i]);

		if (r < 0) {
			strv_clear(dst);
			return r;
		}
	}
	return 0;
}

/* Sets NAME=VALUE, replacing an earlier entry for NAME in place. */
static int env_set(struct strv *env, const char *name, const char *value)
{
	size_t len = strlen(name);
	char *entry;

	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], name, len) == 0 &&
		    env->v[i][len] == '=') {
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

/* ---- errors ---- */

/* Errors are one line: control characters from the input become '?'. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int policy_error_vset(struct policy_error *err, const char *file,
		      const char *path, int r, const char *fmt, va_list ap)
{
	if (!err)
		return r;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	snprintf(err->path, sizeof(err->path), "%s", path ? path : "");
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	sanitize(err->file);
	sanitize(err->path);
	sanitize(err->message);
	return r;
}

int policy_error_set(struct policy_error *err, const char *file,
		     const char *path, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = policy_error_vset(err, file, path, r, fmt, ap);
	va_end(ap);
	return r;
}

const char *policy_error_format(const struct policy_error *err, char *buf,
				size_t size)
{
	int n;

	if (err->path[0])
		n = snprintf(buf, size, "%s: at %s: %s", err->file, err->path,
			     err->message);
	else
		n = snprintf(buf, size, "%s: %s", err->file, err->message);
	if (n < 0 && size > 0)
		buf[0] = '\0';
	return buf;
}

void path_join(char *buf, size_t size, const char *prefix, const char *key)
{
	int n;

	if (!prefix || !*prefix)
		n = snprintf(buf, size, "%s", key ? key : "");
	else if (!key || !*key)
		n = snprintf(buf, size, "%s", prefix);
	else
		n = snprintf(buf, size, "%s.%s", prefix, key);
	if (n < 0 && size > 0)
		buf[0] = '\0';
}

void path_index(char *buf, size_t size, const char *sub, size_t i)
{
	int n = snprintf(buf, size, "%s[%zu]", sub, i);

	if (n < 0 && size > 0)
		buf[0] = '\0';
}

/* An error at sub (a path inside the layer); always -EINVAL. */
__attribute__((format(printf, 4, 5))) static int
lerr(const struct layer_ctx *lc, struct policy_error *err, const char *sub,
     const char *fmt, ...)
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

static int oom(const struct layer_ctx *lc, struct policy_error *err)
{
	return policy_error_set(err, lc->file, lc->prefix, -ENOMEM,
				"out of memory");
}

/* ---- defaults ---- */

static void oom_abort(void)
{
	log_error("out of memory while setting up the policy defaults");
	abort();
}

void policy_init(struct bpfbox_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = MODE_WORKSPACE_WRITE;
	p->net = NET_DENY;
	p->private_tmp = true;
	p->namespaces = true;
	p->allow_unconfined = false;
	p->limits = (struct policy_limits){
		.timeout_ms = 120 * 1000,
		.output_bytes = 1024 * 1024,
		.memory_mb = 2048,
		.pids = 64,
		.cpu_percent = 100,
		.disk_mb = 1024,
		.file_size_mb = 50,
		.open_files = 1024,
		.pause_timeout_ms = POLICY_PAUSE_TIMEOUT_S * 1000,
		.timeout_counts = TIMEOUT_COUNTS_WALL,
		.on_oom = ON_LIMIT_PAUSE,
		.on_disk = ON_LIMIT_PAUSE,
	};
	/*
	 * Running without the credential patterns is not an option, and the
	 * API has no way to report failure here: a process that cannot
	 * allocate a few hundred bytes stops.
	 */
	for (size_t i = 0; i < ARRAY_SIZE(default_deny); i++)
		if (strv_push(&p->deny_paths, default_deny[i]) < 0)
			oom_abort();
	if (strv_push(&p->origins, "defaults") < 0)
		oom_abort();
}

void policy_free(struct bpfbox_policy *p)
{
	if (!p)
		return;
	free(p->workspace);
	free(p->user);
	free(p->net_resolver);
	strv_clear(&p->ro_paths);
	strv_clear(&p->rw_paths);
	strv_clear(&p->deny_paths);
	strv_clear(&p->net_allow);
	strv_clear(&p->net_deny);
	strv_clear(&p->exec_deny);
	strv_clear(&p->env);
	strv_clear(&p->origins);
	memset(p, 0, sizeof(*p));
}

int policy_dup(struct bpfbox_policy *dst, const struct bpfbox_policy *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->mode = src->mode;
	dst->net = src->net;
	dst->limits = src->limits;
	dst->allow_unconfined = src->allow_unconfined;
	dst->private_tmp = src->private_tmp;
	dst->read_host = src->read_host;
	dst->namespaces = src->namespaces;
	if (src->workspace && !(dst->workspace = strdup(src->workspace)))
		goto fail;
	if (src->user && !(dst->user = strdup(src->user)))
		goto fail;
	if (src->net_resolver && !(dst->net_resolver = strdup(src->net_resolver)))
		goto fail;
	if (strv_copy(&dst->ro_paths, &src->ro_paths) < 0 ||
	    strv_copy(&dst->rw_paths, &src->rw_paths) < 0 ||
	    strv_copy(&dst->deny_paths, &src->deny_paths) < 0 ||
	    strv_copy(&dst->net_allow, &src->net_allow) < 0 ||
	    strv_copy(&dst->net_deny, &src->net_deny) < 0 ||
	    strv_copy(&dst->exec_deny, &src->exec_deny) < 0 ||
	    strv_copy(&dst->env, &src->env) < 0 ||
	    strv_copy(&dst->origins, &src->origins) < 0)
		goto fail;
	return 0;
fail:
	policy_free(dst);
	return -ENOMEM;
}

/* ---- modes ---- */

const char *sandbox_mode_name(enum sandbox_mode m)
{
	if ((unsigned int)m >= ARRAY_SIZE(mode_names))
		return "unknown";
	return mode_names[m];
}

int sandbox_mode_parse(const char *s, enum sandbox_mode *out)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(mode_names); i++) {
		if (streq(s, mode_names[i])) {
			*out = (enum sandbox_mode)i;
			return 0;
		}
	}
	return -EINVAL;
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
static int get_string(const struct layer_ctx *lc, struct policy_error *err,
		      const char *sub, struct json_object *v, const char **out)
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

static int get_bool(const struct layer_ctx *lc, struct policy_error *err,
		    const char *sub, struct json_object *v, bool *out)
{
	if (!json_object_is_type(v, json_type_boolean))
		return lerr(lc, err, sub, "must be true or false");
	*out = json_object_get_boolean(v);
	return 0;
}

/* A single path component: no '/', no '*', not "." or "..". */
static bool plain_name(const char *s, size_t len)
{
	if (len == 0 || (len == 1 && s[0] == '.') ||
	    (len == 2 && s[0] == '.' && s[1] == '.'))
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
		if (plain_name(rest, slash - rest) &&
		    plain_name(slash + 1, strlen(slash + 1)))
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
	if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (const char *c = s + 1; *c; c++)
		if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
			return false;
	return strlen(s) <= 255;
}

/* ---- merging ---- */

static int merge_limits(struct bpfbox_policy *p, struct json_object *o,
			const struct layer_ctx *lc, struct policy_error *err)
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
			return lerr(
				lc, err, sub,
				"unknown limit '%s'; valid limits: " LIMIT_KEYS,
				key);
		if (d->kind == LK_CHOICE) {
			size_t n;

			for (n = 0; d->names[n]; n++)
				if (json_object_is_type(v, json_type_string) &&
				    streq(json_object_get_string(v), d->names[n]))
					break;
			if (!d->names[n])
				return lerr(lc, err, sub, "must be \"%s\" or \"%s\"",
					    d->names[0], d->names[1]);
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
					    d->kind == LK_SECONDS ? "a duration such as 90, 500ms, 5s, 2m or 1h"
					    : d->kind == LK_MB ? "a size such as 512, 512M or 2G"
							       : "a size such as 65536, 64K or 1M");
			if (u < d->min * d->scale)
				return lerr(lc, err, sub, "must be at least %llu%s",
					    (unsigned long long)d->min,
					    d->kind == LK_SECONDS ? " s" : d->kind == LK_MB ? " MB" : "");
			if (u > POLICY_LIMIT_MAX * d->scale)
				return lerr(lc, err, sub, "'%s' is too large", str);
			*(uint64_t *)((char *)&p->limits + d->offset) = u;
			continue;
		}
		if (!json_object_is_type(v, json_type_int) ||
		    json_object_get_int64(v) < 0)
			return lerr(lc, err, sub,
				    d->kind == LK_NUM ? "must be a non-negative integer"
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
};

int net_rule_parse(const char *rule, char *cidr, size_t size, uint16_t *lo, uint16_t *hi)
{
	char addr[INET6_ADDRSTRLEN + 8], bin[16];
	const char *ports = NULL, *slash;
	unsigned long plen, a, b;
	size_t alen;
	char *end;
	bool v6;

	/* IPv6 has colons of its own: ports follow the last "]:" or the prefix. */
	slash = strchr(rule, '/');
	if (slash)
		ports = strchr(slash, ':');
	else if (strchr(rule, '.'))
		ports = strchr(rule, ':');
	alen = (slash ? slash : ports ? ports : rule + strlen(rule)) - rule;
	if (alen == 0 || alen >= INET6_ADDRSTRLEN)
		return -EINVAL;
	memcpy(addr, rule, alen);
	addr[alen] = '\0';
	v6 = strchr(addr, ':') != NULL;
	if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
		return -EINVAL;
	plen = v6 ? 128 : 32;
	if (slash) {
		errno = 0;
		plen = strtoul(slash + 1, &end, 10);
		if (errno || end == slash + 1 || (*end && *end != ':') || plen > (v6 ? 128UL : 32UL))
			return -EINVAL;
	}
	a = 0;
	b = 65535;
	if (ports) {
		errno = 0;
		a = b = strtoul(ports + 1, &end, 10);
		if (end == ports + 1)
			return -EINVAL;
		if (*end == '-') {
			const char *p2 = end + 1;

			b = strtoul(p2, &end, 10);
			if (end == p2)
				return -EINVAL;
		}
		if (errno || *end || a > b || b > 65535)
			return -EINVAL;
	}
	snprintf(cidr, size, "%s/%lu", addr, plen);
	*lo = a;
	*hi = b;
	return 0;
}

/* Ports after the host: "" (all), ":N" or ":N-M". */
static int parse_ports(const char *ports, uint16_t *lo, uint16_t *hi)
{
	unsigned long a = 0, b = 65535;
	char *end;

	if (*ports) {
		if (*ports != ':' || !isdigit((unsigned char)ports[1]))
			return -EINVAL;
		errno = 0;
		a = b = strtoul(ports + 1, &end, 10);
		if (*end == '-') {
			const char *p2 = end + 1;

			if (!isdigit((unsigned char)*p2))
				return -EINVAL;
			b = strtoul(p2, &end, 10);
		}
		if (errno || *end || a > b || b > 65535)
			return -EINVAL;
	}
	*lo = a;
	*hi = b;
	return 0;
}

int net_name_rule_parse(const char *rule, char *host, size_t size, uint16_t *lo, uint16_t *hi)
{
	const char *colon = strchr(rule, ':'), *p = rule;
	size_t len = colon ? (size_t)(colon - rule) : strlen(rule), label = 0;
	bool alpha = false;

	if (strncmp(rule, "*.", 2) == 0)
		p += 2;
	if (p == rule + len || len > 253 || len + 1 > size)
		return -EINVAL;
	/* Whole labels of letters, digits, '-' and '_', none empty or > 63. */
	for (; p < rule + len; p++) {
		if (*p == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return -EINVAL;
		if (isalpha((unsigned char)*p) || *p == '-' || *p == '_')
			alpha = true;
		if (++label > 63)
			return -EINVAL;
	}
	/* A trailing dot is allowed; all digits would be an address. */
	if (!alpha)
		return -EINVAL;
	if (parse_ports(colon ? colon : "", lo, hi) < 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		host[i] = tolower((unsigned char)rule[i]);
	if (len > 1 && host[len - 1] == '.')
		len--;
	host[len] = '\0';
	return 0;
}

bool net_name_match(const char *pattern, const char *name)
{
	size_t pl, nl = strlen(name);

	if (nl && name[nl - 1] == '.')
		nl--;
	if (strncmp(pattern, "*.", 2) == 0) {
		pl = strlen(pattern + 1); /* ".example.com" */
		return nl > pl && strncasecmp(name + nl - pl, pattern + 1, pl) == 0;
	}
	pl = strlen(pattern);
	return nl == pl && strncasecmp(name, pattern, pl) == 0;
}

/* An exec deny entry: an absolute path or a bare file name. */
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

static int parse_list(struct json_object *a, const char *sub, enum list_kind kind,
		      struct strv *out, const struct layer_ctx *lc,
		      struct policy_error *err)
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
				return lerr(lc, err, esub,
					    "invalid network rule '%.80s'; use HOST[:PORT[-PORT]] with "
					    "HOST a name (pypi.org), a wildcard (*.example.com), an "
					    "address or a CIDR, e.g. pypi.org:443 or 10.0.0.0/8:443",
					    s);
		} else if (kind == LIST_EXEC) {
			why = exec_deny_problem(s);
			if (why)
				return lerr(lc, err, esub, "invalid exec_deny entry '%.80s': %s", s,
					    why);
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
			return lerr(lc, err, esub, "is longer than %d bytes",
				    PATH_MAX - 1);
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
		return lerr(lc, err, sub,
			    "must be an object of \"NAME\": \"VALUE\" strings");
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
			return lerr(lc, err, esub,
				    "must not contain a NUL character");
		if (env_set(env, name, val) < 0)
			return oom(lc, err);
	}
	return 0;
}

/* restrictions (replace) or extra (append) of one layer. */
static int merge_lists(struct bpfbox_policy *p, struct json_object *o,
		       const char *sect, bool replace,
		       const struct layer_ctx *lc, struct policy_error *err)
{
	static const char *const keys[] = {"ro",	"rw",	     "deny",	  "net_allow",
					   "net_deny", "exec_deny", "env"};
	static const enum list_kind kinds[] = {LIST_PATH, LIST_PATH, LIST_DENY, LIST_NET,
					       LIST_NET,  LIST_EXEC};
	struct strv *lists[] = {&p->ro_paths, &p->rw_paths,  &p->deny_paths, &p->net_allow,
				&p->net_deny, &p->exec_deny};
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
				    "deny, net_allow, net_deny, exec_deny, env",
				    key);
		}
	}
	if (replace && json_object_object_get_ex(o, "deny", NULL) &&
	    !lc->may_replace_deny) {
		path_join(sub, sizeof(sub), sect, "deny");
		return lerr(lc, err, sub,
			    "deny list can only be replaced in the global or "
			    "agent config; use extra.deny");
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
			return lerr(lc, err, "workspace",
				    "is longer than %d bytes", PATH_MAX - 1);
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
				return lerr(lc, err, "user",
					    "must be a user name or null");
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
		r = get_bool(lc, err, "allow_unconfined", v,
			     &p->allow_unconfined);
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

static int merge_into(struct bpfbox_policy *p, struct json_object *layer,
		      const char *origin, const struct layer_ctx *lc,
		      struct policy_error *err)
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
		r = merge_lists(p, v, "restrictions", true, lc, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(layer, "extra", &v)) {
		r = merge_lists(p, v, "extra", false, lc, err);
		if (r < 0)
			return r;
	}
	if (strv_push(&p->origins, origin) < 0)
		return oom(lc, err);
	return 0;
}

int layer_merge(struct bpfbox_policy *p, struct json_object *layer,
		const char *origin, const struct layer_ctx *lc,
		struct policy_error *err)
{
	struct bpfbox_policy n;
	int r;

	if (!json_object_is_type(layer, json_type_object))
		return lerr(lc, err, NULL, "must be a JSON object");
	json_object_object_foreach (layer, key, val) {
		(void)val;
		if (!in_list(key, layer_keys, ARRAY_SIZE(layer_keys)))
			return lerr(lc, err, key,
				    "unknown key '%s'; valid keys: " LAYER_KEYS,
				    key);
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
int policy_merge_layer(struct bpfbox_policy *p, struct json_object *layer,
		       const char *origin, struct policy_error *err)
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
				return policy_error_set(err, origin, "",
							-ENOMEM,
							"out of memory");
			lc.file = file;
			lc.prefix = suffix;
			lc.may_replace_deny = sandbox || agent;
			if (mode)
				lc.mode_name = suffix + 6;
		}
	}
	return layer_merge(p, layer, origin, &lc, err);
}

/* ---- output ---- */

static struct json_object *strv_json(const struct strv *s)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < s->n; i++)
		json_object_array_add(a, json_object_new_string(s->v[i]));
	return a;
}

static struct json_object *str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

struct json_object *policy_to_json(const struct bpfbox_policy *p)
{
	struct json_object *o, *env, *lim;

	o = json_object_new_object();
	env = json_object_new_object();
	lim = json_object_new_object();
	if (!o || !env || !lim) {
		json_object_put(o);
		json_object_put(env);
		json_object_put(lim);
		return NULL;
	}
	json_object_object_add(
		o, "mode", json_object_new_string(sandbox_mode_name(p->mode)));
	json_object_object_add(o, "workspace", str_or_null(p->workspace));
	json_object_object_add(
		o, "network",
		json_object_new_string(p->net == NET_ALLOW ? "allow" : "deny"));
	json_object_object_add(o, "user", str_or_null(p->user));
	json_object_object_add(o, "allow_unconfined",
			       json_object_new_boolean(p->allow_unconfined));
	json_object_object_add(o, "private_tmp",
			       json_object_new_boolean(p->private_tmp));
	json_object_object_add(o, "read_host",
			       json_object_new_boolean(p->read_host));
	json_object_object_add(o, "namespaces",
			       json_object_new_boolean(p->namespaces));
	json_object_object_add(o, "ro", strv_json(&p->ro_paths));
	json_object_object_add(o, "rw", strv_json(&p->rw_paths));
	json_object_object_add(o, "deny", strv_json(&p->deny_paths));
	json_object_object_add(o, "net_allow", strv_json(&p->net_allow));
	json_object_object_add(o, "net_deny", strv_json(&p->net_deny));
	if (p->net_resolver)
		json_object_object_add(o, "net_resolver", json_object_new_string(p->net_resolver));
	json_object_object_add(o, "exec_deny", strv_json(&p->exec_deny));
	for (size_t i = 0; i < p->env.n; i++) {
		const char *e = p->env.v[i], *eq = strchr(e, '=');
		_cleanup_free_ char *name = NULL;

		if (!eq)
			continue;
		name = strndup(e, eq - e);
		if (name)
			json_object_object_add(env, name,
					       json_object_new_string(eq + 1));
	}
	json_object_object_add(o, "env", env);
	for (size_t i = 0; i < policy_n_limit_defs; i++) {
		const struct limit_def *d = &policy_limit_defs[i];
		uint64_t v = *(const uint64_t *)((const char *)&p->limits +
						 d->offset);

		if (d->kind == LK_CHOICE)
			json_object_object_add(lim, d->key,
					       json_object_new_string(d->names[v]));
		else
			json_object_object_add(lim, d->key,
					       json_object_new_uint64(v / d->scale));
	}
	json_object_object_add(o, "limits", lim);
	json_object_object_add(o, "layers", strv_json(&p->origins));
	return o;
}
