/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The file policy of the BPF LSM (docs/lsm.md): what a file is known by,
 * the chain of its dentries up to the task's root, and the rules judged on
 * it: names, suffixes and prefixes, DIR/NAME pairs, directory components,
 * absolute paths (a trie walked from the root), the executable names and
 * paths, and the session's writable set by inode. bpf/lsm.bpf.c's hooks
 * judge with these and record; userspace/agent/lsm_policy.c fills the maps.
 * A header of the one BPF object (one skeleton) that includes it.
 */
#ifndef BPFBOX_LSM_FILE_BPF_H
#define BPFBOX_LSM_FILE_BPF_H

#include "lsm_chain.bpf.h"

/* {session, kind, name} of the file policy: present means denied. */
BPFBOX_MAP(names, BPF_MAP_TYPE_HASH, 65536, BPF_F_NO_PREALLOC, struct bpfbox_name_key, __u8);

/* Absolute deny paths as a trie of components, walked from the root. */
BPFBOX_MAP(abs_paths, BPF_MAP_TYPE_HASH, 65536, BPF_F_NO_PREALLOC, struct lsm_abs_key,
	   struct lsm_abs_node);

/* dst = d's name, zero padded; false when longer than any rule's name. */
static __always_inline bool read_name(char *dst, struct dentry *d)
{
	if (BPF_CORE_READ(d, d_name.len) >= BPFBOX_NAME_LEN)
		return false;
	zero_name(dst);
	bpf_probe_read_kernel_str(dst, BPFBOX_NAME_LEN, BPF_CORE_READ(d, d_name.name));
	return true;
}

/* dst = the pair key of d inside dir. */
static __always_inline bool read_pair(char *dst, struct dentry *dir, struct dentry *d)
{
	if (BPF_CORE_READ(dir, d_name.len) >= LSM_PAIR_HALF ||
	    BPF_CORE_READ(d, d_name.len) >= LSM_PAIR_HALF)
		return false;
	zero_name(dst);
	bpf_probe_read_kernel_str(dst, LSM_PAIR_HALF, BPF_CORE_READ(dir, d_name.name));
	bpf_probe_read_kernel_str(dst + LSM_PAIR_HALF, LSM_PAIR_HALF,
				  BPF_CORE_READ(d, d_name.name));
	return true;
}

static __always_inline bool name_denied(struct scratch *w, __u32 session, __u32 kind)
{
	w->key.session = session;
	w->key.kind = kind;
	return bpf_map_lookup_elem(&names, &w->key) != NULL;
}

/*
 * The checks below are functions of their own (not inlined) to keep each
 * program small. Not global ones: a global function sees the scratch as
 * plain memory, which 6.1 does not take as a map key. Pointers to kernel
 * objects travel as __u64.
 */

/* Pattern *.SUFFIX: the name after each dot of its last 64 bytes. */
static __noinline int suffix_denied(struct scratch *w, __u32 session, __u64 dentry)
{
	struct dentry *d = (struct dentry *)dentry;
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);
	__u32 len = BPF_CORE_READ(d, d_name.len);
	__u32 tail = len > BPFBOX_NAME_LEN ? len - BPFBOX_NAME_LEN : 0;

	if (!w)
		return 0;
	bpf_probe_read_kernel_str(w->win, BPFBOX_NAME_LEN + 1, name + tail);
#pragma clang loop unroll(disable)
	for (int i = 0; i < BPFBOX_NAME_LEN; i++) {
		if (!w->win[i])
			break;
		if (w->win[i] != '.')
			continue;
		zero_name(w->key.name);
		bpf_probe_read_kernel_str(w->key.name, BPFBOX_NAME_LEN, name + tail + i + 1);
		if (name_denied(w, session, BPFBOX_NAME_SUFFIX))
			return 1;
	}
	return 0;
}

/* Pattern NAME.*: the name up to and including each of its dots. */
static __noinline int prefix_denied(struct scratch *w, __u32 session, __u64 dentry)
{
	struct dentry *d = (struct dentry *)dentry;
	const unsigned char *name = BPF_CORE_READ(d, d_name.name);

	if (!w)
		return 0;
	bpf_probe_read_kernel_str(w->win, BPFBOX_NAME_LEN, name);
#pragma clang loop unroll(disable)
	for (int i = 0; i < BPFBOX_NAME_LEN - 1; i++) {
		if (!w->win[i])
			break;
		if (w->win[i] != '.')
			continue;
		zero_name(w->key.name);
		bpf_probe_read_kernel_str(w->key.name, i + 2, name);
		if (name_denied(w, session, LSM_NAME_PREFIX))
			return 1;
	}
	return 0;
}

/* The file itself (chain[0]); moving: also a pair's DIR. */
static __noinline int leaf_denied(struct scratch *w, __u32 session, int moving)
{
	struct dentry *leaf;

	if (!w || !w->depth)
		return 0;
	leaf = chain_at(w, 0);
	if (read_name(w->key.name, leaf) &&
	    (name_denied(w, session, BPFBOX_NAME_EXACT) ||
	     (moving && name_denied(w, session, LSM_NAME_PAIR_DIR))))
		return 1;
	if (w->depth > 1 && read_pair(w->key.name, chain_at(w, 1), leaf) &&
	    name_denied(w, session, LSM_NAME_PAIR_EXACT))
		return 1;
	return suffix_denied(w, session, (__u64)leaf);
}

/*
 * The file's last extension is a source-code one (LSM_NAME_SOURCE: "py",
 * "js", ...): then NAME.* and directory patterns do not deny it, the
 * standard library's secrets.py and an SDK's credentials.js or
 * credentials/x.js being modules, not keys (docs/lsm.md "Where names
 * apply"). Patterns that name the whole name or the extension still do.
 */
static __noinline int source_leaf(struct scratch *w, __u32 session)
{
	struct dentry *d;
	const unsigned char *name;
	__u32 len, tail, dot;

	if (!w || !w->depth)
		return 0;
	d = chain_at(w, 0);
	name = BPF_CORE_READ(d, d_name.name);
	len = BPF_CORE_READ(d, d_name.len);
	tail = len > BPFBOX_NAME_LEN ? len - BPFBOX_NAME_LEN : 0;
	bpf_probe_read_kernel_str(w->win, BPFBOX_NAME_LEN + 1, name + tail);
	/* The last dot's position lives in memory: see interp_name(). */
	*(volatile __u32 *)&w->base = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < BPFBOX_NAME_LEN; i++) {
		if (!w->win[i])
			break;
		if (w->win[i] == '.')
			*(volatile __u32 *)&w->base = i + 1;
	}
	dot = *(volatile __u32 *)&w->base;
	if (!dot || dot >= BPFBOX_NAME_LEN)
		return 0;
	zero_name(w->key.name);
	bpf_probe_read_kernel_str(w->key.name, BPFBOX_NAME_LEN,
				  w->win + (dot & (BPFBOX_NAME_LEN - 1)));
	return name_denied(w, session, LSM_NAME_SOURCE);
}

/* One directory on the path (chain[1 + i]): found when a rule names it. */
static long component_step(__u64 i, void *arg)
{
	struct scratch *w = step_scratch(arg);
	__u32 n;
	struct dentry *d;

	if (!w)
		return 1;
	n = w->depth;
	if (i + 1 >= n)
		return 1;
	d = chain_at(w, i + 1);
	if ((read_name(w->key.name, d) && name_denied(w, w->session, BPFBOX_NAME_COMPONENT)) ||
	    (i + 2 < n && read_pair(w->key.name, chain_at(w, i + 2), d) &&
	     name_denied(w, w->session, LSM_NAME_PAIR_COMPONENT))) {
		w->found = 1;
		return 1;
	}
	return 0;
}

/* The directories on the path (chain[1..]). */
static __noinline int components_denied(struct scratch *w, __u32 session)
{
	if (!w)
		return 0;
	return scratch_loop(w, session, MAX_DEPTH, component_step);
}

enum abs_match {
	ABS_NONE,
	ABS_PREFIX, /* the path leads to a denied path: moving it would move
		       what is below */
	ABS_DENY,
};

/* One component of abs_match, from the root down. */
static long abs_step(__u64 i, void *arg)
{
	struct scratch *w = step_scratch(arg);
	struct lsm_abs_node *node;
	__u32 n, mask;

	if (!w)
		return 1;
	n = w->depth;
	if (i >= n) {
		w->found = ABS_PREFIX;
		return 1;
	}
	if (!read_name(w->abs.name, chain_at(w, n - 1 - i)))
		return 1;
	w->abs.session = w->session;
	w->abs.pad = 0;
	node = bpf_map_lookup_elem(&abs_paths, &w->abs);
	if (!node)
		return 1;
	mask = w->abs_mask;
	if (node->deny & mask) {
		w->found = ABS_DENY;
		return 1;
	}
	if (node->deny & LSM_TREE_SYSTEM)
		w->system = 1;
	w->abs.parent = node->id;
	/* The whole chain matched a prefix of a rule. */
	if (i + 1 >= MAX_DEPTH)
		w->found = ABS_PREFIX;
	return 0;
}

/*
 * The chain from the root down through the trie of absolute paths:
 * ABS_DENY at a node with one of the LSM_DENY_* bits of mask.
 */
static __noinline int abs_match(struct scratch *w, __u32 session, __u32 mask)
{
	if (!w)
		return ABS_NONE;
	w->system = 0;
	if (!w->rooted || !w->depth)
		return ABS_NONE;
	w->abs.parent = 0;
	w->abs_mask = mask;
	return scratch_loop(w, session, MAX_DEPTH, abs_step);
}

/*
 * Whether the dentry d (on mount vm) is denied to the session. moving:
 * the caller renames or links it, which may not happen either to the
 * directories that absolute and pair rules name on the way.
 */
static __always_inline bool dentry_denied(struct scratch *w, __u32 session, struct dentry *d,
					  struct vfsmount *vm, bool moving)
{
	int abs;

	if (chain_collect(w, (__u64)d, (__u64)vm) <= 0)
		return false;
	/* Moving a binary out of an exec_deny path would free it too. */
	abs = abs_match(w, session, moving ? LSM_DENY_OPEN | LSM_DENY_EXEC : LSM_DENY_OPEN);
	if (abs == ABS_DENY || (moving && abs == ABS_PREFIX))
		return true;
	/*
	 * Name patterns are about credentials in user trees: not in a system
	 * or library tree (/usr/lib, ...), unless the session may write there.
	 */
	if (w->system && !under_writable(w, session, (__u64)d))
		return false;
	/* A public file of a package (policy_public_files: a CA bundle). */
	if (w->depth > 1 && read_pair(w->key.name, chain_at(w, 1), chain_at(w, 0)) &&
	    name_denied(w, session, LSM_NAME_PAIR_PUBLIC))
		return false;
	if (leaf_denied(w, session, moving))
		return true;
	return !source_leaf(w, session) &&
	       (prefix_denied(w, session, (__u64)d) || components_denied(w, session));
}

/* w->key.name = the basename of interp (the path as given); 1 if done. */
static __noinline int interp_name(struct scratch *w, __u64 interp)
{
	long len;
	__u32 base;

	if (!w)
		return 0;
	len = bpf_probe_read_kernel_str(w->path, BPFBOX_PATH_LEN, (const char *)interp);
	if (len <= 1 || len >= BPFBOX_PATH_LEN) /* none, or cut short */
		return 0;
	/* In memory, not a register: the verifier does not track it. */
	w->base = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < BPFBOX_PATH_LEN; i++) {
		if (!w->path[i])
			break;
		if (w->path[i] == '/')
			*(volatile __u32 *)&w->base = i + 1;
	}
	base = *(volatile __u32 *)&w->base;
	if (base >= len - 1 || len - 1 - base >= BPFBOX_NAME_LEN)
		return 0;
	zero_name(w->key.name);
	bpf_probe_read_kernel_str(w->key.name, BPFBOX_NAME_LEN,
				  w->path + (base & (BPFBOX_PATH_LEN - 1)));
	return 1;
}

/* The binary (d on vm) is an exec_deny path. */
static __always_inline bool exec_path_denied(struct scratch *w, __u32 session, struct dentry *d,
					     struct vfsmount *vm)
{
	return chain_collect(w, (__u64)d, (__u64)vm) > 0 &&
	       abs_match(w, session, LSM_DENY_EXEC) == ABS_DENY;
}

/*
 * 0, or -EPERM: the hook's return value in two branches. Computed as
 * -(int)deny (one 32-bit negation) it leaves the 6.1 to 6.12 verifiers
 * without a range for R0 ("should have been in [-4095, 0]"): they do not
 * track BPF_NEG. The barrier keeps the compiler from folding the branches
 * back into arithmetic.
 */
static __always_inline int lsm_verdict(bool deny)
{
	if (deny) {
		barrier();
		return -EPERM;
	}
	return 0;
}

#endif
