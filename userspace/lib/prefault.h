/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pages a process is about to write, made present in one system call
 * instead of one page fault each. On a virtual machine whose page faults
 * are dear (17 µs each on the CI's 2-vCPU guest, against 0.7 µs a page
 * for MADV_POPULATE_WRITE; docs/benchmarks.md, "Page faults at the
 * start"), bpfbox took about 100 faults on data before its fork and 45
 * after it: its stack growing, its first heap and .bss pages, and after
 * the fork every page it writes that the session's init still shares.
 */
#ifndef BPFBOX_PREFAULT_H
#define BPFBOX_PREFAULT_H

#include <stdbool.h>

/* How much of the stack below the caller's frame (bytes): bpfbox's run path uses about 120 KB. */
#define PREFAULT_STACK (128 << 10)

/* Notes where the heap starts: once, while single-threaded (it asks malloc). */
void prefault_init(void);
/*
 * Populates, writable, the stack from the caller's frame down by
 * PREFAULT_STACK (less where the stack's mapping ends sooner), the
 * program's .bss and, with heap, the heap from where prefault_init saw
 * it start to the break (no malloc call: safe in a child of clone). Each
 * page stays what it held (a shared one is copied, as its first write
 * would). Best effort: a kernel without MADV_POPULATE_WRITE (before
 * 5.14) or a region it refuses changes nothing; errno is kept.
 */
void prefault_writable(bool heap);

#endif
