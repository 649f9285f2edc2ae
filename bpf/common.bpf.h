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

#define EPERM  1
#define EACCES 13
#define EROFS  30

/* cgroup id of a session's cgroup -> the session. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BPFBOX_MAX_SESSIONS);
	__type(key, __u64);
	__type(value, struct bpfbox_session);
} sessions SEC(".maps");

/* Every record goes through one ring; userspace sizes it before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* Records that found the ring full, per CPU, for the loss report. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

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

#endif
