/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by merge.c (a layer's keys, scalars and limits) and
 * merge_lists.c (its lists: paths, deny patterns, network rules, exec
 * denials, commands, env). Not part of the policy API.
 */
#ifndef BPFBOX_POLICY_MERGE_INTERNAL_H
#define BPFBOX_POLICY_MERGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "policy-internal.h"

struct json_object;

bool merge_in_list(const char *s, const char *const *list, size_t n);
/* A non-empty JSON string without NUL bytes. */
int merge_get_string(const struct layer_ctx *lc, struct policy_error *err, const char *sub,
		     struct json_object *v, const char **out);
/* restrictions (replace) or extra (append) of one layer. */
int merge_lists(struct bpfbox_policy *p, struct json_object *o, const char *sect, bool replace,
		const char *origin, const struct layer_ctx *lc, struct policy_error *err);

#endif
