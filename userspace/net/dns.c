// SPDX-License-Identifier: GPL-2.0
/*
 * The session's resolver (docs/network.md): a query is answered only for an
 * allowed name, from the upstream resolver, and refused when an answer is
 * an address no name may reach (rebinding); the answers go to the name
 * cache the proxy judges connects by.
 */
#include "egress_internal.h"

/* ---- DNS ---------------------------------------------------------------- */

/* The question's name (lower case, dotted) and type; its end offset or -1. */
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
	have = bpf_map_lookup_elem(e->o.dns_client_fd, &e->o.session, &client) == 0;
	o = have ? &client : NULL;
	end = dns_question(q->buf, q->len, name, sizeof(name), &qtype);
	if (end < 0) {
		refuse_query(q, 1); /* FORMERR */
		goto out;
	}
	if (!eg_judge(e, name, NULL, 0, true, rule)) {
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
	eg_worker_done(e);
	return NULL;
}
