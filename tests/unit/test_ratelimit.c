// SPDX-License-Identifier: GPL-2.0
/*
 * The token bucket behind --audit-rate and the daemon's log (lib/ratelimit.h)
 * on a clock the test moves, and the audit flood counter over real record
 * headers: exact counts by type, one line a second, nothing lost silently.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "audit/encode.h"
#include "bpfbox/events.h"
#include "lib/ratelimit.h"
#include "json_at.h"
#include "unit_main.h"

#define S 1000000000ULL

static void bucket(void **state)
{
	struct ratelimit r;
	uint64_t t = 5 * S;
	int n = 0;

	(void)state;
	ratelimit_init(&r, 10, 20);
	for (int i = 0; i < 100; i++)
		n += ratelimit_take(&r, t);
	assert_int_equal(n, 20); /* the burst */
	t += S / 2;		 /* half a second: 5 tokens */
	n = 0;
	for (int i = 0; i < 100; i++)
		n += ratelimit_take(&r, t);
	assert_int_equal(n, 5);
	t += 3600 * S; /* an hour: full, never more than the burst */
	n = 0;
	for (int i = 0; i < 100; i++)
		n += ratelimit_take(&r, t);
	assert_int_equal(n, 20);
	ratelimit_init(&r, 0, 1); /* unlimited */
	for (int i = 0; i < 1000; i++)
		assert_true(ratelimit_take(&r, t));
}

static void parse(void **state)
{
	uint64_t rate, burst;

	(void)state;
	assert_int_equal(ratelimit_parse("100", &rate, &burst), 0);
	assert_true(rate == 100 && burst == 400);
	assert_int_equal(ratelimit_parse("100/7", &rate, &burst), 0);
	assert_true(rate == 100 && burst == 7);
	assert_int_equal(ratelimit_parse("0", &rate, &burst), 0);
	assert_true(rate == 0);
	assert_int_equal(ratelimit_parse("lots", &rate, &burst), -EINVAL);
	assert_int_equal(ratelimit_parse("10/0", &rate, &burst), -EINVAL);
	assert_int_equal(ratelimit_parse("/5", &rate, &burst), -EINVAL);
	assert_int_equal(ratelimit_parse("0/5", &rate, &burst), -EINVAL);
}

static void flood_counts(void **state)
{
	struct bpfbox_file_event f = {.hdr.type = BPFBOX_EV_FILE};
	struct bpfbox_exec_event x = {.hdr.type = BPFBOX_EV_EXEC};
	struct audit_clock c = {0};
	struct audit_flood fl;
	struct jsonw w = {0};
	struct json_object *o;
	uint64_t t = 10 * S;
	int passed = 0;

	(void)state;
	audit_flood_init(&fl, 100, 100);
	for (int i = 0; i < 1000; i++)
		passed += audit_flood_pass(&fl, &f, sizeof(f), t);
	for (int i = 0; i < 10; i++)
		passed += audit_flood_pass(&fl, &x, sizeof(x), t);
	assert_int_equal(passed, 100);
	assert_int_equal(audit_flood_line(&fl, &w, &c, "s", t, false), 1);
	o = json_tokener_parse(w.buf);
	assert_non_null(o);
	assert_json(o, "count", "910");
	assert_json(o, "types.file", "900");
	assert_json(o, "types.exec", "10");
	json_object_put(o);
	/* Within the second: counted, not said; forced at the end: said. */
	jsonw_reset(&w);
	assert_false(audit_flood_pass(&fl, &f, sizeof(f), t));
	assert_int_equal(audit_flood_line(&fl, &w, &c, "s", t + S / 2, false), 0);
	assert_int_equal(audit_flood_line(&fl, &w, &c, "s", t + S / 2, true), 1);
	assert_int_equal(fl.all, 911);
	assert_int_equal(audit_flood_line(&fl, &w, &c, "s", t + 3 * S, true), 0);
	jsonw_free(&w);
}

UNIT_MAIN(cmocka_unit_test(bucket), cmocka_unit_test(parse), cmocka_unit_test(flood_counts))
