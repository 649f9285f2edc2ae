/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `bpfbox daemon`: loads the BPF programs once, pins them so enforcement
 * outlives the process, re-adopts the sessions it finds when it starts, and
 * serves the unix socket of proto.h. One thread, one epoll loop: the ring
 * buffer, the listening socket, the connections, signals and a 1 s tick.
 */
#ifndef BPFBOX_DAEMON_SERVER_H
#define BPFBOX_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sink_config;

struct daemon_opts {
	const char *socket_path;	 /* DAEMON_SOCKET_DEFAULT */
	const char *group;		 /* group allowed besides root; NULL: root only */
	const char *audit_path;		 /* appended to; NULL or "-": stdout */
	const char *pin_dir;		 /* DAEMON_PIN_DIR_DEFAULT */
	const char *cgroup_parent;	 /* NULL: cgroup_parent() */
	uint32_t ring_bytes;		 /* used when the ring is created, not re-adopted */
	const struct sink_config *sinks; /* --sink and --config (docs/sinks.md) */
	size_t nsinks;
	unsigned int max_conns_per_uid;	   /* 0: DAEMON_CONNS_PER_UID; root exempt */
	unsigned int max_sessions_per_uid; /* 0: DAEMON_SESSIONS_PER_UID; root exempt */
	bool audit_rate_set;		   /* else AUDIT_RATE_DEFAULT, AUDIT_BURST_DEFAULT */
	uint64_t audit_rate, audit_burst;  /* records a second per session; 0: unlimited */
	uint32_t argv_max;		   /* argv bytes kept per exec; 0: BPFBOX_ARGV_LEN */
	const char *metrics_addr;	   /* --metrics HOST:PORT; NULL: none */
	const char *config_path;	   /* --config: sinks and ceilings, read again on reload */
	bool bpf_stats;			   /* --bpf-stats: the kernel counts program run time */
};

/* Serves until SIGTERM or SIGINT (pins stay). 0, or -errno already printed. */
int daemon_serve(const struct daemon_opts *o);

/*
 * Removes what a daemon leaves behind on purpose: kills and removes the
 * cgroups of the pinned sessions, removes the pins (the programs detach),
 * the stale socket and the cgroup parent if empty. Refuses while a daemon
 * answers on the socket. 0, or -errno already printed.
 */
int daemon_cleanup(const struct daemon_opts *o);

#endif
