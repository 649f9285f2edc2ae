// SPDX-License-Identifier: GPL-2.0
/*
 * A session's entries written into the maps of bpf/lsm.bpf.c, all or
 * nothing, and removed or swept again. The entries come from
 * lsm_compile.c (deny patterns, exec names, CIDRs).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "lsm_policy.h"
#include "lsm.skel.h"
#include "../policy/policy.h"

/* ---- applying ---- */

/* What applying one entry changed, to undo it. */
struct undo {
	const struct lsm_entry *e;
	bool had_old;
	struct lsm_abs_node old;
};

struct lsm_maps lsm_maps_of(struct lsm_bpf *skel)
{
	struct lsm_maps m = {
		.names = bpf_map__fd(skel->maps.names),
		.abs_paths = bpf_map__fd(skel->maps.abs_paths),
		.net_allow = bpf_map__fd(skel->maps.net_allow),
		.writable = bpf_map__fd(skel->maps.writable),
		.own_sbs = bpf_map__fd(skel->maps.own_sbs),
	};

	return m;
}

static int entry_fd(struct lsm_maps m, const struct lsm_entry *e)
{
	return e->map == LSM_MAP_NAMES ? m.names : m.abs_paths;
}

static const void *entry_key(const struct lsm_entry *e)
{
	return e->map == LSM_MAP_NAMES ? (const void *)&e->name : (const void *)&e->abs;
}

/*
 * Writes one entry. A name already there stays; a trie node already there
 * only gains deny bits, never loses them. *u says what to undo (u->e NULL: none).
 */
static int entry_apply(struct lsm_maps skel, const struct lsm_entry *e, struct undo *u)
{
	int fd = entry_fd(skel, e);
	const void *key = entry_key(e);
	struct lsm_abs_node old;
	__u8 one = 1;

	u->e = NULL;
	if (e->map == LSM_MAP_NAMES) {
		if (bpf_map_update_elem(fd, key, &one, BPF_NOEXIST) == 0) {
			u->e = e;
			u->had_old = false;
			return 0;
		}
		return errno == EEXIST ? 0 : -errno;
	}
	if (bpf_map_lookup_elem(fd, key, &old) == 0) {
		struct lsm_abs_node merged = old;

		merged.deny |= e->node.deny;
		if (merged.deny == old.deny)
			return 0;
		if (bpf_map_update_elem(fd, key, &merged, BPF_EXIST) < 0)
			return -errno;
		u->e = e;
		u->had_old = true;
		u->old = old;
		return 0;
	}
	if (errno != ENOENT)
		return -errno;
	if (bpf_map_update_elem(fd, key, &e->node, BPF_NOEXIST) < 0)
		return -errno;
	u->e = e;
	u->had_old = false;
	return 0;
}

static void entry_undo(struct lsm_maps skel, const struct undo *u)
{
	int fd = entry_fd(skel, u->e);

	if (u->had_old)
		bpf_map_update_elem(fd, entry_key(u->e), &u->old, BPF_EXIST);
	else
		bpf_map_delete_elem(fd, entry_key(u->e));
}

/* The maps must be the ones this file was built for. */
/* The maps must have this file's layout: a stale pin of another build may not. */
static int map_sizes(int fd, __u32 *key, __u32 *value)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	*key = info.key_size;
	*value = info.value_size;
	return 0;
}

static int check_layout(struct lsm_maps m)
{
	__u32 nk = 0, nv = 0, ak = 0, av = 0, lk = 0, lv = 0;

	if (map_sizes(m.names, &nk, &nv) || map_sizes(m.abs_paths, &ak, &av) ||
	    map_sizes(m.net_allow, &lk, &lv))
		return -EBADF;
	if (nk != sizeof(struct bpfbox_name_key) || ak != sizeof(struct lsm_abs_key) ||
	    av != sizeof(struct lsm_abs_node) || lk != sizeof(struct bpfbox_net_key))
		return -EPROTO;
	return 0;
}

int lsm_policy_add(struct lsm_maps skel, __u32 session, const struct bpfbox_policy *p,
		   const char *const *exec_deny)
{
	size_t nexec = 0;

	while (exec_deny && exec_deny[nexec])
		nexec++;
	return lsm_policy_add_lists(skel, session, p ? (const char *const *)p->deny_paths.v : NULL,
				    p ? p->deny_paths.n : 0, exec_deny, nexec, NULL);
}

int lsm_policy_add_lists(struct lsm_maps skel, __u32 session, const char *const *deny, size_t ndeny,
			 const char *const *exec_deny, size_t nexec, const char **bad)
{
	struct lsm_entries es = {};
	struct undo *undo = NULL;
	size_t done = 0;
	int r;

	if (bad)
		*bad = NULL;
	r = check_layout(skel);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ndeny && r == 0; i++) {
		r = lsm_compile_deny(deny[i], session, &es);
		if (r < 0 && bad)
			*bad = deny[i];
	}
	for (size_t i = 0; i < nexec && r == 0; i++) {
		r = lsm_compile_exec(exec_deny[i], session, &es);
		if (r < 0 && bad)
			*bad = exec_deny[i];
	}
	if (r == 0 && lsm_name_patterns(deny, ndeny))
		r = lsm_compile_scope(session, &es);
	if (r == 0 && es.n) {
		undo = calloc(es.n, sizeof(*undo));
		if (!undo)
			r = -ENOMEM;
	}
	for (; r == 0 && done < es.n; done++)
		r = entry_apply(skel, &es.v[done], &undo[done]);
	if (r < 0)
		while (done-- > 0)
			if (undo[done].e)
				entry_undo(skel, &undo[done]);
	free(undo);
	lsm_entries_free(&es);
	return r;
}

/* Collects the keys of a map whose session (at session_off) matches. */
static int session_keys(int fd, size_t key_size, size_t session_off, __u32 session, void **keys,
			size_t *n)
{
	size_t cap = 0;
	char *cur = NULL, *next = malloc(key_size);
	int r = 0;

	*keys = NULL;
	*n = 0;
	if (!next)
		return -ENOMEM;
	while (bpf_map_get_next_key(fd, cur, next) == 0) {
		__u32 s;

		memcpy(&s, next + session_off, sizeof(s));
		if (s == session) {
			if (*n == cap) {
				void *v;

				cap = cap ? cap * 2 : 64;
				v = realloc(*keys, cap * key_size);
				if (!v) {
					r = -ENOMEM;
					break;
				}
				*keys = v;
			}
			memcpy((char *)*keys + *n * key_size, next, key_size);
			(*n)++;
		}
		if (!cur) {
			cur = malloc(key_size);
			if (!cur) {
				r = -ENOMEM;
				break;
			}
		}
		memcpy(cur, next, key_size);
	}
	if (r == 0 && errno != ENOENT)
		r = -errno;
	free(cur);
	free(next);
	if (r < 0) {
		free(*keys);
		*keys = NULL;
		*n = 0;
	}
	return r;
}

static int remove_session_keys(int fd, size_t key_size, size_t session_off, __u32 session)
{
	int r, first = 0;
	void *keys;
	size_t n;

	r = session_keys(fd, key_size, session_off, session, &keys, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, (char *)keys + i * key_size) < 0 && errno != ENOENT &&
		    !first)
			first = -errno;
	free(keys);
	return first;
}

/* Deletes the entries of fd whose session (at session_off) keep() refuses. */
static int sweep_keys(int fd, size_t key_size, size_t session_off,
		      bool (*keep)(void *ctx, __u32 session), void *ctx)
{
	char *cur = malloc(key_size), *next = malloc(key_size);
	bool first = true;
	int n = 0;

	if (!cur || !next) {
		free(cur);
		free(next);
		return -ENOMEM;
	}
	/* Deleting while walking restarts the walk (as agent_net_clear). */
	while (bpf_map_get_next_key(fd, first ? NULL : cur, next) == 0) {
		__u32 s;

		memcpy(cur, next, key_size);
		first = false;
		memcpy(&s, next + session_off, sizeof(s));
		if (keep(ctx, s))
			continue;
		if (bpf_map_delete_elem(fd, next) < 0 && errno != ENOENT)
			break;
		n++;
		first = true;
	}
	free(cur);
	free(next);
	return n;
}

int lsm_policy_sweep(struct lsm_maps m, bool (*keep)(void *ctx, __u32 session), void *ctx)
{
	int r = check_layout(m), n = 0;

	if (r < 0)
		return r;
	r = sweep_keys(m.names, sizeof(struct bpfbox_name_key),
		       offsetof(struct bpfbox_name_key, session), keep, ctx);
	n += r > 0 ? r : 0;
	r = sweep_keys(m.abs_paths, sizeof(struct lsm_abs_key),
		       offsetof(struct lsm_abs_key, session), keep, ctx);
	n += r > 0 ? r : 0;
	if (m.own_sbs >= 0) {
		r = sweep_keys(m.own_sbs, sizeof(__u32), 0, keep, ctx);
		n += r > 0 ? r : 0;
	}
	if (m.writable >= 0) {
		r = sweep_keys(m.writable, sizeof(struct bpfbox_inode_key),
			       offsetof(struct bpfbox_inode_key, session), keep, ctx);
		n += r > 0 ? r : 0;
	}
	return n;
}

int lsm_writable_add(struct lsm_maps m, __u32 session, const char *const *dirs, size_t n,
		     struct bpfbox_inode_key *added, size_t *nadded)
{
	__u8 one = 1;

	if (nadded)
		*nadded = 0;
	if (m.writable < 0)
		return -ENOTSUP;
	/* What an earlier session of this index left (a crash): its file systems are not ours. */
	if (m.own_sbs >= 0 && bpf_map_delete_elem(m.own_sbs, &session) < 0 && errno != ENOENT)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		struct bpfbox_inode_key k = {.session = session};
		struct stat st;

		if (stat(dirs[i], &st) < 0)
			continue;
		/* The kernel's dev_t, as super_block.s_dev holds it. */
		k.dev = ((__u64)major(st.st_dev) << 20) | minor(st.st_dev);
		k.ino = st.st_ino;
		if (bpf_map_update_elem(m.writable, &k, &one, BPF_ANY) < 0)
			return -errno;
		if (added && nadded)
			added[(*nadded)++] = k;
	}
	return 0;
}

int lsm_writable_remove(struct lsm_maps m, __u32 session, const struct bpfbox_inode_key *keys,
			size_t n)
{
	int first = 0;

	for (size_t i = 0; m.writable >= 0 && i < n; i++)
		if (bpf_map_delete_elem(m.writable, &keys[i]) < 0 && errno != ENOENT && !first)
			first = -errno;
	if (m.own_sbs >= 0 && bpf_map_delete_elem(m.own_sbs, &session) < 0 && errno != ENOENT &&
	    !first)
		first = -errno;
	return first;
}

int lsm_policy_remove_lists(struct lsm_maps m, __u32 session, const char *const *deny, size_t ndeny,
			    const char *const *exec_deny, size_t nexec)
{
	struct lsm_entries es = {};
	int first = 0;

	/* What compiled at add compiles again; what did not was never written. */
	for (size_t i = 0; i < ndeny; i++)
		lsm_compile_deny(deny[i], session, &es);
	for (size_t i = 0; i < nexec; i++)
		lsm_compile_exec(exec_deny[i], session, &es);
	if (lsm_name_patterns(deny, ndeny))
		lsm_compile_scope(session, &es);
	for (size_t i = 0; i < es.n; i++)
		if (bpf_map_delete_elem(entry_fd(m, &es.v[i]), entry_key(&es.v[i])) < 0 &&
		    errno != ENOENT && !first)
			first = -errno;
	lsm_entries_free(&es);
	return first;
}

int lsm_policy_remove(struct lsm_maps m, __u32 session)
{
	int r, first;

	first = check_layout(m);
	if (first < 0)
		return first;
	first = remove_session_keys(m.names, sizeof(struct bpfbox_name_key),
				    offsetof(struct bpfbox_name_key, session), session);
	r = remove_session_keys(m.abs_paths, sizeof(struct lsm_abs_key),
				offsetof(struct lsm_abs_key, session), session);
	if (r < 0 && !first)
		first = r;
	r = remove_session_keys(m.net_allow, sizeof(struct bpfbox_net_key),
				offsetof(struct bpfbox_net_key, session), session);
	if (r < 0 && !first)
		first = r;
	if (m.writable >= 0) {
		r = remove_session_keys(m.writable, sizeof(struct bpfbox_inode_key),
					offsetof(struct bpfbox_inode_key, session), session);
		if (r < 0 && !first)
			first = r;
	}
	if (m.own_sbs >= 0 && bpf_map_delete_elem(m.own_sbs, &session) < 0 && errno != ENOENT &&
	    !first)
		first = -errno;
	return first;
}

/* The cloud metadata addresses, as net_allow keys see them. */
static const __u8 metadata_addrs[][16] = {
	{[10] = 0xff, [11] = 0xff, 169, 254, 169, 254},
	{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54},
};

static bool prefix_covers(const struct bpfbox_net_key *k, const __u8 *addr)
{
	unsigned int bits = k->prefixlen - 32;

	for (unsigned int b = 0; b < bits; b++) {
		__u8 m = 0x80 >> (b % 8);

		if ((k->addr[b / 8] & m) != (addr[b / 8] & m))
			return false;
	}
	return true;
}

int lsm_net_allow_add(struct lsm_maps skel, __u32 session, const char *cidr, __u16 lo, __u16 hi)
{
	int r = check_layout(skel);

	return r < 0 ? r : lsm_net_add_rule(skel, session, cidr, lo, hi);
}

int lsm_net_add_rule(struct lsm_maps skel, __u32 session, const char *cidr, __u16 lo, __u16 hi)
{
	struct bpfbox_net_rule rule = {.port_lo = lo, .port_hi = hi};
	/* An empty range: never allows, so the metadata check decides. */
	struct bpfbox_net_rule hole = {.port_lo = 1, .port_hi = 0};
	struct bpfbox_net_rule old;
	struct bpfbox_net_key key, meta;
	bool had_old;
	int fd, r;

	if (lo > hi || lsm_parse_cidr(cidr, &key) < 0)
		return -EINVAL;
	key.session = session;
	fd = skel.net_allow;
	had_old = bpf_map_lookup_elem(fd, &key, &old) == 0;
	if (bpf_map_update_elem(fd, &key, &rule, BPF_ANY) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(metadata_addrs) / sizeof(metadata_addrs[0]); i++) {
		if (key.prefixlen == 32 + 128 || !prefix_covers(&key, metadata_addrs[i]))
			continue;
		meta = (struct bpfbox_net_key){.prefixlen = 32 + 128, .session = session};
		memcpy(meta.addr, metadata_addrs[i], 16);
		if (bpf_map_update_elem(fd, &meta, &hole, BPF_NOEXIST) < 0 && errno != EEXIST) {
			r = -errno;
			if (had_old)
				bpf_map_update_elem(fd, &key, &old, BPF_EXIST);
			else
				bpf_map_delete_elem(fd, &key);
			return r;
		}
	}
	return 0;
}
