/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RELP, the Reliable Event Logging Protocol (rsyslog's imrelp), client side,
 * for the syslog sinks relp:// and relp+tls:// (docs/sinks.md). A frame is
 *
 *   TXNR SP COMMAND SP DATALEN [SP DATA] LF
 *
 * The client opens a session (txnr 1, "open" with its offers), then sends
 * each message as "syslog" with the next txnr; the server answers every
 * frame with "rsp" and the same txnr, "200 OK" when it took the message.
 * A message is delivered when its answer came; what was not answered when
 * the connection ends is sent again on the next one (at least once).
 * Only the framing lives here; syslog.c drives the connection.
 */
#ifndef BPFBOX_RELP_H
#define BPFBOX_RELP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELP_HEAD_MAX 32 /* "999999999 syslog 4294967295 " */
#define RELP_RX_MAX   4096

struct relp {
	uint32_t txnr; /* the last one used on this connection */
	bool opened;   /* the server answered our open with 200 */
	char rx[RELP_RX_MAX];
	size_t rx_len;
};

/* A new connection: txnrs start again at 1. */
void relp_reset(struct relp *r);

/* The open frame (txnr 1) into buf; its length, or 0 if buf is too small. */
size_t relp_open_frame(struct relp *r, char *buf, size_t size);

/* "TXNR syslog LEN " of the next message of len bytes into buf; its length. *txnr: taken. */
size_t relp_syslog_head(struct relp *r, size_t len, char *buf, size_t size, uint32_t *txnr);

/*
 * Received bytes. Calls on_rsp(ctx, txnr, code) for every complete answer
 * (code: the 3-digit status, 200 OK). Returns 0; 1 when the server closes
 * the session (serverclose); -EPROTO on a frame that is not RELP.
 */
int relp_input(struct relp *r, const char *data, size_t len,
	       void (*on_rsp)(void *ctx, uint32_t txnr, int code), void *ctx);

#endif
