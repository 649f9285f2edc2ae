// SPDX-License-Identifier: GPL-2.0
/*
 * A change set's start (changes.h, changes_internal.h): the clock tick
 * bpfbox was started in, the start its session's child takes, a file's
 * ctime against it, and the test hooks that write in those ticks.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "changes.h"
#include "changes_internal.h"
#include "../lib/util.h"

/*
 * The tick this process was started in, taken before main (bpfbox run: one
 * session's process), with BPFBOX_FAULT_TOUCH_BEFORE_START's write just
 * before it (`bpfbox run` only): the lower bound of a set's start,
 * changes_start_take says why. glibc passes main's arguments to a
 * constructor.
 */
static int64_t exec_tick;

static void __attribute__((constructor)) exec_tick_take(int argc, char **argv)
{
	if (argc > 1 && streq(argv[1], "run"))
		ch_fault_touch();
	exec_tick = clock_now_ns(CLOCK_REALTIME_COARSE);
}

/*
 * The set's start: a clock tick after the one bpfbox was started in
 * (exec_tick), the one current when the session's child reads the clock
 * just before its command runs (changes_start_wait, changes.h), written
 * into a pipe read here.
 * A file's ctime is the coarse clock (or, with multigrain timestamps, the
 * real time of the write when its ctime was read since its last change),
 * so a file written just before bpfbox ran can carry that tick: with
 * "ctime >= start is changed" (a write after the start in the same tick
 * must count) it would be refused as changed. A start in a later tick
 * puts every earlier write before it and every write while the command
 * runs at or after it; but for a fine-grained ctime only while the coarse
 * clock keeps up with the real one: where a tick comes late (a virtual
 * machine's), a write just before bpfbox ran can carry a real time past
 * the next tick, and is refused as changed (fail closed; docs/SECURITY.md
 * says why the bound is not the real clock: the child would wait). The
 * session's set-up from bpfbox's exec to its command mostly outlasts the
 * tick (1 to 10 ms), so the child seldom waits for it; a write in between
 * is seen by the session (the workspace is the overlay's lower layer) and
 * refused only if it carries the start's own tick (fail closed). The wait
 * is bounded: a clock that does not move is taken as it is.
 */
int64_t changes_start_take(struct changes_set *cs, int wait_ms)
{
	struct pollfd p = {.fd = cs->start_pipe[0], .events = POLLIN};
	int64_t t = 0;

	if (cs->start_pipe[0] < 0 || (wait_ms && poll(&p, 1, wait_ms) <= 0))
		return 0;
	if (read(cs->start_pipe[0], &t, sizeof(t)) != sizeof(t) || !t)
		return 0;
	fd_close(&cs->start_pipe[0]);
	cs->start_ns = t;
	return t;
}

int64_t ch_start_bound(void)
{
	return exec_tick;
}

bool ch_changed_since(const struct stat *st, int64_t start_ns)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec >= start_ns;
}

void ch_fault_touch(void)
{
	const char *e = getenv("BPFBOX_FAULT_TOUCH_BEFORE_START");
	int64_t t0 = clock_now_ns(CLOCK_REALTIME_COARSE);
	int fd;

	if (!e || (fd = open(e, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return;
	/*
	 * Just after the coarse clock has moved (50 ms at most), when it is
	 * the real one: the write's time is in the bound's tick even where it
	 * is fine-grained and ticks come late (above).
	 */
	for (int i = 0; i < 50000 && clock_now_ns(CLOCK_REALTIME_COARSE) == t0; i++)
		;
	if (write(fd, "touched\n", 8) != 8)
		fprintf(stderr, "bpfbox: BPFBOX_FAULT_TOUCH_BEFORE_START: %s\n", strerror(errno));
	close(fd);
}

void changes_fault_at_start(struct changes_set *cs)
{
	const char *e = getenv("BPFBOX_FAULT_TOUCH_AT_START");
	int fd;

	if (!e || !changes_start_take(cs, 2000))
		return;
	fd = open(e, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || write(fd, "editor\n", 7) != 7)
		fprintf(stderr, "bpfbox: BPFBOX_FAULT_TOUCH_AT_START: %s\n", strerror(errno));
	fd_close(&fd);
}
