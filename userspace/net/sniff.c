// SPDX-License-Identifier: GPL-2.0
/*
 * The name a connection of the session asks for (docs/network.md): the
 * SNI of its TLS ClientHello or the Host of its HTTP request, peeked at
 * without consuming it (proxy.c judges it).
 */
#include "egress_internal.h"

/*
 * The extension of a TLS ClientHello in p whose type is type: 1 found (its
 * data at p[*at, *at + *n)), 0 none, -1 incomplete, -2 a ClientHello
 * longer than its record (the rest in the next ones, unread).
 */
static int tls_ext(const uint8_t *p, size_t len, unsigned int type, size_t *at, size_t *n)
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
	if (4 + (size_t)((p[off + 1] << 16) | (p[off + 2] << 8) | p[off + 3]) > rec)
		return -2;
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
		unsigned int t = (p[off] << 8) | p[off + 1];

		l = (p[off + 2] << 8) | p[off + 3];
		off += 4;
		if (off + l > end)
			return 0;
		if (t == type) {
			*at = off;
			*n = l;
			return 1;
		}
		off += l;
	}
	return 0;
}

/* The SNI of a TLS ClientHello in p; as tls_ext. */
static int tls_sni(const uint8_t *p, size_t len, char *out, size_t size)
{
	size_t off, l, nl;
	int r = tls_ext(p, len, 0, &off, &l);

	if (r <= 0)
		return r;
	if (l < 5 || p[off + 2] != 0)
		return 0;
	nl = (p[off + 3] << 8) | p[off + 4];
	if (nl == 0 || nl >= size || 5 + nl > l)
		return 0;
	for (size_t i = 0; i < nl; i++)
		out[i] = tolower(p[off + 5 + i]);
	out[nl] = '\0';
	return 1;
}

bool eg_tls_offers_h2(const uint8_t *p, size_t len)
{
	size_t off, l, end;

	if (tls_ext(p, len, 16, &off, &l) <= 0 || l < 2)
		return false;
	end = off + l;
	for (off += 2; off < end && off + 1 + p[off] <= end; off += 1 + p[off])
		if (p[off] == 2 && p[off + 1] == 'h' && p[off + 2] == '2')
			return true;
	return false;
}

/*
 * The name on the wire: the TLS SNI or the HTTP Host of the first data.
 * A ClientHello or a request head may take more than one segment: peek
 * again, a little later, while it is incomplete and the budget lasts. A
 * silent tool (a server speaks first) is judged by address: HOW_ADDR.
 */
int eg_sniff_name(struct conn *c, uint8_t *buf, char *name, size_t size, bool *http, ssize_t *seen)
{
	struct egress *e = c->e;
	unsigned long long deadline;
	int how = HOW_ADDR, r = 0;
	ssize_t n = 0;

	deadline = now_ns() + FIRST_DATA_MS * 1000000ULL;
	for (;;) {
		unsigned long long t = now_ns();
		int left = t < deadline ? (int)((deadline - t) / 1000000) + 1 : 0;
		ssize_t got;

		if (!left)
			break;
		if (n == 0) {
			got = eg_peek(e, c->fd, buf, PEEK_MAX, left);
		} else {
			struct pollfd sp = {.fd = e->stop_pipe[0], .events = POLLIN};

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
		r = tls_sni(buf, n, name, size);
		if (r > 0) {
			how = HOW_SNI;
			break;
		}
		if (r == 0 && eg_http_method(buf, n)) {
			*http = true;
			r = eg_http_host(buf, n, name, size);
			if (r > 0)
				how = HOW_HOST;
			if (r >= 0)
				break;
		} else if (r == 0) {
			break;
		}
		if ((size_t)n >= PEEK_MAX || r == -2)
			break;
	}
	/* TLS that was never read whole: no name can be judged, nor the address. */
	*seen = n && r < 0 && buf[0] == 0x16 ? -1 : n;
	return how;
}
