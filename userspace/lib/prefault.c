// SPDX-License-Identifier: GPL-2.0
/* Pages made present ahead of their first write (prefault.h). */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prefault.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PAGE 4096UL

/* The linker's bounds of the program's zero-filled data. */
extern char __bss_start[], _end[];

static uintptr_t heap_lo; /* 0: not known */

static void populate(uintptr_t lo, uintptr_t hi)
{
	lo &= ~(PAGE - 1);
	hi = (hi + PAGE - 1) & ~(PAGE - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

/*
 * A read of the stack below the caller's frames, which the compiler and
 * the sanitizers would take for a stray one: raw, uninstrumented. Reads
 * only: whatever is there stays.
 */
__attribute__((no_sanitize("address", "undefined"), noinline)) static void grow_stack(uintptr_t at)
{
	(void)*(volatile const char *)at;
}

/*
 * Whether a read PREFAULT_STACK below the frame grows the stack rather
 * than faulting: only the main thread's stack grows (a thread's ends at
 * its guard page), and only within RLIMIT_STACK (from 1 MB: bpfbox's own
 * use and the window fit; below it the read would be a SIGSEGV).
 */
static bool may_grow(void)
{
	struct rlimit rl;

	return syscall(SYS_gettid) == getpid() && getrlimit(RLIMIT_STACK, &rl) == 0 &&
	       (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (1 << 20));
}

void prefault_init(void)
{
	/* The main arena is the brk heap: its size ends at the break. */
	struct mallinfo2 mi = mallinfo2();
	uintptr_t top = (uintptr_t)sbrk(0);

	if (top != (uintptr_t)-1 && mi.arena && mi.arena <= top)
		heap_lo = top - mi.arena;
}

void prefault_writable(bool heap)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) & ~(PAGE - 1), top;
	int saved = errno;

	/*
	 * The stack's mapping may end above sp - PREFAULT_STACK: it grows on
	 * a fault below it, never on madvise (ENOMEM, nothing done). One
	 * read at the window's bottom grows it (the zero page mapped there);
	 * smaller windows where even that is refused (a stack rlimit).
	 */
	for (uintptr_t w = PREFAULT_STACK; w >= 16 * PAGE; w /= 2) {
		if (madvise((void *)(sp - w), w + PAGE, MADV_POPULATE_WRITE) == 0 ||
		    errno != ENOMEM)
			break;
		if (w < PREFAULT_STACK || !may_grow())
			continue;
		grow_stack(sp - w);
		if (madvise((void *)(sp - w), w + PAGE, MADV_POPULATE_WRITE) == 0)
			break;
	}
	populate((uintptr_t)__bss_start, (uintptr_t)_end);
	if (heap && heap_lo && (top = (uintptr_t)sbrk(0)) != (uintptr_t)-1 && top > heap_lo)
		populate(heap_lo, top);
	errno = saved;
}
