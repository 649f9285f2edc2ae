// SPDX-License-Identifier: GPL-2.0
/*
 * Micro-loops for the enforcement-overhead benchmark (bench/run.sh).
 *
 * Each loop is timed inside the process with CLOCK_MONOTONIC, so the
 * start-up cost of the sandbox around it (namespaces, Landlock ruleset,
 * node, ...) does not enter the number: what is left is the cost that the
 * sandbox adds to every syscall the confined program makes. The result is
 * printed as one line, the mean nanoseconds per operation.
 *
 *   loops open FILE N       N x open(FILE, O_RDONLY) + close
 *   loops exec N            N x fork + execve("/bin/true") + waitpid
 *   loops connect PORT N    N x socket + connect(127.0.0.1:PORT) + close
 *   loops openrate FILE R S open+close at R per second for S seconds (paced in
 *                           steps of 1 ms); prints the rate reached per second
 *   loops getppid N         N x getppid(): a syscall no tool of ours audits,
 *                           what every syscall of the host pays for ours
 *   loops listen PORTFILE   accept-and-close server on 127.0.0.1, port
 *                           written to PORTFILE; runs until killed
 *   loops now               prints CLOCK_REALTIME in seconds (6 decimals):
 *                           the moment a sandbox started its command
 *
 * A short warm-up (1% of N, at least 10) runs before the clock starts so
 * that the first-touch costs (dentry cache, page faults of the loop itself)
 * are not charged to the sandbox.
 *
 * bench/run.sh links it statically: without a dynamic loader the loop's
 * syscalls are the process's only ones, so an audit tool's events of the
 * loop can be counted by process name or pid (N + warm-up exactly).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void die(const char *what)
{
	fprintf(stderr, "loops: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long parse_n(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || n <= 0) {
		fprintf(stderr, "loops: bad count '%s'\n", s);
		exit(2);
	}
	return n;
}

static long warmup_of(long n)
{
	return n / 100 > 10 ? n / 100 : 10;
}

static void open_once(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open");
	close(fd);
}

static double loop_open(const char *path, long n)
{
	double t0;

	for (long i = 0; i < warmup_of(n); i++)
		open_once(path);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		open_once(path);
	return (now_ns() - t0) / (double)n;
}

/* Paced opens: the sustained record rate an audit must keep up with. */
static double loop_openrate(const char *path, long rate, long secs)
{
	double t0 = now_ns(), end = t0 + secs * 1e9, t;
	long done = 0;

	while ((t = now_ns()) < end) {
		long due = (long)((t - t0) / 1e9 * rate) + 1;

		if (done >= due)
			continue; /* ahead of the pace: spin until it is due */
		for (long i = 0; i < rate / 1000 + 1 && done < due; i++, done++)
			open_once(path);
	}
	return done / ((now_ns() - t0) / 1e9);
}

static double loop_getppid(long n)
{
	double t0;

	for (long i = 0; i < warmup_of(n); i++)
		syscall(SYS_getppid);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid); /* not the libc wrapper: one real syscall each */
	return (now_ns() - t0) / (double)n;
}

static void exec_once(void)
{
	char *const argv[] = { "/bin/true", NULL };
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execve(argv[0], argv, environ);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "loops: /bin/true failed (status 0x%x)\n", status);
		exit(1);
	}
}

static double loop_exec(long n)
{
	double t0;

	for (long i = 0; i < warmup_of(n); i++)
		exec_once();
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		exec_once();
	return (now_ns() - t0) / (double)n;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static void connect_once(const struct sockaddr_in *a)
{
	/* Linger 0: close sends RST, so no TIME_WAIT piles up over the
	 * 100,000 connections of a full run and exhausts ephemeral ports. */
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) < 0)
		die("connect");
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
		die("setsockopt");
	close(fd);
}

static double loop_connect(int port, long n)
{
	struct sockaddr_in a = loopback(port);
	double t0;

	for (long i = 0; i < warmup_of(n); i++)
		connect_once(&a);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		connect_once(&a);
	return (now_ns() - t0) / (double)n;
}

static __attribute__((noreturn)) void serve(const char *portfile)
{
	struct sockaddr_in a = loopback(0);
	socklen_t len = sizeof(a);
	int one = 1, fd;
	FILE *f;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind");
	/* The kernel completes the handshake before accept(); a deep backlog
	 * keeps the client from ever waiting on this single-threaded loop. */
	if (listen(fd, 4096) < 0)
		die("listen");
	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		die("getsockname");
	f = fopen(portfile, "w");
	if (!f)
		die(portfile);
	fprintf(f, "%d\n", ntohs(a.sin_port));
	if (fclose(f) != 0)
		die(portfile);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (c >= 0)
			close(c);
		else if (errno != EINTR && errno != ECONNABORTED)
			die("accept");
	}
}

int main(int argc, char **argv)
{
	double ns;

	if (argc == 4 && !strcmp(argv[1], "open"))
		ns = loop_open(argv[2], parse_n(argv[3]));
	else if (argc == 5 && !strcmp(argv[1], "openrate"))
		ns = loop_openrate(argv[2], parse_n(argv[3]), parse_n(argv[4]));
	else if (argc == 3 && !strcmp(argv[1], "getppid"))
		ns = loop_getppid(parse_n(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "exec"))
		ns = loop_exec(parse_n(argv[2]));
	else if (argc == 4 && !strcmp(argv[1], "connect"))
		ns = loop_connect((int)parse_n(argv[2]), parse_n(argv[3]));
	else if (argc == 3 && !strcmp(argv[1], "listen"))
		serve(argv[2]);
	else if (argc == 2 && !strcmp(argv[1], "now")) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		printf("%lld.%06ld\n", (long long)ts.tv_sec, ts.tv_nsec / 1000);
		return 0;
	} else {
		fprintf(stderr, "usage: loops open FILE N | openrate FILE R S | getppid N | exec N | connect PORT N | listen PORTFILE | now\n");
		return 2;
	}
	printf("%.1f\n", ns);
	return 0;
}
