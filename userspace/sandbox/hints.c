// SPDX-License-Identifier: GPL-2.0
/*
 * What to do about a denial, in words a model can act on (docs/runtime.md
 * "Denials, explained"): the layer the records could not tell told from
 * the policy (a file's mode, a credential), then one hint per kind: a
 * grant that works if followed, or "not allowed by policy" and nothing
 * proposed where no grant can help (a credential, the host's own trees, a
 * net_deny rule, the metadata address).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "session_internal.h"
#include "cred_match.h"
#include "../policy/policy.h"
#include "../lib/names.h"
#include "../lib/util.h"

const char *session_meta_of(const char *op)
{
	static const char *const meta[][2] = {
		{"chmod", "mode"},
		{"chown", "owner"},
		{"utimes", "times"},
		{"setxattr", "extended attributes"},
		{"removexattr", "extended attributes"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(meta); i++)
		if (streq(op, meta[i][0]))
			return meta[i][1];
	return NULL;
}

/* Whether path is dir or below it. */
static bool below(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	return strncmp(path, dir, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

/* Whether path is the home directory home, or its dot-entries (.ssh, .aws, .config) or below. */
static bool home_own(const char *path, const char *home, size_t len)
{
	if (strncmp(path, home, len) || (path[len] && path[len] != '/'))
		return false;
	return !path[len] || path[len + 1] == '.' || !path[len + 1];
}

/*
 * Whether a grant of path would hand the session the host's own state: the
 * system trees (/run, /var/run, /proc, /sys, /dev, /etc), the root, a home
 * directory as a whole (/root, /home, /home/NAME, the caller's) or its
 * dot-entries (credentials, configuration). No hint ever proposes --rw or
 * --ro of one: a model told so would ask for it.
 */
static bool host_owned(const char *path)
{
	static const char *const system[] = {"/run", "/var/run", "/proc", "/sys", "/dev", "/etc"};
	const char *home = session_caller_home(), *name;

	for (size_t i = 0; i < ARRAY_SIZE(system); i++)
		if (below(path, system[i]))
			return true;
	if (streq(path, "/") || streq(path, "/home") || home_own(path, "/root", 5) ||
	    (home && home[0] == '/' && home[1] && home_own(path, home, strlen(home))))
		return true;
	/* /home/NAME and its dot-entries. */
	if (!startswith(path, "/home/") || !path[6] || path[6] == '/')
		return false;
	name = strchr(path + 6, '/');
	return home_own(path, path, name ? (size_t)(name - path) : strlen(path));
}

/*
 * A hint that would grant the host's own tree (host_owned) says so instead:
 * what was refused stays, the grant is cut.
 */
static void no_host_grant(const struct denial *d, char *buf, size_t size)
{
	const char *path = startswith(d->what, "unix:") ? d->what + 5 : d->what;
	char dir[sizeof(d->what)];
	char *slash, *grant = strstr(buf, "; grant ");

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	if (!grant || path[0] != '/' || !(host_owned(dir) || host_owned(path)))
		return;
	snprintf(grant, size - (size_t)(grant - buf),
		 "; it is the host's own (/run, /proc, /sys, /dev, /etc and home directories "
		 "are never granted to a session): do without it");
}

/*
 * Whether path is a credential of the policy: an absolute deny path or
 * below one, or a name its credential patterns match (.env, id_rsa,
 * .ssh/...). Never granted: no hint may propose --ro or --rw of one.
 */
static bool credential(const struct session *s, const char *path)
{
	const struct bpfbox_policy *p = s->policy;

	if (path[0] != '/')
		return false;
	for (size_t i = 0; i < p->deny_paths.n; i++)
		if (p->deny_paths.v[i][0] == '/' && below(path, p->deny_paths.v[i]))
			return true;
	return cred_path_denied(p, path);
}

/*
 * Whether the file a refused exec named is one its own mode does not let
 * run (no x bit): then the kernel's DAC refused it before any layer of
 * ours, whatever the BPF record guessed (it puts every EACCES of a
 * Landlock session on Landlock). A relative name is the workspace's (the
 * command starts there).
 */
static bool mode_not_executable(const struct session *s, const char *what)
{
	char path[sizeof(((struct denial *)0)->what) + 4096 + 2];
	struct stat st;

	if (what[0] == '/')
		snprintf(path, sizeof(path), "%s", what);
	else
		snprintf(path, sizeof(path), "%s/%s", s->policy->workspace, what);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & 0111);
}

/*
 * What the records could not tell, told from the policy before the
 * summary: a refused exec of a file without an x bit is the kernel's
 * (DAC), not Landlock's; a refused read of a credential is the mask or
 * the credential rules, whatever layer the record named.
 */
static void refine(const struct session *s, struct denial *d)
{
	bool landlock = streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_LANDLOCK));

	if (landlock && d->err == EACCES && streq(d->op, "exec") &&
	    mode_not_executable(s, d->what)) {
		snprintf(d->layer, sizeof(d->layer), "%s", bpfbox_layer_name(BPFBOX_LAYER_KERNEL));
		snprintf(d->reason, sizeof(d->reason), "mode");
	} else if (!d->reason[0] && !startswith(d->op, "connect") && !streq(d->op, "socket") &&
		   !streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_EGRESS)) &&
		   credential(s, d->what)) {
		/* With namespaces the view's mask (EACCES, mode 0) answered first. */
		if (landlock && s->layers.ns.clone_flags)
			snprintf(d->layer, sizeof(d->layer), "%s",
				 bpfbox_layer_name(BPFBOX_LAYER_MOUNT));
		snprintf(d->reason, sizeof(d->reason), "credential");
	}
}

/* An SSH key or the .ssh directory: the caller's agent is how it is meant to be used. */
static bool ssh_key(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strstr(path, "/.ssh/") || (strstr(path, "/.ssh") && !strstr(path, "/.ssh/")) ||
	       startswith(base, "id_rsa") || startswith(base, "id_dsa") ||
	       startswith(base, "id_ecdsa") || startswith(base, "id_ed25519");
}

/*
 * A request no HTTP rule allows ("no HTTP rule for METHOD PATH"): the rule
 * that would. A reason cut by the tally's bound names the request's path
 * only in part: the rule proposed is then for the directory it reaches.
 */
static void http_hint(const struct denial *d, char *buf, size_t size)
{
	char req[sizeof(d->reason)];
	char *slash;

	snprintf(req, sizeof(req), "%s", d->reason + 17);
	if (strlen(d->reason) + 1 >= sizeof(d->reason) && (slash = strrchr(req, '/')))
		snprintf(slash, sizeof(req) - (slash - req), "/**");
	snprintf(buf, size,
		 "the request %s to %s is not in the HTTP rules; allow it with --net-allow '%s %s'",
		 d->reason + 17, d->what, d->what, req);
}

/* The egress proxy's refusal, by its reason (userspace/net/: "no net_allow rule", ...). */
static void egress_hint(const struct denial *d, char *buf, size_t size)
{
	char host[sizeof(d->what)];
	char *colon;
	bool dns = streq(d->op, "resolve");

	snprintf(host, sizeof(host), "%s", d->what);
	colon = strrchr(host, ':');
	if (!dns && colon && host[0] != '[')
		*colon = '\0';
	if (startswith(host, "169.254.") || startswith(host, "[fd00:ec2::254]") ||
	    startswith(host, "fd00:ec2::254"))
		snprintf(buf, size,
			 "%s is link-local (the cloud metadata address holds the host's "
			 "credentials): not allowed by policy",
			 host);
	else if (startswith(d->reason, "no HTTP rule for "))
		http_hint(d, buf, size);
	else if (streq(d->reason, "no net_allow rule"))
		snprintf(buf, size,
			 "%s is not in the network allow-list; allow it with --net-allow %s",
			 dns ? host : d->what, dns ? host : d->what);
	else if (streq(d->reason, "net_deny"))
		snprintf(buf, size, "%s matches the net_deny rule '%s': not allowed by policy",
			 host, d->rule);
	else if (startswith(d->reason, "rebinding") ||
		 streq(d->reason, "address not reachable by name"))
		snprintf(buf, size,
			 "%s resolves to an address no session may reach by name (loopback, "
			 "link-local, the cloud metadata address, the host's own): not allowed by "
			 "policy",
			 host);
	else if (streq(d->reason, "address not resolved by the session"))
		snprintf(buf, size,
			 "%s was reached by address, not by a name the session resolved: connect "
			 "by its name (allowed with --net-allow NAME), or allow the address with "
			 "--net-allow %s",
			 d->what, host);
	else if (startswith(d->reason, "address not resolved for"))
		snprintf(buf, size,
			 "%s was reached at an address the session's resolver did not give for "
			 "it (/etc/hosts, a fixed address): resolve it through the session's DNS",
			 host);
	else if (startswith(d->reason, "connection limit") || startswith(d->reason, "query limit"))
		snprintf(buf, size,
			 "refused by the egress proxy (%s): the session's cap of connections or "
			 "queries at once; open fewer at a time",
			 d->reason);
	else
		snprintf(buf, size, "refused by the egress proxy (%s): not allowed by policy",
			 d->reason[0] ? d->reason : "no reason given");
}

/* A credential refused: never granted; how the command is meant to get what it needs. */
static void credential_hint(const struct denial *d, char *buf, size_t size)
{
	if (ssh_key(d->what))
		snprintf(buf, size,
			 "%s is an SSH credential: never granted to a session; use the caller's "
			 "agent with --ssh-agent (it signs, the key stays out)",
			 d->what);
	else
		snprintf(buf, size,
			 "%s is a credential (a deny path or credential pattern of the policy): "
			 "not allowed by policy; pass the one value the command needs with "
			 "--env NAME",
			 d->what);
}

/* long: one case per kind of denial, each with its own words */
static void hint_of(const struct denial *d, char *buf, size_t size)
{
	const char *meta = session_meta_of(d->op);
	const char *agent = getenv("SSH_AUTH_SOCK");
	char dir[sizeof(d->what)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", d->what);
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	if (streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_EGRESS)))
		egress_hint(d, buf, size);
	else if (streq(d->reason, "credential"))
		credential_hint(d, buf, size);
	else if (streq(d->reason, "mode"))
		snprintf(buf, size,
			 "%s is not executable (its mode has no x bit; no layer of bpfbox refused "
			 "it): chmod +x %s, or run it with its interpreter",
			 d->what, d->what);
	else if (streq(d->op, "bind"))
		snprintf(
			buf, size,
			"a TCP server (bind %s) is refused under --net-allow; run it under --net "
			"deny (a loopback of the session's own, where servers work) or --net allow",
			d->what);
	else if (streq(d->op, "connect") && startswith(d->what, "unix:") && agent &&
		 streq(d->what + 5, agent))
		snprintf(buf, size,
			 "the unix socket %s is the caller's SSH agent; forward it with "
			 "--ssh-agent (it signs with every key it holds)",
			 agent);
	else if (streq(d->op, "connect") && startswith(d->what, "unix:"))
		snprintf(buf, size,
			 "the unix socket %s is outside the writable paths; grant its "
			 "directory with --rw",
			 d->what + 5);
	else if (streq(d->op, "connect") && (startswith(d->what, "169.254.169.254:") ||
					     startswith(d->what, "[fd00:ec2::254]:")))
		snprintf(buf, size,
			 "the cloud metadata address is denied to every session; it "
			 "holds the host's credentials: not allowed by policy");
	else if (streq(d->op, "socket") || streq(d->op, "connect"))
		snprintf(buf, size,
			 "network is denied by policy; allow a host with --net-allow "
			 "HOST[:PORT], or all of it with --net allow");
	else if (meta)
		snprintf(buf, size,
			 "%s refused: %s is outside the writable paths (its %s did not "
			 "change); grant it with --rw %s",
			 d->op, d->what, meta, dir);
	else if (streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_MOUNT)))
		snprintf(buf, size,
			 "write outside the writable paths: %s (the host is read-only "
			 "in the session); grant it with --rw %s",
			 d->what, dir);
	else if (streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP)) && d->rule[0])
		snprintf(buf, size,
			 "%s was stopped by the command rule '%s' of the policy (docs/config.md): "
			 "not allowed by policy; do it another way or ask the operator",
			 d->what, d->rule);
	else if (streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP)))
		snprintf(buf, size,
			 "%s was stopped by a command rule of the policy (docs/config.md): not "
			 "allowed by policy; do it another way or ask the operator",
			 d->what);
	else if (streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_BPF_LSM)))
		snprintf(buf, size,
			 "%s matches a credential or exec rule of the policy: not allowed by "
			 "policy",
			 d->what);
	else if (streq(d->op, "exec"))
		snprintf(buf, size, "%s is outside the granted paths; grant it with --ro %s",
			 d->what, dir);
	else if (streq(d->op, "open"))
		snprintf(buf, size,
			 "read outside the granted paths: %s; grant it with --ro %s, "
			 "or the host with --read-host",
			 d->what, d->what);
	else
		snprintf(buf, size, "write outside the workspace: %s; grant it with --rw %s",
			 d->what, dir);
	no_host_grant(d, buf, size);
}

void session_denial_explain(const struct session *s, struct denial *d, char *hint, size_t size)
{
	refine(s, d);
	/* Without BPF an allow-list is the proxy's: a direct connect has no way out. */
	if (s->layers.ns.proxy_port && streq(d->op, "connect") &&
	    streq(d->layer, bpfbox_layer_name(BPFBOX_LAYER_SECCOMP)))
		snprintf(hint, size,
			 "this session reaches the network only through its proxy (HTTP_PROXY "
			 "and HTTPS_PROXY are set; no BPF network layer here): make the tool use "
			 "them, or run through bpfbox daemon, where every connect is judged");
	else
		hint_of(d, hint, size);
}
