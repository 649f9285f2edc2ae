// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's price of a session's namespaces (docs/benchmarks.md, "The
 * session's own loopback"): N times clone(FLAGS|SIGCHLD) of a child that
 * exits at once, then waitpid; prints the mean of each part. As root:
 *   cc -O2 -o /tmp/clone_ns bench/clone_ns.c && /tmp/clone_ns 0x40000000 300
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	unsigned long flags;
	double clone_ms = 0, wait_ms = 0;
	int n;

	if (argc != 3)
		return fprintf(stderr, "usage: %s FLAGS N\n", argv[0]), 2;
	flags = strtoul(argv[1], NULL, 0);
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		double t0 = now_ms(), t1;
		pid_t pid = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);

		if (pid == 0)
			_exit(0);
		if (pid < 0)
			return perror("clone"), 1;
		t1 = now_ms();
		waitpid(pid, NULL, 0);
		clone_ms += t1 - t0;
		wait_ms += now_ms() - t1;
	}
	printf("flags %#lx: clone %.3f ms, exit+wait %.3f ms (mean of %d)\n", flags, clone_ms / n,
	       wait_ms / n, n);
	return 0;
}
