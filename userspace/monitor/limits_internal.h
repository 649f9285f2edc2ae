/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the limits files only: limits.c (the plan and its
 * description), limits_apply.c (cgroups made, limits written, the child
 * joined), limits_cgroup.c (a session's cgroups adopted, frozen, killed,
 * removed, and the leftovers of dead sessions swept).
 */
#ifndef BPFBOX_MONITOR_LIMITS_INTERNAL_H
#define BPFBOX_MONITOR_LIMITS_INTERNAL_H

#include <stddef.h>

#include "limits.h"

/* The v1 controller of each resource: "memory", "pids", "cpu". */
extern const char *const limits_ctrl_names[RES__COUNT];

/* This process's cgroup in the v1 hierarchy holding ctrl ("" at the root). */
int limits_own_v1_path(const char *ctrl, char *buf, size_t size);

/* l->not_enforced from the plan's l->how. */
void limits_describe(struct session_limits *l);

#endif
