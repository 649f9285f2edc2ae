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
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "session.h"
#include "session_internal.h"
#include "seccomp.h"
#include "bpfbox/events.h"
#include "../lib/denial.h"
#include "../lib/names.h"

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
