// SPDX-License-Identifier: GPL-2.0
/*
 * Plain HTTP through the proxy (docs/network.md): the name of a request
 * (its Host), and every request of a keep-alive connection judged, not only
 * the first. The client's bytes are framed request by request (the head,
 * then a body by its Content-Length or its chunks); a request that cannot
 * be framed beyond doubt (two Hosts, two lengths, a length with chunks, a
 * bare CR or LF, a folded header...) ends the connection instead of going
 * on. The server's bytes are spliced as before.
 */
#include "egress_internal.h"

bool eg_http_method(const uint8_t *p, size_t len)
{
	size_t i = 0, t;

	/* Servers skip empty lines before a request: so does the check. */
	while (i < len && (p[i] == '\r' || p[i] == '\n' || p[i] == ' ' || p[i] == '\t'))
		i++;
	for (t = i; t < len && ((p[t] >= 'A' && p[t] <= 'Z') || p[t] == '-' || p[t] == '_'); t++)
		;
	if (t - i > 20)
		return false;
	/* Any method (TRACE, PROPFIND...), or what may still become one. */
	return t == len || (t > i && p[t] == ' ');
}

/* The Host header's name (no port) of a request head; 1, 0 none, -1 incomplete. */
int eg_http_host(const uint8_t *p, size_t len, char *out, size_t size)
{
	const char *s = (const char *)p, *end = memmem(p, len, "\r\n\r\n", 4), *line;

	if (!end)
		return len >= PEEK_MAX ? 0 : -1;
	for (line = memchr(s, '\n', end - s); line && line < end;
	     line = memchr(line + 1, '\n', end - line - 1)) {
		const char *v = line + 1;
		size_t n = 0;

		if (end - v < 5 || strncasecmp(v, "host:", 5))
			continue;
		v += 5;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (v + n < end && v[n] != '\r' && v[n] != ':' && n + 1 < size) {
			out[n] = tolower((unsigned char)v[n]);
			n++;
		}
		out[n] = '\0';
		return n > 0;
	}
	return 0;
}

/* The proxy's own answer: status, a text body (bl bytes, cut to body's size), close. */
static size_t answer(char *buf, size_t size, const char *status, const char *body, int bl,
		     size_t body_size)
{
	int hl;

	if (bl >= (int)body_size)
		bl = body_size - 1;
	hl = snprintf(buf, size,
		      "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
		      status, bl, body);
	return hl < (int)size ? (size_t)hl : size - 1;
}

size_t eg_format_403(char *buf, size_t size, const char *name, uint16_t port, const char *why)
{
	char body[512];
	int bl;

	/* A request no HTTP rule allows: the rule that would ("no HTTP rule for M P"). */
	if (name && !strncmp(why, "no HTTP rule for ", 17))
		bl = snprintf(body, sizeof(body),
			      "bpfbox: request %s to %s port %u denied. To allow it, add "
			      "--net-allow '%s:%u %s' to the session.\n",
			      why + 17, name, port, name, port, why + 17);
	/* Only a name no rule allows can be allowed: a net_deny or rebinding stays. */
	else if (name && !strcmp(why, "no net_allow rule"))
		bl = snprintf(body, sizeof(body),
			      "bpfbox: egress to %s port %u denied (%s). To allow it, add "
			      "--net-allow %s:%u to the session.\n",
			      name, port, why, name, port);
	else if (name)
		bl = snprintf(body, sizeof(body),
			      "bpfbox: egress to %s port %u denied (%s): not allowed by policy.\n",
			      name, port, why);
	else
		bl = snprintf(body, sizeof(body), "bpfbox: request refused (%s).\n", why);
	return answer(buf, size, name ? "403 Forbidden" : "400 Bad Request", body, bl,
		      sizeof(body));
}

/* name NULL: a request no rule could allow (not framable), a 400. */
void eg_send_403(int fd, const char *name, uint16_t port, const char *why)
{
	char buf[1024];
	size_t n = eg_format_403(buf, sizeof(buf), name, port, why);

	(void)!write(fd, buf, n);
}

/* The tool's answer when bpfbox could not reach or verify NAME's server. */
size_t eg_format_502(char *buf, size_t size, const char *name, const char *why)
{
	char body[512];
	int bl = snprintf(body, sizeof(body),
			  "bpfbox: %s's server could not be verified (%s); nothing was sent to "
			  "it.\n",
			  name, why);

	return answer(buf, size, "502 Bad Gateway", body, bl, sizeof(body));
}

/* The name of a Host value or a target's authority: lower case, no port. */
static void host_name(const char *v, size_t n, char *out, size_t size)
{
	size_t i = 0;

	if (n && v[0] == '[') {
		const char *close = memchr(v, ']', n);

		n = close ? (size_t)(close - v) + 1 : n;
	} else {
		const char *colon = memchr(v, ':', n);

		n = colon ? (size_t)(colon - v) : n;
	}
	for (; i < n && i + 1 < size; i++)
		out[i] = tolower((unsigned char)v[i]);
	out[i] = '\0';
}

static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* One header line (name: value); -1 with *why when it is not framable. */
static int head_field(struct http_head *h, const char *l, size_t n, int *hosts, const char **why)
{
	const char *colon = memchr(l, ':', n), *v;
	size_t nl, vl;

	*why = "a malformed header";
	if (!colon || colon == l)
		return -1;
	nl = colon - l;
	for (size_t i = 0; i < nl; i++)
		if (!is_tchar(l[i]))
			return -1; /* "Name :" or a folded line */
	v = colon + 1;
	vl = l + n - v;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	if (nl == 4 && !strncasecmp(l, "host", 4)) {
		*why = "two Host headers";
		if (++*hosts > 1)
			return -1;
		host_name(v, vl, h->host, sizeof(h->host));
	} else if (nl == 14 && !strncasecmp(l, "content-length", 14)) {
		*why = "a Content-Length that is not one number";
		if (h->has_length || !vl || vl > 15 || strspn(v, "0123456789") < vl)
			return -1;
		h->has_length = true;
		h->length = strtoull(v, NULL, 10);
	} else if (nl == 17 && !strncasecmp(l, "transfer-encoding", 17)) {
		*why = "a Transfer-Encoding other than chunked";
		if (h->chunked || vl != 7 || strncasecmp(v, "chunked", 7))
			return -1;
		h->chunked = true;
	} else if (nl == 7 && !strncasecmp(l, "upgrade", 7)) {
		*why = "a protocol upgrade (not judged after it)";
		return -1;
	}
	return 0;
}

/*
 * Whether a segment of path is "." or "..", alone or before a ';' (servers
 * that take matrix parameters read "..;" as ".."): the server's path would
 * not be the one judged.
 */
static bool dot_segment(const char *path)
{
	for (const char *s = path; s; s = strchr(s + 1, '/')) {
		const char *seg = s + 1;
		size_t dots = strspn(seg, ".");

		if ((dots == 1 || dots == 2) &&
		    (seg[dots] == '\0' || seg[dots] == '/' || seg[dots] == ';'))
			return true;
	}
	return false;
}

/*
 * The method and the path of the request line (s..sp1 the method, the
 * target up to sp2), for the HTTP rules: the path without its query or
 * fragment. A path the server could read otherwise than the rule does
 * (a "." or ".." segment, an encoded '.', '/' or backslash, a backslash) or too
 * long to keep whole is marked bad: no rule matches it.
 */
static void request_path(struct http_head *h, const char *s, const char *sp1, const char *sp2)
{
	const char *t = sp1 + 1, *sch = memmem(t, sp2 - t, "://", 3), *end;
	size_t n;

	snprintf(h->method, sizeof(h->method), "%.*s", (int)(sp1 - s), s);
	if (sch) {
		t = memchr(sch + 3, '/', sp2 - sch - 3);
		t = t ? t : sp2;
	}
	end = t;
	while (end < sp2 && *end != '?' && *end != '#')
		end++;
	n = end - t;
	if (n == 0) {
		snprintf(h->path, sizeof(h->path), "/");
		return;
	}
	if (n >= sizeof(h->path)) {
		h->path_bad = true;
		return;
	}
	memcpy(h->path, t, n);
	h->path[n] = '\0';
	h->path_bad = h->path[0] != '/' || strchr(h->path, '\\') || strcasestr(h->path, "%2e") ||
		      strcasestr(h->path, "%2f") || strcasestr(h->path, "%5c") ||
		      strstr(h->path, "%00") || dot_segment(h->path);
}

/*
 * A request head (len bytes, through its blank line) into h; -1 with *why
 * when it cannot be framed beyond doubt.
 */
int eg_http_head(const uint8_t *p, size_t len, struct http_head *h, const char **why)
{
	const char *s = (const char *)p, *end = s + len - 2, *l, *sp1, *sp2;
	int hosts = 0;

	memset(h, 0, sizeof(*h));
	*why = "a bare CR, LF or NUL in the request head";
	for (size_t i = 0; i < len; i++)
		if (!p[i] || (p[i] == '\r' && (i + 1 == len || p[i + 1] != '\n')) ||
		    (p[i] == '\n' && (i == 0 || p[i - 1] != '\r')))
			return -1;
	l = memchr(s, '\r', len);
	sp1 = memchr(s, ' ', l - s);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', l - sp1 - 1) : NULL;
	*why = "a malformed request line";
	if (!sp1 || !sp2 || sp1 == s || sp2 == sp1 + 1 || l - sp2 - 1 != 8 ||
	    (strncmp(sp2 + 1, "HTTP/1.1", 8) && strncmp(sp2 + 1, "HTTP/1.0", 8)) ||
	    memchr(sp2 + 1, ' ', l - sp2 - 1))
		return -1;
	h->connect = sp1 - s == 7 && !strncmp(s, "CONNECT", 7);
	request_path(h, s, sp1, sp2);
	/*
	 * Any target but "/..." and "*" names a host, which a server prefers
	 * to Host: "scheme://host[:port]/..." (http, https, any) or "host:port".
	 */
	if (sp1[1] != '/' && sp1[1] != '*') {
		const char *a = sp1 + 1, *slash, *colon, *sch = memmem(a, sp2 - a, "://", 3);
		size_t n;

		if (sch)
			a = sch + 3;
		slash = memchr(a, '/', sp2 - a);
		n = (slash ? slash : sp2) - a;
		host_name(a, n, h->target, sizeof(h->target));
		colon = memrchr(a, ':', n);
		h->target_port = 80;
		if (colon && !memchr(colon, ']', a + n - colon))
			h->target_port = atoi(colon + 1);
		else if (sch && sch - sp1 == 6 && !strncasecmp(sp1 + 1, "https", 5))
			h->target_port = 443;
	}
	for (l += 2; l < end;) {
		const char *e = memchr(l, '\r', end - l + 1);

		if (head_field(h, l, e - l, &hosts, why) < 0)
			return -1;
		l = e + 2;
	}
	*why = "both Content-Length and chunked";
	return h->chunked && h->has_length ? -1 : 0;
}

enum { ST_HEAD, ST_BODY, ST_SIZE, ST_DATA, ST_DATA_END, ST_TRAILER };

/* After a head judged: what follows it. */
void eg_http_body(struct http_frame *f, const struct http_head *h)
{
	f->st = h->chunked ? ST_SIZE : h->length ? ST_BODY : ST_HEAD;
	f->left = h->length;
}

/* The line from f->ok; its length with the CRLF, 0 if incomplete, -1 bad. */
static ssize_t frame_line(struct http_frame *f)
{
	const uint8_t *p = f->buf + f->ok, *lf = memchr(p, '\n', f->len - f->ok);

	if (!lf)
		return f->len - f->ok > 1024 ? -1 : 0;
	if (lf == p || lf[-1] != '\r' || memchr(p, '\r', lf - 1 - p))
		return -1;
	return lf + 1 - p;
}

/*
 * Advances f->ok (the bytes cleared to go upstream) over what the framing
 * allows. HTTP_MORE: more bytes wanted; HTTP_HEAD: a complete head of
 * *head_len bytes at f->ok, parsed into h, to judge (then eg_http_body and
 * f->ok += *head_len); HTTP_BAD: not framable (*why).
 */
int eg_http_advance(struct http_frame *f, struct http_head *h, size_t *head_len, const char **why)
{
	for (;;) {
		size_t avail = f->len - f->ok, n;
		const uint8_t *end;
		ssize_t l;

		if (!avail)
			return HTTP_MORE;
		switch (f->st) {
		case ST_HEAD:
			end = memmem(f->buf + f->ok, avail, "\r\n\r\n", 4);
			/* Up to the head's end only: a body may hold any byte. */
			n = end ? (size_t)(end - f->buf) : f->len;
			*why = "a bare CR, LF or NUL in the request head";
			for (size_t i = f->ok; i < n; i++)
				if (!f->buf[i] ||
				    (f->buf[i] == '\n' && (i == f->ok || f->buf[i - 1] != '\r')))
					return HTTP_BAD;
			*why = "a request head too long";
			if (!end)
				return avail >= sizeof(f->buf) - 1 ? HTTP_BAD : HTTP_MORE;
			*head_len = end + 4 - (f->buf + f->ok);
			return eg_http_head(f->buf + f->ok, *head_len, h, why) < 0 ? HTTP_BAD
										   : HTTP_HEAD;
		case ST_BODY:
		case ST_DATA:
			n = avail < f->left ? avail : f->left;
			f->ok += n;
			f->left -= n;
			if (!f->left)
				f->st = f->st == ST_BODY ? ST_HEAD : ST_DATA_END;
			break;
		case ST_DATA_END:
			*why = "a chunk without its CRLF";
			if (avail < 2)
				return HTTP_MORE;
			if (memcmp(f->buf + f->ok, "\r\n", 2))
				return HTTP_BAD;
			f->ok += 2;
			f->st = ST_SIZE;
			break;
		case ST_SIZE:
		case ST_TRAILER:
			l = frame_line(f);
			*why = "a malformed chunk";
			if (l <= 0)
				return l < 0 ? HTTP_BAD : HTTP_MORE;
			if (f->st == ST_TRAILER) {
				f->st = l == 2 ? ST_HEAD : ST_TRAILER;
			} else {
				char *e;

				n = strspn((char *)f->buf + f->ok, "0123456789abcdefABCDEF");
				if (!n || n > 15 ||
				    (f->buf[f->ok + n] != '\r' && f->buf[f->ok + n] != ';'))
					return HTTP_BAD;
				f->left = strtoull((char *)f->buf + f->ok, &e, 16);
				f->st = f->left ? ST_DATA : ST_TRAILER;
			}
			f->ok += l;
			break;
		}
	}
}

/*
 * The client's side of a relay: approved bytes sent upstream, then more
 * read and framed, each new head judged. 0 to go on, 1 when the client has
 * ended and its requests went upstream whole, -EACCES when judge refused a
 * request, -EPROTO when one cannot be framed, -EPIPE on an error.
 */
static int client_step(struct conn *c, struct http_frame *f, http_judge_fn judge, void *arg,
		       uint64_t *out, char *why, size_t size)
{
	const struct egress_secret *sec;
	struct http_head h;
	const char *w;
	size_t hl;
	ssize_t n;
	int a;

	if (f->ok) {
		n = send(c->up, f->buf, f->ok, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -EPIPE;
		memmove(f->buf, f->buf + n, f->len - n);
		f->len -= n;
		f->ok -= n;
		*out += n;
		if (f->ok)
			return 0;
	}
	if (f->len == sizeof(f->buf)) {
		snprintf(why, size, "a request that cannot be framed");
		return -EPROTO;
	}
	n = recv(c->fd, f->buf + f->len, sizeof(f->buf) - f->len, MSG_DONTWAIT);
	if (n == 0) {
		/* A request cut short is not sent on. */
		shutdown(c->up, SHUT_WR);
		return 1;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -EPIPE;
	f->len += n;
	/* Plain HTTP is never a secret's way: a placeholder in it is a leak, cut or not. */
	sec = eg_secret_in_flow(c->e, &f->tail, f->buf + f->len - n, n, NULL);
	if (sec) {
		snprintf(why, size, "placeholder of secret %.40s in a plain HTTP request",
			 sec->name);
		eg_emit(c->e, &c->o, false,
			c->o.kind == BPFBOX_ORIG_EXPLICIT ? BPFBOX_NET_CONNECT : BPFBOX_NET_TCP,
			c->o.kind == BPFBOX_ORIG_EXPLICIT ? HOW_CONNECT : HOW_HOST, "", c->o.addr,
			c->o.port, "", why, 0, 0);
		return -EACCES;
	}
	for (;;) {
		a = eg_http_advance(f, &h, &hl, &w);
		if (a == HTTP_MORE)
			return 0;
		if (a == HTTP_BAD) {
			snprintf(why, size, "not framable: %s", w);
			return -EPROTO;
		}
		if (!judge(c, &h, arg, why, size))
			return -EACCES;
		eg_http_body(f, &h);
		f->ok += hl;
	}
}

ssize_t eg_http_read_head(struct egress *e, int fd, char *buf, size_t size)
{
	size_t len = 0;

	while (len + 1 < size) {
		ssize_t n = eg_peek(e, fd, (uint8_t *)buf + len, size - 1 - len, UPSTREAM_MS);
		char *end;

		if (n <= 0)
			return -1;
		buf[len + n] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			/* Consume exactly the head; the body stays in the socket. */
			size_t want = end + 4 - buf;

			if (recv(fd, buf + len, want - len, 0) != (ssize_t)(want - len))
				return -1;
			buf[want] = '\0';
			return want;
		}
		if (recv(fd, buf + len, n, 0) != n)
			return -1;
		len += n;
	}
	return -1;
}

int eg_relay_http(struct conn *c, struct http_frame *f, http_judge_fn judge, void *arg,
		  uint64_t *out, uint64_t *in, char *why, size_t size)
{
	struct egress *e = c->e;
	struct dir back = {.src = c->up, .dst = c->fd, .pipe = {-1, -1}, .count = in};
	bool broken = false, ended = false;
	int r = 0;

	if (pipe2(back.pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	fcntl(c->up, F_SETFL, fcntl(c->up, F_GETFL) | O_NONBLOCK);
	/* Until the server is done (or a request is refused, or it idles). */
	while (!broken && !back.done && r >= 0) {
		struct pollfd p[3];
		int np = 0, rc;

		if (!ended)
			p[np++] = f->ok ? (struct pollfd){.fd = c->up, .events = POLLOUT}
					: (struct pollfd){.fd = c->fd, .events = POLLIN};
		p[np++] = back.pending ? (struct pollfd){.fd = c->fd, .events = POLLOUT}
				       : (struct pollfd){.fd = c->up, .events = POLLIN};
		p[np++] = (struct pollfd){.fd = e->stop_pipe[0], .events = POLLIN};
		rc = poll(p, np, e->idle_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0 || p[np - 1].revents)
			break;
		if (!ended) {
			r = client_step(c, f, judge, arg, out, why, size);
			ended = r == 1;
		}
		if (r >= 0)
			eg_step(&back, &broken);
	}
	close(back.pipe[0]);
	close(back.pipe[1]);
	return r < 0 && r != -EPIPE ? r : 0;
}
