/* SPDX-License-Identifier: GPL-2.0 */
/* The private home of a session and the PATH it sees (docs/runtime.md). */
#ifndef BPFBOX_HOME_H
#define BPFBOX_HOME_H

#include <stddef.h>
#include <sys/types.h>

#include "session.h"

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

#endif
