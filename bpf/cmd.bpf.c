// SPDX-License-Identifier: GPL-2.0
/*
 * Command rules on every exec of a session (docs/config.md "Command
 * rules"): at sched_process_exec the new program is in place but has not
 * run one instruction of its own; a deny (or an ask nobody can answer) is
 * a SIGKILL sent there with bpf_send_signal, delivered before the return
 * to user space. userspace/policy/rules.c compiles the table and decides
 * the same way for the top-level command. A session without rules returns
 * at its flag.
 */
#include "common.bpf.h"

#define SIGKILL 9
#define SIGSTOP 19
#define SCAN	BPFBOX_CMD_ARGV_SCAN /* a power of two */

/* Session index -> the session's rules, first match wins. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFBOX_MAX_SESSIONS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bpfbox_cmd_table);
} cmd_rules SEC(".maps");

struct cmd_scratch {
	char argv[SCAN];		 /* joined with spaces */
	char path[BPFBOX_PATH_LEN];	 /* the file the exec named */
	char target[BPFBOX_CMD_EXE_LEN]; /* the name of what ran (a symlink's target) */
	__u32 alen;
	__u32 base; /* offset of the last component of path */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cmd_scratch);
} cmd_scratch SEC(".maps");

struct find_ctx {
	struct cmd_scratch *s;
	struct bpfbox_cmd_table *t;
	__u64 found; /* bit i: rule i's pattern is in argv */
};

static __always_inline __u64 fnv_step(__u64 h, char c)
{
	return (h ^ (unsigned char)c) * 0x100000001b3ULL;
}

/* NULs between the arguments become spaces. */
static long join_cb(__u32 i, void *data)
{
	struct cmd_scratch *s = ((struct find_ctx *)data)->s;

	if (s->argv[i & (SCAN - 1)] == '\0')
		s->argv[i & (SCAN - 1)] = ' ';
	return 0;
}

/*
 * Position pos of argv: one bit test of the pair of bytes there against
 * the first two bytes of every pattern (the table's pairs set); only on a
 * hit are the patterns compared. One pass over argv for all rules.
 */
struct cmp_ctx {
	struct find_ctx *c;
	__u32 pos;
};

/* Whether rule i's pattern starts at argv position pos. */
static long cmp_cb(__u32 i, void *data)
{
	struct cmp_ctx *m = data;
	struct find_ctx *c = m->c;
	struct cmd_scratch *s = c->s;
	struct bpfbox_cmd_rule *r;
	__u32 pos = m->pos, n, j;

	if (i >= BPFBOX_CMD_RULES_MAX)
		return 1;
	r = &c->t->r[i];
	n = r->pat_len;
	if (!n || (c->found & (1ULL << i)) || pos + n > s->alen)
		return 0;
	for (j = 0; j < BPFBOX_CMD_PAT_LEN; j++) {
		if (j >= n)
			break;
		if (s->argv[(pos + j) & (SCAN - 1)] != r->pat[j])
			return 0;
	}
	/* Whole words only (include/bpfbox/events.h); argv[alen] is NUL. */
	if (!bpfbox_cmd_starts_ok(pos ? s->argv[(pos - 1) & (SCAN - 1)] : 0, r->pat[0]) ||
	    !bpfbox_cmd_ends_ok(s->argv[(pos + n) & (SCAN - 1)],
				r->pat[(n - 1) & (BPFBOX_CMD_PAT_LEN - 1)]))
		return 0;
	c->found |= 1ULL << i;
	return 0;
}

/*
 * Position pos of argv: one bit test of the pair of bytes there against
 * the first two bytes of every pattern (the table's pairs set); only on a
 * hit are the patterns compared. One pass over argv for all rules.
 */
static long find_cb(__u32 pos, void *data)
{
	struct find_ctx *c = data;
	struct cmd_scratch *s = c->s;
	struct bpfbox_cmd_table *t = c->t;
	unsigned char c0 = s->argv[pos & (SCAN - 1)];
	unsigned char c1 = s->argv[(pos + 1) & (SCAN - 1)];
	__u32 word = (__u32)c0 << 2 | c1 >> 6;
	struct cmp_ctx m = {.c = c, .pos = pos};

	/* Older verifiers (6.1) lose the bound through the OR: the mask stays. */
	asm volatile("" : "+r"(word));
	word &= BPFBOX_CMD_PAIR_WORDS - 1;
	if (!(t->pairs[word] & (1ULL << (c1 & 63))))
		return 0;
	bpf_loop(t->n < BPFBOX_CMD_RULES_MAX ? t->n : BPFBOX_CMD_RULES_MAX, cmp_cb, &m, 0);
	return 0;
}

/* Whether prefix (n bytes) starts str (at most max bytes, NUL-terminated). */
static __always_inline bool starts(const char *str, const char *prefix, __u32 n)
{
	for (__u32 j = 0; j < BPFBOX_CMD_EXE_LEN; j++) {
		if (j >= n)
			return true;
		if (str[j] != prefix[j])
			return false;
	}
	return true;
}

static __always_inline bool exe_matches(struct bpfbox_cmd_rule *r, struct cmd_scratch *s,
					__u64 h_name, __u64 h_target, __u64 h_path)
{
	__u32 base = s->base & (BPFBOX_PATH_LEN - 1);

	switch (r->exe_kind) {
	case BPFBOX_CMD_EXE_ANY:
		return true;
	case BPFBOX_CMD_EXE_NAME:
		return r->exe_hash == h_name || r->exe_hash == h_target;
	case BPFBOX_CMD_EXE_PATH:
		return r->exe_hash == h_path;
	case BPFBOX_CMD_EXE_NAME_PREFIX:
		if (base > BPFBOX_PATH_LEN - BPFBOX_CMD_EXE_LEN)
			return starts(s->target, r->exe, r->exe_len);
		return starts(s->path + base, r->exe, r->exe_len) ||
		       starts(s->target, r->exe, r->exe_len);
	case BPFBOX_CMD_EXE_PATH_PREFIX:
		return starts(s->path, r->exe, r->exe_len);
	}
	return false;
}

static __always_inline void report(struct bpfbox_session *ss, struct cmd_scratch *s,
				   struct bpfbox_cmd_rule *r, unsigned long start, __u32 raw,
				   __u32 pending)
{
	struct bpfbox_exec_event *e = event_reserve(ss, sizeof(*e), BPFBOX_EV_EXEC);

	if (!e)
		return;
	e->hdr.decision = BPFBOX_DENY;
	e->hdr.layer = BPFBOX_LAYER_EXEC_TP;
	/* What the BPF LSM would have returned; here the process is killed. */
	e->hdr.err = -EPERM;
	e->argv_truncated = BPFBOX_EXEC_RULE | (r->action == BPFBOX_CMD_ASK ? BPFBOX_EXEC_ASK : 0) |
			    pending;
	if (raw >= SCAN)
		e->argv_truncated |= BPFBOX_EXEC_TRUNCATED;
	__builtin_memcpy(e->filename, s->path, sizeof(e->filename));
	__builtin_memcpy(e->rule, r->label, sizeof(e->rule));
	e->via[0] = '\0';
	e->argv_len = 0;
	raw &= SCAN - 1;
	if (raw > 0 && bpf_probe_read_user(e->argv, raw, (void *)start) == 0)
		e->argv_len = raw;
	bpf_ringbuf_submit(e, 0);
}

struct rule_ctx {
	struct cmd_scratch *s;
	struct bpfbox_cmd_table *t;
	__u64 h_name, h_target, h_path;
	__u64 found; /* from find_cb */
	__s32 hit;   /* the first rule that matched, -1: none */
};

/* Rule i: exe, then argv; the first match stops the walk. */
static long rule_cb(__u32 i, void *data)
{
	struct rule_ctx *c = data;
	struct bpfbox_cmd_rule *r;

	if (i >= BPFBOX_CMD_RULES_MAX)
		return 1;
	r = &c->t->r[i];
	if (r->pat_len && !(c->found & (1ULL << i)))
		return 0;
	if (!exe_matches(r, c->s, c->h_name, c->h_target, c->h_path))
		return 0;
	c->hit = i;
	return 1;
}

SEC("tracepoint/sched/sched_process_exec")
int cmd_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	struct bpfbox_session *ss = current_session();
	struct bpfbox_cmd_table *t;
	struct cmd_scratch *s;
	struct task_struct *task;
	unsigned long start, end, len;
	__u64 h_name = 0xcbf29ce484222325ULL, h_target = h_name, h_path = h_name;
	__u32 zero = 0, raw;
	unsigned int off;
	struct rule_ctx rc;
	struct bpfbox_cmd_rule *r;

	if (!ss || !(ss->flags & BPFBOX_SF_CMD_RULES))
		return 0;
	t = bpf_map_lookup_elem(&cmd_rules, &ss->id);
	s = bpf_map_lookup_elem(&cmd_scratch, &zero);
	if (!t || !s)
		return 0;
	off = ctx->__data_loc_filename & 0xFFFF;
	bpf_probe_read_kernel_str(s->path, sizeof(s->path), (void *)ctx + off);
	task = (struct task_struct *)bpf_get_current_task();
	s->target[0] = '\0';
	bpf_probe_read_kernel_str(s->target, sizeof(s->target),
				  BPF_CORE_READ(task, mm, exe_file, f_path.dentry, d_name.name));
	s->base = 0;
	for (__u32 i = 0; i < BPFBOX_PATH_LEN; i++) {
		char c = s->path[i];

		if (!c)
			break;
		if (c == '/') {
			s->base = i + 1;
			h_name = 0xcbf29ce484222325ULL;
		} else {
			h_name = fnv_step(h_name, c);
		}
		h_path = fnv_step(h_path, c);
	}
	for (__u32 i = 0; i < BPFBOX_CMD_EXE_LEN; i++) {
		if (!s->target[i])
			break;
		h_target = fnv_step(h_target, s->target[i]);
	}
	start = BPF_CORE_READ(task, mm, arg_start);
	end = BPF_CORE_READ(task, mm, arg_end);
	len = end - start;
	raw = len > SCAN ? SCAN : len;
	/* The last argument's NUL is not part of the joined line. */
	len = len > SCAN - 1 ? SCAN - 1 : len;
	len &= SCAN - 1;
	s->alen = 0;
	rc.found = 0;
	if (len > 0 && bpf_probe_read_user(s->argv, len, (void *)start) == 0) {
		if (raw <= SCAN - 1 && s->argv[(len - 1) & (SCAN - 1)] == '\0')
			len--;
		struct find_ctx jc = {.s = s, .t = t};

		s->alen = len;
		bpf_loop(len, join_cb, &jc, 0);
		/* the byte after the last: the pair test at the end reads it */
		end = len;
		asm volatile("" : "+r"(end)); /* keep the mask for 6.1's verifier */
		s->argv[end & (SCAN - 1)] = '\0';
		bpf_loop(len, find_cb, &jc, 0);
		rc.found = jc.found;
	}
	rc.s = s;
	rc.t = t;
	rc.h_name = h_name;
	rc.h_target = h_target;
	rc.h_path = h_path;
	rc.hit = -1;
	bpf_loop(t->n < BPFBOX_CMD_RULES_MAX ? t->n : BPFBOX_CMD_RULES_MAX, rule_cb, &rc, 0);
	if (rc.hit < 0)
		return 0;
	r = &t->r[rc.hit & (BPFBOX_CMD_RULES_MAX - 1)];
	if (r->action == BPFBOX_CMD_ALLOW)
		return 0;
	/*
	 * ask with someone to answer: stopped here, before its first
	 * instruction; the agent freezes the session's cgroup and waits for
	 * the runtime (userspace/agent/ask.c). Else killed.
	 */
	if (r->action == BPFBOX_CMD_ASK && (ss->flags & BPFBOX_SF_CMD_ASK)) {
		bpf_send_signal(SIGSTOP);
		report(ss, s, r, start, raw, BPFBOX_EXEC_PENDING);
		return 0;
	}
	bpf_send_signal(SIGKILL);
	report(ss, s, r, start, raw, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
