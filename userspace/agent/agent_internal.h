/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's own pieces, shared by its files and nobody else:
 * agent.c (open and close, the ring), agent_load.c (load and attach each
 * skeleton per mode), agent_btf.c (the kernel's BTF asked), agent_pin.c (pins a daemon leaves for its next
 * incarnation), agent_maps.c (session map writes) and agent_agg.c (the
 * folded opens flushed when a session ends).
 */
#ifndef BPFBOX_AGENT_INTERNAL_H
#define BPFBOX_AGENT_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent.h"
#include "lsm_policy.h"

struct bpf_object;
struct bpf_object_skeleton;
struct bpf_link;

#define AGENT_FILE_LINKS 32

struct agent {
	struct audit_bpf *audit;
	struct net_bpf *net;
	struct lsm_bpf *lsm;
	struct cmd_bpf *cmd;	  /* command rules on every exec */
	int cmd_rules_fd;	  /* its table (from the skeleton or the pin) */
	bool cmd_adopted;	  /* pin_dir: its link was found pinned */
	struct lsm_maps lsm_maps; /* fds, also when the programs were adopted */
	struct ring_buffer *rb;
	int parent_fd;
	int sessions_fd, events_fd, lost_fd, net_allow_fd, unix_allow_fd, agg_fd, oom_fd;
	/* embedded, tracepoint mode: the file changes' one program's links (agent_files.c) */
	struct bpf_link *file_links[AGENT_FILE_LINKS];
	int n_file_links;
	char pin_dir[PATH_MAX]; /* "" when nothing is pinned */
	bool own_fds;		/* the map fds come from pins: ours to close */
	struct agent_status st;
};

/* agent_load.c: loads and attaches every skeleton the options ask for; the
 * network programs' result (-EXDEV: pinned for another cgroup parent). */
int agent_load_programs(struct agent *a, const struct agent_opts *o);

/*
 * agent_files.c: whether sys is one of bpfbox/file_syscalls.h's; the
 * audit's exit_file attached to each one's tracepoint that have() says
 * this kernel has (0 or -errno, none left on failure); those links
 * destroyed.
 */
bool agent_file_syscall(const char *sys);
int agent_attach_file_links(struct agent *a, bool (*have)(const char *, const char *));
void agent_detach_file_links(struct agent *a);

/* agent_btf.c: whether the kernel's enum bpf_attach_type has a value named name. */
bool agent_btf_has(const char *name);

/* agent_pin.c */
void agent_pin_path(const char *dir, char *buf, size_t size, const char *kind, const char *name);
bool agent_links_pinned(const struct agent *a, const struct bpf_object_skeleton *sk);
void agent_unpin_links(const struct agent *a, const struct bpf_object_skeleton *sk);
int agent_pin_links(const struct agent *a, const struct bpf_object_skeleton *sk);
void agent_disconnect_pinned_links(const struct bpf_object_skeleton *sk);
int agent_set_map_pins(const struct agent *a, struct bpf_object *obj);
int agent_check_cgroup_link(const struct agent *a, const char *prog);
int agent_open_pinned_maps(struct agent *a);

#endif
