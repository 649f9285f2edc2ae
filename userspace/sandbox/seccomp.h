/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seccomp layer at run time: the filters compiled at build time from
 * seccomp_rules.c (docs/SECURITY.md), installed without libseccomp.
 */
#ifndef BPFBOX_SECCOMP_H
#define BPFBOX_SECCOMP_H

#include <stdbool.h>
#include <linux/filter.h>

/* The filter for a session; deny_network adds the socket() family rule. */
const struct sock_fprog *seccomp_program(bool deny_network);

/* Installs prog on the calling thread; needs no_new_privs or root. */
int seccomp_install(const struct sock_fprog *prog);

#endif
