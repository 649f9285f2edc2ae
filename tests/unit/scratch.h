/* SPDX-License-Identifier: GPL-2.0 */
/* A scratch directory for the unit tests: made under /tmp, removed with all it holds. */
#ifndef BPFBOX_TEST_SCRATCH_H
#define BPFBOX_TEST_SCRATCH_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "lib/util.h"

/* Makes /tmp/bpfbox-NAME.XXXXXX, its path into dir; 0 or -1. */
static inline int scratch_make(char *dir, size_t size, const char *name)
{
	snprintf(dir, size, "/tmp/bpfbox-%s.XXXXXX", name);
	return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and everything below it, at any depth (lib's rm_tree); 0 or -errno. */
static inline int scratch_remove(const char *dir)
{
	return rm_tree(dir);
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
