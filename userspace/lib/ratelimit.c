// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ratelimit.h"
#include "util.h"

#define NS	 1000000000ULL
#define RATE_MAX NS

void ratelimit_init(struct ratelimit *r, uint64_t rate, uint64_t burst)
{
	r->rate = rate > RATE_MAX ? RATE_MAX : rate;
	r->burst = burst < 1 ? 1 : burst > RATE_MAX ? RATE_MAX : burst;
	r->level = r->burst * NS;
	r->last_ns = 0;
}

bool ratelimit_take(struct ratelimit *r, uint64_t now)
{
	uint64_t full = r->burst * NS;

	if (!r->rate)
		return true;
	if (r->last_ns && now > r->last_ns) {
		uint64_t dt = now - r->last_ns;

		/* dt * rate overflows only long after the bucket is full. */
		if (dt >= full / r->rate + 1)
			r->level = full;
		else if ((r->level += dt * r->rate) > full)
			r->level = full;
	}
	if (!r->last_ns || now > r->last_ns)
		r->last_ns = now;
	if (r->level < NS)
		return false;
	r->level -= NS;
	return true;
}

int ratelimit_parse(const char *s, uint64_t *rate, uint64_t *burst)
{
	unsigned long long v, b;
	const char *slash = strchr(s, '/');
	char head[32];
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n == 0 || n >= sizeof(head))
		return -EINVAL;
	memcpy(head, s, n);
	head[n] = '\0';
	if (parse_u64(head, &v) < 0 || v > RATE_MAX)
		return -EINVAL;
	b = v * 4;
	if (slash && (parse_u64(slash + 1, &b) < 0 || b < 1 || b > RATE_MAX || !v))
		return -EINVAL;
	*rate = v;
	*burst = v && b < 1 ? 1 : b;
	return 0;
}
