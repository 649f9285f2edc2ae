/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The supervision loop's pieces, private to its files: supervise.c (the
 * loop: deadlines, signals, the child), supervise_relay.c (output under
 * the cap) and supervise_pause.c (pauses, resumes and kills for a limit).
 */
#ifndef BPFBOX_SUPERVISE_INTERNAL_H
#define BPFBOX_SUPERVISE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "session_internal.h"

/*
 * One relayed stream. The first half of the output cap passes at once; past
 * it, each stream keeps its last bytes in a ring, written at the end after
 * a marker line that says how much was cut (docs/runtime.md).
 */
struct stream {
	int from, to;
	char *ring;
	size_t ring_cap, ring_len, ring_start;
	uint64_t cut; /* bytes dropped from the middle */
	char last;    /* the last byte written to `to` */
};

/* Lifecycle state of the supervision loop (docs/limits.md). */
struct life {
	struct monitor *mon; /* NULL: nothing watched */
	pid_t child;
	bool paused;
	bool ending;	/* killed by us: no more lifecycle transitions */
	bool oom_early; /* frozen when the OOM killer was invoked; its kill not counted yet */
	bool ask_hold;	/* frozen by the daemon for a command rule's ask: its state read again */
	bool setup;	/* handed over before the command exec'd: its report still to read */
	uint64_t oom_early_until;
	uint64_t paused_at;
	char reason[48];
};

/* supervise_relay.c */
void sup_write_all(int fd, const char *buf, size_t len, char *last);
bool sup_relay(struct session *s, struct stream *st, uint64_t *head_left);
void sup_flush_tail(struct session *s, struct stream *st);

/* supervise_pause.c */
void sup_kill_session(struct session *s, pid_t leader);
void sup_kill_for_limit(struct session *s, struct life *lf, const char *reason,
			enum session_cause cause);
void sup_oom_invoked(struct session *s, struct life *lf);
void sup_oom_thaw(struct session *s, struct life *lf, uint64_t *deadline);
void sup_pause_for(struct session *s, struct life *lf, const char *reason);
void sup_frozen_changed(struct session *s, struct life *lf, uint64_t *deadline);
void sup_check_killed(struct session *s, struct life *lf, int status);

#endif
