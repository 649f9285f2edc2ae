// SPDX-License-Identifier: GPL-2.0
/*
 * What reaches a terminal (lib/util.h term_clean(), used by bpfbox top and
 * bpfbox sessions) and the typed JSON members (lib/json.h) the readers of
 * the daemon's replies share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "lib/json.h"
#include "lib/util.h"
#include "unit_main.h"

static void clean_is(const char *in, size_t size, const char *want)
{
	char out[64];

	assert_true(size <= sizeof(out));
	assert_int_equal(term_clean(out, size, in), strlen(want));
	assert_string_equal(out, want);
}

/* C0, DEL and C1 (raw and as UTF-8) never reach the terminal. */
static void controls(void **state)
{
	(void)state;
	clean_is("a\x1b[2Jb", 64, "a?[2Jb");
	clean_is("tab\tnl\ncr\r", 64, "tab?nl?cr?");
	clean_is("del\x7f", 64, "del?");
	clean_is("csi\xc2\x9b"
		 "31m",
		 64, "csi?31m"); /* U+009B, the 8-bit CSI */
	clean_is("raw\x9b"
		 "31m",
		 64, "raw?31m");		       /* a bare 8-bit CSI byte */
	clean_is("nel\xc2\x85.", 64, "nel?.");	       /* U+0085 */
	clean_is("\xc2\x9f\xc2\xa0", 64, "?\xc2\xa0"); /* U+009F; U+00A0 is text */
}

/* Well-formed UTF-8 is kept; what is not UTF-8 is one '?' a byte. */
static void utf8(void **state)
{
	(void)state;
	clean_is("caf\xc3\xa9 \xe2\x96\xbc \xf0\x9f\x90\x9d", 64,
		 "caf\xc3\xa9 \xe2\x96\xbc \xf0\x9f\x90\x9d");
	clean_is("\xc0\xaf", 64, "??");	     /* overlong '/' */
	clean_is("\xed\xa0\x80", 64, "???"); /* a surrogate */
	clean_is("\xe2\x96", 64, "??");	     /* cut short */
	clean_is("\xff\xfe", 64, "??");
}

/* The cut is on a character boundary; dst may be src. */
static void cut_and_in_place(void **state)
{
	char buf[32] = "ab\xe2\x96\xbc"
		       "cd\x01";

	(void)state;
	clean_is("ab\xe2\x96\xbc", 5, "ab"); /* 3 bytes do not fit in 2 */
	clean_is("ab\xe2\x96\xbc", 6, "ab\xe2\x96\xbc");
	clean_is("abcdef", 4, "abc");
	clean_is("abc", 1, "");
	assert_int_equal(term_clean(buf, sizeof(buf), buf), 8);
	assert_string_equal(buf, "ab\xe2\x96\xbc"
				 "cd?");
	assert_int_equal(term_clean(buf, 0, "x"), 0);
}

/* Any bytes in: what comes out is UTF-8 without a control character. */
static void any_bytes(void **state)
{
	unsigned int seed = 16;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		char in[24], out[17];
		size_t n = (size_t)(rand_r(&seed) % (sizeof(in) - 1)), len;

		for (size_t i = 0; i < n; i++)
			in[i] = (char)(1 + rand_r(&seed) % 255);
		in[n] = '\0';
		len = term_clean(out, sizeof(out), in);
		assert_true(len < sizeof(out));
		assert_int_equal(strlen(out), len);
		for (size_t i = 0; i < len;) {
			const unsigned char *p = (const unsigned char *)out + i;
			size_t k = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;

			assert_true(*p >= 0x20 && *p != 0x7f && !(*p >= 0x80 && *p < 0xc2));
			assert_false(p[0] == 0xc2 && p[1] <= 0x9f);
			for (size_t j = 1; j < k; j++)
				assert_int_equal(p[j] & 0xc0, 0x80);
			i += k;
		}
	}
}

static void members(void **state)
{
	struct json_object *o = json_tokener_parse(
		"{\"s\": \"v\", \"i\": -7, \"n\": null, \"f\": 1.5, \"is\": \"3\", \"t\": true, "
		"\"no\": false, \"one\": 1}");
	int64_t v = 42;

	(void)state;
	assert_non_null(o);
	assert_string_equal(json_member_str(o, "s"), "v");
	assert_null(json_member_str(o, "i"));
	assert_null(json_member_str(o, "n"));
	assert_null(json_member_str(o, "missing"));
	assert_null(json_member_str(NULL, "s"));
	assert_true(json_member_int(o, "i", &v));
	assert_int_equal(v, -7);
	v = 42;
	assert_false(json_member_int(o, "f", &v));
	assert_false(json_member_int(o, "is", &v));
	assert_false(json_member_int(o, "n", &v));
	assert_false(json_member_int(o, "missing", &v));
	assert_int_equal(v, 42);
	assert_true(json_member_true(o, "t"));
	assert_false(json_member_true(o, "no"));
	assert_false(json_member_true(o, "one")); /* a number is no boolean */
	assert_false(json_member_true(o, "s"));
	assert_false(json_member_true(o, "missing"));
	assert_false(json_member_true(NULL, "t"));
	json_object_put(o);
}

UNIT_MAIN(cmocka_unit_test(controls), cmocka_unit_test(utf8), cmocka_unit_test(cut_and_in_place),
	  cmocka_unit_test(any_bytes), cmocka_unit_test(members))
