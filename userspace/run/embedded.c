// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <json-c/json.h>

#include "embedded.h"
#include "../agent/agent.h"
#include "../audit/lifecycle.h"
#include "../audit/redact.h"
#include "../audit/sink.h"
#include "bpfbox/events.h"
#include "../monitor/control.h"
#include "../policy/policy.h"
#include "../policy/rules.h"
#include "../sandbox/session.h"
#include "../lib/closer.h"
#include "../lib/log.h"
#include "../lib/names.h"
#include "../lib/util.h"
#include "../net/egress.h"

/* The event in e->w to the sinks; e->w is reset. */
static void emit(void *ctx, const struct audit_event *ev)
{
	struct embedded *e = ctx;
	struct audit_event out = *ev;

	out.line = e->w.buf;
	out.len = e->w.len;
	if (!e->w.oom)
		sinks_emit(e->sinks, &out);
	jsonw_reset(&e->w);
}

static void emit_kind(struct embedded *e, enum ev_kind kind)
{
	struct audit_event ev = {.kind = kind};

	emit(e, &ev);
}

static void sink_flush(struct embedded *e)
{
	sinks_flush(e->sinks);
	jsonw_reset(&e->w);
}

/*
 * A command rule's ask (agent/ask.h): the process is stopped at its exec.
 * The session is frozen, the status channel says "ask", the runtime's
 * answer is awaited within the pause timeout, the process continued or
 * killed, the session thawed; then session.ask, with the answer, takes the
 * record's place (and sequence number) in the audit stream.
 */
static void on_ask(struct embedded *e, const struct bpfbox_exec_event *x)
{
	struct session *s = e->session;
	uint64_t t0 = now_ns();
	struct audit_ask *q = malloc(sizeof(*q));
	enum ask_answer ans;
	int r;

	if (!q) {
		kill(x->hdr.pid, SIGKILL); /* fail closed: nobody could be asked */
		return;
	}
	audit_ask_from_exec(q, x);
	q->deny_after_ms = s->policy->limits.pause_timeout_ms;
	/*
	 * Frozen, no sibling can SIGCONT it; without a v2 cgroup the SIGSTOP
	 * holds alone. Held as an ask (monitor/control.h): `bpfbox resume`
	 * refuses to thaw it, a `bpfbox pause` meanwhile keeps it frozen after.
	 */
	r = s->lim.cg[0] ? ctl_ask_hold(s->lim.cg, (pid_t)q->pid) : -ENOENT;
	sink_flush(e);
	s->asked = true;		  /* the command has exec'd (session_run.c wait_exec) */
	pthread_mutex_lock(&e->ask_lock); /* a name's question may be open (--net-ask) */
	status_ask(s, q->id, q->pid, q->rule, q->file, q->argv, q->argv_len, q->deny_after_ms);
	e->ask.asked++;
	ans = e->ask.fd >= 0 ? ask_wait(&e->ask, q->id, q->deny_after_ms) : ASK_DENY;
	pthread_mutex_unlock(&e->ask_lock);
	if (!ask_apply(&e->ask, e->agent, q->pid, q->rule, ans))
		denials_add_why(&s->denials, bpfbox_layer_name(BPFBOX_LAYER_EXEC_TP), "exec",
				q->file, EPERM, 1, q->rule, NULL);
	if (r == 0)
		ctl_ask_release(s->lim.cg);
	status_answered(s, q->id, ask_answer_name(ans));
	q->frozen = r == 0;
	q->answer = ask_answer_name(ans);
	q->how = e->ask.fd < 0 ? "nobody" : ans == ASK_TIMEOUT ? "timeout" : "ask_fd";
	q->has_who = e->ask.fd >= 0 && ans != ASK_TIMEOUT;
	q->uid = getuid();
	q->by_pid = getpid();
	q->waited_ms = (now_ns() - t0) / 1000000;
	audit_session_ask(&e->w, &e->clock, e->session_id, q);
	free(q);
	emit_kind(e, EV_SESSION_ASK);
	sink_flush(e);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct embedded *e = ctx;
	uint64_t now = now_ns();
	struct audit_event ev;
	const struct bpfbox_exec_event *x = data;

	if (size >= sizeof(*x) && x->hdr.type == BPFBOX_EV_EXEC &&
	    (x->argv_truncated & BPFBOX_EXEC_PENDING) && e->session) {
		on_ask(e, x);
		return 0;
	}

	/* A denial of our layers, for the end-of-run summary (docs/runtime.md). */
	if (e->session)
		denials_add_record(&e->session->denials, data, size);
	/* A flood is counted, not written: exact counts by type, once a second. */
	if (!audit_flood_pass(&e->flood, data, size, now))
		return 0;
	if (audit_flood_line(&e->flood, &e->w, &e->clock, e->session_id, now, false))
		emit_kind(e, EV_LOSS);
	if (audit_encode_record(&e->w, &e->clock, data, size, e->session_id, &ev) >= 0)
		emit(e, &ev);
	return 0;
}

static void on_poll(void *ctx)
{
	struct embedded *e = ctx;

	agent_consume(e->agent);
	if (e->session)
		e->session->denials.exec_not_found =
			agent_session_exec_not_found(e->agent, e->cg_id);
	if (audit_flood_line(&e->flood, &e->w, &e->clock, e->session_id, now_ns(), false))
		emit_kind(e, EV_LOSS);
	sink_flush(e);
}

/* session.paused, session.resumed, session.killed, in order with the records. */
static void on_lifecycle(void *ctx, const struct session_event *ev)
{
	struct embedded *e = ctx;

	audit_session_lifecycle(&e->w, &e->clock, e->session_id, ev);
	emit_kind(e, audit_lifecycle_kind(ev));
	sink_flush(e);
}

static uint64_t mono_now(void)
{
	return now_ns();
}

static void emit_start(struct embedded *e, struct session *s, char *const argv[])
{
	const struct session_layers *l = &s->layers;
	const struct agent_status *st = agent_status(e->agent);
	struct json_object *pol = policy_to_json(s->policy), *labels = NULL;
	/* The same keys as the daemon's session.start (run.h: one session path). */
	struct audit_start_info in = {
		.session = s->id,
		.ts_ns = mono_now(),
		.pid = getpid(),
		.has_uid = true,
		.uid = getuid(),
		.mode = "embedded",
		.cgroup = s->lim.cg,
		.level_requested = level_name(l->requested),
		.level_enabled = level_name(l->enabled),
		.layers = {.landlock_abi = l->landlock ? l->landlock_abi : 0,
			   .seccomp = l->seccomp,
			   .bpf_audit = st->audit,
			   .bpf_network = st->net,
			   .bpf_unix_connect = st->unix_connect,
			   .bpf_lsm = e->lsm,
			   .bpf_audit_attach = st->attach},
		.limits = &s->lim,
		.not_enforced = {l->not_enforced, s->lim.not_enforced, st->why_not},
		.n_not_enforced = 3,
		.command = argv,
		.redact_command = true,
	};

	audit_redact_env(pol);
	/* --label KEY=VALUE pairs as an object (the daemon gets the same in register). */
	for (size_t i = 0; s->labels && i < s->labels->n; i++) {
		const char *lb = s->labels->v[i], *eq = strchr(lb, '=');
		char key[128];

		if (!eq || (size_t)(eq - lb) >= sizeof(key))
			continue;
		if (!labels)
			labels = json_object_new_object();
		snprintf(key, sizeof(key), "%.*s", (int)(eq - lb), lb);
		json_object_object_add(labels, key, json_object_new_string(eq + 1));
	}
	if (labels)
		in.labels_json = json_object_to_json_string_ext(
			labels, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	in.policy_json = json_object_to_json_string_ext(
		pol, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	audit_session_start(&e->w, &e->clock, &in);
	emit_kind(e, EV_SESSION_START);
	json_object_put(labels);
	json_object_put(pol);
	sink_flush(e);
}

/* Unix sockets may be reached under the dirs the session can write. */
static int allow_unix_dirs(struct embedded *e, struct session *s)
{
	const char *dirs[BPFBOX_UNIX_PREFIXES];
	size_t n = session_writable_dirs(s, true, dirs, BPFBOX_UNIX_PREFIXES);

	if (!agent_status(e->agent)->net)
		return 0;
	return agent_unix_allow(e->agent, 1, dirs, n);
}

/* The writable set by inode: the workspace, the private tmp, every rw path, the agent's socket. */
static int writable_dirs(struct embedded *e, struct session *s)
{
	size_t max = s->policy->rw_paths.n + 3, n;
	const char **dirs = calloc(max, sizeof(*dirs));
	int r;

	if (!dirs)
		return -ENOMEM;
	n = session_writable_dirs(s, false, dirs, max);
	r = agent_session_writable(e->agent, 1, dirs, n, NULL, NULL);
	free(dirs);
	return r;
}

/* With name rules, the session's proxy and resolver (userspace/net/). */
static int start_egress(struct embedded *e, struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	struct egress_opts o = {.cgroup_id = e->cg_id,
				.session = 1,
				.allow = &p->net_allow,
				.deny = &p->net_deny,
				.resolver = p->net_resolver,
				.secrets = e->secrets};
	struct agent_egress_fds f;
	char err[256];
	int r;

	/* With --net allow every destination is open: nothing to proxy. */
	if (p->net != NET_DENY || !egress_has_names(&p->net_allow))
		return 0;
	r = agent_egress_fds(e->agent, &f);
	if (r < 0)
		return log_error_errno(r, "name rules in --net-allow need the BPF network layer");
	o.orig_fd = f.orig;
	o.resolved_fd = f.resolved;
	o.dns_client_fd = f.dns_client;
	o.emit_fd = f.emit;
	/* --net-ask: the proxy asks through the command rules' ask fd. */
	if (p->net_ask && e->ask.fd >= 0) {
		net_asker_init(&e->net_ask, &e->ask_lock, &e->ask, s);
		o.ask = net_asker_ask;
		o.ask_arg = &e->net_ask;
	}
	r = egress_start(&e->egress, &o, err, sizeof(err));
	if (r < 0)
		log_error("%s", err);
	return r;
}

/*
 * The command rules into the kernel's table before the session is
 * registered: 1 when every exec is checked, 0 when there are none, or
 * when the program is not loaded (then said in not_enforced), -errno.
 */
static int start_cmd_rules(struct embedded *e, struct session *s)
{
	struct bpfbox_cmd_table *t;
	int r;

	if (!rules_any(s->policy))
		return 0;
	if (!agent_status(e->agent)->cmd) {
		session_not_enforced(
			s, e->net_only ? "command rules on the execs inside the session (only "
					 "the top-level command was checked: the exec program "
					 "loads with --audit)"
				       : "command rules on the execs inside the session (the exec "
					 "tracepoint program did not load, only the top-level "
					 "command was checked)");
		return 0;
	}
	t = malloc(sizeof(*t));
	if (!t)
		return log_error_errno(ENOMEM, "cannot compile the command rules");
	r = rules_compile(s->policy, t);
	if (!r)
		r = agent_session_cmd_rules(e->agent, 1, t);
	/* The ask flow keeps the table: approve always rewrites it. */
	e->ask.table = t;
	e->ask.session_index = 1;
	if (r < 0)
		return log_error_errno(r,
				       "cannot compile the command rules into the kernel's "
				       "table (at most %d rules)",
				       BPFBOX_CMD_RULES_MAX);
	return 1;
}

/* The session's flags in the sessions map (BPFBOX_SF_*). */
static uint32_t session_flags(struct embedded *e, struct session *s, const struct audit_opts *opts)
{
	const struct bpfbox_policy *p = s->policy;
	uint32_t flags = BPFBOX_SF_FROM_EXEC; /* before the exec: this run's own set-up */

	if (p->net == NET_DENY)
		flags |= BPFBOX_SF_NET_DENY;
	if (s->layers.landlock && p->mode != MODE_FULL_ACCESS)
		flags |= BPFBOX_SF_LANDLOCK;
	if ((s->layers.ns.clone_flags & CLONE_NEWNS) && p->mode != MODE_FULL_ACCESS)
		flags |= BPFBOX_SF_MOUNT_RO;
	if (s->layers.ns.clone_flags & CLONE_NEWNET)
		flags |= BPFBOX_SF_NET_LOOPBACK;
	if (agent_status(e->agent)->net)
		flags |= BPFBOX_SF_NET_BPF;
	if (opts->all)
		flags |= BPFBOX_SF_AUDIT_ALL;
	if (opts->off)
		flags |= BPFBOX_SF_AUDIT_OFF;
	/* Its lists (add_session): it records its refusals itself. */
	if (s->layers.requested == LEVEL_FULL && agent_status(e->agent)->lsm)
		flags |= BPFBOX_SF_BPF_LSM;
	/* What the BPF LSM enforces in the stead of this Landlock ABI. */
	if (s->layers.requested == LEVEL_FULL && p->mode != MODE_FULL_ACCESS) {
		flags |= agent_gap_flags(e->agent, s->layers.landlock ? s->layers.landlock_abi : 0);
		agent_gaps_filled(s->layers.not_enforced, flags);
	}
	return flags;
}

/* Addresses and CIDRs of --net-allow and --net-deny into the BPF map. */
static int add_net_rules(struct embedded *e, const struct bpfbox_policy *p)
{
	for (size_t i = 0; i < p->net_allow.n + p->net_deny.n; i++) {
		bool deny = i >= p->net_allow.n;
		const char *rule = deny ? p->net_deny.v[i - p->net_allow.n] : p->net_allow.v[i];
		char cidr[64];
		uint16_t lo, hi;
		int r;

		/* Names are the proxy's. */
		if (net_rule_parse(rule, cidr, sizeof(cidr), &lo, &hi) < 0)
			continue;
		r = deny ? agent_net_hole(e->agent, 1, cidr)
			 : agent_net_allow(e->agent, 1, cidr, lo, hi);
		if (r < 0)
			return log_error_errno(r, "cannot add the network rule '%s'", rule);
	}
	return 0;
}

/* The session in the maps: flags, egress, network rules, LSM lists, unix dirs. */
static int add_session(struct embedded *e, struct session *s, uint32_t flags)
{
	const struct bpfbox_policy *p = s->policy;
	int r;

	if (s->layers.requested == LEVEL_FULL && p->mode != MODE_FULL_ACCESS &&
	    (r = writable_dirs(e, s)) < 0)
		return log_error_errno(r, "cannot write the session's writable set into the BPF "
					  "LSM map");
	r = start_cmd_rules(e, s);
	if (r < 0)
		return r;
	if (r > 0)
		flags |= BPFBOX_SF_CMD_RULES | (e->ask.fd >= 0 ? BPFBOX_SF_CMD_ASK : 0);
	r = start_egress(e, s);
	if (r < 0)
		return r;
	r = agent_session_add_egress(e->agent, e->cg_id, 1, flags,
				     e->egress ? egress_proxy_port(e->egress) : 0,
				     e->egress ? egress_dns_port(e->egress) : 0);
	if (r < 0)
		return log_error_errno(r, "cannot register the session");
	if (e->egress)
		snprintf(s->proxy_url, sizeof(s->proxy_url), "http://127.0.0.1:%u",
			 egress_proxy_port(e->egress));
	r = add_net_rules(e, p);
	if (r < 0)
		return r;
	/* --level standard: the user asked for less than the BPF LSM policy. */
	r = s->layers.requested == LEVEL_FULL ? agent_session_policy(e->agent, 1, p) : 0;
	if (r < 0)
		return log_error_errno(r, "cannot compile the deny and exec_deny lists into BPF "
					  "LSM maps");
	r = allow_unix_dirs(e, s);
	if (r < 0)
		return log_error_errno(r, "cannot set the session's unix socket directories");
	return 0;
}

static int load_agent(struct embedded *e, const struct audit_opts *opts, const char *parent,
		      bool cmd_rules)
{
	struct agent_opts o = {.ring_bytes = opts->ring_bytes,
			       .audit_opens = !opts->off,
			       .aggregate_ns = opts->aggregate_ns,
			       .on_record = on_record,
			       .ctx = e,
			       .argv_max = opts->argv_max,
			       .cgroup_parent = parent,
			       /* a session without command rules gets no exec program */
			       .cmd_rules = cmd_rules && !opts->net_only};
	int r = agent_open(&e->agent, &o);

	if (r < 0)
		return log_error_errno(r, "cannot load the BPF programs");
	if (agent_status(e->agent)->why_not[0])
		log_warn("not loaded: %s", agent_status(e->agent)->why_not);
	return 0;
}

int embedded_start(struct embedded *e, struct session *s, const struct audit_opts *opts,
		   struct sinks *sinks, const struct egress_secrets *secrets)
{
	int r;

	memset(e, 0, sizeof(*e));
	e->secrets = secrets;
	e->ask.fd = opts->ask_fd > 2 ? opts->ask_fd : -1;
	pthread_mutex_init(&e->ask_lock, NULL);
	e->session_id = s->id;
	e->sinks = sinks;
	e->net_only = opts->net_only;
	if (opts->rate_set)
		audit_flood_init(&e->flood, opts->rate, opts->burst);
	else
		audit_flood_init(&e->flood, AUDIT_RATE_DEFAULT, AUDIT_BURST_DEFAULT);
	if (geteuid() != 0)
		return log_error_errno(EPERM, "--audit loads BPF programs and needs root");
	if (!s->lim.v2_parent[0])
		return log_error_errno(ENOENT, "no cgroup v2 hierarchy for session cgroups");
	r = load_agent(e, opts, s->lim.v2_parent, rules_any(s->policy));
	if (r < 0)
		goto fail;
	/* The session's one cgroup (limits, pause, kill): its id keys the maps. */
	r = session_prepare_cgroup(s);
	if (r < 0) {
		log_error_errno(r,
				"cannot create the session cgroup in %s; the BPF agent needs "
				"one",
				s->lim.v2_parent);
		goto fail;
	}
	e->cg_id = s->lim.cg_id;
	r = add_session(e, s, session_flags(e, s, opts));
	if (r < 0)
		goto fail;
	/* BPF LSM, Landlock, seccomp and a cgroup v2 session: the Full level. */
	e->lsm = agent_status(e->agent)->lsm && s->layers.requested == LEVEL_FULL;
	s->layers.enabled = level_from(e->lsm, s->layers.landlock, s->layers.seccomp, true);
	audit_clock_init(&e->clock);
	s->hooks.on_event = on_lifecycle;
	s->hooks.poll_fd = agent_ring_fd(e->agent);
	s->hooks.on_poll = on_poll;
	s->hooks.ctx = e;
	e->session = s;
	session_note_bpf_lsm(s, agent_status(e->agent)->lsm);
	return 0;
fail:
	embedded_finish(e, NULL);
	return r;
}

void embedded_session_start(struct embedded *e, struct session *s, char *const argv[])
{
	emit_start(e, s, argv);
}

/*
 * Closing a tracepoint program's link waits for the tracepoint's
 * unregistration (a grace period, tens of ms each, about 0.4 s in all): a
 * closer (lib/closer.h) holds copies of the BPF fds and pays for their last
 * close after bpfbox has exited. The tracepoint programs stay attached that
 * long (their sessions map is empty by then, so they only return); the
 * cgroup programs are detached at once.
 */
static void close_agent(struct agent *a)
{
	static struct closer c;
	int fds[CLOSER_MAX_FDS];
	size_t n = a ? closer_bpf_fds(fds, CLOSER_MAX_FDS) : 0;
	int r;

	agent_detach_cgroup_links(a);
	r = n ? closer_begin(&c, fds, n) : -1;
	agent_close(a);
	if (!r)
		closer_end(&c);
}

/* The session's last records, its loss and its session.end. */
static void emit_end(struct embedded *e, struct session *s)
{
	uint64_t seq = 0, lost = 0, not_found;

	/* The proxy's last records (bytes at close) reach the ring first. */
	egress_stop(e->egress);
	e->egress = NULL;
	agent_consume(e->agent);
	sink_flush(e);
	not_found = agent_session_exec_not_found(e->agent, e->cg_id);
	agent_session_remove(e->agent, e->cg_id, &seq, &lost);
	agent_flush_session(e->agent, 1, &seq, on_record, e);
	if (audit_flood_line(&e->flood, &e->w, &e->clock, s->id, mono_now(), true))
		emit_kind(e, EV_LOSS);
	audit_session_end(&e->w, &e->clock,
			  &(struct audit_end_info){.session = s->id,
						   .seq = seq,
						   .ts_ns = mono_now(),
						   .has_exit = true,
						   .exit_code = s->result.exit_code,
						   .timed_out = s->result.timed_out,
						   .lost = lost,
						   .exec_not_found = not_found,
						   .suppressed = e->flood.all,
						   .output_bytes = s->result.output_bytes,
						   .output_dropped = s->result.output_dropped},
			  emit, e);
	sink_flush(e);
}

void embedded_finish(struct embedded *e, struct session *s)
{
	/* An ask still in the ring belongs to a process that is gone: no wait. */
	e->ask.fd = -1;
	/* The session's cgroup was killed and removed at the end of session_run. */
	if (e->agent && s)
		emit_end(e, s);
	egress_stop(e->egress);
	e->egress = NULL;
	close_agent(e->agent);
	e->agent = NULL;
	free(e->ask.table);
	e->ask.table = NULL;
	jsonw_free(&e->w);
}
