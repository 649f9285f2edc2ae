/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The main() of a cmocka binary, from its test list:
 * UNIT_MAIN(cmocka_unit_test(test_a), cmocka_unit_test(test_b)), or with
 * group fixtures UNIT_MAIN_GROUP(setup, teardown, tests...). Exits with the
 * number of tests that failed. Include after cmocka.h.
 */
#ifndef BPFBOX_TEST_UNIT_MAIN_H
#define BPFBOX_TEST_UNIT_MAIN_H

#define UNIT_MAIN_GROUP(setup, teardown, ...)                          \
	int main(void)                                                 \
	{                                                              \
		const struct CMUnitTest tests[] = {__VA_ARGS__};       \
		return cmocka_run_group_tests(tests, setup, teardown); \
	}
#define UNIT_MAIN(...) UNIT_MAIN_GROUP(NULL, NULL, __VA_ARGS__)

#endif
