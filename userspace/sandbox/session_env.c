// SPDX-License-Identifier: GPL-2.0
/*
 * What the session's command is given besides its restrictions: the
 * allowlisted environment, a private tmp and the user it runs as.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_internal.h"
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
		    (s->ssh_agent[0] && startswith(e, "SSH_AUTH_SOCK=")))
			continue;
		r = strv_push(env, e);
	}
	/* The toolchains found under the caller's home (home.c), unless set above. */
	if (!r)
		r = session_home_env(s, env);
	if (!r)
		r = env_push(env, "SSH_AUTH_SOCK", session_ssh_agent_sock(s));
	if (!r)
		r = env_push(env, "BPFBOX_SESSION_ID", s->id);
	if (!r)
		r = env_push(env, "BPFBOX_WORKSPACE", p->workspace);
	/* Egress by name: tools that honour a proxy use ours (docs/network.md). */
	for (size_t i = 0; !r && s->proxy_url[0] && i < 4; i++) {
		static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						    "https_proxy"};

		r = env_push(env, names[i], s->proxy_url);
	}
	return r;
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

int session_lookup_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return -ENOENT;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}
