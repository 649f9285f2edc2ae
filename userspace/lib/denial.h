/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The denials of one session, counted by kind for the end-of-run summary
 * (docs/runtime.md). The same tally is kept by the supervisor (seccomp's
 * socket refusals), by an embedded run and by the daemon from the BPF
 * records (denials_add_record), so that both modes print one summary.
 */
#ifndef BPFBOX_DENIAL_H
#define BPFBOX_DENIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One kind of denial: same layer, op and object. */
struct denial {
	char layer[16];	 /* bpfbox_layer_name(): seccomp, landlock, bpf-lsm, cgroup-bpf, mount */
	char op[24];	 /* socket, open, write, unlink, connect, exec, ... */
	char what[200];	 /* a path, an address, e.g. "AF_INET SOCK_STREAM" */
	char rule[48];	 /* the rule that decided, when one did: a command rule, a net_deny */
	char reason[80]; /* the egress proxy's reason ("no net_allow rule", ...); "" */
	int err;	 /* the errno the command saw */
	unsigned int count;
};

#define DENIALS_MAX 16

struct denials {
	struct denial v[DENIALS_MAX];
	size_t n;
	uint64_t other; /* past DENIALS_MAX kinds */
	/*
	 * Refused connects to a name service's socket that the C library tries
	 * and falls back from (denial_is_fallback): counted, never listed.
	 */
	uint64_t fallbacks;
	/*
	 * Failed execs with ENOENT or ENOTDIR, a name tried along PATH: the
	 * BPF layer counts them (never records), neither denials nor fallbacks.
	 */
	uint64_t exec_not_found;
};

/*
 * Whether a refused connect to the unix socket path is a probe the C
 * library falls back from: nscd, sssd, systemd-resolved, systemd's user
 * database (docs/runtime.md).
 */
bool denial_is_fallback(const char *path);
/*
 * Whether a refused open of path (folded) is a write a runtime goes on
 * without: a file of a process's own under /proc (the JVM's
 * coredump_filter; docs/runtime.md).
 */
bool denial_file_is_fallback(const char *path);

/* Counts count denials of one kind. */
void denials_add(struct denials *d, const char *layer, const char *op, const char *what, int err,
		 unsigned int count);
/* The same with the rule that decided and the egress proxy's reason (NULL: none). */
void denials_add_why(struct denials *d, const char *layer, const char *op, const char *what,
		     int err, unsigned int count, const char *rule, const char *reason);
/*
 * Counts a BPF record (include/bpfbox/events.h) when it is a denial of one
 * of our layers, the egress proxy's refusals included; the kernel's own
 * refusals (DAC) are not ours to explain, nor an allowed host's failure
 * (its upstream refused, its name does not resolve). Returns whether it
 * counted.
 */
bool denials_add_record(struct denials *d, const void *data, size_t size);
/* Every denial counted, of every kind. */
uint64_t denials_total(const struct denials *d);

/*
 * Denials counted by other threads (the egress proxy without BPF), each
 * under the lock, merged into the session's tally before its summary.
 */
struct denials_shared {
	pthread_mutex_t lock;
	struct denials d;
};

/* A record (as denials_add_record) counted under the lock. */
void denials_shared_add(struct denials_shared *s, const void *data, size_t size);
/* Moves what s counted into d (s is left empty). */
void denials_shared_take(struct denials_shared *s, struct denials *d);

#endif
