// SPDX-License-Identifier: GPL-2.0
/*
 * Policy ceilings (docs/operating.md): parsing the operator's rules, which
 * rule a uid gets, and a policy held to it: refused with the rule's name,
 * or its limits clamped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "policy/ceiling.h"
#include "json_at.h"
#include "unit_main.h"

static struct ceilings parse(const char *text, int want)
{
	struct json_object *o = json_tokener_parse(text);
	struct ceilings c;
	char err[512] = "";

	assert_non_null(o);
	assert_int_equal(ceilings_parse(o, &c, err, sizeof(err)), want);
	if (want)
		assert_true(err[0]);
	json_object_put(o);
	return c;
}

static const char POLICY[] =
	"{\"mode\":\"workspace-write\",\"workspace\":\"/srv/work/a\",\"network\":\"deny\","
	"\"net_allow\":[],\"rw\":[\"/tmp/x\"],\"limits\":{\"memory_mb\":2048,\"pids\":64,"
	"\"timeout_s\":120}}";

static int check(const struct ceiling_rule *r, const char *policy, char *what, char *why,
		 struct json_object **out)
{
	struct json_object *p = json_tokener_parse(policy);
	int k;

	assert_non_null(p);
	k = ceiling_check(r, p, what, 256, why, 512);
	if (out)
		*out = p;
	else
		json_object_put(p);
	return k;
}

static void test_parse_errors(void **state)
{
	struct ceilings c;

	(void)state;
	parse("{\"rules\":[]}", -EINVAL);
	parse("{\"rules\":[{\"modes\":[\"nope\"]}]}", -EINVAL);
	parse("{\"rules\":[{\"network\":\"some\"}]}", -EINVAL);
	parse("{\"rules\":[{\"rw\":[\"rel\"]}]}", -EINVAL);
	parse("{\"rules\":[{\"limits\":{\"memory_mb\":0}}]}", -EINVAL);
	parse("{\"rules\":[{\"limits\":{\"swap\":1}}]}", -EINVAL);
	parse("{\"rules\":[{\"uid\":0,\"group\":0}]}", -EINVAL);
	parse("{\"rules\":[{\"frob\":1}]}", -EINVAL);
	parse("{\"rules\":[{}],\"x\":1}", -EINVAL);
	c = parse("{\"rules\":[{\"name\":\"all\"}]}", 0);
	assert_true(c.set);
	ceilings_free(&c);
}

static void test_match(void **state)
{
	struct ceilings c = parse("{\"rules\":[{\"name\":\"u1\",\"uid\":1001},"
				  "{\"name\":\"rootgrp\",\"group\":0},{\"name\":\"rest\"}]}",
				  0);

	(void)state;
	assert_string_equal(ceilings_match(&c, 1001, 1001)->name, "u1");
	assert_string_equal(ceilings_match(&c, 0, 0)->name, "rootgrp");
	assert_string_equal(ceilings_match(&c, 4242, 4242)->name, "rest");
	ceilings_free(&c);
	c = parse("{\"exempt_root\":true,\"rules\":[{\"uid\":5}]}", 0);
	assert_null(ceilings_match(&c, 0, 0)); /* exempt */
	assert_null(ceilings_match(&c, 6, 6)); /* no rule: the caller refuses */
	assert_non_null(ceilings_match(&c, 5, 5));
	ceilings_free(&c);
}

static void test_refuse(void **state)
{
	struct ceilings c = parse("{\"rules\":[{\"name\":\"box\",\"modes\":[\"read-only\"]}]}", 0);
	char what[256], why[512];

	(void)state;
	assert_int_equal(check(&c.v[0], POLICY, what, why, NULL), -EPERM);
	assert_string_equal(why, "ceiling 'box': mode workspace-write is not allowed");
	ceilings_free(&c);
	c = parse("{\"rules\":[{\"name\":\"n\",\"network\":\"deny\"}]}", 0);
	assert_int_equal(check(&c.v[0], POLICY, what, why, NULL), 0);
	assert_int_equal(check(&c.v[0], "{\"network\":\"deny\",\"net_allow\":[\"10.0.0.0/8\"]}",
			       what, why, NULL),
			 -EPERM);
	assert_string_equal(why, "ceiling 'n': network allow-list is above deny");
	ceilings_free(&c);
	c = parse("{\"rules\":[{\"name\":\"w\",\"rw\":[\"/srv/work\",\"/tmp\"]}]}", 0);
	assert_int_equal(check(&c.v[0], POLICY, what, why, NULL), 0);
	assert_int_equal(check(&c.v[0], "{\"workspace\":\"/srv/workshop\"}", what, why, NULL),
			 -EPERM); /* a prefix of the name is not under it */
	assert_int_equal(check(&c.v[0], "{\"workspace\":\"/srv/work\",\"rw\":[\"/etc\"]}", what,
			       why, NULL),
			 -EPERM);
	assert_non_null(strstr(why, "writable path /etc is outside /srv/work"));
	ceilings_free(&c);
	c = parse("{\"rules\":[{\"name\":\"l\",\"limits\":{\"memory_mb\":1024}}]}", 0);
	assert_int_equal(check(&c.v[0], POLICY, what, why, NULL), -EPERM);
	assert_string_equal(why, "ceiling 'l': memory_mb 2048 is above 1024");
	assert_int_equal(check(&c.v[0], "{\"limits\":{\"pids\":3}}", what, why, NULL), -EPERM);
	assert_string_equal(why, "ceiling 'l': memory_mb unlimited is above 1024");
	ceilings_free(&c);
	/* --no-namespaces weakens the session: refused unless the rule allows it. */
	c = parse("{\"rules\":[{\"name\":\"ns\"},{\"name\":\"off\",\"no_namespaces\":true}]}", 0);
	assert_int_equal(check(&c.v[0], "{\"namespaces\":true}", what, why, NULL), 0);
	assert_int_equal(check(&c.v[0], "{\"namespaces\":false}", what, why, NULL), -EPERM);
	assert_string_equal(why, "ceiling 'ns': sessions without namespaces are not allowed");
	assert_int_equal(check(&c.v[1], "{\"namespaces\":false}", what, why, NULL), 0);
	ceilings_free(&c);
}

static void test_clamp(void **state)
{
	struct ceilings c = parse("{\"rules\":[{\"name\":\"c\",\"action\":\"clamp\",\"limits\":"
				  "{\"memory_mb\":512,\"pids\":64,\"timeout_s\":60}}]}",
				  0);
	struct json_object *p;
	char what[256], why[512];

	(void)state;
	assert_int_equal(check(&c.v[0], POLICY, what, why, &p), 1);
	assert_string_equal(what, "memory_mb 512, timeout_s 60"); /* pids 64 was within */
	assert_json(p, "limits.memory_mb", "512");
	assert_json(p, "limits.timeout_s", "60");
	json_object_put(p);
	ceilings_free(&c);
}

UNIT_MAIN(cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_match),
	  cmocka_unit_test(test_refuse), cmocka_unit_test(test_clamp))
