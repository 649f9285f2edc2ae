/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The BPF agent: loads the programs once (audit tracepoints, cgroup network
 * policy), shares their maps, and turns ring records into callbacks.
 * Sessions are registered as map entries keyed by their cgroup id, so a
 * session costs a mkdir and a map update, never a program load.
 */
#ifndef BPFBOX_AGENT_H
#define BPFBOX_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent;

typedef int (*agent_record_fn)(void *ctx, void *data, size_t size);

struct agent_opts {
	uint32_t ring_bytes;	  /* a power of two, >= 4096 */
	bool audit_opens;	  /* observe openat/openat2 */
	uint64_t aggregate_ns;	  /* window folding identical allowed opens */
	const char *cgroup_parent; /* where session cgroups live */
	agent_record_fn on_record;
	void *ctx;
};

struct agent_status {
	bool audit;	/* tracepoints attached */
	bool net;	/* cgroup network programs attached */
	bool unix_connect; /* pathname unix connects mediated (kernel >= 6.7) */
	char why_not[512]; /* what did not load, and why */
};

int agent_open(struct agent **out, const struct agent_opts *o);
void agent_close(struct agent *a);
const struct agent_status *agent_status(const struct agent *a);

int agent_session_add(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags);
/* Removes the session; *seq is the next sequence number it would have had. */
int agent_session_remove(struct agent *a, uint64_t cgroup_id, uint64_t *seq,
			 uint64_t *lost);
/* Adds CIDR (v4 or v6) with a port range to a session's connect allow-list. */
int agent_net_allow(struct agent *a, uint32_t id, const char *cidr, uint16_t lo, uint16_t hi);

/* The directories under which a session may connect to unix sockets (<= 4). */
int agent_unix_allow(struct agent *a, uint32_t id, const char *const *dirs, size_t n);

/* An fd that polls readable when records wait; then call agent_consume. */
int agent_ring_fd(const struct agent *a);
int agent_consume(struct agent *a);
/*
 * After a session's processes are gone: hands each allowed open still
 * counted in the kernel's aggregation map to fn as a file record, numbered
 * from *seq on (which advances), and forgets the session's entries.
 */
int agent_flush_session(struct agent *a, uint32_t id, uint64_t *seq, agent_record_fn fn,
			void *ctx);

/* Records lost because the ring was full, summed over CPUs. */
uint64_t agent_lost_total(const struct agent *a);

#endif
