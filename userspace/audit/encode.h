/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoder and encoder of the audit stream: one ring record (shared header
 * in include/bpfbox/events.h) becomes one JSON line of docs/events.md.
 */
#ifndef BPFBOX_ENCODE_H
#define BPFBOX_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "../lib/jsonw.h"

/*
 * Encodes one ring record as a complete JSON line (newline included).
 * Returns its kind (enum ev_kind), or -EINVAL for a record too short or of
 * an unknown type. ev, when not NULL, gets the kind, the decision and the
 * time (its line and len are the caller's: w may hold more than one line).
 */
int audit_encode_record(struct jsonw *w, const struct audit_clock *c, const void *data, size_t size,
			const char *session, struct audit_event *ev);

#include "../lib/ratelimit.h"

/* Default per-session record rate: --audit-rate 5000/20000. */
#define AUDIT_RATE_DEFAULT  5000
#define AUDIT_BURST_DEFAULT 20000
#define AUDIT_TYPES	    8 /* record types are 1..7 (BPFBOX_EV_*) */

/*
 * A session's audit flood control: a token bucket over its records, and
 * the exact count of what it suppressed, by type, until said.
 */
struct audit_flood {
	struct ratelimit rl;
	uint64_t suppressed[AUDIT_TYPES];
	uint64_t total;	  /* suppressed since the last line */
	uint64_t all;	  /* suppressed over the session (session.end "suppressed") */
	uint64_t said_ns; /* when the last line was written */
};

void audit_flood_init(struct audit_flood *f, uint64_t rate, uint64_t burst);

/* Whether the record may be written (else it is counted as suppressed). */
bool audit_flood_pass(struct audit_flood *f, const void *data, size_t size, uint64_t now_ns);

/*
 * When something was suppressed and force or a second has passed since the
 * last line: appends {"type":"loss","where":"rate limit","count":N,
 * "types":{"file":N,...}} (no seq: the records it counts took theirs) and
 * resets the counts; 1 when a line was written, else 0.
 */
int audit_flood_line(struct audit_flood *f, struct jsonw *w, const struct audit_clock *c,
		     const char *session, uint64_t now_ns, bool force);

#endif
