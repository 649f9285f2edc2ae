/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Egress by name without the BPF network layer (docs/network.md, "Without
 * BPF"): an unprivileged session without a daemon gets a network namespace
 * of its own whose only way out is this process's proxy, reached through
 * HTTP_PROXY and HTTPS_PROXY, with its resolver there too.
 */
#ifndef BPFBOX_RUN_NET_PROXY_H
#define BPFBOX_RUN_NET_PROXY_H

#include <stdbool.h>

#include "net_ask.h"
#include "../agent/ask.h"
#include "../lib/denial.h"

struct egress;
struct egress_secrets;
struct session;

struct run_proxy {
	bool started;
	struct egress *egress;
	int sock[2]; /* ours, the child's (session.proxy_sock) */
	struct denials_shared denials;
	struct ask ask; /* --net-ask: the answers on --ask-fd */
	pthread_mutex_t ask_lock;
	struct net_asker asker;
};

/*
 * Puts s in a network namespace whose way out is the proxy, started here
 * (it serves the sockets once the child sends them); with the policy's
 * net_ask, a name no rule lists is asked about on ask_fd (-1: none). 0, -EOPNOTSUPP
 * without the namespace layer (nothing changed), or -errno (printed).
 */
int run_proxy_start(struct run_proxy *x, struct session *s, const struct egress_secrets *secrets,
		    int ask_fd);
/* The session's CA with secrets, else NULL. */
const char *run_proxy_ca(const struct run_proxy *x);
/* Ends every connection and the proxy's threads (after the session). */
void run_proxy_stop(struct run_proxy *x);

#endif
