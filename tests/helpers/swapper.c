// SPDX-License-Identifier: GPL-2.0
/*
 * swapper: the attacker of tests/host/test_race.sh, run OUTSIDE the sandbox
 * by the owner of the workspace's parent.
 *
 *   swapper A B READYFILE
 *
 * Exchanges the names A and B (a directory and a symlink beside it) with
 * renameat2(RENAME_EXCHANGE) in a loop, as fast as it can, so that a path
 * bpfbox resolves twice is a directory at one time and the symlink at the
 * other. READYFILE is made after the first exchange. On SIGTERM it puts
 * the names back as they were (an even number of exchanges) and prints how
 * many it made. It ends by itself after 600 s (alarm) in case the test
 * does not stop it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int exchange(const char *a, const char *b)
{
	return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_term};
	unsigned long long n = 0;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: swapper A B READYFILE\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	alarm(600);
	if (exchange(argv[1], argv[2]) < 0) {
		fprintf(stderr, "swapper: renameat2(RENAME_EXCHANGE): %s\n", strerror(errno));
		return 1;
	}
	n++;
	fd = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "swapper: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	close(fd);
	while (!stop) {
		if (exchange(argv[1], argv[2]) < 0) {
			fprintf(stderr, "swapper: renameat2(RENAME_EXCHANGE): %s\n",
				strerror(errno));
			return 1;
		}
		n++;
	}
	/* As they were: an even number of exchanges. */
	if (n % 2 && exchange(argv[1], argv[2]) == 0)
		n++;
	printf("%llu\n", n);
	return 0;
}
