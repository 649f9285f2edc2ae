// SPDX-License-Identifier: GPL-2.0
/*
 * The closer (lib/closer.h), by what the kernel says about pipes: an fd it
 * holds stays open after our close (the reader sees no EOF) until
 * closer_end(); every other fd is not held by it (our close is the last
 * one: EOF at once); closer_bpf_fds() finds BPF objects only.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cmocka.h>
#include <linux/bpf.h>

#include "lib/closer.h"
#include "skip.h"
#include "unit_main.h"

/* Whether the read end sees EOF (every write end closed) within ms. */
static int eof_within(int rfd, int ms)
{
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	char b;

	if (poll(&p, 1, ms) != 1)
		return 0;
	return read(rfd, &b, 1) == 0;
}

static struct closer c;

static void held_until_end(void **state)
{
	int held[2], other[2];

	(void)state;
	assert_int_equal(pipe2(held, O_CLOEXEC), 0);
	assert_int_equal(pipe2(other, O_CLOEXEC), 0);
	assert_int_equal(closer_begin(&c, &held[1], 1), 0);
	close(held[1]);
	close(other[1]);
	/* Not held: ours was the last write end. */
	assert_true(eof_within(other[0], 2000));
	/* Held by the helper: no EOF while it runs... */
	assert_false(eof_within(held[0], 200));
	closer_end(&c);
	/* ...and EOF once it has gone. */
	assert_true(eof_within(held[0], 5000));
	close(held[0]);
	close(other[0]);
}

static void nothing_to_hold(void **state)
{
	int p[2] = {-1, -1};

	(void)state;
	/* Only its own pipes: it still starts and ends. */
	assert_int_equal(closer_begin(&c, NULL, 0), 0);
	closer_end(&c);
	assert_int_equal(closer_begin(&c, p, CLOSER_MAX_FDS + 1), -E2BIG);
}

static void finds_bpf_fds(void **state)
{
	union bpf_attr attr = {0};
	int fds[CLOSER_MAX_FDS], map, pipefd[2];
	size_t n;
	int found = 0;

	(void)state;
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	map = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (map < 0) {
		/* The daemon and audit suites cover the BPF side where it runs. */
		skip_why("closer_bpf_fds: cannot create a BPF map here (%s)",
			 errno == EPERM ? "not root" : "no bpf(2)");
	}
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	n = closer_bpf_fds(fds, CLOSER_MAX_FDS);
	for (size_t i = 0; i < n; i++) {
		assert_int_not_equal(fds[i], pipefd[0]);
		assert_int_not_equal(fds[i], pipefd[1]);
		found |= fds[i] == map;
	}
	assert_true(found);
	close(map);
	close(pipefd[0]);
	close(pipefd[1]);
}

UNIT_MAIN(cmocka_unit_test(held_until_end), cmocka_unit_test(nothing_to_hold),
	  cmocka_unit_test(finds_bpf_fds))
