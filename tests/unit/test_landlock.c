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
#include "unit_main.h"

/* The first ABI of each right that came after ABI 1; every later ABI keeps it. */
static const struct {
	const char *name;
	int abi;
	enum { FS, NET, SCOPED, FLAGS } set;
	uint64_t bits; /* 0: any right of the set */
} later_rights[] = {
	{"refer", 2, FS, LANDLOCK_ACCESS_FS_REFER},
	{"truncate", 3, FS, LANDLOCK_ACCESS_FS_TRUNCATE},
	{"tcp", 4, NET, 0},
	{"ioctl_dev", 5, FS, LANDLOCK_ACCESS_FS_IOCTL_DEV},
	{"scopes", 6, SCOPED, 0},
	{"log flags", 7, FLAGS, 0},
	{"resolve_unix", 9, FS, LANDLOCK_ACCESS_FS_RESOLVE_UNIX},
	{"udp_bind", 10, NET, LANDLOCK_ACCESS_NET_BIND_UDP},
	{"udp_connect_send", 10, NET, LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP},
};

static bool has_right(const struct landlock_rights *r, size_t i)
{
	const uint64_t sets[] = {
		[FS] = r->fs, [NET] = r->net, [SCOPED] = r->scoped, [FLAGS] = r->restrict_flags};
	uint64_t have = sets[later_rights[i].set], bits = later_rights[i].bits;

	return bits ? (have & bits) == bits : have != 0;
}

static void test_rights_by_abi(void **state)
{
	struct landlock_rights r;

	(void)state;
	for (int abi = 1; abi <= 12; abi++) {
		landlock_rights_for_abi(abi, &r);
		for (size_t i = 0; i < ARRAY_SIZE(later_rights); i++)
			if (has_right(&r, i) != (abi >= later_rights[i].abi))
				fail_msg("ABI %d: %s %s", abi, later_rights[i].name,
					 abi >= later_rights[i].abi ? "missing" : "too early");
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

UNIT_MAIN(cmocka_unit_test(test_rights_by_abi), cmocka_unit_test(test_rights_describe),
	  cmocka_unit_test(test_levels), cmocka_unit_test(test_helpers))
