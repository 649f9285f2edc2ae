/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RFC 5424 syslog messages of audit events, for the network sinks:
 *
 *   <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG
 *
 * PRI from the sink's facility and the event (a denial is notice, loss
 * and sink.error warning, the rest info), TIMESTAMP the event's time in
 * microseconds, MSGID its type, no structured data, MSG the event (JSON
 * or OCSF, no BOM). Over TCP each message is framed by octet counting
 * (RFC 6587: "LEN SP MSG"); over UDP it is one datagram.
 */
#ifndef BPFBOX_SYSLOG_H
#define BPFBOX_SYSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"

#define SYSLOG_UDP_MAX 65507 /* payload of one IPv4 datagram */

enum {
	SYSLOG_SEV_WARNING = 4,
	SYSLOG_SEV_NOTICE = 5,
	SYSLOG_SEV_INFO = 6,
};

/* The severity of an event of kind kind; deny: it reports a denial. */
int syslog_severity(enum ev_kind kind, bool deny);

/*
 * Writes the header (up to and with the space before MSG) into buf and
 * returns its length, or -ENOSPC. time_ns is the event's time
 * (CLOCK_REALTIME ns; 0: now).
 */
int syslog_header(char *buf, size_t size, int facility, int severity, int64_t time_ns,
		  const char *hostname, const char *app, pid_t pid, const char *msgid);

#endif
