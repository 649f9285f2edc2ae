/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command rules (docs/config.md "Command rules"): the denied command
 * patterns, then an ordered list of rules {exe, argv, action}, first match
 * wins. The same decision is taken for the top-level command before
 * anything runs (rules_check) and, where BPF is loaded, for every exec of
 * the session in the kernel (rules_compile -> bpf/cmd.bpf.c).
 */
#ifndef BPFBOX_POLICY_RULES_H
#define BPFBOX_POLICY_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "bpfbox/events.h"

struct json_object;
struct layer_ctx;
struct policy_error;

const char *cmd_action_name(enum cmd_action a);

/*
 * Parses a JSON array of rule objects into out (appended), naming the
 * layer origin in each rule. -EINVAL with *err filled (merge.c's lerr).
 */
int rules_parse(struct json_object *a, const char *sub, const char *origin, struct cmd_rules *out,
		const struct layer_ctx *lc, struct policy_error *err);
/* NULL when s is a valid deny_commands pattern, else why not. */
/* Whether pat occurs in line at word boundaries (bpfbox/events.h). */
bool rules_pattern_in(const char *line, const char *pat);
const char *rules_pattern_problem(const char *s);

/* The decision for one exec. */
struct rules_verdict {
	enum cmd_action action; /* CMD_ALLOW when nothing matched */
	bool matched;
	char rule[BPFBOX_CMD_LABEL_LEN]; /* "deny_commands: mkfs", "commands[2]" */
};

/*
 * Decides for an exec of path (the file, absolute when known, or argv[0])
 * with argv (NULL-terminated): deny_commands first, then the rules in
 * order. The same semantics as the kernel's (bpf/cmd.bpf.c), bounded the
 * same way (the first BPFBOX_CMD_ARGV_SCAN bytes of argv).
 */
void rules_check(const struct bpfbox_policy *p, const char *path, char *const *argv,
		 struct rules_verdict *v);

/* rules_check for a command line, its file looked up on $PATH as execvp would. */
void rules_check_command(const struct bpfbox_policy *p, char *const *argv, struct rules_verdict *v);

/* Whether the policy has anything to check (false: nothing is compiled). */
bool rules_any(const struct bpfbox_policy *p);

/*
 * The policy's command rules as the kernel's table. -E2BIG when there are
 * more than BPFBOX_CMD_RULES_MAX, -EINVAL for a rule the kernel cannot
 * express (validation refuses those first).
 */
int rules_compile(const struct bpfbox_policy *p, struct bpfbox_cmd_table *t);

/*
 * The same from the policy as JSON (policy_to_json: "deny_commands",
 * "commands"), as a daemon receives it at register. No keys: an empty
 * table (t->n 0). -EINVAL for a malformed list, else as rules_compile.
 */
int rules_compile_json(struct json_object *policy, struct bpfbox_cmd_table *t);

/* FNV-1a 64 of n bytes, as bpf/cmd.bpf.c computes it. */
__u64 rules_hash(const char *s, size_t n);

/* The rules as JSON (policy_to_json). */
struct json_object *rules_to_json(const struct cmd_rules *r);

#endif
