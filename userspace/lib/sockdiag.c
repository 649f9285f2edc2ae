// SPDX-License-Identifier: GPL-2.0
/* sock_diag questions about UDP sockets (sockdiag.h). */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sockdiag.h"

int sockdiag_open(void)
{
	struct timeval tv = {.tv_sec = 1};
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

int sockdiag_udp4_cgroup(int fd, uint32_t seq, uint32_t src, uint16_t sport, uint32_t dst,
			 uint16_t dport, uint64_t *cg)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = {.nlmsg_len = sizeof(req),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST},
		.r = {.sdiag_family = AF_INET,
		      .sdiag_protocol = IPPROTO_UDP,
		      .idiag_states = ~0U,
		      .id = {.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}},
	};
	union {
		struct nlmsghdr nlh;
		uint8_t b[1024];
	} rep;
	struct inet_diag_msg *m = NLMSG_DATA(&rep.nlh);
	struct rtattr *a;
	ssize_t n;
	int left;

	if (fd < 0)
		return -EBADF;
	/* "src and dst are swapped": dst is the socket's own address. */
	req.r.id.idiag_src[0] = src;
	req.r.id.idiag_sport = sport;
	req.r.id.idiag_dst[0] = dst;
	req.r.id.idiag_dport = dport;
	req.nlh.nlmsg_seq = seq;
	if (send(fd, &req, sizeof(req), 0) < 0)
		return -errno;
	/* A late answer to an earlier question (its wait ended) is skipped. */
	do
		n = recv(fd, &rep, sizeof(rep), 0);
	while (n >= (ssize_t)sizeof(rep.nlh) && rep.nlh.nlmsg_seq != seq);
	if (n < 0)
		return -errno;
	if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) &&
	    rep.nlh.nlmsg_type == NLMSG_ERROR) {
		int r = ((struct nlmsgerr *)NLMSG_DATA(&rep.nlh))->error;

		return r < 0 ? r : -EPROTO;
	}
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(*m)) || !NLMSG_OK(&rep.nlh, (size_t)n) ||
	    rep.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return -EPROTO;
	left = rep.nlh.nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (a = (struct rtattr *)(m + 1); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
		if (a->rta_type != INET_DIAG_CGROUP_ID || RTA_PAYLOAD(a) < sizeof(*cg))
			continue;
		memcpy(cg, RTA_DATA(a), sizeof(*cg));
		return 0;
	}
	return -EOPNOTSUPP; /* a kernel without the socket's cgroup in its answers */
}
