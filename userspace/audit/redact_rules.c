// SPDX-License-Identifier: GPL-2.0
/*
 * The redactor's rules (redact.c says where each is tried): keys and
 * flags with their values, URLs' passwords, Bearer tokens, well-known
 * token prefixes and bare opaque tokens.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redact_internal.h"

const unsigned short redact_cls[256] = {
	[0x00 ... 0x1f] = WS_,
	[' '] = WS_,
	['"'] = C_QUOTE | C_TERM,
	['\''] = C_QUOTE | C_TERM,
	['`'] = C_QUOTE | C_TERM,
	['&'] = C_TERM,
	[','] = C_TERM,
	[';'] = C_TERM,
	['+'] = C_TOK | C_B64 | C_BTOK | C_STRETCH,
	['-'] = C_TOK | C_BTOK | C_DASH,
	['.'] = C_TOK | C_BTOK,
	['/'] = C_TOK | C_B64 | C_BTOK | C_STRETCH,
	['0' ... '9'] = DIG_,
	['='] = C_TOK | C_B64 | C_BTOK,
	['A' ... 'F'] = UPH_,
	['G' ... 'Z'] = UP_,
	['_'] = C_TOK | C_BTOK | C_UNDER,
	['a' ... 'f'] = LOH_,
	['g' ... 'z'] = LO_,
	['~'] = C_BTOK,
	[0x7f] = WS_,
};

/* Key words, matched (any case) as the end of a key: GITHUB_TOKEN=, x-api-key: */
static const struct {
	const char *word;
	unsigned char len;
} keys[] = {
	{"api_key", 7},	       {"api-key", 7},	   {"apikey", 6},
	{"access_key", 10},    {"access-key", 10}, {"secret_key", 10},
	{"private_key", 11},   {"token", 5},	   {"password", 8},
	{"passwd", 6},	       {"secret", 6},	   {"bearer", 6},
	{"authorization", 13}, {"cookie", 6},	   {"_pwd", 4},
	{"passphrase", 10},    {"sig", 3},	   {"signature", 9},
};
#define KEY_AUTHORIZATION 12
#define KEY_COOKIE	  13
#define KEY_SIG		  16 /* this one and the next: keys, never flags */

/* Well-known token prefixes (case-sensitive) and the body that must follow. */
static const struct {
	const char *prefix;
	unsigned char len, min; /* prefix length, minimal body length */
	unsigned short body;	/* classes of the body's characters */
	bool digit;		/* the body must hold a digit */
} prefixes[] = {
	{"ghp_", 4, 16, C_ALNUM, false},
	{"gho_", 4, 16, C_ALNUM, false},
	{"ghu_", 4, 16, C_ALNUM, false},
	{"ghs_", 4, 16, C_ALNUM, false},
	{"ghr_", 4, 16, C_ALNUM, false},
	{"github_pat_", 11, 16, C_ALNUM | C_UNDER, false},
	{"glpat-", 6, 16, C_ALNUM | C_UNDER | C_DASH, false},
	{"AKIA", 4, 16, C_UPPER | C_DIGIT, false},
	{"ASIA", 4, 16, C_UPPER | C_DIGIT, false},
	{"xoxb-", 5, 10, C_ALNUM | C_DASH, false},
	{"xoxp-", 5, 10, C_ALNUM | C_DASH, false},
	{"xoxa-", 5, 10, C_ALNUM | C_DASH, false},
	{"xoxs-", 5, 10, C_ALNUM | C_DASH, false},
	{"sk-", 3, 20, C_ALNUM | C_DASH | C_UNDER, true},
	{"sk_live_", 8, 16, C_ALNUM, false},
	{"sk_test_", 8, 16, C_ALNUM, false},
	{"npm_", 4, 30, C_ALNUM, false},
	{"rk_live_", 8, 16, C_ALNUM, false},
	{"rk_test_", 8, 16, C_ALNUM, false},
	{"whsec_", 6, 16, C_ALNUM, false},
};

/*
 * The parts of a name (DB_PASS, SECRET_KEY_BASE, --db-pass) that make it
 * name a secret; the last parts that make it name where a secret is or
 * what it is like instead (PASSWORD_FILE, KEY_ID); and the last parts of a
 * flag that do (--pass, not --sort-key=2 nor --pass-through).
 */
static const char *const secret_parts[] = {
	"pass", "password", "passwd",	  "passphrase",	 "secret",     "token",
	"key",	"apikey",   "credential", "credentials", "privatekey", NULL,
};
static const char *const ref_parts[] = {
	"file",	  "files", "path", "dir",	"fd",	  "id",	   "name",
	"type",	  "size",  "len",  "length",	"bits",	  "count", "ttl",
	"expiry", "mode",  "alg",  "algorithm", "helper", "cmd",   "command",
	"env",	  "var",   "url",  "prompt",	"store",  "stdin", NULL,
};
static const char *const flag_parts[] = {
	"pass", "password", "passwd", "passphrase", "secret", "token", NULL,
};

static bool part_in(const unsigned char *p, size_t n, const char *const *words)
{
	for (; *words; words++)
		if (strlen(*words) == n && !strncasecmp((const char *)p, *words, n))
			return true;
	return false;
}

bool redact_name_parts(const unsigned char *p, size_t n)
{
	bool flag = n && p[0] == '-', any = false;
	size_t i = 0, last = 0, last_n = 0;

	while (i < n && p[i] == '-')
		i++;
	if (flag && n - i >= 3 && !strncasecmp((const char *)p + i, "no-", 3))
		return false;
	while (i < n) {
		size_t j = i;

		while (j < n && p[j] != '_' && p[j] != '-' && p[j] != '.')
			j++;
		if (j > i) {
			any |= part_in(p + i, j - i, secret_parts);
			last = i;
			last_n = j - i;
		}
		i = j + 1;
	}
	if (!last_n)
		return false;
	if (flag)
		return part_in(p + last, last_n, flag_parts);
	return any && !part_in(p + last, last_n, ref_parts);
}

/* The name (letters, digits, _ - .) that ends at j names a secret by its parts. */
static bool name_before(const struct scan *s, size_t j)
{
	size_t n = j;

	while (n > 0 && ((cl(s, n - 1) & (C_ALNUM | C_UNDER | C_DASH)) || s->in[n - 1] == '.'))
		n--;
	return j > n && redact_name_parts(s->in + n, j - n);
}

/* Index + 1 of the key word that p[0..n) ends with (any case), or 0. */
int redact_key_suffix(const unsigned char *p, size_t n)
{
	unsigned char last = n ? p[n - 1] | 0x20 : 0;

	/* Every key word ends with one of these: most separators stop here. */
	if (last != 'y' && last != 'n' && last != 'd' && last != 't' && last != 'r' &&
	    last != 'e' && last != 'g')
		return 0;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (keys[k].len <= n &&
		    !strncasecmp((const char *)p + n - keys[k].len, keys[k].word, keys[k].len))
			return k + 1;
	return 0;
}

/*
 * The value starting at v (after a separator and blanks): quoted up to its
 * closing quote, else up to a terminator. scheme: "Bearer abc" keeps its
 * first word (Authorization headers). line: up to the end of the argument
 * or line, or a quote (a Cookie header: "a=1; b=2" is one secret).
 */
static bool value_span_ex(const struct scan *s, size_t v, bool scheme, bool line, size_t *a,
			  size_t *b)
{
	unsigned char q = 0;
	size_t e;

	if (v < s->len && (cl(s, v) & C_QUOTE))
		q = s->in[v++];
	if (scheme) {
		size_t w = v;

		while (w < s->len && (cl(s, w) & C_ALPHA))
			w++;
		if (w > v && w < s->len && s->in[w] == ' ') {
			while (w < s->len && s->in[w] == ' ')
				w++;
			if (w < s->len && (q ? s->in[w] != q : !(cl(s, w) & C_TERM)))
				v = w;
		}
	}
	e = v;
	if (q)
		while (e < s->len && s->in[e] != q && s->in[e] && s->in[e] != '\n')
			e++;
	else if (line)
		while (e < s->len && s->in[e] && s->in[e] != '\n' && s->in[e] != '\r' &&
		       !(cl(s, e) & C_QUOTE))
			e++;
	else
		while (e < s->len && !(cl(s, e) & C_TERM))
			e++;
	if (e == v || is_marker(s, v, e))
		return false;
	*a = v;
	*b = e;
	return true;
}

bool redact_value_span(const struct scan *s, size_t v, bool scheme, size_t *a, size_t *b)
{
	return value_span_ex(s, v, scheme, false, a, b);
}

/* %XX at i, any case of the hex digits. */
bool redact_pct_is(const struct scan *s, size_t i, const char *xx)
{
	return i + 3 <= s->len && s->in[i] == '%' &&
	       !strncasecmp((const char *)s->in + i + 1, xx, 2);
}

/*
 * KEY=value, KEY: value, "KEY": "value"; i is at the '=' or ':', or at the
 * '%' of its URL encoding (%3D, %3A; %22 for the quote, %20 and + blanks).
 */
bool redact_try_key(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	bool enc = s->in[i] == '%', colon = s->in[i] == ':' || (enc && redact_pct_is(s, i, "3a"));
	size_t j = i, v = i + (enc ? 3 : 1);
	bool quoted = false;
	int k;

	if (s->in[i] == ':' && v < s->len && s->in[v] == ':')
		return false; /* C++ scope, IPv6 */
	while (j > 0 && (s->in[j - 1] == ' ' || s->in[j - 1] == '\t'))
		j--;
	if (j > 0 && (s->in[j - 1] == '"' || s->in[j - 1] == '\''))
		j--, quoted = true;
	else if (enc && j >= 3 && redact_pct_is(s, j - 3, "22"))
		j -= 3;
	k = redact_key_suffix(s->in, j);
	/* DB_PASS=, STRIPE_KEY=, --pass=, "db_pass": (a bare "Key: x" is prose) */
	if (!k && ((colon && !quoted) || !name_before(s, j)))
		return false;
	/* "token= x" has an empty value; "password = x" and "token: x" do not */
	if (colon || j < i)
		while (v < s->len) {
			if (s->in[v] == ' ' || s->in[v] == '\t' || (enc && s->in[v] == '+'))
				v++;
			else if (enc && redact_pct_is(s, v, "20"))
				v += 3;
			else
				break;
		}
	if (enc && redact_pct_is(s, v, "22"))
		v += 3;
	return value_span_ex(s, v, k - 1 == KEY_AUTHORIZATION, k - 1 == KEY_COOKIE && !enc, a, b);
}

/* The word that ends at i: back to a blank, a NUL or a quote. */
static size_t word_start(const struct scan *s, size_t i)
{
	while (i > 0 && !(cl(s, i - 1) & (C_WS | C_QUOTE)))
		i--;
	return i;
}

/* A flag whose value may follow: --token, --api-key, --auth, --auth-token... */
static bool is_secret_flag(const struct scan *s, size_t w, size_t i)
{
	const char *p = (const char *)s->in + w;
	size_t n = i - w;

	if (n < 3 || p[0] != '-' || p[1] != '-')
		return false;
	if (n == 6 && !strncasecmp(p, "--auth", 6))
		return true;
	if (n >= 5 && !strncasecmp(p, "--no-", 5))
		return false;
	/* --show-signature, --sig: switches, not a key with a value */
	return redact_key_suffix(s->in + w + 2, n - 2) - 1U < KEY_SIG ||
	       redact_name_parts(s->in + w, n);
}

size_t redact_word_end(const struct scan *s, size_t w)
{
	while (w < s->len && !(cl(s, w) & (C_WS | C_QUOTE)))
		w++;
	return w;
}

/* A Slack webhook: the path after hooks.slack.com/services/ is the secret. */
bool redact_try_webhook(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	static const char host[] = "hooks.slack.com/services/";
	size_t v = i + sizeof(host) - 1, e;

	if (s->in[i] != 'h' || v > s->len || memcmp(s->in + i, host, sizeof(host) - 1))
		return false;
	for (e = v;
	     e < s->len && !(cl(s, e) & (C_WS | C_QUOTE)) && s->in[e] != '?' && s->in[e] != '#';
	     e++)
		;
	if (e == v || is_marker(s, v, e))
		return false;
	*a = v;
	*b = e;
	return true;
}

/* --auth=value (the key rule has the others). */
bool redact_try_flag_eq(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	size_t w = word_start(s, i);

	return i - w == 6 && !strncasecmp((const char *)s->in + w, "--auth", 6) &&
	       redact_value_span(s, i + 1, false, a, b);
}

/* --token VALUE: i is at the NUL or blank after the flag. */
bool redact_try_flag_next(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	size_t v = i;

	if (!is_secret_flag(s, word_start(s, i), i))
		return false;
	while (v < s->len && (s->in[v] == ' ' || s->in[v] == '\t' || s->in[v] == '\0'))
		v++;
	if (v >= s->len || s->in[v] == '-')
		return false; /* no value, or the next flag */
	return redact_value_span(s, v, false, a, b);
}

/* Bearer TOKEN (any case): i is at the blank after the word. */
bool redact_try_bearer(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	size_t v = i, e;

	if (i < 6 || strncasecmp((const char *)s->in + i - 6, "bearer", 6) ||
	    (i > 6 && (cl(s, i - 7) & C_ALNUM)))
		return false;
	while (v < s->len && (s->in[v] == ' ' || s->in[v] == '\t'))
		v++;
	for (e = v; e < s->len && (cl(s, e) & C_BTOK);)
		e++;
	if (e - v < (cut_at(s, e) ? 1 : BEARER_MIN) || is_marker(s, v, e))
		return false;
	*a = v;
	*b = e;
	return true;
}

/* scheme://user:PASSWORD@host: i is at the scheme's ':'. */
bool redact_try_url(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	size_t h = i + 3, e, at = 0, colon = 0;

	if (i == 0 || !(cl(s, i - 1) & C_ALNUM) || h > s->len || s->in[i + 1] != '/' ||
	    s->in[i + 2] != '/')
		return false;
	for (e = h; e < s->len && !(cl(s, e) & (C_WS | C_QUOTE)); e++) {
		unsigned char c = s->in[e];

		if (c == '/' || c == '?' || c == '#')
			break;
		if (c == '@')
			at = e;
		else if (c == ':' && !colon && !at)
			colon = e;
	}
	if (!at && cut_at(s, e))
		at = e; /* cut inside user:pass */
	if (!colon || colon > at || colon + 1 == at || is_marker(s, colon + 1, at))
		return false;
	*a = colon + 1;
	*b = at;
	return true;
}

/* A well-known prefix at i: the body after it is the span. */
static bool try_prefix(const struct scan *s, size_t i, size_t *a, size_t *b)
{
	const unsigned char c = s->in[i];

	if (c != 'g' && c != 'A' && c != 'x' && c != 's' && c != 'n' && c != 'r' && c != 'w')
		return false;
	for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		size_t p = i + prefixes[k].len, e;
		bool digit = false, cut;

		if (prefixes[k].prefix[0] != c || p > s->len ||
		    memcmp(s->in + i, prefixes[k].prefix, prefixes[k].len))
			continue;
		for (e = p; e < s->len && (cl(s, e) & prefixes[k].body); e++)
			digit |= cl(s, e) & C_DIGIT;
		cut = cut_at(s, e);
		if (e - p < (cut ? 1 : prefixes[k].min) || (prefixes[k].digit && !digit && !cut))
			continue;
		*a = p;
		*b = e;
		return true;
	}
	return false;
}

/*
 * Whether the characters of p[a..b) look random rather than like words:
 * letters and digits mixed, the class (lower, upper, digit) changing at
 * least every fourth character, and not mostly Capitalized words
 * (xmlSecTransformSha256GetKlass). Only letters and digits are looked at.
 */
static bool randomish(const struct scan *s, size_t a, size_t b)
{
	unsigned int digits = 0, letters = 0, camel = 0, trans = 0, n = 0, prev = 0;

	for (size_t i = a; i < b; i++) {
		unsigned int c = cl(s, i) & C_ALNUM;

		if (!c)
			continue;
		if (c == C_DIGIT) {
			digits++;
		} else {
			letters++;
			if (c == C_UPPER) {
				size_t j = i + 1;

				while (j < b && (cl(s, j) & C_LOWER))
					j++;
				if (j - i >= 4)
					camel += j - i;
			}
		}
		if (n++ && c != prev)
			trans++;
		prev = c;
	}
	return digits && letters && 2 * camel < letters && 4 * trans >= n - 1;
}

/*
 * Hex digits that are an id rather than a secret: 40 or 64 (a git object
 * id, a sha256 checksum), or fewer than 32 (build and cache suffixes).
 */
static bool hex_id(const struct scan *s, size_t a, size_t b)
{
	if (b - a >= OPAQUE_MIN && b - a != 40 && b - a != 64)
		return false;
	for (size_t i = a; i < b; i++)
		if (!(cl(s, i) & C_HEX))
			return false;
	return true;
}

/* An npm integrity string, sha512-<base64>: a checksum, not a secret. */
static bool integrity(const struct scan *s, size_t a, size_t b)
{
	size_t d = a + 3;

	if (b - a < 5 || strncmp((const char *)s->in + a, "sha", 3))
		return false;
	while (d < b && (cl(s, d) & C_DIGIT))
		d++;
	return d > a + 3 && d < b && s->in[d] == '-';
}

/* A bare token: p[a..b) is a whole zone or a path segment. */
static bool opaque(const struct scan *s, size_t a, size_t b)
{
	size_t n = b - a, longest = 0, seps = 0, min = cut_at(s, b) ? TAIL_MIN : OPAQUE_MIN;
	size_t stretch_min = min == TAIL_MIN ? TAIL_MIN : STRETCH_MIN;
	bool hex = true, digit = false, alpha = false;

	if (n < min)
		return false;
	if (integrity(s, a, b))
		return false;
	for (size_t i = a; i < b; i++) {
		unsigned int c = cl(s, i);

		hex &= !!(c & C_HEX);
		digit |= c & C_DIGIT;
		alpha |= c & C_ALPHA;
	}
	/* git object ids and sha256 checksums stay: 40 or 64 hex digits */
	if (hex)
		return digit && alpha && (cut_at(s, b) || (n != 40 && n != 64));
	for (size_t i = a; i < b;) {
		size_t j = i;

		while (j < b && (cl(s, j) & C_STRETCH))
			j++;
		if (j - i >= stretch_min && !hex_id(s, i, j) && randomish(s, i, j))
			return true;
		if (j - i > longest)
			longest = j - i;
		if (j < b)
			seps++;
		i = j + 1;
	}
	/* base64url cut into short stretches by - and _ (not a UUID: 4 dashes in 36) */
	return longest < stretch_min && seps * 12 <= n && randomish(s, a, b);
}

/* A %XX escape (URL encoding) at i: part of a token, like its bytes. */
static bool pct(const struct scan *s, size_t i)
{
	return i + 3 <= s->len && s->in[i] == '%' && (cl(s, i + 1) & C_HEX) &&
	       (cl(s, i + 2) & C_HEX);
}

/* Rules that start at a token character: prefixes, then bare tokens. */
bool redact_try_token(struct scan *s, size_t i, size_t *a, size_t *b)
{
	const unsigned char *in = s->in;
	bool zone_start = i == 0 || !(cl(s, i - 1) & C_TOK) || (in[i - 1] == '=' && in[i] != '=');
	size_t c0 = i, c1 = 0;

	if (zone_start) {
		bool slash = false, nonb64 = false;
		size_t z = i;

		while (z < s->len && ((cl(s, z) & C_TOK) || pct(s, z)) &&
		       !(z > i && in[z] == '=' && z + 1 < s->len && in[z + 1] != '=' &&
			 (cl(s, z + 1) & C_TOK))) {
			slash |= in[z] == '/';
			nonb64 |= !(cl(s, z) & C_B64);
			z++;
		}
		s->zone_end = z;
		s->path = slash && (in[i] == '/' || in[i] == '.' || in[i] == '~' || nonb64) &&
			  !integrity(s, i, z);
		c1 = z;
	} else if (s->path && i < s->zone_end && in[i - 1] == '/') {
		c1 = s->zone_end;
	}
	if ((cl(s, i) & C_ALNUM) && (i == 0 || !(cl(s, i - 1) & C_ALNUM)) && try_prefix(s, i, a, b))
		return true;
	if (!c1 || (s->flags & REDACT_NO_OPAQUE))
		return false;
	if (s->path) {
		const void *slash = memchr(in + c0, '/', c1 - c0);

		if (slash)
			c1 = (const unsigned char *)slash - in;
	}
	if (!opaque(s, c0, c1))
		return false;
	*a = c0;
	*b = c1;
	return true;
}
