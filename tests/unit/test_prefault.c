// SPDX-License-Identifier: GPL-2.0
/*
 * Pages made present before their first write (lib/prefault.h): the
 * kernel's own answer (mincore) says they are there after the call and
 * were not before: a thread's fresh stack below its frame, the main
 * stack grown past where its mapping ended, .bss never written, and the
 * brk heap.
 */
#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/prefault.h"
#include "unit_main.h"

#define PAGE 4096UL

/* Never written: its pages are present only once something made them so. */
static char untouched[64 << 10];

static size_t present(uintptr_t lo, uintptr_t hi)
{
	unsigned char v[512];
	size_t n = 0, pages;

	lo &= ~(PAGE - 1);
	pages = (hi - lo) / PAGE;
	assert_true(pages <= sizeof(v));
	if (mincore((void *)lo, pages * PAGE, v) < 0)
		return 0;
	for (size_t i = 0; i < pages; i++)
		n += v[i] & 1;
	return n;
}

/* The 64 KB below the frame of the function that calls prefault_writable. */
static void *stack_window(void *arg)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) & ~(PAGE - 1);
	size_t *got = arg;

	got[0] = present(sp - 96 * 1024, sp - 32 * 1024);
	prefault_writable(false);
	got[1] = present(sp - 96 * 1024, sp - 32 * 1024);
	return NULL;
}

static void test_thread_stack(void **state)
{
	size_t got[2];
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, stack_window, got), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(got[0] < 4); /* a fresh mapping: nothing written that deep */
	assert_int_equal(got[1], 16);
}

/* The main stack's start (and its end into *end) from /proc/self/maps, 0 if not found. */
static uintptr_t stack_bounds(uintptr_t *end)
{
	char line[256];
	uintptr_t lo = 0, hi = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	if (f)
		fclose(f);
	if (end)
		*end = hi;
	return lo;
}

static uintptr_t stack_start(void)
{
	return stack_bounds(NULL);
}

/* fn run in a child of its own, which must exit 0 (a signal is a failure). */
static void in_child(void (*fn)(void))
{
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* cmocka's handler would go on in this child */
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * Down to 32 KB above the main stack's mapping (sp - start - 32 KB of
 * alloca), then fn(start, end): the window of a call from there reaches
 * 96 KB below the mapping, which only a growth can give it.
 */
static void near_stack_start(void (*fn)(uintptr_t start, uintptr_t end))
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0), end = 0, start;
	volatile char *low;

	start = stack_bounds(&end);
	if (!start || end <= sp || sp - start < 48 * 1024)
		_exit(2);
	low = alloca(sp - start - 32 * 1024);
	low[0] = 1;
	fn(start, end);
	if (low[0] != 1)
		_exit(4);
}

/*
 * A stack limit the window does not fit in: the call must not read below
 * it (a SIGSEGV: bpfbox under `ulimit -s 256` crashed so), only populate
 * what is mapped.
 */
static void limited(uintptr_t start, uintptr_t end)
{
	struct rlimit rl;

	/* The limit lets the stack grow by 32 KB only: a read 96 KB below is a SIGSEGV. */
	rl.rlim_cur = rl.rlim_max = end - start + 32 * 1024;
	if (setrlimit(RLIMIT_STACK, &rl) < 0)
		_exit(3);
	prefault_writable(false);
}

static void small_limit(void)
{
	near_stack_start(limited);
}

static void test_small_stack_limit(void **state)
{
	(void)state;
	in_child(small_limit);
}

/* Under the default limit the mapping grows to hold the window, present. */
static void grows(uintptr_t start, uintptr_t end)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) & ~(PAGE - 1);
	uintptr_t lo = sp - (PREFAULT_STACK - 16 * PAGE);

	(void)end;
	if (start <= lo)
		_exit(5); /* not the case this checks */
	prefault_writable(false);
	if (stack_start() > lo || present(lo, lo + 16 * PAGE) != 16)
		_exit(1);
}

static void main_grows(void)
{
	struct rlimit rl = {.rlim_cur = 8 << 20, .rlim_max = RLIM_INFINITY};

	setrlimit(RLIMIT_STACK, &rl);
	near_stack_start(grows);
}

static void test_main_stack_grows(void **state)
{
	(void)state;
	in_child(main_grows);
}

static void test_bss_and_heap(void **state)
{
	uintptr_t b = (uintptr_t)untouched + PAGE,
		  e = (uintptr_t)untouched + sizeof(untouched) - PAGE;
	char *p;

	(void)state;
	assert_int_equal(present(b, e), 0);
	p = malloc(200);
	assert_non_null(p);
	prefault_init();
	prefault_writable(true);
	assert_int_equal(present(b, e), (e - b) / PAGE);
	/* Under ASan malloc is not the brk heap's: only .bss and the stack are asked then. */
	if (!getenv("BPFBOX_ASAN")) {
		uintptr_t top = (uintptr_t)sbrk(0);

		assert_int_equal(present(top - 16 * PAGE, top), 16);
	}
	free(p);
}

/* The stack limit's case before any call grows the stack; .bss before any call populates it. */
UNIT_MAIN(cmocka_unit_test(test_small_stack_limit), cmocka_unit_test(test_bss_and_heap),
	  cmocka_unit_test(test_thread_stack), cmocka_unit_test(test_main_stack_grows));
