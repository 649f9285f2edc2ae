/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the credential scan read of a large tree, kept for the next scan
 * (docs/SECURITY.md, "Credential entries without BPF LSM"): for each
 * directory its identity and times, and the names of its listing that
 * mattered (the subdirectories walked into, the matches). A directory whose
 * ctime has not moved since is not read again: a name added, removed or
 * renamed in it moves its ctime, and nothing a process does sets a ctime
 * back. Kept in the change sets' directory, which every session's view
 * masks.
 */
#ifndef BPFBOX_CRED_RECORD_H
#define BPFBOX_CRED_RECORD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../lib/buf.h"

/* A tree with fewer entries is walked every time (a millisecond at most). */
#define CRED_RECORD_MIN_ENTRIES 1024
/* A directory changed this recently before a scan is read again at the next. */
#define CRED_RECORD_SETTLE_NS 1000000000LL
/* Records kept in the directory at most; the oldest go first. */
#define CRED_RECORD_MAX_FILES 64
/* A record of this many directories or more is checked by two threads where two CPUs are. */
#define CRED_RECORD_MIN_SHARED 512

/* What an lstat said of a directory, as the record compares it. */
struct cred_seen {
	uint64_t dev, ino, nlink;
	int64_t ctime_s, ctime_ns, mtime_s, mtime_ns;
	bool dir; /* it is one (and the lstat worked) */
};

/* One directory as a scan read it. */
struct cred_dir {
	const char *rel; /* below the tree's root, "" for the root */
	uint64_t dev, ino, nlink, entries;
	int64_t ctime_s, ctime_ns, mtime_s, mtime_ns;
	/*
	 * Each name the listing had that mattered: its class ('d' walked into,
	 * 'm' a match) then the name, NUL-ended; an empty one ends them.
	 */
	const char *names;
	size_t names_len;
	/* Its ctime older than the start of the scan that read it by CRED_RECORD_SETTLE_NS. */
	bool settled;
};

struct cred_record {
	char path[4096]; /* the record's file; "" when the tree has none */
	size_t dirlen;	 /* path[0, dirlen): the directory it is kept in */
	uint64_t key;
	int64_t start_ns; /* the scan's start (real time) */
	uint64_t root_dev;
	/* The record read (its directories point into raw). */
	char *raw;
	struct cred_dir *old;
	size_t nold;
	uint32_t *slot; /* a hash of rel to 1 + index in old, 0 empty */
	size_t nslot;
	/*
	 * The lstat of each of old's directories, made by this thread when
	 * the walk comes to it or ahead by a helper from the other end
	 * (cred_record.c, "The second thread").
	 */
	int rootfd;
	struct cred_seen *seen;
	unsigned char *seen_state; /* SEEN_*, atomically */
	pthread_t helper;
	bool helper_on;
	bool helper_stop; /* atomically */
	bool shared;	  /* a helper was started */
	/* This scan's directories, as they are to be written. */
	struct buf out;
	size_t ndirs;
	size_t cur;   /* the header in out of the directory being read */
	bool changed; /* a listing read, or one left out: the record is written again */
	bool spoilt;  /* a bound cut the walk short: not written */
	unsigned int reused, read;
};

/*
 * Opens the record of the tree at root (absolute, its rootfd open) for a
 * scan of patterns key_extra (the policy's "**" "/" patterns, NUL-joined)
 * kept in dir; a file that is not exactly one written for this tree, this
 * user and these patterns is ignored. Nothing when dir is NULL or the tree's
 * file system is not one whose ctimes are known to move (ext4, xfs, btrfs,
 * tmpfs). 0 always: a record is an aid.
 */
int cred_record_open(struct cred_record *cr, const char *dir, const char *root, int rootfd,
		     const char *key_extra, size_t key_extra_len);

/*
 * The directory rel (below the root, "" the root itself) as recorded, if
 * its lstat now says it is unchanged and was settled when it was read.
 */
const struct cred_dir *cred_record_take(struct cred_record *cr, const char *rel);

/* A listing as this scan has it: one from the record kept, or one just read (st before its read). */
void cred_record_keep(struct cred_record *cr, const struct cred_dir *d);
void cred_record_begin(struct cred_record *cr, const char *rel, const struct stat *st);
void cred_record_name(struct cred_record *cr, char cls, const char *name, size_t len);
void cred_record_end(struct cred_record *cr, uint64_t entries);

/* Writes the record when the walk looked at enough entries and changed it; frees cr. */
void cred_record_close(struct cred_record *cr, uint64_t entries);

#endif
