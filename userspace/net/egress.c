// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "egress.h"
#include "bpfbox/events.h"
#include "../lib/util.h"
#include "../policy/policy.h"

#define MAX_RULES     256
#define CACHE_SIZE    1024
#define MAX_OWN	      64
#define PEEK_MAX      16384
#define FIRST_DATA_MS 1000 /* a silent tool is judged by its address alone */
#define UPSTREAM_MS   5000

enum { HOW_ADDR, HOW_SNI, HOW_HOST, HOW_CONNECT, HOW_QUERY };

struct rule {
	bool name;	   /* else CIDR */
	char host[256];	   /* lower case, "*.x" for a wildcard */
	uint8_t addr[16];  /* mapped IPv4 */
	unsigned int plen; /* of the 128 bits */
	uint16_t lo, hi;
	char text[BPFBOX_NET_RULE_LEN];
};

struct cached {
	char name[BPFBOX_NET_NAME_LEN];
	uint8_t addr[16];
};

struct egress {
	struct egress_opts o;
	int tcp_fd, udp_fd, stop_pipe[2];
	uint16_t tcp_port, udp_port;
	struct sockaddr_storage upstream;
	socklen_t upstream_len;
	pthread_t main;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned int active; /* worker threads alive */
	struct rule allow[MAX_RULES], deny[MAX_RULES];
	size_t n_allow, n_deny;
	struct cached cache[CACHE_SIZE];
	size_t cache_next;
	uint8_t own[MAX_OWN][16];
	size_t n_own;
};

bool egress_has_names(const struct strv *rules)
{
	char host[256];
	uint16_t lo, hi;

	for (size_t i = 0; rules && i < rules->n; i++)
		if (net_name_rule_parse(rules->v[i], host, sizeof(host), &lo,
					&hi) == 0)
			return true;
	return false;
}

static void map4(uint8_t out[16], const void *v4)
{
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
}

static bool is_mapped(const uint8_t a[16])
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a, pfx, 12);
}

static void addr_str(const uint8_t a[16], char *buf, size_t size)
{
	if (is_mapped(a))
		inet_ntop(AF_INET, a + 12, buf, size);
	else
		inet_ntop(AF_INET6, a, buf, size);
}

static int parse_rule(const char *text, struct rule *r)
{
	char cidr[64], *slash;
	uint8_t bin[16];

	memset(r, 0, sizeof(*r));
	snprintf(r->text, sizeof(r->text), "%s", text);
	if (net_name_rule_parse(text, r->host, sizeof(r->host), &r->lo,
				&r->hi) == 0) {
		r->name = true;
		return 0;
	}
	if (net_rule_parse(text, cidr, sizeof(cidr), &r->lo, &r->hi) < 0)
		return -EINVAL;
	slash = strchr(cidr, '/');
	*slash = '\0';
	r->plen = strtoul(slash + 1, NULL, 10);
	if (inet_pton(AF_INET, cidr, bin) == 1) {
		map4(r->addr, bin);
		r->plen += 96;
	} else if (inet_pton(AF_INET6, cidr, r->addr) != 1) {
		return -EINVAL;
	}
	return 0;
}

static bool prefix_match(const uint8_t a[16], const uint8_t b[16],
			 unsigned int plen)
{
	unsigned int bytes = plen / 8, bits = plen % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !bits || ((a[bytes] ^ b[bytes]) & (0xff << (8 - bits))) == 0;
}

/*
 * Never reachable through a name: loopback, unspecified, link-local (the
 * metadata address among them), multicast, broadcast, the metadata IPv6
 * address and the host's own addresses (DNS rebinding).
 */
static bool forbidden(const struct egress *e, const uint8_t a[16])
{
	static const uint8_t meta6[16] = {0xfd, 0x00,	     0x0e,
					  0xc2, [15] = 0x54, [14] = 0x02};
	static const uint8_t zero[16];

	if (is_mapped(a)) {
		const uint8_t *v = a + 12;

		if (v[0] == 0 || v[0] == 127 || (v[0] == 169 && v[1] == 254) ||
		    v[0] >= 224)
			return true;
	} else {
		if (!memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1))
			return true;
		if ((a[0] == 0xfe && (a[1] & 0xc0) == 0x80) || a[0] == 0xff ||
		    !memcmp(a, meta6, 16))
			return true;
	}
	for (size_t i = 0; i < e->n_own; i++)
		if (!memcmp(e->own[i], a, 16))
			return true;
	return false;
}

static void own_addresses(struct egress *e)
{
	struct ifaddrs *ifa, *i;

	if (getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i && e->n_own < MAX_OWN; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			map4(e->own[e->n_own++],
			     &((struct sockaddr_in *)i->ifa_addr)->sin_addr);
		else if (i->ifa_addr->sa_family == AF_INET6)
			memcpy(e->own[e->n_own++],
			       &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			       16);
	}
	freeifaddrs(ifa);
}

/*
 * The rule that decides name (may be NULL) at addr:port. Deny rules come
 * first. A name is judged by name rules; an address by CIDR rules. Returns
 * true to allow; *rule gets the deciding rule's text or "".
 */
static bool judge(struct egress *e, const char *name, const uint8_t *addr,
		  uint16_t port, bool any_port, char rule[BPFBOX_NET_RULE_LEN])
{
	bool ok = false;

	rule[0] = '\0';
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n_deny; i++) {
		const struct rule *r = &e->deny[i];
		bool hit =
			r->name ? name && net_name_match(r->host, name)
				: addr && prefix_match(r->addr, addr, r->plen);

		/* A query is refused only when every port is denied. */
		if (hit && (any_port ? r->lo == 0 && r->hi == 65535
				     : port >= r->lo && port <= r->hi)) {
			snprintf(rule, BPFBOX_NET_RULE_LEN, "%s", r->text);
			goto out;
		}
	}
	for (size_t i = 0; i < e->n_allow; i++) {
		const struct rule *r = &e->allow[i];
		bool hit =
			r->name ? name && net_name_match(r->host, name)
				: addr && prefix_match(r->addr, addr, r->plen);

		if (hit && (any_port || (port >= r->lo && port <= r->hi))) {
			snprintf(rule, BPFBOX_NET_RULE_LEN, "%s", r->text);
			ok = true;
			goto out;
		}
	}
out:
	pthread_mutex_unlock(&e->lock);
	return ok;
}

static void cache_put(struct egress *e, const char *name,
		      const uint8_t addr[16])
{
	struct bpfbox_resolved_key key = {.session = e->o.session};
	uint64_t one = 1;

	memcpy(key.addr, addr, 16);
	bpf_map_update_elem(e->o.resolved_fd, &key, &one, BPF_ANY);
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < CACHE_SIZE; i++)
		if (!memcmp(e->cache[i].addr, addr, 16) &&
		    !strcasecmp(e->cache[i].name, name))
			goto out;
	snprintf(e->cache[e->cache_next].name, BPFBOX_NET_NAME_LEN, "%s", name);
	memcpy(e->cache[e->cache_next].addr, addr, 16);
	e->cache_next = (e->cache_next + 1) % CACHE_SIZE;
out:
	pthread_mutex_unlock(&e->lock);
}

/* Whether the resolver answered addr for name (name NULL: for any name, into out). */
static bool cache_has(struct egress *e, const char *name,
		      const uint8_t addr[16], char *out, size_t size)
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
static void emit(struct egress *e, const struct bpfbox_net_orig *o, bool allow,
		 int kind, int how, const char *name, const uint8_t addr[16],
		 uint16_t port, const char *rule, const char *reason,
		 uint64_t out_bytes, uint64_t in_bytes)
{
	struct bpfbox_net_emit m;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &m,
		    .ctx_size_in = sizeof(m));

	memset(&m, 0, sizeof(m));
	m.cgroup_id = e->o.cgroup_id;
	if (o) {
		m.ev.hdr.pid = o->pid;
		m.ev.hdr.tid = o->tid;
		m.ev.hdr.uid = o->uid;
		memcpy(m.ev.hdr.comm, o->comm, sizeof(m.ev.hdr.comm));
	}
	m.ev.hdr.decision = allow ? BPFBOX_ALLOW : BPFBOX_DENY;
	m.ev.hdr.layer = allow ? BPFBOX_LAYER_NONE : BPFBOX_LAYER_EGRESS;
	m.ev.hdr.err = allow ? 0 : -ECONNREFUSED;
	m.ev.family = o && o->family == AF_INET6 ? AF_INET6 : AF_INET;
	m.ev.port = port;
	m.ev.kind = kind;
	m.ev.how = how;
	if (addr)
		memcpy(m.ev.addr, addr, 16);
	m.ev.bytes_out = out_bytes;
	m.ev.bytes_in = in_bytes;
	snprintf(m.ev.name, sizeof(m.ev.name), "%s", name ? name : "");
	snprintf(m.ev.rule, sizeof(m.ev.rule), "%s", rule ? rule : "");
	snprintf(m.ev.reason, sizeof(m.ev.reason), "%s", reason ? reason : "");
	bpf_prog_test_run_opts(e->o.emit_fd, &opts);
}

/* ---- DNS ---------------------------------------------------------------- */

/* The question's name (lower case, dotted) and type; its end offset or -1. */
static int dns_question(const uint8_t *p, size_t len, char *name, size_t size,
			uint16_t *qtype)
{
	size_t off = 12, n = 0;

	if (len < 12 || ((p[4] << 8) | p[5]) != 1)
		return -1;
	while (off < len && p[off]) {
		size_t l = p[off++];

		if (l > 63 || off + l > len || n + l + 2 > size)
			return -1;
		if (n)
			name[n++] = '.';
		for (size_t i = 0; i < l; i++)
			name[n++] = tolower(p[off + i]);
		off += l;
	}
	if (off + 5 > len)
		return -1;
	name[n] = '\0';
	off++;
	*qtype = (p[off] << 8) | p[off + 1];
	return (int)off + 4;
}

static int dns_skip_name(const uint8_t *p, size_t len, size_t off)
{
	while (off < len) {
		uint8_t l = p[off];

		if (l == 0)
			return off + 1;
		if ((l & 0xc0) == 0xc0)
			return off + 2 <= len ? (int)off + 2 : -1;
		off += l + 1;
	}
	return -1;
}

/* The A and AAAA addresses of an answer (mapped); -1 if malformed. */
static int dns_answers(const uint8_t *p, size_t len, uint8_t out[][16],
		       size_t max, size_t *n, int *rcode)
{
	unsigned int qd, an;
	int off = 12;

	*n = 0;
	if (len < 12)
		return -1;
	*rcode = p[3] & 0xf;
	qd = (p[4] << 8) | p[5];
	an = (p[6] << 8) | p[7];
	for (unsigned int i = 0; i < qd; i++) {
		off = dns_skip_name(p, len, off);
		if (off < 0 || (size_t)off + 4 > len)
			return -1;
		off += 4;
	}
	for (unsigned int i = 0; i < an; i++) {
		unsigned int type, rdlen;

		off = dns_skip_name(p, len, off);
		if (off < 0 || (size_t)off + 10 > len)
			return -1;
		type = (p[off] << 8) | p[off + 1];
		rdlen = (p[off + 8] << 8) | p[off + 9];
		off += 10;
		if ((size_t)off + rdlen > len)
			return -1;
		if (*n < max && type == 1 && rdlen == 4)
			map4(out[(*n)++], p + off);
		else if (*n < max && type == 28 && rdlen == 16)
			memcpy(out[(*n)++], p + off, 16);
		off += rdlen;
	}
	return 0;
}

/* Sends q to the upstream resolver and waits for its answer. */
static ssize_t dns_upstream(struct egress *e, const uint8_t *q, size_t qlen,
			    uint8_t *ans, size_t size)
{
	_cleanup_close_ int fd =
		socket(e->upstream.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct pollfd pfd[2] = {{.events = POLLIN},
				{.fd = e->stop_pipe[0], .events = POLLIN}};
	ssize_t n;

	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&e->upstream, e->upstream_len) < 0 ||
	    send(fd, q, qlen, 0) < 0)
		return -1;
	pfd[0].fd = fd;
	while (poll(pfd, 2, UPSTREAM_MS) >= 1 && !pfd[1].revents) {
		n = recv(fd, ans, size, 0);
		if (n >= 12 && ans[0] == q[0] && ans[1] == q[1])
			return n;
		if (n < 0)
			return -1;
	}
	return -1;
}

/* Resolves name through the upstream (A records) for the CONNECT path. */
static int resolve(struct egress *e, const char *name, uint8_t out[][16],
		   size_t max, size_t *n)
{
	uint8_t q[300], ans[1500];
	size_t off = 12, len = strlen(name);
	const char *s = name;
	ssize_t alen;
	int rcode;

	if (len > 253)
		return -1;
	memset(q, 0, 12);
	q[0] = rand() & 0xff;
	q[1] = rand() & 0xff;
	q[2] = 0x01; /* recursion desired */
	q[5] = 1;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t l = dot ? (size_t)(dot - s) : strlen(s);

		if (l == 0 || l > 63)
			return -1;
		q[off++] = l;
		memcpy(q + off, s, l);
		off += l;
		s += l + (dot ? 1 : 0);
	}
	q[off++] = 0;
	q[off++] = 0;
	q[off++] = 1; /* A */
	q[off++] = 0;
	q[off++] = 1; /* IN */
	alen = dns_upstream(e, q, off, ans, sizeof(ans));
	if (alen < 0 || dns_answers(ans, alen, out, max, n, &rcode) < 0 ||
	    rcode || !*n)
		return -1;
	return 0;
}

struct query {
	struct egress *e;
	struct sockaddr_storage from;
	socklen_t fromlen;
	size_t len;
	uint8_t buf[1500];
};

static void refuse_query(struct query *q, uint8_t rcode)
{
	q->buf[2] |= 0x80; /* response */
	q->buf[3] = (q->buf[3] & 0xf0) | rcode;
	q->buf[6] = q->buf[7] = q->buf[8] = q->buf[9] = q->buf[10] =
		q->buf[11] = 0;
	sendto(q->e->udp_fd, q->buf, q->len, 0, (struct sockaddr *)&q->from,
	       q->fromlen);
}

static void worker_done(struct egress *e)
{
	pthread_mutex_lock(&e->lock);
	if (--e->active == 0)
		pthread_cond_broadcast(&e->idle);
	pthread_mutex_unlock(&e->lock);
}

static void *query_thread(void *arg)
{
	struct query *q = arg;
	struct egress *e = q->e;
	char name[BPFBOX_NET_NAME_LEN], rule[BPFBOX_NET_RULE_LEN],
		why[BPFBOX_NET_RULE_LEN];
	uint8_t ans[1500], addrs[32][16];
	struct bpfbox_net_orig client, *o;
	size_t n = 0;
	uint16_t qtype;
	bool have;
	ssize_t alen;
	int end, rcode;

	/* The last process of the session that sent DNS: close enough to name it. */
	have = bpf_map_lookup_elem(e->o.dns_client_fd, &e->o.session,
				   &client) == 0;
	o = have ? &client : NULL;
	end = dns_question(q->buf, q->len, name, sizeof(name), &qtype);
	if (end < 0) {
		refuse_query(q, 1); /* FORMERR */
		goto out;
	}
	if (!judge(e, name, NULL, 0, true, rule)) {
		snprintf(why, sizeof(why), "%s",
			 rule[0] ? "net_deny" : "no net_allow rule");
		refuse_query(q, 5);
		emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, NULL, 53,
		     rule, why, 0, 0);
		goto out;
	}
	alen = dns_upstream(e, q->buf, q->len, ans, sizeof(ans));
	if (alen < 0 || dns_answers(ans, alen, addrs, 32, &n, &rcode) < 0) {
		refuse_query(q, 2); /* SERVFAIL */
		emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, NULL, 53,
		     rule, "upstream resolver failed", 0, 0);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (forbidden(e, addrs[i])) {
			char a[INET6_ADDRSTRLEN];

			addr_str(addrs[i], a, sizeof(a));
			snprintf(
				why, sizeof(why),
				"rebinding: answer %s is not reachable by name",
				a);
			refuse_query(q, 5);
			emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name,
			     addrs[i], 53, rule, why, 0, 0);
			goto out;
		}
	}
	/* Known before the tool can connect to them. */
	for (size_t i = 0; i < n; i++)
		cache_put(e, name, addrs[i]);
	sendto(e->udp_fd, ans, alen, 0, (struct sockaddr *)&q->from,
	       q->fromlen);
	emit(e, o, true, BPFBOX_NET_DNS, HOW_QUERY, name, n ? addrs[0] : NULL,
	     53, rule, "", 0, 0);
out:
	free(q);
	worker_done(e);
	return NULL;
}

/* ---- TCP ---------------------------------------------------------------- */

/* The SNI of a TLS ClientHello in p; 1 found, 0 none, -1 incomplete. */
static int tls_sni(const uint8_t *p, size_t len, char *out, size_t size)
{
	size_t rec, off, end, l;

	if (len < 5)
		return -1;
	if (p[0] != 0x16 || p[1] != 3)
		return 0;
	rec = (p[3] << 8) | p[4];
	if (len < 5 + rec)
		return -1;
	end = 5 + rec;
	off = 5;
	if (off + 4 > end || p[off] != 1)
		return 0;
	off += 4 + 2 + 32; /* handshake header, version, random */
	if (off + 1 > end)
		return 0;
	off += 1 + p[off]; /* session id */
	if (off + 2 > end)
		return 0;
	off += 2 + ((p[off] << 8) | p[off + 1]); /* cipher suites */
	if (off + 1 > end)
		return 0;
	off += 1 + p[off]; /* compression */
	if (off + 2 > end)
		return 0;
	off += 2;
	while (off + 4 <= end) {
		unsigned int type = (p[off] << 8) | p[off + 1];

		l = (p[off + 2] << 8) | p[off + 3];
		off += 4;
		if (off + l > end)
			return 0;
		if (type == 0 && l >= 5 && p[off + 2] == 0) {
			size_t nl = (p[off + 3] << 8) | p[off + 4];

			if (nl == 0 || nl >= size || off + 5 + nl > end)
				return 0;
			for (size_t i = 0; i < nl; i++)
				out[i] = tolower(p[off + 5 + i]);
			out[nl] = '\0';
			return 1;
		}
		off += l;
	}
	return 0;
}

static bool http_method(const uint8_t *p, size_t len)
{
	static const char *const m[] = {"GET ",	  "POST ",   "PUT ",
					"HEAD ",  "DELETE ", "OPTIONS ",
					"PATCH ", "CONNECT "};

	for (size_t i = 0; i < ARRAY_SIZE(m); i++) {
		size_t ml = strlen(m[i]);

		if (!memcmp(p, m[i], len < ml ? len : ml))
			return true;
	}
	return false;
}

/* The Host header's name (no port) of a request head; 1, 0 none, -1 incomplete. */
static int http_host(const uint8_t *p, size_t len, char *out, size_t size)
{
	const char *s = (const char *)p, *end = memmem(p, len, "\r\n\r\n", 4),
		   *line;

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
		while (v + n < end && v[n] != '\r' && v[n] != ':' &&
		       n + 1 < size) {
			out[n] = tolower((unsigned char)v[n]);
			n++;
		}
		out[n] = '\0';
		return n > 0;
	}
	return 0;
}

struct conn {
	struct egress *e;
	int fd, up;
	struct bpfbox_net_orig o;
	bool have_orig;
};

static void send_403(int fd, const char *name, uint16_t port, const char *why)
{
	char body[512], head[256];
	int bl, hl;

	bl = snprintf(
		body, sizeof(body),
		"bpfbox: egress to %s port %u denied (%s). To allow it, add "
		"--net-allow %s:%u to the session.\n",
		name, port, why, name, port);
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n\r\n",
		      bl);
	(void)!write(fd, head, hl);
	(void)!write(fd, body, bl);
}

/* Closes with a reset: the tool sees a refused connection. */
static void reset(int fd)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static int connect_upstream(struct egress *e, const uint8_t addr[16],
			    uint16_t port)
{
	struct sockaddr_storage ss = {0};
	struct pollfd pfd = {.events = POLLOUT};
	socklen_t len;
	int fd, err = 0, one = 1;

	if (is_mapped(addr)) {
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
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 &&
	    errno != EINPROGRESS)
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

/*
 * One direction's step: socket -> pipe when the pipe is empty, pipe ->
 * socket while it holds bytes. false when the direction has ended.
 */
struct dir {
	int src, dst, pipe[2];
	size_t pending;
	bool eof, done, grown;
	uint64_t *count;
};

/* A bulk transfer gets a 1 MiB pipe: fewer wakeups per byte. Not at once:
 * most connections are small, and the pages cost setup time. */
#define GROW_AFTER (256 * 1024)

static bool step(struct dir *d, bool *broken)
{
	for (;;) {
		ssize_t n;

		if (!d->pending && !d->eof) {
			n = splice(d->src, NULL, d->pipe[1], NULL, 1 << 20,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0)
				d->pending += n;
			else if (n == 0 || (errno != EAGAIN && errno != EINTR))
				d->eof = true;
			else if (errno == EAGAIN)
				break;
		}
		if (d->pending) {
			n = splice(d->pipe[0], NULL, d->dst, NULL, d->pending,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->pending -= n;
				*d->count += n;
				if (!d->grown && *d->count > GROW_AFTER) {
					fcntl(d->pipe[1], F_SETPIPE_SZ,
					      1 << 20);
					d->grown = true;
				}
			} else if (n < 0 && errno == EAGAIN) {
				break;
			} else if (n < 0 && errno != EINTR) {
				/* The reader is gone: both directions end. */
				*broken = true;
				return false;
			}
		}
		if (d->eof && !d->pending) {
			shutdown(d->dst, SHUT_WR);
			d->done = true;
			return false;
		}
	}
	return true;
}

/* Both directions through pipes until both ends closed; bytes counted. */
static void splice_both(struct egress *e, int a, int b, uint64_t *a2b,
			uint64_t *b2a)
{
	struct dir dirs[2] = {
		{.src = a, .dst = b, .pipe = {-1, -1}, .count = a2b},
		{.src = b, .dst = a, .pipe = {-1, -1}, .count = b2a}};
	bool broken = false;

	if (pipe2(dirs[0].pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(dirs[1].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		goto out;
	fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
	fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
	while (!broken && (!dirs[0].done || !dirs[1].done)) {
		struct pollfd p[3];
		int np = 0;

		for (int i = 0; i < 2; i++) {
			struct dir *d = &dirs[i];

			if (d->done)
				continue;
			/* Read only into an empty pipe: a full one would spin. */
			if (d->pending)
				p[np++] = (struct pollfd){.fd = d->dst,
							  .events = POLLOUT};
			else
				p[np++] = (struct pollfd){.fd = d->src,
							  .events = POLLIN};
		}
		p[np++] = (struct pollfd){.fd = e->stop_pipe[0],
					  .events = POLLIN};
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[np - 1].revents)
			break;
		for (int i = 0; i < 2 && !broken; i++)
			if (!dirs[i].done)
				step(&dirs[i], &broken);
	}
out:
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (dirs[i].pipe[j] >= 0)
				close(dirs[i].pipe[j]);
}

/* Waits until the client sent something (or the wait ends); bytes peeked. */
static ssize_t peek(struct egress *e, int fd, uint8_t *buf, size_t size, int ms)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
			      {.fd = e->stop_pipe[0], .events = POLLIN}};

	if (poll(p, 2, ms) <= 0 || p[1].revents)
		return 0;
	return recv(fd, buf, size, MSG_PEEK);
}

/* A transparent connection: the tool connected to the address it wanted. */
static void serve_transparent(struct conn *c)
{
	struct egress *e = c->e;
	char name[BPFBOX_NET_NAME_LEN] = "", rule[BPFBOX_NET_RULE_LEN],
	     why[BPFBOX_NET_RULE_LEN];
	_cleanup_free_ uint8_t *buf = malloc(PEEK_MAX);
	uint64_t out = 0, in = 0;
	uint16_t port = c->o.port;
	int how = HOW_ADDR, r = 0;
	unsigned long long deadline;
	ssize_t n = 0;
	bool http = false;

	if (!buf)
		return;
	/*
	 * A ClientHello or a request head may take more than one segment:
	 * peek again, a little later, while it is incomplete and the budget
	 * lasts. A silent tool (a server speaks first) is judged by address.
	 */
	deadline = now_ns() + FIRST_DATA_MS * 1000000ULL;
	for (;;) {
		unsigned long long t = now_ns();
		int left = t < deadline ? (int)((deadline - t) / 1000000) + 1 : 0;
		ssize_t got;

		if (!left)
			break;
		if (n == 0) {
			got = peek(e, c->fd, buf, PEEK_MAX, left);
		} else {
			struct pollfd sp = { .fd = e->stop_pipe[0], .events = POLLIN };

			/* Data is there already (poll would return at once): wait a bit. */
			if (poll(&sp, 1, left < 5 ? left : 5) != 0)
				break;
			got = recv(c->fd, buf, PEEK_MAX, MSG_PEEK | MSG_DONTWAIT);
		}
		if (got <= 0 || got == n) {
			if (got <= 0 && n == 0)
				break;
			continue;
		}
		n = got;
		r = tls_sni(buf, n, name, sizeof(name));
		if (r > 0) {
			how = HOW_SNI;
			break;
		}
		if (r == 0 && http_method(buf, n)) {
			http = true;
			r = http_host(buf, n, name, sizeof(name));
			if (r > 0)
				how = HOW_HOST;
			if (r >= 0)
				break;
		} else if (r == 0) {
			break;
		}
		if ((size_t)n >= PEEK_MAX)
			break;
	}
	if (how != HOW_ADDR) {
		/* The name asked for must be one the resolver gave this address for. */
		if (!judge(e, name, NULL, port, false, rule)) {
			snprintf(why, sizeof(why), "%s",
				 rule[0] ? "net_deny" : "no net_allow rule");
			goto deny;
		}
		if (!cache_has(e, name, c->o.addr, NULL, 0)) {
			snprintf(why, sizeof(why),
				 "address not resolved for %s by the session",
				 name);
			goto deny;
		}
	} else {
		/* No name on the wire: one the resolver answered this address for. */
		if (!cache_has(e, NULL, c->o.addr, name, sizeof(name))) {
			snprintf(why, sizeof(why),
				 "address not resolved by the session");
			rule[0] = '\0';
			goto deny;
		}
		if (!judge(e, name, NULL, port, false, rule)) {
			snprintf(why, sizeof(why), "%s",
				 rule[0] ? "net_deny" : "no net_allow rule");
			goto deny;
		}
	}
	if (forbidden(e, c->o.addr)) {
		snprintf(why, sizeof(why), "address not reachable by name");
		goto deny;
	}
	c->up = connect_upstream(e, c->o.addr, port);
	if (c->up < 0) {
		snprintf(why, sizeof(why), "upstream: %s", strerror(-c->up));
		emit(e, &c->o, false, BPFBOX_NET_TCP, how, name, c->o.addr,
		     port, rule, why, 0, 0);
		reset(c->fd);
		return;
	}
	splice_both(e, c->fd, c->up, &out, &in);
	emit(e, &c->o, true, BPFBOX_NET_TCP, how, name, c->o.addr, port, rule,
	     "", out, in);
	return;
deny:
	emit(e, &c->o, false, BPFBOX_NET_TCP, how, name, c->o.addr, port, rule,
	     why, 0, 0);
	if (http)
		send_403(c->fd, name[0] ? name : "this host", port, why);
	else
		reset(c->fd);
}

/* Reads one request head (consumed) into buf; its length or -1. */
static ssize_t read_head(struct egress *e, int fd, char *buf, size_t size)
{
	size_t len = 0;

	while (len + 1 < size) {
		ssize_t n = peek(e, fd, (uint8_t *)buf + len, size - 1 - len,
				 UPSTREAM_MS);
		char *end;

		if (n <= 0)
			return -1;
		buf[len + n] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			/* Consume exactly the head; the body stays in the socket. */
			size_t want = end + 4 - buf;

			if (recv(fd, buf + len, want - len, 0) !=
			    (ssize_t)(want - len))
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

/* The tool used HTTP_PROXY: CONNECT host:port, or METHOD http://host[:port]/... */
static void serve_explicit(struct conn *c)
{
	struct egress *e = c->e;
	char head[8192], name[BPFBOX_NET_NAME_LEN] = "",
			 rule[BPFBOX_NET_RULE_LEN] = "";
	char why[BPFBOX_NET_RULE_LEN], method[16], target[2048], version[16];
	uint8_t addrs[16][16], *addr = NULL;
	uint64_t out = 0, in = 0;
	unsigned long port = 80;
	ssize_t len = read_head(e, c->fd, head, sizeof(head));
	bool tunnel;
	char *h, *colon, *path = NULL;
	size_t n = 0;

	if (len < 0 ||
	    sscanf(head, "%15s %2047s %15s", method, target, version) != 3) {
		reset(c->fd);
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
		send_403(c->fd, "this host", 0, why);
		emit(e, &c->o, false, BPFBOX_NET_CONNECT, HOW_CONNECT, "", NULL,
		     0, "", why, 0, 0);
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
	if (!judge(e, name, NULL, port, false, rule)) {
		snprintf(why, sizeof(why), "%s",
			 rule[0] ? "net_deny" : "no net_allow rule");
		goto deny;
	}
	if (resolve(e, name, addrs, 16, &n) < 0) {
		snprintf(why, sizeof(why), "%s does not resolve", name);
		goto deny;
	}
	for (size_t i = 0; i < n; i++) {
		if (forbidden(e, addrs[i])) {
			snprintf(why, sizeof(why),
				 "rebinding: %s resolves to an address not "
				 "reachable by name",
				 name);
			addr = addrs[i];
			goto deny;
		}
	}
	addr = addrs[0];
	c->up = connect_upstream(e, addr, port);
	if (c->up < 0) {
		snprintf(why, sizeof(why), "upstream: %s", strerror(-c->up));
		goto deny;
	}
	if (tunnel) {
		static const char ok[] =
			"HTTP/1.1 200 Connection established\r\n\r\n";

		(void)!write(c->fd, ok, sizeof(ok) - 1);
	} else {
		/* The request again in origin form: METHOD /path VERSION, then the rest. */
		char *rest = strstr(head, "\r\n");
		char line[2100];
		int ll = snprintf(line, sizeof(line), "%s %s%s %s", method,
				  path ? "/" : "/", path ? path + 1 : "",
				  version);

		if (write(c->up, line, ll) != ll ||
		    (rest && write(c->up, rest, strlen(rest)) !=
				     (ssize_t)strlen(rest))) {
			reset(c->fd);
			return;
		}
	}
	splice_both(e, c->fd, c->up, &out, &in);
	emit(e, &c->o, true, BPFBOX_NET_CONNECT, HOW_CONNECT, name, addr, port,
	     rule, "", out, in);
	return;
deny:
	emit(e, &c->o, false, BPFBOX_NET_CONNECT, HOW_CONNECT, name, addr, port,
	     rule, why, 0, 0);
	send_403(c->fd, name[0] ? name : "this host", port, why);
}

static void *conn_thread(void *arg)
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
	worker_done(e);
	return NULL;
}

static bool spawn(struct egress *e, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	bool ok;

	pthread_mutex_lock(&e->lock);
	e->active++;
	pthread_mutex_unlock(&e->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ok = pthread_create(&t, &attr, fn, arg) == 0;
	pthread_attr_destroy(&attr);
	if (!ok)
		worker_done(e);
	return ok;
}

static void accept_one(struct egress *e)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct bpfbox_orig_key key = {.proxy_port = e->tcp_port};
	struct conn *c;
	int fd = accept4(e->tcp_fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (ss.ss_family == AF_INET)
		key.client_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	c = calloc(1, sizeof(*c));
	/* Only the session's sockets, whose original sockops recorded, are served. */
	if (!c || ss.ss_family != AF_INET ||
	    bpf_map_lookup_and_delete_elem(e->o.orig_fd, &key, &c->o) < 0 ||
	    c->o.session != e->o.session) {
		free(c);
		reset(fd);
		close(fd);
		return;
	}
	c->e = e;
	c->fd = fd;
	c->up = -1;
	if (!spawn(e, conn_thread, c)) {
		close(fd);
		free(c);
	}
}

static void receive_query(struct egress *e)
{
	struct query *q = malloc(sizeof(*q));
	ssize_t n;

	if (!q)
		return;
	q->e = e;
	q->fromlen = sizeof(q->from);
	n = recvfrom(e->udp_fd, q->buf, sizeof(q->buf), MSG_DONTWAIT,
		     (struct sockaddr *)&q->from, &q->fromlen);
	if (n < 12) {
		free(q);
		return;
	}
	q->len = n;
	if (!spawn(e, query_thread, q))
		free(q);
}

static void *main_thread(void *arg)
{
	struct egress *e = arg;
	struct pollfd p[3] = {{.fd = e->tcp_fd, .events = POLLIN},
			      {.fd = e->udp_fd, .events = POLLIN},
			      {.fd = e->stop_pipe[0], .events = POLLIN}};

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

/* The upstream resolver: ADDR[:PORT], or the first nameserver of resolv.conf. */
static int upstream_parse(struct egress *e, const char *spec, char *err,
			  size_t size)
{
	char host[INET6_ADDRSTRLEN + 8] = "", line[256];
	unsigned long port = 53;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&e->upstream;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&e->upstream;

	if (spec) {
		const char *colon = strrchr(spec, ':');

		if (colon && strchr(spec, '.')) {
			snprintf(host, sizeof(host), "%.*s",
				 (int)(colon - spec), spec);
			port = strtoul(colon + 1, NULL, 10);
		} else {
			snprintf(host, sizeof(host), "%s", spec);
		}
	} else {
		_cleanup_fclose_ FILE *f = fopen("/etc/resolv.conf", "re");

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "nameserver %45s", host) == 1)
				break;
		if (!host[0])
			snprintf(host, sizeof(host), "127.0.0.1");
	}
	memset(&e->upstream, 0, sizeof(e->upstream));
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1 && port &&
	    port <= 65535) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		e->upstream_len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 && port &&
	    port <= 65535) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		e->upstream_len = sizeof(*s6);
		return 0;
	}
	snprintf(err, size,
		 "invalid net_resolver '%s'; use ADDR[:PORT], e.g. 10.0.0.2:53",
		 spec ? spec : host);
	return -EINVAL;
}

static int bind_local(int type, uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 1024) < 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int add_rule(struct egress *e, const char *text, bool deny)
{
	struct rule *list = deny ? e->deny : e->allow;
	size_t *n = deny ? &e->n_deny : &e->n_allow;
	struct rule r;

	if (parse_rule(text, &r) < 0)
		return -EINVAL;
	for (size_t i = 0; i < *n; i++)
		if (streq(list[i].text, r.text))
			return 0;
	if (*n >= MAX_RULES)
		return -ENOSPC;
	list[(*n)++] = r;
	return 0;
}

int egress_rule_add(struct egress *e, const char *rule, bool deny)
{
	int r;

	pthread_mutex_lock(&e->lock);
	r = add_rule(e, rule, deny);
	pthread_mutex_unlock(&e->lock);
	return r;
}

int egress_rule_remove(struct egress *e, const char *rule, bool deny)
{
	struct rule *list = deny ? e->deny : e->allow;
	size_t *n = deny ? &e->n_deny : &e->n_allow;
	int r = -ENOENT;

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < *n; i++) {
		if (!streq(list[i].text, rule))
			continue;
		memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof(list[0]));
		(*n)--;
		r = 0;
		break;
	}
	pthread_mutex_unlock(&e->lock);
	return r;
}

int egress_start(struct egress **out, const struct egress_opts *o, char *err,
		 size_t size)
{
	struct egress *e = calloc(1, sizeof(*e));
	sigset_t pipe_set, old_set;
	int r;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->o = *o;
	e->tcp_fd = e->udp_fd = e->stop_pipe[0] = e->stop_pipe[1] = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->idle, NULL);
	for (size_t i = 0; o->allow && i < o->allow->n; i++) {
		r = add_rule(e, o->allow->v[i], false);
		if (r < 0) {
			snprintf(err, size, "invalid net_allow rule '%s'",
				 o->allow->v[i]);
			goto fail;
		}
	}
	for (size_t i = 0; o->deny && i < o->deny->n; i++) {
		r = add_rule(e, o->deny->v[i], true);
		if (r < 0) {
			snprintf(err, size, "invalid net_deny rule '%s'",
				 o->deny->v[i]);
			goto fail;
		}
	}
	r = upstream_parse(e, o->resolver, err, size);
	if (r < 0)
		goto fail;
	own_addresses(e);
	e->tcp_fd = bind_local(SOCK_STREAM, &e->tcp_port);
	e->udp_fd = bind_local(SOCK_DGRAM, &e->udp_port);
	if (e->tcp_fd < 0 || e->udp_fd < 0 ||
	    pipe2(e->stop_pipe, O_CLOEXEC) < 0) {
		r = e->tcp_fd < 0   ? e->tcp_fd
		    : e->udp_fd < 0 ? e->udp_fd
				    : -errno;
		snprintf(err, size,
			 "cannot open the egress proxy on 127.0.0.1: %s",
			 strerror(-r));
		goto fail;
	}
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
		snprintf(err, size, "cannot start the egress proxy: %s",
			 strerror(-r));
		goto fail;
	}
	*out = e;
	return 0;
fail:
	if (e->tcp_fd >= 0)
		close(e->tcp_fd);
	if (e->udp_fd >= 0)
		close(e->udp_fd);
	if (e->stop_pipe[0] >= 0) {
		close(e->stop_pipe[0]);
		close(e->stop_pipe[1]);
	}
	free(e);
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
	close(e->tcp_fd);
	close(e->udp_fd);
	close(e->stop_pipe[0]);
	close(e->stop_pipe[1]);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->idle);
	free(e);
}
