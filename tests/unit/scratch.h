/* SPDX-License-Identifier: GPL-2.0 */
/* A scratch directory for the unit tests: made under /tmp, removed with all it holds. */
#ifndef BPFBOX_TEST_SCRATCH_H
#define BPFBOX_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static inline int scratch_rm_entry(const char *path, const struct stat *st, int flag,
				   struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Makes /tmp/bpfbox-NAME.XXXXXX, its path into dir; 0 or -1. */
static inline int scratch_make(char *dir, size_t size, const char *name)
{
	snprintf(dir, size, "/tmp/bpfbox-%s.XXXXXX", name);
	return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and everything below it; 0 or -1. */
static inline int scratch_remove(const char *dir)
{
	return nftw(dir, scratch_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The cmocka fixtures setup and teardown: a fresh scratch directory for
 * each test, its path in var (a char array), named /tmp/bpfbox-NAME.XXXXXX.
 * Use: SCRATCH_FIXTURES(dir, "spool") then
 * cmocka_unit_test_setup_teardown(test, setup, teardown).
 */
#define SCRATCH_FIXTURES(var, name)                          \
	static int setup(void **state)                       \
	{                                                    \
		(void)state;                                 \
		return scratch_make(var, sizeof(var), name); \
	}                                                    \
	static int teardown(void **state)                    \
	{                                                    \
		(void)state;                                 \
		return scratch_remove(var);                  \
	}

#endif
