// SPDX-License-Identifier: GPL-2.0
/*
 * The audit redactor: one pass over the input, a byte-class table, and a
 * few rules tried only where they can start:
 *
 *   '=' or ':'     KEY=value, KEY: value, "KEY": "value" (key kept), the
 *                  password of scheme://user:password@host, --auth=value;
 *                  a Cookie: header up to the end of its line
 *   '%'            the same URL-encoded: token%3Dvalue, %22key%22%3A...
 *   NUL, space     --token VALUE (the next argument), Bearer TOKEN, and
 *                  after a mysql/mariadb command -pSECRET and -p SECRET,
 *                  after curl -u/--user user:SECRET
 *   token chars    well-known prefixes (ghp_, AKIA, sk-, ...; prefix kept),
 *                  Slack webhook paths, and bare opaque tokens of 32+
 *                  characters (%XX escapes inside count as token characters)
 *
 * A rule yields one span of the input [a, b) that becomes "[REDACTED]";
 * spans start after everything already copied, so the output is the input
 * with disjoint spans replaced. NULs, quotes and the separators around a
 * secret are never part of a span.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redact_internal.h"

static void emit(struct scan *s, const void *p, size_t n)
{
	if (!s->out)
		return;
	if (n > s->cap - s->o)
		n = s->cap - s->o;
	memcpy(s->out + s->o, p, n);
	s->o += n;
}

static void scan(struct scan *s)
{
	const unsigned char *in = s->in;
	size_t i = 0;

	while (i < s->len) {
		unsigned int c = in[i], k = redact_cls[c];
		size_t a, b;
		bool hit = false;

		if (c == ':')
			hit = redact_try_url(s, i, &a, &b) || redact_try_key(s, i, &a, &b);
		else if (c == '=')
			hit = redact_try_key(s, i, &a, &b) || redact_try_flag_eq(s, i, &a, &b);
		else if (k & C_WS)
			hit = redact_try_flag_next(s, i, &a, &b) ||
			      redact_try_bearer(s, i, &a, &b) ||
			      redact_try_cmd_flag(s, i, &a, &b) || redact_try_netrc(s, i, &a, &b);
		else if (c == '%' && (redact_pct_is(s, i, "3d") || redact_pct_is(s, i, "3a")))
			hit = redact_try_key(s, i, &a, &b);
		else if (c == 'h' && (i == 0 || !(cl(s, i - 1) & C_ALNUM)))
			hit = redact_try_webhook(s, i, &a, &b);
		if (!hit && (k & C_TOK))
			hit = redact_try_token(s, i, &a, &b);
		if (hit) {
			emit(s, in + s->done, a - s->done);
			emit(s, REDACT_MARKER, REDACT_MARKER_LEN);
			s->done = i = b;
			s->nspans++;
			continue;
		}
		/* Inside a word nothing can start: skip to its end. */
		i++;
		while (i < s->len && (redact_cls[in[i]] & C_ALNUM) &&
		       (redact_cls[in[i - 1]] & C_ALNUM))
			i++;
	}
	emit(s, in + s->done, s->len - s->done);
}

size_t redact(const char *in, size_t len, char *out, size_t cap, unsigned int flags)
{
	struct scan s = {.in = (const unsigned char *)in,
			 .len = len,
			 .flags = flags,
			 .out = out,
			 .cap = out ? cap : 0};

	scan(&s);
	return s.o;
}

size_t redact_inplace(char *buf, size_t len, size_t cap, unsigned int flags)
{
	struct scan dry = {.in = (const unsigned char *)buf, .len = len, .flags = flags};
	char stack[4096], *copy = stack;
	size_t n;

	scan(&dry);
	if (!dry.nspans)
		return len;
	if (len > sizeof(stack)) {
		copy = malloc(len);
		if (!copy) {
			/* Never leak: without room to work, nothing is kept. */
			n = cap < REDACT_MARKER_LEN ? cap : REDACT_MARKER_LEN;
			memcpy(buf, REDACT_MARKER, n);
			return n;
		}
	}
	memcpy(copy, buf, len);
	n = redact(copy, len, buf, cap, flags);
	if (copy != stack)
		free(copy);
	return n;
}

int redact_argv(char *const argv[], void (*fn)(void *ctx, const char *arg, size_t len), void *ctx,
		unsigned int flags)
{
	size_t total = 0, off = 0, n;
	char *buf, *out;
	int argc = 0;

	for (; argv[argc]; argc++)
		total += strlen(argv[argc]) + 1;
	buf = malloc(total + REDACT_MAX(total) + 1);
	if (!buf)
		return -ENOMEM;
	out = buf + total + 1;
	for (int i = 0; i < argc; i++) {
		n = strlen(argv[i]);
		memcpy(buf + off, argv[i], n + 1);
		off += n + 1;
	}
	/* The last NUL ends the buffer, it separates nothing. */
	n = redact(buf, total ? total - 1 : 0, out, REDACT_MAX(total), flags);
	for (size_t i = 0; argc > 0 && i <= n;) {
		const char *nul = memchr(out + i, '\0', n - i);
		size_t e = nul ? (size_t)(nul - out) : n;

		fn(ctx, out + i, e - i);
		i = e + 1;
	}
	free(buf);
	return 0;
}

bool redact_is_secret_name(const char *name, size_t len)
{
	return redact_key_suffix((const unsigned char *)name, len) != 0 ||
	       (len && name[0] != '-' && redact_name_parts((const unsigned char *)name, len));
}

size_t redact_value(const char *name, const char *val, size_t len, char *out, size_t cap,
		    unsigned int flags)
{
	if (len && redact_is_secret_name(name, strlen(name))) {
		size_t n = cap < REDACT_MARKER_LEN ? cap : REDACT_MARKER_LEN;

		memcpy(out, REDACT_MARKER, n);
		return n;
	}
	return redact(val, len, out, cap, flags);
}
