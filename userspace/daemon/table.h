/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's sessions: the 32-hex id a client chose, the index the BPF
 * programs put in every record (bpfbox_session.id), the cgroup, who owns
 * it and in which state it is. Also rebuilt from the kernel and the cgroup
 * tree when the daemon starts again (re-adoption, docs/daemon.md).
 */
#ifndef BPFBOX_DAEMON_TABLE_H
#define BPFBOX_DAEMON_TABLE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpfbox/events.h"
#include "../audit/encode.h"

struct json_object;
#include "../monitor/limits.h"
#include "../monitor/oom.h"
#include "../lib/denial.h"

#define DAEMON_ADOPT_LINKS 24 /* the cgroup programs an adopted cgroup gets */

enum dsession_state {
	DS_REGISTERED, /* cgroup made, no process attached yet */
	DS_RUNNING,    /* a process was attached */
	DS_ADOPTED,    /* found at start; ends when its cgroup is empty */
	DS_ENDING,     /* killed, waiting for its cgroup to go */
	DS_PAUSED,     /* frozen: OOM, disk limit or `bpfbox pause` (docs/limits.md) */
};

/* What session.end says; kept while the end is deferred. */
struct dsession_end {
	const char *reason; /* "unregister", "client gone", "processes exited" */
	bool have_exit;	    /* the client told how the command ended */
	int64_t exit_code;
	bool timed_out;
	uint64_t output_bytes, output_dropped;
};

struct egress;
struct dask;

/* What a session's proxy thread needs to ask the loop (--net-ask). */
struct daemon;
struct dsession_ask_ctx {
	struct daemon *d;
	char session[33];
	uint64_t timeout_ms;
};

struct dsession {
	char id[33];
	uint32_t index; /* 1-based, the value of the sessions map */
	uint64_t cgroup_id;
	char cgroup[PATH_MAX];
	uint32_t flags;	       /* BPFBOX_SF_* */
	pid_t client_pid;      /* the peer that registered it; 0 unknown */
	uid_t uid;	       /* that peer's uid */
	pid_t child;	       /* the attached process, 0 none */
	int64_t start_real_ns; /* CLOCK_REALTIME */
	uint64_t owner;	       /* serial of the registering connection, 0 none */
	enum dsession_state state;
	char *start_line;	  /* session.start, replayed to its subscribers */
	char *command;		  /* a JSON array, or NULL */
	char *labels;		  /* the runtime's labels, a JSON object, or NULL */
	bool command_truncated;	  /* cut at DAEMON_COMMAND_MAX */
	struct audit_flood flood; /* --audit-rate: its records' token bucket */
	struct dsession_end end;
	bool has_lim;			  /* lim was planned and applied at register */
	struct session_limits lim;	  /* memory, pids, cpu; the v1 cgroups to remove */
	enum dsession_state resume_state; /* what a resume returns to */
	uint64_t paused_at_ns;		  /* CLOCK_MONOTONIC */
	char pause_reason[16];
	char level[16];		       /* level_enabled of its register, "" unknown (adopted) */
	bool killed;		       /* by the kill op */
	bool adopted;		       /* a cgroup of someone else's (adopt): never removed */
	bool cgroup_gone;	       /* adopted: its path is no longer its cgroup */
	int links[DAEMON_ADOPT_LINKS]; /* adopted: the cgroup programs attached to it */
	int nlinks;
	/* adopted: its memory.events watched each tick (no bpfbox run's monitor) */
	struct oom_watch oom;
	bool oom_on;
	uint64_t pause_timeout_ms;	/* adopted: a pause older than this kills it */
	bool drained;			/* its records read, session.end written (ops_session.c) */
	bool remove_said;		/* that its cgroup does not go away was logged */
	bool lsm;			/* its deny and exec_deny lists are in the BPF LSM maps */
	struct json_object *lsm_lists;	/* {"deny","exec_deny","writable"} written there */
	struct bpfbox_inode_key *wkeys; /* its writable set's keys, to delete them */
	size_t nwkeys;
	struct egress *egress;	/* name rules: its proxy and resolver, NULL none */
	struct denials denials; /* what its records denied, for the client's summary */
	struct dask *ask;	/* its asks (ops_ask.c); NULL: nobody answers, an ask denies */
	struct dsession_ask_ctx net_ask; /* --net-ask: its proxy's questions (ops_ask_net.c) */
	struct dsession *next;
};

struct table {
	struct dsession *head;
	struct dsession *by_index[BPFBOX_MAX_SESSIONS + 1];
	size_t count;
	uint32_t hint; /* where the search for a free index starts */
};

struct dsession *table_find(const struct table *t, const char *id);
struct dsession *table_by_index(const struct table *t, uint32_t index);
/* A free index, not one freed just before when possible; 0 when full. */
uint32_t table_free_index(struct table *t);
/* Takes s (calloc'ed, index set); -EEXIST if its id or index is taken. */
int table_add(struct table *t, struct dsession *s);
/* Unlinks and frees s. */
void table_remove(struct table *t, struct dsession *s);
const char *dsession_state_name(enum dsession_state st);

#endif
