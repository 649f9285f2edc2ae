// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of the audit redactor. Input: one byte of flags, then
 * the bytes to redact. Checks, beyond the sanitizers: the output fits
 * REDACT_MAX (more room changes nothing), NULs (argument boundaries) are
 * kept, a smaller room only cuts the same output, and the in-place form
 * gives the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit/redact.h"

static size_t count_nul(const char *p, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += !p[i];
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int flags;
	const char *in;
	size_t len, cap, n, m, k;
	char *out, *small, *buf, *big;

	if (size < 1)
		return 0;
	flags = data[0] & (REDACT_NO_OPAQUE | REDACT_TAIL_CUT);
	in = (const char *)data + 1;
	len = size - 1;
	cap = REDACT_MAX(len);
	out = malloc(cap);
	small = malloc(cap);
	buf = malloc(cap);
	if (!out || !small || !buf)
		abort();

	n = redact(in, len, out, cap, flags);
	if (n > cap || count_nul(out, n) != count_nul(in, len))
		abort();

	/* REDACT_MAX is enough: more room writes nothing more. */
	big = malloc(2 * cap);
	if (!big || redact(in, len, big, 2 * cap, flags) != n ||
	    memcmp(big, out, n))
		abort();
	free(big);

	/* A smaller room: the same output, cut. */
	k = len ? (data[0] >> 2) * len / 63 : 0;
	m = redact(in, len, small, k, flags);
	if (m != (n < k ? n : k) || memcmp(small, out, m))
		abort();

	/* In place: the same bytes. */
	memcpy(buf, in, len);
	m = redact_inplace(buf, len, cap, flags);
	if (m != n || memcmp(buf, out, n))
		abort();

	free(out);
	free(small);
	free(buf);
	return 0;
}
