// SPDX-License-Identifier: GPL-2.0
/*
 * TLS terminated for a secret's hosts (docs/network.md, "Secrets"): a CA
 * made when the session starts (its key only in this process's memory,
 * its names constrained to the secrets' hosts), a leaf for each host; on
 * a connection to one, TLS with the tool under that leaf and TLS with the
 * server verified against the host's trust store, and each request framed
 * by http.c, judged, and its headers' placeholders replaced by the value.
 */
#include <time.h>
#include <sys/random.h>

#include "egress_internal.h"

#define CERT_DAYS    30
#define HANDSHAKE_MS 10000
#define HEAD_OUT_MAX (PEEK_MAX + 4 * 65536)

static int set_ids(gnutls_x509_crt_t crt, gnutls_x509_crt_t issuer)
{
	unsigned char id[64];
	size_t n = sizeof(id);
	int r = tlslib.x509_crt_get_key_id(crt, 0, id, &n);

	if (!r)
		r = tlslib.x509_crt_set_subject_key_id(crt, id, n);
	if (!r && issuer) {
		n = sizeof(id);
		r = tlslib.x509_crt_get_key_id(issuer, 0, id, &n);
		if (!r)
			r = tlslib.x509_crt_set_authority_key_id(crt, id, n);
	}
	return r;
}

/* A certificate: the CA (host NULL, self-signed) or a leaf for host. */
static int make_cert(struct term *t, gnutls_x509_crt_t *out, const char *host)
{
	gnutls_x509_privkey_t key = host ? t->leaf_key : t->ca_key;
	gnutls_x509_crt_t crt;
	uint8_t serial[16];
	time_t now = time(NULL);
	char dn[300];
	const char *errp;
	int r;

	if (getrandom(serial, sizeof(serial), 0) != sizeof(serial))
		return GNUTLS_E_RANDOM_FAILED;
	serial[0] &= 0x7f;
	r = tlslib.x509_crt_init(&crt);
	if (r < 0)
		return r;
	snprintf(dn, sizeof(dn), "CN=%s", host ? host : "bpfbox session CA");
	r = tlslib.x509_crt_set_version(crt, 3);
	if (!r)
		r = tlslib.x509_crt_set_serial(crt, serial, sizeof(serial));
	if (!r)
		r = tlslib.x509_crt_set_activation_time(crt, now - 3600);
	if (!r)
		r = tlslib.x509_crt_set_expiration_time(crt, now + CERT_DAYS * 86400L);
	if (!r)
		r = tlslib.x509_crt_set_dn(crt, dn, &errp);
	if (!r)
		r = tlslib.x509_crt_set_key(crt, key);
	if (!r)
		r = tlslib.x509_crt_set_basic_constraints(crt, host ? 0 : 1, host ? -1 : 0);
	if (!r)
		r = tlslib.x509_crt_set_key_usage(crt, host ? GNUTLS_KEY_DIGITAL_SIGNATURE
							    : GNUTLS_KEY_KEY_CERT_SIGN |
								       GNUTLS_KEY_CRL_SIGN);
	if (!r && host)
		r = tlslib.x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host,
							 strlen(host), GNUTLS_FSAN_SET);
	if (!r && host)
		r = tlslib.x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
	if (!r)
		r = set_ids(crt, host ? t->ca : NULL);
	if (!r && !host) {
		/* The CA can sign for the secrets' hosts and nothing else. */
		gnutls_x509_name_constraints_t nc;

		r = tlslib.x509_name_constraints_init(&nc);
		for (size_t i = 0; !r && i < t->n_leaves; i++) {
			gnutls_datum_t d = {(unsigned char *)t->leaf_host[i],
					    strlen(t->leaf_host[i])};

			r = tlslib.x509_name_constraints_add_permitted(nc, GNUTLS_SAN_DNSNAME, &d);
		}
		if (!r)
			r = tlslib.x509_crt_set_name_constraints(crt, nc, 1);
		if (nc)
			tlslib.x509_name_constraints_deinit(nc);
	}
	if (!r)
		r = tlslib.x509_crt_sign2(crt, host ? t->ca : crt, t->ca_key, GNUTLS_DIG_SHA256, 0);
	if (r < 0) {
		tlslib.x509_crt_deinit(crt);
		return r;
	}
	*out = crt;
	return 0;
}

static int new_key(gnutls_x509_privkey_t *k)
{
	int r = tlslib.x509_privkey_init(k);

	if (!r)
		r = tlslib.x509_privkey_generate(
			*k, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	return r;
}

/* The server's trust: the host's store, or $BPFBOX_UPSTREAM_CA (tests, ops). */
static int upstream_trust(struct term *t, char *err, size_t size)
{
	const char *ca = getenv("BPFBOX_UPSTREAM_CA");
	int r = tlslib.certificate_allocate_credentials(&t->upstream);

	if (r < 0)
		return r;
	r = ca && *ca ? tlslib.certificate_set_x509_trust_file(t->upstream, ca, GNUTLS_X509_FMT_PEM)
		      : tlslib.certificate_set_x509_system_trust(t->upstream);
	if (r <= 0) {
		snprintf(err, size, "secrets: no certificate to verify servers with in %s",
			 ca && *ca ? ca : "the system trust store");
		return -ENOENT;
	}
	return 0;
}

/* A host whose connections on 443 are terminated: a leaf for it; -E2BIG past MAX_LEAVES. */
static int add_leaf_host(struct term *t, const char *host, char *err, size_t size)
{
	for (size_t k = 0; k < t->n_leaves; k++)
		if (streq(t->leaf_host[k], host))
			return 0;
	if (t->n_leaves == MAX_LEAVES) {
		snprintf(err, size, "secrets and HTTP rules: at most %d hosts", MAX_LEAVES);
		return -E2BIG;
	}
	snprintf(t->leaf_host[t->n_leaves++], sizeof(t->leaf_host[0]), "%s", host);
	return 0;
}

int eg_term_start(struct egress *e, char *err, size_t size)
{
	const struct egress_secrets *ss = &e->secrets;
	struct term *t = &e->term;
	gnutls_datum_t pem = {0};
	char http[MAX_LEAVES + 1][254];
	size_t n_http = eg_http_hosts(e, http, MAX_LEAVES + 1);
	int r;

	/* The proxy's own copy: the caller's may go (a daemon's request). */
	r = eg_secrets_copy(&e->secrets, e->o.secrets);
	e->o.secrets = &e->secrets;
	if (r < 0 || (!ss->n && !n_http))
		return r;
	r = tls_lib_open(err, size);
	if (r < 0)
		return r;
	for (size_t i = 0; !r && i < ss->n; i++)
		for (size_t j = 0; !r && j < ss->v[i].n_hosts; j++)
			r = add_leaf_host(t, ss->v[i].hosts[j], err, size);
	/* An HTTP rule's host: terminated to read each request (docs/network.md). */
	for (size_t i = 0; !r && i < n_http; i++)
		r = add_leaf_host(t, http[i], err, size);
	if (r < 0)
		return r;
	r = new_key(&t->ca_key);
	if (!r)
		r = new_key(&t->leaf_key);
	if (!r)
		r = make_cert(t, &t->ca, NULL);
	for (size_t i = 0; !r && i < t->n_leaves; i++) {
		r = make_cert(t, &t->leaf_crt[i], t->leaf_host[i]);
		if (!r)
			r = tlslib.certificate_allocate_credentials(&t->leaf[i]);
		if (!r) {
			gnutls_x509_crt_t chain[2] = {t->leaf_crt[i], t->ca};

			r = tlslib.certificate_set_x509_key(t->leaf[i], chain, 2, t->leaf_key);
		}
	}
	if (!r)
		r = tlslib.x509_crt_export2(t->ca, GNUTLS_X509_FMT_PEM, &pem);
	if (r < 0) {
		snprintf(err, size, "secrets: cannot make the session CA: %s", tlslib.strerror(r));
		return -EIO;
	}
	t->ca_pem = strndup((char *)pem.data, pem.size);
	(*tlslib.free)(pem.data);
	if (!t->ca_pem)
		return -ENOMEM;
	return upstream_trust(t, err, size);
}

void eg_term_stop(struct egress *e)
{
	struct term *t = &e->term;

	for (size_t i = 0; i < t->n_leaves; i++) {
		if (t->leaf[i])
			tlslib.certificate_free_credentials(t->leaf[i]);
		if (t->leaf_crt[i])
			tlslib.x509_crt_deinit(t->leaf_crt[i]);
	}
	if (t->upstream)
		tlslib.certificate_free_credentials(t->upstream);
	if (t->ca)
		tlslib.x509_crt_deinit(t->ca);
	if (t->ca_key)
		tlslib.x509_privkey_deinit(t->ca_key);
	if (t->leaf_key)
		tlslib.x509_privkey_deinit(t->leaf_key);
	free(t->ca_pem);
	memset(t, 0, sizeof(*t));
}

const char *egress_ca_pem(const struct egress *e)
{
	return e ? e->term.ca_pem : NULL;
}

static gnutls_certificate_credentials_t leaf_for(const struct egress *e, const char *name)
{
	for (size_t i = 0; i < e->term.n_leaves; i++)
		if (!strcasecmp(e->term.leaf_host[i], name))
			return e->term.leaf[i];
	return NULL;
}

bool eg_term_wanted(const struct egress *e, const char *name, uint16_t port)
{
	return port == 443 && leaf_for(e, name);
}

/* ---- one terminated connection ---------------------------------------- */

struct term_conn {
	struct conn *c;
	const char *name;
	const uint8_t *addr;
	uint16_t port;
	/* The last request allowed, its record written when the answer starts. */
	struct eg_request req;
	bool req_open;
	bool request_refused; /* the connection ended on a request no rule allowed */
	char req_injected[BPFBOX_NET_RULE_LEN]; /* the secrets put into it */
	gnutls_session_t tool, server;
	struct http_frame f;
	uint64_t out, in;
	char injected[BPFBOX_NET_RULE_LEN]; /* the secrets' names put in, "A,B" */
	char why[BPFBOX_NET_RULE_LEN];
};

static int send_all(gnutls_session_t s, const void *p, size_t n)
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

static void note_injected(struct term_conn *t, const char *name)
{
	size_t rn = strlen(t->req_injected);

	if (!strstr(t->req_injected, name))
		snprintf(t->req_injected + rn, sizeof(t->req_injected) - rn, "%s%s", rn ? "," : "",
			 name);
	size_t n = strlen(t->injected);
	char pat[80];

	snprintf(pat, sizeof(pat), ",%s,", name);
	if (n) {
		char have[BPFBOX_NET_RULE_LEN + 2];

		snprintf(have, sizeof(have), ",%s,", t->injected);
		if (strstr(have, pat))
			return;
	}
	snprintf(t->injected + n, sizeof(t->injected) - n, "%s%s", n ? "," : "", name);
}

/*
 * The head (len bytes) with each placeholder of this host's secrets
 * replaced in its header lines (not the request line) into out: its
 * length, or -1 (why set) when it does not fit.
 */
static ssize_t inject(struct term_conn *t, const uint8_t *head, size_t len, char *out, size_t size)
{
	const struct egress_secrets *ss = t->c->e->o.secrets;
	const uint8_t *line_end = memmem(head, len, "\r\n", 2);
	size_t i = line_end ? (size_t)(line_end - head) : len, o = 0;

	if (i > size)
		goto big;
	memcpy(out, head, i);
	o = i;
	while (i < len) {
		const struct egress_secret *hit = NULL;

		for (size_t k = 0; ss && k < ss->n && !hit; k++) {
			size_t pl = strlen(ss->v[k].placeholder);

			if (eg_secret_for_host(&ss->v[k], t->name) && i + pl <= len &&
			    !memcmp(head + i, ss->v[k].placeholder, pl))
				hit = &ss->v[k];
		}
		if (hit) {
			if (o + hit->len > size)
				goto big;
			memcpy(out + o, hit->value, hit->len);
			o += hit->len;
			i += strlen(hit->placeholder);
			note_injected(t, hit->name);
			continue;
		}
		if (o + 1 > size)
			goto big;
		out[o++] = head[i++];
	}
	return o;
big:
	snprintf(t->why, sizeof(t->why), "a request head too long with its secrets");
	return -1;
}

/* The bytes cleared by the framing (body) go on; then dropped from f. */
static int flush_ok(struct term_conn *t, size_t extra)
{
	struct http_frame *f = &t->f;
	const struct egress_secret *s = eg_secret_in(t->c->e, f->buf, f->ok, t->name);

	if (s) {
		snprintf(t->why, sizeof(t->why), "placeholder of secret %.40s for another host",
			 s->name);
		return -EACCES;
	}
	if (f->ok && send_all(t->server, f->buf, f->ok) < 0)
		return -EPIPE;
	t->out += f->ok;
	memmove(f->buf, f->buf + f->ok + extra, f->len - f->ok - extra);
	f->len -= f->ok + extra;
	f->ok = 0;
	return 0;
}

/* The open request's record (net.request), with the status seen or none. */
static void request_done(struct term_conn *t, uint16_t status)
{
	if (!t->req_open)
		return;
	if (t->req_injected[0])
		snprintf(t->req.reason, sizeof(t->req.reason), "secrets injected: %.60s",
			 t->req_injected);
	t->req.status = status;
	eg_emit_request(t->c->e, &t->c->o, true, t->name, t->addr, t->port, &t->req);
	t->req_open = false;
}

/* A request judged: refused, its record now (403); allowed, once its answer starts. */
static void request_judged(struct term_conn *t, const struct http_head *h, const char *rule,
			   bool allow)
{
	request_done(t, 0); /* a request sent before the last one was answered */
	memset(&t->req, 0, sizeof(t->req));
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
	t->req_injected[0] = '\0';
}

/* The server's bytes: the first status line after a request completes its record. */
static void answer_seen(struct term_conn *t, const char *p, size_t n)
{
	if (!t->req_open)
		return;
	if (n >= 12 && !memcmp(p, "HTTP/1.", 7) && p[8] == ' ' && isdigit((unsigned char)p[9]) &&
	    isdigit((unsigned char)p[10]) && isdigit((unsigned char)p[11]))
		request_done(t, (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
	else
		request_done(t, 0);
}

/* A head of the tool's: the same host, no other secret, placeholders replaced. */
static int one_head(struct term_conn *t, const struct http_head *h, size_t hl)
{
	struct http_frame *f = &t->f;
	const uint8_t *head = f->buf + f->ok;
	const struct egress_secret *s;
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
	s = eg_secret_in(t->c->e, head, hl, t->name);
	if (s) {
		snprintf(t->why, sizeof(t->why), "placeholder of secret %.40s for another host",
			 s->name);
		return -EACCES;
	}
	out = malloc(HEAD_OUT_MAX);
	if (!out)
		return -ENOMEM;
	n = inject(t, head, hl, out, HEAD_OUT_MAX);
	if (n < 0)
		return -EPROTO;
	if (send_all(t->server, out, n) < 0)
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
		if (send_all(t->tool, buf, n) < 0)
			return 0;
		t->in += n;
	}
	return r;
}

static void blocking(int fd)
{
	struct timeval tv = {.tv_sec = HANDSHAKE_MS / 1000};

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	/* A peer that stops reading or writing mid-record ends the connection. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/*
 * Long (61 lines) because it is one sequence in order: TLS to the server
 * (verified first: nothing reaches the tool from a server not verified),
 * TLS with the tool, the relay, the record.
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
	r = session_for(&t->server, GNUTLS_CLIENT, e->term.upstream, c->up);
	if (!r) {
		r = tlslib.server_name_set(t->server, GNUTLS_NAME_DNS, name, strlen(name));
		tlslib.session_set_verify_cert(t->server, name, 0);
	}
	if (!r)
		r = handshake(t->server);
	if (r < 0) {
		snprintf(t->why, sizeof(t->why), "upstream TLS: %s", tlslib.strerror(r));
		eg_reset(c->fd);
		goto out;
	}
	r = session_for(&t->tool, GNUTLS_SERVER, leaf_for(e, name), c->fd);
	if (!r)
		r = handshake(t->tool);
	if (r < 0) {
		snprintf(t->why, sizeof(t->why), "the tool refused the session CA (pinned?): %s",
			 tlslib.strerror(r));
		goto out;
	}
	r = relay(t);
	if (r == -EACCES || r == -EPROTO) {
		char resp[1024];
		size_t n =
			eg_format_403(resp, sizeof(resp), r == -EACCES ? name : NULL, port, t->why);

		send_all(t->tool, resp, n);
	}
	/* A refused request is its own record: the connection was allowed. */
	allow = r >= 0 || r == -EPIPE || t->request_refused;
	request_done(t, 0);
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
