/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The on-disk spool of a network sink: a FIFO of records in segment files
 * DIR/<20 digits>.seg, each record a header (length, CRC-32) and its bytes.
 * Appends go to the last segment; reads take the first and delete it once
 * read. The whole spool stays under max bytes: to make room the oldest
 * segment goes, and the caller is told how many records went with it.
 * Segments left by a previous daemon are read first (their order is their
 * names' order); a torn record at a segment's end (a crash mid-write) is
 * cut off. The directory is locked: one daemon per spool.
 */
#ifndef BPFBOX_SPOOL_H
#define BPFBOX_SPOOL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPOOL_RECORD_MAX (1U << 24) /* bytes of one record */

struct spool_seg {
	struct spool_seg *next;
	uint64_t id;
	uint64_t bytes;	  /* file size */
	uint64_t records; /* records in it */
	uint64_t rd_off;  /* read so far (head only) */
	uint64_t rd_records;
};

struct spool {
	char dir[PATH_MAX];
	int dir_fd; /* holds the lock */
	uint64_t max_bytes, seg_max;
	struct spool_seg *head, *tail;
	uint64_t bytes;	  /* of every segment file */
	uint64_t records; /* not yet read */
	int wfd;	  /* tail, appending; -1 none */
	int rfd;	  /* head, reading; -1 none */
	char *rbuf;	  /* read-ahead of the head */
	size_t rbuf_cap, rbuf_len, rbuf_pos;
	uint64_t rbuf_at;    /* file offset of rbuf[0] */
	uint64_t torn_bytes; /* cut off when the spool was opened */
};

/*
 * Makes dir (0700, parents too), locks it, takes its segments. 0, or
 * -errno with a line in err (-EWOULDBLOCK: another process holds it).
 */
int spool_open(struct spool *sp, const char *dir, uint64_t max_bytes, char *err, size_t err_size);
/* Saves the read position of the first segment and closes. */
void spool_close(struct spool *sp);

static inline bool spool_empty(const struct spool *sp)
{
	return sp->records == 0;
}

/*
 * Appends one record. Oldest segments are deleted first when it would not
 * fit under max_bytes; the records they still held are added to *dropped
 * (a record larger than the whole spool is dropped itself and counted).
 * 0, or -errno when the write failed (nothing of it stays).
 */
int spool_append(struct spool *sp, const void *data, size_t len, uint64_t *dropped);

/*
 * Puts records before everything else (shutdown: what was sent but not
 * confirmed). Not bounded by max_bytes. 0, or -errno.
 */
int spool_prepend(struct spool *sp, const void *const *data, const size_t *len, size_t n);

/*
 * The next record: 1 with *data and *len (valid until the next call), 0
 * when the spool is empty, -errno on a read error (the segment is then
 * given up, its unread records added to *dropped).
 */
int spool_read(struct spool *sp, const char **data, size_t *len, uint64_t *dropped);

#endif
