/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the session layer: the supervision loop (supervise.c) and the
 * status channel and denial summary (status.c) that session.c drives.
 */
#ifndef BPFBOX_SUPERVISE_H
#define BPFBOX_SUPERVISE_H

#include <sys/types.h>

#include "session.h"

/* The command's side of the loop. */
struct supervise_io {
	int out_r;	/* stdout (and stderr when merged, or the pty master); -1: none */
	int err_r;	/* stderr; -1: merged into out_r or not relayed */
	int in_w;	/* the pty master for our stdin; -1: stdin is not relayed */
	int notify_fd;	/* the seccomp listener of network deny; -1: none */
};

/*
 * Relays output, watches the child, the deadlines and the monitors,
 * forwards signals; fills s->result. Closes io's fds.
 */
void supervise(struct session *s, pid_t child, struct supervise_io *io, int sig_fd,
	       struct monitor *mon);

/* The status channel (--status-fd): one JSON line per lifecycle event. */
void status_started(const struct session *s, pid_t pid);
void status_lifecycle(const struct session *s, const struct session_event *ev);
void status_ended(const struct session *s);

/* Counts one denial seen by the supervisor. */
void session_denial_add(struct session *s, const char *layer, const char *op, const char *what,
			int err);
/* The denial summary at the end: stderr and the status channel. */
void session_denials_report(const struct session *s);

#endif
