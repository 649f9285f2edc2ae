// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's types that one object's CO-RE relocations can match, as a
 * BTF of their own (kbtf.h, struct kbtf_core).
 *
 * libbpf looks for a relocated type's candidates by walking every type of
 * the kernel's BTF (126,700 here), once per relocated type and object:
 * most of 14 ms of an embedded load (docs/benchmarks.md). Given this
 * subset as the object's btf_custom_path, it walks about a thousand. The
 * subset holds every kernel type of a named kind whose essential name (the
 * name before "___") is that of a type in the object's own BTF, so libbpf
 * finds the same candidates and picks the same one. Each is copied with
 * the types it embeds (members, array elements, typedefs' targets), so
 * offsets, sizes, bitfields and enum values are the kernel's. What a
 * pointer points to is left out (void): libbpf takes any pointer for a
 * pointer field and never follows one within a relocation, whose access
 * string stays inside one type. test_audit compares every relocation made
 * against the subset with libbpf's own.
 *
 * Type ids differ in the subset, so an object that asks for a kernel type
 * id (bpf_core_type_id_kernel) must not use it; none of bpf/ does. Types of
 * modules are not in it: an object relocating one (lsm.bpf.c's ovl_fs)
 * keeps libbpf's own search. Attach points and kfuncs are still resolved
 * in the kernel's BTF.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kbtf.h"
#include "kbtf_internal.h"

/* The kernel's named types by essential name (a chained hash), per parsed copy. */
struct kindex {
	const struct btf *k;
	unsigned int read; /* kbtf_reads() when made: another copy, another index */
	__u32 *head, *next, mask;
};

static pthread_mutex_t kindex_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kindex kindex;

static __u32 name_hash(const char *s, size_t len)
{
	__u32 h = 2166136261U; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619U;
	return h;
}

static size_t essential_len(const char *s)
{
	const char *t = strstr(s, "___");

	return t ? (size_t)(t - s) : strlen(s);
}

/* A type's name if libbpf matches its kind by name (else, or anonymous, ""). */
static const char *match_name(const struct btf *b, const struct btf_type *t)
{
	const char *name;

	switch (btf_kind(t)) {
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_INT:
	case BTF_KIND_FLOAT:
	case BTF_KIND_FWD:
		name = btf__name_by_offset(b, t->name_off);
		return name ? name : "";
	default:
		return "";
	}
}

void kbtf_core_forget(void)
{
	pthread_mutex_lock(&kindex_lock);
	free(kindex.head);
	free(kindex.next);
	memset(&kindex, 0, sizeof(kindex));
	pthread_mutex_unlock(&kindex_lock);
}

/* k's index, made at its first use (one walk of k): NULL without memory. */
static const struct kindex *kindex_of(const struct btf *k)
{
	__u32 n = btf__type_cnt(k), mask = 1023;
	const struct kindex *r = NULL;

	pthread_mutex_lock(&kindex_lock);
	if (kindex.k == k && kindex.read == kbtf_reads()) {
		r = &kindex;
		goto out;
	}
	free(kindex.head);
	free(kindex.next);
	memset(&kindex, 0, sizeof(kindex));
	while (mask < n / 2)
		mask = mask * 2 + 1;
	kindex.head = calloc((size_t)mask + 1, sizeof(__u32));
	kindex.next = calloc(n, sizeof(__u32));
	if (!kindex.head || !kindex.next)
		goto out;
	for (__u32 id = 1; id < n; id++) {
		const char *name = match_name(k, btf__type_by_id(k, id));
		__u32 b = name_hash(name, essential_len(name)) & mask;

		if (!*name)
			continue;
		kindex.next[id] = kindex.head[b];
		kindex.head[b] = id;
	}
	kindex.k = k;
	kindex.read = kbtf_reads();
	kindex.mask = mask;
	r = &kindex;
out:
	pthread_mutex_unlock(&kindex_lock);
	return r;
}

/* The kernel's ids kept, each with its id in the subset: open addressing. */
struct idmap {
	__u32 *key, *val;
	size_t cap, n;
};

static size_t idmap_slot(const struct idmap *m, __u32 id)
{
	size_t i = (id * 2654435761U) & (m->cap - 1);

	while (m->key[i] && m->key[i] != id)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int idmap_grow(struct idmap *m)
{
	struct idmap g = {.cap = m->cap ? 2 * m->cap : 4096, .n = m->n};

	g.key = calloc(g.cap, sizeof(__u32));
	g.val = calloc(g.cap, sizeof(__u32));
	if (!g.key || !g.val) {
		free(g.key);
		free(g.val);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->key[i])
			g.key[idmap_slot(&g, m->key[i])] = m->key[i];
	free(m->key);
	free(m->val);
	*m = g;
	return 0;
}

/* 1 if id is new (kept now), 0 if kept already, -ENOMEM. */
static int idmap_add(struct idmap *m, __u32 id)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap && idmap_grow(m) < 0)
		return -ENOMEM;
	i = idmap_slot(m, id);
	if (m->key[i])
		return 0;
	m->key[i] = id;
	m->n++;
	return 1;
}

/* A kept id's id in the subset; void stays void. */
static __u32 idmap_get(const struct idmap *m, __u32 id)
{
	return id ? m->val[idmap_slot(m, id)] : 0;
}

/* A stack of ids to visit. */
struct ids {
	__u32 *v;
	size_t n, cap;
};

static int ids_push(struct ids *s, __u32 id)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		__u32 *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = id;
	return 0;
}

/*
 * Calls fn on each type id t holds by value: members, parameters and the
 * return type, an array's element and index, a typedef's or a modifier's
 * target. Not a pointer's target, which the subset leaves out. The one
 * list of what a kind refers to, for the closure and for the renumbering.
 */
static int each_ref(struct btf_type *t, int (*fn)(__u32 *id, void *arg), void *arg)
{
	__u32 vlen = btf_vlen(t);
	int r = 0;

	switch (btf_kind(t)) {
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		for (__u32 i = 0; i < vlen && r >= 0; i++)
			r = fn(&btf_members(t)[i].type, arg);
		return r;
	case BTF_KIND_FUNC_PROTO:
		for (__u32 i = 0; i < vlen && r >= 0; i++)
			r = fn(&btf_params(t)[i].type, arg);
		return r < 0 ? r : fn(&t->type, arg);
	case BTF_KIND_ARRAY:
		r = fn(&btf_array(t)->type, arg);
		return r < 0 ? r : fn(&btf_array(t)->index_type, arg);
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_CONST:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		return fn(&t->type, arg);
	default: /* PTR (its target left out), INT, ENUM, FWD, FLOAT */
		return 0;
	}
}

struct closure {
	struct idmap *kept;
	struct ids *todo;
};

/* Keeps *id (only read) and queues it to be walked when new. */
static int keep_ref(__u32 *id, void *arg)
{
	struct closure *c = arg;
	int r = *id ? idmap_add(c->kept, *id) : 0;

	return r > 0 ? ids_push(c->todo, *id) : r;
}

/* Keeps id and all it embeds; a stack, not recursion: types nest deep. */
static int keep_closure(const struct btf *k, __u32 id, struct idmap *kept, struct ids *todo)
{
	struct closure c = {kept, todo};
	int r = keep_ref(&id, &c);

	/* keep_ref reads the kernel's types, never writes them. */
	while (r >= 0 && todo->n)
		r = each_ref((struct btf_type *)btf__type_by_id(k, todo->v[--todo->n]), keep_ref,
			     &c);
	return r;
}

/* Every kernel type named as one of local's types, with its closure. */
static int keep_candidates(const struct btf *k, const struct kindex *ix, const struct btf *local,
			   struct idmap *kept)
{
	struct ids todo = {0};
	__u32 n = btf__type_cnt(local);
	int r = 0;

	for (__u32 id = 1; id < n && r >= 0; id++) {
		const char *name = match_name(local, btf__type_by_id(local, id)), *kn;
		size_t len = essential_len(name);

		if (!*name)
			continue;
		for (__u32 c = ix->head[name_hash(name, len) & ix->mask]; c && r >= 0;
		     c = ix->next[c]) {
			kn = match_name(k, btf__type_by_id(k, c));
			if (essential_len(kn) == len && !memcmp(kn, name, len))
				r = keep_closure(k, c, kept, &todo);
		}
	}
	free(todo.v);
	return r;
}

/* A kept type's id in the subset. */
static int renumber_ref(__u32 *id, void *arg)
{
	*id = idmap_get(arg, *id);
	return 0;
}

/* The copy of a kept type, just added as nid, refers to the subset's ids. */
static void renumber(struct btf *out, __u32 nid, struct idmap *kept)
{
	struct btf_type *t = (struct btf_type *)btf__type_by_id(out, nid);

	if (btf_kind(t) == BTF_KIND_PTR)
		t->type = 0;
	else
		each_ref(t, renumber_ref, kept);
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* The kept types, in the kernel's order, appended to out, numbered anew. */
static int copy_kept(const struct btf *k, struct idmap *kept, struct btf *out)
{
	__u32 *order, m = 0, base = btf__type_cnt(out) - 1;
	int nid = 0;

	if (!kept->n)
		return 0;
	order = malloc(kept->n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < kept->cap; i++)
		if (kept->key[i])
			order[m++] = kept->key[i];
	qsort(order, m, sizeof(*order), cmp_u32);
	for (__u32 i = 0; i < m; i++)
		kept->val[idmap_slot(kept, order[i])] = base + i + 1;
	for (__u32 i = 0; i < m && nid >= 0; i++) {
		nid = btf__add_type(out, k, btf__type_by_id(k, order[i]));
		if (nid >= 0)
			renumber(out, nid, kept);
	}
	free(order);
	return nid < 0 ? nid : 0;
}

static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	if (ftruncate(fd, 0) < 0)
		return -errno;
	for (size_t off = 0; off < len;) {
		ssize_t w = pwrite(fd, c + off, len - off, off);

		if (w < 0)
			return -errno;
		off += w;
	}
	return 0;
}

int kbtf_subset(const struct btf *k, const struct btf *local, int fd)
{
	const struct kindex *ix = kindex_of(k);
	struct idmap kept = {0};
	struct btf *out = NULL;
	const void *raw;
	__u32 size;
	int r;

	r = ix ? keep_candidates(k, ix, local, &kept) : -ENOMEM;
	if (!r) {
		out = btf__new_empty();
		r = out ? copy_kept(k, &kept, out) : -ENOMEM;
	}
	if (!r) {
		raw = btf__raw_data(out, &size);
		r = raw ? write_all(fd, raw, size) : -ENOMEM;
	}
	btf__free(out);
	free(kept.key);
	free(kept.val);
	return r;
}

/* The kernel's whole BTF into fd: what libbpf would search without a subset. */
int kbtf_whole(const struct btf *k, int fd)
{
	__u32 size;
	const void *raw = btf__raw_data(k, &size);

	return raw ? write_all(fd, raw, size) : -ENOMEM;
}

/*
 * Whether a FUNC of obj's BTF may be a kfunc it calls: libbpf rewrites
 * their linkage from extern to global at open, so they are told by having
 * no program; subprograms pass too, and are looked for in the kernel's
 * BTF for nothing (harmless: libbpf asks only for its externs).
 */
static bool maybe_kfunc(struct bpf_object *obj, const struct btf *local, const struct btf_type *t)
{
	return btf_is_func(t) &&
	       !bpf_object__find_program_by_name(obj, btf__name_by_offset(local, t->name_off));
}

/*
 * Whether obj needs the kernel's BTF for nothing but the kernel functions
 * it calls (kfuncs): how many FUNCs may be those, or -1 when a program
 * attaches by BTF (LSM, fentry/fexit) or it declares an extern variable.
 * libbpf then reads the kernel's BTF only to find each kfunc's id and
 * check its prototype.
 */
int kbtf_kfuncs_only(struct bpf_object *obj, const struct btf *local)
{
	__u32 n = btf__type_cnt(local);
	struct bpf_program *p;
	int funcs = 0;

	bpf_object__for_each_program(p, obj)
	{
		if (!bpf_program__autoload(p))
			continue;
		switch (bpf_program__type(p)) {
		case BPF_PROG_TYPE_LSM:
		case BPF_PROG_TYPE_TRACING:
		case BPF_PROG_TYPE_EXT:
		case BPF_PROG_TYPE_STRUCT_OPS:
			return -1;
		default:
			break;
		}
	}
	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(local, id);

		if (maybe_kfunc(obj, local, t))
			funcs++;
		else if (btf_is_var(t) && btf_var(t)->linkage == BTF_VAR_GLOBAL_EXTERN)
			return -1;
	}
	return funcs;
}

/*
 * The stand-in for the kernel's BTF of an object that needs it for its
 * kfuncs only (kbtf_standin): each kfunc it calls at the id the kernel
 * gives it, every id before the last one an anonymous void pointer, then
 * the kfuncs' prototypes with what they hold by value. libbpf finds each
 * id by name and checks the prototype as it would in the kernel's BTF;
 * 12 bytes a type up to the last kfunc (63,566 here: 0.8 MB) instead of
 * the 5.5 MB of the whole.
 */
int kbtf_standin_make(const struct btf *k, struct bpf_object *obj, const struct btf *local, int fd)
{
	__u32 n = btf__type_cnt(local), *kid = NULL, nk = 0, last = 0, j = 0;
	struct idmap kept = {0};
	struct ids todo = {0};
	struct btf *out = NULL;
	const void *raw;
	__u32 size;
	int r = 0;

	kid = calloc(n, sizeof(*kid));
	if (!kid)
		return -ENOMEM;
	for (__u32 id = 1; id < n && r >= 0; id++) {
		const struct btf_type *t = btf__type_by_id(local, id);
		int x;

		if (!maybe_kfunc(obj, local, t))
			continue;
		x = btf__find_by_name_kind(k, btf__name_by_offset(local, t->name_off),
					   BTF_KIND_FUNC);
		if (x <= 0)
			continue; /* not in the kernel: libbpf finds it in neither */
		kid[nk++] = x;	  /* a FUNC: never in a prototype's closure */
		r = keep_closure(k, btf__type_by_id(k, x)->type, &kept, &todo);
	}
	qsort(kid, nk, sizeof(*kid), cmp_u32);
	if (nk) { /* each id once */
		__u32 u = 1;

		for (__u32 i = 1; i < nk; i++)
			if (kid[i] != kid[u - 1])
				kid[u++] = kid[i];
		nk = u;
	}
	last = nk ? kid[nk - 1] : 0;
	out = r >= 0 ? btf__new_empty() : NULL;
	if (r >= 0 && !out)
		r = -ENOMEM;
	for (__u32 id = 1; out && id <= last && r >= 0; id++) {
		const struct btf_type *t = btf__type_by_id(k, id);

		if (id == kid[j]) {
			j++;
			r = btf__add_func(out, btf__name_by_offset(k, t->name_off), btf_vlen(t), 0);
		} else {
			r = btf__add_ptr(out, 0);
		}
	}
	if (r >= 0 && out)
		r = copy_kept(k, &kept, out);
	for (__u32 i = 0; r >= 0 && i < nk; i++) {
		struct btf_type *f = (struct btf_type *)btf__type_by_id(out, kid[i]);

		f->type = idmap_get(&kept, btf__type_by_id(k, kid[i])->type);
	}
	if (r >= 0) {
		raw = btf__raw_data(out, &size);
		r = raw ? write_all(fd, raw, size) : -ENOMEM;
	}
	btf__free(out);
	free(kept.key);
	free(kept.val);
	free(todo.v);
	free(kid);
	return r < 0 ? r : 0;
}
