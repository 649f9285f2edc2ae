// SPDX-License-Identifier: GPL-2.0
/*
 * What every sink uses (sink_internal.h): the queues of records, the
 * messages, the events the sinks make themselves (loss, sink.error) and
 * the set's epoll. The file writers (sink_stream.c) and the network sinks
 * (syslog.c) call down to here; the set (sink.c) calls them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "sink_internal.h"
#include "../lib/util.h"

/* --- records ----------------------------------------------------------- */

struct rec *rec_new(const char *data, size_t len)
{
	struct rec *r = malloc(sizeof(*r) + len);

	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->len = len;
	memcpy(r->data, data, len);
	return r;
}

void recq_push(struct recq *q, struct rec *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->bytes += r->len;
	q->count++;
}

void recq_push_front(struct recq *q, struct rec *r)
{
	r->next = q->head;
	q->head = r;
	if (!q->tail)
		q->tail = r;
	q->bytes += r->len;
	q->count++;
}

struct rec *recq_pop(struct recq *q)
{
	struct rec *r = q->head;

	if (!r)
		return NULL;
	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= r->len;
	q->count--;
	r->next = NULL;
	return r;
}

void recq_free(struct recq *q)
{
	struct rec *r;

	while ((r = recq_pop(q)))
		free(r);
}

/* --- messages and the events the sinks make ----------------------------- */

void sink_log(struct sink *sk, const char *fmt, ...)
{
	char msg[768], line[SINK_NAME_MAX + 800];
	va_list ap;

	if (!sk->set->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "sink %s: %s", sk->cfg.name, msg);
	sk->set->o.log(sk->set->o.ctx, line);
}

/* An event of the sinks themselves: now, of no session. */
static void begin_own_event(struct jsonw *w, enum ev_kind kind)
{
	jsonw_reset(w);
	audit_begin(w, NULL, kind, NULL, AUDIT_NO_SEQ, 0);
}

void sink_loss_line(struct sink *sk, struct jsonw *w, uint64_t count, const char *where)
{
	begin_own_event(w, EV_LOSS);
	jsonw_u64(w, "count", count);
	jsonw_str(w, "where", where ? where : "sink");
	jsonw_str(w, "sink", sk->cfg.name);
	if (sk->fail_err)
		jsonw_str(w, "error",
			  strerrorname_np(sk->fail_err) ? strerrorname_np(sk->fail_err) : "EIO");
	jsonw_end(w);
	jsonw_newline(w);
}

static void pending_add(struct sinks *set, int origin, enum ev_kind kind, const char *line,
			size_t len)
{
	struct pending_event *pe = malloc(sizeof(*pe) + len);

	if (!pe)
		return;
	pe->next = NULL;
	pe->origin = origin;
	pe->kind = kind;
	pe->len = len;
	memcpy(pe->line, line, len);
	*set->pending_tail = pe;
	set->pending_tail = &pe->next;
}

void sink_error_event(struct sink *sk, int err, const char *what)
{
	struct jsonw *w = &sk->set->iw;
	const char *name = strerrorname_np(err);

	sink_log(sk, "%s", what);
	begin_own_event(w, EV_SINK_ERROR);
	jsonw_str(w, "sink", sk->cfg.name);
	jsonw_str(w, "error", name ? name : "EIO");
	jsonw_str(w, "message", what);
	jsonw_end(w);
	jsonw_newline(w);
	if (!w->oom)
		pending_add(sk->set, sk->index, EV_SINK_ERROR, w->buf, w->len);
}

void sink_lost(struct sink *sk, uint64_t n, const char *where)
{
	if (!n)
		return;
	sk->lost_pending += n;
	sk->st_dropped += n;
	sk->lost_where = where;
}

int sink_watch(struct sink *sk, int fd, uint32_t events, bool add)
{
	struct epoll_event ev = {.events = events, .data.ptr = sk};

	if (!events)
		return epoll_ctl(sk->set->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
	if (epoll_ctl(sk->set->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}
