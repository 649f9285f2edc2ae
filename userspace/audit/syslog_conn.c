// SPDX-License-Identifier: GPL-2.0
/*
 * The network sinks' connection (docs/sinks.md): the collector's name
 * resolved without blocking (getaddrinfo_a), a non-blocking connect with
 * backoff, TLS through GnuTLS with the collector's certificate verified,
 * and the outage and recovery said once each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "syslog_internal.h"
#include "../lib/util.h"

/* --- connection ---------------------------------------------------------- */

void netconn_close_fd(struct netsink *ns)
{
	if (ns->ses) {
		tlslib.deinit(ns->ses);
		ns->ses = NULL;
	}
	if (ns->fd < 0)
		return;
	sink_watch(ns->sk, ns->fd, 0, false);
	close(ns->fd);
	ns->fd = -1;
}

ssize_t netconn_sent(struct netsink *ns, ssize_t n)
{
	char msg[256];

	if (n >= 0)
		return n;
	if (ns->tls) {
		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
			netq_watch_out(ns, true);
			return NETCONN_STOP;
		}
		snprintf(msg, sizeof(msg), "sending failed: %s", tlslib.strerror((int)n));
		netconn_down(ns, EPROTO, msg);
		return NETCONN_STOP;
	}
	if (errno == EINTR)
		return NETCONN_RETRY;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		netq_watch_out(ns, true);
		return NETCONN_STOP;
	}
	netconn_down(ns, errno, "sending failed");
	return NETCONN_STOP;
}

/* The connection is gone: what was not delivered goes again later. */
void netconn_down(struct netsink *ns, int err, const char *what)
{
	uint64_t now = now_ns();
	char msg[PATH_MAX + SINK_NAME_MAX + 512];

	netconn_close_fd(ns);
	ns->state = NS_DOWN;
	ns->sk->st_retries++;
	for (struct rec *r = ns->inflight.head; r; r = r->next)
		r->sent_ns = 0;
	ns->unsent = ns->inflight.head;
	ns->unsent_off = 0;
	ns->stream_bytes = 0;
	ns->wire_bytes = 0;
	ns->frame_len = ns->frame_off = 0;
	ns->frame_rec = NULL;
	ns->backoff_ns = ns->backoff_ns ? ns->backoff_ns * 2 : BACKOFF_MIN_NS;
	if (ns->backoff_ns > BACKOFF_MAX_NS)
		ns->backoff_ns = BACKOFF_MAX_NS;
	ns->retry_at = now + ns->backoff_ns;
	if (!ns->outage) {
		ns->outage = true;
		snprintf(msg, sizeof(msg),
			 "%s (%s); events are kept (spool %s) and sent when the "
			 "collector is back",
			 what, strerror(err), ns->sk->cfg.spool_dir);
		sink_error_event(ns->sk, err, msg);
	}
}

/*
 * The collector takes events again: a TCP connection is up, or a UDP
 * datagram was confirmed (a UDP "connect" proves nothing: a closed port
 * answers the first datagram with an ICMP error).
 */
void netconn_recovered(struct netsink *ns)
{
	ns->backoff_ns = 0;
	if (ns->outage)
		sink_log(ns->sk, "%s again; %zu events in memory and %llu in the spool go first",
			 ns->tcp ? "connected" : "sending", ns->inflight.count + ns->mem.count,
			 (unsigned long long)ns->spool.records);
	else if (!ns->ever_up)
		sink_log(ns->sk, "%s", ns->tcp ? "connected" : "sending");
	ns->outage = false;
	ns->ever_up = true;
}

static void ns_tls_start(struct netsink *ns);

void netconn_up(struct netsink *ns)
{
	/* TLS: TCP is up; the collector has to prove who it is first. */
	if (ns->tls && ns->state != NS_HANDSHAKE) {
		ns_tls_start(ns);
		return;
	}
	ns->state = NS_UP;
	ns->stream_bytes = 0;
	if (ns->relp)
		netrelp_open(ns);
	if (ns->tcp)
		netconn_recovered(ns);
	sink_watch(ns->sk, ns->fd, EPOLLIN | (ns->tcp ? EPOLLRDHUP : 0), false);
	netq_flush(ns);
}

/* --- TLS (RFC 5425) ------------------------------------------------------ */

/* GnuTLS writes through here: the bytes on the wire, for the ack check. */
static ssize_t tls_push(gnutls_transport_ptr_t p, const void *data, size_t len)
{
	struct netsink *ns = p;
	ssize_t n = send(ns->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n > 0)
		ns->wire_bytes += n;
	else if (n < 0)
		tlslib.transport_set_errno(ns->ses, errno);
	return n;
}

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *data, size_t len)
{
	struct netsink *ns = p;
	ssize_t n = recv(ns->fd, data, len, MSG_DONTWAIT);

	if (n < 0)
		tlslib.transport_set_errno(ns->ses, errno);
	return n;
}

static const char *tls_peer_name(const struct netsink *ns)
{
	const struct sink_config *c = &ns->sk->cfg;

	return c->tls_name[0] ? c->tls_name : c->host;
}

void netconn_tls_handshake(struct netsink *ns)
{
	char msg[1024];
	int r = tlslib.handshake(ns->ses);

	if (r == GNUTLS_E_SUCCESS) {
		netconn_up(ns);
		return;
	}
	if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED || !tlslib.error_is_fatal(r)) {
		sink_watch(ns->sk, ns->fd,
			   tlslib.record_get_direction(ns->ses) ? EPOLLOUT : EPOLLIN, false);
		return;
	}
	if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t out = {0};
		unsigned int status = tlslib.session_get_verify_cert_status(ns->ses);

		if (tlslib.certificate_verification_status_print(
			    status, tlslib.certificate_type_get(ns->ses), &out, 0) < 0)
			out.data = NULL;
		snprintf(msg, sizeof(msg), "the collector's certificate is refused for %s: %s",
			 tls_peer_name(ns), out.data ? (char *)out.data : "not trusted");
		for (size_t n = strlen(msg); n && msg[n - 1] == ' '; n--)
			msg[n - 1] = 0;
		(*tlslib.free)(out.data);
		netconn_down(ns, EKEYREJECTED, msg);
		return;
	}
	snprintf(msg, sizeof(msg), "the TLS handshake failed: %s", tlslib.strerror(r));
	netconn_down(ns, EPROTO, msg);
}

/* TCP is connected: a TLS session that verifies the collector's certificate. */
static void ns_tls_start(struct netsink *ns)
{
	const char *name = tls_peer_name(ns);
	struct in6_addr a6;
	int r;

	r = tlslib.init(&ns->ses, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
	if (r < 0) {
		ns->ses = NULL;
		netconn_down(ns, ENOMEM, "cannot start TLS");
		return;
	}
	if ((r = tlslib.set_default_priority(ns->ses)) < 0 ||
	    (r = tlslib.credentials_set(ns->ses, GNUTLS_CRD_CERTIFICATE, ns->cred)) < 0) {
		netconn_down(ns, EPROTO, "cannot set up TLS");
		return;
	}
	/* SNI for a name; the certificate must carry the name (or the IP address). */
	if (inet_pton(AF_INET, name, &a6) != 1 && inet_pton(AF_INET6, name, &a6) != 1)
		tlslib.server_name_set(ns->ses, GNUTLS_NAME_DNS, name, strlen(name));
	tlslib.session_set_verify_cert(ns->ses, name, 0);
	tlslib.transport_set_ptr(ns->ses, ns);
	tlslib.transport_set_push_function(ns->ses, tls_push);
	tlslib.transport_set_pull_function(ns->ses, tls_pull);
	ns->wire_bytes = 0;
	ns->state = NS_HANDSHAKE;
	ns->connect_deadline = now_ns() + CONNECT_TIMEOUT_NS;
	netconn_tls_handshake(ns);
}

/* The CA, and our certificate if any: read once, at open. 0, or -errno with err. */
int netconn_tls_credentials(struct netsink *ns, char *err, size_t size)
{
	const struct sink_config *c = &ns->sk->cfg;
	char why[256];
	int r = tls_lib_open(why, sizeof(why));

	if (r < 0) {
		snprintf(err, size, "sink %s: %s", c->name, why);
		return r;
	}
	r = tlslib.certificate_allocate_credentials(&ns->cred);
	if (r < 0) {
		snprintf(err, size, "sink %s: cannot set up TLS: %s", c->name, tlslib.strerror(r));
		return -ENOMEM;
	}
	if (c->tls_ca[0])
		r = tlslib.certificate_set_x509_trust_file(ns->cred, c->tls_ca,
							   GNUTLS_X509_FMT_PEM);
	else
		r = tlslib.certificate_set_x509_system_trust(ns->cred);
	if (r <= 0) {
		snprintf(err, size, "sink %s: %s%s: %s", c->name, c->tls_ca[0] ? "ca=" : "",
			 c->tls_ca[0] ? c->tls_ca : "the system's trust store",
			 r < 0 ? tlslib.strerror(r) : "no CA certificate in it");
		return -EINVAL;
	}
	if (c->tls_cert[0]) {
		r = tlslib.certificate_set_x509_key_file(ns->cred, c->tls_cert, c->tls_key,
							 GNUTLS_X509_FMT_PEM);
		if (r < 0) {
			snprintf(err, size, "sink %s: cert=%s key=%s: %s", c->name, c->tls_cert,
				 c->tls_key, tlslib.strerror(r));
			return -EINVAL;
		}
	}
	return 0;
}

static void ns_resolve_start(struct netsink *ns)
{
	const struct sink_config *c = &ns->sk->cfg;

	memset(&ns->gai, 0, sizeof(ns->gai));
	memset(&ns->hints, 0, sizeof(ns->hints));
	ns->hints.ai_socktype = ns->tcp ? SOCK_STREAM : SOCK_DGRAM;
	ns->gai.ar_name = c->host;
	ns->gai.ar_service = c->port;
	ns->gai.ar_request = &ns->hints;
	ns->gaiv[0] = &ns->gai;
	if (getaddrinfo_a(GAI_NOWAIT, ns->gaiv, 1, NULL) == 0)
		ns->resolving = true;
	else
		ns->retry_at = now_ns() + BACKOFF_MAX_NS;
}

static void take_addr(struct netsink *ns, const struct addrinfo *ai)
{
	memcpy(&ns->addr, ai->ai_addr, ai->ai_addrlen);
	ns->addrlen = ai->ai_addrlen;
	ns->have_addr = true;
}

/* Done resolving? Then the address is taken, or the next try planned. */
void netconn_resolve_poll(struct netsink *ns)
{
	int r = gai_error(&ns->gai);

	if (r == EAI_INPROGRESS)
		return;
	ns->resolving = false;
	if (r == 0 && ns->gai.ar_result) {
		take_addr(ns, ns->gai.ar_result);
		ns->retry_at = now_ns();
	} else {
		ns->retry_at = now_ns() + BACKOFF_MAX_NS;
		if (!ns->outage)
			netconn_down(ns, EHOSTUNREACH, "cannot resolve the host name");
	}
	if (ns->gai.ar_result)
		freeaddrinfo(ns->gai.ar_result);
	ns->gai.ar_result = NULL;
}

void netconn_connect(struct netsink *ns)
{
	int one = 1, timeout = USER_TIMEOUT_MS, r;

	if (!ns->have_addr) {
		if (!ns->resolving)
			ns_resolve_start(ns);
		return;
	}
	ns->fd = socket(ns->addr.ss_family,
			(ns->tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ns->fd < 0) {
		netconn_down(ns, errno, "cannot create a socket");
		return;
	}
	if (ns->tcp) {
		setsockopt(ns->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(ns->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
	}
	r = connect(ns->fd, (struct sockaddr *)&ns->addr, ns->addrlen);
	if (r < 0 && errno != EINPROGRESS) {
		netconn_down(ns, errno, "cannot connect");
		return;
	}
	if (sink_watch(ns->sk, ns->fd, EPOLLOUT | EPOLLIN, true) < 0) {
		netconn_down(ns, errno, "cannot watch the socket");
		return;
	}
	if (r == 0) {
		netconn_up(ns);
		return;
	}
	ns->state = NS_CONNECTING;
	ns->connect_deadline = now_ns() + CONNECT_TIMEOUT_NS;
}

/* --- queues ------------------------------------------------------------- */

int netconn_resolve_now(struct netsink *ns)
{
	const struct sink_config *c = &ns->sk->cfg;
	struct addrinfo hints = {.ai_socktype = ns->tcp ? SOCK_STREAM : SOCK_DGRAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *res = NULL;

	/* Literal addresses (IPv4 or IPv6) never touch the resolver. */
	if (getaddrinfo(c->host, c->port, &hints, &res) != 0 || !res) {
		hints.ai_flags = AI_NUMERICSERV;
		res = NULL;
		if (getaddrinfo(c->host, c->port, &hints, &res) != 0 || !res)
			return -EHOSTUNREACH;
	}
	take_addr(ns, res);
	freeaddrinfo(res);
	return 0;
}
