// SPDX-License-Identifier: GPL-2.0
/*
 * Folded opens (bpf/audit.bpf.c aggregates identical allowed opens in a
 * window): when a session ends its entries become file events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent_internal.h"
#include "bpfbox/events.h"
#include "../lib/util.h"

struct agg_entry {
	struct bpfbox_agg_key key;
	struct bpfbox_agg_val val;
};

/* Appends one entry of session id to the list; -ENOMEM. */
static int agg_take(struct agg_entry **list, size_t *n, size_t *cap, const struct bpfbox_agg_key *k,
		    const struct bpfbox_agg_val *v)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct agg_entry *l = realloc(*list, c * sizeof(*l));

		if (!l)
			return -ENOMEM;
		*list = l;
		*cap = c;
	}
	(*list)[*n].key = *k;
	(*list)[*n].val = *v;
	(*n)++;
	return 0;
}

/*
 * The entries of session id in the aggregation map, read in batches of 256
 * (Linux 5.6+; a few syscalls for the whole map), else key by key. One pass
 * either way: the map holds every session's entries, and a daemon ending
 * 1,000 sessions reads it 1,000 times.
 */
static int agg_collect(int fd, uint32_t id, struct agg_entry **list, size_t *n)
{
	enum { BATCH = 256 };
	struct bpfbox_agg_key *keys = malloc(BATCH * sizeof(*keys)), key, next;
	struct bpfbox_agg_val *vals = malloc(BATCH * sizeof(*vals)), val;
	uint64_t cursor = 0;
	size_t cap = 0;
	bool first = true, batched = true;
	int r = 0;

	if (!keys || !vals) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 count = BATCH;

		r = bpf_map_lookup_batch(fd, first ? NULL : &cursor, &cursor, keys, vals, &count,
					 NULL);
		if (r < 0 && errno != ENOENT) {
			batched = !first; /* no batch ops here: walk instead */
			r = first ? 0 : -errno;
			break;
		}
		first = false;
		for (__u32 i = 0; i < count; i++)
			if (keys[i].session == id &&
			    agg_take(list, n, &cap, &keys[i], &vals[i]) < 0) {
				r = -ENOMEM;
				goto out;
			}
		if (r < 0) { /* ENOENT: that was the last batch */
			r = 0;
			break;
		}
	}
	if (batched)
		goto out;
	first = true;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (key.session == id && bpf_map_lookup_elem(fd, &key, &val) == 0 &&
		    agg_take(list, n, &cap, &key, &val) < 0) {
			r = -ENOMEM;
			break;
		}
	}
out:
	free(keys);
	free(vals);
	return r;
}

int agent_flush_session(struct agent *a, uint32_t id, uint64_t *seq, agent_record_fn fn, void *ctx)
{
	struct agg_entry *list = NULL;
	size_t count = 0;
	int fd, n = 0, r;

	fd = a->agg_fd;
	if (fd < 0)
		return 0;
	r = agg_collect(fd, id, &list, &count);
	for (size_t i = 0; i < count; i++) {
		const struct agg_entry *en = &list[i];

		if (en->val.count) {
			struct bpfbox_file_event e = {0};

			e.hdr.type = BPFBOX_EV_FILE;
			e.hdr.session = id;
			e.hdr.seq = (*seq)++;
			e.hdr.ts_ns = now_ns();
			e.hdr.pid = en->key.pid;
			e.hdr.tid = en->val.tid;
			e.hdr.ppid = en->val.ppid;
			e.hdr.uid = en->val.uid;
			memcpy(e.hdr.comm, en->val.comm, sizeof(e.hdr.comm));
			e.flags = en->key.flags;
			e.count = en->val.count;
			memcpy(e.path, en->key.path, sizeof(e.path));
			fn(ctx, &e, sizeof(e));
			n++;
		}
		bpf_map_delete_elem(fd, &en->key);
	}
	free(list);
	return r < 0 ? r : n;
}
