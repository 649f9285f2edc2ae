// SPDX-License-Identifier: GPL-2.0
/*
 * held_thread MB LOG HOLD: a thread with an fd table of its own (clone
 * with CLONE_THREAD but not CLONE_FILES: its fds are not in /proc/PID/fd)
 * opens a file in the cwd, unlinks it and grows it by MB MiB, 10 ms apart,
 * logging "0 mib used-bytes" (statvfs of the cwd) after each, then "done";
 * everything stays held for HOLD seconds (tests/host/test_disk_held.sh).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static int mb;
static const char *log_path;
static volatile int finished;

static void nap(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int grow(void *arg)
{
	static char buf[1 << 20];
	int fd = open("held-thread", O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
	int lg = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	char line[96];

	(void)arg;
	if (fd < 0 || lg < 0 || unlink("held-thread") < 0)
		_exit(2);
	memset(buf, 'h', sizeof(buf));
	for (int i = 0; i < mb; i++) {
		struct statvfs st;
		int n;

		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || statvfs(".", &st) < 0)
			_exit(3);
		n = snprintf(line, sizeof(line), "0 %d %llu\n", i + 1,
			     (unsigned long long)(st.f_blocks - st.f_bfree) * st.f_frsize);
		if (write(lg, line, n) != n)
			_exit(4);
		nap(10);
	}
	if (write(lg, "done\n", 5) != 5)
		_exit(4);
	finished = 1;
	for (;;)
		pause(); /* holds the fd until the process exits */
}

int main(int argc, char **argv)
{
	size_t size = 256 << 10;
	char *stack;

	if (argc != 4)
		return 2;
	mb = atoi(argv[1]);
	log_path = argv[2];
	stack = malloc(size);
	if (!stack ||
	    clone(grow, stack + size,
		  CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, NULL) < 0)
		return 1;
	while (!finished)
		nap(10);
	nap(atol(argv[3]) * 1000);
	return 0;
}
