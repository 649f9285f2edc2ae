/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small streaming JSON writer for the audit stream: appends to a growable
 * buffer, one object per line. Strings are escaped so that any byte
 * sequence stays valid JSON: control characters as \u00XX, and each byte
 * that is not part of valid UTF-8 as \u00XX too (read as Latin-1), so a
 * path with odd bytes stays readable and the line still parses.
 */
#ifndef BPFBOX_JSONW_H
#define BPFBOX_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jsonw {
	char *buf;
	size_t len, cap;
	bool need_comma;
	bool oom;
};

void jsonw_reset(struct jsonw *w);
void jsonw_free(struct jsonw *w);
void jsonw_begin(struct jsonw *w); /* { */
void jsonw_end(struct jsonw *w);   /* } */
void jsonw_key(struct jsonw *w, const char *key);
void jsonw_str(struct jsonw *w, const char *key, const char *value);
/* The member only when value is not NULL (an optional field). */
void jsonw_str_opt(struct jsonw *w, const char *key, const char *value);
void jsonw_strn(struct jsonw *w, const char *key, const char *value, size_t len);
void jsonw_u64(struct jsonw *w, const char *key, uint64_t value);
void jsonw_i64(struct jsonw *w, const char *key, int64_t value);
void jsonw_bool(struct jsonw *w, const char *key, bool value);
void jsonw_null(struct jsonw *w, const char *key);
void jsonw_raw(struct jsonw *w, const char *key, const char *json); /* trusted JSON */
void jsonw_array_begin(struct jsonw *w, const char *key);
void jsonw_array_end(struct jsonw *w);
void jsonw_array_strn(struct jsonw *w, const char *value, size_t len); /* element */
void jsonw_object_begin(struct jsonw *w, const char *key);
/* Ends a JSON line: the next value starts a new top-level object. */
void jsonw_newline(struct jsonw *w);
/* Raw text, not escaped: for a text format built in the same buffer (the
 * metrics' exposition, an HTTP head) or trusted bytes after it. */
void jsonw_append(struct jsonw *w, const char *s, size_t n);
void jsonw_printf(struct jsonw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
