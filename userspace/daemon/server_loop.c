// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's event loop: one epoll set of the socket, signals, a tick,
 * the ring buffer, the sinks, the metrics endpoint and every connection.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "internal.h"
#include "ops_internal.h"
#include "metrics.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../lib/log.h"
#include "../lib/util.h"

#define REFUSED_LINGER_NS (5ULL * 1000000000ULL)

/*
 * Records are read in batches: after a read of fewer than RING_BURST
 * records, the ring is left out of the epoll set for RING_QUIET_NS, so
 * the records of that window cost the daemon one wakeup, not one each
 * (each record of a quiet ring wakes its reader: the programs submit
 * with adaptive wakeup). A busy ring is read at once. An unregister reads
 * the ring itself, so a session's end waits for nothing.
 */
#define RING_QUIET_NS (5ULL * 1000000ULL)
#define RING_BURST    256

int server_loop_setup(struct daemon *d)
{
	struct itimerspec it = {.it_interval = {1, 0}, .it_value = {1, 0}};
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct epoll_event ev = {.events = EPOLLIN};

	signal(SIGPIPE, SIG_IGN);
	d->sig_fd = signalfd_block(sigs, ARRAY_SIZE(sigs), NULL);
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->sig_fd < 0 || d->timer_fd < 0 || d->epfd < 0 ||
	    timerfd_settime(d->timer_fd, 0, &it, NULL) < 0)
		return log_error_errno(errno, "cannot set up the event loop");
	ev.data.ptr = &d->listen_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->listen_fd, &ev) < 0)
		return -errno;
	ev.data.ptr = &d->sig_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sig_fd, &ev) < 0)
		return -errno;
	ev.data.ptr = &d->timer_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->timer_fd, &ev) < 0)
		return -errno;
	ev.data.ptr = d->agent;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, agent_ring_fd(d->agent), &ev) < 0)
		return -errno;
	ev.data.ptr = d->sinks;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, sinks_fd(d->sinks), &ev) < 0)
		return -errno;
	if (ops_net_ask_setup(d) < 0)
		return log_error_errno(errno, "cannot set up the event loop");
	ev.data.ptr = &d->net_ask_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->net_ask_fd[0], &ev) < 0)
		return -errno;
	return 0;
}

static void on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			char why[PATH_MAX + 1024];

			/* The config again; the same sinks (logrotate): files reopened. */
			daemon_reload(d, why, sizeof(why));
			continue;
		}
		/* What becomes of the pins is said once the loop is left (daemon_serve). */
		dlog("%s: stopping", strsignal(si.ssi_signo));
		d->stop = true;
	}
}

static void on_tick(struct daemon *d)
{
	uint64_t n, now = now_ns();

	if (read(d->timer_fd, &n, sizeof(n)) < 0) {
		/* nothing: a tick is a tick */
	}
	ops_tick(d);
	for (struct conn *c = d->conns; c; c = c->next)
		if (c->refused && now - c->created_ns > REFUSED_LINGER_NS)
			c->dead = true;
}

/*
 * Whether the ring is in the epoll set. Should epoll_ctl fail, the ring is
 * not left unread: said once, and from then on read every loop, the loop
 * woken at least every RING_QUIET_NS (ring_timeout).
 */
static void ring_watch(struct daemon *d, bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = d->agent};

	if (d->ring_polled || epoll_ctl(d->epfd, EPOLL_CTL_MOD, agent_ring_fd(d->agent), &ev) == 0)
		return;
	log_warn_errno(errno,
		       "the ring buffer cannot be %s the event loop; it is read every %llu ms "
		       "from now on",
		       on ? "put back into" : "taken out of",
		       (unsigned long long)(RING_QUIET_NS / 1000000));
	d->ring_polled = true;
}

/* The ring's records read; a quiet ring is left alone for RING_QUIET_NS. */
static void ring_read(struct daemon *d)
{
	int n = agent_consume(d->agent);
	bool quiet = n > 0 && n < RING_BURST;

	if (quiet != (d->ring_quiet_until != 0))
		ring_watch(d, !quiet);
	d->ring_quiet_until = quiet ? now_ns() + RING_QUIET_NS : 0;
}

/* Milliseconds until the ring is read again (-1: when it has records). */
static int ring_timeout(struct daemon *d)
{
	uint64_t now;

	if (d->ring_polled) {
		agent_consume(d->agent);
		ev_flush(d);
		return RING_QUIET_NS / 1000000;
	}
	if (!d->ring_quiet_until)
		return -1;
	now = now_ns();
	if (now >= d->ring_quiet_until) {
		ring_read(d); /* what came in the window; quiet again if anything did */
		ev_flush(d);
		if (!d->ring_quiet_until)
			return -1;
	}
	return (d->ring_quiet_until - now + 999999) / 1000000;
}

/*
 * The poll's timeout: the ring's, or sooner an open ask's deadline (its
 * timeout denies it then, not up to a second later on the tick).
 */
static int loop_timeout(struct daemon *d)
{
	int ring = ring_timeout(d), ask = ops_ask_due(d);

	return ask < 0 || (ring >= 0 && ring < ask) ? ring : ask;
}

void server_loop(struct daemon *d)
{
	struct epoll_event evs[64];

	while (!d->stop) {
		int n = epoll_wait(d->epfd, evs, ARRAY_SIZE(evs), loop_timeout(d));

		if (n < 0 && errno != EINTR) {
			dlog("epoll_wait failed: %s; stopping", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &d->listen_fd) {
				conn_accept(d);
			} else if (p == &d->sig_fd) {
				on_signal(d);
			} else if (p == &d->timer_fd) {
				on_tick(d);
			} else if (p == d->agent) {
				ring_read(d);
			} else if (p == d->sinks) {
				sinks_dispatch(d->sinks);
			} else if (p == &d->net_ask_fd) {
				ops_net_ask_read(d);
			} else if (metrics_owns(d->metrics, p)) {
				metrics_on_event(d, p, evs[i].events);
			} else {
				struct conn *c = p;

				if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
					conn_read(d, c);
				if (evs[i].events & EPOLLOUT)
					conn_flush(d, c);
				/* Only one event per connection per batch: reaped below. */
			}
		}
		/* A dead conn may appear in a later batch only; none is freed mid-batch. */
		reap_conns(d);
		for (struct conn *c = d->conns; c; c = c->next)
			if (buf_used(&c->out) && !c->epollout)
				conn_flush(d, c);
		reap_conns(d);
		ev_flush(d);
	}
}
