// SPDX-License-Identifier: GPL-2.0
/*
 * The network sinks (docs/sinks.md): syslog over TCP, TLS (RFC 5425, through
 * GnuTLS, the collector's certificate verified) or UDP to one collector,
 * never blocking the caller.
 *
 * Every event is framed once, when it arrives, and then moves through
 *
 *   inflight (sent, or being sent)  <-  spool (disk)  <-  memory
 *
 * oldest on the left. New frames go to memory; past queue= bytes, the
 * oldest half of memory moves to the spool's end; the spool drops its
 * oldest segment past spool_max= (counted, and a loss event follows). While
 * the collector is up, frames move to inflight (spool first) and are sent.
 * A sent frame counts as delivered once TCP acknowledged its last byte
 * (SIOCOUTQ) and confirm= passed without the connection failing; when the
 * connection fails, every frame not yet delivered is sent again after the
 * reconnect. So delivery is at least once, in order; (session, seq) lets a
 * receiver drop the duplicates. RELP (relp:// and relp+tls://, relp.c,
 * syslog_relp.c) replaces the TCP acknowledgement and confirm= with the
 * collector's own answer to each frame.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "syslog.h"
#include "syslog_internal.h"
#include "../lib/util.h"

/* --- message format ----------------------------------------------------- */

int syslog_severity(enum ev_kind kind, bool deny)
{
	if (kind == EV_LOSS || kind == EV_SINK_ERROR)
		return SYSLOG_SEV_WARNING;
	return deny ? SYSLOG_SEV_NOTICE : SYSLOG_SEV_INFO;
}

int syslog_header(char *buf, size_t size, int facility, int severity, int64_t time_ns,
		  const char *hostname, const char *app, pid_t pid, const char *msgid)
{
	char ts[RFC3339_MAX];
	int n;

	/* RFC 5424 allows 6 fraction digits: 2026-01-02T03:04:05.123456Z */
	rfc3339(ts, sizeof(ts), time_ns ? time_ns : real_now_ns(), 6);
	n = snprintf(buf, size, "<%d>1 %s %s %s %d %.32s - ", facility * 8 + severity, ts, hostname,
		     app, (int)pid, msgid && msgid[0] ? msgid : "-");
	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

/* --- the sink interface ------------------------------------------------- */

int netsink_open(struct sink *sk, char *err, size_t size)
{
	struct netsink *ns = calloc(1, sizeof(*ns));
	const struct sink_config *c = &sk->cfg;
	char why[PATH_MAX + 128];
	int r;

	if (!ns) {
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	sk->net = ns;
	ns->sk = sk;
	ns->fd = -1;
	ns->tls = c->kind == SINK_SYSLOG_TLS;
	ns->tcp = c->kind == SINK_SYSLOG_TCP || ns->tls;
	ns->relp = c->relp;
	if (ns->relp) {
		ns->frame_cap = 4096;
		ns->frame = malloc(ns->frame_cap);
		if (!ns->frame) {
			snprintf(err, size, "out of memory");
			return -ENOMEM;
		}
	}
	ns->pid = getpid();
	snprintf(ns->hostname, sizeof(ns->hostname), "%s",
		 c->hostname[0] ? c->hostname : sk->set->hostname);
	for (char *p = ns->hostname; *p; p++)
		if (*p < 33 || *p > 126)
			*p = '-';
	/* Unreadable CA or client certificate: a setup error, nothing starts. */
	ns->spool.dir_fd = -1;
	if (ns->tls && (r = netconn_tls_credentials(ns, err, size)) < 0)
		return r;
	r = spool_open(&ns->spool, c->spool_dir, c->spool_bytes, why, sizeof(why));
	if (r < 0) {
		snprintf(err, size, "sink %s: spool=%s: %s", c->name, c->spool_dir, why);
		ns->spool.dir_fd = -1;
		return r;
	}
	if (ns->spool.torn_bytes)
		sink_log(sk, "%llu bytes of a record torn at a crash were cut off the spool %s",
			 (unsigned long long)ns->spool.torn_bytes, c->spool_dir);
	if (ns->spool.records)
		sink_log(sk, "%llu events from the spool %s are sent first",
			 (unsigned long long)ns->spool.records, c->spool_dir);
	if (netconn_resolve_now(ns) < 0)
		netconn_down(ns, EHOSTUNREACH, "cannot resolve the host name");
	else
		netconn_connect(ns);
	return 0;
}

void netsink_push(struct sink *sk, const struct audit_event *ev, const char *payload, size_t len)
{
	struct netsink *ns = sk->net;
	char hdr[512], prefix[16];
	int hlen, plen = 0;
	size_t total;
	struct rec *r;

	hlen = syslog_header(hdr, sizeof(hdr), sk->cfg.facility,
			     syslog_severity(ev->kind, ev->decision == AUDIT_DECISION_DENY),
			     ev->time_ns, ns->hostname, sk->cfg.app, ns->pid,
			     ev_kind_name(ev->kind));
	if (hlen < 0) {
		sink_lost(sk, 1, "sink message header too long");
		return;
	}
	total = hlen + len;
	if (ns->tcp && !ns->relp)
		plen = snprintf(prefix, sizeof(prefix), "%zu ", total);
	else if (total > SYSLOG_UDP_MAX) {
		sink_lost(sk, 1, "sink message too large for UDP");
		return;
	}
	if (plen + total > SPOOL_RECORD_MAX) {
		sink_lost(sk, 1, "sink message too large");
		return;
	}
	r = malloc(sizeof(*r) + plen + total);
	if (!r) {
		sink_lost(sk, 1, "sink out of memory");
		return;
	}
	memset(r, 0, sizeof(*r));
	memcpy(r->data, prefix, plen);
	memcpy(r->data + plen, hdr, hlen);
	memcpy(r->data + plen + hlen, payload, len);
	r->len = plen + total;
	recq_push(&ns->mem, r);
	if (ns->mem.bytes > sk->cfg.queue_bytes)
		netq_spill(ns);
}

void netsink_flush(struct sink *sk)
{
	netq_flush(sk->net);
}

void netsink_event(struct sink *sk, uint32_t events)
{
	struct netsink *ns = sk->net;
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (ns->fd < 0)
		return;
	if (ns->state == NS_HANDSHAKE) {
		netconn_tls_handshake(ns);
		if (ns->state == NS_UP)
			netq_flush(ns);
		return;
	}
	if (ns->state == NS_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(ns->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr)
			netconn_down(ns, soerr, "cannot connect");
		else
			netconn_up(ns);
		return;
	}
	if (events & EPOLLERR) {
		if (getsockopt(ns->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr) {
			netconn_down(ns, soerr, "the connection failed");
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
		/* A syslog collector says nothing (what it sends is dropped); RELP answers. */
		char buf[512];

		for (;;) {
			ssize_t n = ns->tls ? tlslib.record_recv(ns->ses, buf, sizeof(buf))
					    : recv(ns->fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (ns->tls && n < 0) {
				char msg[256];

				if (n == GNUTLS_E_AGAIN)
					break;
				if (n == GNUTLS_E_INTERRUPTED || !tlslib.error_is_fatal(n))
					continue;
				snprintf(msg, sizeof(msg), "the TLS connection failed: %s",
					 tlslib.strerror(n));
				netconn_down(ns, EPROTO, msg);
				return;
			}

			if (n > 0 && ns->relp && !netrelp_received(ns, buf, n))
				return;
			if (n > 0)
				continue;
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n == 0 && !ns->tcp)
				break;
			netconn_down(ns, n < 0 ? errno : ECONNRESET,
				     n < 0 ? "the connection failed"
					   : "the collector closed the connection");
			return;
		}
	}
	netq_flush(ns);
}

void netsink_tick(struct sink *sk, uint64_t now)
{
	struct netsink *ns = sk->net;

	if (ns->resolving)
		netconn_resolve_poll(ns);
	switch (ns->state) {
	case NS_DOWN:
		if (now >= ns->retry_at && !ns->resolving)
			netconn_connect(ns);
		break;
	case NS_CONNECTING:
		if (now >= ns->connect_deadline)
			netconn_down(ns, ETIMEDOUT, "cannot connect");
		break;
	case NS_HANDSHAKE:
		if (now >= ns->connect_deadline)
			netconn_down(ns, ETIMEDOUT, "the TLS handshake did not finish");
		break;
	case NS_UP:
		netq_flush(ns);
		break;
	}
}

uint64_t netsink_deadline(const struct sink *sk)
{
	const struct netsink *ns = sk->net;
	uint64_t now = now_ns(), d;
	const struct rec *head = ns->inflight.head;

	if (ns->resolving)
		return now + RESOLVE_POLL_NS;
	switch (ns->state) {
	case NS_DOWN:
		return ns->retry_at;
	case NS_CONNECTING:
	case NS_HANDSHAKE:
		return ns->connect_deadline;
	case NS_UP:
		if (!head || head == ns->unsent || !head->sent_ns)
			return 0;
		if (ns->relp)
			return head->sent_ns + RELP_RSP_TIMEOUT_NS;
		d = head->sent_ns + sk->cfg.confirm_ns;
		/* Due but not yet acknowledged: look again shortly. */
		return d > now ? d : now + ACK_POLL_NS;
	}
	return 0;
}

/* Shutdown: a last chance to deliver what is in flight, then the spool. */
static void ns_drain(struct netsink *ns)
{
	uint64_t deadline = now_ns() + CLOSE_WAIT_MS * 1000000ULL;

	/* Only inflight: memory and spool wait for the next start anyway. */
	ns->draining = true;
	/* RELP: delivered is what the collector answered. */
	while (ns->relp && ns->state == NS_UP && ns->inflight.head && now_ns() < deadline) {
		struct pollfd p = {.fd = ns->fd, .events = POLLIN};

		netq_send(ns);
		if (ns->state != NS_UP)
			break;
		if (ns->frame_off != ns->frame_len)
			p.events |= POLLOUT;
		if (poll(&p, 1, 20) > 0)
			netsink_event(ns->sk, p.revents & POLLIN ? EPOLLIN : 0);
	}
	while (!ns->relp && ns->state == NS_UP && now_ns() < deadline) {
		struct pollfd p = {.fd = ns->fd, .events = POLLOUT};
		int outq = 0;

		if (ns->unsent)
			netq_send(ns);
		if (ns->state != NS_UP)
			break;
		if (!ns->unsent && (!ns->tcp || (ioctl(ns->fd, SIOCOUTQ, &outq) == 0 && !outq))) {
			/* Acknowledged at shutdown: delivered, no confirm wait. */
			while (ns->inflight.head)
				free(recq_pop(&ns->inflight));
			ns->unsent = NULL;
			break;
		}
		poll(&p, 1, 20);
	}
}

void netsink_close(struct sink *sk)
{
	struct netsink *ns = sk->net;
	uint64_t dropped = 0, kept;
	size_t n;

	if (!ns)
		return;
	if (ns->spool.dir_fd >= 0) {
		ns_drain(ns);
		n = ns->inflight.count;
		if (n) {
			const void **data = calloc(n, sizeof(*data));
			size_t *len = calloc(n, sizeof(*len));
			size_t i = 0;

			for (struct rec *r = ns->inflight.head; r && data && len;
			     r = r->next, i++) {
				data[i] = r->data;
				len[i] = r->len;
			}
			if (!data || !len || spool_prepend(&ns->spool, data, len, n) < 0)
				sink_log(sk,
					 "%zu events sent but not confirmed could not be kept in "
					 "the spool",
					 n);
			free(data);
			free(len);
		}
		for (struct rec *r = ns->mem.head; r; r = r->next)
			if (spool_append(&ns->spool, r->data, r->len, &dropped) < 0)
				dropped++;
		kept = ns->spool.records;
		if (dropped || sk->lost_pending)
			sink_log(sk, "%llu events lost at shutdown (spool full or not writable)",
				 (unsigned long long)(dropped + sk->lost_pending));
		if (kept)
			sink_log(sk, "%llu events kept in the spool %s for the next start",
				 (unsigned long long)kept, ns->spool.dir);
		spool_close(&ns->spool);
	}
	netconn_close_fd(ns);
	recq_free(&ns->inflight);
	recq_free(&ns->mem);
	if (ns->resolving && gai_cancel(&ns->gai) != EAI_CANCELED) {
		const struct gaicb *const list[1] = {&ns->gai};
		struct timespec ts = {2, 0};

		gai_suspend(list, 1, &ts);
		if (gai_error(&ns->gai) == EAI_INPROGRESS) {
			/* The resolver thread still writes into ns: it is left to it. */
			sk->net = NULL;
			return;
		}
	}
	if (ns->gai.ar_result)
		freeaddrinfo(ns->gai.ar_result);
	if (ns->cred)
		tlslib.certificate_free_credentials(ns->cred);
	free(ns->frame);
	free(ns);
	sk->net = NULL;
}

void netsink_stats(const struct sink *sk, struct sink_stats *st)
{
	const struct netsink *ns = sk->net;

	if (!ns)
		return;
	st->queued = ns->inflight.count + ns->mem.count;
	st->queued_bytes = ns->inflight.bytes + ns->mem.bytes;
	st->spool_bytes = ns->spool.bytes;
	st->spool_records = ns->spool.records;
	st->up = ns->state == NS_UP && !ns->outage;
}
