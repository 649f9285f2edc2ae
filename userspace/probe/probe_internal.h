/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe families' shared pieces: probe.c (names, levels, probe_host),
 * probe_sandbox.c (Landlock, seccomp, namespaces, each tried in a child),
 * probe_bpf.c (programs loaded and attached, the per-boot caches),
 * probe_cgroup.c (cgroup v2, freeze and kill, the session limits).
 */
#ifndef BPFBOX_PROBE_INTERNAL_H
#define BPFBOX_PROBE_INTERNAL_H

#include "probe.h"

/* Sets a feature's state, its errno and its detail line. */
void probe_set_feat(struct feature *f, enum feat_state state, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* probe_sandbox.c */
void probe_landlock(struct host_caps *caps);
void probe_seccomp(struct host_caps *caps);
void probe_userns(struct host_caps *caps);
void probe_namespaces(struct host_caps *caps);

/* probe_bpf.c: the BPF programs, the LSM list, BTF (PROBE_ALL) */
void probe_bpf_features(struct host_caps *caps);
void probe_btf(struct host_caps *caps);

/* probe_cgroup.c */
void probe_cgroup_v2(struct host_caps *caps, const char *scratch);
void probe_limits(struct host_caps *caps);

#endif
