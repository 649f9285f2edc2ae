/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the policy sources only; not part of the policy API. */
#ifndef BPFBOX_POLICY_INTERNAL_H
#define BPFBOX_POLICY_INTERNAL_H

#include <stdarg.h>

#include "policy.h"

/* Every limit is at most this (1 TiB in bytes, 2^40 s): no unit overflows. */
#define POLICY_LIMIT_MAX (1ULL << 40)

/* One key of the "limits" object. */
enum limit_kind {
	LK_NUM,	    /* a whole number */
	LK_SECONDS, /* a number of seconds, or a string with a unit: "500ms", "5s", "2m" */
	LK_BYTES,   /* a number of bytes, or "512K", "1M" */
	LK_MB,	    /* a number of MB, or "512M", "2G" */
	LK_CHOICE,  /* one of names[] */
};

struct limit_def {
	const char *key; /* JSON name */
	enum limit_kind kind;
	const char *const *names; /* LK_CHOICE: index -> name */
	size_t offset;		  /* in struct policy_limits */
	uint64_t min;		  /* in JSON units */
	uint64_t scale;		  /* JSON unit -> stored unit (timeout_s -> ms: 1000) */
};

extern const struct limit_def policy_limit_defs[];
extern const size_t policy_n_limit_defs;

/* How one layer is named in errors and what it may change. */
struct layer_ctx {
	const char *file;      /* the file, or "command line" */
	const char *prefix;    /* JSON path of the layer in file, "" at top */
	const char *mode_name; /* a modes.NAME layer: NAME; NULL otherwise */
	bool may_replace_deny; /* only the global sandbox and agents.NAME */
};

/* policy_merge_layer with the naming and rights spelled out. */
int layer_merge(struct bpfbox_policy *p, struct json_object *layer, const char *origin,
		const struct layer_ctx *ctx, struct policy_error *err);

/* Fills *err (if not NULL) and returns r. file/path must not point into err. */
int policy_error_set(struct policy_error *err, const char *file, const char *path, int r,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int policy_error_vset(struct policy_error *err, const char *file, const char *path, int r,
		      const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

/* An error at sub (a path inside the layer, merge.c); always -EINVAL. */
int lerr(const struct layer_ctx *lc, struct policy_error *err, const char *sub, const char *fmt,
	 ...) __attribute__((format(printf, 4, 5)));
/* -ENOMEM, named after the layer. */
int oom(const struct layer_ctx *lc, struct policy_error *err);

/* prefix.key into buf (just key when prefix is empty), cut to size. */
void path_join(char *buf, size_t size, const char *prefix, const char *key);

/* sub[i] into buf, cut to size. */
void path_index(char *buf, size_t size, const char *sub, size_t i);

/* Pushes str unless s already holds it. */
int strv_push_unique(struct strv *s, const char *str);

/* "/" or one of the system directories (or what one resolves to). */
bool policy_is_system_dir(const char *path);

/*
 * Why path may not be writable in a session (a kernel interface, bpfbox's
 * own state, a shared root), as a phrase for "it is ..."; NULL when it may.
 */
const char *policy_writable_rule(const char *path);

/* Which list a granted path is in. */
enum policy_grant { GRANT_RO, GRANT_RW, GRANT_DEVICE };

/*
 * Whether path (resolved) may be granted as kind: 0, or -EINVAL with the
 * one-line message in msg (the path, the rule, what to do instead).
 * Read-only: not /dev nor below it (a device node points at --device);
 * read-write: policy_writable_rule; a device: a character device node
 * under /dev, not one of the kernel's own nor the host's terminals,
 * input or disks (docs/SECURITY.md, "Devices").
 */
int policy_grant_problem(enum policy_grant kind, const char *path, char *msg, size_t size);

#endif
