/* SPDX-License-Identifier: GPL-2.0 */
/*
 * policy_load's state, shared by load.c (the layers and their order),
 * load_file.c (a JSON file read and parsed with line and column in its
 * errors) and load_expand.c (paths expanded and resolved, errors named
 * after the layer that set them). Not part of the policy API.
 */
#ifndef BPFBOX_POLICY_LOAD_INTERNAL_H
#define BPFBOX_POLICY_LOAD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "policy-internal.h"

struct json_object;

/* One layer to merge, in order. */
struct load_layer {
	struct json_object *obj; /* borrowed from struct load */
	const char *file;
	char prefix[128];
	char *origin;
	const char *mode_name;
	bool may_replace_deny;
};

struct load {
	struct json_object *global;
	const char *global_file;
	struct json_object *task;
	struct json_object **files;
	size_t n_files;
	struct load_layer layers[8];
	struct load_layer *more; /* the layers past the fixed ones */
	size_t n_layers;
	char *cwd;
};

struct load_layer *load_layer_at(struct load *l, size_t i);

/* load_file.c */
int load_json_file(const char *path, bool optional, const char *what, struct json_object **out,
		   struct policy_error *err);

/* load_expand.c */
int load_expand_workspace(struct bpfbox_policy *p, const struct load *l, struct policy_error *err);
int load_expand_list(struct strv *list, const char *key, enum policy_grant kind,
		     const struct load *l, struct policy_error *err);
void load_relocate_error(const struct load *l, struct policy_error *err);

#endif
