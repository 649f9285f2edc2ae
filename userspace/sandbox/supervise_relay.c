// SPDX-License-Identifier: GPL-2.0
/*
 * A session's output relayed under the output cap: the first half passes
 * at once, the last bytes of each stream wait in a ring for the end, after
 * a marker line that says how much was cut (docs/runtime.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervise_internal.h"
#include "../policy/policy.h"

void sup_write_all(int fd, const char *buf, size_t len, char *last)
{
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* our reader went away; keep draining the command */
		off += w;
	}
	if (len && last)
		*last = buf[len - 1];
}

static void ring_put(struct stream *st, const char *buf, size_t n)
{
	if (!st->ring_cap) {
		st->cut += n;
		return;
	}
	if (n >= st->ring_cap) {
		st->cut += st->ring_len + n - st->ring_cap;
		memcpy(st->ring, buf + n - st->ring_cap, st->ring_cap);
		st->ring_start = 0;
		st->ring_len = st->ring_cap;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (st->ring_len == st->ring_cap) {
			st->ring_start = (st->ring_start + 1) % st->ring_cap;
			st->ring_len--;
			st->cut++;
		}
		st->ring[(st->ring_start + st->ring_len++) % st->ring_cap] = buf[i];
	}
}

/* Relays one chunk from a command's pipe to ours, under the output cap. */
bool sup_relay(struct session *s, struct stream *st, uint64_t *head_left)
{
	char buf[65536];
	ssize_t n = read(st->from, buf, sizeof(buf));
	size_t keep;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false; /* EOF; EIO from a pty master whose slave is closed */
	keep = n;
	if (s->policy->limits.output_bytes && keep > *head_left)
		keep = *head_left;
	sup_write_all(st->to, buf, keep, &st->last);
	s->result.output_bytes += keep;
	if (s->policy->limits.output_bytes)
		*head_left -= keep;
	if (keep < (size_t)n)
		ring_put(st, buf + keep, n - keep);
	return true;
}

/* The tail of a stream, after a marker line when something was cut. */
void sup_flush_tail(struct session *s, struct stream *st)
{
	char marker[160];
	int len;

	/* The tail starts at a line: the partial line before it counts as cut. */
	for (size_t i = 0; st->cut && i < st->ring_len && i < 4096; i++) {
		if (st->ring[(st->ring_start + i) % st->ring_cap] != '\n')
			continue;
		if (i + 1 < st->ring_len) {
			st->ring_start = (st->ring_start + i + 1) % st->ring_cap;
			st->ring_len -= i + 1;
			st->cut += i + 1;
		}
		break;
	}
	if (st->cut) {
		len = snprintf(
			marker, sizeof(marker),
			"%s[bpfbox: %llu bytes cut here by the output limit of %llu bytes]\n",
			st->last && st->last != '\n' ? "\n" : "", (unsigned long long)st->cut,
			(unsigned long long)s->policy->limits.output_bytes);
		sup_write_all(st->to, marker, len, NULL);
		s->result.output_dropped += st->cut;
	}
	if (st->ring_len) {
		size_t first = st->ring_cap - st->ring_start;

		if (first > st->ring_len)
			first = st->ring_len;
		sup_write_all(st->to, st->ring + st->ring_start, first, NULL);
		sup_write_all(st->to, st->ring, st->ring_len - first, NULL);
		s->result.output_bytes += st->ring_len;
	}
	free(st->ring);
	st->ring = NULL;
}
