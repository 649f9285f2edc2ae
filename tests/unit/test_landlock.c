// SPDX-License-Identifier: GPL-2.0
/* Landlock ABI downgrade table, levels and small parsers. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sandbox/landlock.h"
#include "probe/probe.h"
#include "lib/util.h"

static void test_rights_by_abi(void **state)
{
	static const struct {
		int abi;
		bool refer, truncate, net, ioctl_dev, scoped, log, unix_path, udp;
	} rows[] = {
		{1, false, false, false, false, false, false, false, false},
		{2, true, false, false, false, false, false, false, false},
		{3, true, true, false, false, false, false, false, false},
		{4, true, true, true, false, false, false, false, false},
		{5, true, true, true, true, false, false, false, false},
		{6, true, true, true, true, true, false, false, false},
		{7, true, true, true, true, true, true, false, false},
		{8, true, true, true, true, true, true, false, false},
		{9, true, true, true, true, true, true, true, false},
		{10, true, true, true, true, true, true, true, true},
		{11, true, true, true, true, true, true, true, true},
		{12, true, true, true, true, true, true, true, true},
	};
	struct landlock_rights r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		landlock_rights_for_abi(rows[i].abi, &r);
		assert_int_equal(!!(r.fs & LANDLOCK_ACCESS_FS_REFER), rows[i].refer);
		assert_int_equal(!!(r.fs & LANDLOCK_ACCESS_FS_TRUNCATE), rows[i].truncate);
		assert_int_equal(!!r.net, rows[i].net);
		assert_int_equal(!!(r.fs & LANDLOCK_ACCESS_FS_IOCTL_DEV), rows[i].ioctl_dev);
		assert_int_equal(!!r.scoped, rows[i].scoped);
		assert_int_equal(!!r.restrict_flags, rows[i].log);
		assert_int_equal(!!(r.fs & LANDLOCK_ACCESS_FS_RESOLVE_UNIX), rows[i].unix_path);
		assert_int_equal(!!(r.net & LANDLOCK_ACCESS_NET_BIND_UDP), rows[i].udp);
		assert_int_equal(!!(r.net & LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP), rows[i].udp);
		/* Every ABI keeps the 13 rights of ABI 1. */
		assert_int_equal(r.fs & 0x1fff, 0x1fff);
		assert_true(r.abi <= BPFBOX_LANDLOCK_ABI_MAX);
	}
	landlock_rights_for_abi(0, &r);
	assert_int_equal(r.fs, 0);
	assert_int_equal(r.abi, 0);
}

static void test_rights_describe(void **state)
{
	struct landlock_rights r;
	char buf[256];

	(void)state;
	landlock_rights_for_abi(2, &r);
	landlock_rights_describe(&r, buf, sizeof(buf));
	assert_string_equal(buf, "fs,refer");
	landlock_rights_for_abi(7, &r);
	landlock_rights_describe(&r, buf, sizeof(buf));
	assert_string_equal(buf, "fs,refer,truncate,tcp_bind,tcp_connect,ioctl_dev,"
				 "scope_abstract_unix,scope_signal,log_flags");
	landlock_rights_for_abi(11, &r);
	landlock_rights_describe(&r, buf, sizeof(buf));
	assert_string_equal(buf,
			    "fs,refer,truncate,tcp_bind,tcp_connect,ioctl_dev,resolve_unix,"
			    "udp_bind,udp_connect_send,scope_abstract_unix,scope_signal,log_flags");
}

static void test_levels(void **state)
{
	enum bpfbox_level l;

	(void)state;
	assert_int_equal(level_from(true, true, true, true), LEVEL_FULL);
	assert_int_equal(level_from(true, true, true, false), LEVEL_STANDARD);
	assert_int_equal(level_from(false, true, true, true), LEVEL_STANDARD);
	assert_int_equal(level_from(true, false, true, true), LEVEL_MINIMAL);
	assert_int_equal(level_from(true, true, false, true), LEVEL_NONE);
	assert_int_equal(level_parse("standard", &l), 0);
	assert_int_equal(l, LEVEL_STANDARD);
	assert_int_equal(level_parse("FULL", &l), 0);
	assert_int_equal(l, LEVEL_FULL);
	assert_int_equal(level_parse("ultra", &l), -EINVAL);
	assert_string_equal(level_name(LEVEL_MINIMAL), "Minimal");
}

static void test_helpers(void **state)
{
	unsigned long long v;

	(void)state;
	assert_true(word_list_has("lockdown,capability,landlock,bpf", "bpf", ","));
	assert_false(word_list_has("lockdown,bpfx", "bpf", ","));
	assert_false(word_list_has("", "bpf", ","));
	assert_int_equal(parse_u64("120", &v), 0);
	assert_int_equal(v, 120);
	assert_int_equal(parse_u64("-1", &v), -EINVAL);
	assert_int_equal(parse_u64("12x", &v), -EINVAL);
	assert_int_equal(parse_u64("", &v), -EINVAL);
	assert_int_equal(parse_u64("99999999999999999999999", &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rights_by_abi),
		cmocka_unit_test(test_rights_describe),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
