/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seccomp deny list as libseccomp rules, compiled at build time only;
 * the network variants are shared with the run time (seccomp.h).
 */
#ifndef BPFBOX_SECCOMP_RULES_H
#define BPFBOX_SECCOMP_RULES_H

/* Which sockets a session may make (docs/SECURITY.md). */
enum seccomp_net {
	SECCOMP_NET_OPEN, /* --net allow: every family */
	SECCOMP_NET_INET, /* --net-allow rules, or --net deny in a network namespace of its own: AF_UNIX, AF_INET, AF_INET6 */
	SECCOMP_NET_DENY, /* --net deny: AF_UNIX only */
	SECCOMP_NET_COUNT,
};

/*
 * The network variants of the filter (seccomp_program): false and true
 * are the two of old.
 */

/* Compiles the filter and writes its BPF instructions to fd. */
int seccomp_rules_export(enum seccomp_net net, int fd);

#endif
