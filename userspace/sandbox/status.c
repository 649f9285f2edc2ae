// SPDX-License-Identifier: GPL-2.0
/*
 * The status channel of a session (--status-fd, docs/runtime.md) and the
 * summary of what was denied, with a hint a model can act on. Written by
 * bpfbox run itself: no root, no daemon, nothing parsed from stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session_internal.h"
#include "changes.h"
#include "cred_match.h"
#include "../policy/policy.h"
#include "../lib/jsonw.h"
#include "../lib/cgroup.h"
#include "../lib/log.h"
#include "../lib/names.h"
#include "../lib/util.h"

#define STATUS_VERSION 1

#define CAUSE_NAME(id, name) [id] = name,
static const char *const cause_names[] = {SESSION_CAUSES(CAUSE_NAME)};
#undef CAUSE_NAME

const char *session_cause_name(enum session_cause c)
{
	return (unsigned int)c < ARRAY_SIZE(cause_names) ? cause_names[c] : "exit";
}

/* Starts a line of type; false (nothing begun) when no one reads the status. */
static bool begin(struct jsonw *w, const struct session *s, const char *type)
{
	char buf[RFC3339_MAX];

	if (s->status_fd < 0)
		return false;
	rfc3339(buf, sizeof(buf), real_now_ns(), 3);
	jsonw_begin(w);
	jsonw_u64(w, "version", STATUS_VERSION);
	jsonw_str(w, "type", type);
	jsonw_str(w, "time", buf);
	jsonw_str(w, "session", s->id);
	return true;
}

/* One whole line; a reader that went away costs nothing but the line. */
static void finish(const struct session *s, struct jsonw *w)
{
	size_t off = 0;

	jsonw_end(w);
	jsonw_newline(w);
	while (!w->oom && off < w->len) {
		ssize_t n = write(s->status_fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
	}
	jsonw_free(w);
}

static void put_labels(struct jsonw *w, const struct session *s)
{
	jsonw_object_begin(w, "labels");
	for (size_t i = 0; s->labels && i < s->labels->n; i++) {
		const char *l = s->labels->v[i], *eq = strchr(l, '=');
		char key[128];

		if (!eq || (size_t)(eq - l) >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - l), l);
		jsonw_str(w, key, eq + 1);
	}
	jsonw_end(w);
}

static void put_strv(struct jsonw *w, const char *key, const struct strv *v)
{
	jsonw_array_begin(w, key);
	for (size_t i = 0; i < v->n; i++)
		jsonw_array_strn(w, v->v[i], strlen(v->v[i]));
	jsonw_array_end(w);
}

/* What the session runs under, after a daemon's ceilings: mode, network, limits. */
static void put_effective(struct jsonw *w, const struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	const struct policy_limits *l = &p->limits;

	jsonw_str(w, "mode", sandbox_mode_name(p->mode));
	jsonw_str(w, "network", p->net == NET_ALLOW ? "allow" : "deny");
	put_strv(w, "net_allow", &p->net_allow);
	jsonw_object_begin(w, "limits");
	jsonw_u64(w, "timeout_ms", l->timeout_ms);
	jsonw_u64(w, "output_bytes", l->output_bytes);
	jsonw_u64(w, "memory_mb", l->memory_mb);
	jsonw_u64(w, "pids", l->pids);
	jsonw_u64(w, "cpu_percent", l->cpu_percent);
	jsonw_u64(w, "disk_mb", l->disk_mb);
	jsonw_u64(w, "file_size_mb", l->file_size_mb);
	jsonw_u64(w, "pause_timeout_ms", l->pause_timeout_ms);
	jsonw_end(w);
	if (s->clamped[0])
		jsonw_str(w, "clamped", s->clamped);
}

void status_started(const struct session *s, pid_t pid)
{
	struct jsonw w = {0};

	if (!begin(&w, s, "started"))
		return;
	jsonw_u64(&w, "pid", pid);
	jsonw_str(&w, "level_requested", level_name(s->layers.requested));
	jsonw_str(&w, "level_enabled", level_name(s->layers.enabled));
	/* One sentence each, as session.start has them. */
	jsonw_array_begin(&w, "not_enforced");
	for (const char *t = s->layers.not_enforced; *t;) {
		const char *end = strstr(t, "; ");
		size_t n = end ? (size_t)(end - t) : strlen(t);

		jsonw_array_strn(&w, t, n);
		t += n + (end ? 2 : 0);
	}
	if (s->lim.not_enforced[0])
		jsonw_array_strn(&w, s->lim.not_enforced, strlen(s->lim.not_enforced));
	jsonw_array_end(&w);
	jsonw_str(&w, "workspace", s->policy->workspace);
	if (s->home[0])
		jsonw_str(&w, "home", s->home);
	put_labels(&w, s);
	put_effective(&w, s);
	finish(s, &w);
}

void status_lifecycle(const struct session *s, const struct session_event *ev)
{
	struct jsonw w = {0};

	/* The change set is said on the ended line (status_ended). */
	if (ev->type == SEV_CHANGES || !begin(&w, s,
					      ev->type == SEV_PAUSED	? "paused"
					      : ev->type == SEV_RESUMED ? "resumed"
									: "killed"))
		return;
	switch (ev->type) {
	case SEV_PAUSED:
		jsonw_str(&w, "reason", ev->reason);
		if (ev->pid)
			jsonw_u64(&w, "pid", ev->pid);
		jsonw_u64(&w, "memory_mb", ev->memory_mb);
		jsonw_u64(&w, "disk_mb", ev->disk_mb);
		if (ev->disk_used_mb >= 0)
			jsonw_i64(&w, "disk_used_mb", ev->disk_used_mb);
		jsonw_u64(&w, "kill_after_ms", s->policy->limits.pause_timeout_ms);
		break;
	case SEV_RESUMED:
		jsonw_u64(&w, "paused_ms", ev->paused_ms);
		jsonw_u64(&w, "memory_mb", ev->memory_mb);
		jsonw_u64(&w, "disk_mb", ev->disk_mb);
		break;
	case SEV_KILLED:
		jsonw_str(&w, "reason", ev->reason);
		jsonw_bool(&w, "paused", ev->was_paused);
		break;
	case SEV_CHANGES:
		break;
	}
	finish(s, &w);
}

/*
 * Text the session chose, through term_clean (lib/util.c) like stderr's:
 * the channel's reader may show it, or a model read it, as lines.
 */
static void put_clean(struct jsonw *w, const char *key, const char *str, size_t len)
{
	char buf[4096 + 1], raw[sizeof(buf)];

	snprintf(raw, sizeof(raw), "%.*s", (int)(len < sizeof(raw) ? len : sizeof(raw) - 1), str);
	len = term_clean(buf, sizeof(buf), raw);
	if (key)
		jsonw_strn(w, key, buf, len);
	else
		jsonw_array_strn(w, buf, len);
}

void status_ask(const struct session *s, uint64_t id, pid_t pid, const char *rule,
		const char *filename, const char *argv, size_t argv_len, uint64_t timeout_ms)
{
	struct jsonw w = {0};

	if (!begin(&w, s, "ask"))
		return;
	jsonw_u64(&w, "id", id);
	jsonw_u64(&w, "pid", pid);
	jsonw_str(&w, "rule", rule);
	put_clean(&w, "filename", filename, strlen(filename));
	jsonw_array_begin(&w, "argv");
	for (size_t i = 0; i < argv_len;) {
		size_t n = strnlen(argv + i, argv_len - i);

		put_clean(&w, NULL, argv + i, n);
		i += n + 1;
	}
	jsonw_array_end(&w);
	jsonw_u64(&w, "deny_after_ms", timeout_ms);
	finish(s, &w);
}

void status_answered(const struct session *s, uint64_t id, const char *answer)
{
	struct jsonw w = {0};

	if (!begin(&w, s, "answered"))
		return;
	jsonw_u64(&w, "id", id);
	jsonw_str(&w, "answer", answer);
	finish(s, &w);
}

void status_ended(struct session *s)
{
	const struct session_result *r = &s->result;
	struct jsonw w = {0};

	if (s->ended_said || !begin(&w, s, "ended"))
		return;
	s->ended_said = true;
	jsonw_i64(&w, "exit_code", r->exit_code);
	jsonw_str(&w, "cause", session_cause_name(r->cause));
	if (s->start_ns)
		jsonw_u64(&w, "duration_ms", (now_ns() - s->start_ns) / 1000000);
	/* What could not be set up, in bpfbox's own words (never only an errno). */
	if (r->cause == CAUSE_SETUP || r->cause == CAUSE_USAGE) {
		jsonw_str(&w, "step", s->setup_step ? s->setup_step : "session");
		if (log_last_error()[0])
			jsonw_str(&w, "reason", log_last_error());
	}
	if (r->wait_status >= 0 && WIFSIGNALED(r->wait_status))
		jsonw_u64(&w, "signal", WTERMSIG(r->wait_status));
	jsonw_u64(&w, "paused_ms", r->paused_ms);
	jsonw_u64(&w, "output_bytes", r->output_bytes);
	jsonw_u64(&w, "output_dropped", r->output_dropped);
	jsonw_u64(&w, "denied", denials_total(&s->denials));
	jsonw_u64(&w, "fallbacks", s->denials.fallbacks);
	jsonw_u64(&w, "exec_not_found", s->denials.exec_not_found);
	if (s->changes && s->result.wait_status >= 0) {
		jsonw_object_begin(&w, "changes");
		changes_summary_json(s->changes, &w);
		jsonw_end(&w);
	}
	finish(s, &w);
}

void session_ended_early(struct session *s, int status_fd, uint64_t start_ns, int exit_code,
			 const char *step)
{
	if (s->ended_said || status_fd < 0)
		return;
	if (!s->id[0] && session_name_new(s->id) < 0)
		return;
	s->status_fd = status_fd;
	s->start_ns = start_ns;
	s->setup_step = step;
	s->result = (struct session_result){
		.exit_code = exit_code,
		.wait_status = -1,
		.cause = exit_code == EXIT_SETUP ? CAUSE_SETUP : CAUSE_USAGE,
	};
	status_ended(s);
}

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
	else if (streq(d->reason, "no net_allow rule"))
		snprintf(buf, size,
			 "%s is not in the network allow-list; allow it with --net-allow %s "
			 "(needs root or the daemon)",
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
/* What to do about one denial, in words a model can act on. */
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
		snprintf(buf, size,
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
			 "ADDR[:PORT] (needs root or the daemon), or all of it with "
			 "--net allow");
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

void session_denials_report(const struct session *s)
{
	char hint[640];

	for (size_t i = 0; i < s->denials.n; i++) {
		struct denial d = s->denials.v[i];
		struct jsonw w = {0};

		refine(s, &d);
		hint_of(&d, hint, sizeof(hint));
		log_notice("denied %u time%s: %s %s (%s, %s%s%s); %s", d.count,
			   d.count == 1 ? "" : "s", d.op, d.what, d.layer,
			   strerrorname_np(d.err) ?: "?", d.rule[0] ? ", rule " : "", d.rule, hint);
		if (!begin(&w, s, "denied"))
			continue;
		jsonw_str(&w, "layer", d.layer);
		jsonw_str(&w, "op", d.op);
		jsonw_str(&w, "what", d.what);
		if (d.rule[0])
			jsonw_str(&w, "rule", d.rule);
		if (d.reason[0])
			jsonw_str(&w, "reason", d.reason);
		jsonw_str(&w, "errno", strerrorname_np(d.err) ?: "?");
		jsonw_u64(&w, "count", d.count);
		jsonw_str(&w, "hint", hint);
		finish(s, &w);
	}
	if (s->denials.other)
		log_notice("denied %llu more times, of other kinds",
			   (unsigned long long)s->denials.other);
}

size_t session_lsm_only_rules(const struct session *s, char *buf, size_t size)
{
	const struct bpfbox_policy *p = s->policy;
	size_t n;

	if (p->mode == MODE_FULL_ACCESS || !size)
		return 0;
	/*
	 * With namespaces the view masks what the start scan found by name
	 * (cred_scan.c): not what is made later, nor deep in the PATH trees,
	 * nor past the scan's bounds. Without, the workspace is granted whole.
	 */
	if (s->layers.ns.clone_flags)
		n = snprintf(buf, size,
			     "credential patterns in files made during the session and below the "
			     "top of the PATH trees (masked by name at start: no BPF LSM)%s%s",
			     s->cred_unchecked[0] ? "; credential scan at start: " : "",
			     s->cred_unchecked);
	else
		n = snprintf(buf, size,
			     "credential patterns in the workspace and below the top of the other "
			     "granted trees (**/.env, **/*.pem, ...: no namespaces to mask them, "
			     "no BPF LSM)");
	if (!p->exec_deny.n || n >= size)
		return n < size ? n : size - 1;
	n += snprintf(buf + n, size - n, "; --exec-deny");
	for (size_t i = 0; i < p->exec_deny.n && n < size; i++)
		n += snprintf(buf + n, size - n, " %s", p->exec_deny.v[i]);
	if (n < size)
		n += snprintf(buf + n, size - n, " (no BPF LSM)");
	return n < size ? n : size - 1;
}

void session_note_bpf_lsm(struct session *s, bool lsm)
{
	char what[1024];
	size_t len;

	if (lsm || !session_lsm_only_rules(s, what, sizeof(what)))
		return;
	len = strlen(s->layers.not_enforced);
	snprintf(s->layers.not_enforced + len, sizeof(s->layers.not_enforced) - len, "%s%s",
		 len ? "; " : "", what);
}
