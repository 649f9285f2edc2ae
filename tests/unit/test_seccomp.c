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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox/seccomp.h"
#include "lib/util.h"
#include "scratch.h"
#include "unit_main.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_TIPC
#define AF_TIPC 30
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define NETLINK_AUDIT	  9
#define NETLINK_SOCK_DIAG 4

/* The scratch directory of the file cases (SCRATCH_FIXTURES). */
static char dir[64];
SCRATCH_FIXTURES(dir, "seccomp")

/* A name in the scratch directory: each call its own of 4 buffers. */
static const char *at(const char *name)
{
	static char buf[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

/* Runs fn in a child under the filter: the errno it failed with, 0 on success. */
static int errno_under(enum seccomp_net net, long (*fn)(void))
{
	int status;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || seccomp_install(seccomp_program(net)))
			_exit(250);
		errno = 0;
		long r = fn();

		_exit(r < 0 ? (errno & 0xff) : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

#define OPEN_NET     SECCOMP_NET_OPEN
#define ERRNO_OF(fn) errno_under(OPEN_NET, fn)

static long personality_linux32(void)
{
	return syscall(SYS_personality, 0x0008);
}
static long personality_zero(void)
{
	return syscall(SYS_personality, 0);
}
static long personality_query(void)
{
	return syscall(SYS_personality, 0xffffffffUL);
}
static long personality_highbit(void)
{
	return syscall(SYS_personality, 0x80000000UL);
}

static void test_personality(void **state)
{
	(void)state;
	assert_int_equal(ERRNO_OF(personality_linux32), EPERM);
	assert_int_equal(ERRNO_OF(personality_highbit), EPERM);
	assert_int_equal(ERRNO_OF(personality_zero), 0);
	assert_int_equal(ERRNO_OF(personality_query), 0);
}

static long tiocsti_high_bits(void)
{
	return syscall(SYS_ioctl, open("/dev/null", O_RDONLY), 0xdead00000000UL | TIOCSTI, "x");
}

static void test_tiocsti_masked(void **state)
{
	(void)state;
	/* Without the filter this would be ENOTTY from /dev/null. */
	assert_int_equal(ERRNO_OF(tiocsti_high_bits), EPERM);
}

static long do_clone3(void)
{
	return syscall(SYS_clone3, NULL, 0);
}
static long clone_newuser(void)
{
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);

	if (r == 0)
		_exit(0);
	return r;
}
static long unshare_ns(void)
{
	return unshare(CLONE_NEWNS);
}

static void test_namespaces(void **state)
{
	(void)state;
	assert_int_equal(ERRNO_OF(do_clone3), ENOSYS);
	assert_int_equal(ERRNO_OF(clone_newuser), EPERM);
	assert_int_equal(ERRNO_OF(unshare_ns), EPERM);
}

static long sock_inet(void)
{
	return socket(AF_INET, SOCK_STREAM, 0);
}
static long sock_inet6(void)
{
	return socket(AF_INET6, SOCK_DGRAM, 0);
}
static long sock_unix(void)
{
	return socket(AF_UNIX, SOCK_STREAM, 0);
}
static long sock_vsock(void)
{
	return socket(AF_VSOCK, SOCK_STREAM, 0);
}
static long sock_netlink_route(void)
{
	return socket(AF_NETLINK, SOCK_DGRAM, 0);
}
static long sock_netlink_audit(void)
{
	return socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
}
static long sock_packet(void)
{
	return socket(AF_PACKET, SOCK_DGRAM, 0);
}
static long sock_unspec(void)
{
	return socket(AF_UNSPEC, SOCK_STREAM, 0);
}
/* AF_INET in the low 32 bits the kernel reads, a high bit set above. */
static long sock_inet_high_bits(void)
{
	return syscall(SYS_socket, 0x100000000UL | AF_INET, SOCK_STREAM, 0);
}
static long pair_tipc(void)
{
	int sv[2];

	return socketpair(AF_TIPC, SOCK_SEQPACKET, 0, sv);
}
static long pair_unix(void)
{
	int sv[2];

	return socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
}
static long do_getpid(void)
{
	return getpid();
}

static void test_network(void **state)
{
	(void)state;
	assert_int_equal(errno_under(SECCOMP_NET_DENY, sock_inet), EPERM);
	assert_int_equal(errno_under(SECCOMP_NET_DENY, sock_unix), 0);
	assert_int_equal(errno_under(SECCOMP_NET_DENY, do_getpid), 0);
	assert_int_equal(errno_under(SECCOMP_NET_OPEN, sock_inet), 0);
	assert_int_equal(errno_under(SECCOMP_NET_OPEN, sock_netlink_route), 0);
}

/* --net-allow: inet and unix sockets only. */
static void test_network_inet(void **state)
{
	long (*const refused[])(void) = {sock_vsock,  sock_netlink_route, sock_netlink_audit,
					 sock_packet, sock_unspec,	  sock_inet_high_bits};

	(void)state;
	assert_int_equal(errno_under(SECCOMP_NET_INET, sock_inet), 0);
	assert_int_equal(errno_under(SECCOMP_NET_INET, sock_inet6), 0);
	assert_int_equal(errno_under(SECCOMP_NET_INET, sock_unix), 0);
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		assert_int_equal(errno_under(SECCOMP_NET_INET, refused[i]), EPERM);
	for (int net = 0; net < SECCOMP_NET_COUNT; net++) {
		assert_int_equal(errno_under(net, pair_tipc), EPERM);
		assert_int_equal(errno_under(net, pair_unix), 0);
	}
}

static long chmod_suid(void)
{
	return chmod(at("f"), 04755);
}
static long chmod_sgid(void)
{
	return chmod(at("f"), 02755);
}
/* The kernel reads a 16-bit mode: bits above it must not dodge the rule. */
static long chmod_suid_high_bits(void)
{
	return syscall(SYS_fchmodat, AT_FDCWD, at("f"), 0x7fff0000UL | 04755);
}
static long chmod_plain(void)
{
	return chmod(at("f"), 0755);
}
static long fchmod_suid(void)
{
	return fchmod(open(at("f"), O_RDONLY), 04755);
}
static long fchmodat_sgid(void)
{
	return syscall(SYS_fchmodat, AT_FDCWD, at("f"), 02755);
}
/* The number whether or not this kernel has it (6.6): the filter answers first. */
static long fchmodat2_suid(void)
{
	return syscall(452, AT_FDCWD, at("f"), 04755, 0);
}
static long open_creat_suid(void)
{
#ifdef SYS_open
	return syscall(SYS_open, at("new"), O_WRONLY | O_CREAT, 04755);
#else
	return syscall(SYS_openat, AT_FDCWD, at("new"), O_WRONLY | O_CREAT, 04755);
#endif
}
static long openat_creat_sgid(void)
{
	return syscall(SYS_openat, AT_FDCWD, at("new"), O_WRONLY | O_CREAT | O_EXCL, 02700);
}
static long openat_tmpfile_suid(void)
{
	return syscall(SYS_openat, AT_FDCWD, dir, O_TMPFILE | O_WRONLY, 04700);
}
/* Without O_CREAT the kernel ignores the mode: the open must work. */
static long open_existing_mode_ignored(void)
{
	return syscall(SYS_openat, AT_FDCWD, at("f"), O_RDONLY, 04755);
}
static long creat_suid(void)
{
	return creat(at("new"), 04755);
}
static long mknod_reg_suid(void)
{
	return syscall(SYS_mknodat, AT_FDCWD, at("new"), S_IFREG | 04755, 0);
}
static long mknod_fifo_sgid(void)
{
#ifdef SYS_mknod
	return syscall(SYS_mknod, at("new"), S_IFIFO | 02644, 0);
#else
	return syscall(SYS_mknodat, AT_FDCWD, at("new"), S_IFIFO | 02644, 0);
#endif
}
static long openat2_any(void)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = {O_RDONLY, 0, 0};

	return syscall(SYS_openat2, AT_FDCWD, at("f"), &how, sizeof(how));
}
static long mkdir_setgid(void)
{
	return mkdir(at("d"), 02755);
}

/* No set-uid or set-gid file by any call, in every network variant. */
static void test_setid(void **state)
{
	long (*const refused[])(void) = {chmod_suid,	  chmod_sgid,	     chmod_suid_high_bits,
					 fchmod_suid,	  fchmodat_sgid,     fchmodat2_suid,
					 open_creat_suid, openat_creat_sgid, openat_tmpfile_suid,
					 creat_suid,	  mknod_reg_suid,    mknod_fifo_sgid};
	struct stat st;
	int fd;

	(void)state;
	fd = open(at("f"), O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	for (int net = 0; net < SECCOMP_NET_COUNT; net++)
		for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
			assert_int_equal(errno_under(net, refused[i]), EPERM);
	assert_int_equal(stat(at("f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(access(at("new"), F_OK), -1);
	assert_int_equal(ERRNO_OF(open_existing_mode_ignored), 0);
	assert_int_equal(ERRNO_OF(openat2_any), ENOSYS);
	assert_int_equal(ERRNO_OF(chmod_plain), 0);
	assert_int_equal(stat(at("f"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	/* mkdir keeps no set-id bit of its mode (the kernel drops them). */
	assert_int_equal(ERRNO_OF(mkdir_setgid), 0);
	assert_int_equal(stat(at("d"), &st), 0);
	assert_int_equal(st.st_mode & (S_ISUID | S_ISGID), 0);
}

UNIT_MAIN(cmocka_unit_test(test_personality), cmocka_unit_test(test_tiocsti_masked),
	  cmocka_unit_test(test_namespaces), cmocka_unit_test(test_network),
	  cmocka_unit_test(test_network_inet),
	  cmocka_unit_test_setup_teardown(test_setid, setup, teardown))
