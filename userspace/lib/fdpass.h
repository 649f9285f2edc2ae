/* SPDX-License-Identifier: GPL-2.0 */
/*
 * File descriptors passed over a unix socket (SCM_RIGHTS): the session's
 * set-up hands bpfbox run what only it can make (the seccomp listener, the
 * sockets of its network namespace).
 */
#ifndef BPFBOX_FDPASS_H
#define BPFBOX_FDPASS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#define FDPASS_MAX 4

/* Sends fds[0, n) (n <= FDPASS_MAX) in one message: 0, or -1 with errno. */
int send_fds(int sock, const int *fds, size_t n);
/*
 * The bytes of iov[0, niov) with fds[0, n) attached (n <= FDPASS_MAX, 0
 * for none), in one sendmsg: the bytes sent (maybe fewer), or -1 with errno.
 */
ssize_t send_with_fds(int sock, const struct iovec *iov, size_t niov, const int *fds, size_t n);
/*
 * At most len bytes into buf (recvmsg with flags), and the fds that came
 * with them into fds[0, max), each close-on-exec (any past max closed),
 * *nfds how many: the bytes, or -1 with errno.
 */
ssize_t recv_with_fds(int sock, void *buf, size_t len, int flags, int *fds, size_t max,
		      size_t *nfds);
/*
 * The fds of one message, without waiting (the caller polls first), each
 * close-on-exec: how many came (0 when none), at most max; any past max
 * are closed.
 */
size_t recv_fds(int sock, int *fds, size_t max);
/* The one fd of a message (as recv_fds), or -1 when none came. */
int recv_fd(int sock);

#endif
