// SPDX-License-Identifier: GPL-2.0
/*
 * The status channel of a session (--status-fd, docs/runtime.md) and the
 * summary of what was denied, with a hint a model can act on. Written by
 * bpfbox run itself: no root, no daemon, nothing parsed from stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
	/* Lines come from the proxy's threads too (--net-ask): one whole line at a time. */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t off = 0;

	jsonw_end(w);
	jsonw_newline(w);
	pthread_mutex_lock(&lock);
	while (!w->oom && off < w->len) {
		ssize_t n = write(s->status_fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
	}
	pthread_mutex_unlock(&lock);
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

void status_ask_net(const struct session *s, uint64_t id, const char *name, uint16_t port,
		    uint64_t timeout_ms)
{
	struct jsonw w = {0};

	if (!begin(&w, s, "ask"))
		return;
	jsonw_u64(&w, "id", id);
	jsonw_str(&w, "kind", "net");
	put_clean(&w, "name", name, strlen(name));
	if (port)
		jsonw_u64(&w, "port", port);
	else
		jsonw_null(&w, "port");
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

void session_denials_report(struct session *s)
{
	char hint[640];

	/* The proxy's own, counted on its threads (egress without BPF). */
	if (s->side_denials)
		denials_shared_take(s->side_denials, &s->denials);
	for (size_t i = 0; i < s->denials.n; i++) {
		struct denial d = s->denials.v[i];
		struct jsonw w = {0};

		session_denial_explain(s, &d, hint, sizeof(hint));
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
