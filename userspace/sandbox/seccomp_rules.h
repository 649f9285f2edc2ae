/* SPDX-License-Identifier: GPL-2.0 */
/* The seccomp deny list as libseccomp rules; used at build time only. */
#ifndef BPFBOX_SECCOMP_RULES_H
#define BPFBOX_SECCOMP_RULES_H

#include <stdbool.h>

/* Compiles the filter and writes its BPF instructions to fd. */
int seccomp_rules_export(bool deny_network, int fd);

#endif
