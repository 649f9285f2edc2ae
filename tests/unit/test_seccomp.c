// SPDX-License-Identifier: GPL-2.0
/*
 * The seccomp filters bpfbox ships (compiled at build time), against the
 * real kernel: each case forks, installs the filter in the child and
 * reports what the syscall returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox/seccomp.h"
#include "lib/util.h"
#include "unit_main.h"

enum probe_call {
	CALL_PERSONALITY_LINUX32,
	CALL_PERSONALITY_ZERO,
	CALL_PERSONALITY_QUERY,
	CALL_PERSONALITY_HIGHBIT,
	CALL_TIOCSTI_HIGH_BITS,
	CALL_CLONE3,
	CALL_CLONE_NEWUSER,
	CALL_SOCKET_INET,
	CALL_SOCKET_UNIX,
	CALL_SOCKET_INET6,
	CALL_SOCKET_NETLINK,
	CALL_SOCKET_PACKET,
	CALL_SOCKET_VSOCK,
	CALL_SOCKET_UNSPEC,
	CALL_SOCKET_INET_HIGH_BITS,
	CALL_UNSHARE,
	CALL_GETPID,
};

/* Returns the errno the call failed with in a filtered child, 0 on success. */
static int errno_in_filtered_child(enum probe_call call, enum seccomp_net deny_net)
{
	int status, fd;
	long r = 0;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    seccomp_install(seccomp_program(deny_net)))
			_exit(250);
		switch (call) {
		case CALL_PERSONALITY_LINUX32:
			r = syscall(SYS_personality, 0x0008);
			break;
		case CALL_PERSONALITY_ZERO:
			r = syscall(SYS_personality, 0);
			break;
		case CALL_PERSONALITY_QUERY:
			r = syscall(SYS_personality, 0xffffffffUL);
			break;
		case CALL_PERSONALITY_HIGHBIT:
			r = syscall(SYS_personality, 0x80000000UL);
			break;
		case CALL_TIOCSTI_HIGH_BITS:
			fd = open("/dev/null", O_RDONLY);
			r = syscall(SYS_ioctl, fd, 0xdead00000000UL | TIOCSTI, "x");
			break;
		case CALL_CLONE3:
			r = syscall(SYS_clone3, NULL, 0);
			break;
		case CALL_CLONE_NEWUSER:
			r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
			if (r == 0)
				_exit(0);
			break;
		case CALL_SOCKET_INET:
			r = socket(AF_INET, SOCK_STREAM, 0);
			break;
		case CALL_SOCKET_UNIX:
			r = socket(AF_UNIX, SOCK_STREAM, 0);
			break;
		case CALL_SOCKET_INET6:
			r = socket(AF_INET6, SOCK_DGRAM, 0);
			break;
		case CALL_SOCKET_NETLINK:
			r = socket(AF_NETLINK, SOCK_RAW, 0);
			break;
		case CALL_SOCKET_PACKET:
			r = socket(AF_PACKET, SOCK_DGRAM, 0);
			break;
		case CALL_SOCKET_VSOCK:
			r = socket(AF_VSOCK, SOCK_STREAM, 0);
			break;
		case CALL_SOCKET_UNSPEC:
			r = socket(AF_UNSPEC, SOCK_STREAM, 0);
			break;
		case CALL_SOCKET_INET_HIGH_BITS:
			/* The kernel reads an int: AF_NETLINK with bits above it set. */
			r = syscall(SYS_socket, 0x100000000UL | AF_NETLINK, SOCK_RAW, 0);
			break;
		case CALL_UNSHARE:
			r = unshare(CLONE_NEWNS);
			break;
		case CALL_GETPID:
			r = getpid();
			break;
		}
		_exit(r < 0 ? (errno & 0xff) : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_personality(void **state)
{
	(void)state;
	assert_int_equal(errno_in_filtered_child(CALL_PERSONALITY_LINUX32, false), EPERM);
	assert_int_equal(errno_in_filtered_child(CALL_PERSONALITY_HIGHBIT, false), EPERM);
	assert_int_equal(errno_in_filtered_child(CALL_PERSONALITY_ZERO, false), 0);
	assert_int_equal(errno_in_filtered_child(CALL_PERSONALITY_QUERY, false), 0);
}

static void test_tiocsti_masked(void **state)
{
	(void)state;
	/* Without the filter this would be ENOTTY from /dev/null. */
	assert_int_equal(errno_in_filtered_child(CALL_TIOCSTI_HIGH_BITS, false), EPERM);
}

static void test_namespaces(void **state)
{
	(void)state;
	assert_int_equal(errno_in_filtered_child(CALL_CLONE3, false), ENOSYS);
	assert_int_equal(errno_in_filtered_child(CALL_CLONE_NEWUSER, false), EPERM);
	assert_int_equal(errno_in_filtered_child(CALL_UNSHARE, false), EPERM);
}

static void test_network(void **state)
{
	(void)state;
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_INET, true), EPERM);
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_UNIX, true), 0);
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_INET, false), 0);
	assert_int_equal(errno_in_filtered_child(CALL_GETPID, true), 0);
}

/* The session's own network namespace: inet sockets, nothing else but unix. */
static void test_network_loopback(void **state)
{
	static const enum probe_call denied[] = {CALL_SOCKET_NETLINK, CALL_SOCKET_PACKET,
						 CALL_SOCKET_VSOCK, CALL_SOCKET_UNSPEC,
						 CALL_SOCKET_INET_HIGH_BITS};

	(void)state;
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_INET, SECCOMP_NET_LOOPBACK), 0);
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_INET6, SECCOMP_NET_LOOPBACK), 0);
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_UNIX, SECCOMP_NET_LOOPBACK), 0);
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		assert_int_equal(errno_in_filtered_child(denied[i], SECCOMP_NET_LOOPBACK), EPERM);
	/* The rest of the deny list holds in this variant too. */
	assert_int_equal(errno_in_filtered_child(CALL_UNSHARE, SECCOMP_NET_LOOPBACK), EPERM);
	assert_int_equal(errno_in_filtered_child(CALL_SOCKET_INET6, SECCOMP_NET_DENY), EPERM);
}

UNIT_MAIN(cmocka_unit_test(test_personality), cmocka_unit_test(test_tiocsti_masked),
	  cmocka_unit_test(test_namespaces), cmocka_unit_test(test_network),
	  cmocka_unit_test(test_network_loopback))
