// SPDX-License-Identifier: GPL-2.0
/*
 * Loading and attaching each skeleton in the mode this kernel allows: the
 * audit programs (trampolines or tracepoints), the cgroup network
 * programs, the command rules, the BPF LSM; with a pin dir, programs an
 * earlier agent left attached are adopted instead.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "bpfbox/events.h"
#include "../lib/util.h"
#include "../probe/kbtf.h"
#include "../probe/probe.h"
#include "../probe/probe_libbpf.h"
#include "audit.skel.h"
#include "cmd.skel.h"
#include "lsm.skel.h"
#include "net.skel.h"

static void why_not(struct agent *a, const char *what, int err)
{
	size_t len = strlen(a->st.why_not);

	snprintf(a->st.why_not + len, sizeof(a->st.why_not) - len, "%s%s: %s", len ? "; " : "",
		 what, strerror(abs(err)));
}

/* Whether this kernel has the tracepoint category/name (tracefs mounted). */
static bool have_tracepoint(const char *category, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/%s", category, name);
	if (access(path, F_OK) == 0)
		return true;
	snprintf(path, sizeof(path), "/sys/kernel/debug/tracing/events/%s/%s", category, name);
	return access(path, F_OK) == 0;
}

/*
 * The audit programs of one attach mode (bpf/audit.bpf.c): the BPF
 * trampolines (fexit/__x64_sys_X, fentry for prctl) or the syscall
 * tracepoints; the sched and oom tracepoints serve both. Programs for
 * syscalls or tracepoints a kernel lacks (openat2 before 5.6) are switched
 * off instead of failing the load; the rest still observe. A syscall has a
 * trampoline target exactly where it has its syscalls/sys_exit_X event.
 * merge (tracepoint mode): the file changes' tracepoints get exit_file,
 * attached by agent_attach_file_links, not a program each.
 */
static void select_audit_programs(struct audit_bpf *skel, bool fexit, bool merge)
{
	struct bpf_program *prog;
	bool tracefs;

	if (access("/sys/kernel/tracing/events", F_OK) < 0)
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	/* Without tracefs a trampoline still loads: then only its load says. */
	tracefs = access("/sys/kernel/tracing/events/syscalls", F_OK) == 0 ||
		  access("/sys/kernel/debug/tracing/events/syscalls", F_OK) == 0;
	bpf_object__for_each_program(prog, skel->obj)
	{
		const char *sec = bpf_program__section_name(prog);
		char cat[64], name[128];
		bool on;

		if (sscanf(sec, "fexit/__x64_sys_%127s", name) == 1 ||
		    sscanf(sec, "fentry/__x64_sys_%127s", name) == 1) {
			char tp[160];

			snprintf(tp, sizeof(tp), "sys_exit_%s", name);
			on = fexit && (!tracefs || have_tracepoint("syscalls", tp));
		} else if (sscanf(sec, "tracepoint/%63[^/]/%127s", cat, name) == 2) {
			on = (!fexit || !streq(cat, "syscalls")) && have_tracepoint(cat, name) &&
			     !(merge && streq(cat, "syscalls") && !strncmp(name, "sys_exit_", 9) &&
			       agent_file_syscall(name + 9));
		} else if (streq(sec, "tracepoint")) {
			on = !fexit && merge; /* exit_file */
		} else {
			on = true;
		}
		bpf_program__set_autoload(prog, on);
	}
}

/* Pin mode: partial pins (a crash while pinning) dropped, the maps pinned or reused. */
static int pins_prepare(struct agent *a, struct bpf_object_skeleton *sk)
{
	agent_unpin_links(a, sk);
	return agent_set_map_pins(a, *sk->obj);
}

/* Pin mode: every link of the skeleton pinned, or none. */
static int pin_all(struct agent *a, struct bpf_object_skeleton *sk)
{
	int r;

	if (!a->pin_dir[0])
		return 0;
	r = agent_pin_links(a, sk);
	if (r)
		agent_unpin_links(a, sk);
	return r;
}

/*
 * BPFBOX_VERIFIER_STATS=1: the verifier's statistics of each program the
 * skeleton loads (instructions processed, states, time), one stderr line
 * each, to keep every program's verification bounded (docs/lsm.md).
 * stats_begin gives each program a log buffer (NULL when off),
 * stats_end prints and frees them.
 */
#define STATS_LOG 16384

static char *stats_begin(struct bpf_object_skeleton *sk)
{
	char *logs;

	if (!getenv("BPFBOX_VERIFIER_STATS"))
		return NULL;
	logs = calloc(sk->prog_cnt, STATS_LOG);
	for (int i = 0; logs && i < sk->prog_cnt; i++) {
		bpf_program__set_log_buf(*sk->progs[i].prog, logs + (size_t)i * STATS_LOG,
					 STATS_LOG);
		bpf_program__set_log_level(*sk->progs[i].prog, 4);
	}
	return logs;
}

static void stats_end(struct bpf_object_skeleton *sk, char *logs)
{
	for (int i = 0; logs && i < sk->prog_cnt; i++) {
		char *l = logs + (size_t)i * STATS_LOG, *at, *nl;

		l[STATS_LOG - 1] = 0;
		/* The statistics are the log's last lines: from its time on. */
		at = strstr(l, "verification time");
		for (nl = strchr(at ? at : l, '\n'); nl; nl = strchr(nl, '\n'))
			*nl = ' ';
		if (bpf_program__autoload(*sk->progs[i].prog))
			fprintf(stderr, "bpfbox: verifier: %s: %s\n", sk->progs[i].name,
				at ? at : l);
	}
	free(logs);
}

/* Loads and attaches every program of the skeleton that autoloads, then pins. */
static int load_attach_pin(struct agent *a, struct bpf_object_skeleton *sk)
{
	char *logs = stats_begin(sk);
	int r = bpf_object__load_skeleton(sk);

	stats_end(sk, logs);
	if (!r)
		r = bpf_object__attach_skeleton(sk);
	if (!r)
		r = pin_all(a, sk);
	return r;
}

/*
 * An embedded agent serves one session: its preallocated tables are sized
 * for that, not for a daemon's thousands. The kernel fills a preallocated
 * map at creation, and the daemon's sizes (about 17 MB: the folded opens,
 * the proxy's connections, the resolved addresses; and 1.8 MB of unix
 * socket grants for 4,096 sessions) were a sixth of an embedded load here.
 * A full table folds no more opens (each is recorded alone); the two LRU
 * maps drop their oldest entry, so a connection that old loses its
 * original address or name and is refused (fail closed). The tables keyed
 * by session hold the one session run.c registers, with room to spare.
 */
#define EMBEDDED_AGG	  2048
#define EMBEDDED_NET	  8192
#define EMBEDDED_SESSIONS 64

static void embedded_net_sizes(struct net_bpf *n)
{
	bpf_map__set_max_entries(n->maps.net_orig, EMBEDDED_NET);
	bpf_map__set_max_entries(n->maps.net_resolved, EMBEDDED_NET);
	bpf_map__set_max_entries(n->maps.sessions, EMBEDDED_SESSIONS);
	bpf_map__set_max_entries(n->maps.unix_allow, EMBEDDED_SESSIONS);
	bpf_map__set_max_entries(n->maps.net_dns_client, EMBEDDED_SESSIONS);
}

/* Audit skeleton in one attach mode: open, size the ring, load, attach; owns the shared maps. */
static int load_audit_as(struct agent *a, const struct agent_opts *o, bool fexit, bool merge)
{
	struct kbtf_core core;
	int r;

	a->audit = audit_bpf__open_opts(kbtf_core_open(&core));
	if (!a->audit) {
		r = -errno;
		kbtf_core_close(&core);
		return r;
	}
	bpf_map__set_max_entries(a->audit->maps.events, o->ring_bytes);
	if (!a->pin_dir[0]) {
		bpf_map__set_max_entries(a->audit->maps.agg, EMBEDDED_AGG);
		bpf_map__set_max_entries(a->audit->maps.sessions, EMBEDDED_SESSIONS);
		bpf_map__set_max_entries(a->audit->maps.oom_victims, EMBEDDED_SESSIONS);
	}
	a->audit->rodata->audit_opens = o->audit_opens;
	a->audit->rodata->aggregate_window_ns = o->aggregate_ns;
	if (o->argv_max >= 64 && o->argv_max <= BPFBOX_ARGV_LEN)
		a->audit->rodata->argv_max = o->argv_max;
	select_audit_programs(a->audit, fexit, merge);
	if (a->pin_dir[0]) {
		r = pins_prepare(a, a->audit->skeleton);
		if (r)
			goto out;
	}
	r = kbtf_core_fill(&core, a->audit->obj);
	if (!r)
		r = load_attach_pin(a, a->audit->skeleton);
	if (!r && merge)
		r = agent_attach_file_links(a, have_tracepoint);
out:
	kbtf_core_close(&core);
	if (r) {
		audit_bpf__destroy(a->audit);
		a->audit = NULL;
	} else {
		snprintf(a->st.attach, sizeof(a->st.attach), "%s", fexit ? "fexit" : "tracepoint");
	}
	return r;
}

/* Pin mode: whether an earlier agent left every link of one mode pinned. */
static bool audit_adopt(struct agent *a)
{
	struct audit_bpf *skel = audit_bpf__open();
	bool fexit;

	if (!skel)
		return false;
	for (int i = 0; i < 2 && !a->st.audit_adopted; i++) {
		fexit = i == 0;
		select_audit_programs(skel, fexit, false);
		if (agent_links_pinned(a, skel->skeleton)) {
			a->st.audit_adopted = true;
			snprintf(a->st.attach, sizeof(a->st.attach), "%s",
				 fexit ? "fexit" : "tracepoint");
		}
	}
	audit_bpf__destroy(skel);
	return a->st.audit_adopted;
}

/*
 * The audit programs, by BPF trampolines where this kernel loads them (no
 * syscall slow path for the host), else by syscall tracepoints.
 * BPFBOX_AUDIT_ATTACH=fexit or =tracepoint forces one mode (no fallback):
 * for measuring and testing each.
 */
static int load_audit(struct agent *a, const struct agent_opts *o)
{
	const char *want = getenv("BPFBOX_AUDIT_ATTACH");
	bool fexit = true, tp = true;
	int r = 0;

	if (want && *want && !streq(want, "auto")) {
		fexit = streq(want, "fexit");
		tp = streq(want, "tracepoint");
		if (!fexit && !tp) {
			why_not(a, "BPFBOX_AUDIT_ATTACH (auto, fexit or tracepoint)", EINVAL);
			return -EINVAL;
		}
	}
	if (a->pin_dir[0] && audit_adopt(a))
		return 0; /* already attached by an earlier agent: nothing to load */
	/* Auto: a host that refuses trampolines is known from the probe, kept per boot. */
	if (fexit && tp && !probe_fexit(a->st.attach_why + 7, sizeof(a->st.attach_why) - 7)) {
		memcpy(a->st.attach_why, "fexit: ", 7);
		fexit = false;
	}
	if (fexit) {
		r = load_audit_as(a, o, true, false);
		if (!r || !tp)
			return r;
		snprintf(a->st.attach_why, sizeof(a->st.attach_why), "fexit: %s", strerror(abs(r)));
	}
	/*
	 * Embedded: the file changes' programs merged into one (agent_files.c);
	 * once more a program each if that failed (a kernel without cookies on
	 * tracepoint links: 5.15).
	 */
	r = load_audit_as(a, o, false, !a->pin_dir[0]);
	if (r && !a->pin_dir[0])
		r = load_audit_as(a, o, false, false);
	return r;
}

#define ATTACH_CGROUP_UNIX_CONNECT 49 /* enum bpf_attach_type, kernel 6.7 */

/* Network skeleton: shares the audit maps when they exist; attaches to the parent. */
static int load_net(struct agent *a, const struct agent_opts *o)
{
	char path[PATH_MAX + 64];
	struct kbtf_core core;
	struct net_bpf *n;
	char *logs;
	int r;

	n = a->net = net_bpf__open_opts(kbtf_core_open(&core));
	if (!n) {
		r = -errno;
		kbtf_core_close(&core);
		return r;
	}
	if (agent_btf_has("BPF_CGROUP_UNIX_CONNECT"))
		bpf_program__set_expected_attach_type(n->progs.net_connect_unix,
						      ATTACH_CGROUP_UNIX_CONNECT);
	else
		bpf_program__set_autoload(n->progs.net_connect_unix, false);
	if (a->pin_dir[0]) {
		if (agent_links_pinned(a, n->skeleton)) {
			kbtf_core_close(&core);
			net_bpf__destroy(n);
			a->net = NULL;
			agent_pin_path(a->pin_dir, path, sizeof(path), "link", "net_connect_unix");
			a->st.unix_connect = access(path, F_OK) == 0;
			/* -EXDEV: pinned for another parent; agent_open fails. */
			r = agent_check_cgroup_link(a, "net_connect4");
			a->st.net_adopted = !r;
			return r;
		}
		r = pins_prepare(a, n->skeleton);
		if (r)
			goto out;
	} else if (a->audit) {
		embedded_net_sizes(n);
		bpf_map__reuse_fd(n->maps.sessions, bpf_map__fd(a->audit->maps.sessions));
		bpf_map__reuse_fd(n->maps.events, bpf_map__fd(a->audit->maps.events));
		bpf_map__reuse_fd(n->maps.lost, bpf_map__fd(a->audit->maps.lost));
	} else {
		embedded_net_sizes(n);
		bpf_map__set_max_entries(n->maps.events, o->ring_bytes);
	}
	/* Links stored in the skeleton are detached by net_bpf__destroy. */
	logs = stats_begin(n->skeleton);
	r = kbtf_core_fill(&core, n->obj);
	if (!r)
		r = net_bpf__load(n);
	stats_end(n->skeleton, logs);
	/* Every cgroup program, egress by name's too (replies, peers, the proxy's keys). */
	for (int i = 0; !r && i < n->skeleton->prog_cnt; i++) {
		struct bpf_program *p = *n->skeleton->progs[i].prog;

		if (bpf_program__autoload(p) && bpf_program__type(p) != BPF_PROG_TYPE_SYSCALL)
			r = probe_attach_cgroup(p, a->parent_fd, n->skeleton->progs[i].link);
	}
	a->st.unix_connect = !r && bpf_program__autoload(n->progs.net_connect_unix);
	if (!r)
		r = pin_all(a, n->skeleton);
out:
	kbtf_core_close(&core);
	if (r) {
		net_bpf__destroy(n);
		a->net = NULL;
		a->st.unix_connect = false;
	}
	return r;
}

/*
 * Command rules skeleton (bpf/cmd.bpf.c): its own exec tracepoint program
 * and rule table, sharing the audit maps; loaded only when asked for (a
 * session with rules, a daemon). With pin_dir, the link and the table are
 * pinned like the others, so the rules outlive a daemon crash.
 */
static int load_cmd(struct agent *a)
{
	struct kbtf_core core;
	int r;

	if (!a->pin_dir[0] && !a->audit)
		return -ENOTSUP;
	a->cmd = cmd_bpf__open_opts(kbtf_core_open(&core));
	if (!a->cmd) {
		r = -errno;
		kbtf_core_close(&core);
		return r;
	}
	if (a->pin_dir[0]) {
		if (agent_links_pinned(a, a->cmd->skeleton)) {
			kbtf_core_close(&core);
			cmd_bpf__destroy(a->cmd);
			a->cmd = NULL;
			a->cmd_adopted = true;
			return 0;
		}
		r = pins_prepare(a, a->cmd->skeleton);
		if (r)
			goto out;
	} else {
		bpf_map__reuse_fd(a->cmd->maps.sessions, bpf_map__fd(a->audit->maps.sessions));
		bpf_map__reuse_fd(a->cmd->maps.events, bpf_map__fd(a->audit->maps.events));
		bpf_map__reuse_fd(a->cmd->maps.lost, bpf_map__fd(a->audit->maps.lost));
	}
	r = kbtf_core_fill(&core, a->cmd->obj);
	if (!r)
		r = load_attach_pin(a, a->cmd->skeleton);
out:
	kbtf_core_close(&core);
	if (r) {
		cmd_bpf__destroy(a->cmd);
		a->cmd = NULL;
	}
	return r;
}

/* Whether bpf is in the active LSM list: else LSM programs attach but never run. */
static bool bpf_lsm_active(void)
{
	char list[256];

	if (read_file_str("/sys/kernel/security/lsm", list, sizeof(list)) < 0 &&
	    (mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL) < 0 ||
	     read_file_str("/sys/kernel/security/lsm", list, sizeof(list)) < 0))
		return false;
	return word_list_has(list, "bpf", ",");
}

/*
 * BPF LSM skeleton (bpf/lsm.bpf.c): the file, exec and connect policy that
 * Landlock cannot express. Shares the session, ring and loss maps, and
 * the connect allow-list with the network programs.
 */
static int load_lsm(struct agent *a, const struct agent_opts *o)
{
	struct lsm_bpf *l;
	char why[256];
	int r;

	if (!bpf_lsm_active())
		return -ENOPKG;
	/*
	 * Embedded: a kernel that refuses BPF LSM programs (lockdown, a
	 * policy) said so once this boot (probe_bpf_lsm's cache); not loaded
	 * again to be refused again, which cost an embedded start about 40 ms
	 * here (two parses of the kernel's BTF). A daemon always tries.
	 */
	if (!a->pin_dir[0] && !probe_bpf_lsm(why, sizeof(why)))
		return -EPERM;
	l = a->lsm = lsm_bpf__open();
	if (!l)
		return -errno;
	snprintf((char *)l->rodata->daemon_socket, sizeof(l->rodata->daemon_socket), "%s",
		 o->daemon_socket ? o->daemon_socket : "/run/bpfbox/bpfbox.sock");
	agent_lsm_select(l);
	if (a->pin_dir[0]) {
		if (agent_links_pinned(a, l->skeleton)) {
			a->st.lsm_adopted = true;
			lsm_bpf__destroy(l);
			a->lsm = NULL;
			return 0;
		}
		r = pins_prepare(a, l->skeleton);
		if (r)
			goto out;
	} else {
		struct bpf_object *shared = a->audit ? a->audit->obj : a->net ? a->net->obj : NULL;

		if (shared) {
			bpf_map__reuse_fd(l->maps.sessions,
					  bpf_object__find_map_fd_by_name(shared, "sessions"));
			bpf_map__reuse_fd(l->maps.events,
					  bpf_object__find_map_fd_by_name(shared, "events"));
			bpf_map__reuse_fd(l->maps.lost,
					  bpf_object__find_map_fd_by_name(shared, "lost"));
		} else {
			bpf_map__set_max_entries(l->maps.events, o->ring_bytes);
		}
		if (a->net) {
			bpf_map__reuse_fd(l->maps.net_allow, bpf_map__fd(a->net->maps.net_allow));
			bpf_map__reuse_fd(l->maps.net_resolved,
					  bpf_map__fd(a->net->maps.net_resolved));
		}
		/* The exec hook judges the command rules that need no argv. */
		if (a->cmd)
			bpf_map__reuse_fd(l->maps.cmd_rules, bpf_map__fd(a->cmd->maps.cmd_rules));
	}
	r = load_attach_pin(a, l->skeleton);
out:
	if (r) {
		lsm_bpf__destroy(l);
		a->lsm = NULL;
	}
	return r;
}

/* The command rules' object, loaded beside the network's (agent_load_programs). */
struct cmd_job {
	struct agent *a;
	int r;
};

static void *cmd_thread(void *arg)
{
	struct cmd_job *j = arg;

	j->r = load_cmd(j->a);
	return NULL;
}

/*
 * libbpf reads the kernel's BTF (5.5 MB here) and copies it once per
 * object, into memory it frees after that object's load. By default each
 * copy is a fresh mmap, and the page faults of those fresh pages were most
 * of a load's time (perf, docs/benchmarks.md): kept in the heap while the
 * objects load, later copies reuse warm pages. Given back afterwards (a
 * daemon lives on).
 */
static void heap_warm(bool on)
{
	mallopt(M_MMAP_THRESHOLD, on ? 64 << 20 : 128 << 10);
	mallopt(M_TRIM_THRESHOLD, on ? 256 << 20 : 128 << 10);
	if (!on)
		malloc_trim(0);
}

int agent_load_programs(struct agent *a, const struct agent_opts *o)
{
	struct cmd_job job = {.a = a};
	libbpf_print_fn_t old;
	bool threaded = false;
	pthread_t t;
	int r, rn;

	old = libbpf_set_print(probe_libbpf_print);
	heap_warm(true);
	kbtf_hold();
	r = load_audit(a, o);
	if (r)
		why_not(a, "audit programs", r);
	/*
	 * The network and command objects share only the audit's maps: each
	 * parses the kernel's BTF and is verified on a CPU of its own, side by
	 * side (docs/benchmarks.md). They set fields of a apart; what did not
	 * load is said after both.
	 */
	if (o->cmd_rules)
		threaded = pthread_create(&t, NULL, cmd_thread, &job) == 0;
	rn = load_net(a, o);
	if (o->cmd_rules && threaded)
		pthread_join(t, NULL);
	else if (o->cmd_rules)
		job.r = load_cmd(a);
	if (rn)
		why_not(a, "cgroup network programs", rn);
	if (o->cmd_rules && job.r)
		why_not(a, "command rules (exec tracepoint)", job.r);
	r = load_lsm(a, o);
	if (r == -ENOPKG)
		why_not(a, "BPF LSM (bpf is not in the active LSM list)", ENOPKG);
	else if (r)
		why_not(a, "BPF LSM programs", r);
	kbtf_release();
	heap_warm(false);
	libbpf_set_print(old);
	a->st.audit = a->audit || a->st.audit_adopted;
	a->st.net = a->net || a->st.net_adopted;
	a->st.lsm = a->lsm || a->st.lsm_adopted;
	a->st.cmd = a->cmd || a->cmd_adopted;
	return rn;
}
