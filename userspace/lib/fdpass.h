/* SPDX-License-Identifier: GPL-2.0 */
/*
 * File descriptors passed over a unix socket (SCM_RIGHTS): the session's
 * set-up hands bpfbox run what only it can make (the seccomp listener, the
 * sockets of its network namespace).
 */
#ifndef BPFBOX_FDPASS_H
#define BPFBOX_FDPASS_H

#include <stddef.h>

#define FDPASS_MAX 4

/* Sends fds[0, n) (n <= FDPASS_MAX) in one message: 0, or -1 with errno. */
int send_fds(int sock, const int *fds, size_t n);
/*
 * The fds of one message, without waiting (the caller polls first), each
 * close-on-exec: how many came (0 when none), at most max; any past max
 * are closed.
 */
size_t recv_fds(int sock, int *fds, size_t max);
/* The one fd of a message (as recv_fds), or -1 when none came. */
int recv_fd(int sock);

#endif
