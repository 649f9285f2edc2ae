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

void kbtf_hold(void);
void kbtf_release(void);
/* How many times this process has read the kernel's BTF. */
unsigned int kbtf_reads(void);

#endif
