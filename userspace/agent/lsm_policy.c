// SPDX-License-Identifier: GPL-2.0
/*
 * Deny patterns, exec names and CIDRs into the maps of bpf/lsm.bpf.c.
 * Compiling a pattern is pure (lsm_compile_*: tested on any host);
 * applying the entries writes the maps all or nothing.
 */
#include <arpa/inet.h>
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

/* ---- compiling ---- */

void lsm_entries_free(struct lsm_entries *e)
{
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

static struct lsm_entry *entry_add(struct lsm_entries *e, enum lsm_map map)
{
	struct lsm_entry *x;

	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 32;
		struct lsm_entry *v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		e->v = v;
		e->cap = cap;
	}
	x = &e->v[e->n++];
	memset(x, 0, sizeof(*x));
	x->map = map;
	return x;
}

/* A name as the patterns allow it: not empty, no '/' or '*', not . or .. */
static bool plain(const char *s, size_t n)
{
	if (!n || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == '*' || !s[i])
			return false;
	return true;
}

/* A names entry; b (may be NULL) goes into the second half of a pair. */
static int add_name(struct lsm_entries *out, __u32 session, __u32 kind, const char *a, size_t alen,
		    const char *b, size_t blen)
{
	struct lsm_entry *x = entry_add(out, LSM_MAP_NAMES);

	if (!x)
		return -ENOMEM;
	x->name.session = session;
	x->name.kind = kind;
	memcpy(x->name.name, a, alen);
	if (b)
		memcpy(x->name.name + LSM_PAIR_HALF, b, blen);
	return 0;
}

/* FNV-1a, 64 bit, of a path prefix: the id of its trie node. */
static __u64 path_id(const char *s, size_t n)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

/* /a/b/c: one trie node per component, the last one with deny bits. */
static int compile_abs(const char *pat, size_t len, __u32 session, __u32 deny,
		       struct lsm_entries *out)
{
	const char *c = pat + 1;
	__u64 parent = 0;
	int depth = 0;

	/* Check the whole path before adding anything. */
	for (const char *p = c;;) {
		size_t n = strcspn(p, "/");

		if (!plain(p, n))
			return -EINVAL;
		if (n >= BPFBOX_NAME_LEN)
			return -ENAMETOOLONG;
		depth++;
		if (!p[n])
			break;
		p += n + 1;
	}
	if (len >= BPFBOX_PATH_LEN || depth > LSM_MAX_DEPTH)
		return -ENAMETOOLONG;
	for (;;) {
		size_t n = strcspn(c, "/");
		struct lsm_entry *x = entry_add(out, LSM_MAP_ABS);

		if (!x)
			return -ENOMEM;
		x->abs.session = session;
		x->abs.parent = parent;
		memcpy(x->abs.name, c, n);
		x->node.id = path_id(pat, c + n - pat);
		x->node.deny = c[n] ? 0 : deny;
		parent = x->node.id;
		if (!c[n])
			return 0;
		c += n + 1;
	}
}

static int compile(const char *pat, __u32 session, struct lsm_entries *out)
{
	size_t len = strlen(pat), rlen;
	const char *rest, *slash;
	int r;

	if (pat[0] == '/')
		return compile_abs(pat, len, session, LSM_DENY_OPEN, out);
	if (strncmp(pat, "**/", 3))
		return -EINVAL;
	rest = pat + 3;
	rlen = len - 3;
	slash = memchr(rest, '/', rlen);
	if (slash) {
		/* DIR/NAME: the pair, at the file and on the path. */
		size_t dlen = slash - rest, nlen = rlen - dlen - 1;

		if (!plain(rest, dlen) || !plain(slash + 1, nlen))
			return -EINVAL;
		if (dlen >= LSM_PAIR_HALF || nlen >= LSM_PAIR_HALF)
			return -ENAMETOOLONG;
		r = add_name(out, session, LSM_NAME_PAIR_EXACT, rest, dlen, slash + 1, nlen);
		if (!r)
			r = add_name(out, session, LSM_NAME_PAIR_COMPONENT, rest, dlen, slash + 1,
				     nlen);
		if (!r)
			r = add_name(out, session, LSM_NAME_PAIR_DIR, rest, dlen, NULL, 0);
		return r;
	}
	if (rlen >= 2 && rest[0] == '*' && rest[1] == '.') {
		/* *.SUFFIX: what follows a dot of the name. */
		if (!plain(rest + 2, rlen - 2))
			return -EINVAL;
		if (rlen - 2 >= BPFBOX_NAME_LEN)
			return -ENAMETOOLONG;
		return add_name(out, session, BPFBOX_NAME_SUFFIX, rest + 2, rlen - 2, NULL, 0);
	}
	if (rlen >= 2 && rest[rlen - 1] == '*' && rest[rlen - 2] == '.') {
		/* NAME.*: the name up to and including a dot. */
		if (!plain(rest, rlen - 2))
			return -EINVAL;
		if (rlen - 1 >= BPFBOX_NAME_LEN)
			return -ENAMETOOLONG;
		return add_name(out, session, LSM_NAME_PREFIX, rest, rlen - 1, NULL, 0);
	}
	/* NAME: a file of that name, or a directory on the path. */
	if (!plain(rest, rlen))
		return -EINVAL;
	if (rlen >= BPFBOX_NAME_LEN)
		return -ENAMETOOLONG;
	r = add_name(out, session, BPFBOX_NAME_EXACT, rest, rlen, NULL, 0);
	if (!r)
		r = add_name(out, session, BPFBOX_NAME_COMPONENT, rest, rlen, NULL, 0);
	return r;
}

int lsm_compile_deny(const char *pattern, __u32 session, struct lsm_entries *out)
{
	size_t n = out->n;
	int r = compile(pattern, session, out);

	if (r < 0)
		out->n = n;
	return r;
}

int lsm_compile_exec(const char *name, __u32 session, struct lsm_entries *out)
{
	size_t len = strlen(name), n = out->n;
	int r;

	if (name[0] == '/') {
		r = compile_abs(name, len, session, LSM_DENY_EXEC, out);
		if (r < 0)
			out->n = n;
		return r;
	}
	if (!plain(name, len))
		return -EINVAL;
	if (len >= BPFBOX_NAME_LEN)
		return -ENAMETOOLONG;
	return add_name(out, session, BPFBOX_NAME_EXEC, name, len, NULL, 0);
}

int lsm_parse_cidr(const char *cidr, struct bpfbox_net_key *key)
{
	const char *slash = strchr(cidr, '/');
	unsigned int plen, max;
	char addr[INET6_ADDRSTRLEN];
	size_t alen = slash ? (size_t)(slash - cidr) : strlen(cidr);

	memset(key, 0, sizeof(*key));
	if (!alen || alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, cidr, alen);
	addr[alen] = 0;
	if (inet_pton(AF_INET, addr, key->addr + 12) == 1) {
		key->addr[10] = key->addr[11] = 0xff;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, key->addr) == 1) {
		max = 128;
	} else {
		return -EINVAL;
	}
	plen = max;
	if (slash) {
		const char *p = slash + 1;

		if (!*p || strlen(p) > 3)
			return -EINVAL;
		plen = 0;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			plen = plen * 10 + (*p - '0');
		}
		if (plen > max)
			return -EINVAL;
	}
	plen += 128 - max;
	for (unsigned int bit = plen; bit < 128; bit++)
		key->addr[bit / 8] &= ~(0x80 >> (bit % 8));
	key->prefixlen = 32 + plen;
	return 0;
}

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

int lsm_writable_remove(struct lsm_maps m, const struct bpfbox_inode_key *keys, size_t n)
{
	int first = 0;

	for (size_t i = 0; m.writable >= 0 && i < n; i++)
		if (bpf_map_delete_elem(m.writable, &keys[i]) < 0 && errno != ENOENT && !first)
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
