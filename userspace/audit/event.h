/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event model of the audit stream (docs/events.md): the kinds of event
 * with their one name table and what every event starts with. The encoder
 * (encode.c), the sinks' type filters, the daemon's subscribers, the
 * metrics and the schema tests all use this one list; lifecycle.h builds
 * the lifecycle events.
 */
#ifndef BPFBOX_EVENT_H
#define BPFBOX_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lib/jsonw.h"

#define AUDIT_SCHEMA_VERSION 5

/*
 * Every event kind and its "type". The order is the bit order of the type
 * filters (sinks' types=, subscribe "types") and of the metrics: new kinds
 * go at the end.
 */
#define AUDIT_KINDS(X)                           \
	X(EV_SESSION_START, "session.start")     \
	X(EV_SESSION_END, "session.end")         \
	X(EV_LOSS, "loss")                       \
	X(EV_EXEC, "exec")                       \
	X(EV_EXIT, "exit")                       \
	X(EV_FORK, "fork")                       \
	X(EV_FILE, "file")                       \
	X(EV_CONNECT, "connect")                 \
	X(EV_SINK_ERROR, "sink.error")           \
	X(EV_SESSION_PAUSED, "session.paused")   \
	X(EV_SESSION_RESUMED, "session.resumed") \
	X(EV_SESSION_KILLED, "session.killed")   \
	X(EV_CEILING, "ceiling")                 \
	X(EV_RENAME, "rename")                   \
	X(EV_NET_ALLOW, "net.allow")             \
	X(EV_NET_DENY, "net.deny")               \
	X(EV_SESSION_ASK, "session.ask")         \
	X(EV_SESSION_CHANGES, "session.changes") \
	X(EV_NET_REQUEST, "net.request")

enum ev_kind {
#define EV_KIND_ENUM(id, name) id,
	AUDIT_KINDS(EV_KIND_ENUM)
#undef EV_KIND_ENUM
		EV_KINDS,
};

/* The kind's "type", NULL for a number that is no kind. */
const char *ev_kind_name(int kind);
/* The kind of a "type", or -EINVAL. */
int ev_kind_parse(const char *name);
/* "session.start, session.end, ..." for messages. */
const char *ev_kind_list(void);

/*
 * The kind of one ring record (include/bpfbox/events.h), or -EINVAL when
 * it is too short or of an unknown type.
 */
int ev_kind_of_record(const void *data, size_t size);
/*
 * The name of a ring record type in a rate-limit loss line ("types"):
 * "exec", ..., "net"; "other" for an unknown type.
 */
const char *ev_record_type_name(unsigned int type);

/*
 * One event as the sinks get it: its kind and what a sink files it by, so
 * that none reads it again out of the JSON line.
 */
enum audit_decision {
	AUDIT_DECISION_NONE,  /* no decision: lifecycle, loss, ... */
	AUDIT_DECISION_ALLOW, /* "decision":"allow" */
	AUDIT_DECISION_DENY,  /* "decision":"deny" (syslog: notice) */
};

struct audit_event {
	enum ev_kind kind;
	enum audit_decision decision;
	int64_t time_ns;  /* its "time" (CLOCK_REALTIME ns); 0: now */
	const char *line; /* the JSON line, newline included */
	size_t len;
};

/*
 * An event that arrives as text (a daemon's subscription relayed by its
 * client): ev gets line, len and what the line says of its kind, decision
 * and time. 0, or -EINVAL when the line is no event of a known kind.
 */
int audit_event_parse(struct audit_event *ev, const char *line, size_t len);

/* Converts bpf_ktime_get_ns() (CLOCK_MONOTONIC) to wall-clock time. */
struct audit_clock {
	int64_t mono_to_real_ns;
};

void audit_clock_init(struct audit_clock *c);
/* The wall-clock time of monotonic ts_ns (c NULL: the realtime clock now). */
int64_t audit_real_ns(const struct audit_clock *c, uint64_t ts_ns);

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
 * Starts an event object with the fields every event has: schema_version,
 * type, time (of monotonic ts_ns), host, session and seq. session NULL
 * writes null; AUDIT_NO_SEQ leaves seq out (lines that count records
 * which took their numbers already).
 */
#define AUDIT_NO_SEQ UINT64_MAX
void audit_begin(struct jsonw *w, const struct audit_clock *c, enum ev_kind kind,
		 const char *session, uint64_t seq, uint64_t ts_ns);

#endif
