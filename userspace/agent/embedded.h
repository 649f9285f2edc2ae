/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Embedded mode: `bpfbox run --audit FILE` as root with no daemon loads the
 * BPF programs for its one session, writes its events as JSON lines, and
 * removes everything it created (cgroup, links, maps) when it ends.
 */
#ifndef BPFBOX_EMBEDDED_H
#define BPFBOX_EMBEDDED_H

#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "ask.h"
#include "cgroup.h"
#include "../audit/encode.h"

struct session;

/* What the audit stream records; from --audit, --audit-mode, --audit-ring. */
struct audit_opts {
	const char *path;      /* a file (appended to) or "-" for stdout */
	uint32_t ring_bytes;   /* ring buffer size, a power of two */
	uint64_t aggregate_ns; /* window of the aggregate mode */
	bool all;	       /* mode all: every open is its own record */
	bool off;	       /* mode off: decisions only, nothing observed */
	bool rate_set;	       /* else AUDIT_RATE_DEFAULT, AUDIT_BURST_DEFAULT */
	uint64_t rate, burst;  /* records a second (0: no limit), burst */
	uint32_t argv_max;     /* argv bytes kept per exec; 0: BPFBOX_ARGV_LEN */
	int ask_fd;	       /* --ask-fd: answers to the command rules' asks; <= 2: none */
};

struct egress;

struct embedded {
	struct agent *agent;
	struct egress *egress; /* name rules: the session's proxy and resolver */
	struct session_cgroup cg;
	struct audit_clock clock;
	struct jsonw w;
	int out_fd;
	const char *session_id;
	struct session *session; /* denials go to its summary */
	int write_error; /* first errno writing the audit sink */
	bool lsm;	 /* the session's policy is in the BPF LSM maps */
	struct audit_flood flood; /* the records' rate limit */
	struct ask ask;		  /* the command rules' asks (ask.h) */
};

/* Opens the sink (path or "-" for stdout), loads, registers, emits the start. */
int embedded_start(struct embedded *e, struct session *s, const struct audit_opts *opts,
		   char *const argv[]);
/* Drains the ring, emits loss and end events, unregisters, cleans up. */
void embedded_finish(struct embedded *e, struct session *s);

#endif
