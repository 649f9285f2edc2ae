// SPDX-License-Identifier: GPL-2.0
/*
 * The "**" "/" deny patterns matched on absolute paths (cred_match.h): the
 * forms validate.c accepts, a plain name, "*SUFFIX", "PREFIX*", one or two
 * components; anything else fnmatch's.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cred_match.h"
#include "../policy/policy.h"
#include "../lib/util.h"

enum comp_kind { COMP_NAME, COMP_SUFFIX, COMP_PREFIX, COMP_GLOB };

/* One "**" "/" pattern: its one or two components, each of a kind. */
struct pat {
	const char *c[2];
	size_t n[2];
	enum comp_kind k[2];
	int m;
};

/* "*.pem" a suffix, ".env.*" a prefix, a plain name; anything else fnmatch's. */
static enum comp_kind kind_of(const char *c, size_t n)
{
	size_t stars = 0;

	for (size_t i = 0; i < n; i++) {
		if (c[i] == '?' || c[i] == '[' || c[i] == '\\')
			return COMP_GLOB;
		stars += c[i] == '*';
	}
	if (!stars)
		return COMP_NAME;
	if (stars == 1 && n > 1 && c[0] == '*')
		return COMP_SUFFIX;
	if (stars == 1 && n > 1 && c[n - 1] == '*')
		return COMP_PREFIX;
	return COMP_GLOB;
}

int cred_pats_compile(const struct bpfbox_policy *p, struct cred_pats *c)
{
	c->n = 0;
	c->v = calloc(p->deny_paths.n + 1, sizeof(*c->v));
	if (!c->v)
		return -ENOMEM;
	for (size_t i = 0; i < p->deny_paths.n; i++) {
		const char *s = p->deny_paths.v[i], *slash;
		struct pat *pt = &c->v[c->n];

		if (!startswith(s, "**/") || !s[3])
			continue; /* absolute: masked as they are (ns_mount.c) */
		s += 3;
		slash = strchr(s, '/');
		pt->c[0] = s;
		pt->n[0] = slash ? (size_t)(slash - s) : strlen(s);
		pt->m = 1;
		if (slash && slash[1]) {
			pt->c[1] = slash + 1;
			pt->n[1] = strlen(slash + 1);
			pt->m = 2;
		}
		for (int j = 0; j < pt->m; j++)
			pt->k[j] = kind_of(pt->c[j], pt->n[j]);
		c->n++;
	}
	return 0;
}

/* One component against one of a pattern (validate.c has the forms). */
static bool comp_match(const char *s, size_t n, const struct pat *pt, int j)
{
	const char *pc = pt->c[j];
	size_t pn = pt->n[j];
	char name[NAME_MAX + 1], pat[NAME_MAX + 1];

	switch (pt->k[j]) {
	case COMP_NAME:
		return n == pn && !memcmp(s, pc, n);
	case COMP_SUFFIX:
		return n >= pn - 1 && !memcmp(s + n - (pn - 1), pc + 1, pn - 1);
	case COMP_PREFIX:
		return n >= pn - 1 && !memcmp(s, pc, pn - 1);
	default:
		break;
	}
	if (n > NAME_MAX || pn > NAME_MAX)
		return false;
	memcpy(name, s, n);
	name[n] = '\0';
	memcpy(pat, pc, pn);
	pat[pn] = '\0';
	return fnmatch(pat, name, 0) == 0;
}

/* The component of path[0, end): its start. */
static size_t comp_start(const char *path, size_t end)
{
	while (end > 0 && path[end - 1] != '/')
		end--;
	return end;
}

/*
 * Whether the last components of path[0, len) match the first k of pt
 * (k == pt->m: the whole pattern).
 */
static bool tail_match(const char *path, size_t len, const struct pat *pt, int k)
{
	for (int i = k - 1; i >= 0; i--) {
		size_t s = comp_start(path, len);

		if (s == len || !comp_match(path + s, len - s, pt, i))
			return false;
		if (s == 0)
			return i == 0;
		len = s - 1;
	}
	return true;
}

bool cred_full_match(const struct cred_pats *c, const char *path, size_t len)
{
	size_t s = comp_start(path, len);

	if (policy_public_file(path, len))
		return false;
	for (size_t i = 0; i < c->n; i++) {
		const struct pat *pt = &c->v[i];

		/* The last component first: most entries end here. */
		if (s < len && comp_match(path + s, len - s, pt, pt->m - 1) &&
		    tail_match(path, len, pt, pt->m))
			return true;
	}
	return false;
}

bool cred_partial_match(const struct cred_pats *c, const char *path, size_t len)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].m == 2 && tail_match(path, len, &c->v[i], 1))
			return true;
	return false;
}

bool cred_ancestor_match(const struct cred_pats *c, const char *path, size_t len)
{
	for (size_t end = 1; end <= len; end++)
		if ((end == len || path[end] == '/') && cred_full_match(c, path, end))
			return true;
	return false;
}

void cred_pats_free(struct cred_pats *c)
{
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

bool cred_path_denied(const struct bpfbox_policy *p, const char *path)
{
	struct cred_pats c;
	bool denied;

	if (cred_pats_compile(p, &c) < 0)
		return true; /* fail closed */
	denied = cred_ancestor_match(&c, path, strlen(path));
	cred_pats_free(&c);
	return denied;
}
