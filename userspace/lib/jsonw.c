// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "util.h"

static void grow(struct jsonw *w, size_t more)
{
	size_t cap;
	char *nb;

	if (w->oom || w->len + more + 1 <= w->cap)
		return;
	cap = w->cap ? w->cap : 512;
	while (cap < w->len + more + 1)
		cap *= 2;
	nb = realloc(w->buf, cap);
	if (!nb) {
		w->oom = true;
		return;
	}
	w->buf = nb;
	w->cap = cap;
}

static void put(struct jsonw *w, const char *s, size_t n)
{
	grow(w, n);
	if (w->oom)
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

void jsonw_append(struct jsonw *w, const char *s, size_t n)
{
	put(w, s, n);
}

void jsonw_printf(struct jsonw *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		w->oom = true;
	grow(w, n < 0 ? 0 : (size_t)n);
	if (w->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(w->buf + w->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	w->len += n;
}

static void putc_(struct jsonw *w, char c)
{
	put(w, &c, 1);
}

void jsonw_reset(struct jsonw *w)
{
	w->len = 0;
	w->need_comma = false;
	w->oom = false;
	if (w->buf)
		w->buf[0] = '\0';
}

void jsonw_free(struct jsonw *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

static void put_escaped(struct jsonw *w, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	putc_(w, '"');
	while (i < n) {
		size_t run = i, ulen;
		char esc[8];

		/* Copy the longest run that needs no escaping at once. */
		while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' &&
		       s[run] != '\\')
			run++;
		put(w, (const char *)s + i, run - i);
		i = run;
		if (i >= n)
			break;
		if (s[i] == '"' || s[i] == '\\') {
			esc[0] = '\\';
			esc[1] = s[i];
			put(w, esc, 2);
			i++;
		} else if (s[i] == '\n') {
			put(w, "\\n", 2);
			i++;
		} else if (s[i] == '\t') {
			put(w, "\\t", 2);
			i++;
		} else if (s[i] < 0x20 || !(ulen = utf8_char_len(s + i, n - i))) {
			snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
			put(w, esc, 6);
			i++;
		} else {
			put(w, (const char *)s + i, ulen);
			i += ulen;
		}
	}
	putc_(w, '"');
}

void jsonw_key(struct jsonw *w, const char *key)
{
	if (w->need_comma)
		putc_(w, ',');
	w->need_comma = true;
	if (key) {
		put_escaped(w, key, strlen(key));
		putc_(w, ':');
	}
}

/* An object or array opens ({ or [) and closes (} or ]). */
static void open_(struct jsonw *w, const char *key, char c)
{
	jsonw_key(w, key);
	putc_(w, c);
	w->need_comma = false;
}

static void close_(struct jsonw *w, char c)
{
	putc_(w, c);
	w->need_comma = true;
}

void jsonw_begin(struct jsonw *w)
{
	open_(w, NULL, '{');
}

void jsonw_object_begin(struct jsonw *w, const char *key)
{
	open_(w, key, '{');
}

void jsonw_end(struct jsonw *w)
{
	close_(w, '}');
}

void jsonw_str_opt(struct jsonw *w, const char *key, const char *value)
{
	if (value)
		jsonw_str(w, key, value);
}

void jsonw_strn(struct jsonw *w, const char *key, const char *value, size_t len)
{
	jsonw_key(w, key);
	put_escaped(w, value, len);
}

void jsonw_str(struct jsonw *w, const char *key, const char *value)
{
	if (!value) {
		jsonw_null(w, key);
		return;
	}
	jsonw_strn(w, key, value, strlen(value));
}

void jsonw_u64(struct jsonw *w, const char *key, uint64_t value)
{
	char num[24];

	jsonw_key(w, key);
	put(w, num, snprintf(num, sizeof(num), "%" PRIu64, value));
}

void jsonw_i64(struct jsonw *w, const char *key, int64_t value)
{
	char num[24];

	jsonw_key(w, key);
	put(w, num, snprintf(num, sizeof(num), "%" PRId64, value));
}

void jsonw_bool(struct jsonw *w, const char *key, bool value)
{
	jsonw_key(w, key);
	put(w, value ? "true" : "false", value ? 4 : 5);
}

void jsonw_null(struct jsonw *w, const char *key)
{
	jsonw_key(w, key);
	put(w, "null", 4);
}

void jsonw_raw(struct jsonw *w, const char *key, const char *json)
{
	const unsigned char *s = (const unsigned char *)json;
	size_t n = strlen(json), i = 0;

	jsonw_key(w, key);
	/*
	 * Trusted JSON, but json-c copies string bytes that are not UTF-8 as
	 * they are: those become \u00XX, as put_escaped() writes them.
	 */
	while (i < n) {
		size_t run = i, ulen;
		char esc[8];

		while (run < n && s[run] < 0x80)
			run++;
		put(w, json + i, run - i);
		i = run;
		if (i >= n)
			break;
		ulen = utf8_char_len(s + i, n - i);
		if (ulen) {
			put(w, json + i, ulen);
			i += ulen;
		} else {
			snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
			put(w, esc, 6);
			i++;
		}
	}
}

void jsonw_array_begin(struct jsonw *w, const char *key)
{
	open_(w, key, '[');
}

void jsonw_array_end(struct jsonw *w)
{
	close_(w, ']');
}

void jsonw_array_strn(struct jsonw *w, const char *value, size_t len)
{
	jsonw_strn(w, NULL, value, len);
}

void jsonw_newline(struct jsonw *w)
{
	putc_(w, '\n');
	w->need_comma = false;
}
