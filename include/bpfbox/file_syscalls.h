/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The file changes the audit records at each syscall's end, when Landlock
 * refused them without a trace of its own (issue 18): one
 * X(sys, dfd, name, op) each, shared by both sides.
 *   dfd   the argument holding the directory fd (AT: none, the cwd)
 *   name  the argument holding the name (NONE: the fd's own file)
 *   op    the record's op (enum bpfbox_file_op, events.h)
 * bpf/audit.bpf.c makes a trampoline and a tracepoint program of each; an
 * embedded agent in tracepoint mode attaches one program to all their
 * tracepoints instead, each with its row as the link's cookie
 * (BPFBOX_FILE_COOKIE; userspace/agent/agent_load.c).
 */
#ifndef BPFBOX_FILE_SYSCALLS_H
#define BPFBOX_FILE_SYSCALLS_H

#define BPFBOX_FILE_SYSCALLS(X)                              \
	X(unlinkat, 0, 1, BPFBOX_FILE_UNLINK)                \
	X(unlink, AT, 0, BPFBOX_FILE_UNLINK)                 \
	X(rmdir, AT, 0, BPFBOX_FILE_RMDIR)                   \
	X(renameat2, 0, 1, BPFBOX_FILE_RENAME)               \
	X(renameat, 0, 1, BPFBOX_FILE_RENAME)                \
	X(rename, AT, 0, BPFBOX_FILE_RENAME)                 \
	X(mkdirat, 0, 1, BPFBOX_FILE_MKDIR)                  \
	X(mkdir, AT, 0, BPFBOX_FILE_MKDIR)                   \
	X(linkat, 2, 3, BPFBOX_FILE_LINK)                    \
	X(link, AT, 1, BPFBOX_FILE_LINK)                     \
	X(symlinkat, 1, 2, BPFBOX_FILE_SYMLINK)              \
	X(symlink, AT, 1, BPFBOX_FILE_SYMLINK)               \
	X(fchmodat, 0, 1, BPFBOX_FILE_CHMOD)                 \
	X(fchmodat2, 0, 1, BPFBOX_FILE_CHMOD) /* 6.6 */      \
	X(chmod, AT, 0, BPFBOX_FILE_CHMOD)                   \
	X(utimensat, 0, 1, BPFBOX_FILE_UTIMES)               \
	X(fchownat, 0, 1, BPFBOX_FILE_CHOWN)                 \
	X(chown, AT, 0, BPFBOX_FILE_CHOWN)                   \
	X(lchown, AT, 0, BPFBOX_FILE_CHOWN)                  \
	X(setxattr, AT, 0, BPFBOX_FILE_SETXATTR)             \
	X(lsetxattr, AT, 0, BPFBOX_FILE_SETXATTR)            \
	X(removexattr, AT, 0, BPFBOX_FILE_REMOVEXATTR)       \
	X(lremovexattr, AT, 0, BPFBOX_FILE_REMOVEXATTR)      \
	X(setxattrat, 0, 1, BPFBOX_FILE_SETXATTR) /* 6.13 */ \
	X(removexattrat, 0, 1, BPFBOX_FILE_REMOVEXATTR)      \
	X(fchmod, 0, NONE, BPFBOX_FILE_CHMOD)                \
	X(fchown, 0, NONE, BPFBOX_FILE_CHOWN)                \
	X(fsetxattr, 0, NONE, BPFBOX_FILE_SETXATTR)          \
	X(fremovexattr, 0, NONE, BPFBOX_FILE_REMOVEXATTR)

/* An argument's index, +1 (0: none): AT and NONE have none. */
#define BPFBOX_FILE_ARG_AT   0
#define BPFBOX_FILE_ARG_NONE 0
#define BPFBOX_FILE_ARG_0    1
#define BPFBOX_FILE_ARG_1    2
#define BPFBOX_FILE_ARG_2    3
#define BPFBOX_FILE_ARG_3    4

/* A row as a link's cookie: op, then the dfd's and the name's argument (+1). */
#define BPFBOX_FILE_COOKIE(dfd, name, op)                                            \
	((unsigned long long)(op) | (unsigned long long)BPFBOX_FILE_ARG_##dfd << 8 | \
	 (unsigned long long)BPFBOX_FILE_ARG_##name << 16)

#endif
