/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The main() of a cmocka binary without group fixtures, from its test list:
 * UNIT_MAIN(cmocka_unit_test(test_a), cmocka_unit_test(test_b)).
 * Exits with the number of tests that failed. Include after cmocka.h.
 */
#ifndef BPFBOX_TEST_UNIT_MAIN_H
#define BPFBOX_TEST_UNIT_MAIN_H

#define UNIT_MAIN(...)                                            \
	int main(void)                                            \
	{                                                         \
		const struct CMUnitTest tests[] = {__VA_ARGS__};  \
		return cmocka_run_group_tests(tests, NULL, NULL); \
	}

#endif
