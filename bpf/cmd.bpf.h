/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command rules (docs/config.md "Command rules"): the table and the
 * executable half of the matching, one definition for the two places that
 * judge an exec. bpf/cmd.bpf.c at sched_process_exec (every rule, argv
 * too) and bpf/lsm.bpf.c at bprm_check_security (rules that need no argv,
 * which is not readable there yet). userspace/policy/rules.c decides the
 * same way for the top-level command.
 */
#ifndef BPFBOX_CMD_BPF_H
#define BPFBOX_CMD_BPF_H

#include "common.bpf.h"

/* Session index -> the session's rules, first match wins. */
BPFBOX_MAP(cmd_rules, BPF_MAP_TYPE_HASH, BPFBOX_MAX_SESSIONS, BPF_F_NO_PREALLOC, __u32,
	   struct bpfbox_cmd_table);

#define CMD_FNV_BASIS 0xcbf29ce484222325ULL

/*
 * What an exec is known by: the path it named (bprm->filename) and the
 * name of the file that runs (a symlink resolved; for a script, its
 * interpreter), with their FNV-1a hashes as rules_hash() computes them.
 */
struct cmd_exe {
	char path[BPFBOX_PATH_LEN];
	char target[BPFBOX_CMD_EXE_LEN];
	__u32 base; /* offset of the last component of path */
	__u32 pad;
	__u64 h_name, h_target, h_path;
};

static __always_inline __u64 cmd_fnv_step(__u64 h, char c)
{
	return (h ^ (unsigned char)c) * 0x100000001b3ULL;
}

struct cmd_hash_ctx {
	struct cmd_exe *x;
	__u64 h_name, h_path, h_target;
};

/* Byte i of x->path: 1 (stop) at its NUL. A bpf_loop callback: verified once. */
static long cmd_hash_path_cb(__u32 i, void *data)
{
	struct cmd_hash_ctx *h = data;
	char c = h->x->path[i & (BPFBOX_PATH_LEN - 1)];

	if (!c)
		return 1;
	if (c == '/') {
		h->x->base = i + 1;
		h->h_name = CMD_FNV_BASIS;
	} else {
		h->h_name = cmd_fnv_step(h->h_name, c);
	}
	h->h_path = cmd_fnv_step(h->h_path, c);
	return 0;
}

/* Byte i of x->target: 1 (stop) at its NUL. */
static long cmd_hash_target_cb(__u32 i, void *data)
{
	struct cmd_hash_ctx *h = data;
	char c = h->x->target[i & (BPFBOX_CMD_EXE_LEN - 1)];

	if (!c)
		return 1;
	h->h_target = cmd_fnv_step(h->h_target, c);
	return 0;
}

/*
 * x->base and the hashes, from x->path and x->target as read. The loops
 * are bpf_loop's: unrolled or bounded here, each byte was a verifier state
 * of its own (145,000 instructions processed, a second of every load).
 */
static __always_inline void cmd_exe_hash(struct cmd_exe *x)
{
	struct cmd_hash_ctx h = {.x = x,
				 .h_name = CMD_FNV_BASIS,
				 .h_path = CMD_FNV_BASIS,
				 .h_target = CMD_FNV_BASIS};

	x->base = 0;
	bpf_loop(BPFBOX_PATH_LEN, cmd_hash_path_cb, &h, 0);
	bpf_loop(BPFBOX_CMD_EXE_LEN, cmd_hash_target_cb, &h, 0);
	x->h_name = h.h_name;
	x->h_target = h.h_target;
	x->h_path = h.h_path;
}

/* A prefix compared by bpf_loop: one verified callback, not a state per byte. */
struct cmd_starts_ctx {
	const char *str;    /* x->path or x->target */
	const char *prefix; /* a rule's exe */
	__u32 off;	    /* where in str the compared part starts */
	__u32 ok;
};

static long cmd_starts_path_cb(__u32 j, void *data)
{
	struct cmd_starts_ctx *c = data;

	if (c->str[(c->off + j) & (BPFBOX_PATH_LEN - 1)] !=
	    c->prefix[j & (BPFBOX_CMD_EXE_LEN - 1)]) {
		c->ok = 0;
		return 1;
	}
	return 0;
}

static long cmd_starts_target_cb(__u32 j, void *data)
{
	struct cmd_starts_ctx *c = data;

	if (c->str[j & (BPFBOX_CMD_EXE_LEN - 1)] != c->prefix[j & (BPFBOX_CMD_EXE_LEN - 1)]) {
		c->ok = 0;
		return 1;
	}
	return 0;
}

/* Whether prefix (n bytes) starts x->path at off (path) or x->target (!path). */
static __always_inline bool cmd_starts(struct cmd_exe *x, bool path, __u32 off, const char *prefix,
				       __u32 n)
{
	struct cmd_starts_ctx c = {
		.str = path ? x->path : x->target, .prefix = prefix, .off = off, .ok = 1};

	n = n < BPFBOX_CMD_EXE_LEN ? n : BPFBOX_CMD_EXE_LEN;
	bpf_loop(n, path ? cmd_starts_path_cb : cmd_starts_target_cb, &c, 0);
	return c.ok;
}

/* Whether rule r's exe (name, path, or a prefix of either) matches x. */
static __always_inline bool cmd_exe_matches(const struct bpfbox_cmd_rule *r, struct cmd_exe *x)
{
	__u32 base = x->base & (BPFBOX_PATH_LEN - 1);

	switch (r->exe_kind) {
	case BPFBOX_CMD_EXE_ANY:
		return true;
	case BPFBOX_CMD_EXE_NAME:
		return r->exe_hash == x->h_name || r->exe_hash == x->h_target;
	case BPFBOX_CMD_EXE_PATH:
		return r->exe_hash == x->h_path;
	case BPFBOX_CMD_EXE_NAME_PREFIX:
		if (base > BPFBOX_PATH_LEN - BPFBOX_CMD_EXE_LEN)
			return cmd_starts(x, false, 0, r->exe, r->exe_len);
		return cmd_starts(x, true, base, r->exe, r->exe_len) ||
		       cmd_starts(x, false, 0, r->exe, r->exe_len);
	case BPFBOX_CMD_EXE_PATH_PREFIX:
		return cmd_starts(x, true, 0, r->exe, r->exe_len);
	}
	return false;
}

/* A walk of the rules of one exec, first match wins. */
struct cmd_walk {
	struct cmd_exe *x;
	struct bpfbox_cmd_table *t;
	__u64 found;  /* bit i: rule i's argv pattern is in argv */
	__s32 hit;    /* the first rule that matched, -1: none (or undecided) */
	__u32 noargv; /* argv unknown (the LSM exec hook): judge by exe alone */
};

/*
 * Rule i: its argv, then its exe; the first match stops the walk. With
 * noargv a rule with a pattern can be judged only when it denies (the
 * exec is denied whether it matches or not): passed over; an allow or ask
 * one ends the walk undecided. A bpf_loop callback: verified once.
 */
static long cmd_rule_cb(__u32 i, void *data)
{
	struct cmd_walk *c = data;
	struct bpfbox_cmd_rule *r;

	if (i >= BPFBOX_CMD_RULES_MAX)
		return 1;
	r = &c->t->r[i];
	if (r->pat_len && !c->noargv && !(c->found & (1ULL << i)))
		return 0;
	if (!cmd_exe_matches(r, c->x))
		return 0;
	if (r->pat_len && c->noargv)
		return r->action != BPFBOX_CMD_DENY;
	c->hit = i;
	return 1;
}

/* c->hit: the rule that decides c->x's exec, -1 when none does. */
static __always_inline void cmd_walk_rules(struct cmd_walk *c)
{
	__u32 n = c->t->n;

	c->hit = -1;
	bpf_loop(n < BPFBOX_CMD_RULES_MAX ? n : BPFBOX_CMD_RULES_MAX, cmd_rule_cb, c, 0);
}

/* An exec record of rule r's decision; argv as the caller fills it. */
static __always_inline struct bpfbox_exec_event *cmd_report(struct bpfbox_session *ss,
							    struct cmd_exe *x,
							    const struct bpfbox_cmd_rule *r,
							    __u8 layer, __u32 flags)
{
	/* err -EPERM: the BPF LSM returns it; at the tracepoint the process is killed. */
	struct bpfbox_exec_event *e = deny_reserve(ss, sizeof(*e), BPFBOX_EV_EXEC, layer);

	if (!e)
		return NULL;
	e->argv_truncated = BPFBOX_EXEC_RULE | (r->action == BPFBOX_CMD_ASK ? BPFBOX_EXEC_ASK : 0) |
			    flags;
	__builtin_memcpy(e->filename, x->path, sizeof(e->filename));
	__builtin_memcpy(e->rule, r->label, sizeof(e->rule));
	e->via[0] = '\0';
	e->argv_len = 0;
	return e;
}

#endif
