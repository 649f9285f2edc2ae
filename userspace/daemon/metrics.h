/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `bpfbox daemon --metrics ADDR`: Prometheus text format on GET /metrics
 * and a health check on GET /healthz, served from the daemon's own epoll
 * loop (no thread). The series are listed in docs/operating.md.
 */
#ifndef BPFBOX_DAEMON_METRICS_H
#define BPFBOX_DAEMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct daemon;
struct metrics;

/*
 * Listens on addr ("127.0.0.1:9464", "[::1]:9464", ":9464" for every
 * address) and registers in the daemon's epoll. 0, or -errno with a line
 * printed.
 */
int metrics_open(struct daemon *d, const char *addr);
void metrics_close(struct metrics *m);

/* Whether an epoll event's data.ptr is one of ours; then metrics_on_event(). */
bool metrics_owns(const struct metrics *m, const void *ptr);
void metrics_on_event(struct daemon *d, void *ptr, uint32_t events);

/* Counters the daemon feeds (a NULL m: not serving, nothing counted). */
struct audit_event;
void metrics_count_event(struct metrics *m, const struct audit_event *ev);
void metrics_count_denial(struct metrics *m, const char *layer);
void metrics_observe_request(struct metrics *m, const char *op, uint64_t ns);
void metrics_count_reload(struct metrics *m, bool ok);

/* Probes the host again (after a reload): the _info series follow. */
void metrics_probe(struct metrics *m);

#endif
