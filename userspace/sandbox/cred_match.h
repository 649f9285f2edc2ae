/* SPDX-License-Identifier: GPL-2.0 */
/* The credential patterns compiled and matched on absolute paths (cred_match.c). */
#ifndef BPFBOX_CRED_MATCH_H
#define BPFBOX_CRED_MATCH_H

#include <stdbool.h>
#include <stddef.h>

struct bpfbox_policy;
struct pat;

/* The policy's "**" "/" patterns, each split in its components. */
struct cred_pats {
	struct pat *v;
	size_t n;
};

/* 0 or -ENOMEM; cred_pats_free() it. */
int cred_pats_compile(const struct bpfbox_policy *p, struct cred_pats *c);
void cred_pats_free(struct cred_pats *c);
/* Whether the last components of path[0, len) match a whole pattern. */
bool cred_full_match(const struct cred_pats *c, const char *path, size_t len);
/* Whether a two-component pattern may match one level below path[0, len). */
bool cred_partial_match(const struct cred_pats *c, const char *path, size_t len);
/* Whether path[0, len) or one of its ancestors matches. */
bool cred_ancestor_match(const struct cred_pats *c, const char *path, size_t len);
/* Whether path (absolute) or an ancestor matches a pattern of p. */
bool cred_path_denied(const struct bpfbox_policy *p, const char *path);

#endif
