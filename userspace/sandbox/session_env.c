// SPDX-License-Identifier: GPL-2.0
/*
 * What the session's command is given besides its restrictions: the
 * allowlisted environment, a private tmp and the user it runs as.
 */
#include <ctype.h>
#include <fcntl.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_internal.h"
#include "env_pass.h"
#include "landlock.h"
#include "../policy/policy.h"
#include "../lib/log.h"
#include "../lib/util.h"

extern char **environ;

static int env_push(struct strv *env, const char *name, const char *value)
{
	char *entry;
	int r;

	if (!value)
		return 0;
	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	r = strv_push(env, entry);
	free(entry);
	return r;
}

enum pass_kind { PASS_FILE, PASS_URL };

#define PASS_FILE_ENTRY(name) {name, PASS_FILE},
#define PASS_URL_ENTRY(name)  {name, PASS_URL},
static const struct {
	const char *name; /* a '*' in it: any part (fnmatch) */
	enum pass_kind kind;
} pass_vars[] = {ENV_PASS_LIST(PASS_FILE_ENTRY, PASS_URL_ENTRY)};
#undef PASS_FILE_ENTRY
#undef PASS_URL_ENTRY

/* Words of a query parameter's name that say it holds a secret. */
static const char *const secret_params[] = {"token",  "key", "auth", "pass",
					    "secret", "sig", "cred", "session"};

/* Whether one URL (or host pattern) of len bytes carries credentials. */
static bool url_has_credentials(const char *u, size_t len)
{
	const char *scheme = memmem(u, len, "://", 3);
	const char *host = scheme ? scheme + 3 : u;
	size_t hlen = strcspn(host, "/?#");
	const char *q = memchr(u, '?', len);

	if (hlen > len - (size_t)(host - u))
		hlen = len - (size_t)(host - u);
	/* userinfo: user:password@host, token@host */
	if (memchr(host, '@', hlen))
		return true;
	while (q && (size_t)(q - u) < len) {
		size_t n = strcspn(++q, "=&#");
		char name[64];

		if ((size_t)(q - u) + n > len)
			n = len - (size_t)(q - u);
		snprintf(name, sizeof(name), "%.*s", (int)n, q);
		for (char *c = name; *c; c++)
			*c = tolower((unsigned char)*c);
		for (size_t i = 0; i < ARRAY_SIZE(secret_params); i++)
			if (strstr(name, secret_params[i]))
				return true;
		q = memchr(q, '&', len - (size_t)(q - u));
	}
	return false;
}

/* A value of URLs separated by spaces, commas or '|' (GOPROXY, PIP_EXTRA_INDEX_URL). */
static bool value_has_credentials(const char *v)
{
	while (*v) {
		size_t n;

		v += strspn(v, " \t,|");
		n = strcspn(v, " \t,|");
		if (n && url_has_credentials(v, n))
			return true;
		v += n;
	}
	return false;
}

/* The variables set to the session's CA bundle when a secret is held (docs/network.md). */
static const char *const ca_vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
				      "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"};

static bool ca_var(const struct session *s, const char *name, size_t len)
{
	for (size_t i = 0; s->ca_pem && i < ARRAY_SIZE(ca_vars); i++)
		if (strlen(ca_vars[i]) == len && !strncmp(ca_vars[i], name, len))
			return true;
	return false;
}

/* A --secret's NAME: the session gets its placeholder, never the caller's value. */
static bool secret_var(const struct session *s, const char *name, size_t len)
{
	for (size_t i = 0; s->secret_env && i < s->secret_env->n; i++)
		if (!strncmp(s->secret_env->v[i], name, len) && s->secret_env->v[i][len] == '=')
			return true;
	return false;
}

/* Set in every session unless the policy sets them (docs/runtime.md). */
static const char *const quiet_env[][2] = {
	{"npm_config_update_notifier", "false"},
	{"NO_UPDATE_NOTIFIER", "1"},
	{"PIP_DISABLE_PIP_VERSION_CHECK", "1"},
};

static bool policy_env_sets(const struct bpfbox_policy *p, const char *name, size_t len)
{
	for (size_t i = 0; i < p->env.n; i++)
		if (!strncmp(p->env.v[i], name, len) && p->env.v[i][len] == '=')
			return true;
	return false;
}

/* Whether real is in the workspace or a grant already: no grant of its own (a mount over it). */
static bool granted(const struct bpfbox_policy *p, const char *real)
{
	const struct strv *lists[] = {&p->rw_paths, &p->ro_paths};

	if (p->workspace && session_path_below(real, p->workspace))
		return true;
	for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (session_path_below(real, lists[l]->v[i]))
				return true;
	return false;
}

/*
 * A FILE variable: its real path passed and granted read-only (ro),
 * unless it is gone or a credential path; then why in why.
 */
static int pass_file(const struct session *s, const char *name, const char *value,
		     struct strv *pass, struct strv *ro, char *why, size_t size)
{
	const struct strv none = {0};
	char real[PATH_MAX], *entry;
	int r;

	if (!realpath(value, real)) {
		snprintf(why, size, "%s does not exist", value);
		return 0;
	}
	/*
	 * A system tree every session reads (a CA bundle under /etc) needs no
	 * grant, and its masks (/etc/shadow) hold whatever the variable says.
	 */
	if (!landlock_system_readable(real)) {
		if (session_cred_denied(s->policy, &none, real)) {
			snprintf(why, size,
				 "%s is a credential path bpfbox masks (a deny pattern matches it "
				 "or a directory above it; a CA bundle may be renamed *.crt)",
				 real);
			return 0;
		}
		if (!granted(s->policy, real) && !strv_contains(ro, real) &&
		    (r = strv_push(ro, real)) < 0)
			return r;
	}
	if (asprintf(&entry, "%s=%s", name, real) < 0)
		return -ENOMEM;
	r = strv_push(pass, entry);
	free(entry);
	return r;
}

int session_env_pass(struct session *s, struct strv *pass, struct strv *ro)
{
	int r = 0;

	for (char **e = environ; !r && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256], why[PATH_MAX + 160];
		size_t i;

		if (!eq || eq == *e || (size_t)(eq - *e) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		for (i = 0; i < ARRAY_SIZE(pass_vars); i++)
			if (!fnmatch(pass_vars[i].name, name, 0))
				break;
		if (i == ARRAY_SIZE(pass_vars) || !eq[1] ||
		    policy_env_sets(s->policy, name, strlen(name)) ||
		    ca_var(s, name, strlen(name)) || secret_var(s, name, strlen(name)))
			continue;
		why[0] = '\0';
		if (pass_vars[i].kind == PASS_FILE)
			r = pass_file(s, name, eq + 1, pass, ro, why, sizeof(why));
		else if (value_has_credentials(eq + 1))
			snprintf(
				why, sizeof(why),
				"its value carries credentials (user:password@ or a token "
				"parameter); give it with --env %s=... if the session may see them",
				name);
		else
			r = strv_push(pass, *e);
		if (!r && why[0] && !s->env_said)
			log_warn("%s not passed to the session: %s", name, why);
	}
	s->env_said = true;
	return r;
}

/* The allowlisted environment: nothing of the caller's leaks otherwise. */
int session_build_env(const struct session *s, const char *path_env, struct strv *env)
{
	const struct bpfbox_policy *p = s->policy;
	const char *path = getenv("PATH");
	int r = 0;

	r = env_push(env, "PATH",
		     path_env[0] ? path_env
		     : path	 ? path
				 : "/usr/local/bin:/usr/bin:/bin");
	/* A private home; the workspace when none could be made. */
	if (!r)
		r = env_push(env, "HOME", s->home[0] ? s->home : p->workspace);
	if (!r)
		r = env_push(env, "LANG", getenv("LANG"));
	if (!r)
		r = env_push(env, "TERM", getenv("TERM"));
	if (!r && s->private_tmp[0])
		r = env_push(env, "TMPDIR", s->private_tmp);
	else if (!r && p->private_tmp && s->layers.ns.clone_flags && p->mode != MODE_FULL_ACCESS)
		r = env_push(env, "TMPDIR", "/tmp");
	for (size_t i = 0; !r && i < p->env.n; i++) {
		const char *e = p->env.v[i];

		/* The session's identity is bpfbox's to say, and where its agent is. */
		if (startswith(e, "BPFBOX_SESSION_ID=") || startswith(e, "BPFBOX_WORKSPACE=") ||
		    (s->ssh_agent[0] && startswith(e, "SSH_AUTH_SOCK=")) ||
		    ca_var(s, e, strcspn(e, "=")))
			continue;
		r = strv_push(env, e);
	}
	/* The toolchains found under the caller's home (home.c), unless set above. */
	if (!r)
		r = session_home_env(s, env);
	/*
	 * Update checks a tool makes on every call and falls back from: under
	 * --net deny each was a denied connect on a call that passed (npm's
	 * look-up of its registry), noise a runtime hands to a model. Off
	 * unless --env or the policy sets them.
	 */
	for (size_t i = 0; !r && i < ARRAY_SIZE(quiet_env); i++)
		if (!policy_env_sets(p, quiet_env[i][0], strlen(quiet_env[i][0])))
			r = env_push(env, quiet_env[i][0], quiet_env[i][1]);
	if (!r)
		r = env_push(env, "SSH_AUTH_SOCK", session_ssh_agent_sock(s));
	if (!r)
		r = env_push(env, "BPFBOX_SESSION_ID", s->id);
	if (!r)
		r = env_push(env, "BPFBOX_WORKSPACE", p->workspace);
	/* --secret: placeholders, and the bundle with the session CA (docs/network.md). */
	for (size_t i = 0; !r && s->secret_env && i < s->secret_env->n; i++)
		r = strv_push(env, s->secret_env->v[i]);
	for (size_t i = 0; !r && s->ca_pem && s->ca_bundle[0] && i < ARRAY_SIZE(ca_vars); i++)
		r = env_push(env, ca_vars[i], s->ca_bundle);
	/* Egress by name: tools that honour a proxy use ours (docs/network.md). */
	for (size_t i = 0; !r && s->proxy_url[0] && i < 4; i++) {
		static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						    "https_proxy"};

		r = env_push(env, names[i], s->proxy_url);
	}
	/* Through the proxy only: the session's own loopback is reached directly. */
	for (size_t i = 0; !r && s->layers.ns.proxy_port && i < 2; i++)
		r = env_push(env, i ? "no_proxy" : "NO_PROXY", "localhost,127.0.0.1,::1");
	return r;
}

/* The bundle the session's clients trusted before: the caller's, else the system's. */
static const char *base_bundle(void)
{
	static const char *const system[] = {
		"/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine, Arch */
		"/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
		"/etc/ssl/ca-bundle.pem",	      /* openSUSE */
		"/etc/ssl/cert.pem",
	};
	const char *v = getenv("SSL_CERT_FILE");

	if (v && *v && access(v, R_OK) == 0)
		return v;
	for (size_t i = 0; i < ARRAY_SIZE(system); i++)
		if (access(system[i], R_OK) == 0)
			return system[i];
	return NULL;
}

int session_write_ca_bundle(struct session *s, uid_t uid, gid_t gid)
{
	const char *base = base_bundle();
	_cleanup_close_ int fd = -1, in = -1;
	char buf[65536];
	ssize_t n;

	if (!s->ca_pem)
		return 0;
	/* *.crt: the default deny list masks *.pem (policy.c). */
	snprintf(s->ca_bundle, sizeof(s->ca_bundle), "%s/.bpfbox-ca-bundle.crt", s->home);
	fd = open(s->ca_bundle, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return log_error_errno(errno, "cannot write the session's CA bundle %s",
				       s->ca_bundle);
	in = base ? open(base, O_RDONLY | O_CLOEXEC) : -1;
	while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, n) != n)
			goto fail;
	if (write(fd, "\n", 1) != 1 ||
	    write(fd, s->ca_pem, strlen(s->ca_pem)) != (ssize_t)strlen(s->ca_pem))
		goto fail;
	if ((uid != getuid() || gid != getgid()) && fchown(fd, uid, gid) < 0)
		goto fail;
	return 0;
fail:
	return log_error_errno(errno ? errno : EIO, "cannot write the session's CA bundle %s",
			       s->ca_bundle);
}

int session_make_private_tmp(struct session *s)
{
	if (!s->private_tmp[0])
		return 0;
	if (mkdir(s->private_tmp, 0700) < 0) {
		int r = log_error_errno(errno, "cannot create the session's private tmp dir %s",
					s->private_tmp);

		s->private_tmp[0] = '\0';
		return r;
	}
	return 0;
}

void session_remove_private_tmp(struct session *s)
{
	/* Any depth: a tree deeper than PATH_MAX is removed too. */
	if (s->private_tmp[0] && rm_tree(s->private_tmp) < 0)
		log_warn("cannot remove all of the session's private tmp %s", s->private_tmp);
}

/* The home, for its removal off the end's path (home.c makes and removes it). */
int session_home_hide(struct session *s, char *name, size_t size)
{
	const char *base = strrchr(s->home, '/');
	char to[sizeof(s->home) + 2];

	if (!s->home[0] || !base || strlen(base + 1) + 2 > size)
		return -EINVAL;
	snprintf(to, sizeof(to), "%.*s/.%s", (int)(base - s->home), s->home, base + 1);
	if (renameat2(AT_FDCWD, s->home, AT_FDCWD, to, RENAME_NOREPLACE) < 0)
		return -errno;
	snprintf(name, size, ".%s", base + 1);
	s->home[0] = '\0';
	fd_close(&s->home_lock);
	return 0;
}

int session_lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return -ENOENT;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}
