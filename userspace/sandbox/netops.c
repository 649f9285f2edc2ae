// SPDX-License-Identifier: GPL-2.0
/*
 * Connects out of the session's own network namespace, recorded without
 * BPF (docs/network.md). The namespace is the wall: nothing but its
 * loopback is reachable, so a connect elsewhere would fail with
 * ENETUNREACH, which says nothing of the policy. The seccomp listener
 * holds the connects whose address has an inet address's length
 * (seccomp.c); a loopback or unspecified destination goes on, any other is
 * refused with EPERM and counted for the summary, as the BPF layer does.
 * The address is read from the caller's memory, which it may change after
 * the read: that only changes what is recorded, not what it reaches.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "session.h"
#include "landlock.h"
#include "session_internal.h"
#include "seccomp.h"
#include "bpfbox/events.h"
#include "../lib/denial.h"
#include "../lib/names.h"
#include "../policy/policy.h"

/* 127.0.0.0/8, ::1, the unspecified addresses and their IPv4-mapped forms. */
static bool local4(const struct in_addr *a)
{
	uint32_t ip = ntohl(a->s_addr);

	return (ip >> 24) == 127 || ip == 0;
}

static bool local6(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_V4MAPPED(a))
		return local4((const struct in_addr *)&a->s6_addr[12]);
	return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a);
}

/* Whether sa (len bytes) leaves the namespace; what names it then. */
static bool goes_out(const struct sockaddr_storage *sa, size_t len, char *what, size_t size)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	if (sa->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;

		if (local4(&in->sin_addr))
			return false;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		snprintf(what, size, "%s:%u", addr, ntohs(in->sin_port));
		return true;
	}
	if (sa->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		if (local6(&in6->sin6_addr))
			return false;
		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		snprintf(what, size, "[%s]:%u", addr, ntohs(in6->sin6_port));
		return true;
	}
	return false;
}

int session_net_by_proxy(struct session *s, int sock, uint16_t port)
{
	if (!s->layers.ns.clone_flags || s->policy->net != NET_DENY)
		return -EOPNOTSUPP;
	s->layers.ns.clone_flags |= CLONE_NEWNET;
	s->layers.ns.proxy_sock = sock;
	s->layers.ns.proxy_port = port;
	snprintf(s->proxy_url, sizeof(s->proxy_url), "http://127.0.0.1:%u", port);
	session_not_enforced(s, "egress by name for tools that ignore HTTP_PROXY and HTTPS_PROXY "
				"(without the BPF network layer they cannot connect out at all: "
				"the daemon's sessions can)");
	return 0;
}

bool session_own_netns(const struct session *s)
{
	return s->layers.ns.clone_flags & CLONE_NEWNET;
}

void session_connect_notified(struct session *s, int listener, const struct seccomp_denied *d)
{
	struct sockaddr_storage sa;
	size_t len = (size_t)(uint32_t)d->args[2];
	struct iovec local = {&sa, len}, remote = {(void *)(uintptr_t)d->args[1], len};
	char what[INET6_ADDRSTRLEN + 16];

	memset(&sa, 0, sizeof(sa));
	/* Unreadable, or gone meanwhile: the kernel answers (EFAULT, ...). */
	if (len > sizeof(sa) ||
	    process_vm_readv(d->pid, &local, 1, &remote, 1, 0) != (ssize_t)len ||
	    !seccomp_notify_valid(listener, d->id) || !goes_out(&sa, len, what, sizeof(what))) {
		seccomp_notify_answer(listener, d->id, 0);
		return;
	}
	seccomp_notify_answer(listener, d->id, EPERM);
	denials_add(&s->denials, bpfbox_layer_name(BPFBOX_LAYER_SECCOMP), "connect", what, EPERM,
		    1);
}

bool session_binds_refused(const struct session *s, bool netns)
{
	const struct bpfbox_policy *p = s->policy;

	return s->layers.seccomp && s->layers.landlock && p->net == NET_DENY && p->net_allow.n &&
	       !netns && (s->layers.rights.net & LANDLOCK_ACCESS_NET_BIND_TCP);
}

/*
 * Whether fd of pid is a TCP socket: Landlock's bind right is TCP's only
 * (a UDP bind goes on). The socket is looked at through a copy of the fd
 * (pidfd_getfd: the session is bpfbox's own descendant); unknown: false,
 * nothing is counted that may not have been refused.
 */
static bool tcp_socket(pid_t pid, int fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), sock, type = 0, proto = 0;
	socklen_t len = sizeof(type);

	if (pidfd < 0)
		return false;
	sock = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	close(pidfd);
	if (sock < 0)
		return false;
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		type = 0;
	len = sizeof(proto);
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0)
		proto = 0;
	close(sock);
	return type == SOCK_STREAM && proto == IPPROTO_TCP;
}

/*
 * Under --net-allow Landlock handles TCP bind with no port granted
 * (fs_rules.c): every TCP bind is refused with EACCES, a server on
 * 127.0.0.1 included, and nothing records it. The listener holds each
 * bind(): the call goes on (Landlock decides), and a TCP one is counted.
 */
void session_bind_notified(struct session *s, int listener, const struct seccomp_denied *d)
{
	struct sockaddr_storage sa;
	size_t len = (size_t)(uint32_t)d->args[2];
	struct iovec local = {&sa, len}, remote = {(void *)(uintptr_t)d->args[1], len};
	char addr[INET6_ADDRSTRLEN] = "?", what[INET6_ADDRSTRLEN + 16];
	bool tcp;

	memset(&sa, 0, sizeof(sa));
	if (len > sizeof(sa) || len < sizeof(struct sockaddr_in) ||
	    process_vm_readv(d->pid, &local, 1, &remote, 1, 0) != (ssize_t)len ||
	    (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)) {
		seccomp_notify_answer(listener, d->id, 0);
		return;
	}
	tcp = tcp_socket(d->pid, (int)d->args[0]);
	/* What was read belongs to this call only if it still waits. */
	if (!seccomp_notify_valid(listener, d->id))
		return;
	seccomp_notify_answer(listener, d->id, 0);
	if (!tcp)
		return;
	if (sa.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&sa;

		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		snprintf(what, sizeof(what), "%s:%u", addr, ntohs(in->sin_port));
	} else if (len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)&sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		snprintf(what, sizeof(what), "[%s]:%u", addr, ntohs(in6->sin6_port));
	} else {
		return;
	}
	denials_add(&s->denials, bpfbox_layer_name(BPFBOX_LAYER_LANDLOCK), "bind", what, EACCES, 1);
}
