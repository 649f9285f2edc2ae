// SPDX-License-Identifier: GPL-2.0
/*
 * A network sink's queue (syslog.c has the whole path): frames spilled
 * from memory to the spool, pulled into inflight, sent, and confirmed
 * delivered once TCP acknowledged them and confirm= passed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "syslog.h"
#include "syslog_internal.h"
#include "../lib/util.h"

/* Memory over its bound: its oldest half goes to the end of the spool. */
void netq_spill(struct netsink *ns)
{
	uint64_t dropped = 0, failed = 0;
	struct rec *r;
	int err = 0;

	while (ns->mem.bytes > ns->sk->cfg.queue_bytes / 2 && (r = recq_pop(&ns->mem))) {
		int e = spool_append(&ns->spool, r->data, r->len, &dropped);

		if (e < 0) {
			err = -e;
			failed++;
		}
		free(r);
	}
	if (failed) {
		sink_lost(ns->sk, failed, "sink spool write failed");
		if (!ns->spool_failing) {
			char msg[PATH_MAX + 128];

			snprintf(msg, sizeof(msg),
				 "cannot write the spool %s (%s); events that do not "
				 "fit in memory are dropped and counted",
				 ns->spool.dir, strerror(err));
			sink_error_event(ns->sk, err, msg);
		}
		ns->spool_failing = true;
	} else if (ns->spool_failing) {
		sink_log(ns->sk, "the spool %s is written again", ns->spool.dir);
		ns->spool_failing = false;
	}
	if (dropped)
		sink_lost(ns->sk, dropped, "sink spool full");
}

static void inflight_add(struct netsink *ns, struct rec *r)
{
	recq_push(&ns->inflight, r);
	if (!ns->unsent) {
		ns->unsent = r;
		ns->unsent_off = 0;
	}
}

static uint64_t inflight_max(const struct netsink *ns)
{
	return ns->sk->cfg.queue_bytes > INFLIGHT_MIN ? ns->sk->cfg.queue_bytes : INFLIGHT_MIN;
}

/* Fills inflight up to its bound: the spool first, then memory. */
void netq_pull(struct netsink *ns)
{
	while (!ns->draining && ns->inflight.bytes < inflight_max(ns)) {
		uint64_t dropped = 0;
		const char *data;
		size_t len;
		struct rec *r;
		int e;

		if (!spool_empty(&ns->spool)) {
			e = spool_read(&ns->spool, &data, &len, &dropped);
			if (dropped)
				sink_lost(ns->sk, dropped, "sink spool unreadable");
			if (e < 0) {
				sink_log(ns->sk,
					 "cannot read the spool %s: %s; its segment is skipped",
					 ns->spool.dir, strerror(-e));
				continue;
			}
			if (e > 0) {
				r = rec_new(data, len);
				if (!r) {
					sink_lost(ns->sk, 1, "sink out of memory");
					continue;
				}
				inflight_add(ns, r);
				continue;
			}
		}
		r = recq_pop(&ns->mem);
		if (!r)
			break;
		inflight_add(ns, r);
	}
}

/* Frames acknowledged by the peer's TCP and older than confirm= are done. */
static void ns_confirm(struct netsink *ns, uint64_t now)
{
	uint64_t acked = ns->tls ? ns->wire_bytes : ns->stream_bytes;
	int outq = 0;

	if (ns->state != NS_UP)
		return;
	/* RELP: the collector's answers confirm (netrelp_received); a silent one is left. */
	if (ns->relp) {
		struct rec *r = ns->inflight.head;

		if (r && r->sent_ns && now >= r->sent_ns + RELP_RSP_TIMEOUT_NS)
			netconn_down(ns, ETIMEDOUT, "the collector did not answer a RELP frame");
		return;
	}
	if (ns->tcp && ioctl(ns->fd, SIOCOUTQ, &outq) == 0 && outq > 0)
		acked = (uint64_t)outq <= acked ? acked - outq : 0;
	while (ns->inflight.head && ns->inflight.head != ns->unsent) {
		struct rec *r = ns->inflight.head;

		if (!r->sent_ns || r->stream_end > acked ||
		    now < r->sent_ns + ns->sk->cfg.confirm_ns)
			break;
		if (!ns->tcp && (ns->outage || !ns->ever_up) && now >= r->sent_ns + UDP_SETTLE_NS)
			netconn_recovered(ns);
		free(recq_pop(&ns->inflight));
	}
}

void netq_watch_out(struct netsink *ns, bool out)
{
	sink_watch(ns->sk, ns->fd, EPOLLIN | (ns->tcp ? EPOLLRDHUP : 0) | (out ? EPOLLOUT : 0),
		   false);
}

/* Marks n more bytes from the unsent position as written. */
static void advance(struct netsink *ns, size_t n, uint64_t now)
{
	while (n && ns->unsent) {
		size_t left = ns->unsent->len - ns->unsent_off;
		size_t take = n < left ? n : left;

		ns->unsent_off += take;
		ns->stream_bytes += take;
		n -= take;
		if (ns->unsent_off == ns->unsent->len) {
			ns->unsent->sent_ns = now;
			/* TLS: GnuTLS returned after writing the whole record to the wire. */
			ns->unsent->stream_end = ns->tls ? ns->wire_bytes : ns->stream_bytes;
			ns->unsent = ns->unsent->next;
			ns->unsent_off = 0;
		}
	}
}

void netq_send(struct netsink *ns)
{
	uint64_t now = now_ns();

	if (ns->relp) {
		netrelp_send(ns, now);
		return;
	}

	for (;;) {
		ssize_t n;

		if (!ns->unsent) {
			netq_pull(ns);
			if (!ns->unsent)
				break;
		}
		if (ns->tls) {
			/* After GNUTLS_E_AGAIN, the same data again (it is: unsent stays). */
			n = tlslib.record_send(ns->ses, ns->unsent->data + ns->unsent_off,
					       ns->unsent->len - ns->unsent_off);
		} else if (ns->tcp) {
			struct iovec iov[IOV_BATCH];
			struct msghdr mh = {.msg_iov = iov};
			struct rec *r = ns->unsent;
			int cnt = 0;

			for (; r && cnt < IOV_BATCH; r = r->next, cnt++) {
				size_t off = cnt ? 0 : ns->unsent_off;

				iov[cnt].iov_base = r->data + off;
				iov[cnt].iov_len = r->len - off;
			}
			mh.msg_iovlen = cnt;
			n = sendmsg(ns->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		} else {
			n = send(ns->fd, ns->unsent->data, ns->unsent->len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno == EMSGSIZE) {
				/* Too large for a datagram: dropped and counted, never resent. */
				sink_lost(ns->sk, 1, "sink message too large for UDP");
				n = ns->unsent->len;
			}
		}
		n = netconn_sent(ns, n);
		if (n == NETCONN_RETRY)
			continue;
		if (n < 0)
			return;
		advance(ns, n, now);
	}
	netq_watch_out(ns, false);
}

void netq_flush(struct netsink *ns)
{
	uint64_t now = now_ns();

	if (ns->state != NS_UP)
		return;
	ns_confirm(ns, now);
	netq_send(ns);
	if (ns->state == NS_UP)
		ns_confirm(ns, now);
}
