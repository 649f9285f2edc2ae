/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the two relays of a terminated connection share (docs/network.md,
 * "Per-request rules"): tls_term.c (the handshakes, HTTP/1.1) and
 * tls_h2.c (HTTP/2, when the tool and the server both chose it).
 */
#ifndef BPFBOX_NET_TERM_INTERNAL_H
#define BPFBOX_NET_TERM_INTERNAL_H

#include "egress_internal.h"

#define HEAD_OUT_MAX (PEEK_MAX + 4 * 65536)

struct term_conn {
	struct conn *c;
	const char *name;
	const uint8_t *addr;
	uint16_t port;
	/* The last request allowed, its record written when the answer starts. */
	struct eg_request req;
	bool req_open, req_answered;
	uint64_t req_out0, req_in0;		/* the connection's counts when it began */
	bool request_refused;			/* a request no rule allowed (its own record) */
	char req_injected[BPFBOX_NET_RULE_LEN]; /* the secrets put into it */
	gnutls_session_t tool, server;
	int server_r;	/* the server's handshake: < 0 failed, t->why says why */
	bool offers_h2; /* the tool's ClientHello offers HTTP/2 (ALPN "h2") */
	bool h2;	/* both sides chose it: tls_h2.c relays */
	struct http_frame f;
	uint64_t out, in;
	char injected[BPFBOX_NET_RULE_LEN]; /* the secrets' names put in, "A,B" */
	char why[BPFBOX_NET_RULE_LEN];
};

/* s's placeholder was sent for another host than t's: says so in t->why; -EACCES. */
int eg_term_leak(struct term_conn *t, const struct egress_secret *s);
/* All of p to s; -EPIPE when the peer stops reading. */
int eg_term_send(gnutls_session_t s, const void *p, size_t n);
/*
 * p (n bytes) into out at *o with each placeholder of this host's secrets
 * replaced by its value (query: only "+query" secrets, URL-encoded); the
 * secrets' names added to names and t->injected; false when out is full.
 */
bool eg_term_replace(struct term_conn *t, const uint8_t *p, size_t n, bool query, char *out,
		     size_t size, size_t *o, char *names, size_t names_size);
/*
 * tls_h2.c: the connection's HTTP/2 streams, each request judged, its
 * headers' placeholders replaced and recorded: 0, or -EACCES (a
 * placeholder for another host: t->why) or -EPROTO.
 */
int eg_h2_relay(struct term_conn *t);

#endif
