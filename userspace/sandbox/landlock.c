// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule	     445
#define __NR_landlock_restrict_self  446
#endif

int landlock_create_ruleset(const struct bpfbox_ruleset_attr *attr, uint32_t flags)
{
	return syscall(__NR_landlock_create_ruleset, attr, attr ? sizeof(*attr) : 0, flags);
}

int landlock_add_rule(int ruleset_fd, int rule_type, const void *attr, uint32_t flags)
{
	return syscall(__NR_landlock_add_rule, ruleset_fd, rule_type, attr, flags);
}

int landlock_restrict_self(int ruleset_fd, uint32_t flags)
{
	return syscall(__NR_landlock_restrict_self, ruleset_fd, flags);
}

int landlock_abi(void)
{
	int abi = landlock_create_ruleset(NULL, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? -errno : abi;
}

void landlock_rights_for_abi(int abi, struct landlock_rights *r)
{
	memset(r, 0, sizeof(*r));
	if (abi <= 0)
		return;
	if (abi > BPFBOX_LANDLOCK_ABI_MAX)
		abi = BPFBOX_LANDLOCK_ABI_MAX;
	r->abi = abi;
	r->fs = ((LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1) | LANDLOCK_ACCESS_FS_REFER |
		LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV |
		LANDLOCK_ACCESS_FS_RESOLVE_UNIX;
	r->net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP |
		 LANDLOCK_ACCESS_NET_BIND_UDP | LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP;
	r->scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	r->restrict_flags = LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF |
			    LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON |
			    LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF;

	/* The one place where rights are stripped by ABI, newest first. */
	switch (abi) {
	case 1:
		/* ABI 1 cannot link or rename across directories. */
		r->fs &= ~LANDLOCK_ACCESS_FS_REFER;
		/* fall through */
	case 2:
		/* truncate(2) and O_TRUNC arrived in ABI 3. */
		r->fs &= ~LANDLOCK_ACCESS_FS_TRUNCATE;
		/* fall through */
	case 3:
		/* TCP bind and connect rules arrived in ABI 4. */
		r->net = 0;
		/* fall through */
	case 4:
		/* ioctl on character and block devices arrived in ABI 5. */
		r->fs &= ~LANDLOCK_ACCESS_FS_IOCTL_DEV;
		/* fall through */
	case 5:
		/* Abstract unix socket and signal scoping arrived in ABI 6. */
		r->scoped = 0;
		/* fall through */
	case 6:
		/* Audit logging flags for restrict_self arrived in ABI 7. */
		r->restrict_flags = 0;
		/* fall through */
	case 7:
		/*
		 * ABI 8 adds RESTRICT_SELF_TSYNC: not used, the child that
		 * restricts itself has one thread.
		 */
		/* fall through */
	case 8:
		/* connect(2)/sendmsg(2) to pathname unix sockets arrived in ABI 9. */
		r->fs &= ~LANDLOCK_ACCESS_FS_RESOLVE_UNIX;
		/* fall through */
	case 9:
		/* UDP bind and connect/send rules arrived in ABI 10 (and quiet rules, not used). */
		r->net &= ~(LANDLOCK_ACCESS_NET_BIND_UDP | LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP);
		/* fall through */
	case 10:
		/*
		 * ABI 11 adds RESTRICT_SELF_NO_NEW_PRIVS: not used, the child sets
		 * no_new_privs before Landlock anyway (seccomp needs it too).
		 */
		/* fall through */
	default:
		break;
	}
}

void landlock_rights_describe(const struct landlock_rights *r, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
#define ADD(cond, name)                                                                       \
	do {                                                                                  \
		if ((cond) && len < size)                                                     \
			len += snprintf(buf + len, size - len, "%s%s", len ? "," : "", name); \
	} while (0)
	ADD(r->fs, "fs");
	ADD(r->fs & LANDLOCK_ACCESS_FS_REFER, "refer");
	ADD(r->fs & LANDLOCK_ACCESS_FS_TRUNCATE, "truncate");
	ADD(r->net & LANDLOCK_ACCESS_NET_BIND_TCP, "tcp_bind");
	ADD(r->net & LANDLOCK_ACCESS_NET_CONNECT_TCP, "tcp_connect");
	ADD(r->fs & LANDLOCK_ACCESS_FS_IOCTL_DEV, "ioctl_dev");
	ADD(r->fs & LANDLOCK_ACCESS_FS_RESOLVE_UNIX, "resolve_unix");
	ADD(r->net & LANDLOCK_ACCESS_NET_BIND_UDP, "udp_bind");
	ADD(r->net & LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP, "udp_connect_send");
	ADD(r->scoped & LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, "scope_abstract_unix");
	ADD(r->scoped & LANDLOCK_SCOPE_SIGNAL, "scope_signal");
	ADD(r->restrict_flags, "log_flags");
#undef ADD
}
