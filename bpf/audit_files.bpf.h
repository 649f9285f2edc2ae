/* SPDX-License-Identifier: GPL-2.0 */
/*
 * audit.bpf.c's file changes: included by it after AUDIT_SYSCALL, whose
 * programs (a trampoline and a tracepoint per syscall) are made here for
 * each row of bpfbox/file_syscalls.h, and exit_file, all of them in one
 * program for an embedded agent's tracepoint mode.
 */
#ifndef BPFBOX_AUDIT_FILES_BPF_H
#define BPFBOX_AUDIT_FILES_BPF_H

#include "bpfbox/file_syscalls.h"

/*
 * The changes Landlock refuses without a trace of its own (issue 18): the
 * name each one is refused on, recorded at exit when it failed with EACCES
 * or EPERM (or EROFS in a session's read-only mount view). One program of
 * each attach mode per syscall of bpfbox/file_syscalls.h; syscalls this
 * kernel lacks are switched off before load.
 */
#define DFD_AT(r)    AT_FDCWD
#define DFD_0(r)     DIRFD(SYSARG0(r))
#define DFD_1(r)     DIRFD(SYSARG1(r))
#define DFD_2(r)     DIRFD(SYSARG2(r))
#define NAME_NONE(r) 0 /* the forms on a descriptor: its own file */
#define NAME_0(r)    SYSARG0(r)
#define NAME_1(r)    SYSARG1(r)
#define NAME_2(r)    SYSARG2(r)
#define NAME_3(r)    SYSARG3(r)
#define FILE_SYSCALL(sys, dfd, name, opcode) \
	AUDIT_SYSCALL(sys, BPFBOX_EV_FILE, opcode, DFD_##dfd(r), NAME_##name(r), 0, false)
BPFBOX_FILE_SYSCALLS(FILE_SYSCALL)

/* The caller's syscall argument n (0 to 3). */
static __always_inline __u64 sysarg(const struct pt_regs *r, __u32 n)
{
	switch (n) {
	case 0:
		return SYSARG0(r);
	case 1:
		return SYSARG1(r);
	case 2:
		return SYSARG2(r);
	default:
		return SYSARG3(r);
	}
}

/*
 * All of the above in one tracepoint program: an embedded agent in
 * tracepoint mode attaches it to each syscall's sys_exit tracepoint with
 * that syscall's row as the link's cookie (BPFBOX_FILE_COOKIE), so that
 * the verifier checks one program, not 29 that differ in their constants
 * (docs/benchmarks.md). A daemon keeps a program per syscall: its links
 * are pinned by program name.
 */
SEC("tracepoint")
int exit_file(struct trace_event_raw_sys_exit *ctx)
{
	__u64 c = bpf_get_attach_cookie(ctx);
	__u32 dfd = (c >> 8) & 0xff, name = (c >> 16) & 0xff;
	struct pending p = {.kind = BPFBOX_EV_FILE, .op = c & 0xff};
	struct bpfbox_session *s = audited(false);
	const struct pt_regs *r;

	if (!s)
		return 0;
	r = user_regs();
	p.dirfd = dfd ? DIRFD(sysarg(r, dfd - 1)) : AT_FDCWD;
	p.ptr = name ? sysarg(r, name - 1) : 0;
	emit_file(s, &p, ctx->ret);
	return 0;
}

#endif
