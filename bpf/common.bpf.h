/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps and helpers every bpfbox program shares. Each .bpf.c includes this;
 * the agent creates the maps once (from the first skeleton it loads) and
 * hands the same fds to the others with bpf_map__reuse_fd(), so a session
 * registered once is seen by every program.
 */
#ifndef BPFBOX_COMMON_BPF_H
#define BPFBOX_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "bpfbox/events.h"

/*
 * One map: NAME, its TYPE, MAX entries, FLAGS (0 or BPF_F_NO_PREALLOC), and
 * the KEY and VALUE types. A header that shares a map between programs
 * declares it once; the agent hands every skeleton the same fd.
 */
#define BPFBOX_MAP(NAME, TYPE, MAX, FLAGS, KEY, VALUE) \
	struct {                                       \
		__uint(type, TYPE);                    \
		__uint(max_entries, MAX);              \
		__uint(map_flags, FLAGS);              \
		__type(key, KEY);                      \
		__type(value, VALUE);                  \
	} NAME SEC(".maps")

#define EPERM	1
#define ENOENT	2
#define EACCES	13
#define ENOTDIR 20
#define EROFS	30

/* cgroup id of a session's cgroup -> the session. */
BPFBOX_MAP(sessions, BPF_MAP_TYPE_HASH, BPFBOX_MAX_SESSIONS, 0, __u64, struct bpfbox_session);

/* Every record goes through one ring; userspace sizes it before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* Records that found the ring full, per CPU, for the loss report. */
BPFBOX_MAP(lost, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, __u64);

/* The session of the current task, or NULL outside every session. */
static __always_inline struct bpfbox_session *current_session(void)
{
	__u64 cgid = bpf_get_current_cgroup_id();

	return bpf_map_lookup_elem(&sessions, &cgid);
}

static __always_inline void count_lost(struct bpfbox_session *s)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&lost, &zero);

	if (n)
		*n += 1;
	__sync_fetch_and_add(&s->lost, 1);
}

/*
 * Reserves a record of size bytes and fills its header. The sequence
 * number is taken even when the ring is full, so a reader sees the gap.
 */
static __always_inline void *event_reserve(struct bpfbox_session *s, __u32 size, __u32 type)
{
	struct bpfbox_event_hdr *h;
	struct task_struct *task;
	__u64 seq = __sync_fetch_and_add(&s->seq, 1);
	__u64 id = bpf_get_current_pid_tgid();

	h = bpf_ringbuf_reserve(&events, size, 0);
	if (!h) {
		count_lost(s);
		return NULL;
	}
	task = (struct task_struct *)bpf_get_current_task();
	h->type = type;
	h->session = s->id;
	h->seq = seq;
	h->ts_ns = bpf_ktime_get_ns();
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->ppid = BPF_CORE_READ(task, real_parent, tgid);
	h->uid = (__u32)bpf_get_current_uid_gid();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
	h->decision = BPFBOX_ALLOW;
	h->layer = BPFBOX_LAYER_NONE;
	h->pad = 0;
	h->err = 0;
	return h;
}

/* event_reserve() for a refusal by layer: decision deny, errno EPERM. */
static __always_inline void *deny_reserve(struct bpfbox_session *s, __u32 size, __u32 type,
					  __u8 layer)
{
	struct bpfbox_event_hdr *h = event_reserve(s, size, type);

	if (h) {
		h->decision = BPFBOX_DENY;
		h->layer = layer;
		h->err = -EPERM;
	}
	return h;
}

#endif
