// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's life cycle: open (load or adopt the programs, take the map
 * fds, the ring), close, the ring reader. Loading is agent_load.c, pins
 * agent_pin.c, the session map writes agent_maps.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "../lib/cgroup.h"
#include "../lib/util.h"
#include "audit.skel.h"
#include "cmd.skel.h"
#include "lsm.skel.h"
#include "net.skel.h"

/* An agent with no fds yet, its cgroup parent opened. */
static int agent_new(struct agent **out, const struct agent_opts *o)
{
	struct agent *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->sessions_fd = a->events_fd = a->lost_fd = a->net_allow_fd = a->agg_fd = a->oom_fd = -1;
	a->lsm_maps.names = a->lsm_maps.abs_paths = a->lsm_maps.net_allow = -1;
	a->lsm_maps.writable = a->lsm_maps.own_sbs = -1;
	a->unix_allow_fd = -1;
	a->cmd_rules_fd = -1;
	a->parent_fd = cgroup_parent_open(o->cgroup_parent);
	if (a->parent_fd < 0) {
		int r = a->parent_fd;

		free(a);
		return r;
	}
	*out = a;
	return 0;
}

/* The map fds the agent writes: from the pins, else from the loaded skeletons. */
static int agent_map_fds(struct agent *a)
{
	if (a->pin_dir[0]) {
		int r = agent_open_pinned_maps(a);

		if (r < 0)
			return r;
	} else if (a->audit) {
		a->sessions_fd = bpf_map__fd(a->audit->maps.sessions);
		a->events_fd = bpf_map__fd(a->audit->maps.events);
		a->lost_fd = bpf_map__fd(a->audit->maps.lost);
		a->agg_fd = bpf_map__fd(a->audit->maps.agg);
		a->oom_fd = bpf_map__fd(a->audit->maps.oom_victims);
	} else {
		a->sessions_fd = bpf_map__fd(a->net->maps.sessions);
		a->events_fd = bpf_map__fd(a->net->maps.events);
		a->lost_fd = bpf_map__fd(a->net->maps.lost);
	}
	if (!a->pin_dir[0] && a->net) {
		a->net_allow_fd = bpf_map__fd(a->net->maps.net_allow);
		a->unix_allow_fd = bpf_map__fd(a->net->maps.unix_allow);
	}
	if (!a->pin_dir[0] && a->cmd)
		a->cmd_rules_fd = bpf_map__fd(a->cmd->maps.cmd_rules);
	if (!a->pin_dir[0] && a->lsm) {
		a->lsm_maps = lsm_maps_of(a->lsm);
		if (a->net_allow_fd < 0)
			a->net_allow_fd = a->lsm_maps.net_allow;
	}
	a->lsm_maps.net_allow = a->net_allow_fd;
	return 0;
}

int agent_open(struct agent **out, const struct agent_opts *o)
{
	struct agent *a;
	int r, rn;

	r = agent_new(&a, o);
	if (r < 0)
		return r;
	if (o->pin_dir) {
		snprintf(a->pin_dir, sizeof(a->pin_dir), "%s", o->pin_dir);
		r = agent_pin_dir_prepare(a->pin_dir);
		if (r < 0) {
			agent_close(a);
			return r;
		}
	}
	rn = agent_load_programs(a, o);
	if (rn == -EXDEV || (!a->st.audit && !a->st.net)) {
		agent_close(a);
		return rn == -EXDEV ? -EXDEV : -ENOTSUP;
	}
	r = agent_map_fds(a);
	if (r < 0) {
		agent_close(a);
		return r;
	}
	a->rb = ring_buffer__new(a->events_fd, o->on_record, o->ctx, NULL);
	if (!a->rb) {
		r = -errno;
		agent_close(a);
		return r;
	}
	*out = a;
	return 0;
}

void agent_detach_cgroup_links(struct agent *a)
{
	const struct bpf_object_skeleton *sk = a && a->net && !a->pin_dir[0] ? a->net->skeleton
									     : NULL;

	for (int i = 0; sk && i < sk->prog_cnt; i++)
		if (*sk->progs[i].link)
			bpf_link__detach(*sk->progs[i].link);
}

void agent_close(struct agent *a)
{
	if (!a)
		return;
	ring_buffer__free(a->rb);
	if (a->pin_dir[0]) {
		if (a->net)
			agent_disconnect_pinned_links(a->net->skeleton);
		if (a->audit)
			agent_disconnect_pinned_links(a->audit->skeleton);
		if (a->lsm)
			agent_disconnect_pinned_links(a->lsm->skeleton);
		if (a->cmd)
			agent_disconnect_pinned_links(a->cmd->skeleton);
	}
	cmd_bpf__destroy(a->cmd);
	lsm_bpf__destroy(a->lsm);
	net_bpf__destroy(a->net);
	agent_detach_file_links(a);
	audit_bpf__destroy(a->audit);
	if (a->own_fds) {
		int fds[] = {a->sessions_fd,	   a->events_fd,	  a->lost_fd,
			     a->net_allow_fd,	   a->unix_allow_fd,	  a->agg_fd,
			     a->lsm_maps.names,	   a->lsm_maps.abs_paths, a->oom_fd,
			     a->lsm_maps.writable, a->cmd_rules_fd};

		for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	if (a->parent_fd >= 0)
		close(a->parent_fd);
	free(a);
}

const struct agent_status *agent_status(const struct agent *a)
{
	return &a->st;
}

int agent_ring_fd(const struct agent *a)
{
	return ring_buffer__epoll_fd(a->rb);
}

int agent_consume(struct agent *a)
{
	return ring_buffer__consume(a->rb);
}

uint64_t agent_lost_total(const struct agent *a)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v, total = 0;
	uint32_t zero = 0;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return 0;
	if (bpf_map_lookup_elem(a->lost_fd, &zero, v) == 0)
		for (int i = 0; i < ncpu; i++)
			total += v[i];
	free(v);
	return total;
}
