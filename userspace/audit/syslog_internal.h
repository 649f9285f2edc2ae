/* SPDX-License-Identifier: GPL-2.0 */
/* What the network sinks' two files share: syslog.c (queue, spool,
 * sending) and syslog_conn.c (resolving, connecting, TLS). */
#ifndef BPFBOX_SYSLOG_INTERNAL_H
#define BPFBOX_SYSLOG_INTERNAL_H

#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "relp.h"
#include "../lib/tls.h"
#include "sink_internal.h"
#include "spool.h"

#define BACKOFF_MIN_NS	    (200ULL * 1000000ULL)
#define BACKOFF_MAX_NS	    (5ULL * 1000000000ULL)
#define CONNECT_TIMEOUT_NS  (5ULL * 1000000000ULL)
#define ACK_POLL_NS	    (50ULL * 1000000ULL)
#define RESOLVE_POLL_NS	    (100ULL * 1000000ULL)
#define UDP_SETTLE_NS	    (500ULL * 1000000ULL) /* no ICMP error this long: a UDP collector is back */
#define USER_TIMEOUT_MS	    20000 /* unacknowledged data this long: the connection is dead */
#define CLOSE_WAIT_MS	    1000
#define IOV_BATCH	    64
#define INFLIGHT_MIN	    (8U << 20) /* bytes sent and awaiting confirmation, at least */
#define RELP_RSP_TIMEOUT_NS (30ULL * 1000000000ULL) /* no RELP answer this long: reconnect */
#define RELP_WINDOW	    128U /* RELP frames sent and not yet answered, at most (librelp's default) */

enum ns_state {
	NS_DOWN,
	NS_CONNECTING,
	NS_HANDSHAKE, /* TLS: TCP is up, the handshake is under way */
	NS_UP,
};

struct netsink {
	struct sink *sk;
	bool tcp;
	int fd;
	enum ns_state state;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool have_addr;
	/* getaddrinfo_a: a name is resolved again without blocking */
	struct gaicb gai, *gaiv[1];
	struct addrinfo hints;
	bool resolving;
	uint64_t retry_at, backoff_ns, connect_deadline;
	struct recq inflight;
	struct rec *unsent; /* first frame of inflight not wholly sent */
	size_t unsent_off;
	uint64_t stream_bytes; /* written on this connection */
	struct recq mem;
	struct spool spool;
	bool outage;	    /* reported; cleared when connected again */
	bool spool_failing; /* a spool write failed; reported */
	bool ever_up;
	bool draining; /* shutdown: nothing more is pulled into inflight */
	pid_t pid;
	char hostname[SINK_HOST_MAX];
	/* syslog+tls */
	bool tls;
	gnutls_certificate_credentials_t cred;
	gnutls_session_t ses; /* NULL without a connection */
	uint64_t wire_bytes;  /* TLS bytes written on this connection (for SIOCOUTQ) */
	/*
	 * relp:// and relp+tls:// (relp.c, syslog_relp.c): frames are bare
	 * messages; each is sent as a RELP frame built in frame (its txnr kept
	 * in stream_end) and delivered when the collector's answer names its txnr.
	 */
	bool relp;
	struct relp rp;
	char *frame;
	size_t frame_cap, frame_len, frame_off;
	struct rec *frame_rec;	      /* the record frame carries; NULL: the open */
	unsigned int relp_unanswered; /* frames wholly sent on this connection, not yet answered */
	int relp_bad;		      /* an answer that is not 200 for the oldest frame: its code */
};

/* syslog_queue.c */
void netq_flush(struct netsink *ns);
void netq_pull(struct netsink *ns);
void netq_watch_out(struct netsink *ns, bool out);
/* syslog_queue.c: memory's oldest half to the spool; what inflight holds, sent. */
void netq_spill(struct netsink *ns);
void netq_send(struct netsink *ns);

/* syslog_relp.c */
void netrelp_open(struct netsink *ns);
void netrelp_send(struct netsink *ns, uint64_t now);
/* Bytes from a RELP collector; false when the connection went down. */
bool netrelp_received(struct netsink *ns, const char *buf, size_t n);

/* syslog_conn.c */
void netconn_close_fd(struct netsink *ns);
void netconn_down(struct netsink *ns, int err, const char *what);
/*
 * What one send on the connection returned (TLS: bytes or a GnuTLS code;
 * else bytes or -1 with errno): the bytes sent, NETCONN_RETRY (interrupted:
 * send again) or NETCONN_STOP (would block: POLLOUT watched; failed: the
 * connection is down).
 */
#define NETCONN_RETRY (-2)
#define NETCONN_STOP  (-1)
ssize_t netconn_sent(struct netsink *ns, ssize_t n);
void netconn_recovered(struct netsink *ns);
void netconn_up(struct netsink *ns);
void netconn_tls_handshake(struct netsink *ns);
int netconn_tls_credentials(struct netsink *ns, char *err, size_t size);
void netconn_resolve_poll(struct netsink *ns);
void netconn_connect(struct netsink *ns);
int netconn_resolve_now(struct netsink *ns);

#endif
