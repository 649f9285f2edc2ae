/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host capability probes. Every answer comes from really doing the thing
 * (create a ruleset, install a filter, load and attach a program), never
 * from a kernel version. `bpfbox status`, `bpfbox run` and the daemon all
 * read the same struct host_caps.
 */
#ifndef BPFBOX_PROBE_H
#define BPFBOX_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "../sandbox/landlock.h"
#include "../lib/cgroup.h"

enum bpfbox_level {
	LEVEL_NONE,
	LEVEL_MINIMAL,
	LEVEL_STANDARD,
	LEVEL_FULL,
};

enum feat_state {
	FEAT_NO,
	FEAT_YES,
	FEAT_NEEDS_ROOT,
};

enum feature_id {
	FEAT_LANDLOCK,
	FEAT_SECCOMP,
	FEAT_BPF_LSM_ACTIVE,
	FEAT_BPF_LSM,
	FEAT_LSM_CGROUP,
	FEAT_RINGBUF,
	FEAT_TP_EXEC,
	FEAT_TP_OPENAT,
	FEAT_FEXIT, /* a BPF trampoline on a syscall: the audit's fexit attach mode */
	FEAT_CGROUP_BPF,
	FEAT_CGROUP_V2,
	FEAT_CGROUP_FREEZE,
	FEAT_CGROUP_KILL,
	FEAT_BTF,
	FEAT_USERNS,
	FEAT_CGROUP_LIMITS, /* memory, pids, cpu of a session by cgroup controllers */
	FEAT_NAMESPACES,    /* a session's mount, PID, IPC (and user) namespaces for this caller */
	FEAT_UDP_DIAG,	    /* sock_diag names a UDP socket's cgroup: egress by name's resolver */
	FEAT__COUNT,
};

struct feature {
	enum feat_state state;
	int err;	  /* positive errno of the failed step, or 0 */
	char detail[256]; /* what was found, or why it is missing */
};

struct host_caps {
	char kernel_release[128];
	bool root;
	struct feature feat[FEAT__COUNT];
	struct landlock_rights landlock; /* what bpfbox uses (landlock.abi: the ABI used) */
	int landlock_kernel_abi;	 /* what the kernel has; 0: none */
	char lsm_list[256];
	char cgroup2_mount[256];
	char cgroup2_controllers[256];
	char cgroup1_controllers[256]; /* non-empty: hybrid hierarchy */
	/* How a session's limits hold for this user (enum limit_how, docs/limits.md). */
	unsigned char limits_how[3]; /* memory, pids, cpu */
	bool limits_pause;
	bool limits_probed;
	enum bpfbox_level level;
};

/* Probe the BPF and cgroup features too (slow, root); else only the fast ones. */
#define PROBE_ALL (1U << 0)

int probe_host(struct host_caps *caps, unsigned int flags);
/*
 * How the audit programs would see syscalls here (the agent's choice,
 * userspace/agent/agent_load.c): "fexit" where a BPF trampoline loads (no cost
 * to syscalls not audited), else "tracepoint" (every task of the host on
 * the syscall slow path while attached), else "none"; "unknown" unprobed.
 */
const char *probe_audit_attach(const struct host_caps *caps);
/*
 * Whether a BPF trampoline (fexit on __x64_sys_openat) loads and attaches
 * here; the answer is kept per boot in /run like probe_bpf_lsm's, so that
 * an agent on a host that refuses them does not try its whole audit
 * object in that mode first. why: the reason when not.
 */
bool probe_fexit(char *why, size_t size);

/* CAP_SYS_ADMIN in the effective set (root in a container may lack it). */
bool probe_has_sys_admin(void);
/* Whether "/" is a mount root (not a chroot into a plain directory). */
bool probe_root_is_mount(void);

const char *feature_key(enum feature_id id);   /* "bpf_lsm" */
const char *feature_label(enum feature_id id); /* "BPF LSM (load+attach)" */
const char *feat_state_name(enum feat_state s);

const char *level_name(enum bpfbox_level level);
/* Case-insensitive; -EINVAL for an unknown name. */
int level_parse(const char *name, enum bpfbox_level *out);
/* The level a set of enforcing features reaches (docs/status.md, Levels). */
enum bpfbox_level level_from(bool bpf_lsm, bool landlock, bool seccomp, bool cgroup_v2);

/*
 * Whether a BPF LSM program loads and attaches here (bpf in the active LSM
 * list, root): the one probe `bpfbox run` pays to choose Full. why: the
 * reason when not.
 */
bool probe_bpf_lsm(char *why, size_t size);

/* This boot's id (/proc/sys/kernel/random/boot_id): 0, or -ENOENT ("" in boot). */
int probe_boot_id(char boot[64]);
/*
 * An answer kept for this boot in the file cache (in /run, which a reboot
 * empties): "<boot id> yes" or "<boot id> no <why>". get: 1 (yes) or 0
 * (no, and why), -ENOENT without a believable one (only a regular file
 * owned by root that nobody else may write is), boot: this boot's id for
 * the put. put: keeps one (root only; a rename, never a half-written file).
 */
int probe_cache_get(const char *cache, char boot[64], char *why, size_t size);
void probe_cache_put(const char *cache, const char *boot, bool yes, const char *why);

/* cgroup2_mount_point() is lib/cgroup.h's. */

#endif
