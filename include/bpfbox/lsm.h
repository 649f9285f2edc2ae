/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The layout of the BPF LSM's file policy maps (bpf/lsm.bpf.c reads them,
 * userspace/agent/lsm_policy.c fills them; docs/lsm.md has the encoding):
 * one definition for both sides.
 */
#ifndef BPFBOX_LSM_H
#define BPFBOX_LSM_H

#include "bpfbox/events.h"

/*
 * Name kinds of `names` beyond enum bpfbox_name_kind. Pair keys hold DIR
 * at name[0] and NAME at name[LSM_PAIR_HALF], each NUL-terminated and
 * zero padded.
 */
#define LSM_NAME_PREFIX		16 /* pattern NAME.*: key "NAME." */
#define LSM_NAME_PAIR_EXACT	17 /* pattern DIR/NAME: the file NAME in DIR */
#define LSM_NAME_PAIR_COMPONENT 18 /* ... a directory NAME in DIR */
#define LSM_NAME_PAIR_DIR	19 /* ... DIR (key "DIR"): not to be renamed */
#define LSM_NAME_SOURCE		20 /* a source-code extension (key "py"): see LSM_TREE_SYSTEM */
#define LSM_NAME_PAIR_PUBLIC	21 /* DIR/NAME of a public file (a CA bundle): no pattern denies it */
#define LSM_PAIR_HALF		32

/* Deepest absolute pattern, in components (the BPF walk's bound). */
#define LSM_MAX_DEPTH 32

/* Key and value of abs_paths: absolute deny paths as a trie of components. */
struct lsm_abs_key {
	__u32 session;
	__u32 pad;
	__u64 parent; /* id of the parent node, 0 for the root */
	char name[BPFBOX_NAME_LEN];
};

struct lsm_abs_node {
	__u64 id;   /* FNV-1a of the path up to here ("/etc"), never 0 */
	__u32 deny; /* LSM_DENY_*: for this path and all below it */
	__u32 pad;
};

#define LSM_DENY_OPEN 1 /* a deny pattern: no open, rename, link */
#define LSM_DENY_EXEC 2 /* an exec_deny path: no exec, no executable map */
/*
 * A system or library tree (/usr/lib, ...): name patterns do not apply
 * below it, outside the session's writable set (docs/lsm.md "Where names
 * apply"). Not a deny bit: absolute rules below it still hold.
 */
#define LSM_TREE_SYSTEM 4

#endif
