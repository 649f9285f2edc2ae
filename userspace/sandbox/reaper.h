/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Finds and kills every descendant of this process. bpfbox is a child
 * subreaper, so a process that daemonized (setsid and double fork) is
 * reparented to it and still found here. A session cgroup, when there is
 * one, is killed as a whole as well; this covers hosts without one.
 */
#ifndef BPFBOX_REAPER_H
#define BPFBOX_REAPER_H

#include <stdbool.h>
#include <sys/types.h>

/* Sends sig to the process group of leader and to every descendant. */
int reaper_kill_all(pid_t leader, int sig);

/* Reaps exited children without blocking; records leader's status. */
void reaper_reap(pid_t leader, int *leader_status, bool *leader_done);

/* Kills what is left with SIGKILL and waits for it, for at most 5 s. */
void reaper_reap_all(void);

#endif
