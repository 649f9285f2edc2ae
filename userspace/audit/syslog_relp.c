// SPDX-License-Identifier: GPL-2.0
/*
 * The RELP sinks (relp://, relp+tls://; docs/sinks.md) on the network
 * sinks' connection and queue: the open on each connection, one frame per
 * event, delivery on the collector's 200 answer (relp.c has the framing).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "syslog_internal.h"
#include "../lib/util.h"

/* A new connection: nothing but the open until the collector answers it. */
void netrelp_open(struct netsink *ns)
{
	relp_reset(&ns->rp);
	ns->frame_rec = NULL;
	ns->frame_off = 0;
	ns->relp_unanswered = 0;
	ns->frame_len = ns->frame_cap ? relp_open_frame(&ns->rp, ns->frame, ns->frame_cap) : 0;
}

/*
 * The next record as one RELP frame in ns->frame; false when none is ready
 * or RELP_WINDOW frames await their answer. The window bounds what a
 * collector that took frames and broke before answering sees twice.
 */
static bool relp_next_frame(struct netsink *ns)
{
	struct rec *r;
	uint32_t txnr;
	size_t need, h;

	if (!ns->rp.opened || ns->relp_unanswered >= RELP_WINDOW)
		return false;
	if (!ns->unsent)
		netq_pull(ns);
	r = ns->unsent;
	if (!r)
		return false;
	need = RELP_HEAD_MAX + r->len + 1;
	if (need > ns->frame_cap) {
		char *f = realloc(ns->frame, need);

		if (!f)
			return false;
		ns->frame = f;
		ns->frame_cap = need;
	}
	h = relp_syslog_head(&ns->rp, r->len, ns->frame, ns->frame_cap, &txnr);
	memcpy(ns->frame + h, r->data, r->len);
	ns->frame[h + r->len] = '\n';
	ns->frame_len = h + r->len + 1;
	ns->frame_off = 0;
	ns->frame_rec = r;
	r->stream_end = txnr;
	return true;
}

/* RELP: whole frames, one record each, until the socket is full or nothing is left. */
void netrelp_send(struct netsink *ns, uint64_t now)
{
	for (;;) {
		ssize_t n;

		if (ns->frame_off == ns->frame_len && !relp_next_frame(ns))
			break;
		if (ns->tls) {
			n = tlslib.record_send(ns->ses, ns->frame + ns->frame_off,
					       ns->frame_len - ns->frame_off);
		} else {
			n = send(ns->fd, ns->frame + ns->frame_off, ns->frame_len - ns->frame_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		}
		n = netconn_sent(ns, n);
		if (n == NETCONN_RETRY)
			continue;
		if (n < 0)
			return;
		ns->frame_off += n;
		if (ns->frame_off == ns->frame_len && ns->frame_rec) {
			ns->frame_rec->sent_ns = now;
			ns->relp_unanswered++;
			ns->unsent = ns->frame_rec->next;
			ns->frame_rec = NULL;
		}
	}
	netq_watch_out(ns, false);
}

/* The collector's answer to txnr: the oldest frame in flight is delivered. */
static void relp_answer(void *ctx, uint32_t txnr, int code)
{
	struct netsink *ns = ctx;
	struct rec *r = ns->inflight.head;

	if (ns->relp_bad)
		return;
	if (!r || !r->sent_ns || r->stream_end != txnr || code != 200) {
		ns->relp_bad = code ? code : -1;
		return;
	}
	free(recq_pop(&ns->inflight));
	ns->relp_unanswered--;
}

bool netrelp_received(struct netsink *ns, const char *buf, size_t n)
{
	char msg[128];
	int r;

	ns->relp_bad = 0;
	r = relp_input(&ns->rp, buf, n, relp_answer, ns);
	if (r == 1) {
		netconn_down(ns, ECONNRESET, "the collector closed the RELP session");
		return false;
	}
	if (r < 0 || ns->relp_bad) {
		snprintf(msg, sizeof(msg),
			 ns->relp_bad > 0 ? "the collector refused a frame (RELP %d)"
					  : "the collector's RELP answer does not match",
			 ns->relp_bad);
		netconn_down(ns, EPROTO, r < 0 ? "the collector does not speak RELP" : msg);
		return false;
	}
	return true;
}
