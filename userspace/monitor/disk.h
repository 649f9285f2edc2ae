/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The disk monitor: how much a session's workspace (and private tmp) grew
 * since it started, kept up to date without rescanning. One scan at the
 * start (done in slices by the supervision loop, after the command runs)
 * records each entry's allocated blocks and puts an inotify watch on each
 * directory; then every create, write, delete and rename updates the sum by
 * the entry's st_blocks delta. Files unlinked while held open or mapped
 * are counted by scanning the session's processes (disk_held.c). Blind
 * spots: docs/limits.md.
 */
#ifndef BPFBOX_DISK_H
#define BPFBOX_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct disk_dir;
struct disk_ent;
struct disk_held_ent;

/* File systems whose unlinked held files count: those of the roots. */
#define DISK_HELD_DEVS 3

struct disk_scan_item {
	int wd;
	bool initial;	    /* found by the initial scan: counts to the baseline */
	unsigned int tries; /* reads that found its path gone (renamed meanwhile) */
};

/* How often a directory whose path went stale is read again. */
#define DISK_SCAN_TRIES 3
/* The roots one monitor watches: the workspace, the private tmp and home. */
#define DISK_MAX_ROOTS 3

struct disk_monitor {
	int fd;		       /* inotify, non-blocking */
	int64_t usage;	       /* bytes allocated by every tracked entry */
	int64_t baseline;      /* what the tracked entries held when first seen */
	struct disk_dir *dirs; /* indexed by watch descriptor */
	size_t ndirs;
	struct disk_ent *ents; /* open addressing on (wd, name) */
	size_t cap, count;
	struct disk_scan_item *queue; /* directories still to read */
	size_t qhead, qtail, qcap;
	uint32_t moved_cookie; /* a pending IN_MOVED_FROM */
	int moved_wd;
	uint64_t moved_base, moved_hash;
	char moved_name[256];
	bool moved_pending, moved_isdir, moved_in_base;
	uint64_t scanned;  /* entries read by scans */
	uint64_t events;   /* inotify events handled */
	uint64_t rescans;  /* full rescans after an event queue overflow */
	bool watch_limit;  /* a watch could not be added: blind (warned once) */
	size_t base_count; /* entries the initial scan found */
	int dir_fd, fd_wd; /* the last directory opened (dir_open) and its watch */
	int *chain;	   /* dir_open's walk from a root */
	size_t chain_cap;
	bool roots_pending; /* the roots are watched by the first scan slice */
	const char *const *roots;
	size_t nroots;
	/* roots[i] as opened once (O_PATH, the caller's): watched and read through it; -1: by path */
	int root_fds[DISK_MAX_ROOTS];
	/* Files held with no name left (disk_held.c), as the last held scan saw them. */
	int64_t held;	   /* their bytes */
	size_t held_count; /* and inodes */
	bool held_blind;   /* a process of the session could not be read */
	bool held_warned;  /* and that was said */
	pid_t init;	   /* the session's init (pid 1 of its namespace), 0: none seen */
	bool init_vforks;  /* and it waits for its child's exec (state D) */
	/* Processes unreadable at the last scans, and how many in a row. */
	struct {
		pid_t pid;
		unsigned int scans;
		uint64_t since; /* now_ns() at the first */
	} unread[8], unread_next[8];
	size_t nunread, nunread_next;
	/*
	 * Held scans run on a thread of their own (monitor.c): a read of
	 * /proc/PID/maps waits for that process's memory map lock, which a
	 * fork bomb keeps taken. What the supervisor reads of them is
	 * published once a scan ends (held_pub...), and held_wanted is set
	 * from both threads: atomics, through the helpers below.
	 */
	int64_t held_pub;
	size_t held_count_pub;
	bool held_blind_pub;
	bool held_wanted;    /* an event hints at one: scan soon */
	uint64_t held_new;   /* the scan under way's sum */
	uint64_t held_scans; /* held scans done */
	uint64_t fds_seen;   /* fds the last held scan looked at */
	dev_t held_devs[DISK_HELD_DEVS];
	size_t nheld_devs;
	struct disk_held_ent *hset; /* (dev, ino) seen by this scan */
	size_t hcap;
	pid_t *pids; /* the processes of this scan */
	size_t npids, pids_cap;
};

/*
 * Makes the inotify instance for roots (the workspace, the private tmp; at
 * most DISK_MAX_ROOTS), root_fds all -1; inotify_fd >= 0 is one made
 * already (monitor_disk_reserve), which the monitor then owns.
 * Nothing is watched or read yet: a watch on a directory costs time in
 * proportion to its cached entries (the kernel flags each child dentry),
 * so that happens in the disk_monitor_scan() slices too. 0 or -errno.
 */
int disk_monitor_open(struct disk_monitor *m, const char *const *roots, size_t n, int inotify_fd);
/*
 * Closes the inotify instance in a closer (lib/closer.h); with sweep_dirfd
 * >= 0 that closer also removes remove (an entry of it, NULL or "": none;
 * closer_remove) and sweeps it for prefix<session id>suffix
 * (closer_sweep). Without a helper, remove is removed before it returns.
 * end: the closer to start, with what other layers gave it (NULL: the
 * disk monitor's own).
 */
struct closer;
void disk_monitor_close(struct disk_monitor *m, int sweep_dirfd, const char *prefix,
			const char *suffix, const char *remove, struct closer *end);
/* The same helper's removal and sweep alone, for a session whose disk monitor could not open. */
void disk_sweep(int sweep_dirfd, const char *prefix, const char *suffix, const char *remove,
		struct closer *end);

static inline bool disk_monitor_scanning(const struct disk_monitor *m)
{
	return m->roots_pending || m->qhead < m->qtail;
}

/* Reads directories of the initial scan until about budget entries are read. */
void disk_monitor_scan(struct disk_monitor *m, size_t budget);
/* Handles what inotify queued (the fd polls readable). */
void disk_monitor_read(struct disk_monitor *m);

/*
 * Counts the files the session holds open or mapped with no name left (on
 * a root's file system): the processes of cgroup cg (its cgroup.procs),
 * else those below root (this process: a child subreaper). Sets held,
 * held_count and held_blind, and publishes them (disk_held_bytes...) at
 * its end. Runs on the monitor's held thread.
 */
void disk_held_scan(struct disk_monitor *m, const char *cg, pid_t root);

/* An event or a scan hints at a file held with no name: a held scan soon. */
static inline void disk_held_want(struct disk_monitor *m, bool want)
{
	if (want)
		__atomic_store_n(&m->held_wanted, true, __ATOMIC_RELAXED);
}

/* What the last held scan found (published when it ended): bytes, inodes, blind. */
static inline int64_t disk_held_bytes(const struct disk_monitor *m)
{
	return __atomic_load_n(&m->held_pub, __ATOMIC_ACQUIRE);
}

static inline size_t disk_held_count(const struct disk_monitor *m)
{
	return __atomic_load_n(&m->held_count_pub, __ATOMIC_ACQUIRE);
}

static inline bool disk_held_blind(const struct disk_monitor *m)
{
	return __atomic_load_n(&m->held_blind_pub, __ATOMIC_ACQUIRE);
}

/* Bytes the tracked trees grew by since the session started (may be < 0). */
static inline int64_t disk_monitor_growth(const struct disk_monitor *m)
{
	return m->usage - m->baseline + disk_held_bytes(m);
}

/* Entries (files, directories, links: inodes) the session added. */
static inline int64_t disk_monitor_entries(const struct disk_monitor *m)
{
	return (int64_t)m->count - (int64_t)m->base_count + (int64_t)disk_held_count(m);
}

/*
 * Whether a directory could not be watched (the uid's inotify watches are
 * exhausted): writes there are not counted, so the limit cannot hold.
 */
static inline bool disk_monitor_blind(const struct disk_monitor *m)
{
	return m->watch_limit || disk_held_blind(m);
}

#endif
