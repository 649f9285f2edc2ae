// SPDX-License-Identifier: GPL-2.0
/*
 * Prometheus metrics of the daemon (docs/operating.md). A tiny HTTP/1.0
 * server in the daemon's epoll loop: each connection reads one request
 * (bounded size and time), gets one response and is closed. Rendering reads
 * the daemon's state at scrape time; only the counters below are kept.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "metrics_internal.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../probe/probe.h"
#include "../lib/log.h"
#include "../lib/util.h"

const double metrics_buckets[NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
					  0.01,	  0.025,   0.05,   0.1,	  0.25,	  1.0};
const char *const metrics_ops[NOPS] = {"register",  "attach", "unregister", "list",
				       "subscribe", "ping",   "pause",	    "resume",
				       "kill",	    "answer", "other"};
#define METRICS_LAYER_NAME(e, n) n,
const char *const metrics_layers[NLAYERS] = {BPFBOX_LAYER_NAMES(METRICS_LAYER_NAME) "unknown"};
const char *const metrics_decisions[NDEC] = {"allow", "deny", "none"};

/* --- counters ----------------------------------------------------------- */

void metrics_count_event(struct metrics *m, const struct audit_event *ev)
{
	int dec = ev->decision == AUDIT_DECISION_DENY	 ? DEC_DENY
		  : ev->decision == AUDIT_DECISION_ALLOW ? DEC_ALLOW
							 : DEC_NONE;

	if (m && ev->kind >= 0 && ev->kind < EV_KINDS)
		m->events[ev->kind][dec]++;
}

/* The index of name in names[0..n - 1); n - 1 ("unknown", "other") when none. */
static size_t index_or_last(const char *const *names, size_t n, const char *name)
{
	int i = name ? name_index(names, n - 1, name) : -1;

	return i < 0 ? n - 1 : (size_t)i;
}

void metrics_count_denial(struct metrics *m, const char *layer)
{
	if (m)
		m->denials[index_or_last(metrics_layers, NLAYERS, layer)]++;
}

void metrics_observe_request(struct metrics *m, const char *op, uint64_t ns)
{
	double s = ns / 1e9;
	size_t i = index_or_last(metrics_ops, NOPS, op);

	if (!m)
		return;
	m->req_count[i]++;
	m->req_sum[i] += s;
	for (size_t b = 0; b < NBUCKETS; b++)
		if (s <= metrics_buckets[b])
			m->req_bucket[i][b]++;
}

void metrics_count_reload(struct metrics *m, bool ok)
{
	if (m) {
		if (ok)
			m->reloads_ok++;
		else
			m->reloads_failed++;
	}
}

void metrics_probe(struct metrics *m)
{
	if (m)
		m->probed = probe_host(&m->caps, PROBE_ALL) == 0;
}

/* --- HTTP --------------------------------------------------------------- */

static void mconn_close(struct metrics *m, struct mconn *c)
{
	if (c->fd >= 0) {
		epoll_ctl(m->d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void respond(struct metrics *m, struct mconn *c, int code, const char *reason,
		    const char *type, const char *body, size_t len)
{
	struct jsonw o = {0};

	jsonw_printf(&o,
		     "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n",
		     code, reason, type, len);
	jsonw_append(&o, body, len);
	if (o.oom) {
		free(o.buf);
		mconn_close(m, c);
		return;
	}
	c->out = o.buf;
	c->out_len = o.len;
	c->out_off = 0;
}

static void handle_request(struct metrics *m, struct mconn *c)
{
	char method[8] = "", path[256] = "";
	char *body;
	size_t len;

	if (sscanf(c->req, "%7s %255s", method, path) != 2) {
		respond(m, c, 400, "Bad Request", "text/plain", "bad request\n", 12);
		return;
	}
	if (!streq(method, "GET") && !streq(method, "HEAD")) {
		respond(m, c, 405, "Method Not Allowed", "text/plain", "use GET\n", 8);
		return;
	}
	path[strcspn(path, "?")] = 0;
	if (streq(path, "/healthz")) {
		/* Served from the event loop: an answer means the loop runs. */
		respond(m, c, 200, "OK", "text/plain", "ok\n", 3);
	} else if (streq(path, "/metrics")) {
		body = metrics_render(m, &len);
		if (!body) {
			respond(m, c, 500, "Internal Server Error", "text/plain", "out of memory\n",
				14);
			return;
		}
		respond(m, c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
		free(body);
	} else {
		respond(m, c, 404, "Not Found", "text/plain", "try /metrics or /healthz\n", 25);
	}
	if (streq(method, "HEAD") && c->out) {
		char *end = memmem(c->out, c->out_len, "\r\n\r\n", 4);

		if (end)
			c->out_len = end + 4 - c->out;
	}
}

static void mconn_write(struct metrics *m, struct mconn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};

			epoll_ctl(m->d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
			return;
		}
		if (n <= 0)
			break;
		c->out_off += n;
	}
	mconn_close(m, c);
}

static void mconn_read(struct metrics *m, struct mconn *c)
{
	for (;;) {
		ssize_t n =
			recv(c->fd, c->req + c->req_len, REQ_MAX - 1 - c->req_len, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			mconn_close(m, c);
			return;
		}
		c->req_len += n;
		c->req[c->req_len] = 0;
		if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
			handle_request(m, c);
			if (c->out)
				mconn_write(m, c);
			return;
		}
		if (c->req_len >= REQ_MAX - 1) {
			respond(m, c, 431, "Request Header Fields Too Large", "text/plain",
				"request too large\n", 18);
			mconn_write(m, c);
			return;
		}
	}
}

static void accept_all(struct metrics *m)
{
	uint64_t now = now_ns();

	for (;;) {
		int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct mconn *c = NULL;
		struct epoll_event ev = {.events = EPOLLIN};

		if (fd < 0)
			return;
		/* A slot; a stalled client past its time gives its own up. */
		for (int i = 0; i < MCONN_MAX && !c; i++)
			if (m->c[i].fd < 0)
				c = &m->c[i];
		for (int i = 0; i < MCONN_MAX && !c; i++)
			if (now - m->c[i].since > REQ_TIMEOUT_NS) {
				mconn_close(m, &m->c[i]);
				c = &m->c[i];
			}
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->since = now;
		ev.data.ptr = c;
		if (epoll_ctl(m->d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			mconn_close(m, c);
	}
}

bool metrics_owns(const struct metrics *m, const void *ptr)
{
	return m &&
	       (ptr == m || (ptr >= (const void *)m->c && ptr < (const void *)(m->c + MCONN_MAX)));
}

void metrics_on_event(struct daemon *d, void *ptr, uint32_t events)
{
	struct metrics *m = d->metrics;
	struct mconn *c = ptr;

	if (ptr == m) {
		accept_all(m);
		return;
	}
	if (c->fd < 0)
		return;
	if (c->out)
		mconn_write(m, c);
	else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		mconn_read(m, c);
}

/* "host:port", "[v6]:port" or ":port" -> a bound, listening socket. */
static int listen_addr(const char *addr, char *err, size_t err_size)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char host[128], *port;
	int fd = -1, r, one = 1;

	if (strlen(addr) >= sizeof(host)) {
		snprintf(err, err_size, "too long");
		return -EINVAL;
	}
	snprintf(host, sizeof(host), "%s", addr);
	port = strrchr(host, ':');
	if (!port || !port[1]) {
		snprintf(err, err_size, "give HOST:PORT, [IPV6]:PORT or :PORT");
		return -EINVAL;
	}
	*port++ = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (r) {
		snprintf(err, err_size, "%s", gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		r = -errno;
		snprintf(err, err_size, "%s", strerror(-r));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return r;
	}
	freeaddrinfo(res);
	return fd;
}

int metrics_open(struct daemon *d, const char *addr)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct epoll_event ev = {.events = EPOLLIN};
	char err[256] = "";
	int r;

	if (!m)
		return log_error_errno(ENOMEM, "out of memory");
	for (int i = 0; i < MCONN_MAX; i++)
		m->c[i].fd = -1;
	m->d = d;
	snprintf(m->addr, sizeof(m->addr), "%s", addr);
	r = listen_addr(addr, err, sizeof(err));
	if (r < 0) {
		free(m);
		log_error("--metrics %s: %s; see docs/operating.md", addr, err);
		return r;
	}
	m->listen_fd = r;
	ev.data.ptr = m;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, m->listen_fd, &ev) < 0) {
		r = -errno;
		close(m->listen_fd);
		free(m);
		return log_error_errno(r, "--metrics %s: epoll", addr);
	}
	m->stats_fd = -1;
	if (d->o->bpf_stats) {
		m->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (m->stats_fd < 0)
			log_warn_errno(m->stats_fd,
				       "--bpf-stats: the kernel does not count program "
				       "run time; bpfbox_bpf_program_* stay 0");
	}
	metrics_probe(m);
	d->metrics = m;
	dlog("metrics on http://%s/metrics", addr);
	return 0;
}

void metrics_close(struct metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < MCONN_MAX; i++)
		if (m->c[i].fd >= 0)
			mconn_close(m, &m->c[i]);
	fd_close(&m->listen_fd);
	fd_close(&m->stats_fd);
	free(m);
}
