// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's BTF read once per hold (probe/kbtf.h), by the reads this
 * process really made of /sys/kernel/btf/vmlinux: libbpf's own lookups
 * (libbpf_find_vmlinux_btf_id, the path of every object's load) share
 * the copy inside a hold, threads too; outside one, every load reads, and
 * a copy freed by everyone after its hold is read afresh.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probe/kbtf.h"
#include "skip.h"
#include "unit_main.h"

static void need_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		skip_why("kbtf: no /sys/kernel/btf/vmlinux here (%s)", strerror(errno));
}

static int func_id(void)
{
	return libbpf_find_vmlinux_btf_id("security_file_open", BPF_TRACE_FENTRY);
}

static void outside_a_hold_every_load_reads(void **state)
{
	(void)state;
	unsigned int r0;
	struct btf *a, *b;

	need_btf();
	r0 = kbtf_reads();
	a = btf__load_vmlinux_btf();
	b = btf__load_vmlinux_btf();
	assert_false(libbpf_get_error(a) || libbpf_get_error(b));
	assert_ptr_not_equal(a, b);
	assert_int_equal(btf__type_cnt(a), btf__type_cnt(b));
	assert_true(func_id() > 0);
	assert_int_equal(kbtf_reads(), r0 + 3);
	btf__free(a);
	btf__free(b);
}

static void a_hold_reads_once(void **state)
{
	(void)state;
	unsigned int r0;
	struct btf *a, *b;
	int id;

	need_btf();
	kbtf_hold();
	r0 = kbtf_reads();
	a = btf__load_vmlinux_btf();
	id = func_id(); /* libbpf's own load and free, inside libbpf */
	b = btf__load_vmlinux_btf();
	assert_ptr_equal(a, b);
	assert_true(id > 0);
	btf__free(a);
	/* Still whole for b's holder after a's free and libbpf's. */
	assert_int_equal(btf__find_by_name_kind(b, "security_file_open", BTF_KIND_FUNC), id);
	assert_int_equal(kbtf_reads(), r0 + 1);
	btf__free(b);
	kbtf_release();
	/* Nobody holds it now: the next load reads again. */
	a = btf__load_vmlinux_btf();
	assert_false(libbpf_get_error(a));
	assert_int_equal(kbtf_reads(), r0 + 2);
	btf__free(a);
}

static void *load_one(void *arg)
{
	*(struct btf **)arg = btf__load_vmlinux_btf();
	return NULL;
}

static void threads_share_one_copy(void **state)
{
	(void)state;
	struct btf *got[4];
	pthread_t t[4];
	unsigned int r0;

	need_btf();
	kbtf_hold();
	r0 = kbtf_reads();
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_one, &got[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		assert_false(libbpf_get_error(got[i]));
		assert_ptr_equal(got[i], got[0]);
	}
	assert_int_equal(kbtf_reads(), r0 + 1);
	/* Released before its users free it: the copy lives until the last one. */
	kbtf_release();
	for (int i = 0; i < 4; i++) {
		assert_true(btf__type_cnt(got[i]) > 1000);
		btf__free(got[i]);
	}
}

UNIT_MAIN(cmocka_unit_test(outside_a_hold_every_load_reads), cmocka_unit_test(a_hold_reads_once),
	  cmocka_unit_test(threads_share_one_copy))
