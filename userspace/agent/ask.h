/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ask flow of the command rules (docs/config.md "Command rules"): an
 * exec that a rule says to ask about is stopped by bpf/cmd.bpf.c
 * (SIGSTOP at sched_process_exec, before its first instruction); here the
 * session's cgroup is frozen (so that no sibling sends it SIGCONT),
 * session.ask goes to the audit stream and the status channel, and the
 * runtime's answer is read from the ask fd: approve (once), always (the
 * rule allows from now on, for this session), deny. No answer within the
 * session's pause timeout is deny. In daemon mode the daemon does the
 * same with the answers the `answer` op brings (daemon/ops_ask.c), and
 * `bpfbox run` relays its runtime's answers from the ask fd to it.
 */
#ifndef BPFBOX_AGENT_ASK_H
#define BPFBOX_AGENT_ASK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpfbox/events.h"

struct agent;

struct ask {
	int fd;				/* the runtime's answers; -1: nobody answers */
	uint32_t session_index;		/* the key of the session's rule table */
	struct bpfbox_cmd_table *table; /* as in the kernel (always rewrites it); NULL: read there */
	char buf[256];			/* a partial answer line */
	size_t len;
	uint64_t asked, approved, denied;
};

enum ask_answer { ASK_DENY, ASK_APPROVE, ASK_ALWAYS, ASK_TIMEOUT, ASK_OTHER };

/*
 * Ids of --net-ask questions (a destination, not an exec) start here:
 * never an exec's, whose id is its record's sequence number.
 */
#define ASK_NET_ID0 (1ULL << 40)

const char *ask_answer_name(enum ask_answer a);

/*
 * Parses one answer line: "ID approve|always|deny" or just the word (for
 * the one question open). -EINVAL for anything else; an ID other than id
 * is -ESTALE (an answer to an earlier question, ignored).
 */
int ask_parse(const char *line, uint64_t id, enum ask_answer *out);

/*
 * Waits up to timeout_ms for the answer to question id on a->fd (lines
 * are read whole; answers to other ids are skipped). ASK_TIMEOUT when
 * none came in time, ASK_DENY when the fd reached its end or broke.
 */
enum ask_answer ask_wait(struct ask *a, uint64_t id, uint64_t timeout_ms);
/* The same, and ASK_OTHER as soon as other_fd (>= 0) is readable first. */
enum ask_answer ask_wait_or(struct ask *a, uint64_t id, uint64_t timeout_ms, int other_fd);

/*
 * approve always: the rule labelled label allows from now on in this
 * session (its entry in the kernel's table). 0, -ENOENT, or -errno.
 */
int ask_always(struct ask *a, struct agent *ag, const char *label);

/*
 * The answer's effect on the process stopped at its exec: continued
 * (approve; always also switches the rule, approve once when that fails)
 * or killed (anything else). Counted in a. true when it runs on.
 */
bool ask_apply(struct ask *a, struct agent *ag, pid_t pid, const char *rule, enum ask_answer ans);

#endif
