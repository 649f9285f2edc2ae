/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What kbtf_keep.c asks of kbtf_core.c: the BTFs made from the kernel's,
 * each written to a file (0, or -errno).
 */
#ifndef BPFBOX_KBTF_INTERNAL_H
#define BPFBOX_KBTF_INTERNAL_H

#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* The kernel types local's CO-RE relocations can match, with what they embed. */
int kbtf_subset(const struct btf *k, const struct btf *local, int fd);
/* The kernel's whole BTF: what libbpf would search without a subset. */
int kbtf_whole(const struct btf *k, int fd);
/*
 * How many FUNCs of obj may be kfuncs when the kernel's BTF serves it for
 * nothing else, -1 when it does (a program attached by BTF, an extern
 * variable).
 */
int kbtf_kfuncs_only(struct bpf_object *obj, const struct btf *local);
/* Each kfunc obj may call at its kernel id, with its prototype (kbtf_standin). */
int kbtf_standin_make(const struct btf *k, struct bpf_object *obj, const struct btf *local, int fd);

#endif
