// SPDX-License-Identifier: GPL-2.0
/*
 * Host capability probes: the features' and levels' names, and probe_host,
 * which runs each family (probe_sandbox.c, probe_bpf.c, probe_cgroup.c)
 * and derives the level from what really loaded and enforced.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kbtf.h"
#include "probe_internal.h"
#include "../lib/sockdiag.h"
#include "../lib/util.h"

static const struct {
	const char *key;
	const char *label;
} feature_names[FEAT__COUNT] = {

	[FEAT_LANDLOCK] = {"landlock", "Landlock"},
	[FEAT_SECCOMP] = {"seccomp", "seccomp filter"},
	[FEAT_BPF_LSM_ACTIVE] = {"bpf_lsm_active", "BPF LSM in LSM list"},
	[FEAT_BPF_LSM] = {"bpf_lsm", "BPF LSM program"},
	[FEAT_LSM_CGROUP] = {"lsm_cgroup", "BPF LSM per cgroup"},
	[FEAT_RINGBUF] = {"ringbuf", "BPF ring buffer"},
	[FEAT_TP_EXEC] = {"tracepoint_exec", "tracepoint sched_process_exec"},
	[FEAT_TP_OPENAT] = {"tracepoint_openat", "tracepoint sys_exit_openat"},
	[FEAT_FEXIT] = {"fexit", "BPF trampoline (fexit)"},
	[FEAT_CGROUP_BPF] = {"cgroup_bpf", "cgroup BPF connect4"},
	[FEAT_CGROUP_V2] = {"cgroup_v2", "cgroup v2"},
	[FEAT_CGROUP_FREEZE] = {"cgroup_freeze", "cgroup.freeze"},
	[FEAT_CGROUP_KILL] = {"cgroup_kill", "cgroup.kill"},
	[FEAT_BTF] = {"btf", "kernel BTF"},
	[FEAT_USERNS] = {"unprivileged_userns", "unprivileged user namespaces"},
	[FEAT_CGROUP_LIMITS] = {"cgroup_limits", "session limits by cgroup"},
	[FEAT_NAMESPACES] = {"session_namespaces", "session namespaces"},
	[FEAT_UDP_DIAG] = {"udp_diag", "UDP socket diagnostics"},
};

const char *feature_key(enum feature_id id)
{
	return feature_names[id].key;
}

const char *feature_label(enum feature_id id)
{
	return feature_names[id].label;
}

const char *feat_state_name(enum feat_state s)
{
	static const char *const names[] = {
		[FEAT_YES] = "available", [FEAT_NEEDS_ROOT] = "needs root"};

	return name_of(names, ARRAY_SIZE(names), s, "unavailable");
}

static const char *const level_names[] = {
	[LEVEL_NONE] = "None",
	[LEVEL_MINIMAL] = "Minimal",
	[LEVEL_STANDARD] = "Standard",
	[LEVEL_FULL] = "Full",
};

const char *level_name(enum bpfbox_level level)
{
	return level_names[level];
}

int level_parse(const char *name, enum bpfbox_level *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
		if (strcasecmp(name, level_names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

enum bpfbox_level level_from(bool bpf_lsm, bool landlock, bool seccomp, bool cgroup_v2)
{
	if (bpf_lsm && landlock && seccomp && cgroup_v2)
		return LEVEL_FULL;
	if (landlock && seccomp)
		return LEVEL_STANDARD;
	if (seccomp)
		return LEVEL_MINIMAL;
	return LEVEL_NONE;
}

void probe_set_feat(struct feature *f, enum feat_state state, int err, const char *fmt, ...)
{
	va_list ap;

	f->state = state;
	f->err = abs(err);
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
}

/*
 * The egress resolver serves a query only once sock_diag has named the
 * sender socket's cgroup (net/dns.c): asked here of a socket of our own.
 * Without udp_diag a session with a name rule is refused at its start.
 */
static void probe_udp_diag(struct host_caps *caps)
{
	struct feature *f = &caps->feat[FEAT_UDP_DIAG];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), d = sockdiag_open(), r;
	uint64_t cg;

	if (u < 0 || d < 0 || bind(u, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(u, (struct sockaddr *)&a, &len) < 0)
		r = u < 0 || d >= 0 ? -errno : d;
	else
		r = sockdiag_udp4_cgroup(d, 1, htonl(INADDR_LOOPBACK), htons(9),
					 htonl(INADDR_LOOPBACK), a.sin_port, &cg);
	if (u >= 0)
		close(u);
	if (d >= 0)
		close(d);
	if (r < 0)
		probe_set_feat(f, FEAT_NO, r,
			       "sock_diag: %s; egress by name (--net-allow NAME) is refused: "
			       "load the udp_diag module",
			       strerror(-r));
	else
		probe_set_feat(f, FEAT_YES, 0, "sock_diag names a UDP socket's cgroup");
}

static void mark_not_probed(struct host_caps *caps)
{
	for (int id = FEAT_BPF_LSM_ACTIVE; id < FEAT__COUNT; id++)
		probe_set_feat(&caps->feat[id], FEAT_NO, 0, "not probed");
}

int probe_host(struct host_caps *caps, unsigned int flags)
{
	struct utsname uts;
	bool cg;

	memset(caps, 0, sizeof(*caps));
	caps->root = geteuid() == 0;
	if (uname(&uts) == 0)
		snprintf(caps->kernel_release, sizeof(caps->kernel_release), "%s", uts.release);

	probe_landlock(caps);
	probe_seccomp(caps);
	if (flags & PROBE_ALL) {
		kbtf_hold(); /* the probes' loads read the kernel's BTF once */
		probe_bpf_features(caps);
		probe_btf(caps);
		kbtf_release();
		probe_userns(caps);
		probe_limits(caps);
		probe_udp_diag(caps);
	} else {
		mark_not_probed(caps);
	}
	probe_namespaces(caps);

	cg = caps->feat[FEAT_CGROUP_V2].state == FEAT_YES &&
	     caps->feat[FEAT_CGROUP_KILL].state == FEAT_YES;
	caps->level = level_from(caps->feat[FEAT_BPF_LSM].state == FEAT_YES,
				 caps->feat[FEAT_LANDLOCK].state == FEAT_YES,
				 caps->feat[FEAT_SECCOMP].state == FEAT_YES, cg);
	return 0;
}
