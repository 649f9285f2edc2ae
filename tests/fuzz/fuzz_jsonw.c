// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of the JSON writer and the record encoder.
 *
 * 1. Any bytes as a string value: the line is valid JSON and valid UTF-8,
 *    holds no raw control character, and reading its raw text back by the
 *    rules of docs/events.md ("\u00XX" with XX >= 0x80 is the byte XX that
 *    was not valid UTF-8) gives the input bytes exactly.
 * 2. Any bytes as a ring record (its type taken mod 6): the encoder either
 *    refuses it or writes one valid JSON line.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonw.h"
#include "audit/encode.h"
#include "bpfbox/events.h"

/* ---- a strict RFC 8259 checker ---- */

struct p {
	const unsigned char *s, *end;
	int depth;
};

/*
 * The well-formed UTF-8 sequences as byte ranges, row by row as Table 3-7
 * of the Unicode standard lists them (ASCII aside): an oracle that does
 * not decode code points the way the writer's utf8_char_len() does, so
 * that one bug cannot hide itself in both.
 */
static const struct {
	unsigned char lo[4], hi[4];
	size_t len;
} utf8_table[] = {
	{{0xc2, 0x80}, {0xdf, 0xbf}, 2},
	{{0xe0, 0xa0, 0x80}, {0xe0, 0xbf, 0xbf}, 3},
	{{0xe1, 0x80, 0x80}, {0xec, 0xbf, 0xbf}, 3},
	{{0xed, 0x80, 0x80}, {0xed, 0x9f, 0xbf}, 3},
	{{0xee, 0x80, 0x80}, {0xef, 0xbf, 0xbf}, 3},
	{{0xf0, 0x90, 0x80, 0x80}, {0xf0, 0xbf, 0xbf, 0xbf}, 4},
	{{0xf1, 0x80, 0x80, 0x80}, {0xf3, 0xbf, 0xbf, 0xbf}, 4},
	{{0xf4, 0x80, 0x80, 0x80}, {0xf4, 0x8f, 0xbf, 0xbf}, 4},
};

/* The length of the well-formed sequence at s (n bytes left), 0 for none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	for (size_t r = 0; r < sizeof(utf8_table) / sizeof(utf8_table[0]); r++) {
		size_t i = 0, len = utf8_table[r].len;

		while (i < len && i < n && s[i] >= utf8_table[r].lo[i] &&
		       s[i] <= utf8_table[r].hi[i])
			i++;
		if (i == len)
			return len;
	}
	return 0;
}

static void ws(struct p *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' ||
				 *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static bool lit(struct p *p, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n))
		return false;
	p->s += n;
	return true;
}

static bool hex4(const unsigned char *s)
{
	for (int i = 0; i < 4; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
			return false;
	return true;
}

static bool string(struct p *p)
{
	if (p->s >= p->end || *p->s++ != '"')
		return false;
	while (p->s < p->end) {
		unsigned char c = *p->s;
		size_t n;

		if (c == '"') {
			p->s++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (p->end - p->s < 2)
				return false;
			c = p->s[1];
			if (c == 'u') {
				if (p->end - p->s < 6 || !hex4(p->s + 2))
					return false;
				p->s += 6;
			} else if (strchr("\"\\/bfnrt", c) && c) {
				p->s += 2;
			} else {
				return false;
			}
			continue;
		}
		n = utf8_seq(p->s, p->end - p->s);
		if (!n)
			return false;
		p->s += n;
	}
	return false;
}

static bool number(struct p *p)
{
	const unsigned char *s = p->s;

	if (s < p->end && *s == '-')
		s++;
	if (s >= p->end || *s < '0' || *s > '9')
		return false;
	if (*s == '0')
		s++;
	else
		while (s < p->end && *s >= '0' && *s <= '9')
			s++;
	if (s < p->end && *s == '.') {
		if (++s >= p->end || *s < '0' || *s > '9')
			return false;
		while (s < p->end && *s >= '0' && *s <= '9')
			s++;
	}
	if (s < p->end && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < p->end && (*s == '+' || *s == '-'))
			s++;
		if (s >= p->end || *s < '0' || *s > '9')
			return false;
		while (s < p->end && *s >= '0' && *s <= '9')
			s++;
	}
	p->s = s;
	return true;
}

static bool value(struct p *p);

static bool members(struct p *p, char close, bool object)
{
	p->s++;
	ws(p);
	if (p->s < p->end && *p->s == close) {
		p->s++;
		return true;
	}
	for (;;) {
		ws(p);
		if (object) {
			if (!string(p))
				return false;
			ws(p);
			if (p->s >= p->end || *p->s++ != ':')
				return false;
		}
		if (!value(p))
			return false;
		ws(p);
		if (p->s >= p->end)
			return false;
		if (*p->s == close) {
			p->s++;
			return true;
		}
		if (*p->s++ != ',')
			return false;
	}
}

static bool value(struct p *p)
{
	bool ok;

	ws(p);
	if (p->s >= p->end || ++p->depth > 64)
		return false;
	switch (*p->s) {
	case '{':
		ok = members(p, '}', true);
		break;
	case '[':
		ok = members(p, ']', false);
		break;
	case '"':
		ok = string(p);
		break;
	case 't':
		ok = lit(p, "true");
		break;
	case 'f':
		ok = lit(p, "false");
		break;
	case 'n':
		ok = lit(p, "null");
		break;
	default:
		ok = number(p);
	}
	p->depth--;
	return ok;
}

/* One JSON object, then exactly one newline. */
static bool valid_line(const char *buf, size_t len)
{
	struct p p = {(const unsigned char *)buf,
		      (const unsigned char *)buf + len, 0};

	if (!len || buf[len - 1] != '\n' || buf[0] != '{')
		return false;
	p.end--;
	if (!value(&p))
		return false;
	return p.s == p.end;
}

/* ---- the raw-text reading of docs/events.md ---- */

static int hexval(unsigned char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Decodes the JSON string at s (after its quote) into bytes; returns the length. */
static size_t raw_decode(const char *s, char *out)
{
	size_t n = 0;

	while (*s != '"') {
		if (*s != '\\') {
			out[n++] = *s++;
			continue;
		}
		switch (s[1]) {
		case 'n':
			out[n++] = '\n';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case '"':
		case '\\':
			out[n++] = s[1];
			break;
		case 'u':
			/* only \u00XX is ever written: a control character or a byte */
			if (s[2] != '0' || s[3] != '0')
				abort();
			out[n++] = hexval(s[4]) << 4 | hexval(s[5]);
			s += 4;
			break;
		default:
			abort();
		}
		s += 2;
	}
	return n;
}

static void check_string(const uint8_t *data, size_t size)
{
	struct jsonw w = {0};
	char *dec;
	const char *q;
	size_t n;

	jsonw_begin(&w);
	jsonw_strn(&w, "v", (const char *)data, size);
	jsonw_array_begin(&w, "a");
	jsonw_array_strn(&w, (const char *)data, size);
	jsonw_array_end(&w);
	jsonw_end(&w);
	jsonw_newline(&w);
	if (w.oom)
		abort();
	if (!valid_line(w.buf, w.len))
		abort();
	for (size_t i = 0; i + 1 < w.len; i++)
		if ((unsigned char)w.buf[i] < 0x20)
			abort();
	dec = malloc(size + 1);
	if (!dec)
		abort();
	/* {"v":"...","a":["..."]} */
	q = w.buf + strlen("{\"v\":\"");
	n = raw_decode(q, dec);
	if (n != size || memcmp(dec, data, size))
		abort();
	q = strstr(w.buf, "\"a\":[\"");
	if (!q)
		abort();
	n = raw_decode(q + strlen("\"a\":[\""), dec);
	if (n != size || memcmp(dec, data, size))
		abort();
	free(dec);
	jsonw_free(&w);
}

static void check_record(const uint8_t *data, size_t size)
{
	union {
		struct bpfbox_exec_event exec;
		struct bpfbox_exit_event exit;
		struct bpfbox_fork_event fork;
		struct bpfbox_file_event file;
		struct bpfbox_connect_event connect;
	} rec;
	struct audit_clock clk = {0};
	struct jsonw w = {0};
	size_t n = size < sizeof(rec) ? size : sizeof(rec);
	int r;

	memset(&rec, 0, sizeof(rec));
	memcpy(&rec, data, n);
	rec.exec.hdr.type %= 6;
	/*
	 * What our BPF programs can write: the time since boot (below 2^62)
	 * and a syscall's -errno (-4095..0). INT_MIN there would make the
	 * encoder's -h->err overflow.
	 */
	rec.exec.hdr.ts_ns &= (1ULL << 62) - 1;
	rec.exec.hdr.err = -(int32_t)((uint32_t)rec.exec.hdr.err % 4096);
	r = audit_encode_record(&w, &clk, &rec, sizeof(rec),
				"0123456789abcdef0123456789abcdef", NULL);
	if (r >= 0 && (!valid_line(w.buf, w.len) ||
		       memchr(w.buf, '\n', w.len) != w.buf + w.len - 1))
		abort();
	if (r < 0 && w.len != 0)
		abort();
	jsonw_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_string(data, size);
	check_record(data, size);
	return 0;
}
