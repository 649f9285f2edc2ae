// SPDX-License-Identifier: GPL-2.0
/*
 * The deny list of the seccomp layer, written with libseccomp. Every entry
 * is explained in docs/SECURITY.md; the filter allows everything else so
 * that ordinary build and shell work is unaffected. Syscalls of foreign
 * ABIs (i386 through int 0x80, x32) kill the process: the filter only
 * speaks the native ABI.
 *
 * This runs at build time (tools/gen_seccomp.c): compiling ~100 rules
 * costs about 2M instructions, too much for every tool call, so bpfbox
 * ships the resulting BPF programs and only installs them.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "seccomp_rules.h"
#include "../lib/util.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
/*
 * The kernel's own O_TMPFILE bit (asm-generic/fcntl.h), without the
 * O_DIRECTORY the C library's O_TMPFILE adds: the rule needs the bit alone.
 */
#define KERNEL_O_TMPFILE 020000000
/* 6.6's fchmodat2, the same number on every architecture (the unified table). */
#define NR_FCHMODAT2 452

/* Denied outright with EPERM. */
static const char *const denied_syscalls[] = {
	/* io_uring runs syscalls in kernel workers, out of seccomp's sight. */
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	/* Reading or steering other processes. */
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	/* Kernel attack surface a tool call never needs. */
	"bpf",
	"perf_event_open",
	"userfaultfd",
	/* Kernel keyrings are shared with the invoking user's session. */
	"keyctl",
	"add_key",
	"request_key",
	/* Replacing the kernel or its modules. */
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	/* Rearranging the file system view would sidestep path rules. */
	"mount",
	"umount2",
	"pivot_root",
	"move_mount",
	"open_tree",
	"fsopen",
	"fsmount",
	"fsconfig",
	"fspick",
	"mount_setattr",
	/* New namespaces; clone's flags are checked below. */
	"unshare",
	"setns",
	/* Host-wide state. */
	"swapon",
	"swapoff",
	"reboot",
	"acct",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"syslog",
	/* File handles bypass path-based checks. */
	"open_by_handle_at",
	"name_to_handle_at",
};

static const unsigned long namespace_flags[] = {
	CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,    CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

#define DENY SCMP_ACT_ERRNO(EPERM)

static int deny_clone(scmp_filter_ctx ctx)
{
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(namespace_flags); i++) {
		unsigned long f = namespace_flags[i];

		r = seccomp_rule_add(ctx, DENY, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
		if (r)
			return r;
	}
	/*
	 * clone3 passes its flags in memory that seccomp cannot read. ENOSYS
	 * makes libc fall back to clone, whose flags are checked above.
	 */
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
}

/*
 * personality() takes an unsigned int: allow 0 (PER_LINUX) and 0xffffffff
 * (the query), deny every other 32-bit value. libseccomp allows one
 * comparison per argument and rule, so the set {1 .. 0xfffffffe} is
 * written as a union of masked comparisons: bit 31 clear with some lower
 * bit set, or bit 31 set with some lower bit clear.
 */
static int deny_personality(scmp_filter_ctx ctx)
{
	const uint64_t top = 1ULL << 31;
	int r;

	for (int b = 0; b < 31; b++) {
		uint64_t bit = 1ULL << b;

		r = seccomp_rule_add(ctx, DENY, SCMP_SYS(personality), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, top | bit, bit));
		if (!r)
			r = seccomp_rule_add(ctx, DENY, SCMP_SYS(personality), 1,
					     SCMP_A0(SCMP_CMP_MASKED_EQ, top | bit, top));
		if (r)
			return r;
	}
	return 0;
}

/*
 * Terminal injection. The request is an unsigned int in the kernel, so the
 * comparison masks the upper 32 bits an attacker could set to dodge it.
 */
static int deny_tty_injection(scmp_filter_ctx ctx)
{
	int r;

	r = seccomp_rule_add(ctx, DENY, SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI));
	if (!r)
		r = seccomp_rule_add(ctx, DENY, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCLINUX));
	return r;
}

/*
 * Set-uid and set-gid bits: no call may make a file that carries them
 * (docs/SECURITY.md, "Set-id files"). Each call's mode argument is tested
 * bit by bit with a masked comparison; open and openat only when their
 * flags create a file (O_CREAT, O_TMPFILE), as the kernel ignores the mode
 * otherwise. Only the bits are compared, so the high bits of the argument
 * (umode_t is 16 bits in the kernel) cannot dodge the rule.
 */
static const struct {
	const char *name;
	int nr; /* used when libseccomp does not know the name */
	unsigned int mode_arg;
	int flags_arg; /* -1: the call always applies its mode */
} mode_calls[] = {
	{"chmod", -1, 1, -1},	 {"fchmod", -1, 1, -1},
	{"fchmodat", -1, 2, -1}, {"fchmodat2", NR_FCHMODAT2, 2, -1},
	{"creat", -1, 1, -1},	 {"mknod", -1, 1, -1},
	{"mknodat", -1, 2, -1},	 {"open", -1, 2, 1},
	{"openat", -1, 3, 2},
};

static const uint64_t setid_bits[] = {S_ISUID, S_ISGID};
static const uint64_t create_flags[] = {O_CREAT, KERNEL_O_TMPFILE};

static int deny_setid_mode(scmp_filter_ctx ctx, size_t i, uint64_t bit)
{
	struct scmp_arg_cmp mode = SCMP_CMP(mode_calls[i].mode_arg, SCMP_CMP_MASKED_EQ, bit, bit);
	int nr = seccomp_syscall_resolve_name(mode_calls[i].name);
	int r = 0;

	if (nr == __NR_SCMP_ERROR)
		nr = mode_calls[i].nr;
	/* A syscall this architecture lacks (open, chmod on arm64) needs no rule. */
	if (nr < 0)
		return 0;
	if (mode_calls[i].flags_arg < 0)
		return seccomp_rule_add(ctx, DENY, nr, 1, mode);
	for (size_t f = 0; !r && f < ARRAY_SIZE(create_flags); f++)
		r = seccomp_rule_add(ctx, DENY, nr, 2,
				     SCMP_CMP(mode_calls[i].flags_arg, SCMP_CMP_MASKED_EQ,
					      create_flags[f], create_flags[f]),
				     mode);
	return r;
}

static int deny_setid(scmp_filter_ctx ctx)
{
	int r = 0;

	for (size_t i = 0; !r && i < ARRAY_SIZE(mode_calls); i++)
		for (size_t b = 0; !r && b < ARRAY_SIZE(setid_bits); b++)
			r = deny_setid_mode(ctx, i, setid_bits[b]);
	/*
	 * openat2 passes its flags and mode in memory that seccomp cannot
	 * read. ENOSYS makes callers fall back to openat, whose mode is
	 * checked above (the C library's open never uses openat2).
	 */
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	return r;
}

/*
 * socketpair makes sockets too: AF_UNIX only (the one other family that
 * implements it, AF_TIPC, is kernel attack surface a tool call never needs).
 */
static int deny_socketpair(scmp_filter_ctx ctx)
{
	return seccomp_rule_add(ctx, DENY, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
}

/* Network deny: only AF_UNIX sockets, for local IPC such as make's jobserver. */
static int deny_network_families(scmp_filter_ctx ctx)
{
	return seccomp_rule_add(ctx, DENY, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
}

/*
 * --net-allow: AF_INET and AF_INET6 for the connects the BPF network layer
 * judges, AF_UNIX for local IPC; every other family refused (AF_NETLINK,
 * AF_PACKET, AF_VSOCK, AF_ALG, ...). The family is compared as a whole
 * 64-bit value: any other value, high bits included, is refused.
 */
static int deny_non_inet_families(scmp_filter_ctx ctx)
{
	int r = 0;

	for (uint64_t fam = 0; !r && fam < AF_INET6; fam++)
		if (fam != AF_UNIX && fam != AF_INET)
			r = seccomp_rule_add(ctx, DENY, SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, fam));
	if (!r)
		r = seccomp_rule_add(ctx, DENY, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_GT, AF_INET6));
	return r;
}

/* The rules beyond the denied list, each a function of its own. */
static int (*const deny_rules[])(scmp_filter_ctx ctx) = {
	deny_clone, deny_personality, deny_tty_injection, deny_setid, deny_socketpair,
};

int seccomp_rules_export(enum seccomp_net net, int fd)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return -ENOMEM;
	/* A syscall of another ABI than the native one kills the process. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/*
	 * A binary tree of syscall numbers instead of a linear chain: the kernel
	 * runs the filter once per syscall number when it is installed, to
	 * cache the always-allowed ones, and every denied-list check gets
	 * cheaper too.
	 */
	if (!r)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	for (size_t i = 0; !r && i < ARRAY_SIZE(denied_syscalls); i++) {
		int nr = seccomp_syscall_resolve_name(denied_syscalls[i]);

		/* A syscall this architecture lacks needs no rule. */
		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add(ctx, DENY, nr, 0);
	}
	for (size_t i = 0; !r && i < ARRAY_SIZE(deny_rules); i++)
		r = deny_rules[i](ctx);
	if (!r && net == SECCOMP_NET_DENY)
		r = deny_network_families(ctx);
	if (!r && net == SECCOMP_NET_INET)
		r = deny_non_inet_families(ctx);
	if (!r)
		r = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	return r;
}
