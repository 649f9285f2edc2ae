// SPDX-License-Identifier: GPL-2.0
/*
 * Egress by name (docs/network.md): the names the resolver answered, the
 * records of every decision, the threads that serve a session's proxy and
 * resolver, start and stop. The rules and their verdict are rules.c, the
 * resolver dns.c, the proxy proxy.c.
 */
#include <sched.h>
#include <stdint.h>

#include "egress_internal.h"
#include "../lib/sockdiag.h"

static void own_addresses(struct egress *e)
{
	struct ifaddrs *ifa, *i;

	if (getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i && e->n_own < MAX_OWN; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			eg_map4(e->own[e->n_own++], &((struct sockaddr_in *)i->ifa_addr)->sin_addr);
		else if (i->ifa_addr->sa_family == AF_INET6)
			memcpy(e->own[e->n_own++], &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			       16);
	}
	freeifaddrs(ifa);
}

void eg_cache_put(struct egress *e, const char *name, const uint8_t addr[16])
{
	struct bpfbox_resolved_key key = {.session = e->o.session};
	uint64_t one = 1;

	memcpy(key.addr, addr, 16);
	/* Without BPF no redirect reads it: the proxy's own cache is all. */
	if (!e->o.explicit_only)
		bpf_map_update_elem(e->o.resolved_fd, &key, &one, BPF_ANY);
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < CACHE_SIZE; i++)
		if (!memcmp(e->cache[i].addr, addr, 16) && !strcasecmp(e->cache[i].name, name))
			goto out;
	snprintf(e->cache[e->cache_next].name, BPFBOX_NET_NAME_LEN, "%s", name);
	memcpy(e->cache[e->cache_next].addr, addr, 16);
	e->cache_next = (e->cache_next + 1) % CACHE_SIZE;
out:
	pthread_mutex_unlock(&e->lock);
}

/* Whether the resolver answered addr for name (name NULL: for any name, into out). */
bool eg_cache_has(struct egress *e, const char *name, const uint8_t addr[16], char *out,
		  size_t size)
{
	bool found = false;

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < CACHE_SIZE && !found; i++) {
		const struct cached *c = &e->cache[i];

		if (!c->name[0] || memcmp(c->addr, addr, 16))
			continue;
		if (name && strcasecmp(c->name, name))
			continue;
		found = true;
		if (out)
			snprintf(out, size, "%s", c->name);
	}
	pthread_mutex_unlock(&e->lock);
	return found;
}

/* One record in the session's stream: net.allow or net.deny. */
/* A record of the proxy's: its header and what every kind has. */
static void fill(struct egress *e, struct bpfbox_net_emit *m, const struct bpfbox_net_orig *o,
		 bool allow, const char *name, const uint8_t addr[16], uint16_t port,
		 const char *rule, const char *reason)
{
	memset(m, 0, sizeof(*m));
	m->cgroup_id = e->o.cgroup_id;
	if (o) {
		m->ev.hdr.pid = o->pid;
		m->ev.hdr.tid = o->tid;
		m->ev.hdr.uid = o->uid;
		memcpy(m->ev.hdr.comm, o->comm, sizeof(m->ev.hdr.comm));
	}
	m->ev.hdr.decision = allow ? BPFBOX_ALLOW : BPFBOX_DENY;
	m->ev.hdr.layer = allow ? BPFBOX_LAYER_NONE : BPFBOX_LAYER_EGRESS;
	m->ev.hdr.err = allow ? 0 : -ECONNREFUSED;
	m->ev.family = o && o->family == AF_INET6 ? AF_INET6 : AF_INET;
	m->ev.port = port;
	if (addr)
		memcpy(m->ev.addr, addr, 16);
	snprintf(m->ev.name, sizeof(m->ev.name), "%s", name ? name : "");
	snprintf(m->ev.rule, sizeof(m->ev.rule), "%s", rule ? rule : "");
	snprintf(m->ev.reason, sizeof(m->ev.reason), "%s", reason ? reason : "");
}

/* Into the session's stream (net_emit), or without BPF to the run's callback. */
static void send_record(struct egress *e, struct bpfbox_net_emit *m)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = m, .ctx_size_in = sizeof(*m));

	if (!e->o.explicit_only) {
		bpf_prog_test_run_opts(e->o.emit_fd, &opts);
		return;
	}
	/* What net_emit would stamp, but the session's sequence (none without BPF). */
	m->ev.hdr.type = BPFBOX_EV_NET;
	m->ev.hdr.ts_ns = now_ns();
	if (e->o.on_record)
		e->o.on_record(e->o.record_arg, &m->ev);
}

void eg_emit(struct egress *e, const struct bpfbox_net_orig *o, bool allow, int kind, int how,
	     const char *name, const uint8_t addr[16], uint16_t port, const char *rule,
	     const char *reason, uint64_t out_bytes, uint64_t in_bytes)
{
	struct bpfbox_net_emit m;

	fill(e, &m, o, allow, name, addr, port, rule, reason);
	m.ev.kind = kind;
	m.ev.how = how;
	m.ev.bytes_out = out_bytes;
	m.ev.bytes_in = in_bytes;
	send_record(e, &m);
}

void eg_emit_request(struct egress *e, const struct bpfbox_net_orig *o, bool allow,
		     const char *name, const uint8_t addr[16], uint16_t port,
		     const struct eg_request *q)
{
	struct bpfbox_net_emit m;

	fill(e, &m, o, allow, name, addr, port, q->rule, q->reason);
	m.ev.kind = BPFBOX_NET_REQUEST;
	m.ev.how = HOW_REQUEST;
	m.ev.status = q->status;
	m.ev.bytes_out = q->bytes_out;
	m.ev.bytes_in = q->bytes_in;
	snprintf(m.ev.method, sizeof(m.ev.method), "%s", q->method);
	snprintf(m.ev.path, sizeof(m.ev.path), "%s", q->path);
	send_record(e, &m);
}

void eg_worker_done(struct egress *e, bool conn)
{
	pthread_mutex_lock(&e->lock);
	if (conn)
		e->conns--;
	else
		e->queries--;
	if (--e->active == 0)
		pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
}

/*
 * A thread for a connection (conn) or a query, unless the session has
 * its cap of them open already (-EBUSY).
 */
static int spawn(struct egress *e, void *(*fn)(void *), void *arg, bool conn)
{
	pthread_attr_t attr;
	pthread_t t;
	bool ok;

	pthread_mutex_lock(&e->lock);
	if (conn ? e->conns >= e->max_conns : e->queries >= MAX_QUERIES) {
		pthread_mutex_unlock(&e->lock);
		return -EBUSY;
	}
	if (conn)
		e->conns++;
	else
		e->queries++;
	e->active++;
	pthread_mutex_unlock(&e->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ok = pthread_create(&t, &attr, fn, arg) == 0;
	pthread_attr_destroy(&attr);
	if (!ok)
		eg_worker_done(e, conn);
	return ok ? 0 : -EAGAIN;
}

/* n, a count of refusals, is 1, 2, 4, 8...: the records of a flood stay few. */
static bool worth_a_record(uint64_t n)
{
	return (n & (n - 1)) == 0;
}

static void accept_one(struct egress *e)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct bpfbox_orig_key key = {.proxy_port = e->tcp_port};
	struct conn *c;
	int fd = accept4(e->tcp_fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC), r;

	if (fd < 0)
		return;
	if (ss.ss_family == AF_INET)
		key.client_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	c = calloc(1, sizeof(*c));
	/* Without BPF the listener is in the session's namespace: only it reaches it. */
	if (c && e->o.explicit_only) {
		c->o.kind = BPFBOX_ORIG_EXPLICIT;
		c->o.family = AF_INET;
		c->o.session = e->o.session;
	}
	/* Only the session's sockets, whose original sockops recorded, are served. */
	if (!c || ss.ss_family != AF_INET ||
	    (!e->o.explicit_only &&
	     bpf_map_lookup_and_delete_elem(e->o.orig_fd, &key, &c->o) < 0) ||
	    c->o.session != e->o.session) {
		free(c);
		eg_reset(fd);
		close(fd);
		return;
	}
	c->e = e;
	c->fd = fd;
	c->up = -1;
	r = spawn(e, eg_conn_thread, c, true);
	if (r == -EBUSY && worth_a_record(++e->refused)) {
		char why[BPFBOX_NET_RULE_LEN];

		snprintf(why, sizeof(why),
			 "connection limit: %u open; %llu connections refused so far", e->max_conns,
			 (unsigned long long)e->refused);
		eg_emit(e, &c->o, false, BPFBOX_NET_TCP, HOW_ADDR, "", c->o.addr, c->o.port, "",
			why, 0, 0);
	}
	if (r < 0) {
		eg_reset(fd);
		close(fd);
		free(c);
	}
}

static void receive_query(struct egress *e)
{
	struct query *q = malloc(sizeof(*q));
	ssize_t n;
	int r;

	if (!q)
		return;
	q->e = e;
	q->fromlen = sizeof(q->from);
	n = recvfrom(e->udp_fd, q->buf, sizeof(q->buf), MSG_DONTWAIT, (struct sockaddr *)&q->from,
		     &q->fromlen);
	/* Only the session's own sockets are served: the check is in dns.c. */
	if (n < 12 || !eg_query_from_session(e, &q->from)) {
		if (n >= 12 && e->foreign++ == 0)
			log_warn("egress: a DNS query to the session's resolver from outside "
				 "the session was dropped (and every later one)");
		free(q);
		return;
	}
	q->len = n;
	r = spawn(e, eg_query_thread, q, false);
	if (r == -EBUSY && worth_a_record(++e->dropped)) {
		char why[BPFBOX_NET_RULE_LEN];

		snprintf(why, sizeof(why), "query limit: %u in flight; %llu queries dropped so far",
			 MAX_QUERIES, (unsigned long long)e->dropped);
		eg_emit(e, NULL, false, BPFBOX_NET_DNS, HOW_QUERY, "", NULL, 53, "", why, 0, 0);
	}
	if (r < 0)
		free(q);
}

/*
 * Without BPF: the listener and the resolver's socket, made in the
 * session's network namespace by its set-up (sandbox/child.c), once they
 * come; false when the session ends first (its set-up failed).
 */
static bool receive_sockets(struct egress *e)
{
	struct pollfd p[2] = {{.fd = e->o.fds_sock, .events = POLLIN},
			      {.fd = e->stop_pipe[0], .events = POLLIN}};
	int fds[2];

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return false;
		if (p[1].revents)
			return false;
		if (p[0].revents)
			break;
	}
	if (recv_fds(e->o.fds_sock, fds, 2) != 2)
		return false;
	e->tcp_fd = fds[0];
	e->udp_fd = fds[1];
	return true;
}

static void *main_thread(void *arg)
{
	struct egress *e = arg;
	struct pollfd p[3];

	if (e->o.explicit_only && !receive_sockets(e))
		return NULL;
	p[0] = (struct pollfd){.fd = e->tcp_fd, .events = POLLIN};
	p[1] = (struct pollfd){.fd = e->udp_fd, .events = POLLIN};
	p[2] = (struct pollfd){.fd = e->stop_pipe[0], .events = POLLIN};
	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents)
			break;
		if (p[0].revents)
			accept_one(e);
		if (p[1].revents)
			receive_query(e);
	}
	return NULL;
}

/* A socket on 127.0.0.1:*port (0: any; *port gets it), listening if lst. */
static int bind_local(int type, uint16_t *port, bool lst)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons(*port)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || (lst && listen(fd, 1024) < 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/*
 * The cap of open connections and the idle timeout: MAX_CONNS and IDLE_S,
 * or $BPFBOX_NET_MAX_CONNS and $BPFBOX_NET_IDLE_S of this process (the
 * daemon's, or bpfbox run's) when they hold a number >= 1.
 */
static void limits_from_env(struct egress *e)
{
	const char *max = getenv("BPFBOX_NET_MAX_CONNS"), *idle = getenv("BPFBOX_NET_IDLE_S");
	unsigned long long v;

	e->max_conns = MAX_CONNS;
	e->idle_ms = IDLE_S * 1000;
	if (max && parse_u64(max, &v) == 0 && v >= 1 && v <= 65536)
		e->max_conns = v;
	if (idle && parse_u64(idle, &v) == 0 && v >= 1 && v <= 86400)
		e->idle_ms = v * 1000;
}

/* The listener, the resolver's socket and a sock_diag socket, here. */
static int local_sockets(struct egress *e)
{
	e->tcp_fd = bind_local(SOCK_STREAM, &e->tcp_port, true);
	e->udp_fd = bind_local(SOCK_DGRAM, &e->udp_port, false);
	e->diag_fd = sockdiag_open();
	return e->tcp_fd < 0 ? e->tcp_fd : e->udp_fd < 0 ? e->udp_fd : e->diag_fd;
}

/* On a thread of its own: a network namespace is a thread's, not the process's. */
static void *netns_thread(void *arg)
{
	struct egress *e = arg;

	if (setns(e->o.netns_fd, CLONE_NEWNET) < 0)
		return (void *)(intptr_t)-errno;
	return (void *)(intptr_t)local_sockets(e);
}

/*
 * in_netns: a port free on our 127.0.0.1 held (bound, not listening),
 * then the sockets made in the cgroup's namespace with the listener on
 * that port; another port while the namespace has it taken.
 */
static int netns_sockets(struct egress *e)
{
	pthread_t t;
	void *ret;
	int r = -EADDRINUSE;

	for (int i = 0; i < 8 && r == -EADDRINUSE; i++) {
		fd_close(&e->hold_fd);
		fd_close(&e->tcp_fd);
		fd_close(&e->udp_fd);
		fd_close(&e->diag_fd);
		e->tcp_port = e->udp_port = 0;
		e->hold_fd = bind_local(SOCK_STREAM, &e->tcp_port, false);
		if (e->hold_fd < 0)
			return e->hold_fd;
		r = -pthread_create(&t, NULL, netns_thread, e);
		if (r < 0)
			return r;
		pthread_join(t, &ret);
		r = (int)(intptr_t)ret;
	}
	return r;
}

/*
 * The stop pipe, and the proxy's and resolver's sockets on 127.0.0.1 (with
 * BPF: the sockets without BPF come from the session's namespace,
 * receive_sockets). -errno with err.
 */
static int open_sockets(struct egress *e, char *err, size_t size)
{
	int r;

	if (pipe2(e->stop_pipe, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(err, size, "cannot start the egress proxy: %s", strerror(-r));
		return r;
	}
	if (e->o.explicit_only) {
		e->tcp_port = e->o.proxy_port;
		e->udp_port = 53;
		return 0;
	}
	if (e->o.in_netns)
		r = netns_sockets(e);
	else
		r = local_sockets(e);
	if (r < 0) {
		snprintf(err, size, "cannot open the egress proxy on 127.0.0.1%s: %s",
			 e->o.in_netns ? " of the cgroup's network namespace" : "", strerror(-r));
		return r;
	}
	return eg_diag_check(e, err, size);
}

/* Everything e holds, once no thread of it runs (or none started); e freed. */
static void release(struct egress *e)
{
	fd_close(&e->tcp_fd);
	fd_close(&e->udp_fd);
	fd_close(&e->diag_fd);
	fd_close(&e->hold_fd);
	fd_close(&e->stop_pipe[0]);
	fd_close(&e->stop_pipe[1]);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->ask_lock);
	pthread_cond_destroy(&e->idle);
	eg_term_stop(e);
	egress_secrets_free(&e->secrets);
	free(e);
}

int egress_start(struct egress **out, const struct egress_opts *o, char *err, size_t size)
{
	struct egress *e = calloc(1, sizeof(*e));
	sigset_t pipe_set, old_set;
	int r;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->o = *o;
	e->tcp_fd = e->udp_fd = e->diag_fd = e->hold_fd = e->stop_pipe[0] = e->stop_pipe[1] = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->ask_lock, NULL);
	pthread_cond_init(&e->idle, NULL);
	pthread_mutex_init(&e->term.lock, NULL);
	limits_from_env(e);
	r = eg_rules_add(e, o, err, size);
	if (r < 0)
		goto fail;
	r = eg_upstream_parse(e, o->resolver, err, size);
	if (r < 0)
		goto fail;
	r = eg_term_start(e, err, size);
	if (r < 0)
		goto fail;
	own_addresses(e);
	eg_hosts_load(e, "/etc/hosts");
	r = open_sockets(e, err, size);
	if (r < 0)
		goto fail;
	/*
	 * A tool that closes its end makes splice() raise SIGPIPE: the proxy's
	 * threads (which inherit this mask) keep it blocked and get EPIPE, and
	 * the process's own handling of SIGPIPE is left as it was.
	 */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
	r = -pthread_create(&e->main, NULL, main_thread, e);
	pthread_sigmask(SIG_SETMASK, &old_set, NULL);
	if (r < 0) {
		snprintf(err, size, "cannot start the egress proxy: %s", strerror(-r));
		goto fail;
	}
	*out = e;
	return 0;
fail:
	release(e);
	return r;
}

uint16_t egress_proxy_port(const struct egress *e)
{
	return e->tcp_port;
}

uint16_t egress_dns_port(const struct egress *e)
{
	return e->udp_port;
}

void egress_stop(struct egress *e)
{
	if (!e)
		return;
	/* The pipe stays readable: every thread's poll sees it. */
	(void)!write(e->stop_pipe[1], "x", 1);
	pthread_join(e->main, NULL);
	pthread_mutex_lock(&e->lock);
	while (e->active)
		pthread_cond_wait(&e->idle, &e->lock);
	pthread_mutex_unlock(&e->lock);
	release(e);
}
