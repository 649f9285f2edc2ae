// SPDX-License-Identifier: GPL-2.0
/*
 * HTTP/2 on a terminated connection (docs/network.md, "Per-request
 * rules"): when the tool and the server both chose h2 (tls_term.c's ALPN),
 * nghttp2 speaks it on both sides, as the server to the tool and as a
 * client to the server. Each of the tool's streams is one request: judged
 * by the HTTP rules as an HTTP/1.1 request is; refused, it gets a 403 on
 * its stream and the others go on; allowed, it goes out on a stream of the
 * server's with its headers' placeholders replaced, and is recorded
 * (net.request) when its stream closes. Bodies pass as DATA held to the
 * peers' flow-control windows: a window is given back only for the bytes
 * the other side has taken, so each direction holds at most a window.
 */
/* long: one relay whose nghttp2 callbacks share one stream table, both sessions' */
#include "h2lib.h"
#include "term_internal.h"
#include "../lib/buf.h"

#define H2_WINDOW      (1024 * 1024) /* each stream's receive window, both sides */
#define H2_CONN_WINDOW (1024 * 1024)
#define H2_STREAMS     100   /* the tool's concurrent streams */
#define H2_HEAD_MAX    65536 /* a header block's names and values */
#define H2_NV_MAX      128
#define H2_OUT	       (4 * 16384)  /* bytes of frames sent at once: four full TLS records */
#define H2_FEED	       (16 * 16384) /* bytes taken from one side before the other's turn */

struct h2_hdrs {
	nghttp2_nv nv[H2_NV_MAX];
	size_t n, bytes;
	bool over; /* past H2_NV_MAX or H2_HEAD_MAX: refused */
};

/* One direction of a stream: its headers, its body not yet taken, its trailers. */
struct h2_dir {
	struct h2_stream *s;
	bool from_up; /* the server's answer (else the tool's request) */
	bool own;     /* bpfbox's own answer (a 403): nothing to give back */
	bool end;
	struct h2_hdrs hd, tr;
	struct buf body; /* within the peer's window: bounded (docs/SECURITY.md) */
};

struct h2_stream {
	struct h2_stream *next;
	int32_t tid, uid; /* the tool's stream, the server's (0: none) */
	bool tool_closed, up_closed, refused, recorded;
	struct h2_dir rq, rs;
	struct eg_request req;
	char injected[BPFBOX_NET_RULE_LEN];
	struct eg_tail tail; /* of the request's body: a placeholder cut between frames */
};

struct h2c {
	struct term_conn *t;
	nghttp2_session *tool, *up;
	struct h2_stream *streams;
	int err;	     /* -EACCES: a placeholder for another host (t->why) */
	uint8_t out[H2_OUT]; /* frames gathered for one send */
	struct h2_in {
		int fd;
		size_t off, len;
		uint8_t b[H2_OUT];
	} in[2]; /* the tool's bytes read ahead, the server's */
};

static void hdrs_clear(struct h2_hdrs *h)
{
	for (size_t i = 0; i < h->n; i++) {
		explicit_bzero(h->nv[i].value, h->nv[i].valuelen);
		free(h->nv[i].name);
		free(h->nv[i].value);
	}
	h->n = h->bytes = 0;
}

/* A copy of name: value (value already replaced) at the end of h. */
static void hdrs_add(struct h2_hdrs *h, const uint8_t *name, size_t nl, const char *value,
		     size_t vl)
{
	nghttp2_nv *nv = &h->nv[h->n];

	if (h->over || h->n == H2_NV_MAX || h->bytes + nl + vl > H2_HEAD_MAX) {
		h->over = true;
		return;
	}
	nv->name = malloc(nl + 1);
	nv->value = malloc(vl + 1);
	if (!nv->name || !nv->value) {
		free(nv->name);
		free(nv->value);
		h->over = true;
		return;
	}
	memcpy(nv->name, name, nl);
	memcpy(nv->value, value, vl);
	nv->name[nl] = nv->value[vl] = '\0';
	nv->namelen = nl;
	nv->valuelen = vl;
	nv->flags = NGHTTP2_NV_FLAG_NONE;
	h->bytes += nl + vl;
	h->n++;
}

static const char *hdrs_get(const struct h2_hdrs *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp((char *)h->nv[i].name, name))
			return (char *)h->nv[i].value;
	return NULL;
}

static size_t hdrs_count(const struct h2_hdrs *h, const char *name)
{
	size_t k = 0;

	for (size_t i = 0; i < h->n; i++)
		k += !strcmp((char *)h->nv[i].name, name);
	return k;
}

/* The stream's record, once: allowed when its stream closes (or the connection ends). */
static void record(struct h2c *h, struct h2_stream *s)
{
	struct term_conn *t = h->t;

	if (s->recorded || s->refused || !s->req.method[0])
		return;
	s->recorded = true;
	if (s->injected[0] && !s->req.reason[0])
		snprintf(s->req.reason, sizeof(s->req.reason), "secrets injected: %.60s",
			 s->injected);
	eg_emit_request(t->c->e, &t->c->o, true, t->name, t->addr, t->port, &s->req);
}

static void stream_free(struct h2c *h, struct h2_stream *s)
{
	for (struct h2_stream **p = &h->streams; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	hdrs_clear(&s->rq.hd);
	hdrs_clear(&s->rq.tr);
	hdrs_clear(&s->rs.hd);
	hdrs_clear(&s->rs.tr);
	buf_free(&s->rq.body);
	buf_free(&s->rs.body);
	free(s);
}

/*
 * A direction's body for its peer's session: what the other side sent
 * (its window given back as it goes), then the end, with the trailers
 * when there are.
 */
static ssize_t h2_read(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t length,
		       uint32_t *flags, nghttp2_data_source *src, void *user)
{
	struct h2_dir *d = src->ptr;
	struct h2c *h = user;
	size_t n = buf_used(&d->body) < length ? buf_used(&d->body) : length;

	if (n) {
		memcpy(buf, d->body.p + d->body.off, n);
		buf_consume(&d->body, n);
		if (!d->own)
			h2lib.session_consume(d->from_up ? h->up : h->tool,
					      d->from_up ? d->s->uid : d->s->tid, n);
	}
	if (buf_used(&d->body) || !d->end)
		return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (d->tr.n) {
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		h2lib.submit_trailer(ss, id, d->tr.nv, d->tr.n);
		hdrs_clear(&d->tr);
	}
	return n;
}

static nghttp2_data_provider provider(struct h2_dir *d)
{
	return (nghttp2_data_provider){.source.ptr = d, .read_callback = h2_read};
}

/* The 403 on the tool's stream, its body naming the rule to add; the record now. */
static void refuse(struct h2c *h, struct h2_stream *s, const char *why)
{
	struct term_conn *t = h->t;
	char resp[1024], len[16];
	size_t n = eg_format_403(resp, sizeof(resp), t->name, 443, why);
	size_t blen;
	char *body = memmem(resp, n, "\r\n\r\n", 4);
	nghttp2_data_provider prd = provider(&s->rs);
	nghttp2_nv nv[3] = {
		{(uint8_t *)":status", (uint8_t *)"403", 7, 3, 0},
		{(uint8_t *)"content-type", (uint8_t *)"text/plain", 12, 10, 0},
		{(uint8_t *)"content-length", (uint8_t *)len, 14, 0, 0},
	};

	s->refused = s->up_closed = s->rs.own = s->rs.end = true;
	body = body ? body + 4 : resp + n;
	blen = buf_append(&s->rs.body, body, resp + n - body) < 0 ? 0 : resp + n - body;
	nv[2].valuelen = snprintf(len, sizeof(len), "%zu", blen);
	h2lib.submit_response(h->tool, s->tid, nv, 3, &prd);
	snprintf(s->req.reason, sizeof(s->req.reason), "%s", why);
	s->req.rule[0] = '\0';
	s->req.status = 403;
	eg_emit_request(t->c->e, &t->c->o, false, t->name, t->addr, t->port, &s->req);
	t->request_refused = true;
}

/*
 * The request's verdict, as HTTP/1.1's: its line and Host made into a head
 * and framed by http.c (the same path rules, dot segments refused), the
 * same host only, then the HTTP rules; rule the one that allowed it.
 */
static bool judge(struct h2c *h, struct h2_stream *s, char *rule, char *why, size_t size)
{
	struct term_conn *t = h->t;
	const char *m = hdrs_get(&s->rq.hd, ":method"), *p = hdrs_get(&s->rq.hd, ":path"),
		   *a = hdrs_get(&s->rq.hd, ":authority"), *w;
	const char *host = hdrs_get(&s->rq.hd, "host");
	_cleanup_free_ char *head = NULL;
	struct http_head hh;
	int n;

	if (!a)
		a = host;
	snprintf(s->req.method, sizeof(s->req.method), "%s", m ? m : "?");
	snprintf(s->req.path, sizeof(s->req.path), "(unjudged)");
	if (s->rq.hd.over) {
		snprintf(why, size, "a request's headers over %d bytes", H2_HEAD_MAX);
		return false;
	}
	if (!m || !p || !a) {
		snprintf(why, size, "an HTTP/2 request without :method, :path or :authority");
		return false;
	}
	/* Within the header block's bound (H2_HEAD_MAX), so never too long to frame. */
	n = asprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", m, p, a);
	if (n < 0) {
		head = NULL;
		snprintf(why, size, "out of memory");
		return false;
	}
	if (eg_http_head((uint8_t *)head, n, &hh, &w) < 0) {
		snprintf(why, size, "not framable: %s", w);
		return false;
	}
	snprintf(s->req.path, sizeof(s->req.path), "%s", hh.path_bad ? "(unjudged)" : hh.path);
	/* One name only: a server may route by either. */
	if (hdrs_count(&s->rq.hd, ":authority") + hdrs_count(&s->rq.hd, "host") > 1 &&
	    (hdrs_count(&s->rq.hd, "host") > 1 || strcasecmp(a, host))) {
		snprintf(why, size, "an HTTP/2 request whose :authority and host differ");
		return false;
	}
	if (strcasecmp(hh.host, t->name) || (hh.target[0] && strcasecmp(hh.target, t->name))) {
		snprintf(why, size, "a request for another host on this connection");
		return false;
	}
	return eg_request_ok(t->c->e, t->name, 443, &hh, rule, why, size);
}

/* The tool's request headers ended (eos: no body): refused, or on to the server. */
static void request_headers(struct h2c *h, struct h2_stream *s, bool eos)
{
	char rule[BPFBOX_NET_RULE_LEN], why[BPFBOX_NET_RULE_LEN];
	nghttp2_data_provider prd = provider(&s->rq);

	if (!judge(h, s, rule, why, sizeof(why))) {
		refuse(h, s, why);
		hdrs_clear(&s->rq.hd);
		return;
	}
	snprintf(s->req.rule, sizeof(s->req.rule), "%s", rule);
	s->rq.end = eos;
	s->uid = h2lib.submit_request(h->up, NULL, s->rq.hd.nv, s->rq.hd.n, eos ? NULL : &prd, s);
	hdrs_clear(&s->rq.hd);
	if (s->uid < 0) {
		s->uid = 0;
		s->up_closed = true;
		h2lib.submit_rst_stream(h->tool, NGHTTP2_FLAG_NONE, s->tid, NGHTTP2_REFUSED_STREAM);
	}
}

/* The server's headers ended: a 1xx, the answer's (eos: no body), or its trailers. */
static void answer_headers(struct h2c *h, struct h2_stream *s, bool eos)
{
	const char *st = hdrs_get(&s->rs.hd, ":status");
	nghttp2_data_provider prd = provider(&s->rs);

	/* Cut at the bound, it would reach the tool short of headers: reset instead. */
	if (s->rs.hd.over) {
		snprintf(s->req.reason, sizeof(s->req.reason),
			 "the server's header block over %d bytes", H2_HEAD_MAX);
		h2lib.submit_rst_stream(h->tool, NGHTTP2_FLAG_NONE, s->tid, NGHTTP2_INTERNAL_ERROR);
		h2lib.submit_rst_stream(h->up, NGHTTP2_FLAG_NONE, s->uid, NGHTTP2_CANCEL);
		hdrs_clear(&s->rs.hd);
		return;
	}
	if (!st) {
		struct h2_hdrs tr = s->rs.hd; /* trailers: sent when the body has gone */

		s->rs.hd = s->rs.tr;
		s->rs.tr = tr;
		s->rs.end = true;
		h2lib.session_resume_data(h->tool, s->tid);
	} else if (st[0] == '1') {
		h2lib.submit_headers(h->tool, NGHTTP2_FLAG_NONE, s->tid, NULL, s->rs.hd.nv,
				     s->rs.hd.n, NULL);
	} else {
		s->req.status = atoi(st);
		s->rs.end = eos;
		h2lib.submit_response(h->tool, s->tid, s->rs.hd.nv, s->rs.hd.n, eos ? NULL : &prd);
	}
	hdrs_clear(&s->rs.hd);
}

static struct h2_stream *stream_of(nghttp2_session *ss, int32_t id)
{
	return id > 0 ? h2lib.session_get_stream_user_data(ss, id) : NULL;
}

static int on_begin_headers(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
	struct h2c *h = user;
	struct h2_stream *s;

	if (ss != h->tool || f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->tid = f->hd.stream_id;
	s->rq.s = s->rs.s = s;
	s->rs.from_up = true;
	s->next = h->streams;
	h->streams = s;
	h2lib.session_set_stream_user_data(ss, s->tid, s);
	return 0;
}

/*
 * One header: the tool's checked for another host's placeholder and with
 * this host's replaced (":path" in its query only, other pseudo-headers
 * never); the server's as they are.
 */
static int on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name, size_t nl,
		     const uint8_t *value, size_t vl, uint8_t flags, void *user)
{
	struct h2c *h = user;
	struct term_conn *t = h->t;
	struct h2_stream *s = stream_of(ss, f->hd.stream_id);
	_cleanup_free_ char *big = NULL;
	char small[4096], *out = small;
	size_t size = sizeof(small);
	const struct egress_secret *leak;
	struct h2_dir *d;
	size_t o, at = 0;
	bool path = nl == 5 && !memcmp(name, ":path", 5);

	(void)flags;
	if (!s)
		return 0;
	d = ss == h->tool ? &s->rq : &s->rs;
	*(ss == h->tool ? &t->out : &t->in) += nl + vl;
	*(ss == h->tool ? &s->req.bytes_out : &s->req.bytes_in) += nl + vl;
	if (ss != h->tool) {
		hdrs_add(&d->hd, name, nl, (const char *)value, vl);
		return 0;
	}
	leak = eg_secret_in(t->c->e, name, nl, t->name);
	if (!leak)
		leak = eg_secret_in(t->c->e, value, vl, t->name);
	if (leak) {
		h->err = eg_term_leak(t, leak);
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	if (path) {
		const uint8_t *q = memchr(value, '?', vl);

		at = q ? (size_t)(q - value) + 1 : vl;
	} else if (nl && name[0] == ':') {
		at = vl;
	}
	/* Most values fit on the stack with their secrets; the others get the most a head may. */
	for (;;) {
		o = at < size ? at : 0;
		memcpy(out, value, o);
		if (o == at && eg_term_replace(t, value + at, vl - at, path, out, size, &o,
					       s->injected, sizeof(s->injected)))
			break;
		explicit_bzero(out, size);
		if (big || !(big = malloc(HEAD_OUT_MAX))) {
			d->hd.over = true;
			return 0;
		}
		out = big;
		size = HEAD_OUT_MAX;
	}
	hdrs_add(&d->hd, name, nl, out, o);
	explicit_bzero(out, o);
	return 0;
}

/* A header block or a body ended: on to the other side. */
static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
	struct h2c *h = user;
	struct h2_stream *s = stream_of(ss, f->hd.stream_id);
	bool eos = f->hd.flags & NGHTTP2_FLAG_END_STREAM, tool = ss == h->tool;
	struct h2_dir *d;

	if (!s || (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA))
		return 0;
	d = tool ? &s->rq : &s->rs;
	if (tool && f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
		request_headers(h, s, eos);
		return 0;
	}
	if (tool && s->refused)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS && !tool) {
		answer_headers(h, s, eos);
		return 0;
	}
	if (f->hd.type == NGHTTP2_HEADERS) { /* the tool's trailers */
		struct h2_hdrs tr = d->hd;

		d->hd = d->tr;
		d->tr = tr;
	}
	if (eos || f->hd.type == NGHTTP2_HEADERS) {
		d->end = true;
		h2lib.session_resume_data(tool ? h->up : h->tool, tool ? s->uid : s->tid);
	}
	return 0;
}

/* Body bytes: held for the other side (the tool's checked for another host's placeholder). */
static int on_data(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *p, size_t n,
		   void *user)
{
	struct h2c *h = user;
	struct term_conn *t = h->t;
	struct h2_stream *s = stream_of(ss, id);
	bool tool = ss == h->tool;
	const struct egress_secret *leak;

	(void)flags;
	*(tool ? &t->out : &t->in) += n;
	if (!s || (tool && s->refused) || (tool ? s->up_closed : s->tool_closed)) {
		h2lib.session_consume(ss, id, n);
		return 0;
	}
	leak = tool ? eg_secret_in_flow(t->c->e, &s->tail, p, n, t->name) : NULL;
	if (leak) {
		h->err = eg_term_leak(t, leak);
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	*(tool ? &s->req.bytes_out : &s->req.bytes_in) += n;
	if (buf_append(tool ? &s->rq.body : &s->rs.body, p, n) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	h2lib.session_resume_data(tool ? h->up : h->tool, tool ? s->uid : s->tid);
	return 0;
}

/*
 * A stream closed on one side: the other side's is cancelled when it is
 * still open (a server's reset reaches the tool with its code); the
 * request is recorded when the tool's closes, and freed when both have.
 */
static int on_close(nghttp2_session *ss, int32_t id, uint32_t code, void *user)
{
	struct h2c *h = user;
	struct h2_stream *s = stream_of(ss, id);

	if (!s)
		return 0;
	if (ss == h->tool) {
		s->tool_closed = true;
		if (!s->up_closed)
			h2lib.submit_rst_stream(h->up, NGHTTP2_FLAG_NONE, s->uid, NGHTTP2_CANCEL);
		record(h, s);
	} else {
		s->up_closed = true;
		if (code && !s->tool_closed)
			h2lib.submit_rst_stream(h->tool, NGHTTP2_FLAG_NONE, s->tid, code);
	}
	if (s->tool_closed && s->up_closed)
		stream_free(h, s);
	return 0;
}

/* Both sessions, their settings queued: 0, or -ENOMEM. */
static int sessions(struct h2c *h)
{
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_option *opt = NULL;
	nghttp2_settings_entry tool_set[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_STREAMS},
					     {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW}};
	nghttp2_settings_entry up_set[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
					   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW}};
	int r = -ENOMEM;

	if (h2lib.session_callbacks_new(&cb) || h2lib.option_new(&opt))
		goto out;
	h2lib.session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	h2lib.session_callbacks_set_on_header_callback(cb, on_header);
	h2lib.session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	h2lib.session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	h2lib.session_callbacks_set_on_stream_close_callback(cb, on_close);
	h2lib.option_set_no_auto_window_update(opt, 1);
	if (h2lib.session_server_new2(&h->tool, cb, h, opt) ||
	    h2lib.session_client_new2(&h->up, cb, h, opt))
		goto out;
	if (h2lib.submit_settings(h->tool, NGHTTP2_FLAG_NONE, tool_set, 2) ||
	    h2lib.submit_settings(h->up, NGHTTP2_FLAG_NONE, up_set, 2) ||
	    h2lib.session_set_local_window_size(h->tool, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) ||
	    h2lib.session_set_local_window_size(h->up, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW))
		goto out;
	r = 0;
out:
	if (cb)
		h2lib.session_callbacks_del(cb);
	if (opt)
		h2lib.option_del(opt);
	return r;
}

/*
 * What one session has to send, gathered into full TLS records (nghttp2
 * gives a frame at a time: each its own record and segment would wait on
 * the peer's delayed ACKs): 1 sent some, 0 none, < 0 an error.
 */
static int flush_one(struct h2c *h, nghttp2_session *ss, gnutls_session_t to)
{
	size_t o = 0;
	int sent = 0;

	for (;;) {
		const uint8_t *p;
		ssize_t n = h2lib.session_mem_send(ss, &p);

		if (n < 0)
			return -EPROTO;
		if (o && (!n || o + n > H2_OUT)) {
			/* Corked: the records of one send leave in one system call. */
			tlslib.record_cork(to);
			if (eg_term_send(to, h->out, o) < 0 ||
			    tlslib.record_uncork(to, GNUTLS_RECORD_WAIT) < 0)
				return -EPIPE;
			o = 0;
			sent = 1;
		}
		if (!n)
			return sent;
		if ((size_t)n > H2_OUT) {
			if (eg_term_send(to, p, n) < 0)
				return -EPIPE;
			sent = 1;
			continue;
		}
		memcpy(h->out + o, p, n);
		o += n;
	}
}

/*
 * What each session has to send, sent: 0, or < 0. Until neither has more:
 * one sending a body gives the other's peer its window back.
 */
static int flush(struct h2c *h)
{
	int a, b;

	do {
		a = flush_one(h, h->tool, h->t->tool);
		b = a < 0 ? 0 : flush_one(h, h->up, h->t->server);
	} while (a > 0 || b > 0);
	return a < 0 ? a : b;
}

/* One side's bytes into its session: 0, 1 it ended, < 0 an error. */
/*
 * A socket's bytes as the TLS library pulls them, read ahead: one recv()
 * brings several records (the library alone reads a record's header,
 * then its body, two calls a record).
 */
static ssize_t pull(gnutls_transport_ptr_t p, void *data, size_t size)
{
	struct h2_in *in = p;
	size_t n;

	if (in->off == in->len) {
		ssize_t got = recv(in->fd, in->b, sizeof(in->b), 0);

		if (got <= 0)
			return got;
		in->off = 0;
		in->len = got;
	}
	n = in->len - in->off < size ? in->len - in->off : size;
	memcpy(data, in->b + in->off, n);
	in->off += n;
	return n;
}

static bool pending(gnutls_session_t s, const struct h2_in *in)
{
	return in->off < in->len || tlslib.record_check_pending(s);
}

/* One side's records into its session while they are there: 0, 1 it ended, < 0 an error. */
static int feed(nghttp2_session *ss, gnutls_session_t from, const struct h2_in *in)
{
	uint8_t buf[16384];
	size_t fed = 0;

	do {
		ssize_t n = tlslib.record_recv(from, buf, sizeof(buf));

		if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
			return 0;
		if (n <= 0)
			return 1;
		if (h2lib.session_mem_recv(ss, buf, n) < 0)
			return -EPROTO;
		fed += n;
	} while (fed < H2_FEED && pending(from, in));
	return 0;
}

static bool live(nghttp2_session *ss)
{
	return h2lib.session_want_read(ss) || h2lib.session_want_write(ss);
}

/* Both ways until either side ends, the connection idles or bpfbox stops. */
static int relay(struct h2c *h)
{
	struct term_conn *t = h->t;
	struct egress *e = t->c->e;
	int r = 0;

	while (!r && !(r = flush(h)) && live(h->tool) && live(h->up)) {
		struct pollfd p[3] = {{.fd = t->c->fd, .events = POLLIN},
				      {.fd = t->c->up, .events = POLLIN},
				      {.fd = e->stop_pipe[0], .events = POLLIN}};
		bool pt = pending(t->tool, &h->in[0]), pu = pending(t->server, &h->in[1]);

		if (!pt && !pu) {
			int rc = poll(p, 3, e->idle_ms);

			if (rc < 0 && errno == EINTR)
				continue;
			if (rc <= 0 || p[2].revents)
				break;
		}
		if (pt || p[0].revents)
			r = feed(h->tool, t->tool, &h->in[0]);
		if (!r && (pu || p[1].revents))
			r = feed(h->up, t->server, &h->in[1]);
	}
	return r < 0 ? r : 0;
}

int eg_h2_relay(struct term_conn *t)
{
	_cleanup_free_ struct h2c *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return 0;
	h->t = t; /* both sockets TCP_NODELAY (tls_term.c): frames go out gathered */
	h->in[0].fd = t->c->fd;
	h->in[1].fd = t->c->up;
	/* From here both sessions read through pull(); they write to their sockets as before. */
	tlslib.transport_set_ptr2(t->tool, &h->in[0], (gnutls_transport_ptr_t)(long)t->c->fd);
	tlslib.transport_set_pull_function(t->tool, pull);
	tlslib.transport_set_ptr2(t->server, &h->in[1], (gnutls_transport_ptr_t)(long)t->c->up);
	tlslib.transport_set_pull_function(t->server, pull);
	r = sessions(h);
	if (!r)
		r = relay(h);
	if (h->err)
		r = h->err;
	if (h->tool) {
		h2lib.session_terminate_session(h->tool, r == -EACCES ? NGHTTP2_REFUSED_STREAM
							 : r	      ? NGHTTP2_PROTOCOL_ERROR
								      : NGHTTP2_NO_ERROR);
		flush(h);
	}
	while (h->streams) {
		record(h, h->streams);
		stream_free(h, h->streams);
	}
	if (h->tool)
		h2lib.session_del(h->tool);
	if (h->up)
		h2lib.session_del(h->up);
	return r == -EACCES ? r : 0;
}
