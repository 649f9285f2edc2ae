// SPDX-License-Identifier: GPL-2.0
/*
 * A session's entries in the agent's maps: registration keyed by cgroup
 * id, the connect and unix allow-lists, the BPF LSM policy, the command
 * rules, and the sweep of entries whose session is gone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent_internal.h"
#include "bpfbox/events.h"
#include "../lib/util.h"
#include "../policy/policy.h"
#include "net.skel.h"

int agent_session_add(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags)
{
	return agent_session_add_egress(a, cgroup_id, id, flags, 0, 0);
}

int agent_session_add_egress(struct agent *a, uint64_t cgroup_id, uint32_t id, uint32_t flags,
			     uint16_t proxy_port, uint16_t dns_port)
{
	struct bpfbox_session s = {
		.id = id, .flags = flags, .seq = 1, .proxy_port = proxy_port, .dns_port = dns_port};

	if (proxy_port && dns_port)
		s.flags |= BPFBOX_SF_NET_PROXY;

	if (bpf_map_update_elem(a->sessions_fd, &cgroup_id, &s, BPF_NOEXIST) < 0)
		return -errno;
	return 0;
}

int agent_session_remove(struct agent *a, uint64_t cgroup_id, uint64_t *seq, uint64_t *lost)
{
	struct bpfbox_session s;

	if (bpf_map_lookup_elem(a->sessions_fd, &cgroup_id, &s) < 0)
		return -errno;
	if (seq)
		*seq = s.seq;
	if (lost)
		*lost = s.lost;
	if (bpf_map_delete_elem(a->sessions_fd, &cgroup_id) < 0)
		return -errno;
	if (a->unix_allow_fd >= 0)
		bpf_map_delete_elem(a->unix_allow_fd, &s.id);
	return 0;
}

uint64_t agent_session_exec_not_found(struct agent *a, uint64_t cgroup_id)
{
	struct bpfbox_session s;

	return bpf_map_lookup_elem(a->sessions_fd, &cgroup_id, &s) < 0 ? 0 : s.exec_not_found;
}

int agent_session_stats(struct agent *a, uint64_t cgroup_id, uint64_t *seq, uint64_t *lost)
{
	struct bpfbox_session s;

	if (bpf_map_lookup_elem(a->sessions_fd, &cgroup_id, &s) < 0)
		return -errno;
	*seq = s.seq;
	*lost = s.lost;
	return 0;
}

static int sessions_foreach_fd(int fd, agent_session_fn fn, void *ctx)
{
	uint64_t *keys, key, next;
	size_t n = 0;
	int r = 0;

	keys = calloc(BPFBOX_MAX_SESSIONS, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (uint64_t *k = NULL; n < BPFBOX_MAX_SESSIONS && bpf_map_get_next_key(fd, k, &next) == 0;
	     k = &key) {
		key = next;
		keys[n++] = key;
	}
	for (size_t i = 0; i < n && !r; i++) {
		struct bpfbox_session s;

		if (bpf_map_lookup_elem(fd, &keys[i], &s) == 0)
			r = fn(ctx, keys[i], s.id, s.flags);
	}
	free(keys);
	return r;
}

int agent_session_foreach(struct agent *a, agent_session_fn fn, void *ctx)
{
	return sessions_foreach_fd(a->sessions_fd, fn, ctx);
}

int agent_pinned_sessions(const char *pin_dir, agent_session_fn fn, void *ctx)
{
	char path[PATH_MAX + 64];
	int fd, r;

	agent_pin_path(pin_dir, path, sizeof(path), "map", "sessions");
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = sessions_foreach_fd(fd, fn, ctx);
	close(fd);
	return r;
}

static int count_one(void *ctx, uint64_t cgroup_id, uint32_t id, uint32_t flags)
{
	(void)cgroup_id;
	(void)id;
	(void)flags;
	(*(unsigned int *)ctx)++;
	return 0;
}

int agent_pinned_session_count(const char *pin_dir, unsigned int *n)
{
	*n = 0;
	return agent_pinned_sessions(pin_dir, count_one, n);
}

int agent_net_allow(struct agent *a, uint32_t id, const char *cidr, uint16_t lo, uint16_t hi)
{
	struct lsm_maps m = {.names = -1, .abs_paths = -1, .net_allow = a->net_allow_fd};

	if (a->net_allow_fd < 0)
		return -ENOTSUP;
	/* One map for the cgroup and the LSM programs; metadata stays a hole. */
	return lsm_net_add_rule(m, id, cidr, lo, hi);
}

int agent_net_hole(struct agent *a, uint32_t id, const char *cidr)
{
	/* An empty port range never allows, and the longest prefix wins. */
	struct bpfbox_net_rule hole = {.port_lo = 1, .port_hi = 0};
	struct bpfbox_net_key key;

	if (a->net_allow_fd < 0)
		return -ENOTSUP;
	if (lsm_parse_cidr(cidr, &key) < 0)
		return -EINVAL;
	key.session = id;
	if (bpf_map_update_elem(a->net_allow_fd, &key, &hole, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_net_clear(struct agent *a, uint32_t id)
{
	struct bpfbox_net_key key, next;
	bool first = true;

	if (a->net_allow_fd < 0)
		return 0;
	/* Deleting while walking restarts the walk; a session has few rules. */
	while (bpf_map_get_next_key(a->net_allow_fd, first ? NULL : &key, &next) == 0) {
		key = next;
		first = false;
		if (key.session != id)
			continue;
		if (bpf_map_delete_elem(a->net_allow_fd, &key) < 0)
			return -errno;
		first = true;
	}
	return 0;
}

int agent_unix_allow(struct agent *a, uint32_t id, const char *const *dirs, size_t n)
{
	struct bpfbox_unix_allow allow = {0};

	if (a->unix_allow_fd < 0)
		return -ENOTSUP;
	for (size_t i = 0; i < n && allow.n < BPFBOX_UNIX_PREFIXES; i++) {
		size_t len = strlen(dirs[i]);

		/* A longer directory cannot hold a socket path anyway. */
		if (len == 0 || len >= BPFBOX_UNIX_PATH_LEN - 2)
			continue;
		allow.len[allow.n] = len;
		memcpy(allow.prefix[allow.n], dirs[i], len);
		allow.n++;
	}
	if (bpf_map_update_elem(a->unix_allow_fd, &id, &allow, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int agent_egress_fds(const struct agent *a, struct agent_egress_fds *f)
{
	if (!a->net)
		return -ENOTSUP;
	f->orig = bpf_map__fd(a->net->maps.net_orig);
	f->resolved = bpf_map__fd(a->net->maps.net_resolved);
	f->dns_client = bpf_map__fd(a->net->maps.net_dns_client);
	f->emit = bpf_program__fd(a->net->progs.net_emit);
	return f->orig >= 0 && f->resolved >= 0 && f->dns_client >= 0 && f->emit >= 0 ? 0
										      : -ENOTSUP;
}

int agent_session_cmd_rules(struct agent *a, uint32_t id, const struct bpfbox_cmd_table *t)
{
	if (a->cmd_rules_fd < 0)
		return -ENOTSUP;
	if (!t)
		return bpf_map_delete_elem(a->cmd_rules_fd, &id) < 0 && errno != ENOENT ? -errno
											: 0;
	return bpf_map_update_elem(a->cmd_rules_fd, &id, t, BPF_ANY) < 0 ? -errno : 0;
}

int agent_session_cmd_rules_get(struct agent *a, uint32_t id, struct bpfbox_cmd_table *t)
{
	if (a->cmd_rules_fd < 0)
		return -ENOTSUP;
	return bpf_map_lookup_elem(a->cmd_rules_fd, &id, t) < 0 ? -errno : 0;
}

int agent_session_policy(struct agent *a, uint32_t id, const struct bpfbox_policy *p)
{
	if (!a->st.lsm)
		return 0;
	return lsm_policy_add(a->lsm_maps, id, p, (const char *const *)p->exec_deny.v);
}

int agent_session_lsm(struct agent *a, uint32_t id, const char *const *deny, size_t ndeny,
		      const char *const *exec_deny, size_t nexec, const char **bad)
{
	if (bad)
		*bad = NULL;
	if (!a->st.lsm || (!ndeny && !nexec))
		return 0;
	return lsm_policy_add_lists(a->lsm_maps, id, deny, ndeny, exec_deny, nexec, bad);
}

int agent_session_writable(struct agent *a, uint32_t id, const char *const *dirs, size_t n,
			   struct bpfbox_inode_key *added, size_t *nadded)
{
	if (nadded)
		*nadded = 0;
	/* Adopted programs of an older daemon have no writable map, nor check it. */
	if (!a->st.lsm || a->lsm_maps.writable < 0)
		return 0;
	return lsm_writable_add(a->lsm_maps, id, dirs, n, added, nadded);
}

int agent_session_lsm_remove(struct agent *a, uint32_t id, const char *const *deny, size_t ndeny,
			     const char *const *exec_deny, size_t nexec,
			     const struct bpfbox_inode_key *wkeys, size_t nw)
{
	int r, r2;

	if (!a->st.lsm)
		return 0;
	r = lsm_policy_remove_lists(a->lsm_maps, id, deny, ndeny, exec_deny, nexec);
	r2 = lsm_writable_remove(a->lsm_maps, id, wkeys, nw);
	return r ? r : r2;
}

int agent_session_lsm_clear(struct agent *a, uint32_t id)
{
	if (!a->st.lsm)
		return 0;
	return lsm_policy_remove(a->lsm_maps, id);
}

uint32_t agent_gap_flags(const struct agent *a, int landlock_abi)
{
	if (!a->st.lsm)
		return 0;
	return BPFBOX_SF_GAP_META | (landlock_abi < 6 ? BPFBOX_SF_GAP_SCOPE : 0) |
	       (landlock_abi < 9 ? BPFBOX_SF_GAP_UNIX : 0);
}

void agent_gaps_filled(char *ne, uint32_t flags)
{
	const char *what = AGENT_GAP_SCOPE_TEXT;
	size_t wlen = strlen(what);
	char *p;

	if (!(flags & BPFBOX_SF_GAP_SCOPE) || !(p = strstr(ne, what)))
		return;
	if (p[wlen] == ';')
		memmove(p, p + wlen + 2, strlen(p + wlen + 2) + 1); /* and its "; " */
	else if (p > ne)
		p[-2] = '\0'; /* the last item: drop the "; " before it */
	else
		p[0] = '\0';
}

int agent_policy_sweep(struct agent *a, bool (*keep)(void *ctx, uint32_t id), void *ctx)
{
	uint32_t key, next;
	bool first = true;
	int n = 0, r;

	if (a->st.lsm) {
		r = lsm_policy_sweep(a->lsm_maps, keep, ctx);
		if (r < 0)
			return r;
		n += r;
	}
	if (a->net_allow_fd >= 0) {
		struct bpfbox_net_key k, nk;

		first = true;
		while (bpf_map_get_next_key(a->net_allow_fd, first ? NULL : &k, &nk) == 0) {
			k = nk;
			first = false;
			if (keep(ctx, k.session))
				continue;
			if (bpf_map_delete_elem(a->net_allow_fd, &k) < 0 && errno != ENOENT)
				return -errno;
			n++;
			first = true;
		}
	}
	if (a->unix_allow_fd >= 0) {
		first = true;
		while (bpf_map_get_next_key(a->unix_allow_fd, first ? NULL : &key, &next) == 0) {
			key = next;
			first = false;
			if (keep(ctx, key))
				continue;
			if (bpf_map_delete_elem(a->unix_allow_fd, &key) < 0 && errno != ENOENT)
				return -errno;
			n++;
			first = true;
		}
	}
	return n;
}

int agent_oom_victim(struct agent *a, uint32_t id, uint64_t max_age_ns, pid_t *pid, char *comm,
		     size_t size)
{
	struct bpfbox_oom_victim v;
	struct timespec ts;
	uint64_t now;

	if (!a || a->oom_fd < 0 || bpf_map_lookup_elem(a->oom_fd, &id, &v) < 0)
		return -ENOENT;
	bpf_map_delete_elem(a->oom_fd, &id);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	if (!v.pid || v.ts_ns > now || now - v.ts_ns > max_age_ns)
		return -ENOENT;
	*pid = v.pid;
	snprintf(comm, size, "%.*s", (int)sizeof(v.comm), v.comm);
	return 0;
}
