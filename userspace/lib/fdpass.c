// SPDX-License-Identifier: GPL-2.0
/* File descriptors passed over a unix socket (fdpass.h). */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fdpass.h"

int send_fds(int sock, const int *fds, size_t n)
{
	char data = 0, ctl[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct iovec iov = {&data, 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
	struct cmsghdr *cm;

	if (n == 0 || n > FDPASS_MAX)
		return -1;
	memset(ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

size_t recv_fds(int sock, int *fds, size_t max)
{
	char data, ctl[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct iovec iov = {&data, 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl,
			   .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	size_t n, got = 0;

	memset(ctl, 0, sizeof(ctl));
	if (recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return 0;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
		return 0;
	n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	for (size_t i = 0; i < n; i++) {
		int fd;

		memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		if (got < max)
			fds[got++] = fd;
		else
			close(fd);
	}
	return got;
}

int recv_fd(int sock)
{
	int fd;

	return recv_fds(sock, &fd, 1) == 1 ? fd : -1;
}
