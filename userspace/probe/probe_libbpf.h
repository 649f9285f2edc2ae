/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the probes and the agent's loader share about libbpf: its messages
 * kept off stderr unless BPFBOX_LIBBPF_DEBUG is set, and a cgroup attach
 * that answers -errno.
 */
#ifndef BPFBOX_PROBE_LIBBPF_H
#define BPFBOX_PROBE_LIBBPF_H

#include <stdarg.h>
#include <bpf/libbpf.h>

/*
 * A libbpf print function: silent, but for BPFBOX_LIBBPF_DEBUG, where every
 * message (the verifier's log among them) goes to stderr. Set it around a
 * load: old = libbpf_set_print(probe_libbpf_print); ...; libbpf_set_print(old).
 */
int probe_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap);

/* prog attached to the cgroup: 0 and *link, or -errno and *link NULL. */
int probe_attach_cgroup(struct bpf_program *prog, int cgroup_fd, struct bpf_link **link);

#endif
