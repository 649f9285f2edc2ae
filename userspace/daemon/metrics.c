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

#include "internal.h"
#include "metrics.h"
#include "../agent/agent.h"
#include "../audit/sink.h"
#include "../probe/probe.h"
#include "../lib/log.h"
#include "../lib/util.h"

#ifndef BPFBOX_VERSION
#define BPFBOX_VERSION "0.0.0"
#endif

#define MCONN_MAX	16
#define REQ_MAX		2048
#define REQ_TIMEOUT_NS	(5ULL * 1000000000ULL)

/* Request durations by op; seconds. */
static const double buckets[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
				  0.01,	  0.025,   0.05,   0.1,	  0.25,	  1.0 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static const char *const ops[] = { "register", "attach", "unregister", "list", "subscribe",
				   "ping", "pause", "resume", "kill", "other" };
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static const char *const layers[] = { "landlock", "seccomp", "cgroup-bpf", "bpf-lsm", "kernel",
				      "unknown" };
#define NLAYERS (sizeof(layers) / sizeof(layers[0]))

enum { DEC_ALLOW, DEC_DENY, DEC_NONE, NDEC };
static const char *const decisions[NDEC] = { "allow", "deny", "none" };

struct mconn {
	int fd;		/* -1: free */
	uint64_t since;
	char req[REQ_MAX];
	size_t req_len;
	char *out;
	size_t out_len, out_off;
};

struct metrics {
	int listen_fd;
	struct daemon *d;
	char addr[128];
	struct mconn c[MCONN_MAX];
	uint64_t events[EV_KINDS][NDEC];
	uint64_t denials[NLAYERS];
	uint64_t req_count[NOPS], req_bucket[NOPS][NBUCKETS];
	double req_sum[NOPS];
	uint64_t reloads_ok, reloads_failed;
	uint64_t scrapes;
	bool probed;
	struct host_caps caps;
	int stats_fd;	/* BPF_ENABLE_STATS: run time counted while open; -1 */
};

/* --- counters ----------------------------------------------------------- */

void metrics_count_event(struct metrics *m, int kind, const char *line, size_t len)
{
	int dec = DEC_NONE;

	if (!m || kind < 0 || kind >= EV_KINDS)
		return;
	if (memmem(line, len, "\"decision\":\"deny\"", 17))
		dec = DEC_DENY;
	else if (memmem(line, len, "\"decision\":\"allow\"", 18))
		dec = DEC_ALLOW;
	m->events[kind][dec]++;
}

void metrics_count_denial(struct metrics *m, const char *layer)
{
	size_t i = 0;

	if (!m)
		return;
	while (i < NLAYERS - 1 && (!layer || !streq(layers[i], layer)))
		i++;
	m->denials[i]++;
}

void metrics_observe_request(struct metrics *m, const char *op, uint64_t ns)
{
	double s = ns / 1e9;
	size_t i = 0;

	if (!m)
		return;
	while (i < NOPS - 1 && (!op || !streq(ops[i], op)))
		i++;
	m->req_count[i]++;
	m->req_sum[i] += s;
	for (size_t b = 0; b < NBUCKETS; b++)
		if (s <= buckets[b])
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

/* --- rendering ---------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
	bool oom;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		/* No buffer yet: measure first (NULL + 0 is undefined). */
		n = o->buf ? vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap)
			   : vsnprintf(NULL, 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->oom = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += n;
			return;
		}
		size_t cap = o->cap ? o->cap * 2 : 16384;
		char *b;

		while (cap - o->len <= (size_t)n)
			cap *= 2;
		b = realloc(o->buf, cap);
		if (!b) {
			o->oom = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
}

/* A label value: backslash, quote and newline escaped (exposition format). */
static const char *lv(const char *s, char *buf, size_t size)
{
	size_t j = 0;

	for (; s && *s && j + 3 < size; s++) {
		if (*s == '\\' || *s == '"') {
			buf[j++] = '\\';
			buf[j++] = *s;
		} else if (*s == '\n') {
			buf[j++] = '\\';
			buf[j++] = 'n';
		} else {
			buf[j++] = *s;
		}
	}
	buf[j] = 0;
	return buf;
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_sessions(struct out *o, struct daemon *d)
{
	static const enum dsession_state states[] = { DS_REGISTERED, DS_RUNNING, DS_ADOPTED,
						      DS_ENDING, DS_PAUSED };
	static const char *const levels[] = { "None", "Minimal", "Standard", "Full", "" };
	uint64_t n[5][5] = { { 0 } };

	for (struct dsession *s = d->table.head; s; s = s->next) {
		size_t l = 0;

		while (l < 4 && !streq(levels[l], s->level))
			l++;
		for (size_t i = 0; i < 5; i++)
			if (states[i] == s->state)
				n[i][l]++;
	}
	head(o, "bpfbox_sessions", "gauge",
	     "Sessions the daemon holds, by state and enabled level (\"unknown\": re-adopted).");
	for (size_t i = 0; i < 5; i++)
		for (size_t l = 0; l < 5; l++)
			put(o, "bpfbox_sessions{state=\"%s\",level=\"%s\"} %llu\n",
			    dsession_state_name(states[i]), l < 4 ? levels[l] : "unknown",
			    (unsigned long long)n[i][l]);
}

static void render_events(struct out *o, struct metrics *m, struct daemon *d)
{
	head(o, "bpfbox_events_total", "counter",
	     "Audit events the daemon emitted, by type and decision (\"none\": no decision).");
	for (int k = 0; k < EV_KINDS; k++)
		for (int dec = 0; dec < NDEC; dec++) {
			bool rec = k == EV_EXEC || k == EV_EXIT || k == EV_FORK || k == EV_FILE ||
				   k == EV_CONNECT || k == EV_RENAME;

			if (rec == (dec == DEC_NONE))
				continue;
			put(o, "bpfbox_events_total{type=\"%s\",decision=\"%s\"} %llu\n",
			    ev_kind_name(k), decisions[dec], (unsigned long long)m->events[k][dec]);
		}
	head(o, "bpfbox_denials_total", "counter", "Denied operations, by the layer that denied.");
	for (size_t i = 0; i < NLAYERS; i++)
		put(o, "bpfbox_denials_total{layer=\"%s\"} %llu\n", layers[i],
		    (unsigned long long)m->denials[i]);
	head(o, "bpfbox_ring_lost_events_total", "counter",
	     "Records the kernel could not put in the ring buffer (every session).");
	put(o, "bpfbox_ring_lost_events_total %llu\n",
	    (unsigned long long)agent_lost_total(d->agent));
	head(o, "bpfbox_unknown_records_total", "counter",
	     "Records of no session the daemon knows, dropped.");
	put(o, "bpfbox_unknown_records_total %llu\n", (unsigned long long)d->unknown_records);
}

static void render_sinks(struct out *o, struct daemon *d)
{
	struct sink_stats st[64];
	size_t n = sinks_stats(d->sinks, st, 64);
	char a[SINK_NAME_MAX * 2], b[32];
	static const struct {
		const char *name, *type, *help;
	} series[] = {
		{ "bpfbox_sink_up", "gauge", "1 when the sink writes (a network sink: connected)." },
		{ "bpfbox_sink_queue_events", "gauge", "Events held in memory by the sink." },
		{ "bpfbox_sink_queue_bytes", "gauge", "Bytes held in memory by the sink." },
		{ "bpfbox_sink_dropped_events_total", "counter",
		  "Events the sink lost (bounds, write failures) since the daemon started." },
		{ "bpfbox_sink_retries_total", "counter",
		  "Failed writes or connections of the sink that are tried again." },
		{ "bpfbox_sink_spool_bytes", "gauge", "Bytes in the sink's spool on disk." },
		{ "bpfbox_sink_spool_events", "gauge", "Events in the sink's spool on disk." },
	};

	if (n > 64)
		n = 64;
	for (size_t k = 0; k < ARRAY_SIZE(series); k++) {
		head(o, series[k].name, series[k].type, series[k].help);
		for (size_t i = 0; i < n; i++) {
			uint64_t v[] = { st[i].up, st[i].queued, st[i].queued_bytes, st[i].dropped,
					 st[i].retries, st[i].spool_bytes, st[i].spool_records };

			put(o, "%s{sink=\"%s\",kind=\"%s\"} %llu\n", series[k].name,
			    lv(st[i].name, a, sizeof(a)), lv(st[i].kind, b, sizeof(b)),
			    (unsigned long long)v[k]);
		}
	}
}

static void render_requests(struct out *o, struct metrics *m)
{
	head(o, "bpfbox_request_duration_seconds", "histogram",
	     "Time the daemon took to answer a request on its socket, by op (register: the "
	     "session's setup).");
	for (size_t i = 0; i < NOPS; i++) {
		for (size_t b = 0; b < NBUCKETS; b++)
			put(o, "bpfbox_request_duration_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n",
			    ops[i], buckets[b], (unsigned long long)m->req_bucket[i][b]);
		put(o, "bpfbox_request_duration_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n", ops[i],
		    (unsigned long long)m->req_count[i]);
		put(o, "bpfbox_request_duration_seconds_sum{op=\"%s\"} %.9f\n", ops[i], m->req_sum[i]);
		put(o, "bpfbox_request_duration_seconds_count{op=\"%s\"} %llu\n", ops[i],
		    (unsigned long long)m->req_count[i]);
	}
}

struct prog_render {
	struct out *o;
	int pass;
};

static void prog_line(void *ctx, const struct agent_prog_stat *st)
{
	struct prog_render *r = ctx;
	char a[160];

	if (r->pass == 0)
		put(r->o, "bpfbox_bpf_program_run_seconds_total{program=\"%s\"} %.9f\n",
		    lv(st->name, a, sizeof(a)), st->run_time_ns / 1e9);
	else if (r->pass == 1)
		put(r->o, "bpfbox_bpf_program_runs_total{program=\"%s\"} %llu\n",
		    lv(st->name, a, sizeof(a)), (unsigned long long)st->run_cnt);
	else
		put(r->o, "bpfbox_bpf_program_recursion_misses_total{program=\"%s\"} %llu\n",
		    lv(st->name, a, sizeof(a)), (unsigned long long)st->recursion_misses);
}

static void render_programs(struct out *o, struct metrics *m, struct daemon *d)
{
	static const char *const names[][2] = {
		{ "bpfbox_bpf_program_run_seconds_total",
		  "Time the kernel spent in each attached program (bpf_stats; 0 unless "
		  "kernel.bpf_stats_enabled=1)." },
		{ "bpfbox_bpf_program_runs_total",
		  "Runs of each attached program (bpf_stats; 0 unless kernel.bpf_stats_enabled=1)." },
		{ "bpfbox_bpf_program_recursion_misses_total",
		  "Runs of each program the kernel skipped because it was already running." },
	};
	struct prog_render r = { .o = o };
	char buf[8] = "0";
	FILE *f;

	for (r.pass = 0; r.pass < 3; r.pass++) {
		head(o, names[r.pass][0], "counter", names[r.pass][1]);
		agent_prog_stats(d->agent, prog_line, &r);
	}
	f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '0';
		fclose(f);
	}
	head(o, "bpfbox_bpf_stats_enabled", "gauge",
	     "1 when the kernel counts program run time (--bpf-stats, or sysctl "
	     "kernel.bpf_stats_enabled).");
	put(o, "bpfbox_bpf_stats_enabled %d\n", buf[0] == '1' || m->stats_fd >= 0);
}

static void render_host(struct out *o, struct metrics *m, struct daemon *d)
{
	const struct agent_status *st = agent_status(d->agent);
	char a[600], b[300];

	head(o, "bpfbox_build_info", "gauge", "The daemon's version.");
	put(o, "bpfbox_build_info{version=\"%s\"} 1\n", BPFBOX_VERSION);
	head(o, "bpfbox_host_info", "gauge",
	     "The host's capability level (bpfbox status) and kernel, as labels; value 1.");
	if (m->probed) {
		put(o, "bpfbox_host_info{level=\"%s\",kernel=\"%s\"} 1\n", level_name(m->caps.level),
		    lv(m->caps.kernel_release, a, sizeof(a)));
		head(o, "bpfbox_probe_info", "gauge",
		     "Each capability probe's result (bpfbox status --json), as labels; value 1.");
		for (int i = 0; i < FEAT__COUNT; i++)
			put(o, "bpfbox_probe_info{feature=\"%s\",state=\"%s\",detail=\"%s\"} 1\n",
			    feature_key(i), feat_state_name(m->caps.feat[i].state),
			    lv(m->caps.feat[i].detail, b, sizeof(b)));
	}
	head(o, "bpfbox_agent_info", "gauge",
	     "What the daemon's BPF agent holds (1 in force, 0 not), by part.");
	put(o, "bpfbox_agent_info{part=\"audit\"} %d\n", st->audit);
	put(o, "bpfbox_agent_info{part=\"network\"} %d\n", st->net);
	put(o, "bpfbox_agent_info{part=\"unix_connect\"} %d\n", st->unix_connect);
	put(o, "bpfbox_agent_info{part=\"lsm\"} %d\n", st->lsm);
	head(o, "bpfbox_connections", "gauge", "Connections to the daemon's socket.");
	put(o, "bpfbox_connections %zu\n", d->nconns);
	head(o, "bpfbox_config_reloads_total", "counter",
	     "Configuration reloads (SIGHUP, bpfbox daemon reload), by result.");
	put(o, "bpfbox_config_reloads_total{result=\"ok\"} %llu\n",
	    (unsigned long long)m->reloads_ok);
	put(o, "bpfbox_config_reloads_total{result=\"refused\"} %llu\n",
	    (unsigned long long)m->reloads_failed);
	head(o, "bpfbox_metrics_scrapes_total", "counter", "Scrapes of this endpoint.");
	put(o, "bpfbox_metrics_scrapes_total %llu\n", (unsigned long long)m->scrapes);
}

static char *render(struct metrics *m, size_t *len)
{
	struct out o = { 0 };

	m->scrapes++;
	render_host(&o, m, m->d);
	render_sessions(&o, m->d);
	render_events(&o, m, m->d);
	render_sinks(&o, m->d);
	render_requests(&o, m);
	render_programs(&o, m, m->d);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
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
	struct out o = { 0 };

	put(&o, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\n",
	    code, reason, type, len);
	if (!o.oom && o.len + len + 1 > o.cap) {
		char *b = realloc(o.buf, o.len + len + 1);

		if (!b)
			o.oom = true;
		else
			o.buf = b;
	}
	if (o.oom) {
		free(o.buf);
		mconn_close(m, c);
		return;
	}
	memcpy(o.buf + o.len, body, len);
	c->out = o.buf;
	c->out_len = o.len + len;
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
		body = render(m, &len);
		if (!body) {
			respond(m, c, 500, "Internal Server Error", "text/plain", "out of memory\n", 14);
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
			struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };

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
		ssize_t n = recv(c->fd, c->req + c->req_len, REQ_MAX - 1 - c->req_len, MSG_DONTWAIT);

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
		struct epoll_event ev = { .events = EPOLLIN };

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
	return m && (ptr == m || (ptr >= (const void *)m->c && ptr < (const void *)(m->c + MCONN_MAX)));
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
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE |
									  AI_NUMERICSERV };
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
	struct epoll_event ev = { .events = EPOLLIN };
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
			log_warn_errno(m->stats_fd, "--bpf-stats: the kernel does not count program "
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
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	if (m->stats_fd >= 0)
		close(m->stats_fd);
	free(m);
}
