// SPDX-License-Identifier: GPL-2.0
/* RELP framing, client side (relp.h; the protocol as rsyslog's librelp speaks it). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "relp.h"

/* What we offer: the version and the one command we send. */
static const char open_offer[] = "relp_version=0\nrelp_software=bpfbox\ncommands=syslog";

void relp_reset(struct relp *r)
{
	r->txnr = 0;
	r->opened = false;
	r->rx_len = 0;
}

/* The txnr after the last one: 1..999999999, then 1 again (the protocol's range). */
static uint32_t next_txnr(struct relp *r)
{
	r->txnr = r->txnr >= 999999999U ? 1 : r->txnr + 1;
	return r->txnr;
}

size_t relp_open_frame(struct relp *r, char *buf, size_t size)
{
	int n;

	r->txnr = 0;
	n = snprintf(buf, size, "%u open %zu %s\n", next_txnr(r), sizeof(open_offer) - 1,
		     open_offer);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

size_t relp_syslog_head(struct relp *r, size_t len, char *buf, size_t size, uint32_t *txnr)
{
	int n;

	*txnr = next_txnr(r);
	n = snprintf(buf, size, "%u syslog %zu ", *txnr, len);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* A decimal number of at most max digits at *p, then one space or LF. */
static int number(const char **p, const char *end, int max, unsigned long long *out)
{
	int digits = 0;

	*out = 0;
	while (*p < end && **p >= '0' && **p <= '9' && digits < max) {
		*out = *out * 10 + (unsigned long long)(**p - '0');
		(*p)++;
		digits++;
	}
	return digits ? 0 : -EPROTO;
}

/*
 * One frame at the start of r->rx: its length when complete, 0 when more
 * is needed, -EPROTO when it is not RELP. *txnr, cmd, *code filled.
 */
static int frame(const struct relp *r, unsigned long long *txnr, char cmd[33], int *code)
{
	const char *p = r->rx, *end = r->rx + r->rx_len, *c;
	unsigned long long len;
	size_t n;

	if (number(&p, end, 9, txnr) < 0)
		return p == end ? 0 : -EPROTO;
	if (p == end)
		return 0;
	if (*p++ != ' ')
		return -EPROTO;
	for (c = p; p < end && *p != ' ' && p - c < 32; p++)
		if (*p < 'a' || *p > 'z')
			return -EPROTO;
	if (p == end)
		return 0;
	if (*p != ' ' || p == c)
		return -EPROTO;
	n = p - c;
	memcpy(cmd, c, n);
	cmd[n] = '\0';
	p++;
	if (number(&p, end, 9, &len) < 0)
		return p == end ? 0 : -EPROTO;
	if (p == end)
		return 0;
	if (len && *p++ != ' ')
		return -EPROTO;
	if ((size_t)(end - p) < len + 1)
		return (size_t)(p - r->rx) + len + 1 > sizeof(r->rx) ? -EPROTO : 0;
	if (p[len] != '\n')
		return -EPROTO;
	/* "200 OK", "500 error text": the status first. */
	*code = 0;
	if (len >= 3 && p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' &&
	    p[2] <= '9')
		*code = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
	return (int)(p - r->rx + len + 1);
}

int relp_input(struct relp *r, const char *data, size_t len,
	       void (*on_rsp)(void *ctx, uint32_t txnr, int code), void *ctx)
{
	while (len) {
		size_t take = sizeof(r->rx) - r->rx_len;
		int n;

		if (take > len)
			take = len;
		memcpy(r->rx + r->rx_len, data, take);
		r->rx_len += take;
		data += take;
		len -= take;
		for (;;) {
			unsigned long long txnr;
			char cmd[33];
			int code;

			n = frame(r, &txnr, cmd, &code);
			if (n < 0)
				return -EPROTO;
			if (!n)
				break;
			if (!strcmp(cmd, "serverclose"))
				return 1;
			if (!strcmp(cmd, "rsp")) {
				if (txnr == 1 && !r->opened && code == 200)
					r->opened = true;
				else
					on_rsp(ctx, (uint32_t)txnr, code);
			}
			/* Anything else from a server (a hint) is not for a client to act on. */
			memmove(r->rx, r->rx + n, r->rx_len - n);
			r->rx_len -= n;
		}
		if (r->rx_len == sizeof(r->rx))
			return -EPROTO;
	}
	return 0;
}
