/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The BPF agent: loads the programs once (audit programs, cgroup network
 * policy), shares their maps, and turns ring records into callbacks.
 * Sessions are registered as map entries keyed by their cgroup id, so a
 * session costs a mkdir and a map update, never a program load.
 */
#ifndef BPFBOX_AGENT_H
#define BPFBOX_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent;

typedef int (*agent_record_fn)(void *ctx, void *data, size_t size);

struct agent_opts {
	uint32_t ring_bytes;	   /* a power of two, >= 4096 */
	bool audit_opens;	   /* observe openat/openat2 */
	uint64_t aggregate_ns;	   /* window folding identical allowed opens */
	uint32_t argv_max;	   /* argv bytes kept per exec, 64..4096; 0: 4096 */
	const char *cgroup_parent; /* where session cgroups live */
	/*
	 * NULL: everything lives as long as the agent (embedded mode). Else a
	 * directory on a bpf file system (/sys/fs/bpf is mounted if needed):
	 * the shared maps and every link are pinned there, so enforcement
	 * outlives the process, and a later agent_open() reuses them: a
	 * program whose links are all pinned is neither loaded nor attached
	 * again (daemon mode, docs/daemon.md).
	 */
	const char *pin_dir;
	const char *daemon_socket; /* the BPF LSM refuses sessions' connects to it */
	bool cmd_rules;		   /* load bpf/cmd.bpf.c (embedded mode, a session with rules) */
	agent_record_fn on_record;
	void *ctx;
};

struct agent_status {
	bool audit;	   /* audit programs attached (attach: how) */
	bool net;	   /* cgroup network programs attached */
	bool unix_connect; /* pathname unix connects mediated (kernel >= 6.7) */
	bool lsm;	   /* BPF LSM programs attached (or adopted from pins) */
	bool cmd;	   /* command rules checked on every exec (bpf/cmd.bpf.c) */
	bool lsm_adopted;
	char why_not[512];  /* what did not load, and why */
	bool audit_adopted; /* pin_dir: the audit links were found pinned */
	bool net_adopted;   /* pin_dir: the network links were found pinned */
	/*
	 * How the audit programs see syscalls: "fexit" (BPF trampolines on
	 * the syscalls audited, nothing else of the host pays) or
	 * "tracepoint" (syscall tracepoints, the fallback); "" without audit.
	 */
	char attach[16];
	char attach_why[160]; /* why not fexit, when the fallback is in use */
};

int agent_open(struct agent **out, const struct agent_opts *o);
/*
 * Switches off the programs of bpf/lsm.bpf.c that the running kernel's
 * layout cannot take (one of the two inode_setattr programs), before load:
 * agent_open does it; a test that loads the skeleton itself calls it.
 */
struct lsm_bpf;
void agent_lsm_select(struct lsm_bpf *l);
void agent_close(struct agent *a);
/*
 * Detaches the cgroup programs of an agent that pinned nothing, whoever
 * else holds their link fds (BPF_LINK_DETACH, Linux 5.9+): before handing
 * the fds to a closer, so that the cgroup parent is left bare at once.
 */
void agent_detach_cgroup_links(struct agent *a);
const struct agent_status *agent_status(const struct agent *a);

int agent_session_add(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags);
/* The same, with the session's egress proxy and resolver (userspace/net/). */
int agent_session_add_egress(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags,
			     uint16_t proxy_port, uint16_t dns_port);
/*
 * The maps and program the egress proxy uses (bpf/net.bpf.c). -ENOTSUP
 * when the network programs were adopted from pins or did not load.
 */
struct agent_egress_fds {
	int orig, resolved, dns_client, emit;
};
int agent_egress_fds(const struct agent *a, struct agent_egress_fds *f);
/* Removes the session; *seq is the next sequence number it would have had. */
int agent_session_remove(struct agent *a, uint64_t cgroup_id, uint64_t *seq, uint64_t *lost);
/* The session's sequence and loss counters, without removing it. */
/* The session's failed execs with ENOENT or ENOTDIR (not recorded); 0 when it is gone. */
uint64_t agent_session_exec_not_found(struct agent *a, uint64_t cgroup_id);
int agent_session_stats(struct agent *a, uint64_t cgroup_id, uint64_t *seq, uint64_t *lost);

typedef int (*agent_session_fn)(void *ctx, uint64_t cgroup_id, uint32_t id, uint32_t flags);
/*
 * Calls fn for every session registered in the kernel, from a snapshot of
 * the keys (fn may remove sessions). Stops at fn's first error.
 */
int agent_session_foreach(struct agent *a, agent_session_fn fn, void *ctx);
/* The same over the pinned sessions map in pin_dir, with nothing loaded. */
int agent_pinned_sessions(const char *pin_dir, agent_session_fn fn, void *ctx);
/* How many sessions that map holds: 0, or -errno when it cannot be read. */
int agent_pinned_session_count(const char *pin_dir, unsigned int *n);
/*
 * Makes pin_dir (mode 0700) on a bpf file system, mounting bpffs at
 * /sys/fs/bpf first when pin_dir is directly below it. -ENOTSUP when the
 * directory is not on bpffs.
 */
int agent_pin_dir_prepare(const char *pin_dir);
/*
 * Pin mode (agent_adopt.c): the cgroup programs attached to the cgroup
 * parent (its pinned links) attached to the cgroup directory cgroup (id
 * cgroup_id) too, one outside the parent (an adopted one), each link
 * pinned for the next daemon. Their fds in links: how many, or -errno with
 * none left attached.
 */
int agent_cgroup_attach(struct agent *a, const char *cgroup, uint64_t cgroup_id, int *links,
			size_t max);
/* Those links again from their pins (a restarted daemon): how many. */
int agent_cgroup_links(struct agent *a, uint64_t cgroup_id, int *links, size_t max);
/* The n links closed and their pins removed: the programs leave the cgroup. */
void agent_cgroup_detach(struct agent *a, uint64_t cgroup_id, int *links, size_t n);
/*
 * 0 when pin_dir is on the BPF file system or does not exist, -ENOTSUP
 * when it is a directory of another file system (a --pin-dir typo: its
 * files are not pins), else -errno.
 */
int agent_pin_dir_check(const char *pin_dir);
/*
 * Removes every pin in pin_dir and the directory: programs and links are
 * detached once no process holds them any more. 0 when there was nothing;
 * -ENOTSUP, nothing removed, when pin_dir is not on bpffs.
 */
int agent_unpin(const char *pin_dir);

/* Adds CIDR (v4 or v6) with a port range to a session's connect allow-list. */
int agent_net_allow(struct agent *a, uint32_t id, const char *cidr, uint16_t lo, uint16_t hi);
/* A net_deny address or CIDR: never reached directly, whatever allows around it. */
int agent_net_hole(struct agent *a, uint32_t id, const char *cidr);
/* Forgets a session's allow-list, so that its index can be reused. */
int agent_net_clear(struct agent *a, uint32_t id);

/*
 * The session's command rules (rules_compile) into bpf/cmd.bpf.c's table;
 * t NULL removes them. -ENOTSUP when the program is not loaded.
 */
struct bpfbox_cmd_table;
int agent_session_cmd_rules(struct agent *a, uint32_t id, const struct bpfbox_cmd_table *t);
/* The table in force for session id, read back from the kernel; -ENOENT none. */
int agent_session_cmd_rules_get(struct agent *a, uint32_t id, struct bpfbox_cmd_table *t);

struct bpfbox_policy;
/* The session's file and exec deny lists into the BPF LSM maps (if loaded). */
int agent_session_policy(struct agent *a, uint32_t id, const struct bpfbox_policy *p);

/*
 * The same from lists (a daemon's register): deny patterns and exec_deny
 * names or paths into the BPF LSM maps, all or nothing. 0 when the BPF LSM
 * is not loaded (nothing to write); -EINVAL or -ENAMETOOLONG with *bad the
 * entry at fault.
 */
int agent_session_lsm(struct agent *a, uint32_t id, const char *const *deny, size_t ndeny,
		      const char *const *exec_deny, size_t nexec, const char **bad);
/*
 * The session's writable set (workspace, private tmp, rw paths) into the
 * BPF LSM's map, by inode (0 when the BPF LSM is not loaded).
 */
struct bpfbox_inode_key;
int agent_session_writable(struct agent *a, uint32_t id, const char *const *dirs, size_t n,
			   struct bpfbox_inode_key *added, size_t *nadded);
/*
 * Removes what agent_session_lsm and agent_session_writable wrote, key by
 * key (the same lists; wkeys: the keys agent_session_writable gave back).
 * agent_session_lsm_clear does the same by walking the maps.
 */
int agent_session_lsm_remove(struct agent *a, uint32_t id, const char *const *deny, size_t ndeny,
			     const char *const *exec_deny, size_t nexec,
			     const struct bpfbox_inode_key *wkeys, size_t nw);
/*
 * The BPFBOX_SF_GAP_* flags of a session whose Landlock has landlock_abi
 * (0: none): what the BPF LSM, when loaded, enforces in Landlock's stead.
 */
uint32_t agent_gap_flags(const struct agent *a, int landlock_abi);
/*
 * Removes from not_enforced (items separated by "; ", as session_plan
 * writes them) what the BPF LSM fills for a session with these gap flags.
 */
void agent_gaps_filled(char *not_enforced, uint32_t flags);
#define AGENT_GAP_SCOPE_TEXT "abstract unix socket and signal isolation (Landlock ABI < 6)"
/* Removes the session's BPF LSM file and exec policy (its index may be reused). */
int agent_session_lsm_clear(struct agent *a, uint32_t id);
/*
 * Removes the BPF LSM policy entries, connect and unix allow-lists of every
 * session index keep() refuses: what a killed daemon's sessions left that
 * no re-adopted session owns. The number of entries removed, or -errno.
 */
int agent_policy_sweep(struct agent *a, bool (*keep)(void *ctx, uint32_t id), void *ctx);

/* The directories under which a session may connect to unix sockets (<= 4). */
int agent_unix_allow(struct agent *a, uint32_t id, const char *const *dirs, size_t n);

/* An fd that polls readable when records wait; then call agent_consume. */
int agent_ring_fd(const struct agent *a);
int agent_consume(struct agent *a);
/*
 * After a session's processes are gone: hands each allowed open still
 * counted in the kernel's aggregation map to fn as a file record, numbered
 * from *seq on (which advances), and forgets the session's entries.
 */
int agent_flush_session(struct agent *a, uint32_t id, uint64_t *seq, agent_record_fn fn, void *ctx);

/*
 * The process the OOM killer chose while session id was at its memory
 * limit, if that happened within max_age_ns (the oom/mark_victim
 * tracepoint; no kernel log needed). comm is "" when the kernel did not say
 * (then /proc/PID/comm may). The entry is consumed. 0, or -ENOENT.
 */
int agent_oom_victim(struct agent *a, uint32_t id, uint64_t max_age_ns, pid_t *pid, char *comm,
		     size_t size);

/* Records lost because the ring was full, summed over CPUs. */
uint64_t agent_lost_total(const struct agent *a);

/* One attached program's counters from the kernel (bpf_stats, docs/operating.md). */
struct agent_prog_stat {
	char name[64];
	uint32_t id;
	uint64_t run_time_ns, run_cnt; /* 0 unless kernel.bpf_stats_enabled=1 */
	uint64_t recursion_misses;
};

typedef void (*agent_prog_fn)(void *ctx, const struct agent_prog_stat *st);

/* Calls fn for each program attached through a pinned link. 0, or -errno. */
int agent_prog_stats(const struct agent *a, agent_prog_fn fn, void *ctx);

#endif
