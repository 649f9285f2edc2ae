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
 * receiver drop the duplicates. RELP (relp:// and relp+tls://, relp.c)
 * replaces the TCP acknowledgement and confirm= with the collector's own
 * answer to each frame.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <gnutls/gnutls.h>

#include "relp.h"
#include "sink_internal.h"
#include "spool.h"
#include "syslog.h"
#include "../lib/util.h"

#define BACKOFF_MIN_NS	  (200ULL * 1000000ULL)
#define BACKOFF_MAX_NS	  (5ULL * 1000000000ULL)
#define CONNECT_TIMEOUT_NS (5ULL * 1000000000ULL)
#define ACK_POLL_NS	  (50ULL * 1000000ULL)
#define RESOLVE_POLL_NS	  (100ULL * 1000000ULL)
#define UDP_SETTLE_NS	  (500ULL * 1000000ULL) /* no ICMP error this long: a UDP collector is back */
#define USER_TIMEOUT_MS	  20000 /* unacknowledged data this long: the connection is dead */
#define CLOSE_WAIT_MS	  1000
#define IOV_BATCH	  64
#define INFLIGHT_MIN	  (8U << 20) /* bytes sent and awaiting confirmation, at least */
#define RELP_RSP_TIMEOUT_NS (30ULL * 1000000000ULL) /* no RELP answer this long: reconnect */

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
	bool draining;	    /* shutdown: nothing more is pulled into inflight */
	pid_t pid;
	char hostname[SINK_HOST_MAX];
	/* syslog+tls */
	bool tls;
	gnutls_certificate_credentials_t cred;
	gnutls_session_t ses;	/* NULL without a connection */
	uint64_t wire_bytes;	/* TLS bytes written on this connection (for SIOCOUTQ) */
	/*
	 * relp:// and relp+tls:// (relp.c): frames are bare messages; each is
	 * sent as a RELP frame built in frame (its txnr kept in stream_end)
	 * and delivered when the collector's answer names its txnr.
	 */
	bool relp;
	struct relp rp;
	char *frame;
	size_t frame_cap, frame_len, frame_off;
	struct rec *frame_rec; /* the record frame carries; NULL: the open */
	int relp_bad;	       /* an answer that is not 200 for the oldest frame: its code */
};

/* --- message format ----------------------------------------------------- */

int syslog_severity(const char *type, const char *line, size_t len)
{
	if (streq(type, "loss") || streq(type, "sink.error"))
		return SYSLOG_SEV_WARNING;
	/* jsonw escapes quotes inside strings, so this is the member itself. */
	if (memmem(line, len, "\"decision\":\"deny\"", 17))
		return SYSLOG_SEV_NOTICE;
	return SYSLOG_SEV_INFO;
}

int syslog_header(char *buf, size_t size, int facility, int severity, const char *time,
		  size_t time_len, const char *hostname, const char *app, pid_t pid,
		  const char *msgid)
{
	char ts[40];
	int n;

	/* RFC 5424 allows 6 fraction digits: 2026-01-02T03:04:05.123456Z */
	if (time && time_len >= 20 && time_len < 40 && time[time_len - 1] == 'Z') {
		const char *dot = memchr(time, '.', time_len);

		if (dot && dot - time == 19)
			snprintf(ts, sizeof(ts), "%.*s%.*sZ", 20, time,
				 (int)(time_len - 21 < 6 ? time_len - 21 : 6), dot + 1);
		else
			snprintf(ts, sizeof(ts), "%.*s", (int)time_len, time);
	} else {
		struct timespec now;
		struct tm tm;
		size_t k;

		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		k = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(ts + k, sizeof(ts) - k, ".%06ldZ", now.tv_nsec / 1000);
	}
	n = snprintf(buf, size, "<%d>1 %s %s %s %d %.32s - ", facility * 8 + severity, ts,
		     hostname, app, (int)pid, msgid && msgid[0] ? msgid : "-");
	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

/* The "time" member of an event line. */
static const char *line_time(const char *line, size_t len, size_t *tlen)
{
	const char *p = memmem(line, len < 200 ? len : 200, "\"time\":\"", 8);
	const char *end;

	if (!p)
		return NULL;
	p += 8;
	end = memchr(p, '"', line + len - p);
	if (!end)
		return NULL;
	*tlen = end - p;
	return p;
}

/* --- connection ---------------------------------------------------------- */

static void ns_flush(struct netsink *ns);


static void ns_close_fd(struct netsink *ns)
{
	if (ns->ses) {
		gnutls_deinit(ns->ses);
		ns->ses = NULL;
	}
	if (ns->fd < 0)
		return;
	sink_watch(ns->sk, ns->fd, 0, false);
	close(ns->fd);
	ns->fd = -1;
}

/* The connection is gone: what was not delivered goes again later. */
static void ns_down(struct netsink *ns, int err, const char *what)
{
	uint64_t now = now_ns();
	char msg[PATH_MAX + SINK_NAME_MAX + 512];

	ns_close_fd(ns);
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
		snprintf(msg, sizeof(msg), "%s (%s); events are kept (spool %s) and sent when the "
					   "collector is back", what, strerror(err), ns->sk->cfg.spool_dir);
		sink_error_event(ns->sk, err, msg);
	}
}

/*
 * The collector takes events again: a TCP connection is up, or a UDP
 * datagram was confirmed (a UDP "connect" proves nothing: a closed port
 * answers the first datagram with an ICMP error).
 */
static void ns_recovered(struct netsink *ns)
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

static void ns_up(struct netsink *ns)
{
	/* TLS: TCP is up; the collector has to prove who it is first. */
	if (ns->tls && ns->state != NS_HANDSHAKE) {
		ns_tls_start(ns);
		return;
	}
	ns->state = NS_UP;
	ns->stream_bytes = 0;
	if (ns->relp) {
		/* Nothing but the open until the collector answers it. */
		relp_reset(&ns->rp);
		ns->frame_rec = NULL;
		ns->frame_off = 0;
		ns->frame_len = ns->frame_cap ? relp_open_frame(&ns->rp, ns->frame, ns->frame_cap)
					      : 0;
	}
	if (ns->tcp)
		ns_recovered(ns);
	sink_watch(ns->sk, ns->fd, EPOLLIN | (ns->tcp ? EPOLLRDHUP : 0), false);
	ns_flush(ns);
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
		gnutls_transport_set_errno(ns->ses, errno);
	return n;
}

static ssize_t tls_pull(gnutls_transport_ptr_t p, void *data, size_t len)
{
	struct netsink *ns = p;
	ssize_t n = recv(ns->fd, data, len, MSG_DONTWAIT);

	if (n < 0)
		gnutls_transport_set_errno(ns->ses, errno);
	return n;
}

static const char *tls_peer_name(const struct netsink *ns)
{
	const struct sink_config *c = &ns->sk->cfg;

	return c->tls_name[0] ? c->tls_name : c->host;
}

static void ns_tls_handshake(struct netsink *ns)
{
	char msg[1024];
	int r = gnutls_handshake(ns->ses);

	if (r == GNUTLS_E_SUCCESS) {
		ns_up(ns);
		return;
	}
	if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED || !gnutls_error_is_fatal(r)) {
		sink_watch(ns->sk, ns->fd, gnutls_record_get_direction(ns->ses) ? EPOLLOUT : EPOLLIN,
			   false);
		return;
	}
	if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		gnutls_datum_t out = { 0 };
		unsigned int status = gnutls_session_get_verify_cert_status(ns->ses);

		if (gnutls_certificate_verification_status_print(
			    status, gnutls_certificate_type_get(ns->ses), &out, 0) < 0)
			out.data = NULL;
		snprintf(msg, sizeof(msg), "the collector's certificate is refused for %s: %s",
			 tls_peer_name(ns), out.data ? (char *)out.data : "not trusted");
		for (size_t n = strlen(msg); n && msg[n - 1] == ' '; n--)
			msg[n - 1] = 0;
		gnutls_free(out.data);
		ns_down(ns, EKEYREJECTED, msg);
		return;
	}
	snprintf(msg, sizeof(msg), "the TLS handshake failed: %s", gnutls_strerror(r));
	ns_down(ns, EPROTO, msg);
}

/* TCP is connected: a TLS session that verifies the collector's certificate. */
static void ns_tls_start(struct netsink *ns)
{
	const char *name = tls_peer_name(ns);
	struct in6_addr a6;
	int r;

	r = gnutls_init(&ns->ses, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
	if (r < 0) {
		ns->ses = NULL;
		ns_down(ns, ENOMEM, "cannot start TLS");
		return;
	}
	if ((r = gnutls_set_default_priority(ns->ses)) < 0 ||
	    (r = gnutls_credentials_set(ns->ses, GNUTLS_CRD_CERTIFICATE, ns->cred)) < 0) {
		ns_down(ns, EPROTO, "cannot set up TLS");
		return;
	}
	/* SNI for a name; the certificate must carry the name (or the IP address). */
	if (inet_pton(AF_INET, name, &a6) != 1 && inet_pton(AF_INET6, name, &a6) != 1)
		gnutls_server_name_set(ns->ses, GNUTLS_NAME_DNS, name, strlen(name));
	gnutls_session_set_verify_cert(ns->ses, name, 0);
	gnutls_transport_set_ptr(ns->ses, ns);
	gnutls_transport_set_push_function(ns->ses, tls_push);
	gnutls_transport_set_pull_function(ns->ses, tls_pull);
	ns->wire_bytes = 0;
	ns->state = NS_HANDSHAKE;
	ns->connect_deadline = now_ns() + CONNECT_TIMEOUT_NS;
	ns_tls_handshake(ns);
}

/* The CA, and our certificate if any: read once, at open. 0, or -errno with err. */
static int tls_credentials(struct netsink *ns, char *err, size_t size)
{
	const struct sink_config *c = &ns->sk->cfg;
	int r = gnutls_certificate_allocate_credentials(&ns->cred);

	if (r < 0) {
		snprintf(err, size, "sink %s: cannot set up TLS: %s", c->name, gnutls_strerror(r));
		return -ENOMEM;
	}
	if (c->tls_ca[0])
		r = gnutls_certificate_set_x509_trust_file(ns->cred, c->tls_ca, GNUTLS_X509_FMT_PEM);
	else
		r = gnutls_certificate_set_x509_system_trust(ns->cred);
	if (r <= 0) {
		snprintf(err, size, "sink %s: %s%s: %s", c->name, c->tls_ca[0] ? "ca=" : "",
			 c->tls_ca[0] ? c->tls_ca : "the system's trust store",
			 r < 0 ? gnutls_strerror(r) : "no CA certificate in it");
		return -EINVAL;
	}
	if (c->tls_cert[0]) {
		r = gnutls_certificate_set_x509_key_file(ns->cred, c->tls_cert, c->tls_key,
							 GNUTLS_X509_FMT_PEM);
		if (r < 0) {
			snprintf(err, size, "sink %s: cert=%s key=%s: %s", c->name, c->tls_cert,
				 c->tls_key, gnutls_strerror(r));
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
static void ns_resolve_poll(struct netsink *ns)
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
			ns_down(ns, EHOSTUNREACH, "cannot resolve the host name");
	}
	if (ns->gai.ar_result)
		freeaddrinfo(ns->gai.ar_result);
	ns->gai.ar_result = NULL;
}

static void ns_connect(struct netsink *ns)
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
		ns_down(ns, errno, "cannot create a socket");
		return;
	}
	if (ns->tcp) {
		setsockopt(ns->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(ns->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
	}
	r = connect(ns->fd, (struct sockaddr *)&ns->addr, ns->addrlen);
	if (r < 0 && errno != EINPROGRESS) {
		ns_down(ns, errno, "cannot connect");
		return;
	}
	if (sink_watch(ns->sk, ns->fd, EPOLLOUT | EPOLLIN, true) < 0) {
		ns_down(ns, errno, "cannot watch the socket");
		return;
	}
	if (r == 0) {
		ns_up(ns);
		return;
	}
	ns->state = NS_CONNECTING;
	ns->connect_deadline = now_ns() + CONNECT_TIMEOUT_NS;
}

/* --- queues ------------------------------------------------------------- */

/* Memory over its bound: its oldest half goes to the end of the spool. */
static void ns_spill(struct netsink *ns)
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

			snprintf(msg, sizeof(msg), "cannot write the spool %s (%s); events that do not "
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
static void ns_pull(struct netsink *ns)
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
				sink_log(ns->sk, "cannot read the spool %s: %s; its segment is skipped",
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
	/* RELP: the collector's answers confirm (relp_answer); a silent one is left. */
	if (ns->relp) {
		struct rec *r = ns->inflight.head;

		if (r && r->sent_ns && now >= r->sent_ns + RELP_RSP_TIMEOUT_NS)
			ns_down(ns, ETIMEDOUT, "the collector did not answer a RELP frame");
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
			ns_recovered(ns);
		free(recq_pop(&ns->inflight));
	}
}

static void ns_watch_out(struct netsink *ns, bool out)
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

/* The next record as one RELP frame in ns->frame; false when none is ready. */
static bool relp_next_frame(struct netsink *ns)
{
	struct rec *r;
	uint32_t txnr;
	size_t need, h;

	if (!ns->rp.opened)
		return false;
	if (!ns->unsent)
		ns_pull(ns);
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
static void relp_send(struct netsink *ns, uint64_t now)
{
	for (;;) {
		ssize_t n;

		if (ns->frame_off == ns->frame_len && !relp_next_frame(ns))
			break;
		if (ns->tls) {
			n = gnutls_record_send(ns->ses, ns->frame + ns->frame_off,
					       ns->frame_len - ns->frame_off);
			if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
				ns_watch_out(ns, true);
				return;
			}
			if (n < 0) {
				char msg[256];

				snprintf(msg, sizeof(msg), "sending failed: %s", gnutls_strerror(n));
				ns_down(ns, EPROTO, msg);
				return;
			}
		} else {
			n = send(ns->fd, ns->frame + ns->frame_off, ns->frame_len - ns->frame_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				ns_watch_out(ns, true);
				return;
			}
			if (n < 0) {
				ns_down(ns, errno, "sending failed");
				return;
			}
		}
		ns->frame_off += n;
		if (ns->frame_off == ns->frame_len && ns->frame_rec) {
			ns->frame_rec->sent_ns = now;
			ns->unsent = ns->frame_rec->next;
			ns->frame_rec = NULL;
		}
	}
	ns_watch_out(ns, false);
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
}

/* Bytes from a RELP collector; false when the connection went down. */
static bool relp_received(struct netsink *ns, const char *buf, size_t n)
{
	char msg[128];
	int r;

	ns->relp_bad = 0;
	r = relp_input(&ns->rp, buf, n, relp_answer, ns);
	if (r == 1) {
		ns_down(ns, ECONNRESET, "the collector closed the RELP session");
		return false;
	}
	if (r < 0 || ns->relp_bad) {
		snprintf(msg, sizeof(msg), ns->relp_bad > 0 ? "the collector refused a frame (RELP %d)"
							    : "the collector's RELP answer does not match",
			 ns->relp_bad);
		ns_down(ns, EPROTO, r < 0 ? "the collector does not speak RELP" : msg);
		return false;
	}
	return true;
}

static void ns_send(struct netsink *ns)
{
	uint64_t now = now_ns();

	if (ns->relp) {
		relp_send(ns, now);
		return;
	}
	for (;;) {
		ssize_t n;

		if (!ns->unsent) {
			ns_pull(ns);
			if (!ns->unsent)
				break;
		}
		if (ns->tls) {
			/* After GNUTLS_E_AGAIN, the same data again (it is: unsent stays). */
			n = gnutls_record_send(ns->ses, ns->unsent->data + ns->unsent_off,
					       ns->unsent->len - ns->unsent_off);
			if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
				ns_watch_out(ns, true);
				return;
			}
			if (n < 0) {
				char msg[256];

				snprintf(msg, sizeof(msg), "sending failed: %s", gnutls_strerror(n));
				ns_down(ns, EPROTO, msg);
				return;
			}
		} else if (ns->tcp) {
			struct iovec iov[IOV_BATCH];
			struct msghdr mh = { .msg_iov = iov };
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
			n = send(ns->fd, ns->unsent->data, ns->unsent->len, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno == EMSGSIZE) {
				/* Too large for a datagram: dropped and counted, never resent. */
				sink_lost(ns->sk, 1, "sink message too large for UDP");
				n = ns->unsent->len;
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ns_watch_out(ns, true);
			return;
		}
		if (n < 0) {
			ns_down(ns, errno, "sending failed");
			return;
		}
		advance(ns, n, now);
	}
	ns_watch_out(ns, false);
}

static void ns_flush(struct netsink *ns)
{
	uint64_t now = now_ns();

	if (ns->state != NS_UP)
		return;
	ns_confirm(ns, now);
	ns_send(ns);
	if (ns->state == NS_UP)
		ns_confirm(ns, now);
}

/* --- the sink interface ------------------------------------------------- */

static int resolve_now(struct netsink *ns)
{
	const struct sink_config *c = &ns->sk->cfg;
	struct addrinfo hints = { .ai_socktype = ns->tcp ? SOCK_STREAM : SOCK_DGRAM };
	struct addrinfo *res = NULL;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ns->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ns->addr;
	int port = atoi(c->port);

	/* Literal addresses never touch the resolver. */
	memset(&ns->addr, 0, sizeof(ns->addr));
	if (inet_pton(AF_INET, c->host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		ns->addrlen = sizeof(*v4);
		ns->have_addr = true;
		return 0;
	}
	if (inet_pton(AF_INET6, c->host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		ns->addrlen = sizeof(*v6);
		ns->have_addr = true;
		return 0;
	}
	if (getaddrinfo(c->host, c->port, &hints, &res) != 0 || !res)
		return -EHOSTUNREACH;
	take_addr(ns, res);
	freeaddrinfo(res);
	return 0;
}

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
	if (ns->tls && (r = tls_credentials(ns, err, size)) < 0)
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
	if (resolve_now(ns) < 0)
		ns_down(ns, EHOSTUNREACH, "cannot resolve the host name");
	else
		ns_connect(ns);
	return 0;
}

void netsink_push(struct sink *sk, const char *type, const char *line, size_t line_len,
		  const char *payload, size_t len)
{
	struct netsink *ns = sk->net;
	size_t tlen = 0, total;
	const char *time = line_time(line, line_len, &tlen);
	char hdr[512], prefix[16];
	int hlen, plen = 0;
	struct rec *r;

	hlen = syslog_header(hdr, sizeof(hdr), sk->cfg.facility,
			     syslog_severity(type, line, line_len), time, tlen, ns->hostname,
			     sk->cfg.app, ns->pid, type);
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
		ns_spill(ns);
}

void netsink_flush(struct sink *sk)
{
	ns_flush(sk->net);
}

void netsink_event(struct sink *sk, uint32_t events)
{
	struct netsink *ns = sk->net;
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (ns->fd < 0)
		return;
	if (ns->state == NS_HANDSHAKE) {
		ns_tls_handshake(ns);
		if (ns->state == NS_UP)
			ns_flush(ns);
		return;
	}
	if (ns->state == NS_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(ns->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr)
			ns_down(ns, soerr, "cannot connect");
		else
			ns_up(ns);
		return;
	}
	if (events & EPOLLERR) {
		if (getsockopt(ns->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (soerr) {
			ns_down(ns, soerr, "the connection failed");
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
		/* A syslog collector says nothing (what it sends is dropped); RELP answers. */
		char buf[512];

		for (;;) {
			ssize_t n = ns->tls ? gnutls_record_recv(ns->ses, buf, sizeof(buf))
					    : recv(ns->fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (ns->tls && n < 0) {
				char msg[256];

				if (n == GNUTLS_E_AGAIN)
					break;
				if (n == GNUTLS_E_INTERRUPTED || !gnutls_error_is_fatal(n))
					continue;
				snprintf(msg, sizeof(msg), "the TLS connection failed: %s",
					 gnutls_strerror(n));
				ns_down(ns, EPROTO, msg);
				return;
			}

			if (n > 0 && ns->relp && !relp_received(ns, buf, n))
				return;
			if (n > 0)
				continue;
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n == 0 && !ns->tcp)
				break;
			ns_down(ns, n < 0 ? errno : ECONNRESET,
				n < 0 ? "the connection failed" : "the collector closed the connection");
			return;
		}
	}
	ns_flush(ns);
}

void netsink_tick(struct sink *sk, uint64_t now)
{
	struct netsink *ns = sk->net;

	if (ns->resolving)
		ns_resolve_poll(ns);
	switch (ns->state) {
	case NS_DOWN:
		if (now >= ns->retry_at && !ns->resolving)
			ns_connect(ns);
		break;
	case NS_CONNECTING:
		if (now >= ns->connect_deadline)
			ns_down(ns, ETIMEDOUT, "cannot connect");
		break;
	case NS_HANDSHAKE:
		if (now >= ns->connect_deadline)
			ns_down(ns, ETIMEDOUT, "the TLS handshake did not finish");
		break;
	case NS_UP:
		ns_flush(ns);
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
		struct pollfd p = { .fd = ns->fd, .events = POLLIN };

		ns_send(ns);
		if (ns->state != NS_UP)
			break;
		if (ns->frame_off != ns->frame_len)
			p.events |= POLLOUT;
		if (poll(&p, 1, 20) > 0)
			netsink_event(ns->sk, p.revents & POLLIN ? EPOLLIN : 0);
	}
	while (!ns->relp && ns->state == NS_UP && now_ns() < deadline) {
		struct pollfd p = { .fd = ns->fd, .events = POLLOUT };
		int outq = 0;

		if (ns->unsent)
			ns_send(ns);
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

			for (struct rec *r = ns->inflight.head; r && data && len; r = r->next, i++) {
				data[i] = r->data;
				len[i] = r->len;
			}
			if (!data || !len || spool_prepend(&ns->spool, data, len, n) < 0)
				sink_log(sk, "%zu events sent but not confirmed could not be kept in "
					     "the spool", n);
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
	ns_close_fd(ns);
	recq_free(&ns->inflight);
	recq_free(&ns->mem);
	if (ns->resolving && gai_cancel(&ns->gai) != EAI_CANCELED) {
		const struct gaicb *const list[1] = { &ns->gai };
		struct timespec ts = { 2, 0 };

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
		gnutls_certificate_free_credentials(ns->cred);
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
