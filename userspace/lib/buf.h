/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A growable byte queue: the bytes p[off..len). Appending moves the queued
 * bytes to the front before it grows, so the memory held stays within
 * twice the most ever queued at once, however many bytes pass through.
 * The daemon's and top's socket buffers, the HTTP/2 relay's bodies.
 */
#ifndef BPFBOX_LIB_BUF_H
#define BPFBOX_LIB_BUF_H

#include <stddef.h>

struct buf {
	char *p;
	size_t off, len, cap;
};

static inline size_t buf_used(const struct buf *b)
{
	return b->len - b->off;
}

/* 0, or -ENOMEM (nothing appended). */
int buf_append(struct buf *b, const void *data, size_t len);
/* Drops the first n queued bytes. */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

#endif
