/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Embedded mode: `bpfbox run --audit FILE` as root with no daemon loads the
 * BPF programs for its one session, writes its events as JSON lines, and
 * removes everything it created (cgroup, links, maps) when it ends.
 */
#ifndef BPFBOX_EMBEDDED_H
#define BPFBOX_EMBEDDED_H

#include <stdint.h>

#include "agent.h"
#include "cgroup.h"
#include "../audit/encode.h"

struct session;

struct embedded {
	struct agent *agent;
	struct session_cgroup cg;
	struct audit_clock clock;
	struct jsonw w;
	int out_fd;
	const char *session_id;
	int write_error; /* first errno writing the audit sink */
};

/* Opens the sink (path or "-" for stdout), loads, registers, emits the start. */
int embedded_start(struct embedded *e, struct session *s, const char *audit_path,
		   char *const argv[]);
/* Drains the ring, emits loss and end events, unregisters, cleans up. */
void embedded_finish(struct embedded *e, struct session *s);

#endif
