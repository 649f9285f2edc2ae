// SPDX-License-Identifier: GPL-2.0
/*
 * The session's TCP proxy (docs/network.md): the original destination from
 * net_orig, the name from the TLS SNI, the HTTP Host or an HTTP CONNECT,
 * the verdict, then both directions spliced.
 */
#include "egress_internal.h"

/* ---- TCP ---------------------------------------------------------------- */

/* Closes with a reset: the tool sees a refused connection. */
void eg_reset(int fd)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static int connect_upstream(struct egress *e, const uint8_t addr[16], uint16_t port)
{
	struct sockaddr_storage ss = {0};
	struct pollfd pfd = {.events = POLLOUT};
	socklen_t len;
	int fd, err = 0, one = 1;

	if (eg_is_mapped(addr)) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, addr + 12, 4);
		len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, addr, 16);
		len = sizeof(*s6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS)
		goto fail;
	pfd.fd = fd;
	if (poll(&pfd, 1, UPSTREAM_MS) != 1) {
		errno = ETIMEDOUT;
		goto fail;
	}
	len = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err) {
		errno = err;
		goto fail;
	}
	(void)e;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

ssize_t eg_peek(struct egress *e, int fd, uint8_t *buf, size_t size, int ms)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
			      {.fd = e->stop_pipe[0], .events = POLLIN}};

	if (poll(p, 2, ms) <= 0 || p[1].revents)
		return 0;
	return recv(fd, buf, size, MSG_PEEK);
}

/*
 * A transparent connection: the tool connected to the address it wanted.
 * Long (106 lines) because it is one sequence told in order: the original
 * destination, the first bytes (SNI or Host), the verdict and its record,
 * the upstream connect, the splice; each step ends the connection on error.
 */
/*
 * A tool silent for FIRST_DATA_MS: whether it speaks before the server
 * does (1) or not (0), so that its first bytes are judged after all: a tool that
 * waited must not pass a ClientHello or a request unread.
 */
static int tool_speaks_first(struct conn *c)
{
	struct pollfd p[3] = {{.fd = c->fd, .events = POLLIN},
			      {.fd = c->up, .events = POLLIN},
			      {.fd = c->e->stop_pipe[0], .events = POLLIN}};

	/* Both silent for the idle timeout, or the proxy stops: it ends (-1). */
	if (poll(p, 3, c->e->idle_ms) <= 0 || p[2].revents)
		return -1;
	return !p[1].revents && (p[0].revents & POLLIN);
}

/*
 * Whether a transparent connection may go on: its name (from the wire, or
 * the one the resolver answered its address for) allowed and resolved by
 * the session. Else why (and the rule) say why not.
 */
static bool judge_transparent(struct conn *c, int how, char *name, size_t size, char *rule,
			      char *why, size_t why_size)
{
	struct egress *e = c->e;
	uint16_t port = c->o.port;

	if (how != HOW_ADDR && eg_secret_name_leak(e, name, why, why_size)) {
		rule[0] = '\0';
		return false;
	}
	if (how != HOW_ADDR) {
		/* The name asked for must be one the resolver gave this address for. */
		if (!eg_judge_ask(e, name, port, false, rule)) {
			snprintf(why, why_size, "%s", rule[0] ? "net_deny" : "no net_allow rule");
			return false;
		}
		if (!eg_cache_has(e, name, c->o.addr, NULL, 0)) {
			snprintf(why, why_size, "address not resolved for %s by the session", name);
			return false;
		}
	} else {
		/* No name on the wire: one the resolver answered this address for. */
		if (!eg_cache_has(e, NULL, c->o.addr, name, size)) {
			snprintf(why, why_size, "address not resolved by the session");
			rule[0] = '\0';
			return false;
		}
		if (!eg_judge(e, name, NULL, port, false, rule)) {
			snprintf(why, why_size, "%s", rule[0] ? "net_deny" : "no net_allow rule");
			return false;
		}
	}
	if (eg_forbidden(e, c->o.addr)) {
		snprintf(why, why_size, "address not reachable by name");
		return false;
	}
	return true;
}

/* The later requests of a plain HTTP connection, judged as the first was. */
struct req_judge {
	const char *first;		   /* the connection's name, judged */
	char last[BPFBOX_NET_NAME_LEN];	   /* another one allowed since */
	char refused[BPFBOX_NET_NAME_LEN]; /* the one refused */
	uint16_t port;
	bool quiet; /* HTTP_PROXY: another host; closed for the tool to reconnect */
	bool bad;   /* refused for its form, not its name: a 400 */
};

/*
 * A plain HTTP request of name:port against its HTTP rules (port 80), each
 * a net.request record: allowed, with its rule (no status or bytes: the
 * answers of a plain connection are spliced, not read); refused, a deny
 * (403) and why says why.
 */
static bool request_allowed(struct conn *c, const char *name, uint16_t port,
			    const struct http_head *h, char *why, size_t size)
{
	struct eg_request q = {0};
	bool allow = eg_request_ok(c->e, name, port, h, q.rule, why, size);

	/* Allowed by no HTTP rule ("HOST:80 METHODS PATH"): not judged by request, no record. */
	if (allow && !strchr(q.rule, ' '))
		return true;
	q.status = allow ? 0 : 403;
	snprintf(q.method, sizeof(q.method), "%s", h->method);
	snprintf(q.path, sizeof(q.path), "%s", h->path_bad ? "(unjudged)" : h->path);
	snprintf(q.reason, sizeof(q.reason), "%s", allow ? "" : why);
	eg_emit_request(c->e, &c->o, allow, name, c->o.addr, port, &q);
	return allow;
}

static bool judge_request(struct conn *c, const struct http_head *h, void *arg, char *why,
			  size_t size)
{
	struct req_judge *j = arg;
	char name[BPFBOX_NET_NAME_LEN], rule[BPFBOX_NET_RULE_LEN] = "";

	snprintf(name, sizeof(name), "%s",
		 h->host[0]	? h->host
		 : h->target[0] ? h->target
				: j->first);
	j->bad = h->connect || (h->target[0] && strcmp(h->target, name));
	if (h->connect)
		snprintf(why, size, "CONNECT sent to a server, not to the proxy");
	else if (j->bad)
		snprintf(why, size, "the request target and Host name two hosts");
	else if (streq(name, j->first) || streq(name, j->last))
		goto request;
	else if (judge_transparent(c, HOW_HOST, name, sizeof(name), rule, why, size)) {
		eg_emit(c->e, &c->o, true, BPFBOX_NET_TCP, HOW_HOST, name, c->o.addr, j->port, rule,
			"", 0, 0);
		snprintf(j->last, sizeof(j->last), "%s", name);
		goto request;
	}
	snprintf(j->refused, sizeof(j->refused), "%s", name);
	eg_emit(c->e, &c->o, false, BPFBOX_NET_TCP, HOW_HOST, name, c->o.addr, j->port, rule, why,
		0, 0);
	return false;
request:
	/* The host allowed: its HTTP rules judge the request itself. */
	if (request_allowed(c, name, j->port, h, why, size))
		return true;
	snprintf(j->refused, sizeof(j->refused), "%s", name);
	return false;
}

/*
 * A plain HTTP connection after its first request was judged: every
 * request framed and judged (http.c). -EACCES, -EPROTO: the tool gets a 403
 * and the connection ends.
 */
static int relay_http(struct conn *c, http_judge_fn judge, struct req_judge *j,
		      const struct http_head *first, uint64_t *out, uint64_t *in, char *why,
		      size_t size)
{
	_cleanup_free_ struct http_frame *f = calloc(1, sizeof(*f));
	int r;

	if (!f)
		return -ENOMEM;
	if (first)
		eg_http_body(f, first);
	r = eg_relay_http(c, f, judge, j, out, in, why, size);
	if (r == -EPROTO)
		eg_emit(c->e, &c->o, false,
			c->o.kind == BPFBOX_ORIG_EXPLICIT ? BPFBOX_NET_CONNECT : BPFBOX_NET_TCP,
			c->o.kind == BPFBOX_ORIG_EXPLICIT ? HOW_CONNECT : HOW_HOST, j->first,
			c->o.addr, j->port, "", why, 0, 0);
	if ((r == -EPROTO || r == -EACCES) && !j->quiet)
		eg_send_403(c->fd,
			    r == -EPROTO || j->bad ? NULL
			    : j->refused[0]	   ? j->refused
						   : j->first,
			    j->port, why);
	return r;
}

static void serve_transparent(struct conn *c)
{
	struct egress *e = c->e;
	char name[BPFBOX_NET_NAME_LEN] = "", rule[BPFBOX_NET_RULE_LEN] = "";
	char why[BPFBOX_NET_RULE_LEN];
	_cleanup_free_ uint8_t *buf = malloc(PEEK_MAX);
	uint64_t out = 0, in = 0;
	uint16_t port = c->o.port;
	bool http = false;
	ssize_t seen;
	int how, first;

	if (!buf)
		return;
	how = eg_sniff_name(c, buf, name, sizeof(name), &http, &seen);
	if (seen < 0 || !judge_transparent(c, how, name, sizeof(name), rule, why, sizeof(why)))
		goto deny;
	c->up = connect_upstream(e, c->o.addr, port);
	if (c->up < 0) {
		snprintf(why, sizeof(why), "upstream: %s", strerror(-c->up));
		eg_emit(e, &c->o, false, BPFBOX_NET_TCP, how, name, c->o.addr, port, rule, why, 0,
			0);
		eg_reset(c->fd);
		return;
	}
	if (!seen && (first = tool_speaks_first(c)) < 0) {
		eg_emit(e, &c->o, true, BPFBOX_NET_TCP, how, name, c->o.addr, port, rule, "", 0, 0);
		return;
	}
	if (!seen && first) {
		how = eg_sniff_name(c, buf, name, sizeof(name), &http, &seen);
		if (seen < 0 ||
		    ((how != HOW_ADDR || http) &&
		     !judge_transparent(c, how, name, sizeof(name), rule, why, sizeof(why))))
			goto deny;
	}
	if (how == HOW_SNI && eg_term_wanted(e, name, port)) {
		eg_term_serve(c, name, c->o.addr, port, BPFBOX_NET_TCP, how, rule);
		return;
	}
	/* No SNI, nor plain HTTP read request by request: an HTTP rule's requests unread. */
	if (!http && name[0] && eg_http_judged(e, name, port)) {
		snprintf(why, sizeof(why), "%s",
			 how == HOW_SNI && port == 443 ? HTTP_RULES_NO_LEAF : HTTP_RULES_UNREAD);
		goto deny;
	}
	if (!http && seen > 0 && eg_secret_leak(e, buf, seen, "the first bytes", why, sizeof(why)))
		goto deny;
	if (http) {
		struct req_judge j = {.first = name, .port = port};

		if (relay_http(c, judge_request, &j, NULL, &out, &in, why, sizeof(why)) < 0 && !out)
			return; /* the first request refused: its record is made */
	} else {
		eg_splice_both(e, c->fd, c->up, &out, &in);
	}
	eg_emit(e, &c->o, true, BPFBOX_NET_TCP, how, name, c->o.addr, port, rule, "", out, in);
	return;
deny:
	if (seen < 0)
		snprintf(why, sizeof(why), "a TLS ClientHello not read whole in time");
	eg_emit(e, &c->o, false, BPFBOX_NET_TCP, how, name, c->o.addr, port, rule, why, 0, 0);
	if (http)
		eg_send_403(c->fd, name[0] ? name : "this host", port, why);
	else
		eg_reset(c->fd);
}

/*
 * The tool used HTTP_PROXY: CONNECT host:port, or METHOD http://host[:port]/...
 * Long (94 lines) for the same reason as serve_transparent: one sequence in
 * order (the request head, the name, the verdict, resolve, connect, splice).
 */
/*
 * The name of a proxy request allowed and resolved, and none of its
 * addresses one the session may not reach by name (rebinding). *addr is
 * the address to use, or the forbidden one; why says why not.
 */
static bool judge_explicit(struct egress *e, const char *name, unsigned long port, char *rule,
			   char *why, size_t why_size, uint8_t addrs[16][16], uint8_t **addr)
{
	size_t n = 0;

	rule[0] = '\0';
	if (eg_secret_name_leak(e, name, why, why_size))
		return false;
	/* An address: its rules decide, as the kernel's allow-list would. */
	if (eg_literal_addr(name, addrs[0])) {
		*addr = addrs[0];
		if (eg_forbidden(e, addrs[0])) {
			snprintf(why, why_size, "%s is an address the proxy never reaches", name);
			return false;
		}
		if (!eg_judge(e, NULL, addrs[0], port, false, rule)) {
			snprintf(why, why_size, "%s", rule[0] ? "net_deny" : "no net_allow rule");
			return false;
		}
		return true;
	}
	if (!eg_judge_ask(e, name, port, false, rule)) {
		snprintf(why, why_size, "%s", rule[0] ? "net_deny" : "no net_allow rule");
		return false;
	}
	if (eg_resolve(e, name, addrs, 16, &n) < 0) {
		snprintf(why, why_size, "%s does not resolve", name);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (eg_forbidden(e, addrs[i])) {
			snprintf(why, why_size,
				 "rebinding: %s resolves to an address not "
				 "reachable by name",
				 name);
			*addr = addrs[i];
			return false;
		}
	}
	*addr = addrs[0];
	return true;
}

/* CONNECT: the tunnel is up; else the request again in origin form upstream. */
static int forward_head(struct conn *c, bool tunnel, char *head, const char *method,
			const char *path, const char *version)
{
	if (tunnel) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		(void)!write(c->fd, ok, sizeof(ok) - 1);
	} else {
		/* The request again in origin form: METHOD /path VERSION, then the rest. */
		char *rest = strstr(head, "\r\n");
		char line[2100];
		int ll = snprintf(line, sizeof(line), "%s %s%s %s", method, path ? "/" : "/",
				  path ? path + 1 : "", version);

		if (write(c->up, line, ll) != ll ||
		    (rest && write(c->up, rest, strlen(rest)) != (ssize_t)strlen(rest)))
			return -1;
	}
	return 0;
}

/*
 * A later request on a connection to the proxy (HTTP_PROXY) goes to the
 * server of the first: only for the same host and port. Another one ends
 * the connection without an answer; the tool asks again on a new one,
 * which serve_explicit judges.
 */
static bool judge_proxied(struct conn *c, const struct http_head *h, void *arg, char *why,
			  size_t size)
{
	struct req_judge *j = arg;
	const char *name = h->target[0] ? h->target : h->host;

	if (!h->connect && streq(name, j->first) && (!h->host[0] || streq(h->host, j->first)) &&
	    (h->target[0] ? h->target_port : j->port) == j->port) {
		if (request_allowed(c, j->first, j->port, h, why, size))
			return true;
		j->quiet = false; /* the tool gets the 403 naming the rule */
		return false;
	}
	snprintf(why, size, "another host on a connection to %s", j->first);
	return false;
}

/* long: one sequence in order: the head, the name, the verdict, resolve, connect, then
 * the tunnel (or TLS terminated for a secret) or the requests */
static void serve_explicit(struct conn *c)
{
	struct egress *e = c->e;
	char head[8192], name[BPFBOX_NET_NAME_LEN] = "", rule[BPFBOX_NET_RULE_LEN] = "";
	char why[BPFBOX_NET_RULE_LEN], method[16], target[2048], version[16];
	uint8_t addrs[16][16], *addr = NULL;
	uint64_t out = 0, in = 0;
	unsigned long port = 80;
	ssize_t len = eg_http_read_head(e, c->fd, head, sizeof(head));
	struct req_judge j = {.first = name, .quiet = true};
	struct http_head hh;
	const char *w = "";
	bool tunnel;
	char *h, *colon, *path = NULL;

	if (len < 0 || sscanf(head, "%15s %2047s %15s", method, target, version) != 3) {
		eg_reset(c->fd);
		return;
	}
	tunnel = streq(method, "CONNECT");
	if (tunnel) {
		h = target;
		port = 443;
	} else if (!strncasecmp(target, "http://", 7)) {
		h = target + 7;
		path = strchr(h, '/');
	} else {
		snprintf(why, sizeof(why), "not a proxy request");
		eg_send_403(c->fd, "this host", 0, why);
		eg_emit(e, &c->o, false, BPFBOX_NET_CONNECT, HOW_CONNECT, "", NULL, 0, "", why, 0,
			0);
		return;
	}
	if (path)
		*path = '\0';
	colon = strrchr(h, ':');
	if (colon) {
		*colon = '\0';
		port = strtoul(colon + 1, NULL, 10);
	}
	for (size_t i = 0; h[i] && i + 1 < sizeof(name); i++) {
		name[i] = tolower((unsigned char)h[i]);
		name[i + 1] = '\0';
	}
	if (port == 0 || port > 65535) {
		snprintf(why, sizeof(why), "bad port");
		goto deny;
	}
	j.port = port;
	/* The origin server sees the Host header: it must name the same host. */
	if (!tunnel && (eg_http_head((uint8_t *)head, len, &hh, &w) < 0 ||
			(hh.host[0] && !streq(hh.host, name)))) {
		snprintf(why, sizeof(why), "%s", hh.host[0] ? "Host names another host" : w);
		goto deny;
	}
	if (!judge_explicit(e, name, port, rule, why, sizeof(why), addrs, &addr))
		goto deny;
	if (eg_secret_leak(e, head, len, "a proxy request", why, sizeof(why)))
		goto deny;
	/* A tunnel to a host HTTP rules judge is terminated, or its requests go unread. */
	if (tunnel && eg_http_judged(e, name, port) && !eg_term_wanted(e, name, port)) {
		snprintf(why, sizeof(why), "%s",
			 port == 443 ? HTTP_RULES_NO_LEAF : HTTP_RULES_UNREAD);
		goto deny;
	}
	if (!tunnel && !request_allowed(c, name, port, &hh, why, sizeof(why))) {
		eg_send_403(c->fd, name, port, why);
		return;
	}
	c->up = connect_upstream(e, addr, port);
	if (c->up < 0) {
		snprintf(why, sizeof(why), "upstream: %s", strerror(-c->up));
		goto deny;
	}
	if (forward_head(c, tunnel, head, method, path, version) < 0) {
		eg_reset(c->fd);
		return;
	}
	if (tunnel && eg_term_wanted(e, name, port)) {
		eg_term_serve(c, name, addr, port, BPFBOX_NET_CONNECT, HOW_CONNECT, rule);
		return;
	}
	if (tunnel)
		eg_splice_both(e, c->fd, c->up, &out, &in);
	else
		relay_http(c, judge_proxied, &j, &hh, &out, &in, why, sizeof(why));
	eg_emit(e, &c->o, true, BPFBOX_NET_CONNECT, HOW_CONNECT, name, addr, port, rule, "", out,
		in);
	return;
deny:
	eg_emit(e, &c->o, false, BPFBOX_NET_CONNECT, HOW_CONNECT, name, addr, port, rule, why, 0,
		0);
	eg_send_403(c->fd, name[0] ? name : "this host", port, why);
}

void *eg_conn_thread(void *arg)
{
	struct conn *c = arg;
	struct egress *e = c->e;

	if (c->o.kind == BPFBOX_ORIG_EXPLICIT)
		serve_explicit(c);
	else
		serve_transparent(c);
	close(c->fd);
	if (c->up >= 0)
		close(c->up);
	free(c);
	eg_worker_done(e, true);
	return NULL;
}
