/* SPDX-License-Identifier: GPL-2.0 */
/* What ops.c, ops_lsm.c, ops_register.c and ops_session.c share. */
#ifndef BPFBOX_DAEMON_OPS_INTERNAL_H
#define BPFBOX_DAEMON_OPS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

struct json_object;

/* The largest limit or count a request may carry (as policy files: 2^40). */
#define DAEMON_COUNT_MAX (1LL << 40)

#define META_XATTR	 "trusted.bpfbox"      /* owner of a session cgroup, for re-adoption */
#define ASKS_XATTR	 "trusted.bpfbox.asks" /* its open asks, for the next daemon's line */
#define MAX_COMMAND_ARGS 4096
#define MAX_NET_RULES	 256
#define MAX_LSM_RULES	 1024  /* deny patterns, and exec_deny entries */
#define MAX_WRITABLE	 256   /* directories of the writable set */
#define META_MAX	 65536 /* the trusted.bpfbox xattr */
#define END_WAIT_MS	 1000  /* then the end is retried every tick */
#define ENDED_KEPT	 256   /* ended session ids remembered, for clear errors */
/* Subscription bit of session.paused, session.resumed, session.killed. */

/* ops.c */
void ops_reply_error(struct daemon *d, struct conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
struct jsonw *ops_reply_begin(struct daemon *d);
void ops_reply_send(struct daemon *d, struct conn *c);
int ops_bad_member(struct daemon *d, struct conn *c, const char *op, const char *key,
		   const char *want);
struct dsession *ops_request_session(struct daemon *d, struct conn *c, struct json_object *req,
				     const char *op);
/* ops_lsm.c */
void ops_write_meta(struct dsession *s, struct json_object *lsm);
int ops_apply_lsm(struct daemon *d, uint32_t index, struct json_object *lsm, const char **bad);
void ops_drop_filled(struct json_object *req, uint32_t flags);
bool ops_full_access(struct json_object *req);
int ops_apply_writable(struct daemon *d, struct dsession *s, uint32_t index,
		       struct json_object *req);
void ops_remove_lsm(struct daemon *d, struct dsession *s);
void ops_read_meta(struct daemon *d, struct dsession *s);
bool ops_want_lsm(struct json_object *req);
struct json_object *ops_lsm_lists(struct json_object *req, struct json_object **out);
/* ops_register.c */
bool ops_string_array(struct json_object *arr, size_t max, size_t len_max, bool absolute);
/*
 * register's checks before anything is made (ops_register_check.c); 0, or
 * -1 when replied. With "prepared" and a cgroup made ahead, *id becomes its
 * name (in pick, 33 bytes).
 */
int ops_register_check(struct daemon *d, struct conn *c, struct json_object *req, const char **id,
		       char *pick, uint32_t *flags, int64_t *pid);
/* No BPF LSM for the session: the rules only it enforces are not enforced. */
void ops_register_lsm_only(struct json_object *req);
void op_register(struct daemon *d, struct conn *c, struct json_object *req);
/* A register's labels: at most 32 strings, keys up to 64 bytes, values up to 256. */
bool ops_labels_valid(struct json_object *o);
struct session_cgroup;
/* A free session index, or 0 after an ENOSPC reply naming op. */
uint32_t ops_free_index(struct daemon *d, struct conn *c, const char *op);
/* What an adopted cgroup brings to its register: the network namespace
 * its egress proxy lives in (-1: none, a policy without name rules). */
struct adopt_opts {
	int netns_fd;
};
/*
 * A register's steps once its cgroup is there (ops_register.c): the session
 * made, its BPF LSM lists, command rules and network entries, in the table,
 * its owner recorded on the cgroup. 0 with *out, or -ECANCELED when replied
 * (what was made undone; an adopted cgroup is never removed). adopt: NULL
 * for a session of bpfbox run's.
 */
int ops_register_session(struct daemon *d, struct conn *c, struct json_object *req, const char *id,
			 uint32_t index, const struct session_cgroup *cg, uint32_t flags,
			 const struct adopt_opts *adopt, struct dsession **out, uint16_t *proxy);
void ops_register_reply(struct daemon *d, struct conn *c, struct dsession *s,
			struct json_object *req, uint16_t proxy, int64_t pid);
/* ops_adopt.c: a cgroup someone else runs, a session under a named policy. */
void op_adopt(struct daemon *d, struct conn *c, struct json_object *req);
/*
 * Re-adoption of a sessions-map entry whose cgroup is not under the
 * parent: an adopted cgroup (its "adopted" meta) found in the cgroup2
 * tree, with its pinned links. 0 re-adopted, else -errno (not one).
 */
int ops_readopt_adopted(struct daemon *d, uint64_t cgroup_id, uint32_t index, uint32_t flags);
/*
 * The tick, for an adopted session whose cgroup is gone, made again or has
 * a child cgroup: ended. True when it ended and s is freed.
 */
bool ops_adopt_tick(struct daemon *d, struct dsession *s);
/* An adopted session's cgroup programs detached (nothing of it runs now). */
void ops_adopt_detach(struct daemon *d, struct dsession *s);
/* ops_session.c */
int ops_attach_pid(struct daemon *d, struct conn *c, struct dsession *s, int64_t pid);
bool ops_valid_pid(int64_t pid);
/*
 * A session registered ahead whose client cloned its child into the cgroup
 * (no attach) runs once the cgroup is populated: its state says so.
 */
void ops_note_running(struct dsession *s);
/*
 * ops_pause.c: session.paused, session.resumed, session.killed to the sinks
 * and the subscribers; a session frozen (ev: its reason, oom_kills, pid)
 * or killed (ev: its reason) and so recorded. 0, or -errno (nothing done).
 */
struct session_event;
void ops_emit_lifecycle(struct daemon *d, struct dsession *s, const struct session_event *ev);
int ops_pause_session(struct daemon *d, struct dsession *s, struct session_event *ev);
int ops_kill_session(struct daemon *d, struct dsession *s, struct session_event *ev);
void op_attach(struct daemon *d, struct conn *c, struct json_object *req);
void op_unregister(struct daemon *d, struct conn *c, struct json_object *req);
void op_pause(struct daemon *d, struct conn *c, struct json_object *req);
void op_resume(struct daemon *d, struct conn *c, struct json_object *req);
void op_kill(struct daemon *d, struct conn *c, struct json_object *req);
/* ops_session.c: an agent_flush_session callback that drops the records. */
int ops_discard_record(void *ctx, void *data, size_t size);
/* ops_ask.c: the command rules' asks (docs/runtime.md "Approvals") */
/* The register asks for asks ("asks": true, --ask-fd): BPFBOX_SF_CMD_ASK, the session's state. */
int ops_ask_register(struct daemon *d, struct dsession *s, struct json_object *req);
/* Whether a question of s waits for its answer (its exec stopped, the session frozen for it). */
bool ops_ask_pending(const struct dsession *s);
/* An exec record stopped for an answer: taken (true), the session frozen, session.ask said. */
bool ops_ask_record(struct daemon *d, struct dsession *s, const void *data, size_t size);
void op_answer(struct daemon *d, struct conn *c, struct json_object *req);
/* Questions past the pause timeout denied (each tick); at the end, every one open. */
void ops_ask_tick(struct daemon *d, struct dsession *s);
void ops_ask_end(struct daemon *d, struct dsession *s);
void ops_ask_free(struct daemon *d, struct dsession *s);
/* A stale ask's process (ctl_ask_deny_stale) denied: its denial counted and logged. */
struct ctl_asked;
void ops_ask_denied_stale(struct daemon *d, struct dsession *s, const struct ctl_asked *q,
			  long holder);
/* Re-adoption: the session's stale ask, if any, denied (docs/daemon.md); true: killed. */
bool ops_ask_readopt(struct daemon *d, struct dsession *s);
/* ops_ask_net.c: --net-ask through the daemon (docs/network.md) */
int ops_net_ask_setup(struct daemon *d);
/* egress_opts.ask of a session (arg: its dsession_ask_ctx), on a proxy thread. */
bool ops_net_ask(void *arg, const char *name, uint16_t port, int stop_fd);
/* The loop: the questions the threads sent, each opened or denied. */
void ops_net_ask_read(struct daemon *d);
/* The thread's answer (and the loop's hold on the question let go). */
void ops_net_answer(void *net_q, bool yes);
/* ops_ask.c: a destination's question opened like an exec's: false when it cannot be. */
bool ops_ask_net_open(struct daemon *d, struct dsession *s, void *net_q, const char *name,
		      uint16_t port);
/* ops_net.c */
int ops_add_net_rules(struct daemon *d, struct conn *c, struct dsession *s,
		      struct json_object *rules);
int ops_start_egress(struct daemon *d, struct conn *c, struct dsession *s, struct json_object *req,
		     int netns_fd, uint16_t *proxy, uint16_t *dns);
int ops_add_net_holes(struct daemon *d, struct conn *c, struct dsession *s,
		      struct json_object *req);
void op_net(struct daemon *d, struct conn *c, struct json_object *req);
/* ops.c: whether the cgroup holds a process (cgroup.events). */
bool ops_cgroup_populated(const char *cgroup);
/* ops.c: an ended session id, remembered for a clear error (ended: true). */
void ops_ended(const char *id);
bool ops_ended_recently(const char *id);

#endif
