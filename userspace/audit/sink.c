// SPDX-License-Identifier: GPL-2.0
/*
 * The sink set (docs/sinks.md): fan-out of events to the file and stdout
 * sinks (sink_stream.c) and the network sinks (syslog.c) by their kind,
 * the delivery of the events the sinks make themselves (loss, sink.error)
 * and the one pollable fd through which the caller's event loop drives
 * them all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <json-c/json.h>

#include "sink_internal.h"
#include "../lib/util.h"

/* --- the set ------------------------------------------------------------ */

static bool is_net(const struct sink *sk)
{
	return sk->cfg.kind == SINK_SYSLOG_TCP || sk->cfg.kind == SINK_SYSLOG_UDP ||
	       sk->cfg.kind == SINK_SYSLOG_TLS;
}

static void push_event(struct sink *sk, const struct audit_event *ev, struct json_object **parsed)
{
	const char *out;
	size_t olen;

	if (sink_render(sk, ev, parsed, &out, &olen) < 0) {
		sink_lost(sk, 1, "event not formattable");
		return;
	}
	if (is_net(sk))
		netsink_push(sk, ev, out, olen);
	else
		stream_push(sk, out, olen);
}

static bool wants(const struct sink *sk, enum ev_kind kind)
{
	return !sk->cfg.types || (kind < EV_KINDS && (sk->cfg.types & (1U << kind)));
}

/* Events the sinks made, and the loss lines of network sinks. */
static void deliver(struct sinks *set)
{
	if (set->delivering)
		return;
	set->delivering = true;
	for (int round = 0; round < 8; round++) {
		struct pending_event *pe;
		bool more = false;

		while ((pe = set->pending)) {
			struct audit_event ev = {
				.kind = pe->kind, .line = pe->line, .len = pe->len};

			set->pending = pe->next;
			if (!set->pending)
				set->pending_tail = &set->pending;
			for (size_t i = 0; i < set->n; i++) {
				struct json_object *parsed = NULL;

				if ((int)i != pe->origin && wants(&set->v[i], ev.kind))
					push_event(&set->v[i], &ev, &parsed);
				json_object_put(parsed);
			}
			if (set->o.on_event)
				set->o.on_event(set->o.ctx, &ev);
			free(pe);
		}
		for (size_t i = 0; i < set->n; i++) {
			struct sink *sk = &set->v[i];
			struct json_object *parsed = NULL;
			uint64_t n = sk->lost_pending;

			if (!is_net(sk) || !n)
				continue;
			sink_log(sk, "%llu events dropped (%s)", (unsigned long long)n,
				 sk->lost_where ? sk->lost_where : "?");
			sink_loss_line(sk, &set->iw, n, sk->lost_where);
			sk->lost_pending = 0;
			if (!set->iw.oom) {
				/* set->iw is reused by what push_event may report: copy. */
				char *line = strndup(set->iw.buf, set->iw.len);
				struct audit_event ev = {
					.kind = EV_LOSS, .line = line, .len = set->iw.len};

				if (line)
					push_event(sk, &ev, &parsed);
				else
					sk->lost_pending = n;
				free(line);
			}
			json_object_put(parsed);
			more = true;
		}
		if (!more && !set->pending)
			break;
	}
	set->delivering = false;
}

static void arm_timer(struct sinks *set)
{
	struct itimerspec it = {0};
	uint64_t d = 0;

	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];
		uint64_t t = is_net(sk) ? netsink_deadline(sk) : stream_deadline(sk);

		if (t && (!d || t < d))
			d = t;
	}
	if (d == set->timer_at)
		return;
	set->timer_at = d;
	if (d) {
		it.it_value.tv_sec = d / 1000000000ULL;
		it.it_value.tv_nsec = d % 1000000000ULL;
		if (!it.it_value.tv_sec && !it.it_value.tv_nsec)
			it.it_value.tv_nsec = 1;
	}
	timerfd_settime(set->timerfd, TFD_TIMER_ABSTIME, &it, NULL);
}

static void tick(struct sinks *set)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];

		if (is_net(sk))
			netsink_tick(sk, now);
		else
			stream_tick(sk, now);
	}
}

int sinks_open(struct sinks **out, const struct sink_config *cfg, size_t n,
	       const struct sinks_opts *o, char *err, size_t size)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct sinks *set = calloc(1, sizeof(*set));
	int r = -ENOMEM;

	*out = NULL;
	if (!set) {
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	set->o = *o;
	set->pending_tail = &set->pending;
	set->timerfd = -1;
	set->epfd = epoll_create1(EPOLL_CLOEXEC);
	set->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ev.data.ptr = set;
	if (set->epfd < 0 || set->timerfd < 0 ||
	    epoll_ctl(set->epfd, EPOLL_CTL_ADD, set->timerfd, &ev) < 0) {
		r = -errno;
		snprintf(err, size, "cannot set up the sinks' event loop: %s", strerror(-r));
		goto fail;
	}
	if (gethostname(set->hostname, sizeof(set->hostname) - 1) < 0 || !set->hostname[0])
		snprintf(set->hostname, sizeof(set->hostname), "localhost");
	set->v = calloc(n ? n : 1, sizeof(*set->v));
	if (!set->v) {
		snprintf(err, size, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct sink *sk = &set->v[i];

		sk->cfg = cfg[i];
		sk->set = set;
		sk->index = i;
		sk->fd = -1;
		set->n = i + 1;
		if (is_net(sk))
			r = netsink_open(sk, err, size);
		else
			r = stream_open(sk, err, size);
		if (r < 0)
			goto fail;
	}
	deliver(set);
	arm_timer(set);
	*out = set;
	return 0;
fail:
	sinks_close(set);
	return r;
}

void sinks_emit(struct sinks *set, const struct audit_event *ev)
{
	struct json_object *parsed = NULL;

	if (!set || !ev->len)
		return;
	for (size_t i = 0; i < set->n; i++) {
		struct sink *sk = &set->v[i];

		if (wants(sk, ev->kind))
			push_event(sk, ev, &parsed);
	}
	json_object_put(parsed);
	deliver(set);
}

/* net() on each network sink, stream() on each file or stdout sink. */
static void each_sink(struct sinks *set, void (*net)(struct sink *sk),
		      void (*stream)(struct sink *sk))
{
	for (size_t i = 0; i < set->n; i++)
		(is_net(&set->v[i]) ? net : stream)(&set->v[i]);
}

void sinks_flush(struct sinks *set)
{
	if (!set)
		return;
	tick(set);
	each_sink(set, netsink_flush, stream_flush);
	deliver(set);
	arm_timer(set);
}

int sinks_fd(const struct sinks *set)
{
	return set ? set->epfd : -1;
}

void sinks_dispatch(struct sinks *set)
{
	struct epoll_event evs[16];
	uint64_t ticks;
	int n;

	if (!set)
		return;
	n = epoll_wait(set->epfd, evs, ARRAY_SIZE(evs), 0);
	for (int i = 0; i < n; i++) {
		struct sink *sk = evs[i].data.ptr;

		if (evs[i].data.ptr == set) {
			if (read(set->timerfd, &ticks, sizeof(ticks)) < 0) {
				/* not due yet, or already read */
			}
			set->timer_at = 0;
			continue;
		}
		if (is_net(sk))
			netsink_event(sk, evs[i].events);
		else
			stream_flush(sk);
	}
	sinks_flush(set);
}

void sinks_reopen(struct sinks *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].cfg.kind == SINK_FILE)
			stream_reopen(&set->v[i]);
	deliver(set);
	arm_timer(set);
}

void sinks_close(struct sinks *set)
{
	if (!set)
		return;
	each_sink(set, netsink_close, stream_close);
	/* What the closing sinks had to say reaches the hook, not the sinks. */
	while (set->pending) {
		struct pending_event *pe = set->pending;

		struct audit_event ev = {.kind = pe->kind, .line = pe->line, .len = pe->len};

		set->pending = pe->next;
		if (set->o.on_event)
			set->o.on_event(set->o.ctx, &ev);
		free(pe);
	}
	fd_close(&set->epfd);
	fd_close(&set->timerfd);
	jsonw_free(&set->fw);
	jsonw_free(&set->iw);
	free(set->v);
	free(set);
}

const char *sink_kind_name(enum sink_kind k)
{
	static const char *const names[] = {
		[SINK_STDOUT] = "stdout",	  [SINK_FILE] = "file",
		[SINK_SYSLOG_TCP] = "syslog+tcp", [SINK_SYSLOG_UDP] = "syslog+udp",
		[SINK_SYSLOG_TLS] = "syslog+tls",
	};

	return name_of(names, ARRAY_SIZE(names), k, "?");
}

size_t sinks_stats(const struct sinks *s, struct sink_stats *v, size_t n)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < s->n && i < n; i++) {
		const struct sink *sk = &s->v[i];
		struct sink_stats *st = &v[i];

		memset(st, 0, sizeof(*st));
		st->name = sk->cfg.name;
		st->kind = sink_kind_name(sk->cfg.kind);
		st->dropped = sk->st_dropped;
		st->retries = sk->st_retries;
		if (sk->net) {
			netsink_stats(sk, st);
		} else {
			st->queued = sk->q.count;
			st->queued_bytes = sk->q.bytes;
			st->up = !sk->failing;
		}
	}
	return s->n;
}
