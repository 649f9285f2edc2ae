/* SPDX-License-Identifier: GPL-2.0 */
/* What via_daemon.c (register, attach, unregister) and via_daemon_sub.c (the event stream, the asks) share. */
#ifndef BPFBOX_RUN_VIA_DAEMON_INTERNAL_H
#define BPFBOX_RUN_VIA_DAEMON_INTERNAL_H

struct daemon_run;

/* Subscribes to the session's events; the session polls them (hooks.on_poll). 0 or -errno. */
int vd_subscribe(struct daemon_run *r);
/* After the end: the last records and session.end, for up to 5 s. */
void vd_drain_sub(struct daemon_run *r);

#endif
