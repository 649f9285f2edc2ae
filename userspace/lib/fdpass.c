// SPDX-License-Identifier: GPL-2.0
/* File descriptors passed over a unix socket (fdpass.h). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"

ssize_t send_with_fds(int sock, const struct iovec *iov, size_t niov, const int *fds, size_t n)
{
	char ctl[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = niov};
	struct cmsghdr *cm;

	if (n > FDPASS_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (n) {
		memset(ctl, 0, sizeof(ctl));
		m.msg_control = ctl;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL);
}

int send_fds(int sock, const int *fds, size_t n)
{
	char data = 0;
	struct iovec iov = {&data, 1};

	if (n == 0)
		return -1;
	return send_with_fds(sock, &iov, 1, fds, n) == 1 ? 0 : -1;
}

ssize_t recv_with_fds(int sock, void *buf, size_t len, int flags, int *fds, size_t max,
		      size_t *nfds)
{
	char ctl[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct iovec iov = {buf, len};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = sizeof(ctl)};
	ssize_t r;

	*nfds = 0;
	memset(ctl, 0, sizeof(ctl));
	r = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
	if (r < 0)
		return r;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return r;
}

size_t recv_fds(int sock, int *fds, size_t max)
{
	size_t got;
	char data;

	if (recv_with_fds(sock, &data, 1, MSG_DONTWAIT, fds, max, &got) != 1) {
		while (got)
			close(fds[--got]);
		return 0;
	}
	return got;
}

int recv_fd(int sock)
{
	int fd;

	return recv_fds(sock, &fd, 1) == 1 ? fd : -1;
}
