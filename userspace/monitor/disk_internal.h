/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The disk monitor's pieces, private to its files: disk_table.c (the
 * entries, keyed by watch and name hash), disk.c (directories, watches,
 * the initial scan, open and close), disk_events.c (inotify events and
 * the rescan after an overflow), disk_held.c (files held with no name).
 */
#ifndef BPFBOX_MONITOR_DISK_INTERNAL_H
#define BPFBOX_MONITOR_DISK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "disk.h"

struct disk_dir {
	int parent; /* watch descriptor of the parent, -1 for a root */
	char *name; /* name in the parent; a root's full path */
	dev_t dev;
	bool live;
	bool unread; /* queued for the initial scan, not read yet */
};

struct disk_ent {
	uint64_t h;	 /* hash of (wd, name); 0: free slot */
	uint64_t blocks; /* bytes allocated (st_blocks * 512) */
	uint64_t base;	 /* what this entry added to the baseline */
	int wd;
	bool in_base; /* counted in base_count (found by the initial scan) */
};

/* disk_table.c */
uint64_t disk_ent_hash(int wd, const char *name);
struct disk_ent *disk_ent_find(struct disk_monitor *m, uint64_t h);
struct disk_ent *disk_ent_set_ex(struct disk_monitor *m, int wd, uint64_t h, uint64_t blocks,
				 uint64_t base, bool initial);
struct disk_ent *disk_ent_set(struct disk_monitor *m, int wd, uint64_t h, uint64_t blocks,
			      uint64_t base);
void disk_ent_remove_at(struct disk_monitor *m, size_t i);
struct disk_ent *disk_ent_remove(struct disk_monitor *m, uint64_t h);

/* disk.c */
struct disk_dir *disk_dir_get(struct disk_monitor *m, int wd);
int disk_dir_open(struct disk_monitor *m, int wd);
void disk_dir_fd_drop(struct disk_monitor *m);
void disk_watch_dir(struct disk_monitor *m, int parent, int pfd, const char *name, dev_t dev,
		    bool initial);
uint64_t disk_blocks_of(const struct stat *st);
int disk_add_roots(struct disk_monitor *m);

/* disk_held.c */
void disk_held_devs(struct disk_monitor *m);
void disk_held_free(struct disk_monitor *m);

#endif
