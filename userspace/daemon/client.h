/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client side of the daemon's socket: what `bpfbox run` and `bpfbox
 * sessions` use. A missing socket costs one failed connect (a few µs), and
 * then `bpfbox run` goes on in embedded mode.
 */
#ifndef BPFBOX_DAEMON_CLIENT_H
#define BPFBOX_DAEMON_CLIENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* How long a call waits for its reply. */
#define DAEMON_CALL_TIMEOUT_MS 5000

struct json_object;
struct session;
struct session_result;

struct daemon_client {
	int fd;
	int timeout_ms; /* for each reply */
	bool replied;	/* the last call got a reply (its error is the daemon's) */
	int send_err;	/* of the last request sent: 0, or -errno */
	char *in;	/* what was read; grows up to DAEMON_MAX_REPLY */
	size_t in_len, cap;
	size_t taken;  /* bytes of the line handed out last */
	int attach_fd; /* sent with the next request (SCM_RIGHTS); -1: none */
};

/* The socket to use: override, else $BPFBOX_SOCKET, else the default. */
const char *daemon_socket_path(const char *override);

/*
 * Connects with replies awaited up to timeout_ms. 0, or -errno: -ENOENT,
 * -ECONNREFUSED, -EACCES (and the like) mean that no daemon answers here;
 * -EKEYREJECTED that what answers is not the daemon (daemon_peer_trusted).
 */
int daemon_client_connect(struct daemon_client *c, const char *path, int timeout_ms);

/*
 * 0 when path is a socket owned by root and the peer of fd runs as root;
 * else -EKEYREJECTED, printed (daemon_client_connect calls it before
 * anything is sent).
 */
int daemon_peer_trusted(int fd, const char *path);

void daemon_client_close(struct daemon_client *c);

/*
 * Sends req (a JSON object) and reads its reply. 0 with *reply (the caller
 * puts it) when it says ok; -errno of its "code" with its "error" in msg
 * when it does not; another -errno (-EPIPE, -ETIMEDOUT, -EPROTO) with msg
 * set when the daemon could not be talked to.
 */
int daemon_client_call(struct daemon_client *c, struct json_object *req, struct json_object **reply,
		       char *msg, size_t msg_size);
/*
 * daemon_client_call in two halves, for a caller with work to do while
 * the daemon answers: the request sent (0, or -errno, which the reply
 * half returns too), then its reply read.
 */
int daemon_client_send(struct daemon_client *c, struct json_object *req);
int daemon_client_reply(struct daemon_client *c, struct json_object **reply, char *msg,
			size_t msg_size);

/*
 * The next line, NUL-terminated without its newline, in *line (valid until
 * the next read). 1 with a line, 0 at EOF, -EAGAIN when nothing came in
 * timeout_ms, -EPROTO for a line longer than DAEMON_MAX_REPLY.
 */
int daemon_client_read_line(struct daemon_client *c, char **line, size_t *len, int timeout_ms);
/* Bytes already read past the last line (a subscription's first events). */
size_t daemon_client_pending(const struct daemon_client *c, const char **data);

/*
 * The typed calls, one per operation of docs/daemon.md; nobody else builds
 * a request. Each returns 0, or -errno as daemon_client_call does (msg set),
 * with one addition: -DAEMON_ENDED when the session named has already
 * ended (the daemon says so with "ended": true), told apart from -ENOENT,
 * a session it never knew.
 */
#define DAEMON_ENDED ESTALE

/* {"op":op} with "session":id when id is not NULL (for asynchronous senders). */
struct json_object *daemon_request(const char *op, const char *id);
struct bpfbox_policy;
/* p's network members of a register request ("net", "net_allow", "net_hosts", ...). */
void daemon_request_net(struct json_object *req, const struct bpfbox_policy *p);
/* *sessions: the "sessions" array of the reply (the caller puts it). */
int daemon_list(struct daemon_client *c, struct json_object **sessions, char *msg, size_t size);
/*
 * Subscribes c to the events of session id (NULL: every session) of the
 * types in the JSON array types (NULL: all); then read with
 * daemon_client_read_line.
 */
int daemon_subscribe(struct daemon_client *c, const char *id, struct json_object *types, char *msg,
		     size_t size);
/*
 * Pauses the session for reason ("manual", "oom", "disk"); oom_kills and
 * disk_used_mb (-1: unknown) go into session.paused. *pid and comm (may be
 * NULL) get the OOM victim the daemon names, 0 and "" when none.
 */
int daemon_pause(struct daemon_client *c, const char *id, const char *reason, int64_t oom_kills,
		 int64_t disk_used_mb, pid_t *pid, char *comm, size_t comm_size, char *msg,
		 size_t size);
/* Resumes it, raising the memory or disk limit first when not 0; *_out: the limits now. */
int daemon_resume(struct daemon_client *c, const char *id, int64_t memory_mb, int64_t disk_mb,
		  int64_t *memory_out, int64_t *disk_out, char *msg, size_t size);
int daemon_kill(struct daemon_client *c, const char *id, char *msg, size_t size);
/* The daemon's ping reply (the caller puts *reply): pid, layers, this peer's ceiling. */
struct strv;
/*
 * adopt (root): the cgroup CGROUP a session under the daemon's policy
 * POLICY, labels KEY=VALUE strings (as --label) or NULL; *reply has "session".
 */
int daemon_adopt(struct daemon_client *c, const char *cgroup, const char *policy,
		 const struct strv *labels, struct json_object **reply, char *msg, size_t size);
int daemon_ping(struct daemon_client *c, struct json_object **reply, char *msg, size_t size);
/* Has the daemon read its --config again; *sinks and *rules: what it holds now. */
int daemon_call_reload(struct daemon_client *c, int *sinks, int *rules, char *msg, size_t size);

/*
 * --no-daemon while a daemon answers on socket: 0 when its ceilings let this
 * user run without it (or no daemon answers), -EPERM with why when not.
 */
int daemon_no_daemon_allowed(const char *socket, char *why, size_t size);

/*
 * Registers s (its layers, policy, labels and command argv) with audit
 * mode "aggregate", "all" or "off". pid > 0: attaches that child of the
 * caller in the same request (one round trip); pid 0 (before the fork):
 * asks for a cgroup the daemon made ahead, whose name the reply's
 * "session" gives (session_take_id). asks: the caller answers the command
 * rules' asks (--ask-fd). *reply (the caller puts it): session,
 * level_enabled, layers, proxy_port, limits.
 */
int daemon_register(struct daemon_client *c, const struct session *s, const char *audit_mode,
		    bool asks, char *const argv[], pid_t pid, struct json_object **reply, char *msg,
		    size_t size);
/*
 * The same request, sent only: its reply is read with daemon_client_reply()
 * while the caller works. prepared false (pid 0): the session keeps the
 * caller's id, and the daemon makes its cgroup in the request. 0 or -errno.
 */
int daemon_register_send(struct daemon_client *c, const struct session *s, const char *audit_mode,
			 bool asks, char *const argv[], pid_t pid, bool prepared);
/* Answers the ask ask_id of session id: "approve", "always" or "deny". */
int daemon_answer(struct daemon_client *c, const char *id, uint64_t ask_id, const char *answer,
		  char *msg, size_t size);
/* Moves pid, a child of the caller, into the session's cgroup. */
int daemon_attach(struct daemon_client *c, const char *id, pid_t pid, char *msg, size_t size);
struct changes_set;
/*
 * Ends the session with the command's result (res NULL: nothing ran) and
 * its change set's summary (changes NULL: --changes direct), which the
 * daemon writes as session.changes; *reply (may be NULL; the caller puts
 * it) carries its "denials".
 */
int daemon_unregister(struct daemon_client *c, const char *id, const struct session_result *res,
		      const struct changes_set *changes, struct json_object **reply, char *msg,
		      size_t size);
/* Its first half: the request sent; daemon_client_reply reads the reply. */
int daemon_unregister_send(struct daemon_client *c, const char *id,
			   const struct session_result *res, const struct changes_set *changes);

#endif
