/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --net-ask (docs/network.md, "Asking for a destination"): a name no rule
 * lists waits for the runtime's answer on --ask-fd, the same protocol as
 * the command rules' asks: an "ask" line on the status channel (with
 * "name" and "port"), "ID approve|always|deny" back, no answer within the
 * pause timeout a deny. The proxy's threads ask; one question is open at a
 * time, and the command rules' asks (embedded) take the same lock.
 */
#ifndef BPFBOX_RUN_NET_ASK_H
#define BPFBOX_RUN_NET_ASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct ask;
struct session;

struct net_asker {
	pthread_mutex_t *lock; /* the ask fd's: held for a whole question */
	struct ask *ask;
	struct session *s;
	uint64_t next_id; /* from ASK_NET_ID0 (ask.h) */
};

void net_asker_init(struct net_asker *a, pthread_mutex_t *lock, struct ask *ask, struct session *s);
/* egress_opts.ask: the runtime's answer for name (port 0: any); stop_fd readable: deny. */
bool net_asker_ask(void *arg, const char *name, uint16_t port, int stop_fd);

#endif
