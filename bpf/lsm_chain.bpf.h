/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The walks of the BPF LSM's file policy (bpf/lsm_file.bpf.h judges with
 * them): the per-CPU scratch a check works in, the chain of a file's
 * dentries up to the task's root (crossing mounts as d_path does), the
 * session's writable set walked up by inode, and the chain written out as
 * a path for a record. Every walk is a bpf_loop whose state lives in the
 * scratch: the verifier checks one step of it, not each turn (a walk as a
 * plain loop cost every program that uses it tens of thousands of
 * instructions to verify; docs/lsm.md "Load time").
 * A header of the one BPF object (one skeleton) that includes it.
 */
#ifndef BPFBOX_LSM_CHAIN_BPF_H
#define BPFBOX_LSM_CHAIN_BPF_H

#include "cmd.bpf.h"
#include "lsm_ovl.bpf.h"
#include "lsm_own.bpf.h"
#include "bpfbox/lsm.h"

#define MAX_DEPTH      LSM_MAX_DEPTH /* path components looked at, from the file up */
#define MAX_MOUNT_HOPS 8	     /* mount crossings on the way to the root */
#define SCRATCH_SLOTS  4	     /* programs preempted on one CPU at once */

/*
 * The session's writable set (workspace, private tmp, rw paths) by device
 * and inode of each directory: a file is in it when one of its ancestors
 * is, whatever name or symlink led to it.
 */
BPFBOX_MAP(writable, BPF_MAP_TYPE_HASH, 16384, BPF_F_NO_PREALLOC, struct bpfbox_inode_key, __u8);

/*
 * Working memory of one check: too big for the stack. A program may be
 * preempted mid-check (migration is off, preemption is not), so each
 * check takes a free slot of its CPU and gives it back.
 */
struct scratch {
	__u32 busy;
	__u32 depth;		   /* dentries in chain */
	__u32 rooted;		   /* chain ends below the task's root */
	__u32 base;		   /* a position in path */
	__u32 system;		   /* abs_match passed a system tree (LSM_TREE_SYSTEM) */
	__u32 slot;		   /* this slot's index in the scratch map */
	__u32 hops;		   /* chain_collect: mounts crossed since the last dentry */
	__u64 at_d, at_mnt;	   /* chain_collect: where the walk is (dentry, mount) */
	__u64 root_d, root_mnt;	   /* chain_collect: the task's root */
	__u32 session;		   /* the walks below: whose rules */
	__u32 found;		   /* the walks below: their answer */
	__u32 abs_mask;		   /* abs_match: the LSM_DENY_* bits that deny */
	__u64 up_d;		   /* under_writable: the directory looked at */
	struct bpfbox_own_sbs own; /* under_writable: the session's own_sbs */
	__u64 chain[MAX_DEPTH];	   /* struct dentry *, the file first */
	struct bpfbox_name_key key;
	struct lsm_abs_key abs;
	char win[BPFBOX_NAME_LEN + 8];
	char path[BPFBOX_PATH_LEN + BPFBOX_NAME_LEN];
	struct cmd_exe cmd;
};

BPFBOX_MAP(scratch, BPF_MAP_TYPE_PERCPU_ARRAY, SCRATCH_SLOTS, 0, __u32, struct scratch);

static __always_inline struct scratch *scratch_get(void)
{
	for (__u32 i = 0; i < SCRATCH_SLOTS; i++) {
		__u32 k = i;
		struct scratch *w = bpf_map_lookup_elem(&scratch, &k);

		if (w && !__sync_lock_test_and_set(&w->busy, 1)) {
			w->slot = k;
			return w;
		}
	}
	return NULL;
}

static __always_inline void scratch_put(struct scratch *w)
{
	w->busy = 0;
}

static __always_inline void zero_name(char *name)
{
	__u64 *q = (__u64 *)name;

	for (int i = 0; i < BPFBOX_NAME_LEN / 8; i++)
		q[i] = 0;
}

static __always_inline struct dentry *chain_at(struct scratch *w, __u32 i)
{
	return (struct dentry *)w->chain[i & (MAX_DEPTH - 1)];
}

/* chain_collect's state between bpf_loop's steps: the scratch slot's index. */
struct chain_ctx {
	__u32 slot;
};

/*
 * The scratch of a bpf_loop step (chain_ctx: its slot), or NULL. Every
 * walk here is a bpf_loop whose state lives in the scratch, for the
 * reason chain_step gives.
 */
static __always_inline struct scratch *step_scratch(void *arg)
{
	__u32 slot = ((struct chain_ctx *)arg)->slot;

	return bpf_map_lookup_elem(&scratch, &slot);
}

/*
 * One step of chain_collect, from the file up: a mount crossed (the top of
 * a mount: on to where it is mounted), or a dentry recorded and its parent
 * next. 0 on to the next step, 1 done. A bpf_loop callback, so that the
 * verifier checks one step, not every turn of a nested loop (a loop of 33
 * components with 8 mount hops each cost 50,000 instructions processed in
 * every program that walks a chain, seconds of each load under TCG). The
 * walk's state lives in the scratch, read back as values it does not track.
 */
static long chain_step(__u64 step, void *arg)
{
	struct scratch *w = step_scratch(arg);
	struct dentry *d, *parent;
	struct vfsmount *vm;
	struct mount *mnt, *up;
	__u32 n;

	if (!w)
		return 1;
	d = (struct dentry *)w->at_d;
	vm = (struct vfsmount *)w->at_mnt;
	if (w->at_d == w->root_d && w->at_mnt == w->root_mnt) {
		w->rooted = 1;
		return 1;
	}
	if (d == BPF_CORE_READ(vm, mnt_root)) {
		/* Up from the root of a mount to its mount point. */
		if (w->hops >= MAX_MOUNT_HOPS)
			return 1;
		w->hops++;
		mnt = (void *)vm - bpf_core_field_offset(struct mount, mnt);
		up = BPF_CORE_READ(mnt, mnt_parent);
		if (up == mnt) {
			w->rooted = 1;
			return 1;
		}
		w->at_d = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
		w->at_mnt = (__u64)up + bpf_core_field_offset(struct mount, mnt);
		return 0;
	}
	parent = BPF_CORE_READ(d, d_parent);
	n = w->depth;
	if (n >= MAX_DEPTH || parent == d) /* too deep, or disconnected */
		return 1;
	w->chain[n & (MAX_DEPTH - 1)] = (__u64)d;
	w->depth = n + 1;
	w->hops = 0;
	w->at_d = (__u64)parent;
	return 0;
}

/*
 * w->chain = the dentries from d up to the task's root (or the root of
 * the mount tree), crossing mounts the way d_path does, at most MAX_DEPTH
 * of them (w->rooted: the walk reached the root). Returns their number,
 * read back from the scratch (a value the verifier does not track: what
 * follows the call is checked once, not once per depth).
 */
static __noinline int chain_collect(struct scratch *w, __u64 dentry, __u64 vfsmount)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct chain_ctx c;

	if (!w)
		return 0;
	c.slot = *(volatile __u32 *)&w->slot;
	w->rooted = 0;
	w->depth = 0;
	w->hops = 0;
	w->at_d = dentry;
	w->at_mnt = vfsmount;
	w->root_d = (__u64)BPF_CORE_READ(task, fs, root.dentry);
	w->root_mnt = (__u64)BPF_CORE_READ(task, fs, root.mnt);
	/*
	 * Each component and each mount on the way is one step: up to
	 * MAX_MOUNT_HOPS mounts below each of MAX_DEPTH + 1 levels, and the
	 * step that finds the root.
	 */
	bpf_loop((MAX_DEPTH + 1) * (MAX_MOUNT_HOPS + 1) + 1, chain_step, &c, 0);
	return *(volatile __u32 *)&w->depth;
}

/* Runs step over w (found = 0 first) and returns what it found. */
static __always_inline int scratch_loop(struct scratch *w, __u32 session, __u32 steps,
					long (*step)(__u64, void *))
{
	struct chain_ctx c = {.slot = *(volatile __u32 *)&w->slot};

	w->session = session;
	w->found = 0;
	bpf_loop(steps, step, &c, 0);
	return *(volatile __u32 *)&w->found;
}

/* One directory of under_writable's walk up: found when it is in the set. */
static long writable_step(__u64 i, void *arg)
{
	struct scratch *w = step_scratch(arg);
	struct bpfbox_inode_key k = {};
	struct dentry *d, *p;

	if (!w)
		return 1;
	d = (struct dentry *)w->up_d;
	if (!d)
		return 1;
	k.session = w->session;
	k.dev = BPF_CORE_READ(d, d_sb, s_dev);
	k.ino = BPF_CORE_READ(d, d_inode, i_ino);
	if (own_sb(&w->own, k.dev) || bpf_map_lookup_elem(&writable, &k)) {
		w->found = 1;
		return 1;
	}
	p = BPF_CORE_READ(d, d_parent);
	if (p == d) {
		p = ovl_upper_root(BPF_CORE_READ(d, d_sb));
		if (!p || p == d)
			return 1;
	}
	w->up_d = (__u64)p;
	return 0;
}

/*
 * Whether d (a file or directory) lies in the session's writable set: d or
 * one of its parents, up to the root of its file system, is a directory of
 * the set, or d is on a tmpfs the session's set-up made (own_sbs). By
 * inode, so ".." and symlinks lead to the same answer. From an
 * overlay's root the walk goes on at its upper layer's root (a change
 * set's overlay: its upper lies in the change sets' directory, which is in
 * the set; lsm_ovl.bpf.h). w: a free scratch slot (NULL: 0, so the caller
 * fails closed).
 */
static __noinline int under_writable(struct scratch *w, __u32 session, __u64 dentry)
{
	struct bpfbox_own_sbs *own = bpf_map_lookup_elem(&own_sbs, &session);

	if (!w)
		return 0;
	if (own)
		w->own = *own;
	else
		__builtin_memset(&w->own, 0, sizeof(w->own));
	w->up_d = dentry;
	return scratch_loop(w, session, MAX_DEPTH, writable_step);
}

/* under_writable in a scratch slot of its own; no free slot: false. */
static __always_inline bool writable_now(__u32 session, struct dentry *d)
{
	struct scratch *w = scratch_get();
	bool in = w && under_writable(w, session, (__u64)d);

	if (w)
		scratch_put(w);
	return in;
}

/* w->path = the chain as a path, for records where d_path is not allowed. */
static __noinline int chain_path(struct scratch *w)
{
	volatile __u32 *pos;
	__u32 n, at;
	long r;

	if (!w)
		return 0;
	/* The write position lives in memory: see interp_name(). */
	pos = &w->base;
	*pos = 0;
	n = w->depth;
	if (!w->rooted) {
		w->path[0] = '.';
		w->path[1] = '.';
		w->path[2] = '.';
		*pos = 3;
	}
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < MAX_DEPTH; i++) {
		at = *pos;
		if (i >= n || at >= BPFBOX_PATH_LEN - 1)
			break;
		w->path[at & (BPFBOX_PATH_LEN - 1)] = '/';
		at++;
		r = bpf_probe_read_kernel_str(&w->path[at & (BPFBOX_PATH_LEN - 1)], BPFBOX_NAME_LEN,
					      BPF_CORE_READ(chain_at(w, n - 1 - i), d_name.name));
		*pos = r > 0 ? at + r - 1 : at;
	}
	at = *pos;
	if (!n && at < BPFBOX_PATH_LEN - 1)
		w->path[at++ & (BPFBOX_PATH_LEN - 1)] = '/';
	w->path[at < BPFBOX_PATH_LEN ? at : BPFBOX_PATH_LEN - 1] = 0;
	return 0;
}

#endif
