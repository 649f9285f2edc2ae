/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The file, exec and connect policy of one session as entries of the maps
 * of bpf/lsm.bpf.c: deny patterns become name keys (`names`) and a trie of
 * absolute paths (`abs_paths`), CIDRs become LPM keys (`net_allow`).
 * docs/lsm.md has the encoding and what it approximates.
 */
#ifndef BPFBOX_LSM_POLICY_H
#define BPFBOX_LSM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "bpfbox/events.h"
#include "bpfbox/lsm.h"

struct lsm_bpf;
struct bpfbox_policy;

/* The policy maps, by fd: from a loaded skeleton or from pins (a daemon). */
struct lsm_maps {
	int names;
	int abs_paths;
	int net_allow; /* shared with bpf/net.bpf.c */
	int writable;  /* the writable set by inode (-1: an older pin without it) */
	int own_sbs;   /* the tmpfs a session's set-up made (-1: an older pin without it) */
};

struct lsm_maps lsm_maps_of(struct lsm_bpf *skel);

enum lsm_map {
	LSM_MAP_NAMES,
	LSM_MAP_ABS,
};

/* One map entry: a names key (value 1) or an abs_paths key and node. */
struct lsm_entry {
	enum lsm_map map;
	union {
		struct bpfbox_name_key name;
		struct {
			struct lsm_abs_key abs;
			struct lsm_abs_node node;
		};
	};
};

struct lsm_entries {
	struct lsm_entry *v;
	size_t n, cap;
};

void lsm_entries_free(struct lsm_entries *e);

/*
 * Appends the entries of one deny pattern (docs/config.md) to *out.
 * -EINVAL for a pattern of no known form, -ENAMETOOLONG for a name longer
 * than BPFBOX_NAME_LEN - 1 (a pair's halves: LSM_PAIR_HALF - 1), a path
 * longer than BPFBOX_PATH_LEN - 1 or deeper than LSM_MAX_DEPTH, -ENOMEM.
 * On error *out is as it was.
 */
int lsm_compile_deny(const char *pattern, __u32 session, struct lsm_entries *out);
/*
 * Where the session's name patterns apply (docs/lsm.md "Where names
 * apply"): the system trees as abs_paths nodes with LSM_TREE_SYSTEM, the
 * source-code extensions as LSM_NAME_SOURCE names (policy.h's lists).
 * Written with the patterns when lsm_name_patterns() says there are any.
 */
int lsm_compile_scope(__u32 session, struct lsm_entries *out);
/* Some of the ndeny patterns are name patterns (not absolute paths). */
bool lsm_name_patterns(const char *const *deny, size_t ndeny);
/*
 * The entries of one binary that may not be executed: a name (any binary
 * called so) or an absolute path (that file, or every file below that
 * directory). Errors as lsm_compile_deny.
 */
int lsm_compile_exec(const char *name, __u32 session, struct lsm_entries *out);

/*
 * "10.0.0.0/8", "::1/128" or a bare address (a host) into a net_allow key
 * (session 0, host bits cleared, IPv4 as ::ffff:a.b.c.d). -EINVAL if bad.
 */
int lsm_parse_cidr(const char *cidr, struct bpfbox_net_key *key);

/*
 * Adds p->deny_paths and the NULL-terminated exec_deny names or paths (may
 * be NULL) to the session's entries. All or nothing: on error what this call added
 * or changed is undone. -errno.
 */
int lsm_policy_add(struct lsm_maps m, __u32 session, const struct bpfbox_policy *p,
		   const char *const *exec_deny);

/*
 * The same from lists of strings (a daemon's register request): ndeny
 * deny patterns and nexec exec_deny names or paths. On -EINVAL or
 * -ENAMETOOLONG *bad (may be NULL) is the entry at fault.
 */
int lsm_policy_add_lists(struct lsm_maps m, __u32 session, const char *const *deny, size_t ndeny,
			 const char *const *exec_deny, size_t nexec, const char **bad);

/*
 * Deletes the names, abs_paths, writable and own_sbs entries of every session keep() says no
 * to (a daemon's orphans after re-adoption). The number deleted, or -errno.
 */
int lsm_policy_sweep(struct lsm_maps m, bool (*keep)(void *ctx, __u32 session), void *ctx);

/*
 * The session's writable set: each directory of dirs (n of them) by device
 * and inode, for the BPF LSM's metadata and pathname unix checks. A
 * directory that cannot be stat'ed is left out (nothing below it is then
 * writable for these checks: fail closed). added (n slots, may be NULL)
 * gets the keys written, *nadded their number. -errno of a map update.
 */
int lsm_writable_add(struct lsm_maps m, __u32 session, const char *const *dirs, size_t n,
		     struct bpfbox_inode_key *added, size_t *nadded);
/*
 * Deletes those keys again (added by lsm_writable_add; n of them), and the
 * file systems the BPF LSM learnt the session made (own_sbs).
 */
int lsm_writable_remove(struct lsm_maps m, __u32 session, const struct bpfbox_inode_key *keys,
			size_t n);
/*
 * Deletes the entries that lsm_policy_add_lists wrote for these lists, key
 * by key: the cost of the session's own entries, not of the whole maps
 * (lsm_policy_remove walks them). The connect allow-list is not touched.
 */
int lsm_policy_remove_lists(struct lsm_maps m, __u32 session, const char *const *deny, size_t ndeny,
			    const char *const *exec_deny, size_t nexec);

/* Deletes every names, abs_paths, writable, own_sbs and net_allow entry of the session. */
int lsm_policy_remove(struct lsm_maps m, __u32 session);

/*
 * Allows connects from the session to cidr on ports lo..hi (one range per
 * CIDR: adding the same CIDR again replaces it). A cloud metadata address
 * inside a wider CIDR stays denied: only a rule for exactly that address
 * allows it. -EINVAL for a bad CIDR or lo > hi.
 */
int lsm_net_allow_add(struct lsm_maps m, __u32 session, const char *cidr, __u16 lo, __u16 hi);

/* lsm_net_allow_add on net_allow alone (the cgroup programs' view). */
int lsm_net_add_rule(struct lsm_maps m, __u32 session, const char *cidr, __u16 lo, __u16 hi);

#endif
