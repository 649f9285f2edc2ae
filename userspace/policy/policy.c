// SPDX-License-Identifier: GPL-2.0
/*
 * The policy core: built-in defaults, string lists, errors, copies.
 * Merging one JSON layer is in merge.c, network rules in netrule.c,
 * command rules in rules.c, the policy as JSON in json.c; reading files
 * in load_file.c, the layer order in load.c, path expansion in
 * load_expand.c, the final checks in validate.c; docs/config.md has the format.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <json-c/json.h>

#include "policy.h"
#include "policy-internal.h"
#include "../lib/log.h"
#include "../lib/util.h"

static const char *const default_deny[] = {
	"/etc/shadow",	   "/etc/gshadow",	"/etc/sudoers",	  "/etc/sudoers.d",
	"**/.env",	   "**/.env.*",		"**/credentials", "**/credentials.*",
	"**/secrets",	   "**/secrets.*",	"**/*.pem",	  "**/*.key",
	"**/*.p12",	   "**/*.pfx",		"**/.ssh",	  "**/id_rsa",
	"**/id_dsa",	   "**/id_ecdsa",	"**/id_ed25519",  "**/.aws",
	"**/.azure",	   "**/.config/gcloud", "**/.gnupg",	  "**/.docker/config.json",
	"**/.netrc",	   "**/.npmrc",		"**/.pypirc",	  "**/.git-credentials",
	"**/.kube/config",
};

/*
 * Where the name patterns (those not absolute) judge a file (docs/config.md "Deny
 * patterns"). They are about credential files in user trees (workspace,
 * granted trees, homes): not below these system and library trees, where
 * the standard library's secrets.py and the CA bundles' *.pem live (unless
 * the session may write there); absolute patterns apply everywhere. /etc
 * is not one: /etc/ssl/private holds real keys; its public CA
 * certificates are.
 */
const char *const policy_system_trees[] = {
	"/usr/bin",
	"/usr/sbin",
	"/usr/lib",
	"/usr/lib32",
	"/usr/lib64",
	"/usr/libx32",
	"/usr/libexec",
	"/usr/include",
	"/usr/share",
	"/usr/local/bin",
	"/usr/local/sbin",
	"/usr/local/lib",
	"/usr/local/lib64",
	"/usr/local/include",
	"/usr/local/share",
	"/bin",
	"/sbin",
	"/lib",
	"/lib32",
	"/lib64",
	"/libx32",
	"/etc/ssl/certs",
	"/etc/ca-certificates",
	"/etc/pki/ca-trust",
	"/etc/pki/tls/certs",
	NULL,
};

/*
 * Public files that credential patterns name (`*.pem`): the CA bundles
 * package managers install into a project (pip's and certifi's, botocore's,
 * grpc's roots), as DIR/NAME. Never a key: a session making a venv at Full
 * writes pip's certifi/cacert.pem. A credential cannot be brought to such
 * a name: renaming or linking a denied file is denied, and its own name
 * would have to be that one.
 */
const char *const policy_public_files[] = {
	"certifi/cacert.pem",
	"botocore/cacert.pem",
	"_credentials/roots.pem",
	NULL,
};

bool policy_public_file(const char *path, size_t len)
{
	for (size_t i = 0; policy_public_files[i]; i++) {
		size_t n = strlen(policy_public_files[i]);

		if (len > n && path[len - n - 1] == '/' &&
		    !memcmp(path + len - n, policy_public_files[i], n))
			return true;
	}
	return false;
}

/*
 * Source-code extensions (and compiled modules): a file whose last
 * extension is one of these is a module, not a key file, whatever its
 * name: `NAME.*` patterns and directory patterns do not deny it
 * (secrets.py, __pycache__/secrets.cpython-311.pyc, an SDK's
 * credentials.js and credentials/x.js). A pattern naming the whole name
 * or the extension (secrets.py, *.py) still does. Not here, as they often
 * hold keys: shell scripts, JSON, YAML, TOML, INI, .env, .tfvars, text.
 */
const char *const policy_source_exts[] = {
	"c",	"h",	 "cc",	"cpp", "cxx",	 "hh",	   "hpp", "hxx", "go",	"rs",  "py",  "pyi",
	"pyc",	"pyo",	 "pyx", "pxd", "js",	 "mjs",	   "cjs", "jsx", "ts",	"mts", "cts", "tsx",
	"java", "class", "kt",	"kts", "scala",	 "groovy", "rb",  "php", "pl",	"pm",  "lua", "cs",
	"fs",	"swift", "m",	"mm",  "dart",	 "ex",	   "exs", "erl", "hrl", "hs",  "ml",  "mli",
	"clj",	"cljs",	 "el",	"vue", "svelte", "coffee", "jl",  "nim", "zig", NULL,
};

bool policy_source_name(const char *name)
{
	const char *dot = name ? strrchr(name, '.') : NULL;

	if (!dot || dot == name || !dot[1])
		return false;
	for (size_t i = 0; policy_source_exts[i]; i++)
		if (streq(dot + 1, policy_source_exts[i]))
			return true;
	return false;
}

#define LIMIT(k, field, m, s, kd)                                                                \
	{                                                                                        \
		.key = k, .offset = offsetof(struct policy_limits, field), .min = m, .scale = s, \
		.kind = kd                                                                       \
	}
#define CHOICE(k, field, n)                                                            \
	{                                                                              \
		.key = k, .offset = offsetof(struct policy_limits, field), .scale = 1, \
		.kind = LK_CHOICE, .names = n                                          \
	}

static const char *const timeout_counts_names[] = {"wall", "running", NULL};
static const char *const on_limit_names[] = {"pause", "kill", NULL};

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

static const char *const mode_names[] = {
	[MODE_WORKSPACE_WRITE] = "workspace-write",
	[MODE_READ_ONLY] = "read-only",
	[MODE_FULL_ACCESS] = "full-access",
};

static const char *const changes_names[] = {
	[CHANGES_DIRECT] = "direct",
	[CHANGES_REVIEW] = "review",
	[CHANGES_APPLY] = "apply",
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
	/*
	 * Doubled when full, not grown by one: a credential scan pushes
	 * thousands. What was allocated is asked of malloc, so a vector
	 * calloc'ed elsewhere at its exact size is grown correctly too.
	 */
	v = s->v;
	if (!v || malloc_usable_size(v) < (s->n + 2) * sizeof(*v))
		v = realloc(s->v, (s->n < 6 ? 8 : 2 * (s->n + 2)) * sizeof(*v));
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

/* ---- errors ---- */

/*
 * Errors are one line of text: control characters (C0, DEL, C1) and bytes
 * that are not UTF-8 from the input become '?' (lib's one rule, in place).
 */
static void sanitize(char *s)
{
	term_clean(s, strlen(s) + 1, s);
}

int policy_error_vset(struct policy_error *err, const char *file, const char *path, int r,
		      const char *fmt, va_list ap)
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

int policy_error_set(struct policy_error *err, const char *file, const char *path, int r,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = policy_error_vset(err, file, path, r, fmt, ap);
	va_end(ap);
	return r;
}

const char *policy_error_format(const struct policy_error *err, char *buf, size_t size)
{
	int n;

	if (err->path[0])
		n = snprintf(buf, size, "%s: at %s: %s", err->file, err->path, err->message);
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
	p->undo_generations = 20; /* changes.h CHANGES_UNDO_GENERATIONS */
	p->undo_mb = 1024;
	p->limits = (struct policy_limits){
		.timeout_ms = 120 * 1000,
		.output_bytes = 1024 * 1024,
		.memory_mb = 2048,
		.pids = POLICY_PIDS_DEFAULT,
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
	for (size_t i = 0; i < rules_n_default_deny; i++)
		if (strv_push(&p->deny_commands, rules_default_deny[i]) < 0)
			oom_abort();
	if (strv_push(&p->origins, "defaults") < 0)
		oom_abort();
}

void policy_free(struct bpfbox_policy *p)
{
	if (!p)
		return;

	struct strv *lists[] = {&p->ro_paths,  &p->rw_paths, &p->devices,   &p->deny_paths,
				&p->net_allow, &p->net_deny, &p->exec_deny, &p->deny_commands,
				&p->env,       &p->origins,  &p->secrets};

	free(p->workspace);
	free(p->user);
	free(p->net_resolver);
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
		strv_clear(lists[i]);
	cmd_rules_clear(&p->cmd_rules);
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
	dst->net_ask = src->net_ask;
	dst->namespaces = src->namespaces;
	dst->ssh_agent = src->ssh_agent;
	dst->changes = src->changes;
	dst->undo_generations = src->undo_generations;
	dst->undo_mb = src->undo_mb;
	if (src->workspace && !(dst->workspace = strdup(src->workspace)))
		goto fail;
	if (src->user && !(dst->user = strdup(src->user)))
		goto fail;
	if (src->net_resolver && !(dst->net_resolver = strdup(src->net_resolver)))
		goto fail;
	if (strv_copy(&dst->ro_paths, &src->ro_paths) < 0 ||
	    strv_copy(&dst->rw_paths, &src->rw_paths) < 0 ||
	    strv_copy(&dst->devices, &src->devices) < 0 ||
	    strv_copy(&dst->deny_paths, &src->deny_paths) < 0 ||
	    strv_copy(&dst->net_allow, &src->net_allow) < 0 ||
	    strv_copy(&dst->net_deny, &src->net_deny) < 0 ||
	    strv_copy(&dst->secrets, &src->secrets) < 0 ||
	    strv_copy(&dst->exec_deny, &src->exec_deny) < 0 ||
	    strv_copy(&dst->deny_commands, &src->deny_commands) < 0 ||
	    cmd_rules_copy(&dst->cmd_rules, &src->cmd_rules) < 0 ||
	    strv_copy(&dst->env, &src->env) < 0 || strv_copy(&dst->origins, &src->origins) < 0)
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

const char *changes_mode_name(enum changes_mode m)
{
	return (unsigned int)m < ARRAY_SIZE(changes_names) ? changes_names[m] : "unknown";
}

int changes_mode_parse(const char *s, enum changes_mode *out)
{
	int i = s ? name_index(changes_names, ARRAY_SIZE(changes_names), s) : -1;

	if (i < 0)
		return -EINVAL;
	*out = (enum changes_mode)i;
	return 0;
}
