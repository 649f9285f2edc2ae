// SPDX-License-Identifier: GPL-2.0
/* RELP framing (userspace/audit/relp.c): what the client sends and how it reads answers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "audit/relp.h"
#include "unit_main.h"

struct got {
	uint32_t txnr[8];
	int code[8];
	int n;
};

static void on_rsp(void *ctx, uint32_t txnr, int code)
{
	struct got *g = ctx;

	if (g->n < 8) {
		g->txnr[g->n] = txnr;
		g->code[g->n] = code;
	}
	g->n++;
}

static void test_frames(void **state)
{
	struct relp r;
	char buf[256];
	uint32_t t;
	size_t n;

	(void)state;
	relp_reset(&r);
	n = relp_open_frame(&r, buf, sizeof(buf));
	assert_true(n > 0);
	assert_memory_equal(buf,
			    "1 open 51 "
			    "relp_version=0\nrelp_software=bpfbox\ncommands=syslog\n",
			    n);
	n = relp_syslog_head(&r, 12, buf, sizeof(buf), &t);
	assert_int_equal(t, 2);
	assert_memory_equal(buf, "2 syslog 12 ", n);
	r.txnr = 999999999;
	relp_syslog_head(&r, 1, buf, sizeof(buf), &t);
	assert_int_equal(t, 1); /* wraps into the protocol's range */
}

static void test_answers(void **state)
{
	const char in[] = "1 rsp 6 200 OK\n2 rsp 6 200 OK\n3 rsp 16 500 not accepted\n";
	struct got g = {0};
	struct relp r;

	(void)state;
	relp_reset(&r);
	/* One byte at a time: answers split anywhere still parse. */
	for (size_t i = 0; i < sizeof(in) - 1; i++)
		assert_int_equal(relp_input(&r, in + i, 1, on_rsp, &g), 0);
	assert_true(r.opened); /* txnr 1 answered the open */
	assert_int_equal(g.n, 2);
	assert_int_equal(g.txnr[0], 2);
	assert_int_equal(g.code[0], 200);
	assert_int_equal(g.txnr[1], 3);
	assert_int_equal(g.code[1], 500);
	assert_int_equal(relp_input(&r, "0 serverclose 0\n", 16, on_rsp, &g), 1);
	relp_reset(&r);
	assert_int_equal(relp_input(&r, "hello there\n", 12, on_rsp, &g), -EPROTO);
	relp_reset(&r);
	assert_int_equal(relp_input(&r, "4 rsp 6 200 OKX", 15, on_rsp, &g), -EPROTO);
}

UNIT_MAIN(cmocka_unit_test(test_frames), cmocka_unit_test(test_answers))
