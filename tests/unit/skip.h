/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A unit test that cannot run here ends with skip_why("NAME: why", ...):
 * it prints the line "skip - NAME: why" and ends as cmocka's skip().
 * tests/run.sh counts cmocka's "[  SKIPPED ]" lines and fails a binary
 * in which a test skipped without saying why. Include after cmocka.h.
 */
#ifndef BPFBOX_TEST_SKIP_H
#define BPFBOX_TEST_SKIP_H

#define skip_why(...)                                 \
	do {                                          \
		print_message("skip - " __VA_ARGS__); \
		print_message("\n");                  \
		skip();                               \
	} while (0)

#endif
