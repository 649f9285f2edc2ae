/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Embedded mode (run.c chooses it): bpfbox run as root with no daemon loads
 * the BPF programs for its one session, writes its events as JSON lines to
 * the run's sinks, and removes everything it created (links, maps) when it
 * ends. The session's cgroup is the session's own (monitor/limits.c).
 */
#ifndef BPFBOX_EMBEDDED_H
#define BPFBOX_EMBEDDED_H

#include <stdbool.h>
#include <stdint.h>

#include "../agent/agent.h"
#include "../agent/ask.h"
#include "net_ask.h"
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
	bool net_only;	       /* loaded for a network rule alone: no exec program */
};

struct egress;
struct egress_secrets;
struct sinks;

struct embedded {
	struct agent *agent;
	struct egress *egress; /* name rules: the session's proxy and resolver */
	struct sinks *sinks;   /* the run's (--audit), NULL: records dropped */
	bool net_only;	       /* audit_opts.net_only: no exec program by choice */
	uint64_t cg_id;	       /* the session cgroup's id: it keys the maps */
	struct audit_clock clock;
	struct jsonw w;
	const char *session_id;
	struct session *session;	      /* denials go to its summary */
	bool lsm;			      /* the session's policy is in the BPF LSM maps */
	struct audit_flood flood;	      /* the records' rate limit */
	struct ask ask;			      /* the command rules' asks (ask.h) */
	pthread_mutex_t ask_lock;	      /* one question at a time: a command's or a name's */
	struct net_asker net_ask;	      /* --net-ask (net_ask.h) */
	const struct egress_secrets *secrets; /* --secret: held by the proxy */
};

/*
 * Loads the programs, makes the session cgroup, writes the session into the
 * maps; its records go to sinks (NULL: dropped, Full without --audit).
 */
int embedded_start(struct embedded *e, struct session *s, const struct audit_opts *opts,
		   struct sinks *sinks, const struct egress_secrets *secrets);
/* Writes session.start (run.c calls it once the level is final). */
void embedded_session_start(struct embedded *e, struct session *s, char *const argv[]);
/* Drains the ring, emits loss and end events, unregisters, cleans up. */
void embedded_finish(struct embedded *e, struct session *s);

#endif
