// SPDX-License-Identifier: GPL-2.0
/*
 * Trivial programs that `bpfbox status` loads and attaches one at a time to
 * learn what this kernel really allows. Each one does nothing: the probe is
 * the load and the attach, not the program's effect. Userspace turns
 * autoload off for all but the program being probed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* A global BPF LSM program: the Full level needs this to load. */
SEC("lsm/file_open")
int BPF_PROG(probe_lsm_file_open, struct file *file)
{
	return 0;
}

/* The same hook attached to one cgroup only (kernel >= 6.0). */
SEC("lsm_cgroup/file_open")
int BPF_PROG(probe_lsm_cgroup_file_open, struct file *file)
{
	return 1;
}

/* Tracepoints the audit layer observes execs and opens through. */
SEC("tracepoint/sched/sched_process_exec")
int probe_tp_exec(void *ctx)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_openat")
int probe_tp_openat(void *ctx)
{
	return 0;
}

/* A BPF trampoline on a syscall's entry point: the audit's fexit mode. */
SEC("fexit/__x64_sys_openat")
int BPF_PROG(probe_fexit_openat, const struct pt_regs *regs, long ret)
{
	return 0;
}

/* cgroup BPF: the network policy's fallback when BPF LSM cannot load. */
SEC("cgroup/connect4")
int probe_cgroup_connect4(struct bpf_sock_addr *ctx)
{
	return 1;
}
