/* SPDX-License-Identifier: GPL-2.0 */
/* What server*.c, ops*.c and events.c share inside the daemon. */
#ifndef BPFBOX_DAEMON_INTERNAL_H
#define BPFBOX_DAEMON_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"
#include "server.h"
#include "table.h"
#include "config.h"
#include "../audit/encode.h"
#include "../audit/lifecycle.h"
#include "../lib/cgroup.h"
#include "../lib/jsonw.h"

struct agent;
struct json_object;
struct sinks;
struct denials;

#define DAEMON_MAX_CONNS	1024
#define DAEMON_ROOT_CONNS	64	   /* of those, kept for root: others get "busy" first */
#define DAEMON_CONNS_PER_UID	256	   /* default --max-conns-per-uid */
#define DAEMON_SESSIONS_PER_UID 256	   /* default --max-sessions-per-uid */
#define DAEMON_ROOT_SESSIONS	256	   /* session slots kept for root */
#define DAEMON_COMMAND_MAX	8192	   /* bytes of a session's command kept (strings) */
#define DAEMON_LIST_PAGE	(1U << 20) /* a list reply stops past this; next_offset */
#define DAEMON_MAX_LINGERING	32	   /* refused peers beyond this are closed at once */
#define DAEMON_SUB_BUF_MAX	(1U << 20) /* a subscriber's queue before records drop */
#define DAEMON_REPLY_BUF_MAX	(2 * DAEMON_MAX_REPLY) /* a reader that never reads is closed */

/* Event kinds (subscription filters: bit = 1 << kind) are enum ev_kind of audit/event.h. */

struct peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int pidfd;		  /* SO_PEERPIDFD, else pidfd_open at accept; -1: none */
	unsigned long long start; /* start time of pid at accept, when pidfd < 0 */
};

struct conn {
	int fd;
	uint64_t serial;
	struct peer peer;
	char *in;      /* DAEMON_MAX_REQUEST bytes */
	int passed_fd; /* the last fd the peer sent (SCM_RIGHTS), -1: none; an op takes it */
	size_t in_len;
	struct buf out;
	bool closing;	/* close once out is sent */
	bool dead;	/* to be closed by the main loop */
	int refused;	/* -errno: the peer may not talk to us */
	bool lingering; /* refused, kept open until it reads the reason */
	uint64_t created_ns;
	bool epollout;	      /* EPOLLOUT is registered */
	bool subscribed;      /* the connection now only receives events */
	char sub_session[33]; /* "" for every session */
	uint32_t sub_kinds;   /* bit mask of enum ev_kind; 0: all */
	bool sub_all_users;   /* root: every session; else only the peer's uid */
	uint64_t sub_lost;    /* events dropped while the queue was full */
	struct conn *next;
};

struct daemon {
	const struct daemon_opts *o;
	struct agent *agent;
	int epfd, listen_fd, sig_fd, timer_fd, lock_fd;
	int net_ask_fd[2];	   /* --net-ask questions of the proxies' threads (ops_ask_net.c) */
	gid_t gid;		   /* the group allowed besides root */
	char parent[PATH_MAX];	   /* cgroup parent, absolute */
	char parent_rel[PATH_MAX]; /* the same inside the cgroup2 mount, as /proc/PID/cgroup says */
	struct table table;
	struct conn *conns;
	size_t nconns;
	size_t nlingering; /* refused connections kept open */
	uint64_t next_serial;
	struct audit_clock clock;
	struct jsonw w;		      /* the event being encoded */
	struct jsonw rw;	      /* the reply being built */
	struct json_tokener *tok;     /* the requests' parser (ops.c) */
	struct sinks *sinks;	      /* --audit, --sink, --config (docs/sinks.md) */
	uint64_t unknown_records;     /* records of no known session, dropped */
	struct metrics *metrics;      /* --metrics; NULL: none (metrics.h) */
	struct sink_config *sink_cfg; /* the sinks open now (config.c) */
	size_t nsink_cfg;
	struct ceilings ceilings;	/* of --config; reloaded */
	struct json_object *policies;	/* --config's "policies", for adopt; reloaded */
	uint64_t busy_refused;		/* connections answered "busy" */
	uint64_t busy_logged_ns;	/* when the last "busy" line was logged */
	struct cgroup_pool pool;	/* session cgroups made ahead (ops_register.c) */
	struct session_limits lim_plan; /* how limits hold here, planned each tick */
	bool lim_planned;
	uint64_t ring_quiet_until; /* ns: the ring is read again then (server_loop.c); 0: now */
	bool ring_polled;	   /* its epoll registration failed: read every loop */
	unsigned int asks_open;	   /* command rules' asks waiting, all sessions (ops_ask.c) */
	bool stop;
};

/* server.c: one line on stderr, "bpfbox daemon: ..." */
void dlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* events.c */
/* Opens the sinks of the options; -errno, printed. */
int ev_sinks_open(struct daemon *d);
/* Opens the sinks of v into *out; -errno with a line in err. */
int ev_sinks_open_list(struct daemon *d, const struct sink_config *v, size_t n, char *err,
		       size_t size, struct sinks **out);
void ev_emit(struct daemon *d, const struct dsession *s, enum ev_kind kind, const char *line,
	     size_t len);
/* The same with what the sinks file an event by (a record: its decision and time). */
void ev_emit_event(struct daemon *d, const struct dsession *s, const struct audit_event *ev);
int ev_on_record(void *ctx, void *data, size_t size);
void ev_flush(struct daemon *d);
/* A subscriber's queue emptied: tells it what it missed, if anything. */
void ev_sub_drained(struct daemon *d, struct conn *c);
void ev_session_start(struct daemon *d, struct dsession *s, struct json_object *req);
void ev_session_end(struct daemon *d, struct dsession *s, uint64_t seq, uint64_t lost);
/* Queues a reply or an event line; closes the connection past its cap. */
void conn_queue(struct daemon *d, struct conn *c, const char *data, size_t len);
void conn_flush(struct daemon *d, struct conn *c);

/* server_conn.c: 0 while the peer that connected still runs, else -ESRCH. */
int peer_alive(const struct peer *p);
/* server_conn.c: a new connection, checked and limited; its requests; its end. */
void conn_accept(struct daemon *d);
void conn_read(struct daemon *d, struct conn *c);
void conn_free(struct daemon *d, struct conn *c);
/* server_conn.c: frees the connections marked dead. */
void reap_conns(struct daemon *d);

/* server_loop.c: the epoll set (socket, signals, tick, ring, sinks); the loop until stop. */
int server_loop_setup(struct daemon *d);
void server_loop(struct daemon *d);

/* events.c: a new session's record rate limit, as the options say. */
void ev_flood_init(struct daemon *d, struct dsession *s);
/* Says what a session's rate limit suppressed (force: now, else once a second). */
void ev_flood_say(struct daemon *d, struct dsession *s, bool force);

/* ops.c */
void ops_handle(struct daemon *d, struct conn *c, const char *line, size_t len);
/*
 * Kills and removes the session's cgroup, emits its end, forgets it;
 * *denials (may be NULL): what its records denied, for the client's summary.
 */
int ops_end_session(struct daemon *d, struct dsession *s, const char *reason,
		    struct denials *denials);
void ops_tick(struct daemon *d);
/*
 * ops_ask.c: the asks of every session whose deadline passed denied (timeout), at
 * once rather than on the next tick; milliseconds until the nearest
 * deadline left, rounded up, -1 with none open (the loop's poll timeout).
 */
int ops_ask_due(struct daemon *d);
void ops_conn_gone(struct daemon *d, struct conn *c);
int ops_readopt(struct daemon *d);
/*
 * ops_register.c: what the daemon prepares ahead of registers (at start and
 * every tick): the cgroups made ahead (old ones renewed on a tick) and the
 * plan of how limits hold on this host.
 */
void ops_ahead(struct daemon *d, bool tick);

#endif
