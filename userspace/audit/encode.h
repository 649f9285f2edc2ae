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
 * What names this host in every event, so that a SIEM can join events of
 * many hosts: the hostname, a stable host id and the boot id.
 *
 * id is systemd's application-specific machine id for AUDIT_HOST_APP_ID
 * (HMAC-SHA256 keyed by /etc/machine-id, docs/events.md): stable across
 * boots and reinstalls of bpfbox, reproducible with `systemd-id128
 * machine-id --app-specific=AUDIT_HOST_APP_ID`, and not the machine id
 * itself (which must not leave the host). Empty when unknown (null).
 */
#define AUDIT_HOST_APP_ID "72c2ee943bc940289a7204cefb72ab60"

struct audit_host {
	char name[256];
	char id[33];
	char boot_id[37];
};

/* The host's names, read on first use; audit_host_refresh() reads them again. */
const struct audit_host *audit_host(void);
void audit_host_refresh(void);

/* Adds "host", "host_id", "boot_id" to the object being written. */
void audit_put_host(struct jsonw *w);

/*
 * The end of session.start that names what ran it: "labels" (the runtime's
 * labels, a JSON object text, or NULL: {}), "bpfbox_version",
 * "policy_hash" (sha256 of exactly the bytes of "policy") and "policy".
 */
void audit_put_policy(struct jsonw *w, const char *labels_json, const char *policy_json);

/* "sha256:<hex>" of len bytes (the policy hash of session.start). */
int audit_sha256(const void *data, size_t len, char *out, size_t size);

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

#include "../lib/ratelimit.h"

/* Default per-session record rate: --audit-rate 5000/20000. */
#define AUDIT_RATE_DEFAULT  5000
#define AUDIT_BURST_DEFAULT 20000
#define AUDIT_TYPES 8 /* record types are 1..7 (BPFBOX_EV_*) */

/*
 * A session's audit flood control: a token bucket over its records, and
 * the exact count of what it suppressed, by type, until said.
 */
struct audit_flood {
	struct ratelimit rl;
	uint64_t suppressed[AUDIT_TYPES];
	uint64_t total;	   /* suppressed since the last line */
	uint64_t all;	   /* suppressed over the session (session.end "suppressed") */
	uint64_t said_ns;  /* when the last line was written */
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
