// SPDX-License-Identifier: GPL-2.0
/*
 * Command rules on every exec of a session (docs/config.md "Command
 * rules"): at sched_process_exec the new program is in place but has not
 * run one instruction of its own; a deny (or an ask nobody can answer) is
 * a SIGKILL sent there with bpf_send_signal, delivered before the return
 * to user space. At Full, a deny that needs no argv was already refused in
 * the LSM exec hook (bpf/lsm.bpf.c, with the matching of bpf/cmd.bpf.h).
 * userspace/policy/rules.c compiles the table and decides the same way for
 * the top-level command. A session without rules returns at its flag.
 */
#include "cmd.bpf.h"

#define SIGKILL 9
#define SIGSTOP 19
#define SCAN	BPFBOX_CMD_ARGV_SCAN /* a power of two */

struct cmd_scratch {
	char argv[SCAN]; /* joined with spaces */
	struct cmd_exe x;
	__u32 alen;
};

BPFBOX_MAP(cmd_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct cmd_scratch);

struct find_ctx {
	struct cmd_scratch *s;
	struct bpfbox_cmd_table *t;
	__u64 found; /* bit i: rule i's pattern is in argv */
};

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

/* Byte j of a pattern against argv (bpf_loop: verified once, not per byte). */
struct pat_ctx {
	struct cmd_scratch *s;
	struct bpfbox_cmd_rule *r;
	__u32 pos;
	__u32 ok;
};

static long pat_cb(__u32 j, void *data)
{
	struct pat_ctx *p = data;

	if (p->s->argv[(p->pos + j) & (SCAN - 1)] != p->r->pat[j & (BPFBOX_CMD_PAT_LEN - 1)]) {
		p->ok = 0;
		return 1;
	}
	return 0;
}

/* Whether rule i's pattern starts at argv position pos. */
static long cmp_cb(__u32 i, void *data)
{
	struct cmp_ctx *m = data;
	struct find_ctx *c = m->c;
	struct cmd_scratch *s = c->s;
	struct bpfbox_cmd_rule *r;
	__u32 pos = m->pos, n;
	struct pat_ctx p;

	if (i >= BPFBOX_CMD_RULES_MAX)
		return 1;
	r = &c->t->r[i];
	n = r->pat_len;
	if (!n || (c->found & (1ULL << i)) || pos + n > s->alen)
		return 0;
	/* The pair filter matched some pattern's first two bytes: this one's, first? */
	if (s->argv[pos & (SCAN - 1)] != r->pat[0] ||
	    (n > 1 && s->argv[(pos + 1) & (SCAN - 1)] != r->pat[1]))
		return 0;
	p.s = s;
	p.r = r;
	p.pos = pos;
	p.ok = 1;
	bpf_loop(n < BPFBOX_CMD_PAT_LEN ? n : BPFBOX_CMD_PAT_LEN, pat_cb, &p, 0);
	if (!p.ok)
		return 0;
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

static __always_inline void report(struct bpfbox_session *ss, struct cmd_scratch *s,
				   struct bpfbox_cmd_rule *r, unsigned long start, __u32 raw,
				   __u32 pending)
{
	struct bpfbox_exec_event *e = cmd_report(ss, &s->x, r, BPFBOX_LAYER_EXEC_TP, pending);

	if (!e)
		return;
	if (raw >= SCAN)
		e->argv_truncated |= BPFBOX_EXEC_TRUNCATED;
	/*
	 * Opaque before the mask: else clang, knowing raw < SCAN on this
	 * path, passes the unmasked copy it spilled, whose bound 6.1's
	 * verifier does not have ("R2 unbounded memory access").
	 */
	asm volatile("" : "+r"(raw));
	raw &= SCAN - 1;
	if (raw > 0 && bpf_probe_read_user(e->argv, raw, (void *)start) == 0)
		e->argv_len = raw;
	bpf_ringbuf_submit(e, 0);
}

SEC("tracepoint/sched/sched_process_exec")
int cmd_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	struct bpfbox_session *ss = current_session();
	struct bpfbox_cmd_table *t;
	struct cmd_scratch *s;
	struct task_struct *task;
	unsigned long start, end, len;
	__u32 zero = 0, raw;
	unsigned int off;
	struct cmd_walk rc = {};
	struct bpfbox_cmd_rule *r;

	if (!ss || !(ss->flags & BPFBOX_SF_CMD_RULES))
		return 0;
	t = bpf_map_lookup_elem(&cmd_rules, &ss->id);
	s = bpf_map_lookup_elem(&cmd_scratch, &zero);
	if (!t || !s)
		return 0;
	off = ctx->__data_loc_filename & 0xFFFF;
	bpf_probe_read_kernel_str(s->x.path, sizeof(s->x.path), (void *)ctx + off);
	task = (struct task_struct *)bpf_get_current_task();
	s->x.target[0] = '\0';
	bpf_probe_read_kernel_str(s->x.target, sizeof(s->x.target),
				  BPF_CORE_READ(task, mm, exe_file, f_path.dentry, d_name.name));
	cmd_exe_hash(&s->x);
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
	rc.x = &s->x;
	rc.t = t;
	cmd_walk_rules(&rc);
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
