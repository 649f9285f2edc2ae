// SPDX-License-Identifier: GPL-2.0
/*
 * The disk monitor's entries: an open-addressed table keyed by the hash of
 * (watch, name), each holding what the entry allocates on disk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "disk_internal.h"

uint64_t disk_ent_hash(int wd, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < 4; i++) {
		h ^= (uint8_t)(wd >> (8 * i));
		h *= 0x100000001b3ULL;
	}
	for (const char *p = name; *p; p++) {
		h ^= (uint8_t)*p;
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

struct disk_ent *disk_ent_find(struct disk_monitor *m, uint64_t h)
{
	if (!m->cap)
		return NULL;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->ents[i].h == h)
			return &m->ents[i];
		if (!m->ents[i].h)
			return NULL;
	}
}

static int ent_grow(struct disk_monitor *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct disk_ent *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->ents[i].h)
			continue;
		for (j = m->ents[i].h & (cap - 1); n[j].h; j = (j + 1) & (cap - 1))
			;
		n[j] = m->ents[i];
	}
	free(m->ents);
	m->ents = n;
	m->cap = cap;
	return 0;
}

/* Sets an entry's size; a new one adds base to the baseline (initial: its count too). */
struct disk_ent *disk_ent_set_ex(struct disk_monitor *m, int wd, uint64_t h, uint64_t blocks,
				 uint64_t base, bool initial)
{
	struct disk_ent *e = disk_ent_find(m, h);
	size_t i;

	if (e) {
		m->usage += (int64_t)blocks - (int64_t)e->blocks;
		e->blocks = blocks;
		return e;
	}
	if ((m->count + 1) * 10 > m->cap * 7 && ent_grow(m) < 0)
		return NULL; /* out of memory: this entry is not counted */
	for (i = h & (m->cap - 1); m->ents[i].h; i = (i + 1) & (m->cap - 1))
		;
	m->ents[i] = (struct disk_ent){
		.h = h, .blocks = blocks, .base = base, .wd = wd, .in_base = initial};
	m->count++;
	m->base_count += initial;
	m->usage += blocks;
	m->baseline += base;
	return &m->ents[i];
}

struct disk_ent *disk_ent_set(struct disk_monitor *m, int wd, uint64_t h, uint64_t blocks,
			      uint64_t base)
{
	return disk_ent_set_ex(m, wd, h, blocks, base, base > 0);
}

/* Removes slot i (backward shift, so no tombstones). */
void disk_ent_remove_at(struct disk_monitor *m, size_t i)
{
	size_t mask = m->cap - 1, j = i;

	m->usage -= m->ents[i].blocks;
	m->count--;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->ents[j].h)
			break;
		home = m->ents[j].h & mask;
		/* Move j into the hole at i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->ents[i] = m->ents[j];
			i = j;
		}
	}
	m->ents[i].h = 0;
}

struct disk_ent *disk_ent_remove(struct disk_monitor *m, uint64_t h)
{
	struct disk_ent *e = disk_ent_find(m, h);

	if (e)
		disk_ent_remove_at(m, e - m->ents);
	return NULL;
}
