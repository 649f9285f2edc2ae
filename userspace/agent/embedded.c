// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <json-c/json.h>

#include "embedded.h"
#include "../audit/redact.h"
#include "../audit/sink.h"
#include "bpfbox/events.h"
#include "../policy/policy.h"
#include "../sandbox/session.h"
#include "../lib/closer.h"
#include "../lib/log.h"
#include "../lib/util.h"
#include "../net/egress.h"

/*
 * The audit stream goes through the sink of userspace/audit/sink.c, as in
 * the daemon: whole lines, a disk full counted as loss and said once. An
 * embedded run has one session per process, so its sink set lives here.
 */
static struct sinks *emb_sinks;

static void sink_log(void *ctx, const char *msg)
{
	(void)ctx;
	log_warn("%s", msg);
}

static int sink_open(const char *path)
{
	struct sinks_opts so = { .blocking = true, .log = sink_log };
	struct sink_config cfg;
	char err[PATH_MAX + 512];
	int r;

	sink_config_parse("stdout", &cfg, err, sizeof(err));
	if (!streq(path, "-")) {
		cfg.kind = SINK_FILE;
		snprintf(cfg.path, sizeof(cfg.path), "%s", path);
		snprintf(cfg.name, sizeof(cfg.name), "file:%.*s", (int)sizeof(cfg.name) - 6, path);
	}
	r = sinks_open(&emb_sinks, &cfg, 1, &so, err, sizeof(err));
	if (r < 0)
		log_error("%s", err);
	return r;
}

static void sink_flush(struct embedded *e)
{
	const char *p = e->w.buf, *end = e->w.buf + e->w.len;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);

		sinks_emit(emb_sinks, NULL, p, len);
		p += len;
	}
	sinks_flush(emb_sinks);
	jsonw_reset(&e->w);
}

/* A denial of our layers, for the end-of-run summary (docs/runtime.md). */
static void count_denial(struct embedded *e, const void *data, size_t size)
{
	static const char *const layers[] = {
		[BPFBOX_LAYER_LANDLOCK] = "landlock", [BPFBOX_LAYER_SECCOMP] = "seccomp",
		[BPFBOX_LAYER_CGROUP_BPF] = "cgroup_bpf", [BPFBOX_LAYER_BPF_LSM] = "bpf_lsm",
		[BPFBOX_LAYER_MOUNT] = "mount",
	};
	static const char *const ops[] = {
		[BPFBOX_FILE_OPEN] = "open",	 [BPFBOX_FILE_UNLINK] = "unlink",
		[BPFBOX_FILE_RMDIR] = "rmdir",	 [BPFBOX_FILE_RENAME] = "rename",
		[BPFBOX_FILE_MKDIR] = "mkdir",	 [BPFBOX_FILE_LINK] = "link",
		[BPFBOX_FILE_SYMLINK] = "symlink", [BPFBOX_FILE_CHMOD] = "chmod",
		[BPFBOX_FILE_UTIMES] = "utimes",
	};
	const struct bpfbox_event_hdr *h = data;
	const char *layer;

	if (!e->session || size < sizeof(*h) || h->decision != BPFBOX_DENY ||
	    h->layer >= ARRAY_SIZE(layers) || !layers[h->layer])
		return; /* the kernel's own refusals (DAC) are not ours to explain */
	layer = layers[h->layer];
	if (h->type == BPFBOX_EV_FILE && size >= sizeof(struct bpfbox_file_event)) {
		const struct bpfbox_file_event *f = data;
		char path[sizeof(f->path) + 1];
		const char *op = f->op < ARRAY_SIZE(ops) && ops[f->op] ? ops[f->op] : "file";

		snprintf(path, sizeof(path), "%.*s", (int)strnlen(f->path, sizeof(f->path)), f->path);
		path_fold(path);
		/* An open for writing is a write. */
		if (f->op == BPFBOX_FILE_OPEN &&
		    ((f->flags & O_ACCMODE) != O_RDONLY || (f->flags & (O_CREAT | O_TRUNC))))
			op = "write";
		session_denial_add(e->session, layer, op, path, -h->err);
	} else if (h->type == BPFBOX_EV_CONNECT && size >= sizeof(struct bpfbox_connect_event)) {
		const struct bpfbox_connect_event *c = data;
		char addr[INET6_ADDRSTRLEN] = "?", what[INET6_ADDRSTRLEN + 112];

		if (c->family == AF_UNIX)
			snprintf(what, sizeof(what), "unix:%.*s",
				 (int)strnlen(c->unix_path, sizeof(c->unix_path)), c->unix_path);
		else {
			inet_ntop(c->family == AF_INET6 ? AF_INET6 : AF_INET, c->addr, addr,
				  sizeof(addr));
			snprintf(what, sizeof(what), c->family == AF_INET6 ? "[%s]:%u" : "%s:%u",
				 addr, c->port);
		}
		session_denial_add(e->session, layer, "connect", what, -h->err);
	} else if (h->type == BPFBOX_EV_EXEC && size >= sizeof(struct bpfbox_exec_event)) {
		const struct bpfbox_exec_event *x = data;
		char path[sizeof(x->filename) + 1];

		snprintf(path, sizeof(path), "%.*s",
			 (int)strnlen(x->filename, sizeof(x->filename)), x->filename);
		session_denial_add(e->session, layer, "exec", path, -h->err);
	}
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct embedded *e = ctx;
	uint64_t now = now_ns();

	count_denial(e, data, size);
	/* A flood is counted, not written: exact counts by type, once a second. */
	if (!audit_flood_pass(&e->flood, data, size, now))
		return 0;
	audit_flood_line(&e->flood, &e->w, &e->clock, e->session_id, now, false);
	if (audit_encode_record(&e->w, &e->clock, data, size, e->session_id) == 0 &&
	    e->w.len >= 64 * 1024)
		sink_flush(e);
	return 0;
}

static void on_poll(void *ctx)
{
	struct embedded *e = ctx;

	agent_consume(e->agent);
	audit_flood_line(&e->flood, &e->w, &e->clock, e->session_id, now_ns(), false);
	sink_flush(e);
}

/* session.paused, session.resumed, session.killed, in order with the records. */
static void on_lifecycle(void *ctx, const struct session_event *ev)
{
	struct embedded *e = ctx;

	session_event_json(&e->w, &e->clock, e->session_id, ev);
	sink_flush(e);
}

static uint64_t mono_now(void)
{
	return now_ns();
}

static void put_arg(void *ctx, const char *arg, size_t len)
{
	jsonw_array_strn(ctx, arg, len);
}

/* The values of the policy's env, redacted (whole when the name names a secret). */
static void redact_env(struct json_object *pol)
{
	struct json_object *env;

	if (!pol || !json_object_object_get_ex(pol, "env", &env))
		return;
	json_object_object_foreach(env, name, val) {
		size_t len = json_object_get_string_len(val), n = 0;
		char *out = malloc(REDACT_MAX(len));

		if (out)
			n = redact_value(name, json_object_get_string(val), len, out,
					 REDACT_MAX(len), 0);
		/* Replaces val in place: the walk goes on with the next entry. */
		json_object_object_add(env, name, out ? json_object_new_string_len(out, n)
						      : json_object_new_string(REDACT_MARKER));
		free(out);
	}
}

static void emit_start(struct embedded *e, struct session *s, char *const argv[])
{
	const struct session_layers *l = &s->layers;
	const struct agent_status *st = agent_status(e->agent);
	struct json_object *pol = policy_to_json(s->policy), *labels = NULL;

	redact_env(pol);

	audit_begin(&e->w, &e->clock, "session.start", s->id, 0, mono_now());
	jsonw_u64(&e->w, "pid", getpid());
	jsonw_str(&e->w, "level_requested", level_name(l->requested));
	jsonw_str(&e->w, "level_enabled", level_name(l->enabled));
	jsonw_object_begin(&e->w, "layers");
	jsonw_u64(&e->w, "landlock_abi", l->landlock ? l->landlock_abi : 0);
	jsonw_bool(&e->w, "seccomp", l->seccomp);
	jsonw_bool(&e->w, "bpf_audit", st->audit);
	jsonw_bool(&e->w, "bpf_network", st->net);
	jsonw_bool(&e->w, "bpf_unix_connect", st->unix_connect);
	jsonw_bool(&e->w, "bpf_lsm", e->lsm);
	jsonw_end(&e->w);
	limits_json(&s->lim, &e->w, "limits");
	jsonw_array_begin(&e->w, "not_enforced");
	if (l->not_enforced[0])
		jsonw_array_strn(&e->w, l->not_enforced, strlen(l->not_enforced));
	if (s->lim.not_enforced[0])
		jsonw_array_strn(&e->w, s->lim.not_enforced, strlen(s->lim.not_enforced));
	if (st->why_not[0])
		jsonw_array_strn(&e->w, st->why_not, strlen(st->why_not));
	jsonw_array_end(&e->w);
	jsonw_array_begin(&e->w, "command");
	if (redact_argv(argv, put_arg, &e->w, 0) < 0)
		jsonw_array_strn(&e->w, REDACT_MARKER, REDACT_MARKER_LEN);
	jsonw_array_end(&e->w);
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
	audit_put_policy(&e->w,
			 labels ? json_object_to_json_string_ext(labels, JSON_C_TO_STRING_PLAIN |
								      JSON_C_TO_STRING_NOSLASHESCAPE)
				: NULL,
			 json_object_to_json_string_ext(pol, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(labels);
	jsonw_end(&e->w);
	jsonw_newline(&e->w);
	json_object_put(pol);
	sink_flush(e);
}

/* Unix sockets may be reached under the dirs the session can write. */
static int allow_unix_dirs(struct embedded *e, struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	const char *dirs[BPFBOX_UNIX_PREFIXES];
	size_t n = 0;

	if (!agent_status(e->agent)->net)
		return 0;
	if (p->mode != MODE_READ_ONLY)
		dirs[n++] = p->workspace;
	if (s->private_tmp[0])
		dirs[n++] = s->private_tmp;
	/* With namespaces /tmp is the session's own tmpfs; the host's is not in its view. */
	else if (p->private_tmp && s->layers.ns.clone_flags)
		dirs[n++] = "/tmp";
	for (size_t i = 0; i < p->rw_paths.n && n < BPFBOX_UNIX_PREFIXES; i++)
		dirs[n++] = p->rw_paths.v[i];
	return agent_unix_allow(e->agent, 1, dirs, n);
}

/* The writable set by inode: the workspace, the private tmp, every rw path. */
static int writable_dirs(struct embedded *e, struct session *s)
{
	const struct bpfbox_policy *p = s->policy;
	const char **dirs = calloc(p->rw_paths.n + 2, sizeof(*dirs));
	size_t n = 0;
	int r;

	if (!dirs)
		return -ENOMEM;
	if (p->mode != MODE_READ_ONLY)
		dirs[n++] = p->workspace;
	if (s->private_tmp[0])
		dirs[n++] = s->private_tmp;
	for (size_t i = 0; i < p->rw_paths.n; i++)
		dirs[n++] = p->rw_paths.v[i];
	r = agent_session_writable(e->agent, 1, dirs, n, NULL, NULL);
	free(dirs);
	return r;
}

/* With name rules, the session's proxy and resolver (userspace/net/). */
static int start_egress(struct embedded *e, const struct bpfbox_policy *p)
{
	struct egress_opts o = { .cgroup_id = e->cg.id, .session = 1, .allow = &p->net_allow,
				 .deny = &p->net_deny, .resolver = p->net_resolver };
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
	r = egress_start(&e->egress, &o, err, sizeof(err));
	if (r < 0)
		log_error("%s", err);
	return r;
}

int embedded_start(struct embedded *e, struct session *s, const struct audit_opts *opts,
		   char *const argv[])
{
	struct agent_opts o = { .ring_bytes = opts->ring_bytes, .audit_opens = !opts->off,
				.aggregate_ns = opts->aggregate_ns, .on_record = on_record, .ctx = e,
				.argv_max = opts->argv_max };
	const struct bpfbox_policy *p = s->policy;
	char parent[PATH_MAX];
	uint32_t flags = 0;
	int r;

	memset(e, 0, sizeof(*e));
	e->out_fd = -1;
	e->cg.procs_fd = -1;
	e->session_id = s->id;
	if (opts->rate_set)
		audit_flood_init(&e->flood, opts->rate, opts->burst);
	else
		audit_flood_init(&e->flood, AUDIT_RATE_DEFAULT, AUDIT_BURST_DEFAULT);
	if (geteuid() != 0)
		return log_error_errno(EPERM, "--audit loads BPF programs and needs root");
	/* No path: Full without --audit; the records are consumed and dropped. */
	r = opts->path ? sink_open(opts->path) : 0;
	if (r < 0)
		return r;
	r = cgroup_parent(parent, sizeof(parent));
	if (r < 0) {
		log_error_errno(r, "no cgroup v2 hierarchy for session cgroups");
		goto fail;
	}
	o.cgroup_parent = parent;
	r = agent_open(&e->agent, &o);
	if (r < 0) {
		log_error_errno(r, "cannot load the BPF programs");
		goto fail;
	}
	if (agent_status(e->agent)->why_not[0])
		log_warn("not loaded: %s", agent_status(e->agent)->why_not);
	/* The session's own cgroup (limits, pause, kill): its id keys the maps. */
	r = session_prepare_cgroup(s);
	if (r < 0) {
		log_error_errno(r, "cannot create the session cgroup in %s; --audit needs one",
				parent);
		goto fail;
	}
	e->cg.id = s->lim.cg_id;
	if (p->net == NET_DENY)
		flags |= BPFBOX_SF_NET_DENY;
	if (s->layers.landlock && p->mode != MODE_FULL_ACCESS)
		flags |= BPFBOX_SF_LANDLOCK;
	if ((s->layers.ns.clone_flags & CLONE_NEWNS) && p->mode != MODE_FULL_ACCESS)
		flags |= BPFBOX_SF_MOUNT_RO;
	if (agent_status(e->agent)->net)
		flags |= BPFBOX_SF_NET_BPF;
	if (opts->all)
		flags |= BPFBOX_SF_AUDIT_ALL;
	if (opts->off)
		flags |= BPFBOX_SF_AUDIT_OFF;
	/* What the BPF LSM enforces in the stead of this Landlock ABI. */
	if (s->layers.requested == LEVEL_FULL && p->mode != MODE_FULL_ACCESS) {
		flags |= agent_gap_flags(e->agent, s->layers.landlock ? s->layers.landlock_abi : 0);
		agent_gaps_filled(s->layers.not_enforced, flags);
		r = writable_dirs(e, s);
		if (r < 0) {
			log_error_errno(r, "cannot write the session's writable set into the BPF "
					   "LSM map");
			goto fail;
		}
	}
	r = start_egress(e, p);
	if (r < 0)
		goto fail;
	r = agent_session_add_egress(e->agent, e->cg.id, 1, flags,
				     e->egress ? egress_proxy_port(e->egress) : 0,
				     e->egress ? egress_dns_port(e->egress) : 0);
	if (r < 0) {
		log_error_errno(r, "cannot register the session");
		goto fail;
	}
	if (e->egress)
		snprintf(s->proxy_url, sizeof(s->proxy_url), "http://127.0.0.1:%u",
			 egress_proxy_port(e->egress));
	for (size_t i = 0; !r && i < p->net_allow.n + p->net_deny.n; i++) {
		bool deny = i >= p->net_allow.n;
		const char *rule = deny ? p->net_deny.v[i - p->net_allow.n] : p->net_allow.v[i];
		char cidr[64];
		uint16_t lo, hi;

		/* Names are the proxy's; addresses and CIDRs go to the BPF map. */
		if (net_rule_parse(rule, cidr, sizeof(cidr), &lo, &hi) < 0)
			continue;
		r = deny ? agent_net_hole(e->agent, 1, cidr) : agent_net_allow(e->agent, 1, cidr, lo, hi);
		if (r < 0) {
			log_error_errno(r, "cannot add the network rule '%s'", rule);
			goto fail;
		}
	}
	/* --level standard: the user asked for less than the BPF LSM policy. */
	r = s->layers.requested == LEVEL_FULL ? agent_session_policy(e->agent, 1, p) : 0;
	if (r < 0) {
		log_error_errno(r, "cannot compile the deny and exec_deny lists into BPF LSM maps");
		goto fail;
	}
	r = allow_unix_dirs(e, s);
	if (r < 0) {
		log_error_errno(r, "cannot set the session's unix socket directories");
		goto fail;
	}
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
	emit_start(e, s, argv);
	return 0;
fail:
	embedded_finish(e, NULL);
	return r;
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

void embedded_finish(struct embedded *e, struct session *s)
{
	uint64_t seq = 0, lost = 0;

	if (e->agent && s) {
		/* Kill stragglers first so that no record arrives after the end. */
		session_cgroup_destroy(&e->cg);
		/* The proxy's last records (bytes at close) reach the ring first. */
		egress_stop(e->egress);
		e->egress = NULL;
		agent_consume(e->agent);
		sink_flush(e);
		agent_session_remove(e->agent, e->cg.id, &seq, &lost);
		agent_flush_session(e->agent, 1, &seq, on_record, e);
		audit_flood_line(&e->flood, &e->w, &e->clock, s->id, mono_now(), true);
		if (lost) {
			audit_begin(&e->w, &e->clock, "loss", s->id, seq++, mono_now());
			jsonw_u64(&e->w, "count", lost);
			jsonw_str(&e->w, "where", "ring buffer full");
			jsonw_end(&e->w);
			jsonw_newline(&e->w);
		}
		audit_begin(&e->w, &e->clock, "session.end", s->id, seq, mono_now());
		jsonw_i64(&e->w, "exit_code", s->result.exit_code);
		jsonw_bool(&e->w, "timed_out", s->result.timed_out);
		/* Numbers 1..seq-1 went to records, lost ones and the loss line. */
		jsonw_u64(&e->w, "records", seq - 1 - lost - (lost ? 1 : 0) - e->flood.all);
		jsonw_u64(&e->w, "lost", lost);
		jsonw_u64(&e->w, "suppressed", e->flood.all);
		jsonw_u64(&e->w, "output_bytes", s->result.output_bytes);
		jsonw_u64(&e->w, "output_dropped", s->result.output_dropped);
		jsonw_end(&e->w);
		jsonw_newline(&e->w);
		sink_flush(e);
	}
	session_cgroup_destroy(&e->cg);
	egress_stop(e->egress);
	e->egress = NULL;
	close_agent(e->agent);
	e->agent = NULL;
	if (e->out_fd >= 0)
		close(e->out_fd);
	e->out_fd = -1;
	sinks_close(emb_sinks);
	emb_sinks = NULL;
	jsonw_free(&e->w);
}
