/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The OCSF form of the audit stream (docs/ocsf.md): exec, fork and exit
 * become Process Activity (1007), file File System Activity (1001),
 * connect Network Activity (4001), each with the security_control
 * profile's action and disposition, the session as actor context and
 * (session, seq) in metadata. session.start, session.end, loss and
 * sink.error become Base Events (0) carrying the original event.
 */
#ifndef BPFBOX_OCSF_H
#define BPFBOX_OCSF_H

#include "../lib/jsonw.h"

#define OCSF_VERSION "1.8.0"

struct json_object;

/*
 * Appends the OCSF event for ev (one parsed line of docs/events.md) to w
 * as a JSON line, newline included. hostname goes in device.hostname.
 * Returns 0, or -EINVAL when ev is not an event object.
 */
int ocsf_encode(struct jsonw *w, struct json_object *ev, const char *hostname);
/* The same for an event of a known kind (enum ev_kind): its "type" is not looked up. */
int ocsf_encode_kind(struct jsonw *w, int kind, struct json_object *ev, const char *hostname);

#endif
