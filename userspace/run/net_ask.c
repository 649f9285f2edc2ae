// SPDX-License-Identifier: GPL-2.0
/* --net-ask: the runtime asked about a destination (net_ask.h). */
#include "net_ask.h"
#include "../agent/ask.h"
#include "../sandbox/session.h"
#include "../policy/policy.h"

void net_asker_init(struct net_asker *a, pthread_mutex_t *lock, struct ask *ask, struct session *s)
{
	a->lock = lock;
	a->ask = ask;
	a->s = s;
	a->next_id = ASK_NET_ID0;
}

bool net_asker_ask(void *arg, const char *name, uint16_t port, int stop_fd)
{
	struct net_asker *a = arg;
	uint64_t timeout = a->s->policy->limits.pause_timeout_ms, id;
	enum ask_answer ans;

	if (a->ask->fd < 0)
		return false;
	pthread_mutex_lock(a->lock);
	id = a->next_id++;
	status_ask_net(a->s, id, name, port, timeout);
	a->ask->asked++;
	ans = ask_wait_or(a->ask, id, timeout, stop_fd);
	if (ans == ASK_OTHER)
		ans = ASK_DENY; /* the session ended first */
	if (ans == ASK_APPROVE || ans == ASK_ALWAYS)
		a->ask->approved++;
	else
		a->ask->denied++;
	status_answered(a->s, id, ask_answer_name(ans));
	pthread_mutex_unlock(a->lock);
	return ans == ASK_APPROVE || ans == ASK_ALWAYS;
}
