// SPDX-License-Identifier: GPL-2.0
/*
 * Deny patterns, exec names and CIDRs compiled into the entries of the
 * maps of bpf/lsm.bpf.c. Pure (lsm_compile_*: tested on any host); the
 * entries are written by lsm_policy.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

int lsm_compile_scope(__u32 session, struct lsm_entries *out)
{
	size_t n = out->n;
	int r = 0;

	for (size_t i = 0; r == 0 && policy_system_trees[i]; i++)
		r = compile_abs(policy_system_trees[i], strlen(policy_system_trees[i]), session,
				LSM_TREE_SYSTEM, out);
	for (size_t i = 0; r == 0 && policy_source_exts[i]; i++)
		r = add_name(out, session, LSM_NAME_SOURCE, policy_source_exts[i],
			     strlen(policy_source_exts[i]), NULL, 0);
	for (size_t i = 0; r == 0 && policy_public_files[i]; i++) {
		const char *f = policy_public_files[i], *slash = strchr(f, '/');

		r = add_name(out, session, LSM_NAME_PAIR_PUBLIC, f, slash - f, slash + 1,
			     strlen(slash + 1));
	}
	if (r < 0)
		out->n = n;
	return r;
}

bool lsm_name_patterns(const char *const *deny, size_t ndeny)
{
	for (size_t i = 0; i < ndeny; i++)
		if (deny[i][0] != '/')
			return true;
	return false;
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
