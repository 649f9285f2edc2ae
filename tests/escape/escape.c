// SPDX-License-Identifier: GPL-2.0
/*
 * escape: the attack programs of tests/host/test_escape.sh, one binary.
 *
 *   escape ATTACK [ARGS...]
 *
 * Each attack is made of one or more probes. A probe says what it tried and
 * what the kernel answered. The exit status is the verdict:
 *   0  every probe was stopped, each with the errno the sandbox layer that
 *      should stop it returns (EACCES: Landlock fs, EPERM: seccomp, ...);
 *   1  at least one probe succeeded: the attack worked;
 *   2  a probe failed, but not for the expected reason (or the attack could
 *      not be set up), so the test proves nothing.
 * Attacks that the sandbox must answer with SIGSYS (foreign syscall ABIs) do
 * not return at all; the test asserts the exit status 159 from the outside.
 *
 * Many probes use arguments that the kernel alone would reject with another
 * errno (EBADF, EFAULT, EINVAL, ENOTTY, ESRCH), or that the kernel alone would
 * accept: then EPERM can only come from the seccomp filter. Such probes are
 * marked "discriminating"; the others also fail for lack of capabilities.
 *
 * Nothing here does damage when it "succeeds": files opened for writing are
 * only written when they are the test's own planted files, syscalls are
 * called with arguments that are no-ops or invalid.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/types.h>
#include <sys/shm.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

/*
 * Built with -fsanitize=address (make test-asan), LeakSanitizer would stop
 * the world with ptrace at exit, which the sandbox denies, and turn every
 * verdict into a failure: leak checking is off for these programs.
 */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return 1;
}

/* The verdict so far: 0 stopped, 2 other reason, 1 escaped (wins). */
static int verdict;

/*
 * BPFBOX_ESCAPE_NS=1 (the test passes it with --env when the session has its
 * namespaces): a path outside is not there (ENOENT) or read-only (EROFS)
 * before Landlock is asked, and a process outside is not visible (ESRCH).
 * Only Landlock's own answers (EACCES, EXDEV, the signal scope's EPERM) may
 * be replaced so; seccomp's EPERM must stay EPERM.
 */
static bool ns_answer(int err, int want, const char *layer)
{
	const char *ns = getenv("BPFBOX_ESCAPE_NS");

	if (!ns || strcmp(ns, "1"))
		return false;
	if (want == EACCES || want == EXDEV)
		return err == ENOENT || err == EROFS;
	return want == EPERM && strstr(layer, "scope_signal") && err == ESRCH;
}

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static void note(int v)
{
	if (v == 1 || (v == 2 && verdict == 0))
		verdict = v;
}

/*
 * probe: records one attempt. rc < 0 means it failed with errno err; want is
 * the errno of the layer that must stop it (0: any failure is a stop).
 */
static void probe(const char *what, long rc, int err, int want, const char *layer)
{
	if (rc >= 0) {
		printf("ESCAPED: %s succeeded (returned %ld)\n", what, rc);
		note(1);
	} else if (want == 0 || err == want) {
		printf("stopped: %s: %s (%s)\n", what, ename(err), layer);
	} else if (ns_answer(err, want, layer)) {
		printf("stopped: %s: %s (namespaces, before %s)\n", what, ename(err), layer);
	} else {
		printf("OTHER: %s failed with %s (%s), expected %s from %s\n", what, ename(err),
		       strerror(err), ename(want), layer);
		note(2);
	}
	fflush(stdout);
}

/* Like probe, for raw syscall(2) results. */
#define PROBE(what, call, want, layer)             \
	do {                                       \
		errno = 0;                         \
		long rc_ = (long)(call);           \
		int e_ = errno;                    \
		probe(what, rc_, e_, want, layer); \
	} while (0)

static int setup_error(const char *what)
{
	printf("SETUP: %s: %s (%s)\n", what, ename(errno), strerror(errno));
	return 2;
}

/*
 * The open of a file attack: opens PATH with FLAGS (made 0644 with
 * O_CREAT), which layer must refuse with EACCES. Where the open works, it
 * writes MARK to the file, or (MARK NULL) shows the first line it reads.
 */
static int open_probe(const char *what, const char *path, int flags, const char *mark,
		      const char *layer)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);
	int e = errno;

	if (fd >= 0 && mark) {
		dprintf(fd, "%s\n", mark);
	} else if (fd >= 0) {
		char buf[128];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		if (n > 0) {
			buf[n] = 0;
			buf[strcspn(buf, "\r\n")] = 0;
			printf("read %zd bytes of %s: %.40s\n", n, path, buf);
		}
	}
	if (fd >= 0)
		close(fd);
	probe(what, fd, e, EACCES, layer);
	return verdict;
}

static int need_args(int argc, int n, const char *usage)
{
	if (argc < n) {
		fprintf(stderr, "usage: escape %s\n", usage);
		exit(2);
	}
	return 0;
}

/* --- filesystem (Landlock) --------------------------------------------- */

/* create PATH: a new file outside the writable dirs. */
static int a_create(int argc, char **argv)
{
	need_args(argc, 3, "create PATH");
	return open_probe("open(O_CREAT) outside the workspace", argv[2],
			  O_WRONLY | O_CREAT | O_EXCL,
			  "bpfbox escape: created from inside the sandbox", "Landlock fs");
}

/* open-w PATH: opens an existing file for writing; writes nothing. */
static int a_open_w(int argc, char **argv)
{
	need_args(argc, 3, "open-w PATH");
	int fd = open(argv[2], O_WRONLY | O_CLOEXEC);
	int e = errno;

	if (fd >= 0)
		close(fd);
	probe("open(O_WRONLY) of a file outside the writable dirs", fd, e, EACCES, "Landlock fs");
	return verdict;
}

/* append PATH: appends a marker line to an existing (planted) file. */
static int a_append(int argc, char **argv)
{
	need_args(argc, 3, "append PATH");
	return open_probe("open(O_APPEND) and write", argv[2], O_WRONLY | O_APPEND, "ESCAPED",
			  "Landlock fs");
}

/* read PATH: reads a file (or lists a directory) outside the readable dirs. */
static int a_read(int argc, char **argv)
{
	need_args(argc, 3, "read PATH");
	/* O_NONBLOCK: a terminal or FIFO must not block the read. */
	return open_probe("open(O_RDONLY) outside the readable dirs", argv[2],
			  O_RDONLY | O_NONBLOCK | O_NOCTTY, NULL, "Landlock fs");
}

/*
 * symlink-write TARGET LINK: plants LINK -> TARGET in the workspace (allowed)
 * and writes through it (must be denied: Landlock checks the resolved path).
 */
static int a_symlink_write(int argc, char **argv)
{
	need_args(argc, 4, "symlink-write TARGET LINK");
	if (symlink(argv[2], argv[3]) < 0)
		return setup_error("symlink in the workspace");
	return open_probe("write through a workspace symlink to an outside file", argv[3],
			  O_WRONLY | O_APPEND | O_CREAT, "ESCAPED through a symlink",
			  "Landlock fs");
}

/*
 * hardlink SRC DST: links an outside file into the workspace. Landlock
 * denies a link that would give the file more rights at its new place than
 * at its old one ("refer" rule) with EXDEV; both paths are on the same
 * filesystem (the test checks that with a control link outside the sandbox)
 * so the VFS itself has no reason for EXDEV.
 */
static int a_hardlink(int argc, char **argv)
{
	need_args(argc, 4, "hardlink SRC DST");
	int rc = link(argv[2], argv[3]);
	int e = errno;

	if (rc == 0) {
		int fd = open(argv[3], O_WRONLY | O_APPEND | O_CLOEXEC);

		if (fd >= 0) {
			dprintf(fd, "ESCAPED through a hard link\n");
			close(fd);
			printf("wrote the outside file through the hard link\n");
		}
	}
	probe("link() of an outside file into the workspace", rc, e, EXDEV, "Landlock refer rule");
	return verdict;
}

/* rename SRC DST: moves a workspace file out of the workspace. */
static int a_rename(int argc, char **argv)
{
	need_args(argc, 4, "rename SRC DST");
	int rc = rename(argv[2], argv[3]);

	probe("rename() of a workspace file to outside", rc, errno, EACCES, "Landlock fs");
	return verdict;
}

/* truncate PATH: truncate(2) of an outside file (Landlock ABI >= 3). */
static int a_truncate(int argc, char **argv)
{
	need_args(argc, 3, "truncate PATH");
	int rc = truncate(argv[2], 0);

	probe("truncate() of an outside file", rc, errno, EACCES, "Landlock truncate right");
	return verdict;
}

/* exec PATH: execve of a program outside the executable dirs. */
static int a_exec(int argc, char **argv)
{
	need_args(argc, 3, "exec PATH");
	char *args[] = {argv[2], (char *)"exec-landed", NULL};

	execv(argv[2], args);
	probe("execve() of a program outside the allowed dirs", -1, errno, EACCES,
	      "Landlock fs execute");
	return verdict;
}

/* exec-landed: what a copy of this program does once exec'ed (escape). */
static int a_exec_landed(int argc, char **argv)
{
	(void)argc;
	printf("ESCAPED: %s ran\n", argv[0]);
	return 1;
}

/* --- terminal ioctls (seccomp) ----------------------------------------- */

static char inject = '#';

/*
 * Without the filter, TIOCSTI/TIOCLINUX on /dev/null fail with ENOTTY, so
 * EPERM proves the seccomp filter. The second probe sets bits above 31 in the
 * command: the kernel truncates it to an unsigned int, so a filter comparing
 * all 64 bits would let it through.
 */
static void tty_ioctl_filter_probes(unsigned long cmd, const char *name)
{
	char what[128];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		setup_error("open /dev/null");
		note(2);
		return;
	}
	snprintf(what, sizeof(what), "ioctl(%s) on /dev/null (discriminating)", name);
	PROBE(what, syscall(SYS_ioctl, fd, cmd, &inject), EPERM, "seccomp");
	snprintf(what, sizeof(what), "ioctl(%s | 1<<32) on /dev/null (discriminating)", name);
	PROBE(what, syscall(SYS_ioctl, fd, cmd | (1UL << 32), &inject), EPERM, "seccomp");
	close(fd);
}

/* tiocsti-notty: the filter probes only. */
static int a_tiocsti_notty(int argc, char **argv)
{
	(void)argc, (void)argv;
	tty_ioctl_filter_probes(TIOCSTI, "TIOCSTI");
	return verdict;
}

/*
 * Runs probes in a child of ours (a new session or a tracee must not be
 * this process) and notes the child's verdict as its own.
 */
static int in_child(void (*probes)(void))
{
	int st;

	fflush(stdout);
	pid_t pid = fork();

	if (pid < 0)
		return setup_error("fork");
	if (pid == 0) {
		verdict = 0;
		probes();
		fflush(stdout);
		_exit(verdict);
	}
	if (waitpid(pid, &st, 0) < 0)
		return setup_error("waitpid");
	note(WIFEXITED(st) ? WEXITSTATUS(st) : 2);
	return verdict;
}

/* TIOCSTI from a new session whose controlling terminal stdin becomes. */
static void tiocsti_probes(void)
{
	if (setsid() < 0)
		printf("note: setsid: %s\n", ename(errno));
	if (ioctl(0, TIOCSCTTY, 0) < 0)
		printf("note: TIOCSCTTY failed (%s): the EPERM below is not "
		       "discriminating\n",
		       ename(errno));
	PROBE("ioctl(TIOCSTI) on the terminal", ioctl(0, TIOCSTI, &inject), EPERM, "seccomp");
	PROBE("ioctl(TIOCSTI | 1<<32) on the terminal",
	      syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &inject), EPERM,
	      "seccomp");
}

/*
 * tiocsti: stdin must be a terminal that is nobody's controlling terminal
 * (helper pty). A child makes it its controlling terminal (setsid +
 * TIOCSCTTY, allowed to anyone for a terminal without a session) and pushes
 * a character into its input with TIOCSTI: the kernel alone allows that
 * (dev.tty.legacy_tiocsti=1) or answers EIO (=0), so EPERM is the filter.
 */
static int a_tiocsti(int argc, char **argv)
{
	(void)argc, (void)argv;
	tty_ioctl_filter_probes(TIOCSTI, "TIOCSTI");
	if (!isatty(0)) {
		printf("SETUP: stdin is not a terminal inside the sandbox\n");
		return verdict == 1 ? 1 : 2;
	}
	return in_child(tiocsti_probes);
}

/* tioclinux: on a pty or /dev/null the kernel answers ENOTTY/EINVAL. */
static int a_tioclinux(int argc, char **argv)
{
	(void)argc, (void)argv;
	char sub[2] = {7 /* TIOCL_GETMOUSEREPORTING */, 0};

	inject = sub[0];
	tty_ioctl_filter_probes(TIOCLINUX, "TIOCLINUX");
	if (isatty(0)) {
		PROBE("ioctl(TIOCLINUX) on the terminal (discriminating)", ioctl(0, TIOCLINUX, sub),
		      EPERM, "seccomp");
	}
	return verdict;
}

/* --- dangerous kernel interfaces (seccomp) ----------------------------- */

/* io_uring: can bypass every per-syscall filter, so denied outright. */
static int a_io_uring(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	long fd = syscall(SYS_io_uring_setup, 4, &p);
	int e = errno;

	if (fd >= 0)
		close((int)fd);
	probe("io_uring_setup(4) (discriminating: kernel.io_uring_disabled=0 allows it)", fd, e,
	      EPERM, "seccomp");
	PROBE("io_uring_enter(-1) (discriminating: kernel says EBADF)",
	      syscall(SYS_io_uring_enter, -1, 1, 0, 0, NULL, 0), EPERM, "seccomp");
	PROBE("io_uring_register(-1) (discriminating: kernel says EBADF or EINVAL)",
	      syscall(SYS_io_uring_register, -1, 0, NULL, 0), EPERM, "seccomp");
	return verdict;
}

/* PTRACE_TRACEME, in a child: the kernel would allow it. */
static void traceme_probes(void)
{
	PROBE("ptrace(PTRACE_TRACEME) (discriminating: the kernel allows it)",
	      ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM, "seccomp");
}

/* ptrace PID: attaches to a process outside the sandbox. */
static int a_ptrace(int argc, char **argv)
{
	need_args(argc, 3, "ptrace PID");
	pid_t target = (pid_t)atoi(argv[2]);

	errno = 0;
	long rc = ptrace(PTRACE_ATTACH, target, NULL, NULL);
	int e = errno;

	if (rc == 0) {
		waitpid(target, NULL, __WALL);
		ptrace(PTRACE_DETACH, target, NULL, NULL);
	}
	probe("ptrace(PTRACE_ATTACH) of a process outside the sandbox", rc, e, EPERM,
	      "seccomp (Landlock refuses it too)");
	PROBE("ptrace(PTRACE_ATTACH, pid 0x3fffffff) (discriminating: kernel says ESRCH)",
	      ptrace(PTRACE_ATTACH, 0x3fffffff, NULL, NULL), EPERM, "seccomp");

	return in_child(traceme_probes);
}

/* vmread PID ADDR LEN: reads another process's memory without ptrace. */
static int a_vmread(int argc, char **argv)
{
	need_args(argc, 5, "vmread PID ADDR LEN");
	pid_t pid = (pid_t)atoi(argv[2]);
	unsigned long addr = strtoul(argv[3], NULL, 0);
	size_t len = strtoul(argv[4], NULL, 0);
	char buf[256];

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	struct iovec l = {buf, len}, r = {(void *)addr, len};

	errno = 0;
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	int e = errno;

	if (n > 0)
		printf("read %zd bytes of the outside process: %.*s\n", n, (int)n, buf);
	probe("process_vm_readv() of a process outside the sandbox", n, e, EPERM,
	      "seccomp (Landlock refuses it too)");

	char mine[16] = "self", copy[16];
	struct iovec ml = {copy, sizeof(copy)}, mr = {mine, sizeof(mine)};

	PROBE("process_vm_readv(self) (discriminating: the kernel allows it)",
	      process_vm_readv(getpid(), &ml, 1, &mr, 1, 0), EPERM, "seccomp");
	PROBE("process_vm_writev(self) (discriminating: the kernel allows it)",
	      process_vm_writev(getpid(), &ml, 1, &mr, 1, 0), EPERM, "seccomp");
	return verdict;
}

/* keyctl: the session/user keyrings are shared with the host's processes. */
static int a_keyctl(int argc, char **argv)
{
	(void)argc, (void)argv;
	PROBE("keyctl(KEYCTL_JOIN_SESSION_KEYRING) (discriminating: the kernel allows it)",
	      syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL), EPERM, "seccomp");
	PROBE("keyctl(KEYCTL_SESSION_TO_PARENT)", syscall(SYS_keyctl, KEYCTL_SESSION_TO_PARENT),
	      EPERM, "seccomp");
	PROBE("keyctl(KEYCTL_GET_KEYRING_ID, user keyring) (discriminating)",
	      syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0), EPERM,
	      "seccomp");
	PROBE("add_key(\"user\") (discriminating: the kernel allows it)",
	      syscall(SYS_add_key, "user", "bpfbox-test", "x", 1, KEY_SPEC_PROCESS_KEYRING), EPERM,
	      "seccomp");
	PROBE("request_key(\"user\") (discriminating: kernel says ENOKEY)",
	      syscall(SYS_request_key, "user", "bpfbox-test-none", NULL, 0), EPERM, "seccomp");
	return verdict;
}

/* bpf: loading programs or maps from inside. */
static int a_bpf(int argc, char **argv)
{
	(void)argc, (void)argv;
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	errno = 0;
	long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
	int e = errno;

	if (fd >= 0)
		close((int)fd);
	probe("bpf(BPF_MAP_CREATE)", fd, e, EPERM, "seccomp (also needs CAP_BPF)");
	memset(&a, 0, sizeof(a));
	PROBE("bpf(cmd 9999) (discriminating: kernel says EINVAL)",
	      syscall(SYS_bpf, 9999, &a, sizeof(a)), EPERM, "seccomp");
	return verdict;
}

/* perf_event_open: side channels, kernel attack surface. */
static int a_perf(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct perf_event_attr pa;

	PROBE("perf_event_open(NULL) (discriminating: kernel says EFAULT)",
	      syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM, "seccomp");
	memset(&pa, 0, sizeof(pa));
	pa.type = PERF_TYPE_SOFTWARE;
	pa.size = sizeof(pa);
	pa.config = PERF_COUNT_SW_CPU_CLOCK;
	pa.disabled = 1;
	pa.exclude_kernel = 1;
	pa.exclude_hv = 1;
	errno = 0;
	long fd = syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
	int e = errno;

	if (fd >= 0)
		close((int)fd);
	probe("perf_event_open(cpu-clock, self, user only) (discriminating: the kernel "
	      "allows it or says EACCES)",
	      fd, e, EPERM, "seccomp");
	return verdict;
}

/* userfaultfd: the classic way to win kernel races. */
static int a_userfaultfd(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct stat st;

	errno = 0;
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	int e = errno;

	if (fd >= 0)
		close((int)fd);
	probe("userfaultfd(UFFD_USER_MODE_ONLY) (discriminating: the kernel allows it)", fd, e,
	      EPERM, "seccomp");
	PROBE("userfaultfd(0)", syscall(SYS_userfaultfd, O_CLOEXEC), EPERM, "seccomp");
	if (stat("/dev/userfaultfd", &st) == 0) {
		errno = 0;
		int dfd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		e = errno;
		if (dfd >= 0)
			close(dfd);
		probe("open(/dev/userfaultfd)", dfd, e, EACCES,
		      "Landlock fs (not an allowed /dev node)");
	}
	return verdict;
}

/* unshare [DIR]: a user namespace gives every capability inside it. */
static int a_unshare(int argc, char **argv)
{
	const char *dir = argc > 2 ? argv[2] : "/tmp";

	errno = 0;
	int rc = unshare(CLONE_NEWUSER);
	int e = errno;

	if (rc == 0) {
		if (unshare(CLONE_NEWNS) == 0 && mount("none", dir, "tmpfs", 0, NULL) == 0)
			printf("ESCAPED: mounted a tmpfs on %s in a new user+mount namespace\n",
			       dir);
		else
			printf("in a new user namespace; the mount failed: %s\n", ename(errno));
	}
	probe("unshare(CLONE_NEWUSER) (discriminating where unprivileged user namespaces "
	      "are enabled)",
	      rc, e, EPERM, "seccomp");
	PROBE("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS), EPERM, "seccomp");
	PROBE("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET), EPERM, "seccomp");

	fflush(stdout);
	errno = 0;
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);

	if (pid == 0)
		syscall(SYS_exit_group, 0);
	e = errno;
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	probe("clone(CLONE_NEWUSER) (discriminating)", pid, e, EPERM, "seccomp");

	struct clone_args ca;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWUSER;
	ca.exit_signal = SIGCHLD;
	errno = 0;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		syscall(SYS_exit_group, 0);
	e = errno;
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	probe("clone3(CLONE_NEWUSER) (discriminating)", pid, e, ENOSYS,
	      "seccomp (ENOSYS so that libc falls back to clone)");
	PROBE("clone3(NULL, 0) (discriminating: kernel says EINVAL)", syscall(SYS_clone3, NULL, 0),
	      ENOSYS, "seccomp");
	PROBE("setns(-1) (discriminating: kernel says EBADF)", syscall(SYS_setns, -1, 0), EPERM,
	      "seccomp");
	return verdict;
}

/* mount DIR: mount and its friends. */
static int a_mount(int argc, char **argv)
{
	need_args(argc, 3, "mount DIR");
	errno = 0;
	int rc = mount("none", argv[2], "tmpfs", 0, NULL);
	int e = errno;

	if (rc == 0)
		umount2(argv[2], MNT_DETACH); /* do not leave it behind */
	probe("mount(tmpfs) on a workspace dir", rc, e, EPERM,
	      "seccomp (also needs CAP_SYS_ADMIN)");
	PROBE("mount() on a missing dir (discriminating: kernel says ENOENT)",
	      mount("none", "/bpfbox-no-such-dir", "tmpfs", 0, NULL), EPERM, "seccomp");
	PROBE("umount2() of a missing dir (discriminating: kernel says ENOENT)",
	      umount2("/bpfbox-no-such-dir", 0), EPERM, "seccomp");
	PROBE("fsopen(tmpfs)", syscall(SYS_fsopen, "tmpfs", 0), EPERM,
	      "seccomp (also needs CAP_SYS_ADMIN)");
	PROBE("move_mount()", syscall(SYS_move_mount, -1, "", -1, "", 0), EPERM,
	      "seccomp (also needs CAP_SYS_ADMIN)");
	PROBE("pivot_root()", syscall(SYS_pivot_root, "/bpfbox-no-such-dir", "/bpfbox-no-such-dir"),
	      EPERM, "seccomp (also needs CAP_SYS_ADMIN)");
	return verdict;
}

/* privileged: syscalls that also need a capability; all must be EPERM. */
static int a_privileged(int argc, char **argv)
{
	(void)argc, (void)argv;
	const char *cap = "seccomp (also needs a capability)";

	PROBE("swapon()", syscall(SYS_swapon, "/bpfbox-no-such-file", 0), EPERM, cap);
	PROBE("swapoff()", syscall(SYS_swapoff, "/bpfbox-no-such-file"), EPERM, cap);
	PROBE("reboot(bad magic)", syscall(SYS_reboot, 0xdead, 0xbeef, 0, NULL), EPERM, cap);
	PROBE("acct()", syscall(SYS_acct, "/bpfbox-no-such-file"), EPERM, cap);
	PROBE("kexec_load(bad flags)", syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000UL), EPERM,
	      cap);
	PROBE("kexec_file_load(bad flags)",
	      syscall(SYS_kexec_file_load, -1, -1, 0, "", 0xdead0000UL), EPERM, cap);
	PROBE("init_module(empty)", syscall(SYS_init_module, NULL, 0, ""), EPERM, cap);
	PROBE("finit_module(-1)", syscall(SYS_finit_module, -1, "", 0), EPERM, cap);
	PROBE("delete_module(missing)", syscall(SYS_delete_module, "bpfbox_no_such_module", 0),
	      EPERM, cap);
	PROBE("syslog(SIZE_BUFFER)", syscall(SYS_syslog, 10, NULL, 0), EPERM, cap);
	PROBE("open_by_handle_at(-1)", syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM, cap);
	PROBE("settimeofday(NULL, NULL)", syscall(SYS_settimeofday, NULL, NULL), EPERM, cap);
	return verdict;
}

/* clock: setting the clock; the probes are chosen to be discriminating. */
static int a_clock(int argc, char **argv)
{
	(void)argc, (void)argv;
	struct timespec ts;
	struct timex tx;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	PROBE("clock_settime(CLOCK_MONOTONIC) (discriminating: kernel says EINVAL)",
	      syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts), EPERM, "seccomp");
	memset(&tx, 0, sizeof(tx));
	PROBE("adjtimex(modes=0) (discriminating: the kernel allows reading)",
	      syscall(SYS_adjtimex, &tx), EPERM, "seccomp");
	return verdict;
}

/* personality: only the default persona is allowed. */
static int a_personality(int argc, char **argv)
{
	(void)argc, (void)argv;
	PROBE("personality(ADDR_NO_RANDOMIZE) (discriminating: turns ASLR off)",
	      syscall(SYS_personality, ADDR_NO_RANDOMIZE), EPERM, "seccomp");
	PROBE("personality(READ_IMPLIES_EXEC) (discriminating)",
	      syscall(SYS_personality, READ_IMPLIES_EXEC), EPERM, "seccomp");
	PROBE("personality(PER_LINUX32) (discriminating)", syscall(SYS_personality, PER_LINUX32),
	      EPERM, "seccomp");
	return verdict;
}

/* --- foreign syscall ABIs: the filter must kill (SIGSYS) ----------------- */

/* int80: getpid through the i386 entry point. */
static int a_int80(int argc, char **argv)
{
	(void)argc, (void)argv;
	long ret;

	fflush(stdout);
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "0"(20L)
			 : "rcx", "r8", "r9", "r10", "r11", "memory");
	if (ret == getpid()) {
		printf("ESCAPED: i386 getpid through int $0x80 returned %ld\n", ret);
		return 1;
	}
	printf("OTHER: int $0x80 returned %ld, not killed\n", ret);
	return 2;
}

/* x32: getpid with __X32_SYSCALL_BIT. */
static int a_x32(int argc, char **argv)
{
	(void)argc, (void)argv;
	fflush(stdout);
	errno = 0;
	long ret = syscall(__X32_SYSCALL_BIT | SYS_getpid);

	if (ret == getpid()) {
		printf("ESCAPED: x32 getpid returned %ld\n", ret);
		return 1;
	}
	printf("OTHER: x32 getpid returned %ld (%s), not killed\n", ret, ename(errno));
	return 2;
}

/* --- network ------------------------------------------------------------ */

/*
 * Whether the session has its namespaces (BPFBOX_ESCAPE_NS=1): under --net
 * deny a network namespace of its own too, where inet sockets are allowed
 * and reach only its own loopback (docs/network.md).
 */
static bool in_netns(void)
{
	const char *ns = getenv("BPFBOX_ESCAPE_NS");

	return ns && !strcmp(ns, "1");
}

/* A discriminating inet socket in the session's own network namespace: it must work. */
static void inet_allowed(const char *what, int fd, int err)
{
	if (fd >= 0) {
		printf("allowed: %s (the session's own network namespace)\n", what);
	} else {
		printf("OTHER: %s failed with %s in the session's own network namespace\n", what,
		       ename(err));
		note(2);
	}
	fflush(stdout);
}

/*
 * sockets: every family but AF_UNIX is denied with --net deny; with the
 * namespaces, AF_INET and AF_INET6 are allowed (their own network
 * namespace), raw and ping sockets still fail, every other family EPERM.
 */
static int a_sockets(int argc, char **argv)
{
	(void)argc, (void)argv;
	bool netns = in_netns();
	static const struct {
		int family, type, proto;
		const char *what;
	} socks[] = {
		{AF_INET, SOCK_STREAM, 0, "socket(AF_INET, SOCK_STREAM) (TCP, discriminating)"},
		{AF_INET, SOCK_DGRAM, 0, "socket(AF_INET, SOCK_DGRAM) (UDP, discriminating)"},
		{AF_INET6, SOCK_STREAM, 0, "socket(AF_INET6, SOCK_STREAM) (discriminating)"},
		{AF_INET6, SOCK_DGRAM, 0, "socket(AF_INET6, SOCK_DGRAM) (discriminating)"},
		{AF_INET, SOCK_DGRAM, IPPROTO_ICMP, "socket(AF_INET, SOCK_DGRAM, ICMP) (ping)"},
		{AF_INET, SOCK_RAW, IPPROTO_RAW, "socket(AF_INET, SOCK_RAW)"},
		{AF_PACKET, SOCK_RAW, 0, "socket(AF_PACKET, SOCK_RAW)"},
		{AF_NETLINK, SOCK_RAW, 0, "socket(AF_NETLINK, NETLINK_ROUTE) (discriminating)"},
	};
	char what[96];
	int others = 0;

	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
		errno = 0;
		int fd = socket(socks[i].family, socks[i].type | SOCK_CLOEXEC, socks[i].proto);
		int e = errno;

		if (fd >= 0)
			close(fd);
		if (netns && strstr(socks[i].what, "discriminating") &&
		    socks[i].family != AF_NETLINK)
			inet_allowed(socks[i].what, fd, e);
		else if (netns && socks[i].family == AF_INET)
			/* No CAP_NET_RAW, no ping group in the namespace: EPERM or EACCES. */
			probe(socks[i].what, fd, e, 0, "the network namespace's own rules");
		else
			probe(socks[i].what, fd, e, EPERM, "seccomp net deny");
	}
	/* Every other family, quietly unless it is not EPERM. */
	for (int fam = 0; fam < 64; fam++) {
		if (fam == AF_UNIX || (netns && (fam == AF_INET || fam == AF_INET6)))
			continue;
		errno = 0;
		int fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int e = errno;

		if (fd >= 0)
			close(fd);
		if (fd >= 0 || e != EPERM) {
			snprintf(what, sizeof(what), "socket(family %d, SOCK_DGRAM)", fam);
			probe(what, fd, e, EPERM, "seccomp net deny");
			others++;
		}
	}
	printf("families 0..63 but AF_UNIX%s: %s\n", netns ? ", AF_INET, AF_INET6" : "",
	       others ? "some not EPERM (above)" : "all EPERM");
	/* AF_UNIX must stay usable, or the filter is too broad. */
	int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (u < 0) {
		printf("OTHER: socket(AF_UNIX) failed too (%s): the filter is too broad\n",
		       ename(errno));
		note(2);
	} else {
		printf("AF_UNIX sockets still work\n");
		close(u);
	}
	return verdict;
}

/*
 * tcp-connect PORT: a listener on 127.0.0.1 outside the sandbox. In the
 * session's own network namespace its 127.0.0.1 is another loopback:
 * nothing listens there (ECONNREFUSED), Landlock's TCP rule is not used.
 */
static int a_tcp_connect(int argc, char **argv)
{
	need_args(argc, 3, "tcp-connect PORT");
	errno = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		probe("socket(AF_INET) for the connect", fd, errno, EPERM, "seccomp net deny");
		return verdict;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	errno = 0;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));

	if (in_netns())
		probe("connect() to 127.0.0.1 (socket() was allowed)", rc, errno, ECONNREFUSED,
		      "the session's own network namespace");
	else
		probe("connect() to 127.0.0.1 (socket() was allowed)", rc, errno, EACCES,
		      "Landlock tcp_connect");
	close(fd);
	return verdict;
}

static int unix_connect(const char *path, bool abstract, int *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);
	socklen_t sl;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || len + 2 > sizeof(sa.sun_path)) {
		*err = fd < 0 ? errno : ENAMETOOLONG;
		return -2;
	}
	if (abstract) {
		memcpy(sa.sun_path + 1, path, len);
		sl = offsetof(struct sockaddr_un, sun_path) + 1 + len;
	} else {
		memcpy(sa.sun_path, path, len);
		sl = sizeof(sa);
	}
	errno = 0;
	int rc = connect(fd, (struct sockaddr *)&sa, sl);

	*err = errno;
	if (rc == 0)
		dprintf(fd, "hello from inside the sandbox\n");
	close(fd);
	return rc;
}

/*
 * The unix socket attacks: connects to NAME (abstract or a path), which
 * must fail with WANT (0: EPERM or EACCES, whichever layer stops it).
 */
static int unix_probe(const char *what, const char *name, bool abstract, int want,
		      const char *layer)
{
	int e, rc = unix_connect(name, abstract, &e);

	if (rc == -2)
		return setup_error("unix socket");
	probe(what, rc, e, want ? want : e == EPERM ? EPERM : EACCES, layer);
	return verdict;
}

/*
 * abstract NAME: an abstract unix socket listener outside (Landlock ABI 6).
 * Abstract names belong to a network namespace: in the session's own the
 * name is not found (ECONNREFUSED) before Landlock's scope is asked.
 */
static int a_abstract(int argc, char **argv)
{
	need_args(argc, 3, "abstract NAME");
	if (in_netns())
		return unix_probe("connect() to an abstract unix socket outside", argv[2], true,
				  ECONNREFUSED, "the session's own network namespace");
	return unix_probe("connect() to an abstract unix socket outside", argv[2], true, EPERM,
			  "Landlock scope_abstract_unix");
}

/* unix-path PATH: a pathname unix socket outside the allowed dirs. */
static int a_unix_path(int argc, char **argv)
{
	need_args(argc, 3, "unix-path PATH");
	/* Any layer may stop it: EACCES (path rule) or EPERM (LSM hook). */
	return unix_probe("connect() to a pathname unix socket outside the allowed dirs", argv[2],
			  false, 0, "a path rule or an LSM hook");
}

/* kill PID: SIGTERM to a process outside (Landlock ABI 6 signal scope). */
static int a_kill(int argc, char **argv)
{
	need_args(argc, 3, "kill PID");
	errno = 0;
	int rc = kill((pid_t)atoi(argv[2]), SIGTERM);

	probe("kill(SIGTERM) of a process outside the sandbox", rc, errno, EPERM,
	      "Landlock scope_signal");
	return verdict;
}

/*
 * kill-file FILE [SURVIVED]: waits (5 s at most) for FILE to hold a PID,
 * then sends it SIGKILL. The test writes the PID of the bpfbox process that
 * runs this session (the supervisor outside the sandbox that enforces the
 * timeout). If the kill worked, creates SURVIVED one second later, should
 * the session outlive its supervisor.
 */
static int a_kill_file(int argc, char **argv)
{
	need_args(argc, 3, "kill-file FILE [SURVIVED]");
	int pid = 0;

	for (int i = 0; i < 100 && pid <= 0; i++) {
		FILE *f = fopen(argv[2], "re");

		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid <= 0)
			usleep(50 * 1000);
	}
	if (pid <= 0)
		return setup_error("no PID in the file");
	errno = 0;
	int rc = kill(pid, SIGKILL);

	probe("kill(SIGKILL) of the bpfbox supervisor outside the sandbox", rc, errno, EPERM,
	      "Landlock scope_signal");
	if (rc == 0 && argc > 3) {
		sleep(1);
		int fd = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0)
			close(fd);
	}
	return verdict;
}

/* pts PATH: opens a terminal that is not the session's own (keystrokes). */
static int a_pts(int argc, char **argv)
{
	need_args(argc, 3, "pts PATH");
	/* What was typed there, read: keystrokes. */
	return open_probe("open(O_RDWR) of another terminal's /dev/pts node", argv[2],
			  O_RDWR | O_NOCTTY | O_NONBLOCK, NULL,
			  "Landlock fs (only the session's own terminal)");
}

/* --- process state -------------------------------------------------------- */

/*
 * daemon HEARTBEAT PIDFILE: setsid + double fork; the grandchild ignores
 * SIGTERM/SIGHUP/SIGINT, keeps stdout/stderr open, and appends a byte to
 * HEARTBEAT every 100 ms (for at most 30 s, so a broken sandbox does not
 * leave it behind for long). The main process waits to be timed out.
 */
static int a_daemon(int argc, char **argv)
{
	need_args(argc, 4, "daemon HEARTBEAT PIDFILE");
	fflush(stdout);
	pid_t c = fork();

	if (c < 0)
		return setup_error("fork");
	if (c == 0) {
		setsid();
		pid_t g = fork();

		if (g != 0)
			_exit(g < 0 ? 2 : 0);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dprintf(fd, "%d\n", getpid());
			close(fd);
		}
		for (int i = 0; i < 300; i++) {
			int h = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

			if (h >= 0) {
				if (write(h, ".", 1) < 0)
					_exit(2);
				close(h);
			}
			usleep(100 * 1000);
		}
		_exit(0);
	}
	waitpid(c, NULL, 0);
	printf("daemon started; waiting for the timeout\n");
	fflush(stdout);
	sleep(60);
	printf("OTHER: not timed out after 60 s\n");
	return 2;
}

/* fds: no descriptor above 2 may be inherited. */
static int a_fds(int argc, char **argv)
{
	(void)argc, (void)argv;
	int leaked = 0;

	for (int fd = 3; fd < 4096; fd++) {
		if (fcntl(fd, F_GETFD) < 0)
			continue;
		char link[64], target[512];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		printf("ESCAPED: inherited fd %d -> %s\n", fd, target);
		leaked++;
	}
	if (!leaked)
		printf("stopped: no fd above 2 is open\n");
	return leaked ? 1 : 0;
}

/*
 * creds [unprivileged-caller]: no_new_privs, seccomp filter mode, every
 * capability set empty; with "unprivileged-caller" (bpfbox was started by a
 * user without CAP_SETPCAP) a non-empty bounding set is only noted.
 */
static int a_creds(int argc, char **argv)
{
	bool unpriv = argc > 2 && !strcmp(argv[2], "unprivileged-caller");
	static const char *const want[] = {
		"NoNewPrivs:\t1",
		"Seccomp:\t2",
		"CapInh:\t0000000000000000",
		"CapPrm:\t0000000000000000",
		"CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000",
		"CapAmb:\t0000000000000000",
	};
	char line[256];
	bool seen[sizeof(want) / sizeof(want[0])] = {0};
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return setup_error("/proc/self/status");
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			size_t k = strcspn(want[i], ":") + 1;

			if (strncmp(line, want[i], k))
				continue;
			seen[i] = true;
			if (strcmp(line, want[i]) && unpriv && !strncmp(line, "CapBnd:", 7)) {
				printf("note: %s: an unprivileged caller cannot empty the "
				       "bounding set; it grants nothing with no_new_privs\n",
				       line);
			} else if (strcmp(line, want[i])) {
				printf("ESCAPED: %s, want %s\n", line, want[i]);
				note(1);
			} else {
				printf("ok: %s\n", line);
			}
		}
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!seen[i]) {
			printf("OTHER: no %.*s line\n", (int)strcspn(want[i], ":"), want[i]);
			note(2);
		}
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		printf("ESCAPED: PR_GET_NO_NEW_PRIVS is not 1\n");
		note(1);
	}
	return verdict;
}

/* --- set-uid and set-gid files (seccomp) ------------------------------------ */

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#define SETID_LAYER "seccomp set-id modes"

/* The file DIR/NAME, made 0755 (the target of the chmod probes); -1 on failure. */
static int plant(const char *dir, const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);

	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

/* The mode changes: chmod, fchmod, fchmodat, fchmodat2, of a file and of a directory. */
static void setid_chmod_probes(const char *dir, int dfd)
{
	char f[4096];
	int fd;

	if (plant(dir, "chmod", f, sizeof(f)) < 0) {
		setup_error("make DIR/chmod");
		return;
	}
#ifdef SYS_chmod
	PROBE("chmod(2) 04755 (discriminating)", syscall(SYS_chmod, f, 04755), EPERM, SETID_LAYER);
#endif
	PROBE("fchmodat 02755 (discriminating)", syscall(SYS_fchmodat, dfd, "chmod", 02755), EPERM,
	      SETID_LAYER);
	PROBE("fchmodat 04755 with bits above the 16-bit mode set",
	      syscall(SYS_fchmodat, dfd, "chmod", 0x7fff0000UL | 04755), EPERM, SETID_LAYER);
	PROBE("fchmodat2 06755 (6.6; discriminating there)",
	      syscall(SYS_fchmodat2, dfd, "chmod", 06755, 0), EPERM, SETID_LAYER);
	fd = open(f, O_RDONLY | O_CLOEXEC);
	PROBE("fchmod(2) 04755 (discriminating)", syscall(SYS_fchmod, fd, 04755), EPERM,
	      SETID_LAYER);
	if (fd >= 0)
		close(fd);
	if (mkdirat(dfd, "sgid-dir", 0755) < 0 && errno != EEXIST) {
		setup_error("mkdir DIR/sgid-dir");
		return;
	}
	PROBE("chmod g+s of a directory (fchmodat 02755)",
	      syscall(SYS_fchmodat, dfd, "sgid-dir", 02755), EPERM, SETID_LAYER);
}

/* A file that lands with mode 04755 if the create works: closed at once. */
static void created(const char *what, long fd, int err)
{
	if (fd >= 0)
		close((int)fd);
	probe(what, fd, err, EPERM, SETID_LAYER);
}

#define CREATED(what, call)                \
	do {                               \
		errno = 0;                 \
		long fd_ = (long)(call);   \
		created(what, fd_, errno); \
	} while (0)

/* The creates: open, openat, creat with O_CREAT, O_TMPFILE then linkat, mknod, mknodat, openat2. */
static void setid_create_probes(const char *dir, int dfd)
{
	char p[4096], proc[64];
#ifdef SYS_open
	snprintf(p, sizeof(p), "%s/open", dir);
	CREATED("open(2) O_CREAT 04755 (discriminating)",
		syscall(SYS_open, p, O_WRONLY | O_CREAT | O_CLOEXEC, 04755));
#endif
#ifdef SYS_creat
	snprintf(p, sizeof(p), "%s/creat", dir);
	CREATED("creat(2) 04755 (discriminating)", syscall(SYS_creat, p, 04755));
#endif
#ifdef SYS_mknod
	snprintf(p, sizeof(p), "%s/mknod", dir);
	PROBE("mknod(2) S_IFREG 04755 (discriminating)", syscall(SYS_mknod, p, S_IFREG | 04755, 0),
	      EPERM, SETID_LAYER);
#endif
	CREATED("openat O_CREAT 02755 (discriminating)",
		syscall(SYS_openat, dfd, "openat", O_WRONLY | O_CREAT | O_CLOEXEC, 02755));
	PROBE("mknodat S_IFREG 06755 (discriminating)",
	      syscall(SYS_mknodat, dfd, "mknodat", S_IFREG | 06755, 0), EPERM, SETID_LAYER);
	PROBE("mknodat S_IFIFO 04644 (discriminating)",
	      syscall(SYS_mknodat, dfd, "fifo", S_IFIFO | 04644, 0), EPERM, SETID_LAYER);
	errno = 0;
	long t = syscall(SYS_openat, dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755);
	int e = errno;

	if (t >= 0) {
		/* Where it works, linked in: a visible set-uid file. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", t);
		linkat(AT_FDCWD, proc, dfd, "tmpfile", AT_SYMLINK_FOLLOW);
	}
	created("openat O_TMPFILE 04755, then linkat (discriminating)", t, e);
	struct {
		uint64_t flags, mode, resolve;
	} how = {O_WRONLY | O_CREAT | O_CLOEXEC, 04755, 0};
	errno = 0;
	t = syscall(SYS_openat2, dfd, "openat2", &how, sizeof(how));
	e = errno;
	if (t >= 0)
		close((int)t);
	probe("openat2 O_CREAT 04755 (its mode out of seccomp's sight: ENOSYS)", t, e, ENOSYS,
	      "seccomp openat2");
}

/*
 * setid DIR: every call that could leave a set-uid or set-gid file in DIR
 * (the workspace), by raw syscall(2), so no C library wrapper decides. A
 * file capability (security.capability) needs CAP_SETFCAP, which the
 * session dropped: EPERM from the kernel. mkdir drops set-id bits of its
 * mode by itself: checked, not refused. tests/host/test_escape.sh looks at
 * DIR from outside afterwards (setid-scan).
 */
static int a_setid(int argc, char **argv)
{
	need_args(argc, 3, "setid DIR");
	const char *dir = argv[2];
	/* A v2 capability set: CAP_SETUID permitted and effective. */
	const uint32_t cap[5] = {0x02000001, 1u << 7, 0, 0, 0};
	char f[4096];
	struct stat st;
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return setup_error("open DIR");
	umask(0);
	setid_chmod_probes(dir, dfd);
	setid_create_probes(dir, dfd);
	if (plant(dir, "fcap", f, sizeof(f)) < 0)
		return setup_error("make DIR/fcap");
	PROBE("setxattr security.capability cap_setuid+ep (CAP_SETFCAP)",
	      setxattr(f, "security.capability", cap, sizeof(cap), 0), EPERM,
	      "capabilities dropped");
	errno = 0;
	if (mkdirat(dfd, "mkdir", 06755) < 0 || fstatat(dfd, "mkdir", &st, 0) < 0) {
		printf("OTHER: mkdir 06755 failed: %s\n", ename(errno));
		note(2);
	} else if (st.st_mode & (S_ISUID | S_ISGID)) {
		printf("ESCAPED: mkdir 06755 made a directory of mode %o\n", st.st_mode & 07777);
		note(1);
	} else {
		printf("held: mkdir 06755 made mode %o (the kernel drops set-id bits)\n",
		       st.st_mode & 07777);
	}
	return verdict;
}

/*
 * setid-scan DIR: run outside a session, names every file below DIR (one
 * level) with a set-uid or set-gid bit or a security.capability; exit 1
 * if there is one, 0 if none.
 */
static int a_setid_scan(int argc, char **argv)
{
	need_args(argc, 3, "setid-scan DIR");
	DIR *d = opendir(argv[2]);
	struct dirent *e;
	char p[4096], x[64];
	struct stat st;
	int found = 0;

	if (!d)
		return setup_error("opendir DIR");
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", argv[2], e->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (st.st_mode & (S_ISUID | S_ISGID)) {
			printf("set-id: %s mode %o uid %u\n", p, st.st_mode & 07777, st.st_uid);
			found = 1;
		}
		if (lgetxattr(p, "security.capability", x, sizeof(x)) >= 0) {
			printf("file capability: %s\n", p);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/* --- socket families under --net-allow (seccomp) ----------------------------- */

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define FAMILIES_LAYER "seccomp --net-allow families"

/*
 * families: with --net-allow rules only AF_UNIX, AF_INET and AF_INET6
 * sockets may be made; the hypervisor's vsock, netlink (every protocol),
 * packet, and every other family are refused (EPERM), and socketpair is
 * AF_UNIX only. Netlink is tried as SOCK_DGRAM, which the kernel takes
 * like SOCK_RAW and the BPF sock_create program does not refuse.
 */
static int a_families(int argc, char **argv)
{
	(void)argc, (void)argv;
	static const struct {
		int family, type, proto;
		const char *what;
	} socks[] = {
		{AF_VSOCK, SOCK_STREAM, 0, "socket(AF_VSOCK) (the hypervisor; discriminating)"},
		{AF_NETLINK, SOCK_DGRAM, 0, "socket(AF_NETLINK, NETLINK_ROUTE) (discriminating)"},
		{AF_NETLINK, SOCK_DGRAM, 4,
		 "socket(AF_NETLINK, NETLINK_SOCK_DIAG) (discriminating)"},
		{AF_NETLINK, SOCK_DGRAM, 9, "socket(AF_NETLINK, NETLINK_AUDIT) (discriminating)"},
		{AF_NETLINK, SOCK_DGRAM, 15, "socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT)"},
		{AF_NETLINK, SOCK_RAW, 0, "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)"},
		{AF_PACKET, SOCK_DGRAM, 0, "socket(AF_PACKET, SOCK_DGRAM)"},
		{AF_PACKET, SOCK_RAW, 0, "socket(AF_PACKET, SOCK_RAW)"},
		{AF_ALG, SOCK_SEQPACKET, 0, "socket(AF_ALG)"},
		{AF_KEY, SOCK_RAW, 2, "socket(AF_KEY)"},
		{AF_BLUETOOTH, SOCK_RAW, 0, "socket(AF_BLUETOOTH)"},
		{AF_UNSPEC, SOCK_STREAM, 0, "socket(AF_UNSPEC)"},
	};
	char what[96];
	int others = 0, sv[2];

	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
		errno = 0;
		int fd = socket(socks[i].family, socks[i].type | SOCK_CLOEXEC, socks[i].proto);
		int e = errno;

		if (fd >= 0)
			close(fd);
		probe(socks[i].what, fd, e, EPERM, FAMILIES_LAYER);
	}
	errno = 0;
	long fd = syscall(SYS_socket, 0x100000000UL | AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0)
		close((int)fd);
	probe("socket(AF_INET | 1 << 32) (the whole family value is compared)", fd, errno, EPERM,
	      FAMILIES_LAYER);
	errno = 0;
	int r = socketpair(AF_TIPC, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);

	if (r == 0)
		close(sv[0]), close(sv[1]);
	probe("socketpair(AF_TIPC)", r, errno, EPERM, FAMILIES_LAYER);
	for (int fam = 0; fam < 64; fam++) {
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6)
			continue;
		errno = 0;
		int s = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int e = errno;

		if (s >= 0)
			close(s);
		if (s >= 0 || e != EPERM) {
			snprintf(what, sizeof(what), "socket(family %d, SOCK_DGRAM)", fam);
			probe(what, s, e, EPERM, FAMILIES_LAYER);
			others++;
		}
	}
	printf("families 0..63 but AF_UNIX, AF_INET, AF_INET6: %s\n",
	       others ? "some not EPERM (above)" : "all EPERM");
	/* The three the rules need must stay usable, or the filter is too broad. */
	static const int kept[] = {AF_UNIX, AF_INET, AF_INET6};

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		int s = socket(kept[i], SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (s < 0) {
			printf("OTHER: socket(family %d) failed (%s): the filter is too broad\n",
			       kept[i], ename(errno));
			note(2);
		} else {
			close(s);
		}
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		printf("OTHER: socketpair(AF_UNIX) failed (%s)\n", ename(errno));
		note(2);
	} else {
		close(sv[0]), close(sv[1]);
		printf("AF_UNIX, AF_INET, AF_INET6 sockets and AF_UNIX pairs still work\n");
	}
	return verdict;
}

/* --- what the session's namespaces close ---------------------------------- */

/*
 * meta PATH: file metadata outside the writable dirs, which Landlock has no
 * right for: chmod u+s, chmod 777, utimes, setxattr. The mount namespace's
 * read-only host answers EROFS.
 */
static int a_meta(int argc, char **argv)
{
	need_args(argc, 3, "meta PATH");
	const char *p = argv[2];
	struct timespec ts[2] = {{1, 0}, {1, 0}};

	/* The set-id rule answers before the mount does. */
	PROBE("chmod 4755 (setuid) of a file outside", chmod(p, 04755), EPERM,
	      "seccomp set-id modes");
	PROBE("chmod 777 of a file outside", chmod(p, 0777), EROFS, "read-only mount");
	PROBE("utimensat of a file outside", utimensat(AT_FDCWD, p, ts, 0), EROFS,
	      "read-only mount");
	PROBE("setxattr user.bpfbox on a file outside", setxattr(p, "user.bpfbox", "x", 1, 0),
	      EROFS, "read-only mount");
	return verdict;
}

/*
 * meta-at PATH: the same through the calls the C library may not wrap:
 * fchownat on a descriptor of PATH ("" with AT_EMPTY_PATH), 6.6's
 * fchmodat2 and 6.13's setxattrat and removexattrat (relative to PATH's
 * directory). A call this kernel lacks (ENOSYS) is said "absent: OP".
 */
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif
#ifndef SYS_removexattrat
#define SYS_removexattrat 466
#endif
static void probe_new(const char *op, const char *what, long rc, int err)
{
	if (rc < 0 && err == ENOSYS) {
		printf("absent: %s (%s: ENOSYS on this kernel)\n", op, what);
		fflush(stdout);
		return;
	}
	probe(what, rc, err, EROFS, "read-only mount");
}

static int a_meta_at(int argc, char **argv)
{
	need_args(argc, 3, "meta-at PATH");
	const char *p = argv[2], *base = strrchr(p, '/');
	struct {
		uint64_t value;
		uint32_t size, flags;
	} xa = {(uintptr_t) "x", 1, 0};
	char dir[4096];
	int fd = open(p, O_PATH | O_CLOEXEC), dfd; /* O_PATH: no read right needed */

	if (fd < 0 || !base || base == p || (size_t)(base - p) >= sizeof(dir))
		return setup_error("open PATH (absolute, below a directory)");
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - p), p);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return setup_error("open PATH's directory");
	errno = 0;
	long rc = syscall(SYS_fchownat, fd, "", getuid(), -1, AT_EMPTY_PATH);
	probe_new("chown", "fchownat(fd, \"\", AT_EMPTY_PATH) of a file outside", rc, errno);
	errno = 0;
	rc = syscall(SYS_fchmodat2, AT_FDCWD, p, 0777, 0);
	probe_new("chmod", "fchmodat2 777 of a file outside", rc, errno);
	errno = 0;
	rc = syscall(SYS_setxattrat, dfd, base + 1, 0, "user.bpfbox", &xa, sizeof(xa));
	probe_new("setxattr", "setxattrat user.bpfbox relative to the file's directory", rc, errno);
	errno = 0;
	rc = syscall(SYS_removexattrat, AT_FDCWD, p, 0, "user.bpfbox");
	probe_new("removexattr", "removexattrat user.bpfbox of a file outside", rc, errno);
	return verdict;
}

/*
 * proc-scan PREFIX SUFFIX PID: no process outside may be seen: no cmdline
 * under /proc holds PREFIX SUFFIX joined (so that our own argv does not),
 * and PID (a process outside) is not there (ESRCH).
 */
static int a_proc_scan(int argc, char **argv)
{
	need_args(argc, 5, "proc-scan PREFIX SUFFIX PID");
	DIR *d = opendir("/proc");
	struct dirent *e;
	char secret[256];
	int seen = 0;

	snprintf(secret, sizeof(secret), "%s%s", argv[2], argv[3]);
	if (!d)
		return setup_error("opendir /proc");
	while ((e = readdir(d))) {
		char path[300], buf[4096];
		ssize_t n;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		seen++;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		if (n > 0 && (buf[n] = 0, strstr(buf, secret))) {
			printf("ESCAPED: /proc/%s/cmdline shows the secret: %.60s\n", e->d_name,
			       buf);
			note(1);
		}
	}
	closedir(d);
	printf("%d processes visible\n", seen);
	PROBE("kill(0) of a process outside", kill((pid_t)atoi(argv[4]), 0), ESRCH,
	      "PID namespace");
	return verdict;
}

/* shm-plant KEY SECRET: outside the sandbox, a SysV segment holding SECRET; prints its id. */
static int a_shm_plant(int argc, char **argv)
{
	need_args(argc, 4, "shm-plant KEY SECRET");
	int id = shmget((key_t)strtol(argv[2], NULL, 0), 4096, IPC_CREAT | 0666);
	char *m;

	if (id < 0)
		return setup_error("shmget");
	m = shmat(id, NULL, 0);
	if (m == (void *)-1)
		return setup_error("shmat");
	snprintf(m, 4096, "%s", argv[3]);
	shmdt(m);
	printf("%d\n", id);
	return 0;
}

/* shm-read KEY ID: the host's segment by key (ENOENT) and by id (EINVAL). */
static int a_shm_read(int argc, char **argv)
{
	need_args(argc, 4, "shm-read KEY ID");
	void *m;

	PROBE("shmget of the host's SysV segment by key",
	      shmget((key_t)strtol(argv[2], NULL, 0), 0, 0), ENOENT, "IPC namespace");
	errno = 0;
	m = shmat(atoi(argv[3]), NULL, SHM_RDONLY);
	if (m != (void *)-1) {
		printf("ESCAPED: shmat of the host's segment: %.40s\n", (char *)m);
		note(1);
	} else {
		probe("shmat of the host's SysV segment by id", -1, errno, EINVAL, "IPC namespace");
	}
	return verdict;
}

/* shm-leave KEY: a SysV segment made inside; it must not outlive the session. */
static int a_shm_leave(int argc, char **argv)
{
	need_args(argc, 3, "shm-leave KEY");
	int id = shmget((key_t)strtol(argv[2], NULL, 0), 4096, IPC_CREAT | 0600);

	if (id < 0)
		return setup_error("shmget inside");
	printf("segment %d made\n", id);
	return 0;
}

/* --- dispatch ----------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} attacks[] = {
	{"create", a_create},
	{"open-w", a_open_w},
	{"append", a_append},
	{"read", a_read},
	{"symlink-write", a_symlink_write},
	{"hardlink", a_hardlink},
	{"rename", a_rename},
	{"truncate", a_truncate},
	{"exec", a_exec},
	{"exec-landed", a_exec_landed},
	{"tiocsti", a_tiocsti},
	{"tiocsti-notty", a_tiocsti_notty},
	{"tioclinux", a_tioclinux},
	{"io_uring", a_io_uring},
	{"ptrace", a_ptrace},
	{"vmread", a_vmread},
	{"keyctl", a_keyctl},
	{"bpf", a_bpf},
	{"perf", a_perf},
	{"userfaultfd", a_userfaultfd},
	{"unshare", a_unshare},
	{"mount", a_mount},
	{"privileged", a_privileged},
	{"clock", a_clock},
	{"personality", a_personality},
	{"int80", a_int80},
	{"x32", a_x32},
	{"sockets", a_sockets},
	{"tcp-connect", a_tcp_connect},
	{"families", a_families},
	{"setid", a_setid},
	{"setid-scan", a_setid_scan},
	{"abstract", a_abstract},
	{"unix-path", a_unix_path},
	{"kill", a_kill},
	{"kill-file", a_kill_file},
	{"pts", a_pts},
	{"daemon", a_daemon},
	{"fds", a_fds},
	{"creds", a_creds},
	{"meta", a_meta},
	{"meta-at", a_meta_at},
	{"proc-scan", a_proc_scan},
	{"shm-plant", a_shm_plant},
	{"shm-read", a_shm_read},
	{"shm-leave", a_shm_leave},
};

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "";

	/* A copy exec'ed by the "exec" attack lands here. */
	if (argc > 1 && !strcmp(argv[1], "exec-landed"))
		return a_exec_landed(argc, argv);
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		if (!strcmp(name, attacks[i].name)) {
			int rc = attacks[i].fn(argc, argv);

			fflush(stdout);
			return rc;
		}
	fprintf(stderr, "usage: escape ATTACK [ARGS...]; attacks:");
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		fprintf(stderr, " %s", attacks[i].name);
	fprintf(stderr, "\n");
	return 2;
}
