/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the session module, private to userspace/sandbox/: the supervision
 * loop (supervise.c), the status channel and denial summary (status.c) and
 * the private home (home.c) that session.c drives.
 */
#ifndef BPFBOX_SESSION_INTERNAL_H
#define BPFBOX_SESSION_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "session.h"

/* The command's side of the loop. */
struct supervise_io {
	int out_r;	/* stdout (and stderr when merged, or the pty master); -1: none */
	int err_r;	/* stderr; -1: merged into out_r or not relayed */
	int in_w;	/* the pty master for our stdin; -1: stdin is not relayed */
	int notify_fd;	/* the seccomp listener (socket(), file changes); -1: none */
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

/* The denial summary at the end: stderr and the status channel. */
void session_denials_report(const struct session *s);

struct seccomp_denied;

/*
 * A file change the seccomp listener holds: counted as a denial when it is
 * bound to fail outside the writable paths, then run by the kernel.
 */
void session_file_op_notified(struct session *s, int listener, const struct seccomp_denied *d);

/* $HOME of the caller, else its passwd entry; NULL when neither is absolute. */
const char *session_caller_home(void);

/* Makes s->home with the config copies, owned by uid/gid; 0 or -errno (printed). */
int session_home_make(struct session *s, uid_t uid, gid_t gid);
void session_home_remove(struct session *s);

/*
 * The caller's PATH for the session into path_env: the entries that resolve
 * under the caller's home go to ro (read and exec), those a credential
 * rule covers are dropped, with one warning. 0 or -ENOMEM.
 */
int session_home_path(const struct session *s, struct strv *ro, char *path_env, size_t size);

/*
 * The policy the mount namespace builds its view from: s's, plus the
 * private home (read-write), the PATH trees of path_ro and, with
 * --read-host, the caller's home (read-only); the credential entries at the
 * top of every granted tree masked. policy_free() it.
 */
int session_view_policy(const struct session *s, const struct strv *path_ro,
			struct bpfbox_policy *view);

#endif
