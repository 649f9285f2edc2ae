/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoder and encoder of the audit stream: one ring record (shared header
 * in include/bpfbox/events.h) becomes one JSON line of docs/events.md.
 */
#ifndef BPFBOX_ENCODE_H
#define BPFBOX_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/jsonw.h"

#define AUDIT_SCHEMA_VERSION 1

/* Converts bpf_ktime_get_ns() (CLOCK_MONOTONIC) to wall-clock time. */
struct audit_clock {
	int64_t mono_to_real_ns;
};

void audit_clock_init(struct audit_clock *c);

/*
 * Starts an event object with the fields every event has. ts_ns is
 * monotonic; session is the session's id string.
 */
void audit_begin(struct jsonw *w, const struct audit_clock *c, const char *type,
		 const char *session, uint64_t seq, uint64_t ts_ns);

/*
 * Encodes one ring record as a complete JSON line (newline included).
 * Returns 0, or -EINVAL for a record too short or of an unknown type.
 */
int audit_encode_record(struct jsonw *w, const struct audit_clock *c, const void *data,
			size_t size, const char *session);

const char *audit_layer_name(unsigned int layer);

#endif
