/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the sink files share. Calls point one way: sink.c (the set) ->
 * sink_stream.c (file, stdout) and syslog.c (network) -> sink_format.c and
 * sink_core.c (records, messages, the sinks' own events).
 */
#ifndef BPFBOX_SINK_INTERNAL_H
#define BPFBOX_SINK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sink.h"
#include "../lib/jsonw.h"

struct json_object;

/* One event as a sink will write or send it (a line, a syslog frame). */
struct rec {
	struct rec *next;
	uint64_t sent_ns;    /* network: when its last byte went to the socket; 0 not yet */
	uint64_t stream_end; /* network: bytes sent on the connection up to its end */
	uint64_t loss;	     /* a loss line made by the sink: the count it reports */
	uint32_t len;
	char data[];
};

/* A FIFO of records. */
struct recq {
	struct rec *head, *tail;
	size_t bytes, count;
};

struct rec *rec_new(const char *data, size_t len);
void recq_push(struct recq *q, struct rec *r);
void recq_push_front(struct recq *q, struct rec *r);
struct rec *recq_pop(struct recq *q);
void recq_free(struct recq *q);

struct netsink;

struct sink {
	struct sink_config cfg;
	struct sinks *set;
	int index;

	/* file and stdout */
	int fd;
	bool is_socket; /* stdout is a socket: send(MSG_DONTWAIT) */
	bool nonblock;	/* writes may say EAGAIN: EPOLLOUT then */
	bool regular;	/* a regular file: a partial line can be cut off again */
	bool want_out;	/* EPOLLOUT registered */
	uint64_t size;	/* bytes in the current file */
	struct recq q;
	size_t head_off;   /* bytes of q.head already written */
	uint64_t unsynced; /* events written since the last fsync */
	uint64_t first_unsynced_ns;
	bool rotate_warned;

	/* both kinds: what was dropped and not yet reported in this sink */
	uint64_t lost_pending;
	const char *lost_where;
	bool failing; /* writes fail: events are counted, not queued */
	int fail_err;
	uint64_t retry_ns;		 /* next attempt while failing */
	uint64_t st_dropped, st_retries; /* since open, for sinks_stats() */

	struct netsink *net;
};

struct pending_event {
	struct pending_event *next;
	int origin; /* the sink it is about: it does not get it */
	enum ev_kind kind;
	size_t len;
	char line[];
};

struct sinks {
	struct sink *v;
	size_t n;
	struct sinks_opts o;
	int epfd, timerfd;
	uint64_t timer_at; /* armed deadline, 0: none */
	struct jsonw fw;   /* a formatted event */
	struct jsonw iw;   /* an event the sinks make */
	struct pending_event *pending, **pending_tail;
	bool delivering;
	char hostname[SINK_HOST_MAX];
};

/* sink_core.c */
void sink_log(struct sink *sk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records n events this sink dropped; its stream gets a loss line. */
void sink_lost(struct sink *sk, uint64_t n, const char *where);
/* A failure episode starts: logged and told to the other sinks once. */
void sink_error_event(struct sink *sk, int err, const char *what);
/* Registers fd in the set's epoll with events (0: removes it). */
int sink_watch(struct sink *sk, int fd, uint32_t events, bool add);
/* The JSON loss line (newline included) in w. */
void sink_loss_line(struct sink *sk, struct jsonw *w, uint64_t count, const char *where);

/* sink_format.c: the payload for sk of one event (no newline in the
 * result). parsed is parsed on first need and kept for the other sinks of
 * the same event (the caller puts it). */
int sink_render(struct sink *sk, const struct audit_event *ev, struct json_object **parsed,
		const char **out, size_t *out_len);

/* sink_stream.c: the file and stdout sinks. */
int stream_open(struct sink *sk, char *err, size_t size);
void stream_push(struct sink *sk, const char *payload, size_t len);
void stream_flush(struct sink *sk);
void stream_tick(struct sink *sk, uint64_t now);
/* When stream_tick() wants to run next (monotonic ns), 0: never. */
uint64_t stream_deadline(const struct sink *sk);
void stream_reopen(struct sink *sk);
void stream_close(struct sink *sk);

/* syslog.c: the network sinks. */
int netsink_open(struct sink *sk, char *err, size_t err_size);
void netsink_push(struct sink *sk, const struct audit_event *ev, const char *payload, size_t len);
void netsink_flush(struct sink *sk);
void netsink_event(struct sink *sk, uint32_t events);
void netsink_tick(struct sink *sk, uint64_t now);
/* When netsink_tick() wants to run next (monotonic ns), 0: never. */
uint64_t netsink_deadline(const struct sink *sk);
void netsink_close(struct sink *sk);
/* Queue, spool and connection state for sinks_stats(). */
void netsink_stats(const struct sink *sk, struct sink_stats *st);

#endif
