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

UNIT_MAIN(cmocka_unit_test(keepalive), cmocka_unit_test(refused), cmocka_unit_test(methods))
