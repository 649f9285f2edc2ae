// SPDX-License-Identifier: GPL-2.0
/*
 * Observation of what every process of a session ran, opened and connected
 * to, and how each attempt ended. Works where BPF LSM cannot load. A
 * syscall that fails with EACCES or EPERM is recorded as a denial,
 * attributed to the layer that can produce that error there.
 *
 * Attach modes (docs/ARCHITECTURE.md, "Audit attach modes"): each audited
 * syscall is seen once, at its end, where its arguments are still in the
 * caller's saved user registers and its result is known:
 *   fexit       a BPF trampoline on the syscall's own entry point
 *               (__x64_sys_openat ...): runs only for that syscall, and
 *               leaves every other syscall of the host on its fast path;
 *   tracepoint  the syscalls/sys_exit_* tracepoints: the fallback where
 *               trampolines cannot load (fentry refused, no BTF). Enabling
 *               any syscall tracepoint puts every task of the host on the
 *               syscall slow path.
 * Userspace switches one set's programs off before load. The sched and
 * oom tracepoints are not syscall tracepoints and serve both.
 */
#include "common.bpf.h"
#include "path.bpf.h"

#define AF_UNIX	 1
#define AF_INET	 2
#define AF_INET6 10

/* Audit mode for the whole agent, set before load. */
const volatile bool audit_opens = true;
/* Identical allowed opens within this window fold into one record. */
const volatile __u64 aggregate_window_ns = 1000000000ULL;
/* argv bytes kept per exec (64 to BPFBOX_ARGV_LEN), cut and flagged past it. */
const volatile __u32 argv_max = BPFBOX_ARGV_LEN;

#define O_WRONLY 01
#define O_CREAT	 0100
#define O_TRUNC	 01000

/*
 * Aggregation of allowed opens: the first open of (session, pid, flags,
 * path) is reported at once; repeats within the window only count here,
 * and the count leaves with the next repeat after the window, or when
 * the agent flushes the session at its end. Denials never aggregate.
 */
BPFBOX_MAP(agg, BPF_MAP_TYPE_HASH, 16384, 0, struct bpfbox_agg_key, struct bpfbox_agg_val);

/* The key is too large for the stack next to everything else. */
BPFBOX_MAP(agg_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct bpfbox_agg_key);

/* Arguments of an audited syscall, read from its saved registers at its end. */
struct pending {
	__u64 ptr;   /* user pointer: file name or sockaddr */
	__u32 flags; /* open flags, or sockaddr length */
	__u32 kind;  /* BPFBOX_EV_FILE, BPFBOX_EV_CONNECT or BPFBOX_EV_EXEC */
	__u32 op;    /* BPFBOX_EV_FILE: enum bpfbox_file_op */
	__s32 dirfd; /* what a relative name is relative to (AT_FDCWD: the cwd; path.bpf.h) */
};

/* The OOM killer's last victim per session, for session.paused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFBOX_MAX_SESSIONS);
	__type(key, __u32); /* session index */
	__type(value, struct bpfbox_oom_victim);
} oom_victims SEC(".maps");

/* Which layer a failed syscall's error comes from in a session. */
static __always_inline void set_outcome(struct bpfbox_event_hdr *h, struct bpfbox_session *s,
					long ret, __u8 eperm_layer)
{
	h->err = ret < 0 ? (__s32)ret : 0;
	if (ret == -EACCES) {
		h->decision = BPFBOX_DENY;
		h->layer = s->flags & BPFBOX_SF_LANDLOCK ? BPFBOX_LAYER_LANDLOCK
							 : BPFBOX_LAYER_KERNEL;
	} else if (ret == -EPERM) {
		h->decision = BPFBOX_DENY;
		h->layer = eperm_layer;
	} else if (ret == -EROFS && (s->flags & BPFBOX_SF_MOUNT_RO)) {
		/* The session's mount view: the host is read-only there. */
		h->decision = BPFBOX_DENY;
		h->layer = BPFBOX_LAYER_MOUNT;
	}
}

/*
 * The record of an audited syscall that ended with ret, its outcome set
 * (set_outcome), or NULL: when the ring is full, or when ret is an EPERM
 * that one of our own programs returned and recorded itself (ours).
 */
static __always_inline void *outcome_reserve(struct bpfbox_session *s, long ret, bool ours,
					     __u32 size, __u32 type, __u8 eperm_layer)
{
	struct bpfbox_event_hdr *h;

	if (ret == -EPERM && ours)
		return NULL;
	h = event_reserve(s, size, type);
	if (h)
		set_outcome(h, s, ret, eperm_layer);
	return h;
}

/* Whether s starts with the n bytes of prefix (n a constant: unrolled). */
static __always_inline bool has_prefix(const char *s, const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		if (s[i] != prefix[i])
			return false;
	return true;
}

/*
 * Whether session s is observed now: not with audit off, and with
 * BPFBOX_SF_FROM_EXEC not before its first exec (bpfbox's own set-up of
 * the session, its mounts and the fork of the command, is not the command's).
 */
static __always_inline bool observed(const struct bpfbox_session *s)
{
	return !(s->flags & BPFBOX_SF_AUDIT_OFF) &&
	       (s->started || !(s->flags & BPFBOX_SF_FROM_EXEC));
}

/* remember the exec: filename and bounded argv of the new program */
SEC("tracepoint/sched/sched_process_exec")
int handle_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	struct bpfbox_session *s = current_session();
	struct bpfbox_exec_event *e;
	struct task_struct *task;
	unsigned long start, end, len;
	unsigned int off;

	if (!s || (s->flags & BPFBOX_SF_AUDIT_OFF))
		return 0;
	if (!s->started)
		s->started = 1; /* the command runs: observed from here on (observed()) */
	e = event_reserve(s, sizeof(*e), BPFBOX_EV_EXEC);
	if (!e)
		return 0;
	off = ctx->__data_loc_filename & 0xFFFF;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), (void *)ctx + off);
	task = (struct task_struct *)bpf_get_current_task();
	start = BPF_CORE_READ(task, mm, arg_start);
	end = BPF_CORE_READ(task, mm, arg_end);
	len = end - start;
	/* The mask keeps the verifier sure of the bound; one byte is lost. */
	e->argv_truncated = len >= argv_max ? BPFBOX_EXEC_TRUNCATED : 0;
	if (len >= argv_max)
		len = argv_max - 1;
	len &= sizeof(e->argv) - 1;
	/*
	 * fexecve, a memfd, /dev/fd/N: the file name says nothing of what
	 * ran. The executable's own name (memfd:NAME for a memfd) goes along.
	 */
	e->via[0] = '\0';
	if (has_prefix(e->filename, "/dev/fd/", 8) ||
	    has_prefix(e->filename, "/proc/self/fd/", 14)) {
		e->argv_truncated |= BPFBOX_EXEC_VIA_FD;
		bpf_probe_read_kernel_str(e->via, sizeof(e->via),
					  BPF_CORE_READ(task, mm, exe_file, f_path.dentry,
							d_name.name));
	} else {
		char head[8] = {};

		bpf_probe_read_kernel_str(head, sizeof(head),
					  BPF_CORE_READ(task, mm, exe_file, f_path.dentry,
							d_name.name));
		if (has_prefix(head, "memfd:", 6)) {
			e->argv_truncated |= BPFBOX_EXEC_VIA_FD;
			bpf_probe_read_kernel_str(e->via, sizeof(e->via),
						  BPF_CORE_READ(task, mm, exe_file, f_path.dentry,
								d_name.name));
		}
	}
	e->argv_len = 0;
	if (len > 0 && bpf_probe_read_user(e->argv, len, (void *)start) == 0)
		e->argv_len = len;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tracepoint/sched/sched_process_fork")
int handle_fork(struct trace_event_raw_sched_process_fork *ctx)
{
	struct bpfbox_session *s = current_session();
	struct bpfbox_fork_event *e;

	if (!s || !observed(s))
		return 0;
	e = event_reserve(s, sizeof(*e), BPFBOX_EV_FORK);
	if (!e)
		return 0;
	e->child_pid = BPF_CORE_READ(ctx, child_pid);
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* a process (not a thread) ended: its exit code or the signal */
SEC("tracepoint/sched/sched_process_exit")
int handle_exit(void *ctx)
{
	struct bpfbox_session *s = current_session();
	struct bpfbox_exit_event *e;
	struct task_struct *task;
	__u64 id = bpf_get_current_pid_tgid();
	int code;

	if (!s || !observed(s) || (__u32)id != id >> 32)
		return 0;
	e = event_reserve(s, sizeof(*e), BPFBOX_EV_EXIT);
	if (!e)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
	code = BPF_CORE_READ(task, exit_code);
	e->signal = code & 0x7f;
	e->exit_code = e->signal ? -1 : (code >> 8) & 0xff;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * The session of the caller when it is observed, else NULL: the first test
 * of every program, and the whole cost for a process outside every session.
 * exec: a failed execve counts before the first exec too (the command's own
 * exec may be the one that fails).
 */
static __always_inline struct bpfbox_session *audited(bool exec)
{
	struct bpfbox_session *s = current_session();

	if (!s || (s->flags & BPFBOX_SF_AUDIT_OFF))
		return NULL;
	return exec || observed(s) ? s : NULL;
}

/*
 * The caller's saved user registers, where a syscall's arguments stay until
 * it returns (the x86_64 syscall ABI: di, si, dx, r10, r8, r9). An execve
 * that succeeded has new ones, but only a failed execve is read here.
 */
#define SYSARG0(r) ((r)->di)
#define SYSARG1(r) ((r)->si)
#define SYSARG2(r) ((r)->dx)
#define SYSARG3(r) ((r)->r10)

static __always_inline const struct pt_regs *user_regs(void)
{
	return (const struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

#define PR_SET_NAME 15

/*
 * A thread renames itself (prctl PR_SET_NAME): every later record has the
 * new comm, so the change is a record of its own, old name in its header:
 * taken at the call's entry, before the rename.
 */
static __always_inline int audit_prctl(__u64 option, __u64 name)
{
	struct bpfbox_session *s;
	struct bpfbox_comm_event *e;

	if (option != PR_SET_NAME)
		return 0;
	s = audited(false);
	if (!s)
		return 0;
	e = event_reserve(s, sizeof(*e), BPFBOX_EV_COMM);
	if (!e)
		return 0;
	__builtin_memset(e->new_comm, 0, sizeof(e->new_comm));
	bpf_probe_read_user_str(e->new_comm, sizeof(e->new_comm), (void *)name);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("fentry/__x64_sys_prctl")
int BPF_PROG(fx_prctl, const struct pt_regs *regs)
{
	return audit_prctl(SYSARG0(regs), SYSARG1(regs));
}

SEC("tracepoint/syscalls/sys_enter_prctl")
int enter_prctl(struct trace_event_raw_sys_enter *ctx)
{
	return audit_prctl(ctx->args[0], ctx->args[1]);
}

/* Returns the count to report, or 0 when this open folds into an earlier one. */
static __always_inline __u64 aggregate(struct bpfbox_session *s, struct pending *p, const char *abs)
{
	struct bpfbox_agg_val *v, fresh = {.first_ns = bpf_ktime_get_ns()};
	struct bpfbox_agg_key *k;
	__u32 zero = 0;
	__u64 n;

	k = bpf_map_lookup_elem(&agg_scratch, &zero);
	if (!k)
		return 1;
	k->session = s->id;
	k->pid = bpf_get_current_pid_tgid() >> 32;
	k->flags = p->flags;
	__builtin_memset(k->path, 0, sizeof(k->path));
	if (abs)
		bpf_probe_read_kernel_str(k->path, sizeof(k->path), abs);
	else
		bpf_probe_read_user_str(k->path, sizeof(k->path), (void *)p->ptr);
	v = bpf_map_lookup_elem(&agg, k);
	if (!v) {
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();

		fresh.tid = (__u32)bpf_get_current_pid_tgid();
		fresh.ppid = BPF_CORE_READ(task, real_parent, tgid);
		fresh.uid = (__u32)bpf_get_current_uid_gid();
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		/* A full map means no aggregation, never a lost open. */
		bpf_map_update_elem(&agg, k, &fresh, BPF_NOEXIST);
		return 1;
	}
	if (fresh.first_ns - v->first_ns < aggregate_window_ns) {
		__sync_fetch_and_add(&v->count, 1);
		return 0;
	}
	n = __sync_lock_test_and_set(&v->count, 0) + 1;
	v->first_ns = fresh.first_ns;
	return n;
}

/*
 * An EPERM our BPF LSM returned and recorded itself (bpf/lsm.bpf.c): the
 * opens, renames and links its lists refuse, and the metadata changes
 * (chmod, chown, utimes, xattrs) outside the writable set. Unlink, rmdir, mkdir
 * and symlink it does not judge: their EPERM is the kernel's.
 */
static __always_inline bool lsm_reported(const struct bpfbox_session *s, __u32 op)
{
	if (!(s->flags & BPFBOX_SF_BPF_LSM))
		return false;
	if (op == BPFBOX_FILE_CHMOD || op == BPFBOX_FILE_UTIMES || op == BPFBOX_FILE_CHOWN ||
	    op == BPFBOX_FILE_SETXATTR || op == BPFBOX_FILE_REMOVEXATTR)
		return s->flags & BPFBOX_SF_GAP_META;
	return op == BPFBOX_FILE_OPEN || op == BPFBOX_FILE_RENAME || op == BPFBOX_FILE_LINK;
}

static __always_inline void emit_file(struct bpfbox_session *s, struct pending *p, long ret)
{
	struct bpfbox_file_event *e;
	const char *abs;
	__u64 count = 1;

	/* Changes (unlink, rename, ...) are recorded when refused, not each success. */
	if (p->op != BPFBOX_FILE_OPEN && ret != -EACCES && ret != -EPERM &&
	    !(ret == -EROFS && (s->flags & BPFBOX_SF_MOUNT_RO)))
		return;
	/* A relative name (or a dirfd's own file) gets its directory. */
	abs = path_at(path_resolve(p->ptr, p->dirfd));
	if (p->op == BPFBOX_FILE_OPEN && ret >= 0 && !(s->flags & BPFBOX_SF_AUDIT_ALL)) {
		count = aggregate(s, p, abs);
		if (!count)
			return;
	}
	/* What our BPF LSM refused is not here: an EPERM is the kernel's. */
	e = outcome_reserve(s, ret, lsm_reported(s, p->op), sizeof(*e), BPFBOX_EV_FILE,
			    BPFBOX_LAYER_KERNEL);
	if (!e)
		return;
	e->flags = p->op == BPFBOX_FILE_OPEN ? p->flags : 0;
	e->count = count;
	e->op = p->op;
	e->pad = 0;
	e->path[0] = 0;
	if (abs)
		bpf_probe_read_kernel_str(e->path, sizeof(e->path), abs);
	else if (p->ptr)
		bpf_probe_read_user_str(e->path, sizeof(e->path), (void *)p->ptr);
	bpf_ringbuf_submit(e, 0);
}

/* A failed execve; a successful one is the sched_process_exec record. */
static __always_inline void emit_failed_exec(struct bpfbox_session *s, struct pending *p, long ret)
{
	struct bpfbox_exec_event *e;

	if (ret >= 0)
		return;
	/*
	 * A name tried along PATH (execvp, a shell): thousands in a build,
	 * none refused by anyone. Counted for session.end, not recorded;
	 * before the session's first exec they are the command's own search
	 * (its failure is the whole command's): recorded.
	 */
	if ((ret == -ENOENT || ret == -ENOTDIR) && s->started) {
		__sync_fetch_and_add(&s->exec_not_found, 1);
		return;
	}
	/* Our BPF LSM's refusal (a list or a command rule) has its own record. */
	e = outcome_reserve(s, ret, s->flags & (BPFBOX_SF_BPF_LSM | BPFBOX_SF_CMD_RULES),
			    sizeof(*e), BPFBOX_EV_EXEC, BPFBOX_LAYER_KERNEL);
	if (!e)
		return;
	e->argv_len = 0;
	e->argv_truncated = 0;
	bpf_probe_read_user_str(e->filename, sizeof(e->filename), (void *)p->ptr);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void emit_connect(struct bpfbox_session *s, struct pending *p, long ret)
{
	struct bpfbox_connect_event *e;
	struct sockaddr_in6 sa6 = {};
	__u16 family = 0;

	bpf_probe_read_user(&family, sizeof(family), (void *)p->ptr);
	if (family != AF_INET && family != AF_INET6 && family != AF_UNIX)
		return;
	/*
	 * Our cgroup program or BPF LSM already reported this denial, with
	 * more detail; connect(2) fails with EPERM when a cgroup program
	 * refused it.
	 */
	e = outcome_reserve(s, ret, s->flags & (BPFBOX_SF_NET_BPF | BPFBOX_SF_BPF_LSM), sizeof(*e),
			    BPFBOX_EV_CONNECT, BPFBOX_LAYER_CGROUP_BPF);
	if (!e)
		return;
	e->family = family;
	e->port = 0;
	e->protocol = 0;
	__builtin_memset(e->addr, 0, sizeof(e->addr));
	e->unix_path[0] = '\0';
	if (family == AF_UNIX) {
		bpf_probe_read_user_str(e->unix_path, sizeof(e->unix_path), (void *)p->ptr + 2);
	} else if (family == AF_INET) {
		struct sockaddr_in sa = {};

		bpf_probe_read_user(&sa, sizeof(sa), (void *)p->ptr);
		e->port = bpf_ntohs(sa.sin_port);
		__builtin_memcpy(e->addr, &sa.sin_addr, 4);
	} else {
		bpf_probe_read_user(&sa6, sizeof(sa6), (void *)p->ptr);
		e->port = bpf_ntohs(sa6.sin6_port);
		__builtin_memcpy(e->addr, &sa6.sin6_addr, 16);
	}
	bpf_ringbuf_submit(e, 0);
}

/* Records one audited syscall of session s at its end. */
static __always_inline int finish(struct bpfbox_session *s, struct pending *p, long ret)
{
	if (p->kind == BPFBOX_EV_FILE)
		emit_file(s, p, ret);
	else if (p->kind == BPFBOX_EV_EXEC)
		emit_failed_exec(s, p, ret);
	else
		emit_connect(s, p, ret);
	return 0;
}

/*
 * One audited syscall, in both attach modes: audit_SYS(regs, ret) reads
 * the arguments (dfd_, ptr_, flags_: expressions of r) once the caller is known
 * to be in an audited session; fx_SYS is its trampoline, exit_SYS its
 * tracepoint. opens_: one of the open family (off when audit_opens is).
 */
#define AUDIT_SYSCALL(sys, kind_, op_, dfd_, ptr_, flags_, opens_)                \
	static __always_inline int audit_##sys(const struct pt_regs *r, long ret) \
	{                                                                         \
		struct pending p = {.kind = kind_, .op = op_};                    \
		struct bpfbox_session *s;                                         \
                                                                                  \
		if (opens_ && !audit_opens)                                       \
			return 0;                                                 \
		s = audited(kind_ == BPFBOX_EV_EXEC);                             \
		if (!s)                                                           \
			return 0;                                                 \
		p.ptr = ptr_;                                                     \
		p.flags = flags_;                                                 \
		p.dirfd = dfd_;                                                   \
		return finish(s, &p, ret);                                        \
	}                                                                         \
	SEC("fexit/__x64_sys_" #sys)                                              \
	int BPF_PROG(fx_##sys, const struct pt_regs *regs, long ret)              \
	{                                                                         \
		return audit_##sys(regs, ret);                                    \
	}                                                                         \
	SEC("tracepoint/syscalls/sys_exit_" #sys)                                 \
	int exit_##sys(struct trace_event_raw_sys_exit *ctx)                      \
	{                                                                         \
		return audit_##sys(user_regs(), ctx->ret);                        \
	}

/* openat2's flags are in the struct open_how it points to. */
static __always_inline __u32 open_how_flags(__u64 uhow)
{
	struct open_how how = {};

	bpf_probe_read_user(&how, sizeof(how), (void *)uhow);
	return (__u32)how.flags;
}

#define AT_FDCWD -100
#define DIRFD(x) ((__s32)(x))

AUDIT_SYSCALL(openat, BPFBOX_EV_FILE, BPFBOX_FILE_OPEN, DIRFD(SYSARG0(r)), SYSARG1(r), SYSARG2(r),
	      true)
/* The legacy open(2) and creat(2) (x86_64 and other ABIs that have them). */
AUDIT_SYSCALL(open, BPFBOX_EV_FILE, BPFBOX_FILE_OPEN, AT_FDCWD, SYSARG0(r), SYSARG1(r), true)
AUDIT_SYSCALL(creat, BPFBOX_EV_FILE, BPFBOX_FILE_OPEN, AT_FDCWD, SYSARG0(r),
	      O_CREAT | O_WRONLY | O_TRUNC, true)
AUDIT_SYSCALL(openat2, BPFBOX_EV_FILE, BPFBOX_FILE_OPEN, DIRFD(SYSARG0(r)), SYSARG1(r),
	      open_how_flags(SYSARG2(r)), true)
/* A failed execve; a successful one is the sched_process_exec record. */
AUDIT_SYSCALL(execve, BPFBOX_EV_EXEC, 0, AT_FDCWD, SYSARG0(r), 0, false)
AUDIT_SYSCALL(connect, BPFBOX_EV_CONNECT, 0, AT_FDCWD, SYSARG1(r), SYSARG2(r), false)

#include "audit_files.bpf.h"

/*
 * The OOM killer chose a victim. A memory cgroup OOM is invoked by a process
 * charging that cgroup, so for a session's own limit the invoker is in the
 * session. The tracepoint has the victim's comm since Linux 6.8; before,
 * only its pid (then the comm is the invoker's when it chose itself, else
 * userspace reads /proc/PID/comm of the zombie, whose parent is frozen).
 */
SEC("tracepoint/oom/mark_victim")
int handle_oom_victim(struct trace_event_raw_mark_victim *ctx)
{
	struct bpfbox_session *s = current_session();
	struct bpfbox_oom_victim v = {0};
	__u64 id = bpf_get_current_pid_tgid();

	if (!s)
		return 0;
	v.ts_ns = bpf_ktime_get_ns();
	v.pid = BPF_CORE_READ(ctx, pid);
	v.invoker = id >> 32;
	if (bpf_core_field_exists(ctx->__data_loc_comm)) {
		__u32 loc = BPF_CORE_READ(ctx, __data_loc_comm);

		bpf_probe_read_kernel_str(v.comm, sizeof(v.comm), (void *)ctx + (loc & 0xffff));
	} else if (v.pid == v.invoker) {
		bpf_get_current_comm(v.comm, sizeof(v.comm));
	}
	bpf_map_update_elem(&oom_victims, &s->id, &v, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
