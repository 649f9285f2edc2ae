/* SPDX-License-Identifier: GPL-2.0 */
/* The seccomp deny list as libseccomp rules; used at build time only. */
#ifndef BPFBOX_SECCOMP_RULES_H
#define BPFBOX_SECCOMP_RULES_H

#include <stdbool.h>

/*
 * The network variants of the filter (seccomp_program): false and true
 * are the two of old.
 */
enum seccomp_net {
	SECCOMP_NET_ALLOW = 0,	  /* every socket family */
	SECCOMP_NET_DENY = 1,	  /* AF_UNIX only */
	SECCOMP_NET_LOOPBACK = 2, /* AF_UNIX, AF_INET, AF_INET6: a network namespace of its own */
};

/* Compiles the filter and writes its BPF instructions to fd. */
int seccomp_rules_export(enum seccomp_net net, int fd);

#endif
