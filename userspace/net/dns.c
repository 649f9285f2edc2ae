// SPDX-License-Identifier: GPL-2.0
/*
 * The session's resolver (docs/network.md): a query is answered only for an
 * allowed name, from the upstream resolver, and refused when an answer is
 * an address no name may reach (rebinding); the answers go to the name
 * cache the proxy judges connects by.
 */
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>

#include "egress_internal.h"
#include "../lib/sockdiag.h"

/* ---- DNS ---------------------------------------------------------------- */

/* A byte a host name's label may hold: letters, digits, '-' and '_' (as the rules). */
static bool host_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/*
 * The question's name as it is on the wire, in presentation form for the
 * record (a '.' or '\\' inside a label escaped, any other byte outside
 * printable ASCII as \DDD), at most size bytes with its NUL.
 */
static void dns_wire_name(const uint8_t *p, size_t len, char *out, size_t size)
{
	size_t off = 12, n = 0;

	out[0] = '\0';
	while (off < len && p[off] && p[off] <= 63 && n + 1 < size) {
		size_t l = p[off++];

		if (n)
			out[n++] = '.';
		for (size_t i = 0; i < l && off + i < len && n + 5 < size; i++) {
			uint8_t c = p[off + i];

			if (c == '.' || c == '\\')
				n += snprintf(out + n, size - n, "\\%c", c);
			else if (c <= ' ' || c >= 0x7f)
				n += snprintf(out + n, size - n, "\\%03u", c);
			else
				out[n++] = c;
		}
		off += l;
		out[n < size ? n : size - 1] = '\0';
	}
}

/*
 * The question's name (lower case, dotted) and type; its end offset, -1 if
 * malformed, -2 if a label holds a byte no host name may hold (a NUL, a
 * '.', a space...): what is judged must be exactly what goes upstream.
 */
static int dns_question(const uint8_t *p, size_t len, char *name, size_t size, uint16_t *qtype)
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
		for (size_t i = 0; i < l; i++) {
			if (!host_byte(p[off + i]))
				return -2;
			name[n++] = tolower(p[off + i]);
		}
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
static int dns_answers(const uint8_t *p, size_t len, uint8_t out[][16], size_t max, size_t *n,
		       int *rcode)
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
			eg_map4(out[(*n)++], p + off);
		else if (*n < max && type == 28 && rdlen == 16)
			memcpy(out[(*n)++], p + off, 16);
		off += rdlen;
	}
	return 0;
}

/* Sends q to the upstream resolver and waits for its answer. */
static ssize_t dns_upstream(struct egress *e, const uint8_t *q, size_t qlen, uint8_t *ans,
			    size_t size)
{
	_cleanup_close_ int fd = socket(e->upstream.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct pollfd pfd[2] = {{.events = POLLIN}, {.fd = e->stop_pipe[0], .events = POLLIN}};
	ssize_t n;

	if (fd < 0 || connect(fd, (struct sockaddr *)&e->upstream, e->upstream_len) < 0 ||
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
int eg_resolve(struct egress *e, const char *name, uint8_t out[][16], size_t max, size_t *n)
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
	if (alen < 0 || dns_answers(ans, alen, out, max, n, &rcode) < 0 || rcode || !*n)
		return -1;
	return 0;
}

static void refuse_query(struct query *q, uint8_t rcode)
{
	q->buf[2] |= 0x80; /* response */
	q->buf[3] = (q->buf[3] & 0xf0) | rcode;
	q->buf[6] = q->buf[7] = q->buf[8] = q->buf[9] = q->buf[10] = q->buf[11] = 0;
	sendto(q->e->udp_fd, q->buf, q->len, 0, (struct sockaddr *)&q->from, q->fromlen);
}

void *eg_query_thread(void *arg)
{
	struct query *q = arg;
	struct egress *e = q->e;
	char name[BPFBOX_NET_NAME_LEN], rule[BPFBOX_NET_RULE_LEN], why[BPFBOX_NET_RULE_LEN];
	uint8_t ans[1500], addrs[32][16];
	struct bpfbox_net_orig client, *o;
	size_t n = 0;
	uint16_t qtype;
	bool have;
	ssize_t alen;
	int end, rcode;

	/* The last process of the session that sent DNS: close enough to name it. */
	have = !e->o.explicit_only &&
	       bpf_map_lookup_elem(e->o.dns_client_fd, &e->o.session, &client) == 0;
	o = have ? &client : NULL;
	end = dns_question(q->buf, q->len, name, sizeof(name), &qtype);
	if (end == -2) {
		dns_wire_name(q->buf, q->len, name, sizeof(name));
		refuse_query(q, 5);
		eg_emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, NULL, 53, "",
			"not a host name: a label byte not a letter, digit, - or _", 0, 0);
		goto out;
	}
	if (end < 0) {
		refuse_query(q, 1); /* FORMERR */
		goto out;
	}
	if (eg_secret_name_leak(e, name, why, sizeof(why))) {
		refuse_query(q, 5);
		eg_emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, NULL, 53, "", why, 0, 0);
		goto out;
	}
	if (!eg_judge_ask(e, name, 0, true, rule)) {
		snprintf(why, sizeof(why), "%s", rule[0] ? "net_deny" : "no net_allow rule");
		refuse_query(q, 5);
		eg_emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, NULL, 53, rule, why, 0, 0);
		goto out;
	}
	alen = dns_upstream(e, q->buf, q->len, ans, sizeof(ans));
	if (alen < 0 || dns_answers(ans, alen, addrs, 32, &n, &rcode) < 0) {
		refuse_query(q, 2); /* SERVFAIL */
		eg_emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, NULL, 53, rule,
			"upstream resolver failed", 0, 0);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (eg_forbidden(e, addrs[i])) {
			char a[INET6_ADDRSTRLEN];

			eg_addr_str(addrs[i], a, sizeof(a));
			snprintf(why, sizeof(why), "rebinding: answer %s is not reachable by name",
				 a);
			refuse_query(q, 5);
			eg_emit(e, o, false, BPFBOX_NET_DNS, HOW_QUERY, name, addrs[i], 53, rule,
				why, 0, 0);
			goto out;
		}
	}
	/* Known before the tool can connect to them. */
	for (size_t i = 0; i < n; i++)
		eg_cache_put(e, name, addrs[i]);
	sendto(e->udp_fd, ans, alen, 0, (struct sockaddr *)&q->from, q->fromlen);
	eg_emit(e, o, true, BPFBOX_NET_DNS, HOW_QUERY, name, n ? addrs[0] : NULL, 53, rule, "", 0,
		0);
out:
	free(q);
	eg_worker_done(e, false);
	return NULL;
}

/*
 * Whether a datagram that reached the resolver was sent by a socket of the
 * session: the UDP socket bound to its source address and port belongs to
 * the session's cgroup. Any local user can send to the resolver's port; its
 * queries must not enter the session's name cache.
 */
bool eg_query_from_session(struct egress *e, const struct sockaddr_storage *from)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)from;
	uint64_t cg;

	if (from->ss_family != AF_INET)
		return false;
	/* Without BPF the resolver's socket is in the session's own namespace. */
	if (e->o.explicit_only)
		return true;
	return sockdiag_udp4_cgroup(e->diag_fd, ++e->diag_seq, htonl(INADDR_LOOPBACK),
				    htons(e->udp_port), s4->sin_addr.s_addr, s4->sin_port,
				    &cg) == 0 &&
	       cg == e->o.cgroup_id;
}

/*
 * At the start: the resolver's own socket (bound, not connected: a
 * datagram from any port reaches it) must be found with its cgroup. Without udp_diag (a module in
 * Debian's kernels, loaded on first use unless module loading is off) no
 * query could be told to come from the session, and every one would be
 * dropped: the session is refused at its start instead.
 */
int eg_diag_check(struct egress *e, char *err, size_t size)
{
	uint64_t cg;
	int r = sockdiag_udp4_cgroup(e->diag_fd, ++e->diag_seq, htonl(INADDR_LOOPBACK), htons(9),
				     htonl(INADDR_LOOPBACK), htons(e->udp_port), &cg);

	if (r < 0)
		snprintf(err, size,
			 "egress by name needs the kernel's UDP socket diagnostics to tell the "
			 "session's DNS queries from others' (sock_diag: %s); load them with "
			 "'modprobe udp_diag' or run without name rules",
			 strerror(-r));
	return r;
}

/* The upstream resolver: ADDR[:PORT], or the first nameserver of resolv.conf. */
int eg_upstream_parse(struct egress *e, const char *spec, char *err, size_t size)
{
	char host[INET6_ADDRSTRLEN + 8] = "", line[256];
	unsigned long port = 53;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&e->upstream;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&e->upstream;

	if (spec) {
		const char *colon = strrchr(spec, ':');

		if (colon && strchr(spec, '.')) {
			snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
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
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1 && port && port <= 65535) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		e->upstream_len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 && port && port <= 65535) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		e->upstream_len = sizeof(*s6);
		return 0;
	}
	snprintf(err, size, "invalid net_resolver '%s'; use ADDR[:PORT], e.g. 10.0.0.2:53",
		 spec ? spec : host);
	return -EINVAL;
}

/* The resolver's sock_diag socket (the sender of a query); its waits end. */

/*
 * The C library answers a name of /etc/hosts from the file, and the
 * resolver never hears of it: its allowed names (judged as a query is,
 * their addresses as an answer's, rebinding refused) are cached at the
 * start, so that a connect to such an address is known by its name.
 */
void eg_hosts_load(struct egress *e, const char *path)
{
	char line[1024], rule[BPFBOX_NET_RULE_LEN];
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *save = NULL, *addr = strtok_r(line, " \t\r\n", &save), *name;
		uint8_t a[16];
		struct in_addr v4;

		if (!addr || addr[0] == '#')
			continue;
		if (inet_pton(AF_INET, addr, &v4) == 1)
			eg_map4(a, &v4);
		else if (inet_pton(AF_INET6, addr, a) != 1)
			continue;
		if (eg_forbidden(e, a))
			continue;
		while ((name = strtok_r(NULL, " \t\r\n", &save)) && name[0] != '#')
			if (eg_judge(e, name, NULL, 0, true, rule))
				eg_cache_put(e, name, a);
	}
}
