/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The redactor of the audit stream: replaces secrets in command lines with
 * "[REDACTED]" and leaves everything around them as it was (the key, the
 * flag, the user of a URL, a token's well-known prefix, every separator and
 * every NUL between arguments). A hand-written single-pass scanner: no
 * regex, linear in the input; redact() allocates nothing.
 * docs/events.md ("Redaction") lists the patterns and the false positives
 * it avoids on purpose.
 *
 * The input is raw bytes, not JSON: redact before escaping. NUL bytes
 * separate arguments (the exec record's argv buffer) and count as
 * whitespace, so "--token\0VALUE" is caught like "--token VALUE".
 */
#ifndef BPFBOX_REDACT_H
#define BPFBOX_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACT_MARKER	  "[REDACTED]"
#define REDACT_MARKER_LEN 10

/*
 * Output room that always suffices for len input bytes: a replaced secret
 * is either at least as long as the marker (a bare token, a prefixed key)
 * or follows a trigger of its own of at least three bytes (the shortest:
 * "-px\0" after 7z or mysql, four bytes that become thirteen), so the
 * output stays under 3.25 times the input, plus one marker for a value cut
 * by the end (REDACT_TAIL_CUT).
 */
#define REDACT_MAX(len) (4 * (len) + 16)

enum redact_flags {
	/* No bare-token heuristic: for file paths, whose content-addressed
	 * names (npm cache, .git/objects) look like tokens. */
	REDACT_NO_OPAQUE = 1U << 0,
	/* The input was cut at its end (argv_truncated): a partial token
	 * touching the end is redacted with relaxed length thresholds. */
	REDACT_TAIL_CUT = 1U << 1,
};

/*
 * Copies in[0..len) to out (cap bytes), secrets replaced. in and out must
 * not overlap. Returns the output length, at most cap; with cap >=
 * REDACT_MAX(len) nothing is ever cut. When cap is smaller the output is
 * cut at cap, never leaking: a secret is either replaced or not copied.
 * out is not NUL-terminated.
 */
size_t redact(const char *in, size_t len, char *out, size_t cap, unsigned int flags);

/*
 * In place: buf holds len bytes and has room for cap. Returns the new
 * length (at most cap). Copies nothing when there is nothing to redact;
 * past 4 KiB it needs a scratch copy, and without memory for it the whole
 * buffer becomes the marker.
 */
size_t redact_inplace(char *buf, size_t len, size_t cap, unsigned int flags);

/*
 * Redacts an argument vector as one NUL-separated buffer (so a flag's
 * value in the next argument is seen) and calls fn once per argument, in
 * order, with the redacted bytes. Returns 0 or -ENOMEM.
 */
int redact_argv(char *const argv[], void (*fn)(void *ctx, const char *arg, size_t len), void *ctx,
		unsigned int flags);

/*
 * Whether a variable or field name names a secret: it ends (any case)
 * with one of the key words (TOKEN, PASSWORD, API_KEY, SECRET, ...), or
 * one of its parts (split at _ - .) is PASS, SECRET, TOKEN, KEY, ... and
 * its last part does not name a place or a property (DB_PASS, STRIPE_KEY,
 * SECRET_KEY_BASE; not PASSWORD_FILE, KEY_ID, TOKENIZERS_PARALLELISM).
 */
bool redact_is_secret_name(const char *name, size_t len);

/*
 * The value of a NAME=VALUE pair (an environment variable of the policy):
 * replaced whole when the name names a secret, else redacted like any
 * text. Same contract as redact().
 */
size_t redact_value(const char *name, const char *val, size_t len, char *out, size_t cap,
		    unsigned int flags);

#endif
