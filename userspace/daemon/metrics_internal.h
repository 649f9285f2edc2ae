/* SPDX-License-Identifier: GPL-2.0 */
/* What the daemon's metrics endpoint (metrics.c: counters, HTTP) and its
 * exposition (metrics_render.c) share. */
#ifndef BPFBOX_DAEMON_METRICS_INTERNAL_H
#define BPFBOX_DAEMON_METRICS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "metrics.h"
#include "../probe/probe.h"
#include "../lib/jsonw.h"
#include "../lib/names.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

#define MCONN_MAX      16
#define REQ_MAX	       2048
#define REQ_TIMEOUT_NS (5ULL * 1000000000ULL)

/* Request durations by op (seconds), the ops, the denying layers and the
 * decisions the counters are kept by (the tables are in metrics.c). */
#define NBUCKETS 12
#define NOPS	 11
/* The layers of lib/names.h (the stream's spelling), then "unknown". */
#define METRICS_LAYER_ONE(e, n) +1
#define NLAYERS			(BPFBOX_LAYER_NAMES(METRICS_LAYER_ONE) + 1)
enum { DEC_ALLOW, DEC_DENY, DEC_NONE, NDEC };
extern const double metrics_buckets[NBUCKETS];
extern const char *const metrics_ops[NOPS];
extern const char *const metrics_layers[NLAYERS];
extern const char *const metrics_decisions[NDEC];

struct mconn {
	int fd; /* -1: free */
	uint64_t since;
	char req[REQ_MAX];
	size_t req_len;
	char *out;
	size_t out_len, out_off;
};

struct metrics {
	int listen_fd;
	struct daemon *d;
	char addr[128];
	struct mconn c[MCONN_MAX];
	uint64_t events[EV_KINDS][NDEC];
	uint64_t denials[NLAYERS];
	uint64_t req_count[NOPS], req_bucket[NOPS][NBUCKETS];
	double req_sum[NOPS];
	uint64_t reloads_ok, reloads_failed;
	uint64_t scrapes;
	bool probed;
	struct host_caps caps;
	int stats_fd; /* BPF_ENABLE_STATS: run time counted while open; -1 */
};

/* A growing text buffer; oom once an allocation failed (then it stays so). */

/* The exposition of one scrape (Prometheus text format); NULL when out of memory. */
char *metrics_render(struct metrics *m, size_t *len);

#endif
