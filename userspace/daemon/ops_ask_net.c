// SPDX-License-Identifier: GPL-2.0
/*
 * --net-ask through the daemon (docs/network.md, "Asking for a
 * destination"): a session's proxy thread asks about a name no rule lists.
 * The question goes to the event loop over a pipe (the loop owns the
 * session table and the sinks); ops_ask.c opens it like a command rule's
 * ask (session.ask, answer null, to the sinks and subscribers; the
 * registering bpfbox run relays its runtime's answer; the pause timeout
 * denies) and answers the thread through an eventfd. A question is held
 * by both sides and freed by the last; the thread gives up when the proxy
 * stops (the session ends) or well past the timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "ops_internal.h"
#include "table.h"

/* One question from a proxy thread: held by it and by the loop. */
struct dnet_q {
	char session[33];
	char name[254];
	uint16_t port;
	int efd; /* the answer: 1 approved, 2 denied */
	int refs;
};

static void q_unref(struct dnet_q *q)
{
	if (__atomic_sub_fetch(&q->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(q->efd);
		free(q);
	}
}

int ops_net_ask_setup(struct daemon *d)
{
	if (pipe2(d->net_ask_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

bool ops_net_ask(void *arg, const char *name, uint16_t port, int stop_fd)
{
	struct dsession_ask_ctx *x = arg;
	struct daemon *d = x->d;
	struct dnet_q *q = calloc(1, sizeof(*q));
	struct pollfd p[2];
	uint64_t v = 0;

	if (!q)
		return false;
	q->refs = 2;
	snprintf(q->session, sizeof(q->session), "%s", x->session);
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->port = port;
	q->efd = eventfd(0, EFD_CLOEXEC);
	if (q->efd < 0 || write(d->net_ask_fd[1], &q, sizeof(q)) != sizeof(q)) {
		if (q->efd >= 0)
			close(q->efd);
		free(q);
		return false; /* nobody could be asked: fail closed */
	}
	p[0] = (struct pollfd){.fd = q->efd, .events = POLLIN};
	p[1] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
	for (;;) {
		int r = poll(p, 2, (int)(x->timeout_ms + 5000));

		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0 && (p[0].revents & POLLIN) && read(q->efd, &v, sizeof(v)) != sizeof(v))
			v = 0;
		break;
	}
	q_unref(q);
	return v == 1;
}

void ops_net_answer(void *net_q, bool yes)
{
	struct dnet_q *q = net_q;
	uint64_t v = yes ? 1 : 2;

	(void)!write(q->efd, &v, sizeof(v));
	q_unref(q);
}

void ops_net_ask_read(struct daemon *d)
{
	struct dnet_q *q;

	while (read(d->net_ask_fd[0], &q, sizeof(q)) == sizeof(q)) {
		struct dsession *s = table_find(&d->table, q->session);

		/* Its session gone, or nobody to answer: denied. */
		if (!s || !ops_ask_net_open(d, s, q, q->name, q->port))
			ops_net_answer(q, false);
	}
}
