/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The names of the shared header's enums (include/bpfbox/events.h) as the
 * audit stream spells them (schema/events.schema.json): one table each,
 * generated from one list, for the encoder, the run summary, its hints
 * and the metrics.
 */
#ifndef BPFBOX_NAMES_H
#define BPFBOX_NAMES_H

#include "bpfbox/events.h"

/* enum bpfbox_layer: who denied ("layer" of a record). */
#define BPFBOX_LAYER_NAMES(X)                    \
	X(BPFBOX_LAYER_LANDLOCK, "landlock")     \
	X(BPFBOX_LAYER_SECCOMP, "seccomp")       \
	X(BPFBOX_LAYER_CGROUP_BPF, "cgroup-bpf") \
	X(BPFBOX_LAYER_BPF_LSM, "bpf-lsm")       \
	X(BPFBOX_LAYER_KERNEL, "kernel")         \
	X(BPFBOX_LAYER_EGRESS, "egress-proxy")   \
	X(BPFBOX_LAYER_MOUNT, "mount")           \
	X(BPFBOX_LAYER_EXEC_TP, "exec-tracepoint")

/* enum bpfbox_file_op: what a file record did ("op"; an open has none). */
#define BPFBOX_FILE_OP_NAMES(X)             \
	X(BPFBOX_FILE_OPEN, "open")         \
	X(BPFBOX_FILE_UNLINK, "unlink")     \
	X(BPFBOX_FILE_RMDIR, "rmdir")       \
	X(BPFBOX_FILE_RENAME, "rename")     \
	X(BPFBOX_FILE_MKDIR, "mkdir")       \
	X(BPFBOX_FILE_LINK, "link")         \
	X(BPFBOX_FILE_SYMLINK, "symlink")   \
	X(BPFBOX_FILE_CHMOD, "chmod")       \
	X(BPFBOX_FILE_UTIMES, "utimes")     \
	X(BPFBOX_FILE_CHOWN, "chown")       \
	X(BPFBOX_FILE_SETXATTR, "setxattr") \
	X(BPFBOX_FILE_REMOVEXATTR, "removexattr")

/* The layer's name, NULL for none (BPFBOX_LAYER_NONE) or an unknown one. */
const char *bpfbox_layer_name(unsigned int layer);
/* The layer of a name, or -1. */
int bpfbox_layer_parse(const char *name);
/* The file op's name, NULL for an unknown one. */
const char *bpfbox_file_op_name(unsigned int op);
/* The file op of a name ("open" included), or -EINVAL. */
int bpfbox_file_op_parse(const char *name);

#define BPFBOX_NAME_COUNT(id, name) +1
/* How many file ops the list has: tables indexed by the op check their size against it. */
#define BPFBOX_FILE_OP_COUNT (0 BPFBOX_FILE_OP_NAMES(BPFBOX_NAME_COUNT))

#endif
