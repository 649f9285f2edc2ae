/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A token bucket: rate tokens a second, at most burst saved up. Integer
 * arithmetic in token-nanoseconds (a token is 1e9 of them), so a rate of 1
 * to 1e9 a second and a burst up to 1e9 never overflow.
 */
#ifndef BPFBOX_LIB_RATELIMIT_H
#define BPFBOX_LIB_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	uint64_t rate;	  /* tokens a second; 0: unlimited */
	uint64_t burst;	  /* tokens saved up at most (and at the start) */
	uint64_t level;	  /* token-nanoseconds in the bucket */
	uint64_t last_ns; /* when level was last refilled; 0: never (full) */
};

/* A full bucket. */
void ratelimit_init(struct ratelimit *r, uint64_t rate, uint64_t burst);

/* Takes one token at now_ns: true when there was one (always when unlimited). */
bool ratelimit_take(struct ratelimit *r, uint64_t now_ns);

/* "N" or "N/BURST" (N >= 1, BURST >= 1; BURST defaults to 4 * N), or "0" for unlimited. */
int ratelimit_parse(const char *s, uint64_t *rate, uint64_t *burst);

#endif
