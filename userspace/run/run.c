// SPDX-License-Identifier: GPL-2.0
/* The one path of a session, for both modes (run.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "run.h"
#include "run_internal.h"
#include "embedded.h"
#include "via_daemon.h"
#include "net_proxy.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../policy/rules.h"
#include "../sandbox/session.h"
#include "../net/egress.h"
#include "../lib/log.h"

/* One run: the plan, the policy, the session and whoever holds the programs. */
struct run {
	const struct run_plan *plan;
	struct bpfbox_policy policy;
	struct session s;
	struct sinks *sinks; /* --audit: the one set of sinks of either mode */
	struct embedded emb;
	struct daemon_run drun;
	struct run_proxy proxy;	       /* --net-allow without the BPF network layer */
	struct egress_secrets secrets; /* --secret: values held here, for the proxy */
	struct strv secret_env;	       /* their NAME=placeholder, for the command */
	bool loaded, planned, daemon, embedded;
	bool ask_at_exec; /* the top-level command's ask is asked at its exec */
	const char *step; /* the step under way, for a set-up failure's "ended" */
	char why[320];	  /* why the BPF LSM is not loaded, for --level */
};

void run_plan_init(struct run_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->audit.ring_bytes = 4U << 20;
	p->audit.aggregate_ns = 1000000000ULL;
	p->via = LIMITS_VIA_AUTO;
	p->status_fd = -1;
	p->want = LEVEL_FULL;
	p->start_ns = now_ns();
}

static void print_verbose(const struct session *s)
{
	struct json_object *o = policy_to_json(s->policy);

	fprintf(stderr, "bpfbox: session %s, level requested %s, enabled %s\n", s->id,
		level_name(s->layers.requested), level_name(s->layers.enabled));
	fprintf(stderr, "bpfbox: landlock %s (ABI %d), seccomp %s\n",
		s->layers.landlock ? "on" : "off", s->layers.landlock_abi,
		s->layers.seccomp ? "on" : "off");
	fprintf(stderr, "bpfbox: policy %s\n",
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

void run_level_final(const struct session *s, bool daemon, bool verbose)
{
	const char *ne = s->layers.not_enforced;
	/* The daemon makes and limits the cgroups: what it cannot, it says. */
	const char *lim = daemon ? "" : s->lim.not_enforced;

	/* What the policy asks and nothing here enforces: said even with -q, once, one line. */
	if (ne[0] || lim[0])
		log_warn_always("not enforced on this host: %s%s%s", ne,
				ne[0] && lim[0] ? "; " : "", lim);
	if (verbose)
		print_verbose(s);
}

/* --secret: each value read here (never logged) and its placeholder. */
static int load_secrets(struct run *r)
{
	char err[PATH_MAX + 256], *entry;

	if (egress_secrets_load(&r->secrets, &r->policy.secrets, err, sizeof(err)) < 0)
		return log_refusal(EINVAL, "%s; nothing ran", err);
	for (size_t i = 0; i < r->secrets.n; i++) {
		if (asprintf(&entry, "%s=%s", r->secrets.v[i].name, r->secrets.v[i].placeholder) <
			    0 ||
		    strv_push(&r->secret_env, entry) < 0)
			return log_refusal(ENOMEM, "--secret: out of memory");
		free(entry);
	}
	return 0;
}

/*
 * The disk monitor's inotify instance, taken at the plan (monitor_disk_reserve):
 * without it the disk limit would not hold, and a session that holds its
 * user's instances could turn off the disk limit of every later session of
 * that user. Fail closed (docs/SECURITY.md, "Resource limits and monitors").
 */
static int disk_watch_refused(const struct session *s)
{
	if (!s->lim.disk_unwatched)
		return 0;
	return log_refusal(s->lim.disk_unwatched,
			   "cannot watch the session's disk use (%s): the inotify instances of "
			   "uid %u are taken (fs.inotify.max_user_instances), so the disk limit "
			   "would not hold; nothing ran (raise it: sysctl "
			   "fs.inotify.max_user_instances=1024, or end what holds them)",
			   strerror(s->lim.disk_unwatched), (unsigned)getuid());
}

/* The policy of every layer and the session's plan on this host. */
static int plan_session(struct run *r)
{
	const struct run_plan *p = r->plan;
	struct policy_error perr = {0};
	struct rules_verdict verdict;

	r->loaded = true; /* policy_free() frees what a failed load left */
	r->step = "policy";
	if (policy_load(&r->policy, &p->src, &perr) < 0) {
		char msg[1024];

		fprintf(stderr, "bpfbox run: %s\n", policy_error_format(&perr, msg, sizeof(msg)));
		log_keep_error(msg);
		return -EINVAL;
	}
	/* Command rules, before anything runs (docs/config.md): deny and ask are 125. */
	r->step = "command_rule";
	rules_check_command(&r->policy, p->argv, &verdict);
	/*
	 * An ask with someone to answer (--ask-fd) and the BPF agent (--audit)
	 * is asked at the command's exec in the session, like any other; the
	 * agent must then hold the rules (start_embedded), else it is refused.
	 */
	if (verdict.action == CMD_ASK && p->audit.ask_fd > 2 && p->audit.path)
		r->ask_at_exec = true;
	else if (verdict.action != CMD_ALLOW)
		return log_refusal(
			EPERM, "command %s by rule '%s'%s; nothing ran",
			verdict.action == CMD_DENY ? "denied" : "needs approval", verdict.rule,
			verdict.action == CMD_ASK ? " and nobody can answer before it starts" : "");
	r->step = "secret";
	if (load_secrets(r) < 0)
		return -EINVAL;
	r->step = "plan";
	if (session_plan(&r->s, &r->policy) < 0)
		return -EINVAL;
	r->planned = true;
	r->s.secret_env = r->secret_env.n ? &r->secret_env : NULL;
	r->s.secrets = r->secrets.n ? &r->secrets : NULL;
	r->s.status_fd = p->status_fd;
	r->s.start_ns = p->start_ns;
	r->s.labels = p->labels;
	r->s.changes_from = p->changes_from;
	session_changes_plan(&r->s);
	r->s.layers.requested = p->want;
	if (p->via != LIMITS_VIA_AUTO)
		session_plan_limits(&r->s, p->via);
	r->step = "disk";
	if (disk_watch_refused(&r->s) < 0)
		return -EMFILE;
	r->step = "level";
	if (r->s.layers.enabled == LEVEL_NONE && !r->policy.allow_unconfined)
		return log_refusal(EPERM, "neither Landlock nor seccomp is available, so nothing "
					  "would confine the command; refusing (pass "
					  "--allow-unconfined to run it anyway)");
	if (r->s.layers.enabled == LEVEL_MINIMAL)
		log_warn("running at level Minimal: no filesystem isolation");
	return 0;
}

/* --audit FILE or "-": the sinks both modes write the session's events to. */
static void sink_log(void *ctx, const char *msg)
{
	(void)ctx;
	log_warn("%s", msg);
}

static int open_sinks(struct run *r)
{
	const char *path = r->plan->audit.path;
	struct sinks_opts so = {.blocking = true, .log = sink_log};
	struct sink_config cfg;
	char err[PATH_MAX + 512];

	if (!path)
		return 0;
	r->step = "audit";
	sink_config_parse("stdout", &cfg, err, sizeof(err));
	if (!streq(path, "-")) {
		cfg.kind = SINK_FILE;
		snprintf(cfg.path, sizeof(cfg.path), "%s", path);
		snprintf(cfg.name, sizeof(cfg.name), "file:%.*s", (int)sizeof(cfg.name) - 6, path);
	}
	if (sinks_open(&r->sinks, &cfg, 1, &so, err, sizeof(err)) < 0)
		return log_refusal(EINVAL, "%s", err);
	return 0;
}

/*
 * --net-ask with nobody to answer, said as not enforced: without --ask-fd;
 * through a daemon also without --audit, whose stream brings the questions
 * back (as the command rules' asks).
 */
static void note_net_ask(struct run *r, bool daemon)
{
	const struct audit_opts *a = &r->plan->audit;

	if (!r->policy.net_ask || (a->ask_fd > 2 && (!daemon || a->path)))
		return;
	session_not_enforced(&r->s, daemon ? "asking for destinations no rule lists (--net-ask "
					     "through a daemon needs --audit and --ask-fd: they "
					     "are refused)"
					   : "asking for destinations no rule lists (--net-ask "
					     "without --ask-fd: nobody answers, they are refused)");
}

/* Daemon mode when a daemon answers (docs/daemon.md), else embedded. */
static int choose_mode(struct run *r)
{
	const struct run_plan *p = r->plan;
	char why[PATH_MAX + 256];
	int rc;

	r->step = "daemon";
	if (p->no_daemon) {
		/* The operator's ceilings may say no (docs/operating.md). */
		if (daemon_no_daemon_allowed(p->daemon_socket, why, sizeof(why)) < 0)
			return log_refusal(EPERM, "%s; nothing ran", why);
		return 0;
	}
	rc = daemon_run_connect(&r->drun, p->daemon_socket);
	if (rc < 0)
		return rc;
	r->daemon = rc > 0;
	if (!r->daemon)
		return 0;
	r->drun.level_given = p->level_given;
	r->drun.verbose = p->verbose;
	r->drun.ask_top = r->ask_at_exec; /* refused at register unless the daemon takes asks */
	r->drun.limits = &r->policy.limits;
	note_net_ask(r, true);
	rc = daemon_run_prepare(&r->drun, &r->s, &p->audit, r->sinks, p->argv);
	if (!rc && r->secrets.n && !r->s.ca_pem)
		return log_refusal(EPERM,
				   "--secret: the daemon at %s runs no TLS termination for "
				   "secrets (an older bpfbox?); nothing ran",
				   r->drun.socket);
	return rc;
}

/*
 * The network step of embedded mode: without the BPF network layer an
 * allow-list's way out is the proxy of the session's own namespace.
 */
static int start_network(struct run *r)
{
	struct session *s = &r->s;

	/*
	 * An allow-list opens inet sockets: without BPF to judge them, the
	 * session's way out is the proxy of its own network namespace, or none.
	 */
	note_net_ask(r, false);
	if (r->policy.net == NET_DENY && r->policy.net_allow.n &&
	    !(r->embedded && agent_status(r->emb.agent)->net)) {
		int rc = run_proxy_start(&r->proxy, s, &r->secrets, r->plan->audit.ask_fd);

		if (rc == -EOPNOTSUPP)
			return log_refusal(
				EPERM,
				"--net-allow needs the BPF network layer or a network "
				"namespace of the session's own, and neither is here "
				"(%s): run as root, or through bpfbox daemon; nothing ran",
				s->layers.ns.why_not[0] ? s->layers.ns.why_not : "no namespaces");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Embedded mode: the BPF agent is loaded here with --audit, or for Full
 * without it as root where a BPF LSM program loads (its records then go
 * nowhere; docs/benchmarks.md has the cost).
 */
static int start_embedded(struct run *r)
{
	const struct run_plan *p = r->plan;
	struct audit_opts a = p->audit;
	struct session *s = &r->s;
	bool auto_full = !a.path && p->want == LEVEL_FULL && s->layers.enabled == LEVEL_STANDARD &&
			 probe_bpf_lsm(r->why, sizeof(r->why));
	/* Root needs no --audit for a network rule: the programs that hold it load here. */
	bool auto_net = !a.path && geteuid() == 0 && r->policy.net == NET_DENY &&
			r->policy.net_allow.n;
	int net_rc;

	r->step = "limits";
	if (p->via == LIMITS_VIA_CGROUP && !session_limits_by_cgroup(s))
		return log_refusal(EPERM, "--limits-via cgroup: %s; nothing ran",
				   s->lim.not_enforced);
	if (auto_full || auto_net)
		a.off = true; /* decisions only: nobody reads the opens */
	/* Without --audit the exec program (the slowest to verify) is not worth it here. */
	a.net_only = auto_net && !auto_full;
	if (!a.path && !auto_full && !auto_net) {
		session_note_bpf_lsm(s, false);
		/* Every exec is checked only where an agent holds the rules (docs/config.md). */
		if (rules_any(&r->policy))
			session_not_enforced(
				s, "command rules on the execs inside the session (only "
				   "the top-level command was checked: no BPF agent here, "
				   "it needs --audit as root)");
	} else {
		int rc;

		r->step = "bpf";
		rc = embedded_start(&r->emb, s, &a, r->sinks, &r->secrets);

		if (rc < 0)
			return rc;
		r->embedded = true;
	}
	r->step = "command_rule";
	if (r->ask_at_exec && !(r->embedded && agent_status(r->emb.agent)->cmd))
		return log_refusal(EPERM, "the command needs approval, and the exec program "
					  "that would ask did not load; nothing ran");
	r->step = "network";
	net_rc = start_network(r);
	if (net_rc < 0)
		return net_rc;
	session_note_cgroup_view(s);
	run_level_final(s, false, p->verbose);
	/* Never silently less: an explicit --level full that cannot hold refuses. */
	r->step = "level";
	if (p->level_given && s->layers.enabled < s->layers.requested)
		return log_refusal(EPERM,
				   "--level %s: this session reaches only %s (%s); run "
				   "as root where the BPF LSM loads, or through a daemon that "
				   "has it; nothing ran",
				   level_name(s->layers.requested), level_name(s->layers.enabled),
				   r->why[0] ? r->why : "the BPF LSM is not loaded for it");
	s->ca_pem = r->embedded ? egress_ca_pem(r->emb.egress) : run_proxy_ca(&r->proxy);
	if (r->secrets.n && !s->ca_pem)
		return log_refusal(EPERM, "--secret needs the egress proxy, which did not start; "
					  "nothing ran");
	/* The one session.start of embedded mode (the daemon writes its own at register). */
	if (r->embedded)
		embedded_session_start(&r->emb, s, p->argv);
	return 0;
}

/* The daemon refused this client at register: the same session, embedded. */
static int fall_back(struct run *r)
{
	daemon_run_finish(&r->drun);
	r->daemon = false;
	memset(&r->s.hooks, 0, sizeof(r->s.hooks));
	r->s.hooks.poll_fd = -1;
	/* Its limits were left to the daemon: planned again for this process. */
	session_plan_limits(&r->s, r->plan->via);
	if (disk_watch_refused(&r->s) < 0)
		return -EMFILE;
	return start_embedded(r);
}

static void finish(struct run *r, bool ran)
{
	if (r->daemon)
		daemon_run_finish(&r->drun);
	if (r->embedded)
		embedded_finish(&r->emb, ran ? &r->s : NULL);
	r->daemon = r->embedded = false;
	run_proxy_stop(&r->proxy);
}

int run_session(const struct run_plan *plan)
{
	struct run r = {.plan = plan};
	int code = EXIT_SETUP, rc;

	rc = plan_session(&r);
	if (!rc)
		rc = open_sinks(&r);
	if (!rc)
		rc = choose_mode(&r);
	if (rc == -EAGAIN && r.daemon) {
		rc = fall_back(&r); /* refused at a register before the fork */
	} else if (!rc && !r.daemon) {
		rc = start_embedded(&r);
	}
	if (!rc) {
		r.step = "session";
		rc = session_run(&r.s, plan->argv);
	}
	if (rc == -EAGAIN && r.daemon && !(rc = fall_back(&r))) {
		r.step = "session";
		rc = session_run(&r.s, plan->argv);
	}
	finish(&r, rc == 0);
	/* Every exit on the status channel: a set-up that stopped says where and why. */
	if (rc)
		session_ended_early(&r.s, plan->status_fd, plan->start_ns, EXIT_SETUP, r.step);
	if (!rc) {
		code = r.s.result.exit_code;
		/* From the fork (docs/runtime.md): a set-up that never ended is said so. */
		if (r.s.result.timed_out)
			log_warn("session %s stopped: timeout of %llu s%s", r.s.id,
				 (unsigned long long)(r.policy.limits.timeout_ms / 1000),
				 r.s.result.started ? ""
						    : " before its command started (its set-up in "
						      "the session had not ended)");
	}
	if (r.planned)
		session_cleanup(&r.s);
	if (r.loaded)
		policy_free(&r.policy);
	egress_secrets_free(&r.secrets);
	strv_clear(&r.secret_env);
	sinks_close(r.sinks);
	return code;
}
