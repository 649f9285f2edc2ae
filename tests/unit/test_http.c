// SPDX-License-Identifier: GPL-2.0
/*
 * The proxy's plain HTTP framing (net/http.c, docs/network.md): which bytes
 * of a keep-alive connection are heads to judge, which are bodies, and
 * what cannot be framed beyond doubt (then the connection ends).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>

#include "net/egress_internal.h"
#include "unit_main.h"

/*
 * Feeds in to a frame as the relay does (heads judged allowed), and
 * returns the Host of every head seen, space-separated, then "|BAD" or
 * "|MORE" for how it stopped. Approved bytes are consumed at once.
 */
static const char *frame(const char *in, size_t len, char *out, size_t size)
{
	static struct http_frame f;
	struct http_head h;
	const char *why;
	size_t hl, o = 0;
	int a;

	memset(&f, 0, sizeof(f));
	memcpy(f.buf, in, len);
	f.len = len;
	out[0] = '\0';
	while ((a = eg_http_advance(&f, &h, &hl, &why)) == HTTP_HEAD) {
		o += snprintf(out + o, size - o, "%s ", h.host[0] ? h.host : h.target);
		eg_http_body(&f, &h);
		f.ok += hl;
	}
	snprintf(out + o, size - o, "|%s", a == HTTP_BAD ? "BAD" : "MORE");
	return out;
}

#define FRAMES(in, want)                                                                  \
	do {                                                                              \
		char out_[256];                                                           \
		assert_string_equal(frame(in, sizeof(in) - 1, out_, sizeof(out_)), want); \
	} while (0)

#define GET(h) "GET / HTTP/1.1\r\nHost: " h "\r\n\r\n"

/* Every head of a keep-alive connection is seen, bodies are skipped. */
static void keepalive(void **state)
{
	(void)state;
	FRAMES(GET("a.test") GET("B.test:8080"), "a.test b.test |MORE");
	FRAMES("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 36\r\n\r\n" GET("other.test")
		       GET("a.test"),
	       "a.test a.test |MORE");
	FRAMES("POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: Chunked\r\n\r\n"
	       "24;x=y\r\n" GET("other.test") "\r\n0\r\nT: 1\r\n\r\n" GET("a.test"),
	       "a.test a.test |MORE");
	/* A body may hold any byte. */
	FRAMES("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\n\0\n\r" GET("a.test"),
	       "a.test a.test |MORE");
	FRAMES("GET http://a.test:81/x HTTP/1.1\r\n\r\n", "a.test |MORE");
	/* Any scheme, or the authority alone: the host a server would prefer. */
	FRAMES("GET https://B.test/x HTTP/1.1\r\n\r\n", "b.test |MORE");
	FRAMES("GET c.test:80 HTTP/1.1\r\n\r\n", "c.test |MORE");
	FRAMES("OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", "a.test |MORE");
	FRAMES("GET / HTTP/1.1\r\nHost: a.te", "|MORE");
}

/* What cannot be framed beyond doubt. */
static void refused(void **state)
{
	(void)state;
	FRAMES("GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", "|BAD");
	FRAMES("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	       "|BAD");
	FRAMES("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: "
	       "chunked\r\n\r\n",
	       "|BAD");
	FRAMES("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "|BAD");
	FRAMES("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", "|BAD");
	FRAMES("GET / HTTP/1.1\nHost: a.test\n\n", "|BAD");
	FRAMES("GET / HTTP/1.1\r\nHost: a.test\r\n X: folded\r\n\r\n", "|BAD");
	FRAMES("GET / HTTP/1.1\r\nHost : a.test\r\n\r\n", "|BAD");
	FRAMES("GET / HTTP/1.1\r\nHost: a\0.test\r\n\r\n", "|BAD");
	FRAMES("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n\r\n", "|BAD");
	FRAMES("\r\n" GET("a.test"), "|BAD");
	FRAMES("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", "|BAD");
	FRAMES("GET / HTTP/2.0\r\nHost: a\r\n\r\n", "|BAD");
	/* A chunk without its CRLF, a chunk size that is not hex. */
	FRAMES("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxyz",
	       "a |BAD");
	FRAMES("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "a |BAD");
}

/* Any method, after empty lines too, is HTTP; other first bytes are not. */
static void methods(void **state)
{
	(void)state;
	assert_true(eg_http_method((const uint8_t *)"TRACE / ", 8));
	assert_true(eg_http_method((const uint8_t *)"\r\nGET ", 6));
	assert_true(eg_http_method((const uint8_t *)"PROP", 4));
	assert_false(eg_http_method((const uint8_t *)"SSH-2.0-x", 9));
	assert_false(eg_http_method((const uint8_t *)"\x16\x03\x01", 3));
	assert_false(eg_http_method((const uint8_t *)"get / ", 6));
}

/* HTTP rules (policy/netrule.c): what a rule says, and which requests it matches. */
static void http_rules(void **state)
{
	char m[NET_HTTP_METHODS_LEN], p[NET_HTTP_PATH_LEN];
	const char *why;

	(void)state;
	assert_int_equal(net_http_rule_parse("api.test:443 GET,POST /repos/acme/**", m, p, &why),
			 1);
	assert_string_equal(m, "GET,POST");
	assert_string_equal(p, "/repos/acme/**");
	assert_int_equal(net_http_rule_parse("api.test:443", m, p, &why), 0);
	assert_int_equal(net_http_rule_parse("api.test:80 * /x", m, p, &why), 1);
	assert_int_equal(net_http_rule_parse("*.api.test:443 GET /x", m, p, &why), 1);
	for (const char *const *b =
		     (const char *const[]){"api.test:443 GET", "api.test:443 GET x",
					   "api.test:443 get /x", "api.test:443 GET, /x",
					   "api.test:443 GET /x y", "api.test:8080 GET /x",
					   "api.test GET /x", "*api.test:443 GET /x",
					   "a.*.test:443 GET /x", "*.:443 GET /x",
					   "api.test:443-444 GET /x", NULL};
	     *b; b++)
		assert_int_equal(net_http_rule_parse(*b, m, p, &why), -EINVAL);
	assert_true(net_http_match("GET,POST", "/repos/acme/**", "POST", "/repos/acme/a/b"));
	assert_true(net_http_match("GET", "/repos/acme/**", "GET", "/repos/acme/"));
	assert_false(net_http_match("GET", "/repos/acme/**", "GET", "/repos/acmex"));
	assert_false(net_http_match("GET", "/repos/acme/**", "PUT", "/repos/acme/a"));
	assert_false(net_http_match("GET,POST", "/x", "GETX", "/x"));
	assert_false(net_http_match("GET,POST", "/x", "POS", "/x"));
	assert_true(net_http_match("*", "/a/*", "DELETE", "/a/b"));
	assert_false(net_http_match("*", "/a/*", "GET", "/a/b/c"));
	assert_true(net_http_match("GET", "/a/*/c", "GET", "/a/b/c"));
	assert_false(net_http_match("GET", "/a/b", "GET", "/a/b/"));
}

/* The path a rule judges: no query; what a server could read otherwise is bad. */
static void request_paths(void **state)
{
	static const struct {
		const char *line, *path;
		bool bad;
	} v[] = {
		{"GET /a/b?x=/../c HTTP/1.1", "/a/b", false},
		{"GET http://api.test/a/b#f HTTP/1.1", "/a/b", false},
		{"GET http://api.test HTTP/1.1", "/", false},
		{"GET /a/../b HTTP/1.1", "", true},
		{"GET /a/./b HTTP/1.1", "", true},
		{"GET /a/.. HTTP/1.1", "", true},
		{"GET /a/%2E%2e/b HTTP/1.1", "", true},
		{"GET /a/%2fb HTTP/1.1", "", true},
		{"GET /a\\b HTTP/1.1", "", true},
		{"GET /a/..;/admin HTTP/1.1", "", true},
		{"GET /a/.;/b HTTP/1.1", "", true},
		{"GET /a/%00/b HTTP/1.1", "", true},
		{"GET /a/...b/.c HTTP/1.1", "/a/...b/.c", false},
		{"GET /a/b. HTTP/1.1", "/a/b.", false},
	};
	char buf[256];
	struct http_head h;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int n = snprintf(buf, sizeof(buf), "%s\r\nHost: api.test\r\n\r\n", v[i].line);

		assert_int_equal(eg_http_head((const uint8_t *)buf, n, &h, &why), 0);
		assert_int_equal(h.path_bad, v[i].bad);
		if (!v[i].bad)
			assert_string_equal(h.path, v[i].path);
	}
}

/*
 * A TLS record holding a ClientHello whose only extension is ALPN with the
 * protocols of alpn (each a length byte, then its name, as on the wire):
 * its length in out.
 */
static size_t hello(const uint8_t *alpn, size_t an, uint8_t *out)
{
	size_t ext = 4 + 2 + an, body = 2 + 32 + 1 + 4 + 2 + 2 + ext, o = 0;

	out[o++] = 0x16, out[o++] = 3, out[o++] = 1;
	out[o++] = (4 + body) >> 8, out[o++] = (4 + body) & 255;
	out[o++] = 1, out[o++] = 0, out[o++] = body >> 8, out[o++] = body & 255;
	out[o++] = 3, out[o++] = 3;
	memset(out + o, 7, 32), o += 32;
	out[o++] = 0;		    /* session id */
	out[o++] = 0, out[o++] = 2; /* one cipher suite */
	out[o++] = 0x13, out[o++] = 1;
	out[o++] = 1, out[o++] = 0; /* no compression */
	out[o++] = ext >> 8, out[o++] = ext & 255;
	out[o++] = 0, out[o++] = 16; /* ALPN */
	out[o++] = (2 + an) >> 8, out[o++] = (2 + an) & 255;
	out[o++] = an >> 8, out[o++] = an & 255;
	memcpy(out + o, alpn, an);
	return o + an;
}

/* Whether a ClientHello offers HTTP/2 (tls_term.c then offers it to the server). */
static void alpn_h2(void **state)
{
	uint8_t buf[512];
	size_t n;

	(void)state;
	n = hello((const uint8_t *)"\x08http/1.1\x02h2", 12, buf);
	assert_true(eg_tls_offers_h2(buf, n));
	n = hello((const uint8_t *)"\x02h2", 3, buf);
	assert_true(eg_tls_offers_h2(buf, n));
	/* Not h2: HTTP/1.1 alone, h2c, a name that only starts with h2. */
	n = hello((const uint8_t *)"\x08http/1.1", 9, buf);
	assert_false(eg_tls_offers_h2(buf, n));
	n = hello((const uint8_t *)"\x03h2c", 4, buf);
	assert_false(eg_tls_offers_h2(buf, n));
	/* An entry longer than the list: not read past it. */
	n = hello((const uint8_t *)"\x08http/1.1\x05h2", 12, buf);
	assert_false(eg_tls_offers_h2(buf, n));
	/* Cut short (the rest not yet come): no. */
	n = hello((const uint8_t *)"\x08http/1.1\x02h2", 12, buf);
	assert_false(eg_tls_offers_h2(buf, n - 1));
}

/*
 * A placeholder's token cut anywhere between two reads of a flow, or fed
 * a byte at a time, is found (net/secret.c, eg_secret_in_flow); a flow
 * without it is not.
 */
static void secret_cut(void **state)
{
	static struct egress e;
	struct egress_secret sec = {.name = "TOKEN", .n_hosts = 1};
	struct egress_secrets ss = {.v = &sec, .n = 1};
	char flow[128];
	struct eg_tail t;
	size_t n;

	(void)state;
	snprintf(sec.token, sizeof(sec.token), "0123456789abcdef0123456789abcdef");
	snprintf(sec.hosts[0], sizeof(sec.hosts[0]), "api.test");
	e.o.secrets = &ss;
	n = snprintf(flow, sizeof(flow), "k=bpfbox-secret-TOKEN-%s&x=1", sec.token);
	for (size_t cut = 0; cut <= n; cut++) {
		memset(&t, 0, sizeof(t));
		bool found = eg_secret_in_flow(&e, &t, flow, cut, "other.test") != NULL;

		found |= eg_secret_in_flow(&e, &t, flow + cut, n - cut, "other.test") != NULL;
		assert_true(found);
		/* Its own host's flow may carry it. */
		memset(&t, 0, sizeof(t));
		assert_null(eg_secret_in_flow(&e, &t, flow, cut, "api.test"));
		assert_null(eg_secret_in_flow(&e, &t, flow + cut, n - cut, "api.test"));
	}
	memset(&t, 0, sizeof(t));
	bool any = false;

	for (size_t i = 0; i < n; i++)
		any |= eg_secret_in_flow(&e, &t, flow + i, 1, NULL) != NULL;
	assert_true(any);
	/* One byte short of the token, in any cut: nothing. */
	flow[n - 5] = 'x';
	memset(&t, 0, sizeof(t));
	assert_null(eg_secret_in_flow(&e, &t, flow, 20, NULL));
	assert_null(eg_secret_in_flow(&e, &t, flow + 20, n - 20, NULL));
}

UNIT_MAIN(cmocka_unit_test(secret_cut), cmocka_unit_test(alpn_h2), cmocka_unit_test(keepalive),
	  cmocka_unit_test(refused), cmocka_unit_test(methods), cmocka_unit_test(http_rules),
	  cmocka_unit_test(request_paths))
