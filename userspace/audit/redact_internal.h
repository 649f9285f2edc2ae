/* SPDX-License-Identifier: GPL-2.0 */
/* What redact.c (the scan) and redact_rules.c (the rules it tries) share. */
#ifndef BPFBOX_REDACT_INTERNAL_H
#define BPFBOX_REDACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "redact.h"

enum {
	C_TOK = 1 << 0, /* [A-Za-z0-9_+/=.-]: a bare token's characters */
	C_DIGIT = 1 << 1,
	C_UPPER = 1 << 2,
	C_LOWER = 1 << 3,
	C_HEX = 1 << 4,
	C_B64 = 1 << 5,	  /* [A-Za-z0-9+/=]: standard base64 */
	C_BTOK = 1 << 6,  /* [A-Za-z0-9._~+/=-]: RFC 6750 b64token */
	C_WS = 1 << 7,	  /* NUL, control characters, space, DEL */
	C_QUOTE = 1 << 8, /* " ' ` */
	C_TERM = 1 << 9,  /* ends an unquoted value: WS, quotes, & , ; */
	C_DASH = 1 << 10,
	C_UNDER = 1 << 11,
	C_STRETCH = 1 << 12, /* [A-Za-z0-9+/]: inside one stretch of a token */
};
#define C_ALPHA (C_UPPER | C_LOWER)
#define C_ALNUM (C_ALPHA | C_DIGIT)

#define WS_  (C_WS | C_TERM)
#define DIG_ (C_TOK | C_DIGIT | C_HEX | C_B64 | C_BTOK | C_STRETCH)
#define UPH_ (C_TOK | C_UPPER | C_HEX | C_B64 | C_BTOK | C_STRETCH)
#define UP_  (C_TOK | C_UPPER | C_B64 | C_BTOK | C_STRETCH)
#define LOH_ (C_TOK | C_LOWER | C_HEX | C_B64 | C_BTOK | C_STRETCH)
#define LO_  (C_TOK | C_LOWER | C_B64 | C_BTOK | C_STRETCH)

/* The class of every byte (C_*). */
extern const unsigned short redact_cls[256];

#define OPAQUE_MIN  32 /* a bare token's length */
#define STRETCH_MIN 16 /* its longest separator-free stretch */
#define TAIL_MIN    8  /* both, for a token cut by the end of a cut input */
#define BEARER_MIN  8

struct scan {
	const unsigned char *in;
	size_t len;
	unsigned int flags;
	char *out;     /* NULL: count spans only */
	size_t cap, o; /* output room and length */
	size_t done;   /* input copied (or replaced) up to here */
	size_t nspans;
	size_t zone_end; /* the current token zone (a run, split at an inner '=') */
	bool path;	 /* the zone is a path: its '/' segments are judged alone */
	/* The walk over the words of the command (redact_cmd.c). */
	size_t wpos;		    /* the words before it are walked */
	unsigned int wprog;	    /* index + 1 of the command's program, or 0 */
	unsigned char wskip, wnpos; /* option values to skip, operands seen */
	bool wsub, wbatch, wnofile; /* its subcommand seen; htpasswd -b, -n */
};

static inline unsigned int cl(const struct scan *s, size_t i)
{
	return redact_cls[s->in[i]];
}

static inline bool is_marker(const struct scan *s, size_t a, size_t b)
{
	return b - a == REDACT_MARKER_LEN && !memcmp(s->in + a, REDACT_MARKER, REDACT_MARKER_LEN);
}

/* Whether the input is cut at b: the relaxed thresholds apply there. */
static inline bool cut_at(const struct scan *s, size_t b)
{
	return (s->flags & REDACT_TAIL_CUT) && b == s->len;
}

/*
 * The rules, each tried where it can start (at i): true with the secret's
 * span [*a, *b) of the input.
 */
bool redact_pct_is(const struct scan *s, size_t i, const char *xx);
bool redact_try_key(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_cmd_flag(struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_netrc(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_webhook(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_flag_eq(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_flag_next(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_bearer(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_url(const struct scan *s, size_t i, size_t *a, size_t *b);
bool redact_try_token(struct scan *s, size_t i, size_t *a, size_t *b);
/* Index + 1 of the key word that p[0..n) ends with (any case), or 0. */
int redact_key_suffix(const unsigned char *p, size_t n);
/*
 * Whether the name p[0..n) names a secret by its parts (split at _ - .):
 * one of PASS, SECRET, TOKEN, KEY... and the last not FILE, PATH, ID...
 * (DB_PASS, SECRET_KEY_BASE; not PASSWORD_FILE). A flag (--x) only by its
 * last part, KEY not counted (--pass, not --sort-key).
 */
bool redact_name_parts(const unsigned char *p, size_t n);
/* The value at v: quoted up to its quote, else up to a terminator. */
bool redact_value_span(const struct scan *s, size_t v, bool scheme, size_t *a, size_t *b);
/* The end of the word starting at w: a blank, a NUL or a quote. */
size_t redact_word_end(const struct scan *s, size_t w);

#endif
