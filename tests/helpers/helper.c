// SPDX-License-Identifier: GPL-2.0
/*
 * helper: processes the escape tests start OUTSIDE the sandbox, one binary.
 *
 *   helper target READYFILE          a process to ptrace, read or signal; it
 *                                    appends a line to READYFILE.winch on SIGWINCH
 *   helper abstract NAME READYFILE MARKFILE   abstract unix listener
 *   helper unix PATH READYFILE MARKFILE       pathname unix listener
 *   helper tcp READYFILE MARKFILE    TCP listener on 127.0.0.1 (port in READYFILE)
 *   helper pty CMD [ARGS...]         runs CMD with a fresh pty slave as stdin
 *   helper ptyhold READYFILE         a terminal outside (path in READYFILE)
 *
 * The servers write READYFILE (atomically, by rename) once they listen, and
 * append a line to MARKFILE for every connection they accept, so the test
 * sees from the outside whether a connection really happened. All of them
 * end by themselves after 60 s (alarm) in case the test does not kill them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* A secret in this process's memory, for the process_vm_readv attack. */
static char secret[64];

__attribute__((noreturn)) static void die(const char *what)
{
	fprintf(stderr, "helper: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Writes TEXT to PATH through a temporary file and rename(2). */
static void write_ready(const char *path, const char *text)
{
	char tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) < 0 || close(fd) < 0)
		die(tmp);
	if (rename(tmp, path) < 0)
		die(path);
}

static void mark(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd >= 0) {
		dprintf(fd, "%s\n", text);
		close(fd);
	}
}

static char winch_file[4096];

/* Async-signal-safe: open, write, close. */
static void on_winch(int sig)
{
	int fd = open(winch_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	(void)sig;
	if (fd >= 0) {
		if (write(fd, "winch\n", 6) < 0) {
			/* nothing to do in a handler */
		}
		close(fd);
	}
}

/*
 * target READYFILE: "PID ADDR LEN SECRET" in READYFILE, then sleeps. A
 * SIGWINCH (28) appends a line to READYFILE.winch: the positive control of
 * a signal attack. The kernel delivers the lowest-numbered pending signal
 * first, so when the test's SIGWINCH, sent after the attack's SIGTERM (15),
 * has been handled, a delivered SIGTERM would have ended the process first.
 */
static int h_target(int argc, char **argv)
{
	char text[256];

	if (argc < 3)
		return 2;
	snprintf(winch_file, sizeof(winch_file), "%s.winch", argv[2]);
	signal(SIGWINCH, on_winch);
	snprintf(secret, sizeof(secret), "bpfbox-secret-%d", (int)getpid());
	snprintf(text, sizeof(text), "%d %p %zu %s\n", (int)getpid(), (void *)secret,
		 strlen(secret), secret);
	write_ready(argv[2], text);
	for (;;)
		pause();
}

/* Accepts connections forever, marking each one. */
__attribute__((noreturn)) static void serve(int fd, const char *markfile)
{
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		char buf[128];
		ssize_t n;

		if (c < 0) {
			if (errno == EINTR)
				continue;
			die("accept");
		}
		n = read(c, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		buf[strcspn(buf, "\n")] = 0;
		mark(markfile, n > 0 ? buf : "connected");
		close(c);
	}
}

static int h_unix(int argc, char **argv, int abstract)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t sl;
	size_t len;
	int fd;

	if (argc < 5)
		return 2;
	len = strlen(argv[2]);
	if (len + 2 > sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		die(argv[2]);
	}
	if (abstract) {
		memcpy(sa.sun_path + 1, argv[2], len);
		sl = offsetof(struct sockaddr_un, sun_path) + 1 + len;
	} else {
		memcpy(sa.sun_path, argv[2], len);
		sl = sizeof(sa);
		unlink(argv[2]);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 8) < 0)
		die("unix listener");
	if (!abstract)
		chmod(argv[2], 0777); /* any uid may connect, as with real daemons */
	write_ready(argv[3], "listening\n");
	serve(fd, argv[4]);
}

static int h_tcp(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char text[32];
	int fd;

	if (argc < 4)
		return 2;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		die("tcp listener");
	snprintf(text, sizeof(text), "%d\n", ntohs(sa.sin_port));
	write_ready(argv[2], text);
	serve(fd, argv[3]);
}

/*
 * pty CMD...: CMD gets the slave of a new pty as stdin (opened O_NOCTTY, so
 * it is nobody's controlling terminal), stdout/stderr are inherited. Exits
 * with CMD's status (128+N for a signal). What the master side received
 * (echo of injected input) is reported on stderr.
 */
/* A new pty: its master (close-on-exec), its slave opened with FLAGS into *slave, its path into *name. */
static int open_pty(int *slave, char **name, int flags)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
	    !(*name = ptsname(master)))
		die("posix_openpt");
	*slave = open(*name, O_RDWR | O_NOCTTY | flags);
	if (*slave < 0)
		die(*name);
	return master;
}

static int h_pty(int argc, char **argv)
{
	int master, slave, st;
	char *name = NULL;
	pid_t pid;

	if (argc < 3)
		return 2;
	master = open_pty(&slave, &name, 0);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(slave, 0);
		if (slave > 2)
			close(slave);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "helper: exec %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	close(slave);
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	/* Anything pushed into the terminal's input is echoed to the master. */
	struct pollfd p = { .fd = master, .events = POLLIN };
	char buf[256];
	ssize_t n = 0;

	if (poll(&p, 1, 100) > 0 && (p.revents & POLLIN))
		n = read(master, buf, sizeof(buf));
	if (n > 0)
		fprintf(stderr, "helper pty: the terminal saw %zd bytes of input/echo\n", n);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * ptyhold READYFILE: a terminal of "the user" outside the sandbox: opens a
 * pty, types a line into it (as a keyboard would), writes the slave's path
 * to READYFILE and keeps both ends open.
 */
static int h_ptyhold(int argc, char **argv)
{
	int master, slave;
	char *name = NULL, text[256];

	if (argc < 3)
		return 2;
	master = open_pty(&slave, &name, O_CLOEXEC);
	if (write(master, "sudo-password-bpfbox\n", 21) < 0)
		die("write to the pty");
	snprintf(text, sizeof(text), "%s\n", name);
	write_ready(argv[2], text);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	signal(SIGPIPE, SIG_IGN);
	alarm(60);
	if (!strcmp(cmd, "target"))
		return h_target(argc, argv);
	if (!strcmp(cmd, "abstract"))
		return h_unix(argc, argv, 1);
	if (!strcmp(cmd, "unix"))
		return h_unix(argc, argv, 0);
	if (!strcmp(cmd, "tcp"))
		return h_tcp(argc, argv);
	if (!strcmp(cmd, "pty"))
		return h_pty(argc, argv);
	if (!strcmp(cmd, "ptyhold"))
		return h_ptyhold(argc, argv);
	fprintf(stderr, "usage: helper target|abstract|unix|tcp|pty|ptyhold ...\n");
	return 2;
}
