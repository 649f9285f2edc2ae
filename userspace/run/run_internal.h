/* SPDX-License-Identifier: GPL-2.0 */
/* What run.c, embedded.c and via_daemon.c share. */
#ifndef BPFBOX_RUN_INTERNAL_H
#define BPFBOX_RUN_INTERNAL_H

#include <stdbool.h>

struct session;

/*
 * The session's level is final (embedded: before the fork; daemon: at its
 * register reply): says what is not enforced (even with -q, once) and with
 * verbose the level and policy.
 */
void run_level_final(const struct session *s, bool daemon, bool verbose);

#endif
