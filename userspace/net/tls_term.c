// SPDX-License-Identifier: GPL-2.0
/*
 * TLS terminated for a secret's hosts and an HTTP rule's (docs/network.md,
 * "Secrets", "Per-request rules"): on a connection to one, TLS with the
 * tool under that host's leaf (tls_ca.c) and TLS with the server verified
 * against the host's trust store, and each request framed by http.c,
 * judged by the HTTP rules, its headers' placeholders replaced by the
 * value, and recorded (net.request).
 */
#include "h2lib.h"
#include "term_internal.h"

#define HANDSHAKE_MS 10000

int eg_term_leak(struct term_conn *t, const struct egress_secret *s)
{
	snprintf(t->why, sizeof(t->why), "placeholder of secret %.40s for another host", s->name);
	return -EACCES;
}

int eg_term_send(gnutls_session_t s, const void *p, size_t n)
{
	/* Each EAGAIN is a send timeout (blocking()): a peer that stops reading ends it. */
	for (int stalls = 0; n;) {
		ssize_t w = tlslib.record_send(s, p, n);

		if ((w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) && ++stalls < 60)
			continue;
		if (w < 0)
			return -EPIPE;
		p = (const char *)p + w;
		n -= w;
	}
	return 0;
}

static int handshake(gnutls_session_t s)
{
	int r;

	do
		r = tlslib.handshake(s);
	while (r < 0 && !tlslib.error_is_fatal(r));
	return r;
}

static int session_for(gnutls_session_t *s, unsigned int flags,
		       gnutls_certificate_credentials_t cred, int fd)
{
	int r = tlslib.init(s, flags);

	if (r < 0)
		return r;
	r = tlslib.set_default_priority(*s);
	if (!r)
		r = tlslib.credentials_set(*s, GNUTLS_CRD_CERTIFICATE, cred);
	tlslib.transport_set_int2(*s, fd, fd);
	tlslib.handshake_set_timeout(*s, HANDSHAKE_MS);
	return r;
}

/* name added to names (the request's) and to t->injected (the connection's), each once. */
static void note_injected(struct term_conn *t, const char *name, char *names, size_t size)
{
	char *lists[2] = {names, t->injected};
	size_t sizes[2] = {size, sizeof(t->injected)};

	for (int k = 0; k < 2; k++) {
		size_t n = strlen(lists[k]);
		char pat[80], have[BPFBOX_NET_RULE_LEN + 2];

		snprintf(pat, sizeof(pat), ",%s,", name);
		snprintf(have, sizeof(have), ",%s,", lists[k]);
		if (!strstr(have, pat))
			snprintf(lists[k] + n, sizes[k] - n, "%s%s", n ? "," : "", name);
	}
}

/* The secret of this host whose placeholder starts at p (n bytes left); query: "+query" ones. */
static const struct egress_secret *secret_at(struct term_conn *t, const uint8_t *p, size_t n,
					     bool query)
{
	const struct egress_secrets *ss = t->c->e->o.secrets;

	for (size_t k = 0; ss && k < ss->n; k++) {
		size_t pl = strlen(ss->v[k].placeholder);

		if ((!query || ss->v[k].query) && eg_secret_for_host(&ss->v[k], t->name) &&
		    pl <= n && !memcmp(p, ss->v[k].placeholder, pl))
			return &ss->v[k];
	}
	return NULL;
}

/* v (n bytes) into out at *o, percent-encoded but for RFC 3986's unreserved bytes. */
static bool put_encoded(const char *v, size_t n, char *out, size_t size, size_t *o)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = v[i];

		if (isalnum(ch) || strchr("-._~", ch)) {
			if (*o + 1 > size)
				return false;
			out[(*o)++] = ch;
		} else {
			if (*o + 3 > size)
				return false;
			out[(*o)++] = '%';
			out[(*o)++] = hex[ch >> 4];
			out[(*o)++] = hex[ch & 15];
		}
	}
	return true;
}

bool eg_term_replace(struct term_conn *t, const uint8_t *p, size_t n, bool query, char *out,
		     size_t size, size_t *o, char *names, size_t names_size)
{
	for (size_t i = 0; i < n;) {
		const struct egress_secret *hit = secret_at(t, p + i, n - i, query);

		if (!hit) {
			if (*o + 1 > size)
				return false;
			out[(*o)++] = p[i++];
			continue;
		}
		if (query ? !put_encoded(hit->value, hit->len, out, size, o) : *o + hit->len > size)
			return false;
		if (!query)
			memcpy(out + *o, hit->value, hit->len);
		*o += query ? 0 : hit->len;
		i += strlen(hit->placeholder);
		note_injected(t, hit->name, names, names_size);
	}
	return true;
}

/*
 * The head (len bytes) with each placeholder of this host's secrets
 * replaced in its header lines, and of its "+query" ones in the request
 * line's query too (URL-encoded), into out: its length, or -1 (why set)
 * when it does not fit.
 */
static ssize_t inject(struct term_conn *t, const uint8_t *head, size_t len, char *out, size_t size)
{
	const uint8_t *line_end = memmem(head, len, "\r\n", 2);
	size_t line = line_end ? (size_t)(line_end - head) : len, o;
	const uint8_t *q = memchr(head, '?', line);
	size_t qs = q ? (size_t)(q - head) + 1 : line;
	char *rn = t->req_injected;

	if (qs > size)
		goto big;
	memcpy(out, head, qs);
	o = qs;
	if (eg_term_replace(t, head + qs, line - qs, true, out, size, &o, rn,
			    sizeof(t->req_injected)) &&
	    eg_term_replace(t, head + line, len - line, false, out, size, &o, rn,
			    sizeof(t->req_injected)))
		return o;
big:
	snprintf(t->why, sizeof(t->why), "a request head too long with its secrets");
	return -1;
}

/*
 * The bytes cleared by the framing (body) go on; then dropped from f.
 * Every byte in f was searched for another host's placeholder as it came
 * (from_tool).
 */
static int flush_ok(struct term_conn *t, size_t extra)
{
	struct http_frame *f = &t->f;

	if (f->ok && eg_term_send(t->server, f->buf, f->ok) < 0)
		return -EPIPE;
	t->out += f->ok;
	memmove(f->buf, f->buf + f->ok + extra, f->len - f->ok - extra);
	f->len -= f->ok + extra;
	f->ok = 0;
	return 0;
}

/*
 * The open request's record (net.request): its status if one was seen, the
 * bytes of the request and of its answer (until the next request or the end).
 */
static void request_done(struct term_conn *t)
{
	if (!t->req_open)
		return;
	if (t->req_injected[0])
		snprintf(t->req.reason, sizeof(t->req.reason), "secrets injected: %.60s",
			 t->req_injected);
	t->req.bytes_out = t->out - t->req_out0;
	t->req.bytes_in = t->in - t->req_in0;
	eg_emit_request(t->c->e, &t->c->o, true, t->name, t->addr, t->port, &t->req);
	t->req_open = false;
}

/* A request judged: refused, its record now (403); allowed, once its answer is over. */
static void request_judged(struct term_conn *t, const struct http_head *h, const char *rule,
			   bool allow)
{
	request_done(t); /* the one before, answered (or not) */
	memset(&t->req, 0, sizeof(t->req));
	t->req_out0 = t->out;
	t->req_in0 = t->in;
	snprintf(t->req.method, sizeof(t->req.method), "%s", h->method);
	snprintf(t->req.path, sizeof(t->req.path), "%s", h->path_bad ? "(unjudged)" : h->path);
	snprintf(t->req.rule, sizeof(t->req.rule), "%s", allow ? rule : "");
	if (!allow) {
		snprintf(t->req.reason, sizeof(t->req.reason), "%s", t->why);
		t->req.status = 403;
		eg_emit_request(t->c->e, &t->c->o, false, t->name, t->addr, t->port, &t->req);
		return;
	}
	t->req_open = true;
	t->req_answered = false;
	t->req_injected[0] = '\0';
}

/* The server's bytes: the first ones after a request, its status line or none. */
static void answer_seen(struct term_conn *t, const char *p, size_t n)
{
	if (!t->req_open || t->req_answered)
		return;
	t->req_answered = true;
	if (n >= 12 && !memcmp(p, "HTTP/1.", 7) && p[8] == ' ' && isdigit((unsigned char)p[9]) &&
	    isdigit((unsigned char)p[10]) && isdigit((unsigned char)p[11]))
		t->req.status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
}

/* A head of the tool's: the same host, placeholders replaced (other hosts': from_tool). */
static int one_head(struct term_conn *t, const struct http_head *h, size_t hl)
{
	struct http_frame *f = &t->f;
	const uint8_t *head = f->buf + f->ok;
	char rule[BPFBOX_NET_RULE_LEN];
	_cleanup_free_ char *out = NULL;
	ssize_t n;
	int r = flush_ok(t, 0);

	if (r < 0)
		return r;
	head = f->buf;
	if (h->connect || (h->host[0] && strcasecmp(h->host, t->name)) ||
	    (h->target[0] && strcasecmp(h->target, t->name))) {
		snprintf(t->why, sizeof(t->why), "a request for another host on this connection");
		return -EACCES;
	}
	/* The HTTP rules of this host judge each request (method, path). */
	if (!eg_request_ok(t->c->e, t->name, 443, h, rule, t->why, sizeof(t->why))) {
		request_judged(t, h, rule, false);
		t->request_refused = true;
		return -EACCES;
	}
	request_judged(t, h, rule, true);
	out = malloc(HEAD_OUT_MAX);
	if (!out)
		return -ENOMEM;
	n = inject(t, head, hl, out, HEAD_OUT_MAX);
	if (n < 0)
		return -EPROTO;
	if (eg_term_send(t->server, out, n) < 0)
		return -EPIPE;
	explicit_bzero(out, n);
	t->out += hl;
	memmove(f->buf, f->buf + hl, f->len - hl);
	f->len -= hl;
	eg_http_body(f, h);
	return 0;
}

/* The tool's bytes: 0 go on, 1 it ended, -EACCES/-EPROTO refused (why), -EPIPE. */
static int from_tool(struct term_conn *t)
{
	const struct egress_secret *s;
	struct http_frame *f = &t->f;
	struct http_head h;
	const char *w;
	size_t hl;
	ssize_t n;
	int a, r;

	if (f->len == sizeof(f->buf)) {
		snprintf(t->why, sizeof(t->why), "a request that cannot be framed");
		return -EPROTO;
	}
	n = tlslib.record_recv(t->tool, f->buf + f->len, sizeof(f->buf) - f->len);
	if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
		return 0;
	if (n == 0 || n == GNUTLS_E_PREMATURE_TERMINATION)
		return 1;
	if (n < 0)
		return -EPIPE;
	f->len += n;
	/* Another host's placeholder, also cut between two records. */
	s = eg_secret_in_flow(t->c->e, &f->tail, f->buf + f->len - n, n, t->name);
	if (s)
		return eg_term_leak(t, s);
	for (;;) {
		a = eg_http_advance(f, &h, &hl, &w);
		if (a == HTTP_MORE)
			return flush_ok(t, 0);
		if (a == HTTP_BAD) {
			snprintf(t->why, sizeof(t->why), "not framable: %s", w);
			return -EPROTO;
		}
		r = one_head(t, &h, hl);
		if (r < 0)
			return r;
	}
}

/* Both ways until the server ends, the tool's request is refused or it idles. */
static int relay(struct term_conn *t)
{
	struct egress *e = t->c->e;
	char buf[16384];
	bool tool_done = false;
	int r = 0;

	while (r >= 0) {
		struct pollfd p[3] = {{.fd = t->c->fd, .events = tool_done ? 0 : POLLIN},
				      {.fd = t->c->up, .events = POLLIN},
				      {.fd = e->stop_pipe[0], .events = POLLIN}};
		ssize_t n;

		if (!tlslib.record_check_pending(t->tool) &&
		    !tlslib.record_check_pending(t->server)) {
			int rc = poll(p, 3, e->idle_ms);

			if (rc < 0 && errno == EINTR)
				continue;
			if (rc <= 0 || p[2].revents)
				return 0;
		} else {
			p[0].revents = tlslib.record_check_pending(t->tool) ? POLLIN : 0;
			p[1].revents = tlslib.record_check_pending(t->server) ? POLLIN : 0;
		}
		if (!tool_done && p[0].revents) {
			r = from_tool(t);
			if (r == 1) {
				tool_done = true;
				tlslib.bye(t->server, GNUTLS_SHUT_WR);
				r = 0;
			}
		}
		if (r < 0 || !p[1].revents)
			continue;
		n = tlslib.record_recv(t->server, buf, sizeof(buf));
		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
			continue;
		if (n <= 0)
			return 0;
		answer_seen(t, buf, n);
		if (eg_term_send(t->tool, buf, n) < 0)
			return 0;
		t->in += n;
	}
	return r;
}

static void blocking(int fd)
{
	struct timeval tv = {.tv_sec = HANDSHAKE_MS / 1000};
	int one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	/*
	 * Each TLS message and record goes out as it is made: with Nagle's
	 * wait a handshake's second message waited on the peer's delayed ACK
	 * (40 ms a time, seen with curl when the server's handshake came first).
	 */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A peer that stops reading or writing mid-record ends the connection. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/*
 * ALPN: a tool that offers HTTP/2 makes bpfbox offer it to the server too,
 * and is then offered only what the server chose (h2, else HTTP/1.1):
 * the two sides speak one protocol and bpfbox never translates. So the
 * server's handshake comes first for such a tool (one round trip more).
 */
static const gnutls_datum_t alpn[2] = {{(unsigned char *)"h2", 2},
				       {(unsigned char *)"http/1.1", 8}};

/* TLS to the server, verified against the host's trust store; < 0 and why. */
static void *upstream_handshake(void *arg)
{
	struct term_conn *t = arg;
	struct egress *e = t->c->e;
	int r = session_for(&t->server, GNUTLS_CLIENT, e->term.upstream, t->c->up);

	if (!r) {
		r = tlslib.server_name_set(t->server, GNUTLS_NAME_DNS, t->name, strlen(t->name));
		tlslib.session_set_verify_cert(t->server, t->name, 0);
	}
	/* The tool offers HTTP/2: so does bpfbox, and the server's choice is the tool's. */
	if (!r && t->offers_h2)
		r = tlslib.alpn_set_protocols(t->server, alpn, 2, 0);
	if (!r)
		r = handshake(t->server);
	if (r < 0)
		snprintf(t->why, sizeof(t->why), "upstream TLS: %s", tlslib.strerror(r));
	t->server_r = r;
	if (!r && t->offers_h2) {
		gnutls_datum_t p = {0};

		t->h2 = !tlslib.alpn_get_selected_protocol(t->server, &p) && p.size == 2 &&
			!memcmp(p.data, "h2", 2);
	}
	return NULL;
}

/*
 * Both handshakes at once (the server's on a thread of its own): the
 * tool's needs nothing of the server's, and nothing of the server's
 * reaches the tool before it is verified. A server that fails is the
 * tool's 502, naming why; a tool that refuses the session CA, its record.
 */
static int handshakes(struct term_conn *t)
{
	pthread_t th;
	bool threaded = !t->offers_h2 && !pthread_create(&th, NULL, upstream_handshake, t);
	int r;

	if (!threaded)
		upstream_handshake(t);
	r = session_for(&t->tool, GNUTLS_SERVER, eg_term_leaf(t->c->e, t->name), t->c->fd);
	if (!r && t->offers_h2)
		r = tlslib.alpn_set_protocols(t->tool, t->h2 ? &alpn[0] : &alpn[1], 1, 0);
	if (!r)
		r = handshake(t->tool);
	if (threaded)
		pthread_join(th, NULL);
	if (r < 0) {
		if (t->server_r >= 0)
			snprintf(t->why, sizeof(t->why),
				 "the tool refused the session CA (pinned?): %s",
				 tlslib.strerror(r));
		return r;
	}
	if (t->server_r < 0) {
		char resp[1024];

		eg_term_send(t->tool, resp, eg_format_502(resp, sizeof(resp), t->name, t->why));
		tlslib.bye(t->tool, GNUTLS_SHUT_WR);
	}
	return t->server_r;
}

/*
 * Whether the tool's ClientHello (peeked, not read) offers HTTP/2 and
 * bpfbox can speak it (nghttp2 opens): without the library, HTTP/1.1,
 * said once per process.
 */
static bool offers_h2(struct conn *c)
{
	static bool said;
	_cleanup_free_ uint8_t *buf = malloc(PEEK_MAX);
	ssize_t n = buf ? eg_peek(c->e, c->fd, buf, PEEK_MAX, FIRST_DATA_MS) : -1;
	char err[256];

	if (n <= 0 || !eg_tls_offers_h2(buf, n))
		return false;
	if (!h2_lib_open(err, sizeof(err)))
		return true;
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		log_warn("egress: %s; tools that offer HTTP/2 get HTTP/1.1", err);
	return false;
}

/*
 * Long (53 lines) because it is one sequence in order: the handshakes,
 * the relay, the record.
 */
void eg_term_serve(struct conn *c, const char *name, const uint8_t addr[16], uint16_t port,
		   int kind, int how, const char *rule)
{
	struct egress *e = c->e;
	struct term_conn *t = calloc(1, sizeof(*t));
	char reason[BPFBOX_NET_RULE_LEN];
	bool allow = false;
	int r;

	if (!t) {
		eg_reset(c->fd);
		return;
	}
	t->c = c;
	t->name = name;
	t->addr = addr;
	t->port = port;
	blocking(c->fd);
	blocking(c->up);
	t->offers_h2 = offers_h2(c);
	if (handshakes(t) < 0)
		goto out;
	r = t->h2 ? eg_h2_relay(t) : relay(t);
	if (!t->h2 && (r == -EACCES || r == -EPROTO)) {
		char resp[1024];
		size_t n =
			eg_format_403(resp, sizeof(resp), r == -EACCES ? name : NULL, port, t->why);

		eg_term_send(t->tool, resp, n);
	}
	/* A refused request is its own record: the connection was allowed. */
	allow = r >= 0 || r == -EPIPE || t->request_refused;
	request_done(t);
	tlslib.bye(t->tool, GNUTLS_SHUT_WR);
out:
	if (allow)
		snprintf(reason, sizeof(reason), "tls terminated%s%.60s",
			 t->injected[0] ? "; secrets injected: " : "", t->injected);
	eg_emit(e, &c->o, allow, kind, how, name, addr, port, rule, allow ? reason : t->why, t->out,
		t->in);
	if (t->tool)
		tlslib.deinit(t->tool);
	if (t->server)
		tlslib.deinit(t->server);
	explicit_bzero(t, sizeof(*t));
	free(t);
}
