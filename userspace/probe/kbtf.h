/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The running kernel's BTF, read and parsed once while objects load.
 *
 * libbpf reads /sys/kernel/btf/vmlinux (5.5 MB here) and parses it again
 * for every object it loads and every probe that asks it, and those reads
 * were most of an embedded session's BPF load (docs/benchmarks.md). Between
 * kbtf_hold() and kbtf_release() every btf__load_vmlinux_btf() in the
 * process, libbpf's own included (the link wraps it, Makefile's WRAPS),
 * returns the same parsed copy, read-only, and btf__free() of it only
 * drops a reference. Outside a hold nothing is kept: a daemon does not
 * carry the copy after its load.
 */
#ifndef BPFBOX_KBTF_H
#define BPFBOX_KBTF_H

#include <bpf/libbpf.h>

void kbtf_hold(void);
void kbtf_release(void);
/* How many times this process has read the kernel's BTF. */
unsigned int kbtf_reads(void);

/*
 * CO-RE against the kernel's types an object can match, not all of them
 * (kbtf_core.c): open the object with kbtf_core_open()'s options, call
 * kbtf_core_fill() before its load, kbtf_core_close() after. Where no
 * memory file can be made the options are libbpf's defaults; where the
 * subset cannot be made the file holds the kernel's whole BTF.
 */
struct kbtf_core {
	int fd;
	int standin;   /* the object's kfuncs at their kernel ids, or -1 (kbtf_core.c) */
	char path[32]; /* "/proc/self/fd/N", the options' btf_custom_path */
	struct bpf_object_open_opts opts;
};

const struct bpf_object_open_opts *kbtf_core_open(struct kbtf_core *c);
/* 0, or -errno: the object's load then fails (its CO-RE BTF unreadable). */
int kbtf_core_fill(struct kbtf_core *c, struct bpf_object *obj);
void kbtf_core_close(struct kbtf_core *c);
/*
 * While fd >= 0, btf__load_vmlinux_btf() on this thread returns a fresh
 * parse of the BTF in fd instead of the kernel's: kbtf_core_fill() sets
 * the stand-in of an object that needs the kernel's BTF for its kfuncs
 * only, kbtf_core_close() clears it. -1: the kernel's again.
 */
void kbtf_standin(int fd);
/* Frees the index of the kernel's names (kbtf.c, when its copy goes). */
void kbtf_core_forget(void);

#endif
