// SPDX-License-Identifier: GPL-2.0
/*
 * The end-of-run denial summary (lib/denial.h): kinds counted once each;
 * past DENIALS_MAX kinds, every type (layer and op) keeps one example, a
 * second kind of a shown type gives way, and nothing is lost from the
 * total.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lib/denial.h"
#include "bpfbox/events.h"
#include "unit_main.h"

static bool shown(const struct denials *d, const char *layer, const char *op, const char *what)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].layer, layer) && !strcmp(d->v[i].op, op) &&
		    !strcmp(d->v[i].what, what))
			return true;
	return false;
}

static void same_kind_counts_once(void **state)
{
	struct denials d = {0};

	(void)state;
	denials_add(&d, "landlock", "open", "/etc/shadow", 13, 1);
	denials_add(&d, "landlock", "open", "/etc/shadow", 13, 2);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].count, 3);
	assert_int_equal(denials_total(&d), 3);
}

/* 16 paths denied first, then a connect: the connect is shown. */
static void a_new_type_is_shown_when_full(void **state)
{
	struct denials d = {0};
	char path[32];

	(void)state;
	for (int i = 0; i < DENIALS_MAX; i++) {
		snprintf(path, sizeof(path), "/etc/f%d", i);
		denials_add(&d, "landlock", "open", path, 13, i == 3 ? 1 : 5);
	}
	assert_int_equal(d.n, DENIALS_MAX);
	denials_add(&d, "cgroup-bpf", "connect", "10.0.0.1:443", 1, 2);
	assert_true(shown(&d, "cgroup-bpf", "connect", "10.0.0.1:443"));
	/* The least counted open gave way; it is counted among the others. */
	assert_false(shown(&d, "landlock", "open", "/etc/f3"));
	assert_int_equal(d.n, DENIALS_MAX);
	assert_int_equal(d.other, 1);
	assert_int_equal(denials_total(&d), 15 * 5 + 1 + 2);
	/* A second connect kind: its type is shown already, so it is "other". */
	denials_add(&d, "cgroup-bpf", "connect", "10.0.0.2:443", 1, 4);
	assert_false(shown(&d, "cgroup-bpf", "connect", "10.0.0.2:443"));
	assert_int_equal(d.other, 5);
	/* The shown connect still counts on. */
	denials_add(&d, "cgroup-bpf", "connect", "10.0.0.1:443", 1, 1);
	assert_true(shown(&d, "cgroup-bpf", "connect", "10.0.0.1:443"));
	assert_int_equal(denials_total(&d), 15 * 5 + 1 + 2 + 4 + 1);
}

/* 16 types, one kind each: nothing gives way, a 17th type is "other". */
static void one_of_each_type_is_kept(void **state)
{
	struct denials d = {0};
	char op[16];

	(void)state;
	for (int i = 0; i < DENIALS_MAX; i++) {
		snprintf(op, sizeof(op), "op%d", i);
		denials_add(&d, "seccomp", op, "x", 1, 1);
	}
	denials_add(&d, "mount", "write", "/usr/x", 30, 7);
	assert_false(shown(&d, "mount", "write", "/usr/x"));
	assert_int_equal(d.n, DENIALS_MAX);
	assert_int_equal(d.other, 7);
	for (int i = 0; i < DENIALS_MAX; i++) {
		snprintf(op, sizeof(op), "op%d", i);
		assert_true(shown(&d, "seccomp", op, "x"));
	}
}

/* What the session chose is kept on one line, without control bytes. */
static void what_is_cleaned(void **state)
{
	struct denials d = {0};

	(void)state;
	denials_add(&d, "mount", "mkdir", "/etc/a\nbpfbox: error: x\x1b[2J", 30, 1);
	denials_add(&d, "mount", "mkdir", "/etc/a\rbpfbox: error: x\x1b[2J", 30, 1);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].count, 2);
	assert_string_equal(d.v[0].what, "/etc/a?bpfbox: error: x?[2J");
}

/* is(x) holds for each of yes and for none of no. */
static void expect_fallbacks(bool (*is)(const char *), const char *const *yes, size_t nyes,
			     const char *const *no, size_t nno)
{
	for (size_t i = 0; i < nyes; i++)
		if (!is(yes[i]))
			fail_msg("%s: not a fallback", yes[i]);
	for (size_t i = 0; i < nno; i++)
		if (is(no[i]))
			fail_msg("%s: taken for a fallback", no[i]);
}

/* The name services' sockets a lookup falls back from, and only those. */
static void fallbacks_are_name_services(void **state)
{
	static const char *const yes[] = {
		"/var/run/nscd/socket",
		"/run/nscd/socket",
		"/run/systemd/userdb/io.systemd.Multiplexer",
		"/var/run/systemd/userdb/io.systemd.DynamicUser",
		"/run/systemd/resolve/io.systemd.Resolve",
		"/var/lib/sss/pipes/nss",
	};
	static const char *const no[] = {
		"/run/dbus/system_bus_socket",
		"/run/nscd/socket2",
		"/run/nscd",
		"/run/systemd/userdb/",
		"/run/systemd/userdb/../../docker.sock",
		"/var/run/docker.sock",
		"/run/systemd/resolve/io.systemd.Resolve.Monitor",
		"/home/u/run/nscd/socket",
		"nscd/socket",
	};

	(void)state;
	expect_fallbacks(denial_is_fallback, yes, sizeof(yes) / sizeof(yes[0]), no,
			 sizeof(no) / sizeof(no[0]));
}

/* A write a runtime goes on without: a process's own coredump_filter, and nothing near it. */
static void fallback_files_are_own_proc_files(void **state)
{
	static const char *const yes[] = {
		"/proc/self/coredump_filter",
		"/proc/thread-self/coredump_filter",
		"/proc/4242/coredump_filter",
	};
	static const char *const no[] = {
		"/proc/self/environ",
		"/proc/sys/kernel/core_pattern",
		"/proc/self/coredump_filter2",
		"/proc/self/x/coredump_filter",
		"/proc/42a/coredump_filter",
		"/proc/coredump_filter",
		"/home/u/proc/self/coredump_filter",
		"coredump_filter",
	};

	(void)state;
	expect_fallbacks(denial_file_is_fallback, yes, sizeof(yes) / sizeof(yes[0]), no,
			 sizeof(no) / sizeof(no[0]));
}

/* A net.deny record of the egress proxy (userspace/net/). */
static struct bpfbox_net_event net_deny(const char *name, uint16_t port, const char *rule,
					const char *reason)
{
	struct bpfbox_net_event n = {0};

	n.hdr.type = BPFBOX_EV_NET;
	n.hdr.decision = BPFBOX_DENY;
	n.hdr.layer = BPFBOX_LAYER_EGRESS;
	n.hdr.err = -111; /* ECONNREFUSED */
	n.kind = BPFBOX_NET_CONNECT;
	n.port = port;
	n.addr[10] = n.addr[11] = 0xff;
	n.addr[12] = 198;
	n.addr[13] = 51;
	n.addr[14] = 100;
	n.addr[15] = 7;
	snprintf(n.name, sizeof(n.name), "%s", name);
	snprintf(n.rule, sizeof(n.rule), "%s", rule);
	snprintf(n.reason, sizeof(n.reason), "%s", reason);
	return n;
}

/* The proxy's refusals are denials, with the rule and reason; an allowed host's failure is not. */
static void egress_refusals_count(void **state)
{
	struct denials d = {0};
	struct bpfbox_net_event n = net_deny("other.test", 443, "", "no net_allow rule");

	(void)state;
	assert_true(denials_add_record(&d, &n, sizeof(n)));
	n = net_deny("", 8080, "", "address not resolved by the session");
	assert_true(denials_add_record(&d, &n, sizeof(n)));
	n = net_deny("bad.test", 443, "*.test:443", "net_deny");
	assert_true(denials_add_record(&d, &n, sizeof(n)));
	n = net_deny("allowed.test", 443, "allowed.test", "upstream: Connection refused");
	denials_add_record(&d, &n, sizeof(n));
	n = net_deny("gone.test", 443, "gone.test", "gone.test does not resolve");
	denials_add_record(&d, &n, sizeof(n));
	n = net_deny("other.test", 53, "", "no net_allow rule");
	n.kind = BPFBOX_NET_DNS;
	denials_add_record(&d, &n, sizeof(n));
	assert_int_equal(d.n, 4);
	assert_true(shown(&d, "egress-proxy", "connect", "other.test:443"));
	assert_string_equal(d.v[0].reason, "no net_allow rule");
	assert_true(shown(&d, "egress-proxy", "connect", "198.51.100.7:8080"));
	assert_true(shown(&d, "egress-proxy", "connect", "bad.test:443"));
	assert_string_equal(d.v[2].rule, "*.test:443");
	assert_true(shown(&d, "egress-proxy", "resolve", "other.test"));
	assert_int_equal(d.v[0].err, 111);
}

UNIT_MAIN(cmocka_unit_test(same_kind_counts_once), cmocka_unit_test(egress_refusals_count),
	  cmocka_unit_test(a_new_type_is_shown_when_full),
	  cmocka_unit_test(one_of_each_type_is_kept), cmocka_unit_test(fallbacks_are_name_services),
	  cmocka_unit_test(fallback_files_are_own_proc_files), cmocka_unit_test(what_is_cleaned))
