/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seccomp layer at run time: the filters compiled at build time from
 * seccomp_rules.c (docs/SECURITY.md), installed without libseccomp.
 */
#ifndef BPFBOX_SECCOMP_H
#define BPFBOX_SECCOMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/filter.h>

#include "seccomp_rules.h"

/*
 * File changes newer than the C library's headers (the listener holds them):
 * 6.6 and 6.13, the same number on every architecture (the unified table).
 */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif

/* The filter for a session; net says which socket() families it allows. */
const struct sock_fprog *seccomp_program(enum seccomp_net net);

/* Installs prog on the calling thread; needs no_new_privs or root. */
int seccomp_install(const struct sock_fprog *prog);

/*
 * Network deny with a record (docs/SECURITY.md): installs a filter that
 * sends socket() of any family but AF_UNIX (net; and but AF_INET and
 * AF_INET6 with inet: the session's own network namespace) and the file
 * changes of seccomp_notify_file_nr (files) to a listener, and with
 * CONNECT the connects whose address has an inet address's length (the
 * session's own network namespace without BPF: a connect out of it is
 * refused with a record, session_connect_notified), and refuses seccomp()
 * calls that ask for a listener of their own (one stacked later would
 * answer for ours). Returns the listener fd, or -errno (then the compiled
 * network deny must be used instead).
 */
enum {
	SECCOMP_NOTIFY_NET = 1 << 0,	 /* socket() of every family but AF_UNIX */
	SECCOMP_NOTIFY_INET = 1 << 1,	 /* ... but AF_INET and AF_INET6 too */
	SECCOMP_NOTIFY_CONNECT = 1 << 2, /* connect() with an inet address's length */
	SECCOMP_NOTIFY_FILES = 1 << 3,	 /* the file changes of seccomp_notify_file_nr */
	SECCOMP_NOTIFY_BIND = 1 << 4,	 /* bind(), let run: counted when refused */
};
int seccomp_install_notify(unsigned int what);

/*
 * The open flags that write or create: O_WRONLY, O_RDWR, O_CREAT, O_TRUNC
 * and the kernel's O_TMPFILE bit (without its O_DIRECTORY).
 */
#define SECCOMP_OPEN_WRITES (01 | 02 | 0100 | 01000 | 020000000)

/* unlinkat, renameat2, mkdirat, linkat, symlinkat, fchmodat, utimensat, fchownat, (l)setxattr,
 * (l)removexattr and the legacy forms; creat, and open and openat (the listener holds them
 * with SECCOMP_OPEN_WRITES only). */
bool seccomp_notify_file_nr(int nr);

struct seccomp_denied {
	uint64_t id;
	pid_t pid;
	int nr;
	uint64_t args[6];
};

/* Takes one pending notification; 0 or -errno. */
int seccomp_notify_recv(int listener, struct seccomp_denied *out);

/* Whether notification id still waits (its memory read before was the caller's). */
bool seccomp_notify_valid(int listener, uint64_t id);

/* Answers id: refused with err, or err 0: the kernel runs the call (and decides). */
int seccomp_notify_answer(int listener, uint64_t id, int err);

#endif
